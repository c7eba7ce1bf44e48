"""Attention: scoring functions, the masked softmax, and the weighted sum (chapters 4 and 5).

Attention is a soft dictionary lookup. Each **query** (what the decoder is looking for) is compared
with every **key** (what each source position offers) by a scoring function; a softmax over the
source turns the scores into weights; the **context** is the weighted sum of the **values**::

    scores  = score(queries, keys)          (B, T, S)
    weights = masked_softmax(scores, mask)  (B, T, S), each row sums to 1 over real keys
    context = weights @ values              (B, T, Dv)

Every scorer maps ``queries (B, T, Dq), keys (B, S, Dk) → scores (B, T, S)`` and splits the work in
two: ``prepare_keys(keys)`` does what depends on the keys alone (a projection, a normalisation), once
per source; ``score(queries, prepared_keys)`` does the rest, once per decoder step.
``forward(queries, keys)`` is the two together.

Sizes have their own names here: ``query_size`` (Dq), ``key_size`` (Dk), and ``attention_size`` (A), the
width of the additive scorer's hidden layer. ``hidden_size`` is not used in this module: across seqlab it
means a recurrent state's size (one direction, as in torch.nn; see :mod:`seqlab.models.rnn`), and a
scorer's hidden layer is no recurrent state.
"""

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from seqlab.core.checks import check_floating, check_mask, check_shape

__all__ = [
    "AdditiveScorer",
    "BilinearScorer",
    "DotScorer",
    "ScaledDotScorer",
    "CosineScorer",
    "SCORERS",
    "make_scorer",
    "masked_softmax",
    "Attention",
]


def _check_queries_keys(queries: Tensor, keys: Tensor, query_size=None, key_size=None) -> None:
    check_shape("queries", queries, ("B", "T", "Dq" if query_size is None else query_size))
    check_shape("keys", keys, (queries.shape[0], "S", "Dk" if key_size is None else key_size))


class _Scorer(nn.Module):
    """What every scorer shares: ``forward`` is :meth:`prepare_keys` then :meth:`score`."""

    def prepare_keys(self, keys: Tensor) -> Tensor:
        """The key-only work, once per source: ``keys (B, S, Dk)`` → prepared keys (here the keys themselves)."""
        return keys

    def score(self, queries: Tensor, prepared_keys: Tensor) -> Tensor:
        """``queries (B, T, Dq)`` against prepared keys → scores ``(B, T, S)``; each scorer writes its own."""
        raise NotImplementedError

    def forward(self, queries: Tensor, keys: Tensor) -> Tensor:
        """``queries (B, T, Dq)``, ``keys (B, S, Dk)`` → scores ``(B, T, S)``."""
        return self.score(queries, self.prepare_keys(keys))  # (B, T, S)


class AdditiveScorer(_Scorer):
    r"""Additive (MLP, "concat") scoring of Bahdanau et al. (2015): ``wᵀ tanh(W_q q + W_k k + b)``.

    In the book's notation, :math:`e_{t,i} = w^\top \tanh(W_q s_{t-1} + W_k h_i + b)`: the query is the
    decoder's previous state :math:`s_{t-1}` (``W_q`` is ``query_proj``'s weight, ``b`` its bias), the
    keys are the encoder states :math:`h_i` (``W_k`` is ``key_proj``), and ``w`` is ``v``'s weight.
    Bahdanau et al.'s equation has no ``b``. A one-hidden-layer network on the concatenation
    ``[q; k]``, which is the same thing with ``[W_q W_k]`` as one matrix.

    Args:
        query_size: Dq.
        key_size: Dk.
        attention_size: A, the size of the hidden layer (``v`` has A entries).

    Shape:
        - queries ``(B, T, Dq)``, keys ``(B, S, Dk)`` → scores ``(B, T, S)``.

    The key projection ``W_k k`` does not depend on the query: :meth:`prepare_keys` computes it once
    per source, and each decoder step pays only for ``W_q q`` and the ``tanh``.

    Example::

        >>> scorer = AdditiveScorer(query_size=4, key_size=6, attention_size=8)
        >>> scorer(torch.randn(2, 3, 4), torch.randn(2, 5, 6)).shape
        torch.Size([2, 3, 5])

    Taught in chapter 4.
    """

    def __init__(self, query_size: int, key_size: int, attention_size: int):
        super().__init__()
        self.query_size, self.key_size, self.attention_size = query_size, key_size, attention_size
        self.key_proj = nn.Linear(key_size, attention_size, bias=False)  # W_k
        self.query_proj = nn.Linear(query_size, attention_size, bias=True)  # W_q and the bias b
        self.v = nn.Linear(attention_size, 1, bias=False)  # w

    def prepare_keys(self, keys: Tensor) -> Tensor:
        check_shape("keys", keys, ("B", "S", self.key_size))
        return self.key_proj(keys)  # (B, S, A)

    def score(self, queries: Tensor, prepared_keys: Tensor) -> Tensor:
        check_shape("queries", queries, (prepared_keys.shape[0], "T", self.query_size))
        projected_queries = self.query_proj(queries)  # (B, T, A)
        # Broadcast every query against every key: (B, T, 1, A) + (B, 1, S, A) -> (B, T, S, A).
        hidden = torch.tanh(projected_queries.unsqueeze(2) + prepared_keys.unsqueeze(1))
        return self.v(hidden).squeeze(-1)  # (B, T, S)


