"""seqlab.models.multihead and seqlab.models.transformer (chapter 8) against torch.nn, the paper's formula, and the
model contract."""

import inspect
import math

import pytest
import torch
from torch.testing import assert_close

from seqlab.data import BOS_ID, build_vocabs, reversal_task
from seqlab.experiments.train import train_seq2seq
from seqlab.models.transformer import (
    MultiHeadAttention,
    Transformer,
    TransformerDecoderLayer,
    TransformerEncoderLayer,
    causal_mask,
    sinusoidal_positions,
)

E, HEADS = 12, 3
LENGTHS = torch.tensor([5, 2, 3])  # of S = 5 keys
SRC = torch.tensor([[5, 6, 7, 8, 9], [4, 5, 0, 0, 0], [9, 8, 7, 0, 0]])  # (B, S), padded with 0
TGT_IN = torch.tensor([[BOS_ID, 4, 5, 6], [BOS_ID, 7, 8, 0], [BOS_ID, 3, 0, 0]])  # (B, T)


def padding_mask(lengths, S):
    return torch.arange(S).unsqueeze(0) < lengths.unsqueeze(1)  # (B, S), True at real keys


def pair(dtype, seed=0):
    """A torch.nn.MultiheadAttention and ours holding the same weights."""
    torch.manual_seed(seed)
    reference = torch.nn.MultiheadAttention(E, HEADS, batch_first=True).to(dtype)
    with torch.no_grad():  # torch starts both biases at 0: make them matter
        reference.in_proj_bias.normal_()
        reference.out_proj.bias.normal_()
    ours = MultiHeadAttention(E, HEADS).to(dtype)
    ours.load_state_dict(reference.state_dict())
    return ours, reference


def inputs(kind, dtype, B=3, T=4, S=5, seed=1):
    """query, key, value: the same sequence for self-attention, a decoder's queries and an encoder's
    keys and values for cross-attention."""
    g = torch.Generator().manual_seed(seed)
    if kind == "self":
        x = torch.randn(B, S, E, generator=g, dtype=dtype)
        return x, x, x
    return tuple(torch.randn(B, L, E, generator=g, dtype=dtype) for L in (T, S, S))


def test_parameters_have_torchs_names_and_shapes():
    reference = torch.nn.MultiheadAttention(E, HEADS, batch_first=True)
    ours = MultiHeadAttention(E, HEADS)
    assert {k: v.shape for k, v in ours.state_dict().items()} == {k: v.shape for k, v in reference.state_dict().items()}
    ours.load_state_dict(reference.state_dict())  # strict


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("kind", ["self", "cross"])
@pytest.mark.parametrize("masking", ["none", "padding", "per query"])
def test_outputs_weights_and_gradients_match_torch(dtype, kind, masking):
    ours, reference = pair(dtype)
    query, key, value = (t.clone().requires_grad_() for t in inputs(kind, dtype))
    B, T, S = query.shape[0], query.shape[1], key.shape[1]
    mask, torch_kwargs = None, {}
    if masking == "padding":
        mask = padding_mask(LENGTHS, S)  # (B, S)
        torch_kwargs = {"key_padding_mask": ~mask}  # torch: True where a key is ignored
    elif masking == "per query":
        g = torch.Generator().manual_seed(2)
        mask = torch.rand(B, T, S, generator=g) < 0.6  # (B, T, S)
        mask[:, :, 1] = True  # every query keeps a key (torch gives NaN otherwise)
        torch_kwargs = {"attn_mask": (~mask).repeat_interleave(HEADS, dim=0)}  # (B * heads, T, S)

    output, weights = ours(query, key, value, mask)
    expected, expected_weights = reference(query, key, value, average_attn_weights=False, **torch_kwargs)
    assert output.shape == (B, T, E) and weights.shape == (B, HEADS, T, S)
    assert output.dtype == weights.dtype == dtype
    assert_close(output, expected)
    assert_close(weights, expected_weights)  # per head
    _, averaged = reference(query, key, value, **torch_kwargs)  # torch's default: the mean over heads
    assert_close(weights.mean(dim=1), averaged)

    u = torch.randn(output.shape, generator=torch.Generator().manual_seed(3), dtype=dtype)
    leaves = [query, key, value] if kind == "cross" else [query]
    ours_grads = torch.autograd.grad((output * u).sum(), leaves + list(ours.parameters()))
    torch_grads = torch.autograd.grad((expected * u).sum(), leaves + list(reference.parameters()))
    for got, want in zip(ours_grads, torch_grads):
        assert_close(got, want)


