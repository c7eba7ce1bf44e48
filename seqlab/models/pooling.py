"""Attention pooling: one vector for a whole sequence, weighted by what matters (chapter 7).

A classifier needs one vector per sentence. Chapter 1's many-to-one classifier takes the recurrent
layer's last state, which must carry the decisive word from wherever it was to the end. Attention
pooling scores every position's state with learned parameters that are the same for every sentence
("which words decide the label?") and takes the weighted sum (Yang et al., 2016)::

    scores  = score(query, states)            (B, 1, S)
    weights = masked_softmax(scores, mask)    (B, 1, S), padding gets exactly 0
    pooled  = weights @ states                (B, 1, D)

It is chapter 4's :class:`~seqlab.models.attention.Attention` with a query that is a parameter, not a
decoder state. With the additive score, ``e_i = wᵀ tanh(W_k h_i + W_q q + b)``: since ``q`` is the
same for every sequence, ``q`` and ``W_q`` reach the scores only through the one vector ``W_q q + b``,
which the bias ``b`` alone could learn, so their ``D_q + A·D_q`` numbers are redundant parameters
(kept so that the module is chapter 4's ``Attention`` unchanged, and counted in its parameters). The
vector that decides which states score high is ``w`` (with ``W_k`` and the bias): Yang et al. write
``u_wᵀ tanh(W_w h_i + b_w)`` and call ``u_w``, our ``w``, the "word context vector", which they read as a
fixed query.
"""

import torch
from torch import Tensor, nn

from seqlab.core.checks import check_mask, check_shape
from seqlab.core.padding import lengths_to_mask
from seqlab.models.attention import AdditiveScorer, Attention
from seqlab.models.encoder import Encoder, last_layer_directions, per_direction
from seqlab.models.rnn import hidden_state


class AttentionPooling(nn.Module):
    """Pool ``(B, S, D)`` states into ``(B, D)`` by additive scoring against a learned parameter ``q``.

    ``q`` takes the query's place in chapter 4's ``Attention``, but being the same for every sequence it
    reaches the scores only through ``W_q q + b`` (see the module's docstring).

    Args:
        input_size: D, the size of each state (the keys and values).
        query_size: D_q, the size of the query parameter ``q``, and A, the additive scorer's hidden size
            (the two are equal here).

    Shape:
        - states ``(B, S, D)``, mask ``(B, S)`` bool (True at real positions) → pooled ``(B, D)``,
          weights ``(B, S)``: each row sums to 1 over the real positions, 0 on padding.

    Example::

        >>> pooling = AttentionPooling(input_size=6, query_size=4)
        >>> pooled, weights = pooling(torch.randn(2, 5, 6), torch.tensor([[True] * 5, [True] * 3 + [False] * 2]))
        >>> pooled.shape, weights[1, 3:].tolist()
        (torch.Size([2, 6]), [0.0, 0.0])

    Taught in chapter 7.
    """

    def __init__(self, input_size: int, query_size: int = 32):
        super().__init__()
        self.input_size = input_size
        self.query = nn.Parameter(0.1 * torch.randn(query_size))  # "which positions decide?", learned
        self.attention = Attention(AdditiveScorer(query_size, input_size, query_size))

    def forward(self, states: Tensor, mask: Tensor | None = None) -> tuple:
        check_shape("states", states, ("B", "S", self.input_size))
        if mask is not None:
            check_mask("mask", mask, tuple(states.shape[:2]))
        queries = self.query.expand(states.shape[0], 1, -1)  # (B, 1, Q): the same query for every row
        pooled, weights = self.attention(queries, states, states, mask)  # (B, 1, D), (B, 1, S)
        return pooled.squeeze(1), weights.squeeze(1)  # (B, D), (B, S)


class PooledClassifier(nn.Module):
    """A bidirectional encoder, then one vector per sequence, then a linear layer to the classes.

    Args:
        vocab_size: V (id 0 is padding).
        num_classes: the number of labels.
        embedding_size: size E of each token embedding.
        encoding_size: size of each position's encoding, both directions together (as for
            :class:`~seqlab.experiments.tagging.Tagger`): each direction has ``encoding_size // 2`` units
            (torch.nn's ``hidden_size``), and the pooled vector has ``encoding_size`` features.
        pooling: ``"attention"`` (:class:`AttentionPooling` over all positions), ``"last"`` (the
            encoder's final states, both directions concatenated: chapter 1's many-to-one classifier,
            made bidirectional and aware of padding) or ``"mean"`` (the mean of the real positions'
            states: attention pooling with every weight ``1 / length``, the control that tells the
            weights' share of a gain from pooling's).

    Shape:
        - ``model(src (B, S), src_lengths (B,)) → logits (B, num_classes)``.
        - ``model.attention_weights(src, src_lengths) → (B, S)`` (attention pooling only).
        - ``model.sentence_embedding(src, src_lengths) → (pooled (B, H), weights (B, S) or None)``
          (not ``encode``, which in seqlab returns what a decoder reads: :class:`~seqlab.models.decoding.Encoded`).

    Example::

        >>> model = PooledClassifier(vocab_size=20, num_classes=3, embedding_size=4, encoding_size=8)
        >>> src, src_lengths = torch.tensor([[4, 5, 6], [7, 8, 0]]), torch.tensor([3, 2])
        >>> model(src, src_lengths).shape, model.attention_weights(src, src_lengths).shape
        (torch.Size([2, 3]), torch.Size([2, 3]))

    Taught in chapter 7.
    """

    def __init__(
        self,
        vocab_size: int,
        num_classes: int,
        embedding_size: int = 32,
        encoding_size: int = 64,
        pooling: str = "attention",
    ):
        super().__init__()
        if pooling not in ("attention", "last", "mean"):
            raise ValueError(f"pooling must be 'attention', 'last' or 'mean', got {pooling!r}")
        self.pooling = pooling
        hidden_size = per_direction(encoding_size, True, name="encoding_size")  # torch.nn's: one direction
        self.encoder = Encoder(vocab_size, embedding_size, hidden_size, bidirectional=True)
        self.pool = AttentionPooling(encoding_size) if pooling == "attention" else None
        self.output = nn.Linear(encoding_size, num_classes)

    def sentence_embedding(self, src: Tensor, src_lengths: Tensor) -> tuple:
        """The pooled vector ``(B, H)`` and the pooling weights ``(B, S)`` (None for ``"last"`` and ``"mean"``)."""
        states, final = self.encoder(src, src_lengths)  # (B, S, H), (2, B, H/2)
        if self.pooling == "last":
            return last_layer_directions(hidden_state(final), 1, 2)[-1], None  # (B, H)
        if self.pooling == "mean":
            mask = lengths_to_mask(src_lengths, src.shape[1]).to(src.device).unsqueeze(2)  # (B, S, 1)
            return (states * mask).sum(dim=1) / mask.sum(dim=1), None  # (B, H): the real positions' mean
        return self.pool(states, lengths_to_mask(src_lengths, src.shape[1]).to(src.device))  # (B, H), (B, S)

    def forward(self, src: Tensor, src_lengths: Tensor) -> Tensor:
        return self.output(self.sentence_embedding(src, src_lengths)[0])  # (B, num_classes)

    def attention_weights(self, src: Tensor, src_lengths: Tensor) -> Tensor:
        if self.pool is None:
            raise ValueError(f"a PooledClassifier with pooling={self.pooling!r} has no attention weights")
        return self.sentence_embedding(src, src_lengths)[1]  # (B, S)
