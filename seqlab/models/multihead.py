"""Multi-head scaled dot-product attention, written from the equations (chapter 8).

Chapter 4's attention had a decoder state as the query and the encoder states as keys and values, each
used as they were. Vaswani et al. (2017) project all three first, and do it several times in parallel:
each **head** m of the M heads has its own projections and attends on its own, with chapter 5's scaled
dot product (the book's notation: M heads, m = 1, ..., M; the values are Val, since V is the vocabulary
size)::

    Q_m = query W_Q_m,  K_m = key W_K_m,  Val_m = value W_V_m       (B, T, d), (B, S, d), (B, S, d)
    weights_m = masked_softmax(Q_m K_mᵀ / √d, mask)                 (B, T, S)
    head_m = weights_m Val_m                                        (B, T, d)
    output = [head_1; ...; head_M] W_O + b_O                        (B, T, E)

with ``d = E / M`` (``M = num_heads``). When query, key and value are the same sequence it is
**self-attention**.

:class:`MultiHeadAttention` keeps torch.nn.MultiheadAttention's parameter names and layout, so that
``ours.load_state_dict(torch.nn.MultiheadAttention(E, M, batch_first=True).state_dict())`` works and
both then compute the same numbers. :func:`causal_mask` is the decoder's mask: no peeking ahead.
"""

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from seqlab.core.checks import check_at_least_one, check_floating, check_mask, check_shape
from seqlab.models.attention import masked_softmax

__all__ = ["MultiHeadAttention", "causal_mask"]


def causal_mask(T: int, S: int | None = None, device=None) -> Tensor:
    """The decoder's mask: query ``t`` may look at keys ``1..t`` (itself and the past), never ahead.

    Positions are counted from 1 here, as in the book; in the tensor they are rows and columns ``0..T-1``.

    Args:
        T: the number of queries, the last ``T`` of the ``S`` positions.
        S: the number of keys, every position so far (default ``T``). With ``S > T`` the queries are the
            latest positions of a longer sequence, as when a decoder writes one more token.
        device: where to put the mask.

    Returns:
        ``(T, S)`` bool, True where query ``t`` may look: ``mask[t, s] = s <= t + (S - T)``.

    Example::

        >>> causal_mask(3).int().tolist()
        [[1, 0, 0], [1, 1, 0], [1, 1, 1]]
        >>> causal_mask(1, 3).int().tolist()
        [[1, 1, 1]]

    Taught in chapter 8.
    """
    S = T if S is None else S
    check_at_least_one("T", T)
    if S < T:
        raise ValueError(f"causal_mask: the keys (S={S}) must include the {T} queries")
    queries = torch.arange(S - T, S, device=device).unsqueeze(1)  # (T, 1): each query's position
    keys = torch.arange(S, device=device).unsqueeze(0)  # (1, S)
    return keys <= queries  # (T, S)