def test_padding_and_causal_masks_together_match_torch():
    ours, reference = pair(torch.float64)
    x, _, _ = inputs("self", torch.float64)
    B, S = x.shape[:2]
    mask = padding_mask(LENGTHS, S).unsqueeze(1) & causal_mask(S)  # (B, S, S)
    output, weights = ours(x, x, x, mask)
    ignored = {"key_padding_mask": ~padding_mask(LENGTHS, S), "attn_mask": ~causal_mask(S)}  # torch: True = ignored
    expected, expected_weights = reference(x, x, x, average_attn_weights=False, **ignored)
    assert_close(output, expected)
    assert_close(weights, expected_weights)
    assert (weights.triu(diagonal=1) == 0).all(), "no query may look ahead"


def test_no_mask_equals_a_mask_of_real_keys_only():
    ours, _ = pair(torch.float64)
    q, k, v = inputs("cross", torch.float64)
    everything = torch.ones(q.shape[0], k.shape[1], dtype=torch.bool)
    for a, b in zip(ours(q, k, v), ours(q, k, v, everything)):
        assert_close(a, b)


def test_a_fully_masked_row_gives_zero_weights_never_nan():
    ours, reference = pair(torch.float64)
    q, k, v = (t.clone().requires_grad_() for t in inputs("cross", torch.float64))
    mask = torch.ones(3, 4, 5, dtype=torch.bool)
    mask[1, 2] = False  # query 2 of row 1 may look at nothing
    mask[2] = False  # row 2: no query may look at anything
    output, weights = ours(q, k, v, mask)
    assert not output.isnan().any() and not weights.isnan().any()
    assert (weights[1, :, 2] == 0).all() and (weights[2] == 0).all()
    assert_close(output[1, 2], ours.out_proj.bias.expand(E))  # nothing attended: the output bias alone
    assert_close(weights[0].sum(-1), torch.ones(HEADS, 4, dtype=torch.float64))
    # the other rows are what torch gives them
    expected, _ = reference(q, k, v, attn_mask=(~mask).repeat_interleave(HEADS, dim=0))
    assert_close(output[0], expected[0])
    assert expected[2].isnan().all(), "torch gives NaN for a query with no key (why seqlab masks as it does)"
    grads = torch.autograd.grad(output.sum(), [q, k, v])
    assert all(torch.isfinite(g).all() for g in grads)


def test_self_attention_is_permutation_equivariant():
    ours, _ = pair(torch.float64)
    x, _, _ = inputs("self", torch.float64)
    order = torch.tensor([3, 0, 4, 2, 1])
    output, weights = ours(x, x, x)
    permuted_output, permuted_weights = ours(x[:, order], x[:, order], x[:, order])
    assert_close(permuted_output, output[:, order])
    assert_close(permuted_weights, weights[:, :, order][:, :, :, order])


def test_heads_are_independent_attentions_on_slices_of_the_projections():
    """Head h is single-head attention with rows h*d..(h+1)*d of W_Q, W_K, W_V."""
    ours, _ = pair(torch.float64)
    q, k, v = inputs("cross", torch.float64)
    _, weights = ours(q, k, v)
    d = E // HEADS
    w_q, w_k, _ = ours.in_proj_weight.chunk(3)
    b_q, b_k, _ = ours.in_proj_bias.chunk(3)
    for h in range(HEADS):
        rows = slice(h * d, (h + 1) * d)
        scores = (q @ w_q[rows].T + b_q[rows]) @ (k @ w_k[rows].T + b_k[rows]).transpose(1, 2) / math.sqrt(d)
        assert_close(weights[:, h], torch.softmax(scores, dim=-1))


def test_dropout_acts_on_the_weights_only_while_training():
    torch.manual_seed(0)
    attention = MultiHeadAttention(E, HEADS, dropout=0.5)
    q, k, v = inputs("cross", torch.float32)
    train_output, train_weights = attention(q, k, v)
    attention.eval()
    eval_output, eval_weights = attention(q, k, v)
    assert_close(train_weights, eval_weights)  # the weights returned are before dropout
    assert not torch.allclose(train_output, eval_output)


def test_causal_mask():
    assert causal_mask(3).tolist() == [[True, False, False], [True, True, False], [True, True, True]]
    assert causal_mask(2, 4).tolist() == [[True, True, True, False], [True, True, True, True]]
    assert causal_mask(1, 5).all()


