"""The Transformer (Vaswani et al., 2017): attention without recurrence, at toy scale (chapter 8).

Every position of the source attends to every other (self-attention), so one layer relates any two
positions in one step and computes all positions at once; the decoder attends to the target written so
far (with a causal mask) and to the encoder's output (cross-attention). Attention alone ignores word
order, so :func:`sinusoidal_positions` are added to the embeddings.

* :func:`sinusoidal_positions`: the paper's positional encodings;
* :class:`TransformerEncoderLayer`, :class:`TransformerDecoderLayer`: one layer each, with
  torch.nn.TransformerEncoderLayer's and TransformerDecoderLayer's parameter names (``norm_first=True``);
* :class:`Transformer`: embeddings + positions, the two stacks, and an output layer, with the course's
  model contract (``model(src, src_lengths, tgt_in)``, ``greedy_decode``, ``beam_search``);
* :class:`~seqlab.models.multihead.MultiHeadAttention` and :func:`~seqlab.models.multihead.causal_mask`, from
  :mod:`seqlab.models.multihead`, are importable from here too.

The constructor arguments are torch.nn.Transformer's where they mean the same (``d_model``, ``nhead``,
``num_encoder_layers``, ``num_decoder_layers``, ``dim_feedforward``, ``dropout``); ``d_model`` is what
``hidden_size`` is in the recurrent models: the size of each encoder output and of the decoder's state at
each position.
"""

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from seqlab.core.checks import check_at_least_one, check_not_empty, check_shape, check_src, check_token_ids
from seqlab.core.padding import PAD_ID, lengths_to_mask
from seqlab.models.decoding import Decodable, Encoded
from seqlab.models.multihead import MultiHeadAttention, causal_mask

__all__ = [
    "MultiHeadAttention",
    "causal_mask",
    "sinusoidal_positions",
    "TransformerEncoderLayer",
    "TransformerDecoderLayer",
    "Transformer",
]


