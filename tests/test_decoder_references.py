"""Plain-loop references for the decoders, written from the equations with the modules' own parameters.

test_seq2seq, test_attention_seq2seq and test_pointer compare seqlab's decoders with these. Nothing
here calls seqlab: the recurrent cells are the gate equations (checked against torch.nn's cells
below), each attention score is computed for one (query, key) pair at a time, the softmax runs over
the real source positions only, and the context is the weighted sum written out position by position.
"""

import math

import pytest
import torch
from torch import Tensor, nn
from torch.testing import assert_close

from seqlab.models.attention import AdditiveScorer, BilinearScorer, CosineScorer, DotScorer, ScaledDotScorer

# ----------------------------------------------------------------------------------------------
# Recurrent cells, from the gate equations, with the weights of a torch.nn.RNN / GRU / LSTM layer.


def cell_step(rnn: nn.RNNBase, layer: int, x: Tensor, h: Tensor, c: Tensor | None = None) -> tuple:
    """One step of layer ``layer`` of ``rnn``: ``x (B, I)``, ``h (B, H)`` (and the LSTM's ``c``) → ``(h', c')``."""
    W_ih, W_hh = getattr(rnn, f"weight_ih_l{layer}"), getattr(rnn, f"weight_hh_l{layer}")
    b_ih, b_hh = getattr(rnn, f"bias_ih_l{layer}"), getattr(rnn, f"bias_hh_l{layer}")
    gx, gh = x @ W_ih.T + b_ih, h @ W_hh.T + b_hh  # (B, G*H) each
    if rnn.mode == "GRU":  # gates r, z, n, in torch's order
        (x_r, x_z, x_n), (h_r, h_z, h_n) = gx.chunk(3, dim=1), gh.chunk(3, dim=1)
        r, z = torch.sigmoid(x_r + h_r), torch.sigmoid(x_z + h_z)
        n = torch.tanh(x_n + r * h_n)
        return (1 - z) * n + z * h, None
    if rnn.mode == "LSTM":  # gates i, f, g, o, in torch's order
        (x_i, x_f, x_g, x_o), (h_i, h_f, h_g, h_o) = gx.chunk(4, dim=1), gh.chunk(4, dim=1)
        i, f = torch.sigmoid(x_i + h_i), torch.sigmoid(x_f + h_f)
        g, o = torch.tanh(x_g + h_g), torch.sigmoid(x_o + h_o)
        c_next = f * c + i * g
        return o * torch.tanh(c_next), c_next
    if rnn.mode == "RNN_TANH":
        return torch.tanh(gx + gh), None
    raise ValueError(f"no reference for {rnn.mode}")


def stacked_step(rnn: nn.RNNBase, x: Tensor, state) -> tuple:
    """One step of every layer, bottom to top. ``state``: ``(L, B, H)`` or an LSTM's pair.

    Returns the top layer's new hidden state ``(B, H)`` and the new state (same layout as ``state``).
    """
    lstm = rnn.mode == "LSTM"
    hs, cs = state if lstm else (state, [None] * rnn.num_layers)
    new_h, new_c, inp = [], [], x
    for layer in range(rnn.num_layers):
        h, c = cell_step(rnn, layer, inp, hs[layer], cs[layer])
        new_h.append(h)
        new_c.append(c)
        inp = h  # the next layer reads this layer's output (no dropout: the models are in eval mode)
    return inp, (torch.stack(new_h), torch.stack(new_c)) if lstm else torch.stack(new_h)


def top_hidden(state) -> Tensor:
    """The top layer's hidden state ``(B, H)``: the LSTM's h, not its c."""
    return (state[0] if isinstance(state, tuple) else state)[-1]


# ----------------------------------------------------------------------------------------------
# The chapter 3 decoder: z_t = cell([embed(y_{t-1}); c], z_{t-1}); log softmax(W_out [z_t; c; embed(y_{t-1})] + b)


def context_decoder_step(decoder: nn.Module, prev_tokens: Tensor, state, context: Tensor) -> tuple:
    """``decoder``: a ContextDecoder (its ``embedding``, ``rnn`` and ``output``).

    Returns ``(log_probs (B, V), state)``.
    """
    embedded = decoder.embedding.weight[prev_tokens]  # (B, E): a row lookup
    z, state = stacked_step(decoder.rnn, torch.cat([embedded, context], dim=1), state)
    logits = torch.cat([z, context, embedded], dim=1) @ decoder.output.weight.T + decoder.output.bias
    return logits - logits.logsumexp(dim=1, keepdim=True), state  # log softmax


def context_decoder_run(decoder: nn.Module, tgt_in: Tensor, state, context: Tensor) -> tuple:
    """Every step of ``tgt_in (B, T)`` in turn, the same context each time. Returns ``(log_probs (B, T, V), state)``."""
    steps = []
    for t in range(tgt_in.shape[1]):
        log_probs, state = context_decoder_step(decoder, tgt_in[:, t], state, context)
        steps.append(log_probs)
    return torch.stack(steps, dim=1), state


# ----------------------------------------------------------------------------------------------
# Attention, one source position at a time.


