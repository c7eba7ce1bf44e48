"""A decoder that writes text about any memory: image regions, audio frames (chapter 7).

Chapter 4's attention decoder never asks where its keys came from. Give it the region features of a
small CNN and it captions images (Xu et al., 2015, "Show, Attend and Tell"); give it the states of an
encoder over audio frames and it transcribes speech (Chan et al., 2016, "Listen, Attend and Spell").
The one thing that changes is the **memory encoder**, any module with ``output_size`` that maps::

    memory_encoder(src, src_lengths) → memory (B, S, M), mask (B, S), summary (B, M)

``summary`` is one vector for the whole input: the mean of the regions, an encoder's final states.
Without attention, the decoder reads ``summary`` at every step (chapter 3's context vector); with it,
the decoder attends over ``memory``. Either way the first decoder state is ``tanh(W summary + b)``.
"""

import torch
from torch import Tensor, nn

from seqlab.core.checks import check_at_least_one, check_shape
from seqlab.core.device import evaluating
from seqlab.models.attention import make_scorer
from seqlab.models.attention_decoder import AttentionDecoder
from seqlab.models.decoder import ContextDecoder
from seqlab.models.decoding import greedy_search, select_rows


class MemorySeq2Seq(nn.Module):
    """Memory encoder → recurrent decoder, with attention over the memory or with its summary alone.

    Args:
        memory_encoder: a module as above (``output_size`` = M).
        tgt_vocab_size: V (id 0 is padding, 1 ``<bos>``, 2 ``<eos>``).
        embedding_size: size of the target embeddings.
        hidden_size: size of the decoder state.
        attention: attend over the memory (True) or read the summary at every step (False).
        scorer: the attention's scoring function, as for chapter 4's models.

    Shape:
        - ``model(src, src_lengths, tgt_in (B, T)) → log_probs (B, T, V)``; ``src`` is whatever the
          memory encoder reads (images ``(B, C, H, W)``, frames ``(B, S, F)``), ``src_lengths`` its
          lengths or None.
        - ``greedy_decode(src, src_lengths, max_len) → (B, T')`` token ids.
        - ``attention_weights(src, src_lengths, tgt_in) → (B, T, S)`` (with attention only).

    Taught in chapter 7.
    """

    def __init__(
        self,
        memory_encoder: nn.Module,
        tgt_vocab_size: int,
        embedding_size: int = 32,
        hidden_size: int = 64,
        attention: bool = True,
        scorer: str = "additive",
    ):
        super().__init__()
        M = memory_encoder.output_size
        self.memory_encoder = memory_encoder
        self.attention = attention
        self.init_state = nn.Linear(M, hidden_size)
        if attention:
            self.decoder = AttentionDecoder(
                tgt_vocab_size, embedding_size, hidden_size, M, make_scorer(scorer, hidden_size, M)
            )
        else:
            self.decoder = ContextDecoder(tgt_vocab_size, embedding_size, hidden_size, context_size=M)

    def start_decoding(self, src: Tensor, src_lengths: Tensor | None) -> dict:
        """Encode: the memory, its mask, its summary, and the first decoder state ``(1, B, H)``."""
        memory, mask, summary = self.memory_encoder(src, src_lengths)  # (B, S, M), (B, S), (B, M)
        state = {"memory": memory, "mask": mask, "summary": summary}
        state["hidden"] = torch.tanh(self.init_state(summary)).unsqueeze(0)  # (1, B, H)
        if self.attention:
            state["prepared_keys"] = self.decoder.attention.scorer.prepare_keys(memory)  # once per input
        return state

    def decode_step(self, prev_tokens: Tensor, state: dict) -> tuple:
        """One step for every row: ``log_probs (B, V)`` and the next state (the decoding protocol)."""
        if self.attention:
            log_probs, hidden, _ = self.decoder.step(
                prev_tokens, state["hidden"], state["memory"], state["mask"], state["prepared_keys"]
            )
        else:
            log_probs, hidden = self.decoder.step(prev_tokens, state["hidden"], state["summary"])
        return log_probs, {**state, "hidden": hidden}

    def reorder_state(self, state: dict, index: Tensor) -> dict:
        return select_rows(state, index)

    def _teacher_forced(self, src, src_lengths, tgt_in: Tensor) -> tuple:
        check_shape("tgt_in", tgt_in, ("B", "T"))
        state = self.start_decoding(src, src_lengths)
        if self.attention:
            log_probs, _, weights = self.decoder(tgt_in, state["hidden"], state["memory"], state["mask"])
            return log_probs, weights  # (B, T, V), (B, T, S)
        log_probs, _ = self.decoder(tgt_in, state["hidden"], state["summary"])
        return log_probs, None

    def forward(self, src, src_lengths, tgt_in: Tensor) -> Tensor:
        return self._teacher_forced(src, src_lengths, tgt_in)[0]  # (B, T, V)

    def attention_weights(self, src, src_lengths, tgt_in: Tensor) -> Tensor:
        """Every step's weights over the memory ``(B, T, S)``; feed ``<bos>`` + a decoded output to see
        the weights that produced it."""
        if not self.attention:
            raise ValueError("a MemorySeq2Seq with attention=False has no attention weights")
        return self._teacher_forced(src, src_lengths, tgt_in)[1]

    @torch.no_grad()
    def greedy_decode(self, src, src_lengths, max_len: int) -> Tensor:
        """The most likely token at every step, in evaluation mode (the model's mode is restored)."""
        check_at_least_one("max_len", max_len)
        with evaluating(self):
            state = self.start_decoding(src, src_lengths)
            tokens, _ = greedy_search(self, state, state["summary"].shape[0], max_len, state["summary"].device)
        return tokens  # (B, T')
