"""The encoder-decoder (Seq2Seq) model with a single context vector (chapter 3).

Cho et al. (2014) and Sutskever et al. (2014): an encoder reads the source into a fixed-size
**context vector** c; a decoder writes the target one token at a time from c. Here the decoder
sees c at every step, both as input to its recurrent cell and to its output layer::

    z_t = cell([embed(y_{t-1}); c], z_{t-1})                 z_0 = bridge(encoder final states)
    P(y_t | y_<t, x) = softmax(W_out [z_t; c; embed(y_{t-1})] + b_out)

Everything the decoder knows about the source must pass through c: that is the bottleneck that
attention (chapter 4) removes.
"""

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from seqlab.checks import check_shape
from seqlab.decoding import Decodable, select_hidden
from seqlab.encoder import CELLS, Bridge, Encoder, last_layer_directions
from seqlab.rnn import TORCH_LAYERS


class ContextDecoder(nn.Module):
    """A recurrent decoder that reads a fixed context vector at every step.

    Args:
        vocab_size: target vocabulary size V.
        embedding_size: size E of the target embeddings.
        hidden_size: size H of the decoder state.
        context_size: size C of the context vector.
        cell: ``"rnn"``, ``"lstm"`` or ``"gru"``.
        num_layers: stacked layers L.
        dropout: dropout on the embeddings and before the output layer.

    Shape:
        - ``forward(tgt_in (B, T), state, context (B, C)) -> (log_probs (B, T, V), state)``,
          state ``(L, B, H)`` (LSTM: a pair).
        - ``step(prev_tokens (B,), state, context) -> (log_probs (B, V), state)``: the same with T = 1.

    Teacher forcing is why ``forward`` can take the whole target at once: the decoder's input at step
    t is the *true* token y_{t-1}, known in advance, so the fused RNN runs over all steps in one call.

    Taught in chapter 3.
    """

    def __init__(
        self,
        vocab_size: int,
        embedding_size: int,
        hidden_size: int,
        context_size: int,
        cell: str = "gru",
        num_layers: int = 1,
        dropout: float = 0.0,
    ):
        super().__init__()
        if cell not in CELLS:
            raise ValueError(f"cell must be one of {CELLS}, got {cell!r}")
        self.context_size = context_size
        self.embedding = nn.Embedding(vocab_size, embedding_size, padding_idx=0)
        self.dropout = nn.Dropout(dropout)
        self.rnn = TORCH_LAYERS[cell](
            embedding_size + context_size,
            hidden_size,
            num_layers=num_layers,
            batch_first=True,
            dropout=dropout if num_layers > 1 else 0.0,
        )
        self.output = nn.Linear(hidden_size + context_size + embedding_size, vocab_size)

    def forward(self, tgt_in: Tensor, state, context: Tensor) -> tuple:
        check_shape("tgt_in", tgt_in, ("B", "T"))
        check_shape("context", context, (tgt_in.shape[0], self.context_size))
        T = tgt_in.shape[1]
        embedded = self.dropout(self.embedding(tgt_in))  # (B, T, E)
        repeated_context = context.unsqueeze(1).expand(-1, T, -1)  # (B, T, C)
        outputs, state = self.rnn(torch.cat([embedded, repeated_context], dim=2), state)  # (B, T, H)
        features = torch.cat([self.dropout(outputs), repeated_context, embedded], dim=2)  # (B, T, H+C+E)
        return F.log_softmax(self.output(features), dim=-1), state  # (B, T, V)

    def step(self, prev_tokens: Tensor, state, context: Tensor) -> tuple:
        log_probs, state = self.forward(prev_tokens.unsqueeze(1), state, context)  # (B, 1, V)
        return log_probs.squeeze(1), state  # (B, V)


class Seq2Seq(Decodable, nn.Module):
    """Encoder → context vector → decoder.

    The context vector is the encoder's last layer's final state, both directions concatenated; the
    decoder's initial state is the :class:`~seqlab.encoder.Bridge` of all final states.

    Args:
        src_vocab_size, tgt_vocab_size: vocabulary sizes (id 0 is padding in both).
        embedding_size: size of the source and target embeddings.
        hidden_size: state size of each encoder direction and of the decoder.
        cell: ``"rnn"``, ``"lstm"`` or ``"gru"`` for both encoder and decoder.
        num_layers: layers of encoder and decoder.
        bidirectional: a bidirectional encoder.
        dropout: dropout on embeddings, between layers and before the output layer.

    Shape:
        - ``model(src (B, S), src_lengths (B,), tgt_in (B, T)) -> log_probs (B, T, V)``.
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
        self.cell = cell
        self.encoder = Encoder(src_vocab_size, embedding_size, hidden_size, cell, num_layers, bidirectional, dropout)
        D = self.encoder.num_directions
        self.bridge = Bridge(hidden_size, D, hidden_size, num_layers, cell)
        self.decoder = ContextDecoder(
            tgt_vocab_size, embedding_size, hidden_size, D * hidden_size, cell, num_layers, dropout
        )

    def encode(self, src: Tensor, src_lengths: Tensor) -> tuple:
        """Returns the context vector ``(B, D*H)`` and the decoder's initial state ``(L, B, H)``."""
        _, final = self.encoder(src, src_lengths)
        h_n = final[0] if self.cell == "lstm" else final  # (L*D, B, H)
        per_layer = last_layer_directions(h_n, self.encoder.num_layers, self.encoder.num_directions)  # (L, B, D*H)
        return per_layer[-1], self.bridge(final)  # (B, D*H), (L, B, H)

    def forward(self, src: Tensor, src_lengths: Tensor, tgt_in: Tensor) -> Tensor:
        context, state = self.encode(src, src_lengths)
        log_probs, _ = self.decoder(tgt_in, state, context)
        return log_probs  # (B, T, V)

    # --- the decoding protocol of seqlab.decoding ---------------------------------------------
    # The decoder state keeps torch's (L, B, H) layout; reorder_state indexes its batch dimension.

    def start_decoding(self, src: Tensor, src_lengths: Tensor) -> tuple:
        return self.encode(src, src_lengths)

    def decode_step(self, prev_tokens: Tensor, state: tuple) -> tuple:
        context, hidden = state
        log_probs, hidden = self.decoder.step(prev_tokens, hidden, context)
        return log_probs, (context, hidden)

    def reorder_state(self, state: tuple, index: Tensor) -> tuple:
        context, hidden = state
        return context.index_select(0, index), select_hidden(hidden, index)


def __getattr__(name: str):
    # seqlab.seq2seq.AttentionSeq2Seq works too; the attention model lives in its own module, which
    # imports this one (for ContextDecoder), so it is looked up on first use rather than imported here.
    if name == "AttentionSeq2Seq":
        from seqlab.attention_seq2seq import AttentionSeq2Seq

        return AttentionSeq2Seq
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