def pair_score(scorer: nn.Module, z: Tensor, h: Tensor) -> Tensor:
    """The score of one query ``z (Dq,)`` against one key ``h (Dk,)``, from the scorer's formula."""
    if isinstance(scorer, AdditiveScorer):  # vᵀ tanh(W_k h + W_q z + b)
        hidden = scorer.key_proj.weight @ h + scorer.query_proj.weight @ z + scorer.query_proj.bias
        return scorer.v.weight[0] @ torch.tanh(hidden)
    if isinstance(scorer, BilinearScorer):  # zᵀ W h
        return z @ scorer.weight @ h
    if isinstance(scorer, ScaledDotScorer):  # z · h / √D
        return (z @ h) / math.sqrt(z.shape[0])
    if isinstance(scorer, DotScorer):  # z · h
        return z @ h
    if isinstance(scorer, CosineScorer):  # scale · cos(z, h)
        return scorer.scale * (z @ h) / (z.norm() * h.norm())
    raise ValueError(f"no reference for {type(scorer).__name__}")


def attend(score, memory: Tensor, lengths: Tensor) -> tuple:
    """``score(b, i)``: the score of source position i of row b. Softmax over the ``lengths[b]`` real
    positions only, then ``context_b = Σ_i α_i h_i``. Returns ``context (B, M)`` and ``weights (B, S)``."""
    contexts, all_weights = [], []
    for b in range(memory.shape[0]):
        n = int(lengths[b])
        scores = torch.stack([score(b, i) for i in range(n)])  # (n,): the real positions
        exp = (scores - scores.max()).exp()
        alpha = exp / exp.sum()
        context = sum(alpha[i] * memory[b, i] for i in range(n))  # (M,)
        contexts.append(context)
        all_weights.append(torch.cat([alpha, alpha.new_zeros(memory.shape[1] - n)]))  # padding: weight 0
    return torch.stack(contexts), torch.stack(all_weights)


def attention_decoder_run(decoder: nn.Module, tgt_in: Tensor, state, memory: Tensor, lengths: Tensor) -> tuple:
    """Bahdanau's loop: the previous top-layer state queries the memory, then the chapter 3 step reads
    the context. ``decoder``: an AttentionDecoder. Returns ``(log_probs (B, T, V), state, weights (B, T, S))``."""
    scorer = decoder.attention.scorer
    all_log_probs, all_weights = [], []
    for t in range(tgt_in.shape[1]):
        z = top_hidden(state)  # (B, H): the query is the state *before* this step
        context, weights = attend(lambda b, i, z=z: pair_score(scorer, z[b], memory[b, i]), memory, lengths)
        log_probs, state = context_decoder_step(decoder.context_decoder, tgt_in[:, t], state, context)
        all_log_probs.append(log_probs)
        all_weights.append(weights)
    return torch.stack(all_log_probs, dim=1), state, torch.stack(all_weights, dim=1)


def coverage_attend(attention: nn.Module, z: Tensor, memory: Tensor, lengths: Tensor, coverage: Tensor) -> tuple:
    """See et al. (2017), eq. 11: ``e_i = vᵀ tanh(W_h h_i + W_s z + w_c c_i + b)``, softmax over the
    real positions. ``attention``: a CoverageAttention. Returns ``context (B, M)`` and ``weights (B, S)``."""
    scorer = attention.scorer
    W_h, W_s, bias, v = scorer.key_proj.weight, scorer.query_proj.weight, scorer.query_proj.bias, scorer.v.weight[0]
    w_c = attention.coverage_proj.weight[:, 0]  # (A,)

    def score(b, i):
        return v @ torch.tanh(W_h @ memory[b, i] + W_s @ z[b] + w_c * coverage[b, i] + bias)

    return attend(score, memory, lengths)


# ----------------------------------------------------------------------------------------------
# The references' cells against torch's.

TORCH_CELLS = {"rnn": (nn.RNN, nn.RNNCell), "gru": (nn.GRU, nn.GRUCell), "lstm": (nn.LSTM, nn.LSTMCell)}


@pytest.mark.parametrize("cell", ["rnn", "gru", "lstm"])
def test_reference_cells_match_torch_cells(cell):
    torch.manual_seed(0)
    layer_class, cell_class = TORCH_CELLS[cell]
    rnn = layer_class(3, 4, num_layers=2).double()
    x, h = torch.randn(2, 3, dtype=torch.double), torch.randn(2, 2, 4, dtype=torch.double)
    state = (h, torch.randn(2, 2, 4, dtype=torch.double)) if cell == "lstm" else h
    top, new_state = stacked_step(rnn, x, state)
    inp, expected_h, expected_c = x, [], []
    for layer in range(2):
        torch_cell = cell_class(3 if layer == 0 else 4, 4).double()
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            getattr(torch_cell, name).data.copy_(getattr(rnn, f"{name}_l{layer}"))
        out = torch_cell(inp, (h[layer], state[1][layer]) if cell == "lstm" else h[layer])
        inp = out[0] if cell == "lstm" else out
        expected_h.append(inp)
        expected_c.append(out[1] if cell == "lstm" else None)
    assert_close(top, expected_h[-1])
    if cell == "lstm":
        assert_close(new_state, (torch.stack(expected_h), torch.stack(expected_c)))
    else:
        assert_close(new_state, torch.stack(expected_h))