class BilinearScorer(_Scorer):
    r"""Bilinear ("general", multiplicative) scoring of Luong et al. (2015): ``qᵀ W k``.

    One weight matrix relates every query dimension to every key dimension, so query and key sizes
    may differ. :meth:`prepare_keys` computes ``W k`` once per source.

    Args:
        query_size: Dq.
        key_size: Dk.

    Shape:
        - queries ``(B, T, Dq)``, keys ``(B, S, Dk)`` → scores ``(B, T, S)``.

    Example::

        >>> BilinearScorer(query_size=4, key_size=6)(torch.randn(2, 3, 4), torch.randn(2, 5, 6)).shape
        torch.Size([2, 3, 5])

    Taught in chapter 5.
    """

    def __init__(self, query_size: int, key_size: int):
        super().__init__()
        self.query_size, self.key_size = query_size, key_size
        self.weight = nn.Parameter(torch.empty(query_size, key_size))
        nn.init.xavier_uniform_(self.weight)

    def prepare_keys(self, keys: Tensor) -> Tensor:
        check_shape("keys", keys, ("B", "S", self.key_size))
        return keys @ self.weight.T  # (B, S, Dq): W k for every key

    def score(self, queries: Tensor, prepared_keys: Tensor) -> Tensor:
        check_shape("queries", queries, (prepared_keys.shape[0], "T", self.query_size))
        return queries @ prepared_keys.transpose(1, 2)  # (B, T, Dq) @ (B, Dq, S) -> (B, T, S)


def _check_same_size(queries: Tensor, keys: Tensor, name: str) -> None:
    _check_queries_keys(queries, keys)
    if queries.shape[2] != keys.shape[2]:
        raise ValueError(
            f"{name} needs queries and keys of the same size: queries (B, T, {queries.shape[2]}), "
            f"keys (B, S, {keys.shape[2]}); use BilinearScorer or AdditiveScorer for different sizes"
        )


class DotScorer(_Scorer):
    """Dot-product scoring: ``q · k``. No parameters; query and key sizes must be equal.

    Shape:
        - queries ``(B, T, D)``, keys ``(B, S, D)`` → scores ``(B, T, S)``.

    Example::

        >>> DotScorer()(torch.tensor([[[1.0, 2.0]]]), torch.tensor([[[3.0, 4.0], [1.0, 0.0]]]))
        tensor([[[11.,  1.]]])

    Taught in chapter 5.
    """

    def score(self, queries: Tensor, prepared_keys: Tensor) -> Tensor:
        _check_same_size(queries, prepared_keys, type(self).__name__)
        return queries @ prepared_keys.transpose(1, 2)  # (B, T, S)


