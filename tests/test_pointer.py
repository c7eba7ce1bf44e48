"""seqlab.pointer: the final distribution, the coverage loss and the pointer-generator model."""

import pytest
import torch
from torch.testing import assert_close

from seqlab.padding import BOS_ID, EOS_ID, UNK_ID, lengths_to_mask
from seqlab.pointer import EPSILON, PointerGenerator, coverage_loss, final_distribution, pointer_loss

V = 6


def naive_final_distribution(vocab_probs, attn, p_gen, src_ext_ids, n_oov):
    out = torch.zeros(vocab_probs.shape[0], V + n_oov, dtype=vocab_probs.dtype)
    for b in range(vocab_probs.shape[0]):
        for w in range(V):
            out[b, w] += p_gen[b, 0] * vocab_probs[b, w]
        for i in range(attn.shape[1]):
            out[b, src_ext_ids[b, i]] += (1 - p_gen[b, 0]) * attn[b, i]
    return out


def example(dtype=torch.double):
    torch.manual_seed(0)
    vocab_probs = torch.randn(2, V, dtype=dtype).softmax(-1)
    attn = torch.tensor([[0.1, 0.2, 0.3, 0.4], [0.5, 0.5, 0.0, 0.0]], dtype=dtype)  # row 2: two real tokens
    p_gen = torch.tensor([[0.7], [0.25]], dtype=dtype)
    # Row 1: word 4 twice, OOV ids 6 and 7; row 2: its own OOV 6, then padding (id 0, zero weight).
    src_ext_ids = torch.tensor([[4, 6, 4, 7], [6, 5, 0, 0]])
    return vocab_probs, attn, p_gen, src_ext_ids


def test_final_distribution_matches_naive_loop_and_sums_to_one():
    vocab_probs, attn, p_gen, src = example()
    out = final_distribution(vocab_probs, attn, p_gen, src, n_oov=2)
    assert out.shape == (2, V + 2)
    assert_close(out, naive_final_distribution(vocab_probs, attn, p_gen, src, 2))
    assert_close(out.sum(1), torch.ones(2, dtype=torch.double))


def test_repeated_source_word_gets_both_weights_and_oov_lands_on_extended_id():
    vocab_probs, attn, p_gen, src = example()
    out = final_distribution(vocab_probs, attn, p_gen, src, n_oov=2)
    assert_close(out[0, 4], 0.7 * vocab_probs[0, 4] + 0.3 * (0.1 + 0.3))
    assert_close(out[0, 7], torch.tensor(0.3 * 0.4, dtype=torch.double))  # only copying reaches an OOV id
    assert_close(out[1, 7], torch.tensor(0.0, dtype=torch.double))  # row 2 has one OOV only


def test_p_gen_limits():
    vocab_probs, attn, _, src = example()
    generate = final_distribution(vocab_probs, attn, torch.ones(2, 1, dtype=torch.double), src, 2)
    assert_close(generate[:, :V], vocab_probs)
    assert (generate[:, V:] == 0).all()
    copy = final_distribution(vocab_probs, attn, torch.zeros(2, 1, dtype=torch.double), src, 2)
    expected = torch.zeros(2, V + 2, dtype=torch.double).scatter_add(1, src, attn)
    assert_close(copy, expected)


def test_gradients_flow_to_all_three_inputs():
    vocab_probs, attn, p_gen, src = (t.requires_grad_() if t.is_floating_point() else t for t in example())
    inputs = (vocab_probs, attn, p_gen)
    assert torch.autograd.gradcheck(lambda v, a, p: final_distribution(v, a, p, src, 2), inputs)
    final_distribution(vocab_probs, attn, p_gen, src, 2)[:, [4, 7]].sum().backward()
    assert all(t.grad is not None and t.grad.abs().sum() > 0 for t in inputs)


def test_final_distribution_errors():
    vocab_probs, attn, p_gen, src = example()
    with pytest.raises(ValueError, match=r"ids must be < V \+ n_oov = 7, got 7; is n_oov too small"):
        final_distribution(vocab_probs, attn, p_gen, src, n_oov=1)
    with pytest.raises(ValueError, match=r"p_gen: expected shape \(2, 1\), got \(2\)"):
        final_distribution(vocab_probs, attn, p_gen[:, 0], src, n_oov=2)


