"""The attention Seq2Seq: weights over real tokens, teacher forcing vs stepping, decoding."""

import pytest
import torch
from torch.testing import assert_close

from seqlab.attention import SCORERS
from seqlab.padding import BOS_ID
from seqlab.seq2seq import AttentionSeq2Seq

SRC = torch.tensor([[5, 6, 7, 8, 9], [4, 5, 0, 0, 0], [9, 8, 7, 0, 0]])  # (B, S), padded with 0
LENGTHS = torch.tensor([5, 2, 3])
TGT_IN = torch.tensor([[BOS_ID, 4, 5, 6], [BOS_ID, 7, 8, 0], [BOS_ID, 3, 0, 0]])


def model_with(scorer="additive", cell="gru", **kwargs):
    torch.manual_seed(0)
    return AttentionSeq2Seq(12, 9, embedding_size=5, hidden_size=8, scorer=scorer, cell=cell, **kwargs).eval()


@pytest.mark.parametrize("scorer", SCORERS)
def test_weights_sum_to_one_over_real_source_tokens_at_every_step(scorer):
    model = model_with(scorer)
    weights = model.attention_weights(SRC, LENGTHS, TGT_IN)  # (B, T, S)
    assert weights.shape == (3, 4, 5)
    mask = torch.arange(5) < LENGTHS.unsqueeze(1)  # (B, S)
    assert_close(weights.sum(-1), torch.ones(3, 4))
    assert (weights.masked_select(~mask.unsqueeze(1)) == 0).all()
    log_probs = model(SRC, LENGTHS, TGT_IN)
    assert log_probs.shape == (3, 4, 9)
    assert_close(log_probs.exp().sum(-1), torch.ones(3, 4))


@pytest.mark.parametrize("cell,num_layers", [("gru", 1), ("lstm", 2), ("rnn", 1)])
def test_teacher_forcing_equals_stepping(cell, num_layers):
    model = model_with("bilinear", cell, num_layers=num_layers)
    log_probs = model(SRC, LENGTHS, TGT_IN)
    state = model.start_decoding(SRC, LENGTHS)
    for t in range(TGT_IN.shape[1]):
        step_log_probs, state = model.decode_step(TGT_IN[:, t], state)
        assert_close(step_log_probs, log_probs[:, t])


def test_key_projection_is_computed_once_per_source():
    model = model_with("additive")
    calls = []
    original = model.decoder.attention.scorer.prepare_keys
    model.decoder.attention.scorer.prepare_keys = lambda keys: calls.append(keys.shape) or original(keys)
    model(SRC, LENGTHS, TGT_IN)  # 4 decoder steps
    assert calls == [torch.Size([3, 5, 8])]


@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_beam_size_one_equals_greedy(cell):
    model = model_with("scaled_dot", cell)
    greedy = model.greedy_decode(SRC, LENGTHS, max_len=6)
    beam = model.beam_search(SRC, LENGTHS, max_len=6, beam_size=1)
    assert torch.equal(beam[:, : greedy.shape[1]], greedy)


def test_attention_weights_of_a_decoded_output_are_those_seen_while_decoding():
    model = model_with("additive")
    state = model.start_decoding(SRC, LENGTHS)
    prev, seen, tokens = torch.full((3,), BOS_ID), [], []
    for _ in range(4):  # greedy, by hand, recording the weights
        log_probs, hidden, weights = model.decoder.step(
            prev, state["hidden"], state["memory"], state["mask"], state["prepared_keys"]
        )
        state["hidden"] = hidden
        prev = log_probs.argmax(-1)
        seen.append(weights)
        tokens.append(prev)
    tgt_in = torch.stack([torch.full((3,), BOS_ID)] + tokens[:-1], dim=1)  # (B, 4)
    assert_close(model.attention_weights(SRC, LENGTHS, tgt_in), torch.stack(seen, dim=1))


def test_odd_hidden_size_with_two_directions_is_refused():
    with pytest.raises(ValueError, match="hidden_size must be even"):
        AttentionSeq2Seq(12, 9, hidden_size=7)