def paper_positions(length, dim):
    """Section 3.5 of the paper, one number at a time."""
    table = [[0.0] * dim for _ in range(length)]
    for pos in range(length):
        for i in range(dim):
            angle = pos / 10000 ** ((i - i % 2) / dim)  # features 2i and 2i + 1 share a frequency
            table[pos][i] = math.sin(angle) if i % 2 == 0 else math.cos(angle)
    return torch.tensor(table)


@pytest.mark.parametrize("length, dim", [(50, 16), (7, 5), (1, 1), (200, 64)])
def test_sinusoidal_positions_follow_the_paper(length, dim):
    encodings = sinusoidal_positions(length, dim)
    assert encodings.shape == (length, dim) and encodings.dtype == torch.get_default_dtype()
    assert_close(encodings, paper_positions(length, dim), atol=1e-6, rtol=0)


def test_positions_are_distinct_and_shift_by_a_rotation():
    encodings = sinusoidal_positions(100, 16).double()
    distances = torch.cdist(encodings, encodings)  # (100, 100)
    assert (distances + torch.eye(100) > 1e-3).all(), "every position has its own code"
    # PE(pos + k) = R_k PE(pos) for every pos: one fixed rotation per feature pair, the same at every pos
    k = 7
    for i in range(8):
        angle = k / 10000 ** (2 * i / 16)
        rotation = torch.tensor([[math.cos(angle), math.sin(angle)], [-math.sin(angle), math.cos(angle)]]).double()
        pair_now, pair_later = encodings[:-k, 2 * i : 2 * i + 2], encodings[k:, 2 * i : 2 * i + 2]
        assert_close(pair_now @ rotation.T, pair_later, atol=1e-5, rtol=0)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: MultiHeadAttention(10, 3), r"embed_dim \(10\) must be divisible by num_heads \(3\)"),
        (lambda: MultiHeadAttention(12, 0), "num_heads must be at least 1, got 0"),
        (lambda: MultiHeadAttention(E, HEADS)(torch.randn(2, 4, 8), torch.randn(2, 5, E), torch.randn(2, 5, E)),
         r"query: expected shape \(B, T, 12\), got \(2, 4, 8\)"),
        (lambda: MultiHeadAttention(E, HEADS)(torch.randn(2, 4, E), torch.randn(3, 5, E), torch.randn(3, 5, E)),
         r"key: expected shape \(2, S, 12\), got \(3, 5, 12\)"),
        (lambda: MultiHeadAttention(E, HEADS)(torch.randn(2, 4, E), torch.randn(2, 5, E), torch.randn(2, 6, E)),
         r"value: expected shape \(2, 5, 12\), got \(2, 6, 12\)"),
        (lambda: MultiHeadAttention(E, HEADS)(torch.randn(2, 4, E), torch.randn(2, 5, E), torch.randn(2, 5, E),
                                              torch.ones(2, 4, dtype=torch.bool)),
         r"mask: expected shape \(2, 5\), got \(2, 4\)"),
        (lambda: MultiHeadAttention(E, HEADS)(torch.randn(2, 4, E), torch.randn(2, 5, E), torch.randn(2, 5, E),
                                              torch.ones(2, 5, 4, dtype=torch.bool)),
         r"mask: expected shape \(2, 4, 5\), got \(2, 5, 4\)"),
        (lambda: MultiHeadAttention(E, HEADS)(torch.randn(2, 4, E), torch.randn(2, 5, E), torch.randn(2, 5, E),
                                              torch.ones(2, 5)),
         "mask: expected a bool tensor"),
        (lambda: causal_mask(3, 2), r"the keys \(S=2\) must include the 3 queries"),
        (lambda: sinusoidal_positions(0, 4), "length must be at least 1, got 0"),
        (lambda: Transformer(12, 9, d_model=16, nhead=2)(SRC, LENGTHS[:2], TGT_IN),
         r"src_lengths: expected shape \(3\), got \(2\)"),
        (lambda: Transformer(12, 9, d_model=16, nhead=2)(SRC, LENGTHS, TGT_IN[:2]),
         r"tgt_in: expected shape \(3, T\), got \(2, 4\)"),
        (lambda: Transformer(12, 9, d_model=16, nhead=2)(SRC, torch.tensor([5, 0, 3]), TGT_IN),
         r"src_lengths must lie in \[1, 5\]"),
        (lambda: Transformer(12, 9, d_model=16, nhead=2)(SRC + 5, LENGTHS, TGT_IN),
         r"src: token id 14 is outside the vocabulary of 12 ids"),
        (lambda: Transformer(12, 9, d_model=16, nhead=2)(SRC, LENGTHS, TGT_IN + 6),
         r"tgt_in: token id 14 is outside the vocabulary of 9 ids"),
        (lambda: Transformer(12, 9, d_model=16, nhead=2)(SRC, LENGTHS, TGT_IN[:, :0]),
         r"tgt_in: expected at least one step \(T\)"),
        (lambda: MultiHeadAttention(E, HEADS)(*(torch.ones(2, 4, E, dtype=torch.long),) * 3),
         "query: expected a floating-point tensor, got torch.int64"),
    ],
)  # fmt: skip
def test_bad_input_gets_a_clear_value_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# ---------------------------------------------------------------------------------------------------
# The layers against torch.nn's, and the model's contract


