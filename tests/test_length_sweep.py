"""seqlab.experiments.length_sweep: the data it builds and the shape of its results."""

from seqlab.experiments.length_sweep import LengthSweep
from seqlab.models.seq2seq import Seq2Seq


def test_data_lengths_and_test_sets_are_distinct():
    sweep = LengthSweep(n_train=300, n_test=20, train_min_len=3, train_max_len=6)
    lengths = {len(src) for src, _ in sweep.train_pairs()}
    assert lengths == {3, 4, 5, 6}
    for length in (4, 9):
        pairs = sweep.test_pairs(length)
        assert all(len(src) == length and tgt == src[::-1] for src, tgt in pairs)
    assert sweep.test_pairs(4) == sweep.test_pairs(4)
    assert sweep.train_pairs() == LengthSweep(n_train=300, train_min_len=3, train_max_len=6).train_pairs()


def test_run_reports_every_test_length():
    sweep = LengthSweep(n_train=100, n_test=10, epochs=1, test_lengths=(3, 7), train_max_len=5)
    src_vocab, tgt_vocab = sweep.vocabs()
    results = sweep.run(Seq2Seq(len(src_vocab), len(tgt_vocab), embedding_size=4, hidden_size=8))
    assert set(results["exact_match"]) == {3, 7} == set(results["token_accuracy"])
    assert all(0.0 <= v <= 1.0 for v in results["exact_match"].values())
    assert len(results["history"]["loss"]) == 1
