"""The attention Seq2Seq: weights over real tokens, teacher forcing and stepping against the equations, decoding."""

import pytest
import torch
from test_decoder_references import attention_decoder_run
from torch.testing import assert_close

from seqlab.core.padding import BOS_ID
from seqlab.models.attention import SCORERS
from seqlab.models.seq2seq import AttentionSeq2Seq

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


@pytest.mark.parametrize("cell,num_layers", [("gru", 1), ("gru", 2), ("lstm", 2), ("rnn", 1)])
def test_teacher_forcing_and_stepping_match_a_loop_written_from_the_equations(cell, num_layers):
    model = model_with("bilinear", cell, num_layers=num_layers).double()
    memory, mask, initial = model.encode(SRC, LENGTHS)  # (B, S, H), (B, S), (L, B, H)
    expected, expected_state, expected_weights = attention_decoder_run(model.decoder, TGT_IN, initial, memory, LENGTHS)
    # Teacher forcing: the decoder's forward over all steps.
    log_probs = model(SRC, LENGTHS, TGT_IN)  # (B, T, V)
    assert_close(log_probs, expected)
    _, final_state, weights = model.decoder(TGT_IN, initial, memory, mask)
    assert_close(final_state, expected_state)
    assert_close(weights, expected_weights)
    # Stepping through the decoding protocol, as greedy and beam search do.
    state = model.start_decoding(SRC, LENGTHS)
    for t in range(TGT_IN.shape[1]):
        step_log_probs, state = model.decode_step(TGT_IN[:, t], state)
        assert_close(step_log_probs, expected[:, t])
    assert_close(state["hidden"], expected_state)


@pytest.mark.parametrize("scorer", SCORERS)
@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_decoder_step_matches_bahdanau_equations_with_padding(scorer, cell):
    """A decoder of two layers over a padded memory whose padded positions hold noise, not zeros:
    only the mask can keep them out of the softmax and the context."""
    decoder = model_with(scorer, cell, num_layers=2).double().decoder
    torch.manual_seed(1)
    memory = torch.randn(3, 5, 8, dtype=torch.double)  # (B, S, M), padding included
    mask = torch.arange(5) < LENGTHS.unsqueeze(1)  # (B, S)
    hidden = torch.randn(2, 3, 8, dtype=torch.double)  # (L, B, H): the layers differ, so the query is the top one
    state = (hidden, torch.randn(2, 3, 8, dtype=torch.double)) if cell == "lstm" else hidden
    expected, expected_state, expected_weights = attention_decoder_run(decoder, TGT_IN, state, memory, LENGTHS)
    log_probs, final_state, weights = decoder(TGT_IN, state, memory, mask)
    assert_close(log_probs, expected)
    assert_close(weights, expected_weights)
    assert_close(final_state, expected_state)
    assert (weights.masked_select(~mask.unsqueeze(1)) == 0).all()
    # One step on its own, from the initial state.
    prepared_keys = decoder.attention.scorer.prepare_keys(memory)
    step_log_probs, step_state, step_weights = decoder.step(TGT_IN[:, 0], state, memory, mask, prepared_keys)
    one_log_probs, one_state, one_weights = attention_decoder_run(decoder, TGT_IN[:, :1], state, memory, LENGTHS)
    assert_close(step_log_probs, one_log_probs[:, 0])
    assert_close(step_weights, one_weights[:, 0])
    assert_close(step_state, one_state)


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
    assert beam.shape == greedy.shape  # a beam that runs on past eos is longer
    assert torch.equal(beam, greedy)


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
    # Both come from the decoder's step; the weights are also Bahdanau's, from the equations.
    memory, _, initial = model.encode(SRC, LENGTHS)
    _, _, expected = attention_decoder_run(model.decoder, tgt_in, initial, memory, LENGTHS)
    assert_close(torch.stack(seen, dim=1), expected)


def test_odd_hidden_size_with_two_directions_is_refused():
    with pytest.raises(ValueError, match="hidden_size must be even"):
        AttentionSeq2Seq(12, 9, hidden_size=7)