class ScaledDotScorer(DotScorer):
    """Scaled dot-product scoring (Vaswani et al., 2017): ``q · k / √D``.

    If the entries of ``q`` and ``k`` are independent with mean 0 and variance 1, ``q · k`` has
    variance D: the larger D, the larger the scores and the closer the softmax to a one-hot vector.
    Such a saturated softmax passes almost no gradient back for most queries and a large one for the
    few whose best keys score close together (chapter 5 measures it). Dividing by √D brings the
    variance back to 1.

    Shape:
        - queries ``(B, T, D)``, keys ``(B, S, D)`` → scores ``(B, T, S)``.

    Example::

        >>> ScaledDotScorer()(torch.tensor([[[1.0, 2.0]]]), torch.tensor([[[3.0, 4.0], [1.0, 0.0]]])) * 2**0.5
        tensor([[[11.0000,  1.0000]]])

    Taught in chapter 5.
    """

    def score(self, queries: Tensor, prepared_keys: Tensor) -> Tensor:
        return super().score(queries, prepared_keys) / math.sqrt(queries.shape[2])  # (B, T, S)


def _norm_floor(dtype: torch.dtype) -> float:
    """The smallest norm that :func:`F.normalize` divides by: 1e-8, or float16's smallest normal number
    (about 6e-5), since 1e-8 rounds to 0 in float16 and a zero vector would give 0/0 = NaN."""
    return max(1e-8, torch.finfo(dtype).tiny)


class CosineScorer(_Scorer):
    """Cosine-similarity scoring: ``κ · (q · k) / (‖q‖ ‖k‖)``, in ``[-κ, κ]``, with ``κ = scale``.

    Only directions count, not lengths. Because the scores are bounded, the softmax over them can
    never be sharp with ``scale = 1``: over S keys no weight exceeds ``e² / (e² + S − 1)``. ``scale`` is an
    *inverse* temperature κ (dividing the scores by a temperature τ is multiplying them by κ = 1/τ): a
    larger κ allows sharper weights.

    Args:
        scale: κ, multiplies every cosine (default 1).

    Shape:
        - queries ``(B, T, D)``, keys ``(B, S, D)`` → scores ``(B, T, S)``.

    Example::

        >>> CosineScorer()(torch.tensor([[[1.0, 0.0]]]), torch.tensor([[[2.0, 0.0], [0.0, 3.0], [-1.0, 0.0]]]))
        tensor([[[ 1.,  0., -1.]]])

    Taught in chapter 5.
    """

    def __init__(self, scale: float = 1.0):
        super().__init__()
        self.scale = scale

    def prepare_keys(self, keys: Tensor) -> Tensor:
        return F.normalize(keys, dim=-1, eps=_norm_floor(keys.dtype))  # (B, S, D), unit length (zero keys stay zero)

    def score(self, queries: Tensor, prepared_keys: Tensor) -> Tensor:
        _check_same_size(queries, prepared_keys, type(self).__name__)
        unit_queries = F.normalize(queries, dim=-1, eps=_norm_floor(queries.dtype))  # (B, T, D)
        return self.scale * (unit_queries @ prepared_keys.transpose(1, 2))  # (B, T, S)


SCORERS = ("additive", "bilinear", "dot", "scaled_dot", "cosine")


def make_scorer(name: str, query_size: int, key_size: int, attention_size: int | None = None) -> nn.Module:
    """The scorer called ``name`` (one of :data:`SCORERS`) for these sizes.

    ``attention_size`` is the additive scorer's hidden layer A (default: ``query_size``); the other
    scorers have none.

    The additive and bilinear scorers draw their initial weights here, from the global random
    generator; dot, scaled dot and cosine have none. A model that makes its scorer before its other
    layers (:class:`~seqlab.models.seq2seq.AttentionSeq2Seq` does) therefore starts, under one seed, from
    other decoder weights with an additive or bilinear scorer than with a parameter-free one. To
    compare scorers from identical starts, build every model with a parameter-free scorer and then
    replace its ``decoder.attention.scorer`` (chapter 5 does, and checks it with
    :func:`seqlab.experiments.claims.assert_same_start`).

    Example::

        >>> make_scorer("scaled_dot", query_size=4, key_size=4)(torch.randn(2, 3, 4), torch.randn(2, 5, 4)).shape
        torch.Size([2, 3, 5])
    """
    if name == "additive":
        return AdditiveScorer(query_size, key_size, attention_size or query_size)
    if name == "bilinear":
        return BilinearScorer(query_size, key_size)
    if name in ("dot", "scaled_dot", "cosine"):
        if query_size != key_size:
            raise ValueError(f"scorer {name!r} needs query_size == key_size, got {query_size} and {key_size}")
        return {"dot": DotScorer, "scaled_dot": ScaledDotScorer, "cosine": CosineScorer}[name]()
    raise ValueError(f"scorer must be one of {SCORERS}, got {name!r}")