def test_encoder_layer_matches_torch():
    torch.manual_seed(0)
    reference = torch.nn.TransformerEncoderLayer(E, HEADS, 20, dropout=0.0, batch_first=True, norm_first=True)
    ours = TransformerEncoderLayer(E, HEADS, 20)
    ours.load_state_dict(reference.double().state_dict())
    ours.double()
    x = torch.randn(3, 5, E, dtype=torch.float64)
    mask = padding_mask(LENGTHS, 5)
    output, weights = ours(x, mask)
    assert weights.shape == (3, HEADS, 5, 5)
    assert_close(output, reference(x, src_key_padding_mask=~mask))


def test_decoder_layer_matches_torch_and_one_position_at_a_time():
    torch.manual_seed(0)
    reference = torch.nn.TransformerDecoderLayer(E, HEADS, 20, dropout=0.0, batch_first=True, norm_first=True)
    ours = TransformerDecoderLayer(E, HEADS, 20)
    ours.load_state_dict(reference.double().state_dict())
    ours.double()
    y, memory = torch.randn(3, 4, E, dtype=torch.float64), torch.randn(3, 5, E, dtype=torch.float64)
    memory_real = padding_mask(LENGTHS, 5)
    output, self_weights, cross_weights = ours(y, memory, memory_real=memory_real)
    causal = torch.nn.Transformer.generate_square_subsequent_mask(4, dtype=torch.float64)
    expected = reference(y, memory, tgt_mask=causal, memory_key_padding_mask=~memory_real, tgt_is_causal=True)
    assert_close(output, expected)
    assert self_weights.shape == (3, HEADS, 4, 4) and cross_weights.shape == (3, HEADS, 4, 5)
    for t in range(4):  # position t alone, its history given: the same output
        alone, _, _ = ours(y[:, t : t + 1], memory, memory_real, history=y[:, : t + 1])
        assert_close(alone, output[:, t : t + 1])


def small_model(seed=0, **kwargs):
    torch.manual_seed(seed)
    return Transformer(12, 9, d_model=16, nhead=2, **kwargs).double()


def test_model_shapes_and_distributions():
    model = small_model()
    log_probs = model(SRC, LENGTHS, TGT_IN)
    assert log_probs.shape == (3, 4, 9) and log_probs.dtype == torch.float64
    assert_close(log_probs.exp().sum(-1), torch.ones(3, 4, dtype=torch.float64))
    maps = model.attention_maps(SRC, LENGTHS, TGT_IN)
    assert maps["encoder"].shape == (3, 2, 2, 5, 5)
    assert maps["decoder"].shape == (3, 2, 2, 4, 4)
    assert maps["cross"].shape == (3, 2, 2, 4, 5)
    assert (maps["cross"][1, :, :, :, 2:] == 0).all(), "padded source positions get no weight"
    assert (maps["decoder"].triu(diagonal=1) == 0).all(), "the decoder never looks ahead"


def test_padding_content_and_target_future_do_not_matter():
    model = small_model()
    log_probs = model(SRC, LENGTHS, TGT_IN)
    noisy = SRC.clone()
    noisy[1, 2:] = 11  # real ids where padding should be
    assert_close(model(noisy, LENGTHS, TGT_IN), log_probs)
    changed = TGT_IN.clone()
    changed[:, 3] = 8  # the last target input: earlier positions must not see it
    assert_close(model(SRC, LENGTHS, changed)[:, :3], log_probs[:, :3])


