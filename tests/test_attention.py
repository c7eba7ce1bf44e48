"""seqlab.models.attention: every scorer against a naive loop, masked softmax properties, gradients."""

import math

import pytest
import torch
import torch.nn.functional as F
from torch.testing import assert_close

from seqlab.models.attention import (
    AdditiveScorer,
    Attention,
    BilinearScorer,
    CosineScorer,
    DotScorer,
    ScaledDotScorer,
    make_scorer,
    masked_softmax,
)

B, T, S, D = 2, 3, 4, 5


def naive_scores(scorer, queries, keys):
    """One (b, t, s) at a time, straight from each scorer's formula."""
    out = torch.empty(queries.shape[0], queries.shape[1], keys.shape[1], dtype=queries.dtype)
    for b in range(queries.shape[0]):
        for t in range(queries.shape[1]):
            for s in range(keys.shape[1]):
                q, k = queries[b, t], keys[b, s]
                if isinstance(scorer, AdditiveScorer):
                    hidden = torch.tanh(
                        scorer.key_proj.weight @ k + scorer.query_proj.weight @ q + scorer.query_proj.bias
                    )
                    value = scorer.v.weight[0] @ hidden
                elif isinstance(scorer, BilinearScorer):
                    value = q @ scorer.weight @ k
                elif isinstance(scorer, ScaledDotScorer):
                    value = q @ k / math.sqrt(q.numel())
                elif isinstance(scorer, DotScorer):
                    value = q @ k
                else:
                    value = scorer.scale * (q @ k) / (q.norm() * k.norm())
                out[b, t, s] = value
    return out


SCORER_CASES = {
    "additive": lambda: AdditiveScorer(query_size=D, key_size=D + 2, attention_size=6),
    "bilinear": lambda: BilinearScorer(query_size=D, key_size=D + 2),
    "dot": DotScorer,
    "scaled_dot": ScaledDotScorer,
    "cosine": lambda: CosineScorer(scale=3.0),
}


@pytest.mark.parametrize("name", SCORER_CASES)
def test_scorer_matches_naive_loop(name):
    torch.manual_seed(0)
    scorer = SCORER_CASES[name]().double()
    key_size = D + 2 if name in ("additive", "bilinear") else D
    queries = torch.randn(B, T, D, dtype=torch.double)  # several queries at once
    keys = torch.randn(B, S, key_size, dtype=torch.double)
    scores = scorer(queries, keys)
    assert scores.shape == (B, T, S)
    assert_close(scores, naive_scores(scorer, queries, keys))
    assert_close(scorer.score(queries, scorer.prepare_keys(keys)), scores)


@pytest.mark.parametrize("scorer", [DotScorer(), ScaledDotScorer(), CosineScorer()])
def test_same_size_scorers_refuse_different_sizes(scorer):
    with pytest.raises(ValueError, match=r"same size: queries \(B, T, 5\), keys \(B, S, 7\)"):
        scorer(torch.randn(B, T, 5), torch.randn(B, S, 7))


def test_make_scorer_names_and_errors():
    assert isinstance(make_scorer("scaled_dot", 4, 4), ScaledDotScorer)
    assert isinstance(make_scorer("additive", 4, 6, attention_size=3), AdditiveScorer)
    with pytest.raises(ValueError, match="needs query_size == key_size"):
        make_scorer("dot", 4, 6)
    with pytest.raises(ValueError, match="scorer must be one of"):
        make_scorer("multihead", 4, 4)


def test_scaled_dot_keeps_unit_variance_as_size_grows():
    torch.manual_seed(0)
    for size in (4, 64, 512):
        q, k = torch.randn(1, 400, size), torch.randn(1, 400, size)  # 160,000 pairs
        dot_var = DotScorer()(q, k).var().item()
        scaled_var = ScaledDotScorer()(q, k).var().item()
        assert 0.7 * size < dot_var < 1.3 * size
        assert 0.7 < scaled_var < 1.3


def test_scorers_reject_bad_shapes():
    with pytest.raises(ValueError, match=r"keys: expected shape \(B, S, 7\), got \(2, 4, 5\)"):
        AdditiveScorer(5, 7, 3)(torch.randn(B, T, 5), torch.randn(B, S, 5))
    with pytest.raises(ValueError, match=r"queries: expected shape \(2, T, 5\), got \(2, 3, 4\)"):
        BilinearScorer(5, 7)(torch.randn(B, T, 4), torch.randn(B, S, 7))


