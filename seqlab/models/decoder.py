"""The recurrent decoder that reads a context vector at every step (chapter 3; reused in chapter 4).

At step t it reads the previous target token and a context vector ctx, updates its state, and scores
the next token::

    s_t = cell([embed(y_{t-1}); ctx], s_{t-1})
    P(y_t | y_<t, x) = softmax(W_out [s_t; ctx; embed(y_{t-1})] + b_out)

Chapter 3's Seq2Seq gives it the same ctx at every step; chapter 4's attention decoder computes a fresh
ctx_t before each step and hands it to this decoder.
"""

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from seqlab.core.checks import check_not_empty, check_shape, check_token_ids
from seqlab.models.decoding import DecoderStep
from seqlab.models.rnn import CELLS, TORCH_LAYERS


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
        - ``step(prev_tokens (B,), state, context) -> DecoderStep(log_probs (B, V), state)``: the same
          with T = 1 (:class:`~seqlab.models.decoding.DecoderStep`).

    Teacher forcing is why ``forward`` can take the whole target at once: the decoder's input at step
    t is the *true* token y_{t-1}, known in advance, so the fused RNN runs over all steps in one call.

    Example::

        >>> decoder = ContextDecoder(vocab_size=9, embedding_size=4, hidden_size=6, context_size=5)
        >>> tgt_in, state, context = torch.tensor([[1, 4, 2], [1, 3, 0]]), torch.zeros(1, 2, 6), torch.randn(2, 5)
        >>> log_probs, state = decoder(tgt_in, state, context)
        >>> log_probs.shape, state.shape
        (torch.Size([2, 3, 9]), torch.Size([1, 2, 6]))

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
        """All steps of a teacher-forced target at once: ``tgt_in (B, T)`` → ``(log_probs (B, T, V), state)``."""
        check_shape("tgt_in", tgt_in, ("B", "T"))
        check_not_empty("tgt_in", tgt_in, 1, "step (T)")
        check_token_ids("tgt_in", tgt_in, self.embedding.num_embeddings)  # before the embedding looks them up
        check_shape("context", context, (tgt_in.shape[0], self.context_size))
        return self._decode(tgt_in, state, context)

    def _decode(self, tgt_in: Tensor, state, context: Tensor) -> tuple:
        """:meth:`forward` without its input checks, for :meth:`step`: a decoding loop calls it at every
        step with the tokens the model itself chose."""
        embedded = self.embed(tgt_in)  # (B, T, E)
        repeated_context = context.unsqueeze(1).expand(-1, tgt_in.shape[1], -1)  # (B, T, C)
        outputs, state = self.recur(embedded, state, repeated_context)  # (B, T, H)
        return self.predict(outputs, repeated_context, embedded), state  # (B, T, V)

    # The three parts of a step. Of these, only the recurrence needs the previous state: forward runs each
    # over all T steps in one call. Chapter 4's AttentionDecoder.step calls all three once per step, inside
    # its loop: its context depends on the previous state, so attend and recur must alternate step by step;
    # embed and predict could run outside the loop, and stay inside it by choice (AttentionDecoder.forward
    # gives the reason).

    def embed(self, tokens: Tensor) -> Tensor:
        """``(B, T)`` token ids → ``(B, T, E)`` embeddings (with dropout while training)."""
        return self.dropout(self.embedding(tokens))

    def recur(self, embedded: Tensor, state, context: Tensor) -> tuple:
        """The recurrent cell over ``[embed(y); ctx]``: ``(B, T, E)``, ``(B, T, C)`` → outputs ``(B, T, H)``, state."""
        return self.rnn(torch.cat([embedded, context], dim=2), state)

    def features(self, outputs: Tensor, context: Tensor, embedded: Tensor) -> Tensor:
        """What the output layer reads, ``[s_t; ctx; embed(y_{t-1})]``: ``(B, T, H+C+E)``."""
        return torch.cat([self.dropout(outputs), context, embedded], dim=2)  # (B, T, H+C+E)

    def predict(self, outputs: Tensor, context: Tensor, embedded: Tensor) -> Tensor:
        """The next token's log-probabilities from ``[s_t; ctx; embed(y_{t-1})]``: ``(B, T, V)``."""
        return F.log_softmax(self.output(self.features(outputs, context, embedded)), dim=-1)  # (B, T, V)

    def step(self, prev_tokens: Tensor, state, context: Tensor) -> DecoderStep:
        """One step: ``DecoderStep(log_probs (B, V), state)`` (the step contract of :mod:`seqlab.models.decoding`)."""
        log_probs, state = self._decode(prev_tokens.unsqueeze(1), state, context)  # (B, 1, V)
        return DecoderStep(log_probs.squeeze(1), state)  # (B, V)
