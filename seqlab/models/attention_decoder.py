"""The attention decoder of Bahdanau, Cho and Bengio (2015) (chapter 4).

Instead of one context vector for the whole output, the decoder computes a fresh one at every step by
attending over all encoder states. In the book's notation (book/notation.md), with encoder states
h_1..h_S and decoder states s_0, s_1, ..., step t reads y_{t-1} and s_{t-1}::

    e_{t,i} = score(s_{t-1}, h_i)                e.g. wᵀ tanh(W_q s_{t-1} + W_k h_i + b)
    α_{t,·} = masked_softmax(e_{t,·})            over the real source positions
    ctx_t   = Σ_i α_{t,i} h_i
    s_t     = cell([embed(y_{t-1}); ctx_t], s_{t-1})      the context is the cell's input
    P(y_t | y_<t, x) = softmax(W_out [s_t; ctx_t; embed(y_{t-1})] + b_out)

The loop runs s_0 → ctx_1 → s_1 → ctx_2 → ...: the previous decoder state is the query.
"""

import torch
from torch import Tensor, nn

from seqlab.core.checks import check_not_empty, check_shape, check_token_ids
from seqlab.models.attention import Attention
from seqlab.models.decoder import ContextDecoder
from seqlab.models.decoding import AttentionStep
from seqlab.models.rnn import hidden_state


class AttentionDecoder(nn.Module):
    """A recurrent decoder that attends over the encoder states at every step.

    It is chapter 3's :class:`~seqlab.models.decoder.ContextDecoder`, which reads a context vector at every
    step, with one change: the context is no longer fixed, it is recomputed by attention before each
    step, with the previous decoder state as the query.

    Args:
        vocab_size: target vocabulary size V.
        embedding_size: size E of the target embeddings.
        hidden_size: size H of the decoder state (the attention query).
        memory_size: size M of each encoder state (the keys and values).
        scorer: a scorer module of :mod:`seqlab.models.attention`.
        cell: ``"rnn"``, ``"lstm"`` or ``"gru"``.
        num_layers: stacked layers L; the top layer's state is the query.
        dropout: dropout on the embeddings and before the output layer.

    Shape:
        - ``step(prev_tokens (B,), state, memory (B, S, M), mask (B, S), prepared_keys)`` →
          ``AttentionStep(log_probs (B, V), state, weights (B, S))``; state ``(L, B, H)`` (LSTM: a pair).
        - ``forward(tgt_in (B, T), state, memory, mask)`` → ``(log_probs (B, T, V), state, weights (B, T, S))``:
          the steps one after the other, returned in the same order as ``step``'s.

    Example::

        >>> from seqlab.models.attention import AdditiveScorer
        >>> decoder = AttentionDecoder(vocab_size=9, embedding_size=4, hidden_size=6, memory_size=5,
        ...                            scorer=AdditiveScorer(query_size=6, key_size=5, attention_size=8))
        >>> memory, mask = torch.randn(2, 3, 5), torch.tensor([[True, True, True], [True, True, False]])
        >>> log_probs, state, weights = decoder(torch.tensor([[1, 4], [1, 3]]), torch.zeros(1, 2, 6), memory, mask)
        >>> log_probs.shape, state.shape, weights.shape
        (torch.Size([2, 2, 9]), torch.Size([1, 2, 6]), torch.Size([2, 2, 3]))

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
        self.memory_size = memory_size
        self.attention = Attention(scorer)
        # Embedding, recurrent cell reading [embed(y); context], output layer: all as in chapter 3.
        self.context_decoder = ContextDecoder(
            vocab_size, embedding_size, hidden_size, memory_size, cell, num_layers, dropout
        )

    def query(self, state) -> Tensor:
        """The attention query: the top layer's hidden state, ``(B, H)``."""
        return hidden_state(state)[-1]

    def attend(self, state, memory: Tensor, mask: Tensor, prepared_keys: Tensor) -> tuple:
        """The previous state queries every encoder state: context ``(B, 1, M)``, weights ``(B, 1, S)``."""
        return self.attention(self.query(state).unsqueeze(1), memory, memory, mask, prepared_keys=prepared_keys)

    def step(self, prev_tokens: Tensor, state, memory: Tensor, mask: Tensor, prepared_keys: Tensor) -> AttentionStep:
        """One decoder step: ``AttentionStep(log_probs (B, V), state, weights (B, S))``, chapter 3's
        :class:`~seqlab.models.decoding.DecoderStep` plus the attention weights."""
        decoder = self.context_decoder
        embedded = decoder.embed(prev_tokens.unsqueeze(1))  # (B, 1, E)
        # 1) attend: the previous state queries every encoder state
        context, weights = self.attend(state, memory, mask, prepared_keys)  # (B, 1, M), (B, 1, S)
        # 2) update the state from the previous token and the context
        output, state = decoder.recur(embedded, state, context)  # (B, 1, H)
        # 3) predict the next token
        log_probs = decoder.predict(output, context, embedded)  # (B, 1, V)
        return AttentionStep(log_probs.squeeze(1), state, weights.squeeze(1))

    def forward(self, tgt_in: Tensor, state, memory: Tensor, mask: Tensor) -> tuple:
        """All steps of a teacher-forced target, one :meth:`step` after the other."""
        check_shape("tgt_in", tgt_in, ("B", "T"))
        check_not_empty("tgt_in", tgt_in, 1, "step (T)")
        check_token_ids("tgt_in", tgt_in, self.context_decoder.embedding.num_embeddings)  # once, not at every step
        check_shape("memory", memory, (tgt_in.shape[0], "S", self.memory_size))
        prepared_keys = self.attention.scorer.prepare_keys(memory)  # once per source, not once per step
        all_log_probs, all_weights = [], []
        # The query is the previous state: attend and recur must alternate, one step at a time. Embed and
        # predict need no previous state and could run over all steps before and after the loop (about 5 %
        # of a training step saved), but that changes the gradients in their last bits, and chapter 4's
        # length sweep is sensitive enough to move with them: so step does all of it, once per step.
        for t in range(tgt_in.shape[1]):
            log_probs, state, weights = self.step(tgt_in[:, t], state, memory, mask, prepared_keys)
            all_log_probs.append(log_probs)
            all_weights.append(weights)
        return torch.stack(all_log_probs, dim=1), state, torch.stack(all_weights, dim=1)  # (B, T, V), (B, T, S)