def test_teacher_forced_forward_equals_step_by_step():
    model = small_model().eval()
    log_probs = model(SRC, LENGTHS, TGT_IN)  # (B, T, V)
    state = model.start_decoding(SRC, LENGTHS)
    for t in range(TGT_IN.shape[1]):
        step_log_probs, state = model.decode_step(TGT_IN[:, t], state)
        assert_close(step_log_probs, log_probs[:, t])
    assert state["hidden"].shape == (2, 3, 4, 16)  # (L, B, t, H)


@pytest.mark.parametrize("seed", [1, 2])
def test_beam_size_one_equals_greedy(seed):
    model = small_model(seed)
    greedy = model.greedy_decode(SRC, LENGTHS, max_len=6)
    beam = model.beam_search(SRC, LENGTHS, max_len=6, beam_size=1)
    # The whole tensors: a beam padded one column too long (or cut one short) must fail here.
    assert beam.shape == greedy.shape, f"beam {tuple(beam.shape)} against greedy {tuple(greedy.shape)}"
    assert torch.equal(beam, greedy)


def test_beam_search_scores_are_the_models_log_probabilities():
    model = small_model(3)
    _, hypotheses = model.beam_search(SRC, LENGTHS, max_len=5, beam_size=3, return_hypotheses=True)
    for row, hyps in enumerate(hypotheses):
        assert [h.score for h in hyps] == sorted((h.score for h in hyps), reverse=True)
        for h in hyps:
            tgt_in = torch.tensor([[BOS_ID] + h.tokens[:-1]])
            log_probs = model(SRC[row : row + 1], LENGTHS[row : row + 1], tgt_in)[0]  # (T, V)
            rescored = log_probs.gather(1, torch.tensor(h.tokens).unsqueeze(1)).sum().item()
            assert math.isclose(h.score, rescored, rel_tol=1e-6, abs_tol=1e-6)


def test_decoding_restores_the_mode():
    model = small_model(dropout=0.1)
    model.train()
    model.greedy_decode(SRC, LENGTHS, max_len=4)
    model.beam_search(SRC, LENGTHS, max_len=4, beam_size=2)
    assert model.training and all(m.training for m in model.modules())
    model.eval()
    model.greedy_decode(SRC, LENGTHS, max_len=4)
    assert not model.training


def test_seqlab_train_trains_it():
    pairs = reversal_task(64, min_len=2, max_len=4, n_symbols=4, seed=0)
    src_vocab, tgt_vocab = build_vocabs(pairs)
    torch.manual_seed(0)
    model = Transformer(len(src_vocab), len(tgt_vocab), d_model=16, nhead=2, num_encoder_layers=1, num_decoder_layers=1)
    history = train_seq2seq(model, pairs, src_vocab, tgt_vocab, epochs=8, batch_size=16, lr=1e-2)
    assert history["loss"][-1] < 0.5 * history["loss"][0]


def test_the_transformer_and_its_layers_take_torch_argument_names():
    """Issue 26: where an argument means what torch.nn.Transformer's does, it has torch's name."""
    ours = list(inspect.signature(Transformer).parameters)
    torchs = set(inspect.signature(torch.nn.Transformer).parameters)
    assert ours[:2] == ["src_vocab_size", "tgt_vocab_size"]  # torch's Transformer has no vocabulary
    assert ours[2:] == ["d_model", "nhead", "num_encoder_layers", "num_decoder_layers", "dim_feedforward", "dropout"]
    assert set(ours[2:]) <= torchs
    for layer, reference in (
        (TransformerEncoderLayer, torch.nn.TransformerEncoderLayer),
        (TransformerDecoderLayer, torch.nn.TransformerDecoderLayer),
    ):
        assert list(inspect.signature(layer).parameters) == list(inspect.signature(reference).parameters)[:4]
    model = Transformer(12, 9, d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=3, dim_feedforward=5)
    assert (len(model.encoder_layers), len(model.decoder_layers)) == (1, 3)
    assert model.decoder_layers[2].linear1.out_features == 5 and model.decoder_layers[0].self_attn.num_heads == 2
    assert model(SRC, LENGTHS, TGT_IN).shape == (3, TGT_IN.shape[1], 9)
    assert model.encode(SRC, LENGTHS).state.shape == (3, 3, 0, 8)  # (L decoder layers, B, nothing yet, H)
