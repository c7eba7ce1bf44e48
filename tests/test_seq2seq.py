"""The encoder, the bridge, the context decoder, Seq2Seq, the loss and the decoders (chapters 2 and 3)."""

import math

import pytest
import torch
from test_decoder_references import context_decoder_run
from torch.testing import assert_close

from seqlab.data import BOS_ID, EOS_ID, PAD_ID
from seqlab.experiments.train import sequence_nll
from seqlab.models.decoding import BigramTable
from seqlab.models.encoder import Bridge, Encoder, last_layer_directions
from seqlab.models.seq2seq import Seq2Seq

SRC = torch.tensor([[5, 6, 7, 8, 9], [4, 5, 0, 0, 0], [9, 8, 7, 0, 0]])  # (B, S), padded with 0
LENGTHS = torch.tensor([5, 2, 3])


@pytest.mark.parametrize("cell", ["rnn", "lstm", "gru"])
@pytest.mark.parametrize("num_layers", [1, 2])
def test_encoder_from_scratch_equals_fused_on_packed_input(cell, num_layers):
    torch.manual_seed(0)
    fused = Encoder(12, 4, 6, cell, num_layers=num_layers, bidirectional=True).double()
    scratch = Encoder(12, 4, 6, cell, num_layers=num_layers, bidirectional=True, from_scratch=True).double()
    scratch.load_state_dict(fused.state_dict())
    out_f, final_f = fused(SRC, LENGTHS)
    out_s, final_s = scratch(SRC, LENGTHS)
    assert out_f.shape == (3, 5, 12)
    assert_close(out_s, out_f)
    assert_close(final_s, final_f)


def test_final_states_sit_at_each_direction_end():
    torch.manual_seed(0)
    encoder = Encoder(12, 4, 6, "gru", bidirectional=True)
    outputs, h_n = encoder(SRC, LENGTHS)  # (B, S, 2H), (2, B, H)
    for b, n in enumerate(LENGTHS.tolist()):
        assert_close(h_n[0, b], outputs[b, n - 1, :6])  # forward: the last real token
        assert_close(h_n[1, b], outputs[b, 0, 6:])  # backward: it ends at the first token
        assert (outputs[b, n:] == 0).all()  # padding gives zero output


def test_padding_content_does_not_change_the_encoding():
    encoder = Encoder(12, 4, 6, "lstm")
    noisy = SRC.clone()
    noisy[1, 2:] = 11  # real ids where padding should be
    assert_close(encoder(SRC, LENGTHS)[1], encoder(noisy, LENGTHS)[1])


def test_last_layer_directions_concatenates_forward_then_backward():
    h_n = torch.arange(2 * 2 * 3 * 1, dtype=torch.float).view(4, 3, 1)  # (L*D, B, H), L=2, D=2
    per_layer = last_layer_directions(h_n, num_layers=2, num_directions=2)  # (L, B, D*H)
    assert per_layer.shape == (2, 3, 2)
    assert_close(per_layer[1, :, 0], h_n[2, :, 0])  # layer 1 forward
    assert_close(per_layer[1, :, 1], h_n[3, :, 0])  # layer 1 backward


def test_bridge_shapes():
    bridge = Bridge(encoder_hidden_size=6, num_directions=2, decoder_hidden_size=10, num_layers=2, cell="lstm")
    h, c = bridge((torch.randn(4, 3, 6), torch.randn(4, 3, 6)))
    assert h.shape == c.shape == (2, 3, 10)
    assert h.abs().max() <= 1  # tanh


def test_encoder_rejects_bad_lengths():
    encoder = Encoder(12, 4, 6)
    with pytest.raises(ValueError, match=r"src_lengths: expected shape \(3\), got \(2\)"):
        encoder(SRC, LENGTHS[:2])
    with pytest.raises(ValueError, match=r"src_lengths must lie in \[1, 5\]"):
        encoder(SRC, torch.tensor([5, 0, 3]))


def test_loss_ignores_padding():
    torch.manual_seed(0)
    log_probs = torch.randn(2, 4, 7).log_softmax(-1)
    targets = torch.tensor([[3, 4, 2, 0], [5, 2, 0, 0]])
    changed = log_probs.clone()
    changed[0, 3] = torch.randn(7).log_softmax(-1)  # a padded position
    changed[1, 2:] = torch.randn(2, 7).log_softmax(-1)
    assert_close(sequence_nll(log_probs, targets), sequence_nll(changed, targets))
    # and equals the mean over the five real tokens, computed by hand
    real = [(0, 0, 3), (0, 1, 4), (0, 2, 2), (1, 0, 5), (1, 1, 2)]
    expected = -sum(log_probs[b, t, y] for b, t, y in real) / 5
    assert_close(sequence_nll(log_probs, targets), expected)