def sinusoidal_positions(length: int, dim: int) -> Tensor:
    r"""The sinusoidal positional encodings of Vaswani et al. (2017).

    .. math::
        PE_{pos, 2a} = \sin(pos / 10000^{2a / dim}), \qquad PE_{pos, 2a+1} = \cos(pos / 10000^{2a / dim})

    (the paper writes i for the feature pair a; the book keeps i for a source position).
    Feature pair ``(2a, 2a+1)`` turns at its own frequency, from one radian per position (a = 0) down to
    one turn in ``2π · 10000 ** ((dim - 2) / dim)`` positions (about 47,000 at ``dim = 64``): every
    position gets a distinct code, and the code of ``pos + Δ`` is a fixed rotation of the code of
    ``pos``, whatever ``pos`` (chapter 8 checks both). An odd ``dim`` ends with a sine.

    Args:
        length: the number of positions, 0 to ``length - 1``.
        dim: the number of features.

    Returns:
        ``(length, dim)``, in torch's default dtype (computed in float64).

    Example::

        >>> sinusoidal_positions(2, 4)
        tensor([[0.0000, 1.0000, 0.0000, 1.0000],
                [0.8415, 0.5403, 0.0100, 0.9999]])

    Taught in chapter 8.
    """
    check_at_least_one("length", length)
    check_at_least_one("dim", dim)
    position = torch.arange(length, dtype=torch.float64).unsqueeze(1)  # (L, 1)
    two_i = torch.arange(0, dim, 2, dtype=torch.float64)  # (ceil(dim/2),): 0, 2, 4, ...
    angles = position / 10000 ** (two_i / dim)  # (L, ceil(dim/2))
    encodings = torch.zeros(length, dim, dtype=torch.float64)  # (L, dim)
    encodings[:, 0::2] = torch.sin(angles)  # even features
    encodings[:, 1::2] = torch.cos(angles[:, : dim // 2])  # odd features
    return encodings.to(torch.get_default_dtype())


def _check_layer_sizes(d_model: int, nhead: int, dim_feedforward: int) -> None:
    """Raise a ``ValueError``, in torch.nn.Transformer's names, unless the sizes make a layer: each at least 1
    and ``d_model`` divisible by ``nhead`` (checked here, before :class:`MultiHeadAttention` would report
    it under its own names, ``embed_dim`` and ``num_heads``, that the caller never passed).

    Example::

        >>> _check_layer_sizes(d_model=16, nhead=3, dim_feedforward=64)
        Traceback (most recent call last):
        ValueError: d_model (16) must be divisible by nhead (3)
    """
    check_at_least_one("d_model", d_model)
    check_at_least_one("nhead", nhead)
    check_at_least_one("dim_feedforward", dim_feedforward)
    if d_model % nhead:
        raise ValueError(f"d_model ({d_model}) must be divisible by nhead ({nhead})")


class TransformerEncoderLayer(nn.Module):
    """One encoder layer: self-attention, then a position-wise feed-forward network, each in a residual
    branch that starts with a layer norm (pre-norm, torch's ``norm_first=True``)::

        x = x + dropout1(self_attn(norm1(x), norm1(x), norm1(x), mask))
        x = x + dropout2(linear2(dropout(relu(linear1(norm2(x))))))

    The constructor arguments and parameter names are torch.nn.TransformerEncoderLayer's, so
    ``load_state_dict`` takes the state of ``torch.nn.TransformerEncoderLayer(d_model, nhead,
    dim_feedforward, batch_first=True, norm_first=True)``. ``forward``'s ``mask`` is the course's, ``(B, S)`` and
    True at real tokens, not torch's ``src_mask`` (``(S, S)``, True where attention is blocked).

    Args:
        d_model: H, the size of every position's vector.
        nhead: M, the attention heads (H must be divisible by it).
        dim_feedforward: the feed-forward network's hidden layer.
        dropout: dropout on attention weights and in every residual branch.

    Shape:
        - x ``(B, S, H)``, mask ``(B, S)`` bool (True at real tokens) → ``(B, S, H)``, and the
          self-attention weights ``(B, M, S, S)`` (M = ``nhead``).

    Example::

        >>> layer = TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16)
        >>> x, mask = torch.randn(2, 3, 8), torch.tensor([[True, True, True], [True, True, False]])
        >>> y, weights = layer(x, mask)
        >>> y.shape, weights.shape
        (torch.Size([2, 3, 8]), torch.Size([2, 2, 3, 3]))

    Taught in chapter 8.
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int, dropout: float = 0.0):
        super().__init__()
        _check_layer_sizes(d_model, nhead, dim_feedforward)
        self.self_attn = MultiHeadAttention(d_model, nhead, dropout)
        self.linear1 = nn.Linear(d_model, dim_feedforward)
        self.linear2 = nn.Linear(dim_feedforward, d_model)
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.dropout, self.dropout1, self.dropout2 = nn.Dropout(dropout), nn.Dropout(dropout), nn.Dropout(dropout)

    def feed_forward(self, x: Tensor) -> Tensor:
        """The position-wise network ``linear2(dropout(relu(linear1(x))))``: ``(B, L, H) → (B, L, H)``."""
        return self.linear2(self.dropout(F.relu(self.linear1(x))))  # (B, L, H)

    def forward(self, x: Tensor, mask: Tensor) -> tuple:
        # 1) every position attends to every real position of the same sequence
        normed = self.norm1(x)  # (B, S, H)
        attended, weights = self.self_attn(normed, normed, normed, mask)  # (B, S, H), (B, M, S, S)
        x = x + self.dropout1(attended)  # (B, S, H)
        # 2) the same small network at every position
        x = x + self.dropout2(self.feed_forward(self.norm2(x)))  # (B, S, H)
        return x, weights


class TransformerDecoderLayer(nn.Module):
    """One decoder layer: causal self-attention, cross-attention to the encoder's output, feed-forward;
    pre-norm residual branches as in :class:`TransformerEncoderLayer`::

        y = x + dropout1(self_attn(norm1(x), norm1(history), norm1(history), causal mask))
        y = y + dropout2(multihead_attn(norm2(y), memory, memory, memory_real))
        y = y + dropout3(linear2(dropout(relu(linear1(norm3(y))))))

    ``history`` is this layer's input at every position written so far, ``x``'s positions being the
    last ones; by default ``history = x`` (teacher forcing: every position at once). While decoding,
    ``x`` is the newest position alone and ``history`` holds the earlier ones too, so nothing is
    recomputed for them. The causal mask lets each position see itself and the positions before it.

    The constructor arguments and parameter names are torch.nn.TransformerDecoderLayer's (``norm_first=True``);
    ``forward``'s arguments are not. ``memory_real`` is the course's mask, ``(B, S)`` and True at the
    real source positions; it is not torch's ``memory_mask`` (``(T, S)``, True where attention is
    blocked), nor its ``memory_key_padding_mask`` (True at padding, the opposite), and torch's third
    positional argument is ``tgt_mask``: pass ``memory_real`` by name when porting code either way.

    Args:
        d_model, nhead, dim_feedforward, dropout: as for :class:`TransformerEncoderLayer`.

    Shape:
        - x ``(B, T, H)``, memory ``(B, S, H)``, memory_real ``(B, S)`` bool (True at real source
          positions), history ``(B, T', H)``
          with ``T' >= T`` → ``(B, T, H)``, self-attention weights ``(B, M, T, T')`` and
          cross-attention weights ``(B, M, T, S)`` (M = ``nhead``).

    Example::

        >>> layer = TransformerDecoderLayer(d_model=8, nhead=2, dim_feedforward=16)
        >>> memory, memory_real = torch.randn(2, 3, 8), torch.tensor([[True, True, True], [True, True, False]])
        >>> y, self_weights, cross_weights = layer(torch.randn(2, 4, 8), memory, memory_real)
        >>> y.shape, self_weights.shape, cross_weights.shape
        (torch.Size([2, 4, 8]), torch.Size([2, 2, 4, 4]), torch.Size([2, 2, 4, 3]))

    Taught in chapter 8.
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int, dropout: float = 0.0):
        super().__init__()
        _check_layer_sizes(d_model, nhead, dim_feedforward)
        self.self_attn = MultiHeadAttention(d_model, nhead, dropout)
        self.multihead_attn = MultiHeadAttention(d_model, nhead, dropout)  # cross-attention
        self.linear1 = nn.Linear(d_model, dim_feedforward)
        self.linear2 = nn.Linear(dim_feedforward, d_model)
        self.norm1, self.norm2, self.norm3 = (nn.LayerNorm(d_model) for _ in range(3))
        self.dropout, self.dropout1, self.dropout2, self.dropout3 = (nn.Dropout(dropout) for _ in range(4))

    def feed_forward(self, x: Tensor) -> Tensor:
        """The position-wise network ``linear2(dropout(relu(linear1(x))))``: ``(B, L, H) → (B, L, H)``."""
        return self.linear2(self.dropout(F.relu(self.linear1(x))))  # (B, L, H)

    def forward(self, x: Tensor, memory: Tensor, memory_real: Tensor, history: Tensor | None = None) -> tuple:
        history = x if history is None else history
        check_shape("history", history, (x.shape[0], "T'", x.shape[2]))
        B, T, T_all = x.shape[0], x.shape[1], history.shape[1]
        # 1) causal self-attention: each position looks at itself and the positions before it
        no_peeking = causal_mask(T, T_all, device=x.device).expand(B, T, T_all)  # (B, T, T')
        normed, normed_history = self.norm1(x), self.norm1(history)  # (B, T, H), (B, T', H)
        attended, self_weights = self.self_attn(normed, normed_history, normed_history, no_peeking)
        y = x + self.dropout1(attended)  # (B, T, H)
        # 2) cross-attention: each position looks at every real source position
        normed = self.norm2(y)  # (B, T, H)
        attended, cross_weights = self.multihead_attn(normed, memory, memory, memory_real)  # (B, T, H), (B, M, T, S)
        y = y + self.dropout2(attended)  # (B, T, H)
        # 3) the same small network at every position
        y = y + self.dropout3(self.feed_forward(self.norm3(y)))  # (B, T, H)
        return y, self_weights, cross_weights