def test_coverage_loss_counts_only_earlier_steps_and_respects_the_mask():
    attn_steps = torch.tensor([[[0.5, 0.5, 0.0], [0.9, 0.1, 0.0], [0.2, 0.2, 0.6]]])  # (B=1, T=3, S=3)
    mask = torch.tensor([[True, True, False]])
    coverage = torch.zeros(1, 3)
    losses = []
    for t in range(3):
        losses.append(coverage_loss(attn_steps[:, t], coverage, mask))
        coverage = coverage + attn_steps[:, t]
    assert losses[0] == 0  # nothing covered before the first step
    assert_close(losses[1], torch.tensor(min(0.9, 0.5) + min(0.1, 0.5)))
    assert_close(losses[2], torch.tensor(min(0.2, 1.4) + min(0.2, 0.6)))  # position 3 is padding: ignored


def small_model(coverage_weight=0.0):
    torch.manual_seed(0)
    return PointerGenerator(vocab_size=V, embedding_size=4, hidden_size=8, coverage_weight=coverage_weight).eval()


SRC = torch.tensor([[4, 6, 4, 7], [6, 5, 0, 0]])  # extended ids: 6 and 7 are out of vocabulary
LENGTHS = torch.tensor([4, 2])
TGT_IN = torch.tensor([[BOS_ID, 6, 4], [BOS_ID, 6, 0]])


def test_model_outputs_distributions_over_the_extended_vocabulary():
    out = small_model(coverage_weight=1.0).forward_with_details(SRC, LENGTHS, TGT_IN)
    assert out["probs"].shape == (2, 3, V + 2)
    assert_close(out["probs"].sum(-1), torch.ones(2, 3))
    assert ((out["p_gen"] > 0) & (out["p_gen"] < 1)).all()
    assert (out["attn"][1, :, 2:] == 0).all()  # padding gets no attention
    assert_close(out["coverage"][:, 1:], out["attn"].cumsum(1)[:, :-1])  # coverage = earlier steps' sum
    assert (out["coverage"][:, 0] == 0).all()


def test_out_of_vocabulary_inputs_are_read_as_unk():
    model = small_model()
    as_unk = SRC.masked_fill(SRC >= V, UNK_ID)
    assert torch.equal(model.to_unk(SRC), as_unk)
    # The encoder sees the same thing whichever OOV id a word has: renumbering OOVs changes nothing
    # but where copying puts the probability.
    state_a, state_b = model.start_decoding(SRC, LENGTHS), model.start_decoding(as_unk, LENGTHS)
    assert_close(state_a["memory"], state_b["memory"])


class Batch:
    src, src_lengths, tgt_in = SRC, LENGTHS, TGT_IN
    tgt_out = torch.tensor([[6, 4, EOS_ID], [7, EOS_ID, 0]])  # row 2 wants OOV id 7, absent from its source
    src_mask = lengths_to_mask(LENGTHS, 4)
    tgt_mask = tgt_out != 0


def test_loss_is_finite_when_the_target_cannot_be_produced():
    model = small_model()
    probs = model(SRC, LENGTHS, TGT_IN)
    assert probs[1, 0, 7] == 0  # row 2's source has no word 7: no way to copy or generate it
    loss = pointer_loss(model, Batch)
    assert torch.isfinite(loss)
    assert loss > -torch.log(torch.tensor(EPSILON)) / 5 * 0.99  # the impossible token dominates the mean
    loss.backward()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)


def test_coverage_weight_adds_the_coverage_loss():
    model = small_model()
    without = pointer_loss(model, Batch)
    model.enable_coverage(2.0)
    assert pointer_loss(model, Batch) > without


@pytest.mark.parametrize("coverage_weight", [0.0, 1.0])
def test_beam_size_one_equals_greedy_and_can_emit_oov_ids(coverage_weight):
    model = small_model(coverage_weight)
    greedy = model.greedy_decode(SRC, LENGTHS, max_len=6)
    beam = model.beam_search(SRC, LENGTHS, max_len=6, beam_size=1)
    assert torch.equal(beam[:, : greedy.shape[1]], greedy)
    assert int(greedy.max()) < V + 2