MASK = torch.tensor([[True, True, False, False], [False, False, False, False]])


def test_masked_softmax_rows_sum_to_one_zero_on_padding_and_empty_rows():
    scores = torch.randn(B, T, S)
    weights = masked_softmax(scores, MASK)
    assert_close(weights[0].sum(-1), torch.ones(T))
    assert (weights[0, :, 2:] == 0).all()  # exactly zero, not just small
    assert (weights[1] == 0).all()  # no real key: all zeros, no NaN
    assert_close(weights[0, :, :2], torch.softmax(scores[0, :, :2], -1))


def test_masked_softmax_without_mask_is_softmax_and_handles_large_scores():
    scores = torch.randn(B, T, S) * 1e4
    assert_close(masked_softmax(scores), torch.softmax(scores, -1))
    assert torch.isfinite(masked_softmax(scores, MASK)).all()


def test_masked_softmax_float16():
    scores = (torch.randn(B, T, S) * 100).half()
    weights = masked_softmax(scores, MASK)
    assert weights.dtype == torch.float16
    assert torch.isfinite(weights).all()
    assert (weights[0, :, 2:] == 0).all() and (weights[1] == 0).all()
    assert_close(weights[0].float().sum(-1), torch.ones(T), atol=2e-3, rtol=0)


def test_masked_softmax_checks_mask():
    with pytest.raises(ValueError, match=r"mask: expected shape \(2, 4\), got \(2, 3\)"):
        masked_softmax(torch.randn(B, T, S), MASK[:, :3])
    with pytest.raises(ValueError, match="bool"):
        masked_softmax(torch.randn(B, T, S), MASK.long())


def test_attention_context_is_the_weighted_sum_of_values():
    torch.manual_seed(0)
    attention = Attention(AdditiveScorer(D, D, 4))
    queries, keys, values = torch.randn(B, T, D), torch.randn(B, S, D), torch.randn(B, S, 3)
    context, weights = attention(queries, keys, values, MASK)
    assert context.shape == (B, T, 3) and weights.shape == (B, T, S)
    for b in range(B):
        for t in range(T):
            expected = sum(weights[b, t, s] * values[b, s] for s in range(S))
            assert_close(context[b, t], expected)
    assert (context[1] == 0).all()  # no real key: a zero context


def test_attention_hand_computed_example():
    # Dot scores of q = (1, 0) with keys (1, 0), (0, 1), (1, 1): 1, 0, 1; the third key is padding.
    queries = torch.tensor([[[1.0, 0.0]]])
    keys = torch.tensor([[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]])
    values = torch.tensor([[[10.0], [20.0], [30.0]]])
    context, weights = Attention(DotScorer())(queries, keys, values, torch.tensor([[True, True, False]]))
    e = math.e
    assert_close(weights, torch.tensor([[[e / (e + 1), 1 / (e + 1), 0.0]]]))
    assert_close(context, torch.tensor([[[(10 * e + 20) / (e + 1)]]]))


@pytest.mark.parametrize("name", ["additive", "bilinear", "dot", "scaled_dot", "cosine"])
def test_attention_gradcheck(name):
    torch.manual_seed(0)
    attention = Attention(make_scorer(name, 3, 3, attention_size=4)).double()
    queries = torch.randn(2, 2, 3, dtype=torch.double, requires_grad=True)
    keys = torch.randn(2, 4, 3, dtype=torch.double, requires_grad=True)
    values = torch.randn(2, 4, 2, dtype=torch.double, requires_grad=True)
    mask = torch.tensor([[True, True, True, False], [True, False, False, False]])
    assert torch.autograd.gradcheck(lambda q, k, v: attention(q, k, v, mask), (queries, keys, values))


def test_padded_keys_get_no_gradient():
    keys = torch.randn(B, S, D, requires_grad=True)
    context, _ = Attention(DotScorer())(torch.randn(B, T, D), keys, keys, MASK)
    context.sum().backward()
    assert (keys.grad[0, 2:] == 0).all() and (keys.grad[1] == 0).all()


def test_cosine_ignores_lengths():
    q, k = torch.randn(1, 1, D), torch.randn(1, 3, D)
    assert_close(CosineScorer()(q * 7, k * 0.1), CosineScorer()(q, k))
    assert_close(CosineScorer()(q, k), F.cosine_similarity(q.unsqueeze(2), k.unsqueeze(1), dim=-1))
