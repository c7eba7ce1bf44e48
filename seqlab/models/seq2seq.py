"""The encoder-decoder models: Seq2Seq with one context vector (chapter 3), and with attention (chapter 4).

Cho et al. (2014) and Sutskever et al. (2014): an encoder reads the source; a decoder writes the target
one token at a time. In :class:`Seq2Seq` everything the decoder knows about the source passes through
one fixed-size **context vector** ctx, the encoder's final state: the bottleneck. In
:class:`AttentionSeq2Seq` (Bahdanau et al., 2015) the decoder attends over all encoder states and
builds a fresh context at every step.

Both models take the ``hidden_size`` of their decoder (torch.nn's meaning, see :mod:`seqlab.models.rnn`),
which is also the size of every encoder output: a bidirectional encoder gets ``hidden_size // 2`` units
per direction, concatenated. So with the same ``hidden_size`` the two models' context vectors have the same size.
"""

from torch import Tensor, nn

from seqlab.core.padding import lengths_to_mask
from seqlab.models.attention import make_scorer
from seqlab.models.attention_decoder import AttentionDecoder
from seqlab.models.decoder import ContextDecoder
from seqlab.models.decoding import Decodable, Encoded
from seqlab.models.encoder import Bridge, Encoder, last_layer_directions, per_direction
from seqlab.models.rnn import hidden_state


def encoder_and_bridge(
    src_vocab_size: int,
    embedding_size: int,
    hidden_size: int,
    cell: str,
    num_layers: int,
    bidirectional: bool,
    dropout: float,
) -> tuple:
    """An :class:`~seqlab.models.encoder.Encoder` whose outputs have ``hidden_size`` features in all, and the
    :class:`~seqlab.models.encoder.Bridge` from its final states to a decoder state of ``hidden_size``."""
    H = per_direction(hidden_size, bidirectional)
    encoder = Encoder(src_vocab_size, embedding_size, H, cell, num_layers, bidirectional, dropout)
    return encoder, Bridge(H, encoder.num_directions, hidden_size, num_layers, cell)


class Seq2Seq(Decodable, nn.Module):
    """Encoder → context vector → decoder.

    The context vector is the encoder's last layer's final state, both directions concatenated; the
    decoder's initial state is the :class:`~seqlab.models.encoder.Bridge` of all final states. The decoder
    (:class:`~seqlab.models.decoder.ContextDecoder`) reads the context at every step::

        s_t = cell([embed(y_{t-1}); ctx], s_{t-1})               s_0 = bridge(encoder final states)
        P(y_t | y_<t, x) = softmax(W_out [s_t; ctx; embed(y_{t-1})] + b_out)

    Args:
        src_vocab_size, tgt_vocab_size: vocabulary sizes (id 0 is padding in both).
        embedding_size: size of the source and target embeddings.
        hidden_size: the decoder state's size, and the context vector's (with a bidirectional encoder,
            each direction has ``hidden_size // 2`` units).
        cell: ``"rnn"``, ``"lstm"`` or ``"gru"`` for both encoder and decoder.
        num_layers: layers of encoder and decoder.
        bidirectional: a bidirectional encoder.
        dropout: dropout on embeddings, between layers and before the output layer.

    Shape:
        - ``model(src (B, S), src_lengths (B,), tgt_in (B, T)) -> log_probs (B, T, V)``.
        - ``encode(src, src_lengths) -> Encoded(memory=ctx (B, H), mask=None, state=s_0 (L, B, H))``
          (:class:`~seqlab.models.decoding.Encoded`).
        - ``greedy_decode(src, src_lengths, max_len)`` and ``beam_search(...)`` → ``(B, T')`` ids.

    Example::

        >>> model = Seq2Seq(src_vocab_size=12, tgt_vocab_size=9)
        >>> model(torch.tensor([[4, 5, 6]]), torch.tensor([3]), torch.tensor([[1, 7]])).shape
        torch.Size([1, 2, 9])

    Taught in chapter 3.
    """

    def __init__(
        self,
        src_vocab_size: int,
        tgt_vocab_size: int,
        embedding_size: int = 32,
        hidden_size: int = 64,
        cell: str = "gru",
        num_layers: int = 1,
        bidirectional: bool = True,
        dropout: float = 0.0,
    ):
        super().__init__()
        self.encoder, self.bridge = encoder_and_bridge(
            src_vocab_size, embedding_size, hidden_size, cell, num_layers, bidirectional, dropout
        )
        self.decoder = ContextDecoder(
            tgt_vocab_size,
            embedding_size,
            hidden_size,
            context_size=hidden_size,
            cell=cell,
            num_layers=num_layers,
            dropout=dropout,
        )

    def encode(self, src: Tensor, src_lengths: Tensor) -> Encoded:
        """``Encoded(memory, mask, state)``: the memory is the context vector ``(B, H)`` (one slot, so the
        mask is None), the state the decoder's initial state ``(L, B, H)``."""
        _, final = self.encoder(src, src_lengths)
        per_layer = last_layer_directions(
            hidden_state(final), self.encoder.num_layers, self.encoder.num_directions
        )  # (L, B, D * H/D)
        return Encoded(per_layer[-1], None, self.bridge(final))  # (B, H), None, (L, B, H)

    def forward(self, src: Tensor, src_lengths: Tensor, tgt_in: Tensor) -> Tensor:
        context, _, state = self.encode(src, src_lengths)
        log_probs, _ = self.decoder(tgt_in, state, context)
        return log_probs  # (B, T, V)

    # --- the decoding protocol of seqlab.models.decoding ---------------------------------------------

    def start_decoding(self, src: Tensor, src_lengths: Tensor) -> dict:
        context, _, hidden = self.encode(src, src_lengths)
        return {"context": context, "hidden": hidden}

    def decode_step(self, prev_tokens: Tensor, state: dict) -> tuple:
        log_probs, hidden = self.decoder.step(prev_tokens, state["hidden"], state["context"])
        return log_probs, {**state, "hidden": hidden}