class MultiHeadAttention(nn.Module):
    r"""Multi-head scaled dot-product attention, batch-first, with a mask that is True at real keys.

    .. math::
        \text{head}_m = \operatorname{softmax}\!\big(\text{query}\, W_{Q,m}
            (\text{key}\, W_{K,m})^\top / \sqrt{d}\big)\, \text{value}\, W_{V,m},
        \qquad \text{output} = [\text{head}_1; \dots; \text{head}_M]\, W_O + b_O

    The parameters have torch.nn.MultiheadAttention's names and shapes: ``in_proj_weight`` ``(3E, E)``
    stacks :math:`W_Q, W_K, W_V` (each ``(E, E)``; counting heads from 0 as the code does, rows
    ``m*d .. (m+1)*d`` of each belong to head m),
    ``in_proj_bias`` ``(3E,)`` their biases, ``out_proj`` the output projection :math:`W_O, b_O`. So
    ``load_state_dict`` takes a ``torch.nn.MultiheadAttention(E, num_heads, batch_first=True)``'s state,
    and outputs, weights and gradients then match torch's.

    Args:
        embed_dim: E, the size of queries, keys, values and output.
        num_heads: M, the number of heads; each works with ``d = E / M`` features.
        dropout: dropout on the attention weights (while training), as in torch.

    Shape:
        - query ``(B, T, E)``, key ``(B, S, E)``, value ``(B, S, E)``;
        - mask ``(B, S)`` (the same keys for every query: padding) or ``(B, T, S)`` (per query: e.g.
          padding and :func:`causal_mask` together), bool, True at the keys a query may look at;
        - output ``(B, T, E)``, weights ``(B, M, T, S)``: every head's, before dropout. torch returns
          their mean over heads by default (``average_attn_weights=True``): ``weights.mean(1)``.

        A query with no real key at all gets all-zero weights (never NaN) and the output bias
        :math:`b_O` as its output; torch gives NaN there.

    Example::

        >>> attention = MultiHeadAttention(embed_dim=8, num_heads=2)
        >>> x = torch.randn(3, 5, 8)  # a batch of 3 sequences of 5 tokens: self-attention
        >>> output, weights = attention(x, x, x, mask=torch.ones(3, 5, dtype=torch.bool))
        >>> output.shape, weights.shape
        (torch.Size([3, 5, 8]), torch.Size([3, 2, 5, 5]))

    Taught in chapter 8.
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0):
        super().__init__()
        check_at_least_one("embed_dim", embed_dim)
        check_at_least_one("num_heads", num_heads)
        if embed_dim % num_heads:
            raise ValueError(f"embed_dim ({embed_dim}) must be divisible by num_heads ({num_heads})")
        self.embed_dim, self.num_heads, self.dropout = embed_dim, num_heads, dropout
        self.head_dim = embed_dim // num_heads
        self.in_proj_weight = nn.Parameter(torch.empty(3 * embed_dim, embed_dim))  # W_Q, W_K, W_V stacked
        self.in_proj_bias = nn.Parameter(torch.zeros(3 * embed_dim))
        self.out_proj = nn.Linear(embed_dim, embed_dim)  # W_O, b_O
        nn.init.xavier_uniform_(self.in_proj_weight)  # torch's initialisation
        nn.init.zeros_(self.out_proj.bias)

    def _check(self, query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None) -> None:
        check_shape("query", query, ("B", "T", self.embed_dim))
        check_shape("key", key, (query.shape[0], "S", self.embed_dim))
        check_shape("value", value, tuple(key.shape))
        for name, tensor in (("query", query), ("key", key), ("value", value)):
            check_floating(name, tensor)
        if mask is not None:
            B, T, S = query.shape[0], query.shape[1], key.shape[1]
            check_mask("mask", mask, (B, S) if mask.dim() == 2 else (B, T, S))

    def split_heads(self, x: Tensor) -> Tensor:
        """``(B, L, E) → (B, M, L, d)``: head m (from 0) gets features ``m*d .. (m+1)*d`` of every position."""
        B, L, _ = x.shape
        return x.view(B, L, self.num_heads, self.head_dim).transpose(1, 2)  # (B, M, L, d)

    def forward(self, query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None = None) -> tuple:
        self._check(query, key, value, mask)
        B, T, S, M = query.shape[0], query.shape[1], key.shape[1], self.num_heads
        # 1) project: W_Q, W_K, W_V are the three row blocks of in_proj_weight
        w_q, w_k, w_v = self.in_proj_weight.chunk(3)  # (E, E) each
        b_q, b_k, b_v = self.in_proj_bias.chunk(3)  # (E,) each
        q = self.split_heads(F.linear(query, w_q, b_q))  # (B, M, T, d)
        k = self.split_heads(F.linear(key, w_k, b_k))  # (B, M, S, d)
        v = self.split_heads(F.linear(value, w_v, b_v))  # (B, M, S, d): the heads' columns of Val
        # 2) scaled dot scores of every query against every key, in every head
        scores = q @ k.transpose(2, 3) / math.sqrt(self.head_dim)  # (B, M, T, d) @ (B, M, d, S) -> (B, M, T, S)
        # 3) masked softmax over the keys (chapter 4's): one row per (batch, head, query)
        if mask is None:
            mask = torch.ones(B, S, dtype=torch.bool, device=query.device)  # (B, S)
        per_query = (mask.unsqueeze(1) if mask.dim() == 2 else mask).expand(B, T, S)  # (B, T, S)
        rows = per_query.unsqueeze(1).expand(B, M, T, S).reshape(B * M * T, S)  # (B*M*T, S)
        weights = masked_softmax(scores.reshape(B * M * T, 1, S), rows).view(B, M, T, S)  # (B, M, T, S)
        # 4) every head's weighted sum of its values, heads side by side again, output projection
        heads = F.dropout(weights, self.dropout, self.training) @ v  # (B, M, T, S) @ (B, M, S, d) -> (B, M, T, d)
        concatenated = heads.transpose(1, 2).reshape(B, T, self.embed_dim)  # (B, T, M*d)
        return self.out_proj(concatenated), weights  # (B, T, E), (B, M, T, S)