class Transformer(Decodable, nn.Module):
    """An encoder-decoder Transformer with the course's model contract.

    Source and target tokens are embedded, scaled by √H, and added to :func:`sinusoidal_positions`;
    ``num_encoder_layers`` encoder layers read the source, ``num_decoder_layers`` decoder layers write the
    target, each stack followed by a layer norm; a linear layer and a log-softmax give the next token's distribution::

        memory = encoder_norm(encoder layers(embed(src) √H + PE))                      (B, S, H)
        P(y_t | y_<t, x) = softmax(W_out decoder_norm(decoder layers(embed(y_<t) √H + PE, memory)))

    Decoding keeps, in ``state["hidden"]``, every decoder layer's input at every position written so far,
    ``(L, B, t, H)``: what the decoder carries from step to step, as a recurrent decoder carries its
    ``(L, B, H)`` state. A step computes the newest position only; its self-attention reads the others.

    The arguments after the vocabulary sizes are torch.nn.Transformer's, with its meanings (torch has no
    vocabulary: its Transformer starts from embeddings); the defaults are toy-sized, not torch's.

    Args:
        src_vocab_size, tgt_vocab_size: vocabulary sizes (id 0 is padding in both); not torch's.
        d_model: H, the size of embeddings, encoder outputs and decoder states (torch's, the paper's).
        nhead: M, the attention heads in every attention layer (torch's).
        num_encoder_layers: encoder layers (torch's).
        num_decoder_layers: decoder layers, L (torch's).
        dim_feedforward: the feed-forward networks' hidden layer (torch's; default here ``4 * d_model``).
        dropout: dropout on embeddings, attention weights and residual branches (torch's).

    Shape:
        - ``model(src (B, S), src_lengths (B,), tgt_in (B, T)) -> log_probs (B, T, V)``.
        - ``encode(src, src_lengths) -> Encoded(memory (B, S, H), mask (B, S), state (L, B, 0, H))``:
          the state is the decoder's empty history (:class:`~seqlab.models.decoding.Encoded`).
        - ``greedy_decode(src, src_lengths, max_len)`` and ``beam_search(...)`` → ``(B, T')`` ids.
        - ``attention_maps(src, src_lengths, tgt_in)`` → ``{"encoder": (B, L, M, S, S), "decoder":
          (B, L, M, T, T), "cross": (B, L, M, T, S)}``, every layer's and head's weights, for plots.

    Example::

        >>> model = Transformer(src_vocab_size=12, tgt_vocab_size=9, d_model=16, nhead=2)
        >>> model(torch.tensor([[4, 5, 6]]), torch.tensor([3]), torch.tensor([[1, 7]])).shape
        torch.Size([1, 2, 9])

    Taught in chapter 8.
    """

    def __init__(
        self,
        src_vocab_size: int,
        tgt_vocab_size: int,
        d_model: int = 64,
        nhead: int = 4,
        num_encoder_layers: int = 2,
        num_decoder_layers: int = 2,
        dim_feedforward: int | None = None,
        dropout: float = 0.0,
    ):
        super().__init__()
        check_at_least_one("num_encoder_layers", num_encoder_layers)
        check_at_least_one("num_decoder_layers", num_decoder_layers)
        dim_feedforward = 4 * d_model if dim_feedforward is None else dim_feedforward
        _check_layer_sizes(d_model, nhead, dim_feedforward)
        self.d_model = d_model
        self.src_embedding = nn.Embedding(src_vocab_size, d_model, padding_idx=PAD_ID)
        self.tgt_embedding = nn.Embedding(tgt_vocab_size, d_model, padding_idx=PAD_ID)
        with torch.no_grad():  # entries of variance 1 once scaled by √H, like the positions' scale
            for embedding in (self.src_embedding, self.tgt_embedding):
                embedding.weight.normal_(std=d_model**-0.5)
                embedding.weight[PAD_ID].zero_()
        self.embedding_dropout = nn.Dropout(dropout)
        layer = dict(d_model=d_model, nhead=nhead, dim_feedforward=dim_feedforward, dropout=dropout)
        self.encoder_layers = nn.ModuleList(TransformerEncoderLayer(**layer) for _ in range(num_encoder_layers))
        self.decoder_layers = nn.ModuleList(TransformerDecoderLayer(**layer) for _ in range(num_decoder_layers))
        self.encoder_norm, self.decoder_norm = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.output = nn.Linear(d_model, tgt_vocab_size)

    def embed(self, embedding: nn.Embedding, tokens: Tensor, first_position: int = 0) -> Tensor:
        """Token embeddings scaled by √H plus the positions ``first_position, first_position + 1, ...``."""
        length = tokens.shape[1]
        positions = sinusoidal_positions(first_position + length, self.d_model)[first_position:]  # (L, H)
        scaled = embedding(tokens) * math.sqrt(self.d_model)  # (B, L, H)
        return self.embedding_dropout(scaled + positions.to(scaled))  # (B, L, H)

    def encode_with_weights(self, src: Tensor, src_lengths: Tensor) -> tuple:
        """The memory ``(B, S, H)``, its mask ``(B, S)``, and each encoder layer's weights ``(B, M, S, S)``."""
        check_src(src, src_lengths)
        check_token_ids("src", src, self.src_embedding.num_embeddings)  # before the embedding looks them up
        mask = lengths_to_mask(src_lengths, src.shape[1]).to(src.device)  # (B, S)
        x = self.embed(self.src_embedding, src)  # (B, S, H)
        weights = []
        for layer in self.encoder_layers:
            x, layer_weights = layer(x, mask)  # (B, S, H), (B, M, S, S)
            weights.append(layer_weights)
        return self.encoder_norm(x), mask, weights

    def encode(self, src: Tensor, src_lengths: Tensor) -> Encoded:
        """``Encoded(memory (B, S, H), mask (B, S), state)``: the state is the decoder's history so far,
        empty: ``(L, B, 0, H)``, what :meth:`decode_step` carries from step to step."""
        memory, mask, _ = self.encode_with_weights(src, src_lengths)
        nothing_yet = memory.new_zeros(len(self.decoder_layers), src.shape[0], 0, self.d_model)  # (L, B, 0, H)
        return Encoded(memory, mask, nothing_yet)

    def decode(self, tgt_in: Tensor, memory: Tensor, memory_real: Tensor) -> tuple:
        """Teacher forcing, every position at once: ``log_probs (B, T, V)``, and each decoder layer's
        self-attention ``(B, M, T, T)`` and cross-attention ``(B, M, T, S)`` weights."""
        check_shape("tgt_in", tgt_in, (memory.shape[0], "T"))
        check_not_empty("tgt_in", tgt_in, 1, "step (T)")
        check_token_ids("tgt_in", tgt_in, self.tgt_embedding.num_embeddings)
        y = self.embed(self.tgt_embedding, tgt_in)  # (B, T, H)
        self_weights, cross_weights = [], []
        for layer in self.decoder_layers:
            y, layer_self, layer_cross = layer(y, memory, memory_real)  # (B, T, H)
            self_weights.append(layer_self)
            cross_weights.append(layer_cross)
        log_probs = self.output(self.decoder_norm(y)).log_softmax(dim=-1)  # (B, T, V)
        return log_probs, self_weights, cross_weights

    def forward(self, src: Tensor, src_lengths: Tensor, tgt_in: Tensor) -> Tensor:
        memory, mask, _ = self.encode(src, src_lengths)
        log_probs, _, _ = self.decode(tgt_in, memory, mask)
        return log_probs  # (B, T, V)

    def attention_maps(self, src: Tensor, src_lengths: Tensor, tgt_in: Tensor) -> dict:
        """Every layer's and head's attention weights for this batch, stacked along dimension 1 (layers).

        Feed a decoded output (``<bos>`` + tokens) as ``tgt_in`` to see the weights that produced it.
        """
        memory, mask, encoder_weights = self.encode_with_weights(src, src_lengths)
        _, self_weights, cross_weights = self.decode(tgt_in, memory, mask)
        return {
            "encoder": torch.stack(encoder_weights, dim=1),  # (B, L, M, S, S)
            "decoder": torch.stack(self_weights, dim=1),  # (B, L, M, T, T)
            "cross": torch.stack(cross_weights, dim=1),  # (B, L, M, T, S)
        }

    # --- the decoding protocol of seqlab.models.decoding ---------------------------------------------

    def start_decoding(self, src: Tensor, src_lengths: Tensor) -> dict:
        memory, mask, nothing_yet = self.encode(src, src_lengths)
        return {"memory": memory, "mask": mask, "hidden": nothing_yet}

    def decode_step(self, prev_tokens: Tensor, state: dict) -> tuple:
        check_shape("prev_tokens", prev_tokens, (state["memory"].shape[0],))
        written = state["hidden"].shape[2]  # positions decoded so far
        y = self.embed(self.tgt_embedding, prev_tokens.unsqueeze(1), first_position=written)  # (N, 1, H)
        histories = []
        for layer, past in zip(self.decoder_layers, state["hidden"]):
            history = torch.cat([past, y], dim=1)  # (N, t+1, H): this layer's input at every position
            histories.append(history)
            y, _, _ = layer(y, state["memory"], state["mask"], history)  # (N, 1, H)
        log_probs = self.output(self.decoder_norm(y[:, 0])).log_softmax(dim=-1)  # (N, V)
        return log_probs, {**state, "hidden": torch.stack(histories)}  # hidden (L, N, t+1, H)
