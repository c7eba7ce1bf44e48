"""seqlab.experiments.tagging: a left-to-right tagger is causal, a bidirectional one is not; training and scoring."""

import pytest
import torch

from seqlab import data
from seqlab.experiments.tagging import Tagger, tag_accuracy, train_tagger

TOKENS = torch.tensor([[4, 5, 6, 7, 8]])
LENGTHS = torch.tensor([5])


def scores_after_changing_the_last_token(tagger):
    changed = TOKENS.clone()
    changed[0, -1] = 9
    return tagger(TOKENS, LENGTHS), tagger(changed, LENGTHS)


def test_left_to_right_tags_do_not_depend_on_later_tokens():
    torch.manual_seed(0)
    before, after = scores_after_changing_the_last_token(Tagger(10, 4, bidirectional=False))
    assert before.shape == (1, 5, 4)
    assert torch.equal(before[:, :4], after[:, :4])  # positions before the change see nothing of it


def test_bidirectional_tags_depend_on_later_tokens():
    torch.manual_seed(0)
    before, after = scores_after_changing_the_last_token(Tagger(10, 4, bidirectional=True))
    assert not torch.allclose(before[:, 0], after[:, 0])  # the first position reads the last token


def test_tag_accuracy_counts_only_real_and_selected_tokens():
    examples = [(["a", "x"], ["O", "K"]), (["b"], ["O"])]
    words = data.Vocab.build([t for t, _ in examples])
    tags = data.Vocab.build([g for _, g in examples])

    class Constant(torch.nn.Module):  # always predicts the tag "O"
        def forward(self, tokens, _lengths):
            logits = torch.zeros(*tokens.shape, len(tags))
            logits[..., tags.token_to_id("O")] = 1.0
            return logits

    assert tag_accuracy(Constant(), examples, words, tags) == 2 / 3  # padding is not counted
    assert tag_accuracy(Constant(), examples, words, tags, skip_tag="O") == 0.0


def test_bidirectional_tagger_learns_the_right_context_task():
    train = data.right_context_task(1200, seed=0)
    words = data.Vocab.build([t for t, _ in train])
    tags = data.Vocab.build([g for _, g in train])
    torch.manual_seed(0)
    tagger = Tagger(len(words), len(tags), bidirectional=True)
    losses = train_tagger(tagger, train, words, tags, epochs=4)
    assert losses[-1] < losses[0]
    assert tag_accuracy(tagger, data.right_context_task(100, seed=1), words, tags, skip_tag="O") > 0.9


def test_encoding_size_is_each_positions_encoding_and_hidden_size_one_directions_state():
    # hidden_size keeps torch.nn's meaning (one direction); the tagger's width has its own name.
    bidirectional = Tagger(10, 4, encoding_size=8, bidirectional=True)
    left_to_right = Tagger(10, 4, encoding_size=8, bidirectional=False)
    assert (bidirectional.encoder.hidden_size, left_to_right.encoder.hidden_size) == (4, 8)
    assert bidirectional.output.in_features == left_to_right.output.in_features == 8
    with pytest.raises(ValueError, match="encoding_size must be even"):
        Tagger(10, 4, encoding_size=7, bidirectional=True)