@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_teacher_forcing_and_stepping_match_a_loop_written_from_the_equations(cell):
    torch.manual_seed(0)
    model = Seq2Seq(12, 9, embedding_size=5, hidden_size=8, cell=cell, num_layers=2).double().eval()
    tgt_in = torch.tensor([[BOS_ID, 4, 5, 6], [BOS_ID, 7, 8, 0], [BOS_ID, 3, 0, 0]])
    context, mask, initial = model.encode(SRC, LENGTHS)  # (B, H), None, (L, B, H)
    assert mask is None  # one context vector: nothing to mask
    expected, expected_state = context_decoder_run(model.decoder, tgt_in, initial, context)  # (B, T, V)
    # Teacher forcing: the whole target in one call of the fused RNN.
    log_probs = model(SRC, LENGTHS, tgt_in)  # (B, T, V)
    assert log_probs.shape == (3, 4, 9)
    assert_close(log_probs.exp().sum(-1), torch.ones(3, 4, dtype=torch.double))
    assert_close(log_probs, expected)
    _, final_state = model.decoder(tgt_in, initial, context)
    assert_close(final_state, expected_state)
    # Stepping, as the decoders do: one token at a time through the decoding protocol.
    state = model.start_decoding(SRC, LENGTHS)
    for t in range(4):
        step_log_probs, state = model.decode_step(tgt_in[:, t], state)
        assert_close(step_log_probs, expected[:, t])
    assert_close(state["hidden"], expected_state)


@pytest.mark.parametrize("cell", ["rnn", "gru", "lstm"])
def test_beam_size_one_equals_greedy(cell):
    torch.manual_seed(1)
    model = Seq2Seq(12, 9, embedding_size=5, hidden_size=8, cell=cell)
    greedy = model.greedy_decode(SRC, LENGTHS, max_len=6)
    beam = model.beam_search(SRC, LENGTHS, max_len=6, beam_size=1)
    assert beam.shape == greedy.shape  # a beam that runs on past eos is longer
    assert torch.equal(beam, greedy)


def test_beam_search_returns_hypotheses_in_score_order_with_true_scores():
    torch.manual_seed(2)
    model = Seq2Seq(12, 9, embedding_size=5, hidden_size=8)
    _, hypotheses = model.beam_search(SRC, LENGTHS, max_len=5, beam_size=4, return_hypotheses=True)
    for row, hyps in enumerate(hypotheses):
        scores = [h.score for h in hyps]
        assert scores == sorted(scores, reverse=True)
        # Re-score each hypothesis with the reference decoder: the sum of its tokens' log-probabilities.
        context, _, initial = model.encode(SRC[row : row + 1], LENGTHS[row : row + 1])
        for h in hyps:
            tgt_in = torch.tensor([[BOS_ID] + h.tokens[:-1]])
            log_probs = context_decoder_run(model.decoder, tgt_in, initial, context)[0][0]  # (T, V)
            rescored = log_probs.gather(1, torch.tensor(h.tokens).unsqueeze(1)).sum().item()
            assert math.isclose(h.score, rescored, rel_tol=1e-4, abs_tol=1e-4)


def short_sighted_table() -> BigramTable:
    """Tokens 3 = A, 4 = B. P(A) = 0.55, P(B) = 0.45 first; after A the model is unsure (eos 0.4),
    after B eos is almost certain (0.9). Greedy: A eos, p = 0.22. Best: B eos, p = 0.405."""
    table = torch.zeros(5, 5)
    table[BOS_ID, 3], table[BOS_ID, 4] = 0.55, 0.45
    table[3, EOS_ID], table[3, 3], table[3, 4] = 0.4, 0.3, 0.3
    table[4, EOS_ID], table[4, 3], table[4, 4] = 0.9, 0.05, 0.05
    table[EOS_ID, EOS_ID] = table[PAD_ID, EOS_ID] = 1.0
    return BigramTable(table)


def test_beam_search_beats_greedy_on_a_short_sighted_case():
    toy, src, lengths = short_sighted_table(), torch.ones(1, 1, dtype=torch.long), torch.ones(1, dtype=torch.long)
    assert toy.greedy_decode(src, lengths, max_len=5).tolist() == [[3, EOS_ID]]
    tokens, hyps = toy.beam_search(src, lengths, max_len=5, beam_size=2, return_hypotheses=True)
    assert tokens.tolist() == [[4, EOS_ID]]
    assert math.isclose(math.exp(hyps[0][0].score), 0.45 * 0.9, rel_tol=1e-5)
