"""The encoder-decoder with attention of Bahdanau, Cho and Bengio (2015) (chapter 4).

Instead of one context vector for the whole output, the decoder computes a fresh one at every step
by attending over all encoder states. In chapter 4's notation, with encoder states h^1..h^S and
decoder states z^0, z^1, ...::

    u_i^t = score(z^t, h^i)                      e.g. vᵀ tanh(W_1 h^i + W_2 z^t)
    α^t   = masked_softmax(u^t)                  over the real source positions
    c^t   = Σ_i α_i^t h^i
    z^{t+1} = cell([embed(y_t); c^t], z^t)       the context is the cell's input
    P(y_{t+1} | y_≤t, x) = softmax(W_out [z^{t+1}; c^t; embed(y_t)])

The loop runs z^0 → c^0 → z^1 → c^1 → ...: the previous decoder state is the query.
"""

import torch
from torch import Tensor, nn

from seqlab.attention import Attention, make_scorer
from seqlab.checks import check_shape
from seqlab.data import lengths_to_mask
from seqlab.decoding import Decodable, select_hidden
from seqlab.encoder import Bridge, Encoder
from seqlab.seq2seq import ContextDecoder


class AttentionDecoder(nn.Module):
    """A recurrent decoder that attends over the encoder states at every step.

    It is chapter 3's :class:`~seqlab.seq2seq.ContextDecoder`, which reads a context vector at every
    step, with one change: the context is no longer fixed, it is recomputed by attention before each
    step, with the previous decoder state as the query.

    Args:
        vocab_size: target vocabulary size V.
        embedding_size: size E of the target embeddings.
        hidden_size: size H of the decoder state (the attention query).
        memory_size: size M of each encoder state (the keys and values).
        scorer: a scorer module of :mod:`seqlab.attention`.
        cell: ``"rnn"``, ``"lstm"`` or ``"gru"``.
        num_layers: stacked layers L; the top layer's state is the query.
        dropout: dropout on the embeddings and before the output layer.

    Shape:
        - ``forward(tgt_in (B, T), state, memory (B, S, M), mask (B, S))`` →
          ``log_probs (B, T, V)``, ``weights (B, T, S)``, final state ``(L, B, H)`` (LSTM: a pair).

    Taught in chapter 4.
    """

    def __init__(
        self,
        vocab_size: int,
        embedding_size: int,
        hidden_size: int,
        memory_size: int,
        scorer: nn.Module,
        cell: str = "gru",
        num_layers: int = 1,
        dropout: float = 0.0,
    ):
        super().__init__()
        self.cell = cell
        self.memory_size = memory_size
        self.attention = Attention(scorer)
        # Embedding, recurrent cell reading [embed(y); context], output layer: all as in chapter 3.
        self.context_decoder = ContextDecoder(
            vocab_size, embedding_size, hidden_size, memory_size, cell, num_layers, dropout
        )

    def query(self, state) -> Tensor:
        """The attention query: the top layer's hidden state, ``(B, H)``."""
        h = state[0] if self.cell == "lstm" else state  # (L, B, H)
        return h[-1]

    def step(self, prev_tokens: Tensor, state, memory: Tensor, mask: Tensor, prepared_keys: Tensor) -> tuple:
        """One decoder step. Returns ``log_probs (B, V)``, the new state, and ``weights (B, S)``."""
        # 1) attend: the previous state queries every encoder state
        context, weights = self.attention(
            self.query(state).unsqueeze(1), memory, memory, mask, prepared_keys=prepared_keys
        )  # (B, 1, M), (B, 1, S)
        # 2) and 3) update the state from the previous token and the context, predict the next token
        log_probs, state = self.context_decoder.step(prev_tokens, state, context.squeeze(1))  # (B, V)
        return log_probs, state, weights.squeeze(1)

    def forward(self, tgt_in: Tensor, state, memory: Tensor, mask: Tensor) -> tuple:
        check_shape("tgt_in", tgt_in, ("B", "T"))
        check_shape("memory", memory, (tgt_in.shape[0], "S", self.memory_size))
        prepared_keys = self.attention.scorer.prepare_keys(memory)  # once per source, not once per step
        all_log_probs, all_weights = [], []
        for t in range(tgt_in.shape[1]):  # the query depends on the previous step: no shortcut over time
            log_probs, state, weights = self.step(tgt_in[:, t], state, memory, mask, prepared_keys)
            all_log_probs.append(log_probs)
            all_weights.append(weights)
        return torch.stack(all_log_probs, dim=1), torch.stack(all_weights, dim=1), state  # (B, T, V), (B, T, S)


class AttentionSeq2Seq(Decodable, nn.Module):
    """Encoder → attention decoder, with any scoring function.

    The encoder's outputs (both directions concatenated) are the keys and values; the decoder's
    initial state is the bridge of the encoder's final states (chapter 2). With a bidirectional
    encoder each direction has ``hidden_size // 2`` units, so encoder states and decoder states have
    the same size, ``hidden_size``, and every scorer (dot products included) applies.

    Args:
        src_vocab_size, tgt_vocab_size: vocabulary sizes (id 0 is padding in both).
        embedding_size: size of the source and target embeddings.
        hidden_size: decoder state size, and encoder output size.
        scorer: ``"additive" | "bilinear" | "dot" | "scaled_dot" | "cosine"``.
        cell, num_layers, bidirectional, dropout: as for :class:`~seqlab.seq2seq.Seq2Seq`.

    Shape:
        - ``model(src (B, S), src_lengths (B,), tgt_in (B, T)) -> log_probs (B, T, V)``.
        - ``attention_weights(src, src_lengths, tgt_in) -> (B, T, S)``.

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
        D = 2 if bidirectional else 1
        if hidden_size % D:
            raise ValueError(f"hidden_size must be even with a bidirectional encoder, got {hidden_size}")
        self.cell = cell
        self.encoder = Encoder(
            src_vocab_size, embedding_size, hidden_size // D, cell, num_layers, bidirectional, dropout
        )
        self.bridge = Bridge(hidden_size // D, D, hidden_size, num_layers, cell)
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

    def encode(self, src: Tensor, src_lengths: Tensor) -> tuple:
        """Returns the memory ``(B, S, H)``, its mask ``(B, S)`` and the decoder's initial state."""
        memory, final = self.encoder(src, src_lengths)  # (B, S, H)
        mask = lengths_to_mask(src_lengths, src.shape[1]).to(src.device)  # (B, S)
        return memory, mask, self.bridge(final)

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
        _, weights, _ = self.decoder(tgt_in, state, memory, mask)
        return weights

    # --- the decoding protocol of seqlab.decoding ---------------------------------------------

    def start_decoding(self, src: Tensor, src_lengths: Tensor) -> dict:
        memory, mask, hidden = self.encode(src, src_lengths)
        prepared_keys = self.decoder.attention.scorer.prepare_keys(memory)
        return {"memory": memory, "mask": mask, "prepared_keys": prepared_keys, "hidden": hidden}

    def decode_step(self, prev_tokens: Tensor, state: dict) -> tuple:
        log_probs, hidden, _ = self.decoder.step(
            prev_tokens, state["hidden"], state["memory"], state["mask"], state["prepared_keys"]
        )
        return log_probs, {**state, "hidden": hidden}

    def reorder_state(self, state: dict, index: Tensor) -> dict:
        batch_first = {k: state[k].index_select(0, index) for k in ("memory", "mask", "prepared_keys")}
        return {**batch_first, "hidden": select_hidden(state["hidden"], index)}
