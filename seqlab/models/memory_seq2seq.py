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

from seqlab.core.checks import check_shape
from seqlab.models.attention import make_scorer
from seqlab.models.attention_decoder import AttentionDecoder
from seqlab.models.decoder import ContextDecoder
from seqlab.models.decoding import Decodable, Encoded


class MemorySeq2Seq(Decodable, nn.Module):
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
        - ``encode(src, src_lengths) → Encoded(memory, mask, state)``: with attention the memory
          ``(B, S, M)`` and its mask, without it the summary ``(B, M)`` and None (the contract of
          :class:`~seqlab.models.decoding.Encoded`); the state is ``(1, B, H)``.
        - ``greedy_decode(src, src_lengths, max_len)`` and ``beam_search(...)`` → ``(B, T')`` token ids,
          from :class:`~seqlab.models.decoding.Decodable`, as for every model that decodes.
        - ``attention_weights(src, src_lengths, tgt_in) → (B, T, S)`` (with attention only).

    Example::

        >>> from seqlab.models.listener import Listener
        >>> model = MemorySeq2Seq(Listener(16, 8, pyramid=0), tgt_vocab_size=9, embedding_size=4, hidden_size=6)
        >>> frames, frame_lengths = torch.randn(2, 5, 16), torch.tensor([5, 3])
        >>> model(frames, frame_lengths, torch.tensor([[1, 4], [1, 3]])).shape
        torch.Size([2, 2, 9])

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

    source_dims = None  # images (B, C, H, W), frames (B, S, F): whatever the memory encoder reads

    def encode(self, src: Tensor, src_lengths: Tensor | None) -> Encoded:
        """The memory (or, without attention, its summary), its mask, and the first decoder state."""
        memory, mask, summary = self.memory_encoder(src, src_lengths)  # (B, S, M), (B, S), (B, M)
        state = torch.tanh(self.init_state(summary)).unsqueeze(0)  # (1, B, H)
        if self.attention:
            return Encoded(memory, mask, state)
        return Encoded(summary, None, state)  # the summary is a memory of one slot, read at every step

    # --- the decoding protocol of seqlab.models.decoding ---------------------------------------------

    def start_decoding(self, src: Tensor, src_lengths: Tensor | None) -> dict:
        memory, mask, hidden = self.encode(src, src_lengths)
        if not self.attention:
            return {"context": memory, "hidden": hidden}
        prepared_keys = self.decoder.attention.scorer.prepare_keys(memory)  # once per input
        return {"memory": memory, "mask": mask, "prepared_keys": prepared_keys, "hidden": hidden}

    def decode_step(self, prev_tokens: Tensor, state: dict) -> tuple:
        if self.attention:
            log_probs, hidden, _ = self.decoder.step(
                prev_tokens, state["hidden"], state["memory"], state["mask"], state["prepared_keys"]
            )
        else:
            log_probs, hidden = self.decoder.step(prev_tokens, state["hidden"], state["context"])
        return log_probs, {**state, "hidden": hidden}

    def _teacher_forced(self, src, src_lengths, tgt_in: Tensor) -> tuple:
        check_shape("tgt_in", tgt_in, ("B", "T"))
        memory, mask, state = self.encode(src, src_lengths)
        if self.attention:
            log_probs, _, weights = self.decoder(tgt_in, state, memory, mask)
            return log_probs, weights  # (B, T, V), (B, T, S)
        log_probs, _ = self.decoder(tgt_in, state, memory)
        return log_probs, None

    def forward(self, src, src_lengths, tgt_in: Tensor) -> Tensor:
        return self._teacher_forced(src, src_lengths, tgt_in)[0]  # (B, T, V)

    def attention_weights(self, src, src_lengths, tgt_in: Tensor) -> Tensor:
        """Every step's weights over the memory ``(B, T, S)``; feed ``<bos>`` + a decoded output to see
        the weights that produced it."""
        if not self.attention:
            raise ValueError("a MemorySeq2Seq with attention=False has no attention weights")
        return self._teacher_forced(src, src_lengths, tgt_in)[1]