class AttentionSeq2Seq(Decodable, nn.Module):
    """Encoder → attention decoder, with any scoring function.

    The encoder's outputs (both directions concatenated) are the keys and values; the decoder's
    initial state is the bridge of the encoder's final states (chapter 2). Encoder outputs and decoder
    states both have ``hidden_size`` features, so every scorer (dot products included) applies.

    Args:
        src_vocab_size, tgt_vocab_size: vocabulary sizes (id 0 is padding in both).
        embedding_size: size of the source and target embeddings.
        hidden_size: the decoder state's size, and each encoder output's (keys, values and the
            context vector): as for :class:`Seq2Seq`.
        scorer: ``"additive" | "bilinear" | "dot" | "scaled_dot" | "cosine"``.
        cell, num_layers, bidirectional, dropout: as for :class:`Seq2Seq`.

    Shape:
        - ``model(src (B, S), src_lengths (B,), tgt_in (B, T)) -> log_probs (B, T, V)``.
        - ``encode(src, src_lengths) -> Encoded(memory (B, S, H), mask (B, S), state s_0 (L, B, H))``.
        - ``attention_weights(src, src_lengths, tgt_in) -> (B, T, S)``.
        - ``greedy_decode(src, src_lengths, max_len)`` and ``beam_search(...)`` → ``(B, T')`` ids.

    Example::

        >>> model = AttentionSeq2Seq(src_vocab_size=12, tgt_vocab_size=9, embedding_size=4, hidden_size=6)
        >>> src, src_lengths = torch.tensor([[4, 5, 6], [7, 8, 0]]), torch.tensor([3, 2])
        >>> tgt_in = torch.tensor([[1, 7], [1, 3]])
        >>> model(src, src_lengths, tgt_in).shape, model.attention_weights(src, src_lengths, tgt_in).shape
        (torch.Size([2, 2, 9]), torch.Size([2, 2, 3]))

    Taught in chapter 4.
    """

    def __init__(
        self,
        src_vocab_size: int,
        tgt_vocab_size: int,
        embedding_size: int = 32,
        hidden_size: int = 64,
        scorer: str = "additive",
        cell: str = "gru",
        num_layers: int = 1,
        bidirectional: bool = True,
        dropout: float = 0.0,
    ):
        super().__init__()
        self.encoder, self.bridge = encoder_and_bridge(
            src_vocab_size, embedding_size, hidden_size, cell, num_layers, bidirectional, dropout
        )
        self.decoder = AttentionDecoder(
            tgt_vocab_size,
            embedding_size,
            hidden_size,
            memory_size=hidden_size,
            scorer=make_scorer(scorer, hidden_size, hidden_size),
            cell=cell,
            num_layers=num_layers,
            dropout=dropout,
        )

    def encode(self, src: Tensor, src_lengths: Tensor) -> Encoded:
        """``Encoded(memory, mask, state)``: the encoder's outputs ``(B, S, H)``, their mask ``(B, S)``
        and the decoder's initial state ``(L, B, H)``."""
        memory, final = self.encoder(src, src_lengths)  # (B, S, H)
        mask = lengths_to_mask(src_lengths, src.shape[1]).to(src.device)  # (B, S)
        return Encoded(memory, mask, self.bridge(final))

    def forward(self, src: Tensor, src_lengths: Tensor, tgt_in: Tensor) -> Tensor:
        memory, mask, state = self.encode(src, src_lengths)
        log_probs, _, _ = self.decoder(tgt_in, state, memory, mask)
        return log_probs  # (B, T, V)

    def attention_weights(self, src: Tensor, src_lengths: Tensor, tgt_in: Tensor) -> Tensor:
        """The attention weights ``(B, T, S)`` of every step, for plotting.

        Feed a decoded output (``<bos>`` + tokens) as ``tgt_in`` to see the weights that produced it:
        they are the weights computed while decoding, since the decoder read the same tokens.
        """
        memory, mask, state = self.encode(src, src_lengths)
        _, _, weights = self.decoder(tgt_in, state, memory, mask)
        return weights

    # --- the decoding protocol of seqlab.models.decoding ---------------------------------------------

    def start_decoding(self, src: Tensor, src_lengths: Tensor) -> dict:
        memory, mask, hidden = self.encode(src, src_lengths)
        prepared_keys = self.decoder.attention.scorer.prepare_keys(memory)  # once per source
        return {"memory": memory, "mask": mask, "prepared_keys": prepared_keys, "hidden": hidden}

    def decode_step(self, prev_tokens: Tensor, state: dict) -> tuple:
        log_probs, hidden, _ = self.decoder.step(
            prev_tokens, state["hidden"], state["memory"], state["mask"], state["prepared_keys"]
        )
        return log_probs, {**state, "hidden": hidden}