def masked_softmax(scores: Tensor, mask: Tensor | None = None) -> Tensor:
    """Softmax over the last dimension that gives padded keys exactly zero weight.

    Args:
        scores: ``(B, T, S)`` attention scores.
        mask: ``(B, S)`` bool, True at real keys; None means every key is real.

    Returns:
        ``(B, T, S)`` weights: each row sums to 1 over its real keys, is exactly 0 on padded keys, and
        is all zeros (never NaN) when a row has no real key at all.

    Padded scores are replaced by ``-inf``, which the softmax turns into exactly 0, even next to a
    real score as low as the dtype's most negative number (a finite filler would tie with it). A row
    with no real key would then be all ``-inf``, 0/0 = NaN: such a row gets finite scores instead, and
    selecting with ``torch.where`` afterwards zeroes it (and every padded key) exactly, in the forward
    and the backward pass. A real key whose score is already ``-inf`` counts as padding. Safe in float16.

    Example::

        >>> masked_softmax(torch.zeros(2, 1, 3), torch.tensor([[True, True, False], [False, False, False]]))
        tensor([[[0.5000, 0.5000, 0.0000]],
        <BLANKLINE>
                [[0.0000, 0.0000, 0.0000]]])

    Taught in chapter 4.
    """
    check_shape("scores", scores, ("B", "T", "S"))
    check_floating("scores", scores)
    if mask is None:
        return torch.softmax(scores, dim=-1)
    check_mask("mask", mask, (scores.shape[0], scores.shape[2]))
    # 1) the keys that can get weight: real (the same for every query of a row) and not already -inf
    keep = mask.unsqueeze(1) & (scores != -math.inf)  # (B, T, S)
    # 2) -inf at the others; a row with nothing to keep softmaxes zeros instead, and is zeroed in 3)
    filler = torch.where(keep.any(dim=-1, keepdim=True), -math.inf, 0.0).to(scores.dtype)  # (B, T, 1)
    weights = torch.softmax(torch.where(keep, scores, filler), dim=-1)  # (B, T, S)
    # 3) exactly 0 on padded keys and on rows without a real key
    return torch.where(keep, weights, 0.0)  # (B, T, S)


class Attention(nn.Module):
    """Score, normalise, and take the weighted sum of the values.

    Args:
        scorer: any scorer of this module.

    Shape:
        - queries ``(B, T, Dq)``, keys ``(B, S, Dk)``, values ``(B, S, Dv)``, mask ``(B, S)`` bool
          → context ``(B, T, Dv)``, weights ``(B, T, S)``.

    ``prepared_keys`` (from ``scorer.prepare_keys(keys)``) may be passed to skip the key-only work
    when the same keys are queried many times, as a decoder does at every step.

    Example::

        >>> attention = Attention(DotScorer())
        >>> context, weights = attention(torch.randn(2, 1, 4), torch.randn(2, 5, 4), torch.randn(2, 5, 3))
        >>> context.shape, weights.shape
        (torch.Size([2, 1, 3]), torch.Size([2, 1, 5]))

    Taught in chapter 4.
    """

    def __init__(self, scorer: nn.Module):
        super().__init__()
        self.scorer = scorer

    def forward(
        self, queries: Tensor, keys: Tensor, values: Tensor, mask: Tensor | None = None, prepared_keys=None
    ) -> tuple:
        _check_queries_keys(queries, keys)
        check_shape("values", values, (keys.shape[0], keys.shape[1], "Dv"))
        # 1) score every query against every key
        if prepared_keys is None:
            prepared_keys = self.scorer.prepare_keys(keys)
        scores = self.scorer.score(queries, prepared_keys)  # (B, T, S)
        # 2) normalise over the real keys
        weights = masked_softmax(scores, mask)  # (B, T, S)
        # 3) the context: a weighted sum of the values
        context = weights @ values  # (B, T, S) @ (B, S, Dv) -> (B, T, Dv)
        return context, weights
