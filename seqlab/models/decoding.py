"""Greedy decoding and beam search, for any model that can take one decoder step (chapter 3), and the
two results every model that decodes shares: :class:`Encoded` and the decoder steps' tuples.

**The encode contract.** Every model that decodes has ``encode(src, src_lengths) -> Encoded``, a named
tuple ``(memory, mask, state)``: ``memory`` is what the decoder reads of the source, ``mask`` says which
of its positions are real, ``state`` is the decoder's initial state. Every model means the same by them
(see :class:`Encoded`), so ``memory, mask, state = model.encode(src, src_lengths)`` reads any of them.

**The decoder-step contract.** A decoder's ``step`` returns a named tuple whose first two fields are
``(log_probs (B, V), state)``, ``state`` the decoder's new recurrent state (``(L, B, H)``, an LSTM's
pair) in every one; a decoder that does more adds named fields after them, and a later decoder's tuple
starts with the earlier one's:

* :class:`DecoderStep` ``(log_probs, state)``: chapter 3's :class:`~seqlab.models.decoder.ContextDecoder`;
* :class:`AttentionStep` ``(log_probs, state, weights)``: chapter 4's
  :class:`~seqlab.models.attention_decoder.AttentionDecoder` adds the attention weights;
* :class:`~seqlab.models.pointer.PointerStep` ``(log_probs, state, weights, p_gen, coverage, probs)``:
  chapter 6's pointer-generator adds the switch, the coverage it attended with, and the probabilities.

**The decoding protocol.** A model is decodable when it has three methods (every model above, the
Transformer of chapter 8 and chapter 7's :class:`~seqlab.models.memory_seq2seq.MemorySeq2Seq` do):

* ``start_decoding(src, src_lengths) -> state``: encode the source; ``state`` is whatever the
  decoder carries from step to step (hidden state, encoder outputs, coverage...);
* ``decode_step(prev_tokens (N,), state) -> (log_probs (N, V), state)``: one step for N rows;
* ``reorder_state(state, index (N',)) -> state``: pick (and repeat) rows, so a beam can follow its
  best hypotheses. :class:`Decodable` provides it for the usual state, a dict of batch-first tensors
  with the recurrent state under ``"hidden"`` (see :func:`select_rows`).

:class:`Decodable` turns those into ``greedy_decode(src, src_lengths, max_len)`` and
``beam_search(src, src_lengths, max_len, beam_size=4, length_penalty=0.0, return_hypotheses=False)``,
the same for every model, which leave the model in the mode (training or evaluation) they found it in.
"""

from dataclasses import dataclass
from typing import Any, NamedTuple

import torch
from torch import Tensor, nn

from seqlab.core.checks import check_at_least_one, check_in_range, check_not_empty, check_shape
from seqlab.core.device import evaluating
from seqlab.core.padding import BOS_ID, EOS_ID, PAD_ID
from seqlab.models.rnn import map_state


class Encoded(NamedTuple):
    """What every model's ``encode(src, src_lengths)`` returns: the source, read once, for the decoder.

    Fields (one meaning in every model):

    * ``memory``: what the decoder reads of the source at every step. For a decoder that attends, one
      vector per source position ``(B, S, M)`` (the encoder's outputs; the Transformer's encoder stack);
      for one that does not, the single context vector ``(B, M)`` it reads at every step (chapter 3's
      :class:`~seqlab.models.seq2seq.Seq2Seq`, a :class:`~seqlab.models.memory_seq2seq.MemorySeq2Seq`
      without attention): a memory of one slot.
    * ``mask``: ``(B, S)`` bool, True at the real positions of ``memory``; None when ``memory`` is one vector.
    * ``state``: the decoder's initial state, what it carries from step to step: ``(L, B, H)`` for a
      recurrent decoder (an LSTM's: a pair), the empty history ``(L, B, 0, H)`` for the Transformer's.

    Taught in chapter 3 (the context vector) and chapter 4 (the memory).
    """

    memory: Tensor
    mask: Tensor | None
    state: Any


class DecoderStep(NamedTuple):
    """One step of a decoder that reads a context vector (chapter 3's ``ContextDecoder.step``)."""

    log_probs: Tensor  # (B, V): the next token's log-probabilities
    state: Any  # the decoder's new state, as it came in ((L, B, H), an LSTM's pair)


class AttentionStep(NamedTuple):
    """One step of a decoder that attends (chapter 4's ``AttentionDecoder.step``): a :class:`DecoderStep`
    plus the attention weights it read the memory with."""

    log_probs: Tensor  # (B, V)
    state: Any
    weights: Tensor  # (B, S): this step's attention over the memory's positions


@dataclass
class Hypothesis:
    """One finished (or cut-off) output of beam search."""

    tokens: list  # token ids, ending with eos unless cut off at max_len
    score: float  # sum of the tokens' log-probabilities (the ranking score when length_penalty is 0)
    ranking_score: float  # score / len(tokens) ** length_penalty


def select_hidden(hidden, index: Tensor):
    """Pick (and repeat) batch rows of a recurrent state: ``(L, B, H)``, or an LSTM's pair of them."""
    return map_state(lambda h: h.index_select(1, index), hidden)  # batch is dimension 1 in torch's (L, B, H)


def select_rows(state: dict, index: Tensor) -> dict:
    """Pick (and repeat) batch rows of a decoding state.

    ``state["hidden"]`` is a recurrent state in torch's ``(L, B, H)`` layout (an LSTM's: a pair); every
    other tensor is batch-first; anything else (a count, a list of words) is kept as it is.

    Example::

        >>> state = {"hidden": torch.zeros(1, 2, 4), "mask": torch.tensor([[True], [False]]), "n_oov": 3}
        >>> picked = select_rows(state, torch.tensor([1, 1, 0]))
        >>> picked["hidden"].shape, picked["mask"].flatten().tolist(), picked["n_oov"]
        (torch.Size([1, 3, 4]), [False, False, True], 3)
    """
    batch_first = {k: v for k, v in state.items() if k != "hidden" and isinstance(v, Tensor)}
    picked = {key: value.index_select(0, index) for key, value in batch_first.items()}
    return {**state, **picked, "hidden": select_hidden(state["hidden"], index)}


def pad_token_lists(token_lists: list, device=None) -> Tensor:
    """``[[5, 2], [7, 8, 2]] → tensor([[5, 2, 0], [7, 8, 2]])``: right-pad with ``PAD_ID``."""
    width = max(1, max(len(t) for t in token_lists))
    out = torch.full((len(token_lists), width), PAD_ID, dtype=torch.long, device=device)
    for row, tokens in enumerate(token_lists):
        out[row, : len(tokens)] = torch.tensor(tokens, dtype=torch.long)
    return out  # (B, T)


def greedy_search(model, state, batch_size: int, max_len: int, device) -> tuple:
    """At every step take the single most likely token; stop a row at eos.

    Returns:
        ``tokens (B, T)`` with ``T <= max_len`` (eos included, then padding), and ``scores (B,)``, the
        sum of the chosen tokens' log-probabilities.
    """
    prev = torch.full((batch_size,), BOS_ID, dtype=torch.long, device=device)  # (B,)
    finished = torch.zeros(batch_size, dtype=torch.bool, device=device)  # (B,)
    scores = torch.zeros(batch_size, device=device)  # (B,)
    outputs = []
    for _ in range(max_len):
        log_probs, state = model.decode_step(prev, state)  # (B, V)
        best_log_prob, prev = log_probs.max(dim=1)  # (B,), (B,)
        scores = scores + best_log_prob.masked_fill(finished, 0.0)
        prev = prev.masked_fill(finished, PAD_ID)  # rows that are done only pad
        outputs.append(prev)
        finished = finished | (prev == EOS_ID)
        if finished.all():
            break
    return torch.stack(outputs, dim=1), scores  # (B, T), (B,)


def beam_search_one(model, state, max_len: int, beam_size: int, device, length_penalty: float = 0.0) -> list:
    """Beam search for a single source (``state`` has one row).

    At each step every live hypothesis is extended by every token, and the ``2 * beam_size`` best
    extensions by total log-probability are taken in order: one that ends in eos is finished, the
    others become the live hypotheses, until ``beam_size`` of them are live. The finished list keeps
    its ``beam_size`` best by rank, ``score / length ** length_penalty`` (length counts eos).

    The search stops at the first of:

    * no live hypothesis is left;
    * only with ``length_penalty = 0``: ``beam_size`` hypotheses have finished and the worst of them
      scores at least as high as the best live one (scores only fall as outputs grow, so no live one
      can overtake it); with a length penalty a rank can rise, and this early stop is off;
    * step ``max_len``: the live hypotheses join the finished ones as they are, without eos.

    Returns:
        The hypotheses, best first by rank (at most ``beam_size``).
    """
    live_tokens = [[]]  # token lists of the live hypotheses
    live_scores = torch.zeros(1, device=device)  # (K,)
    prev = torch.full((1,), BOS_ID, dtype=torch.long, device=device)  # (K,)
    finished = []

    def rank(score: float, length: int) -> float:
        return score / (length**length_penalty)

    for step in range(max_len):
        log_probs, state = model.decode_step(prev, state)  # (K, V)
        V = log_probs.shape[1]
        total = (live_scores.unsqueeze(1) + log_probs).view(-1)  # (K*V,)
        # 2K candidates guarantee K that do not end here, even if K of them emit eos.
        top_scores, top_index = total.topk(min(2 * beam_size, total.numel()))
        next_tokens, next_rows, next_scores = [], [], []
        for score, index in zip(top_scores.tolist(), top_index.tolist()):
            row, token = divmod(index, V)
            tokens = live_tokens[row] + [token]
            if token == EOS_ID:
                finished.append(Hypothesis(tokens, score, rank(score, len(tokens))))
            else:
                next_tokens.append(tokens)
                next_rows.append(row)
                next_scores.append(score)
            if len(next_tokens) == beam_size:
                break
        finished.sort(key=lambda h: h.ranking_score, reverse=True)
        finished = finished[:beam_size]
        if not next_tokens:
            break
        best_live = max(next_scores)
        if length_penalty == 0 and len(finished) == beam_size and finished[-1].score >= best_live:
            break  # no live hypothesis can climb above the worst kept finished one
        if step == max_len - 1:
            # Out of steps: live hypotheses end here, without eos.
            finished += [Hypothesis(t, s, rank(s, len(t))) for t, s in zip(next_tokens, next_scores)]
            break
        index = torch.tensor(next_rows, device=device)
        state = model.reorder_state(state, index)
        live_tokens = next_tokens
        live_scores = torch.tensor(next_scores, device=device)  # (K,)
        prev = torch.tensor([t[-1] for t in next_tokens], device=device)  # (K,)
    finished.sort(key=lambda h: h.ranking_score, reverse=True)
    return finished[:beam_size]


def check_decoding_input(src: Tensor, max_len: int, source_dims: tuple = ("B", "S")) -> None:
    """What greedy and beam search need before they start: a batch of at least one source, and at
    least one step to take (the model checks the rest when it encodes the source). ``source_dims``
    None accepts any source with a batch dimension first (images, frames)."""
    if source_dims is None:
        if not isinstance(src, Tensor) or src.dim() == 0:
            raise ValueError(f"src: expected a tensor whose first dimension is the batch (B, ...), got {src!r}")
    else:
        check_shape("src", src, source_dims)
    check_not_empty("src", src, 0, "sequence (B)")
    check_at_least_one("max_len", max_len)


class Decodable:
    """Mixin: ``greedy_decode`` and ``beam_search`` from the decoding methods above.

    ``source_dims`` names the dimensions of ``src``, checked before decoding starts: token ids ``(B, S)``
    by default; None for a model whose source is anything with the batch first (images, frames).
    """

    source_dims: tuple | None = ("B", "S")

    def reorder_state(self, state: dict, index: Tensor) -> dict:
        return select_rows(state, index)

    @torch.no_grad()
    def greedy_decode(self, src: Tensor, src_lengths: Tensor, max_len: int) -> Tensor:
        """Decode by taking the most likely token at every step (in evaluation mode; the model's mode
        is restored afterwards).

        Returns:
            ``(B, T)`` token ids, ``T <= max_len``: each row ends with eos (unless cut off) and is
            padded with 0 after it.
        """
        check_decoding_input(src, max_len, self.source_dims)
        with evaluating(self):
            state = self.start_decoding(src, src_lengths)
            tokens, _ = greedy_search(self, state, src.shape[0], max_len, src.device)
        return tokens

    @torch.no_grad()
    def beam_search(
        self,
        src: Tensor,
        src_lengths: Tensor,
        max_len: int,
        beam_size: int = 4,
        length_penalty: float = 0.0,
        return_hypotheses: bool = False,
    ):
        """Decode with beam search, one source at a time (in evaluation mode; the model's mode is
        restored afterwards).

        Args:
            src, src_lengths: the batch to decode, ``(B, S)`` and ``(B,)``.
            max_len: most output tokens per row.
            beam_size: hypotheses kept at each step; 1 gives greedy decoding.
            length_penalty: rank hypotheses by ``score / length ** length_penalty`` (0: by score).
            return_hypotheses: also return every row's finished hypotheses, best first.

        Returns:
            ``(B, T)`` token ids of each row's best hypothesis (padded with 0), and with
            ``return_hypotheses`` a list of ``B`` lists of :class:`Hypothesis`.
        """
        check_decoding_input(src, max_len, self.source_dims)
        check_at_least_one("beam_size", beam_size)
        all_hypotheses = []
        with evaluating(self):
            state = self.start_decoding(src, src_lengths)
            for row in range(src.shape[0]):
                row_state = self.reorder_state(state, torch.tensor([row], device=src.device))
                all_hypotheses.append(beam_search_one(self, row_state, max_len, beam_size, src.device, length_penalty))
        tokens = pad_token_lists([h[0].tokens for h in all_hypotheses], device=src.device)  # (B, T)
        return (tokens, all_hypotheses) if return_hypotheses else tokens


class BigramTable(Decodable, nn.Module):
    """A toy "model" whose next-token probabilities depend only on the previous token.

    Useful to see decoding strategies at work on probabilities you choose by hand: ``table[a, b]``
    is P(next = b | previous = a); rows are normalised. The source is ignored.

    Args:
        table: ``(V, V)`` non-negative finite weights, at least one positive in every row.

    Example::

        >>> table = torch.ones(5, 5)  # ids: 0 pad, 1 <bos>, 2 <eos>, 3 <unk>, 4 a word
        >>> table[1], table[4] = torch.tensor([0.0, 0, 1, 0, 3]), torch.tensor([0.0, 0, 3, 0, 1])
        >>> BigramTable(table).greedy_decode(torch.zeros(2, 1, dtype=torch.long), torch.tensor([1, 1]), max_len=5)
        tensor([[4, 2],
                [4, 2]])

    Taught in chapter 3.
    """

    def __init__(self, table: Tensor):
        super().__init__()
        if table.dim() != 2 or table.shape[0] != table.shape[1]:
            raise ValueError(f"table: expected shape (V, V), got {tuple(table.shape)}")
        check_in_range("table", table, 0)  # weights: finite and non-negative
        empty_rows = (table.sum(dim=1) == 0).nonzero().flatten().tolist()
        if empty_rows:
            raise ValueError(
                f"table: expected every row to have a positive weight (each previous token needs a next one), "
                f"got all zeros in rows {empty_rows}"
            )
        probabilities = table / table.sum(dim=1, keepdim=True)  # (V, V)
        self.register_buffer("log_table", probabilities.clamp(min=1e-12).log())

    def start_decoding(self, src: Tensor, src_lengths: Tensor) -> Tensor:  # noqa: ARG002 (the protocol's signature)
        return torch.zeros(src.shape[0], device=src.device)  # no state: the previous token is enough

    def decode_step(self, prev_tokens: Tensor, state: Tensor) -> tuple:
        return self.log_table[prev_tokens], state  # (N, V)

    def reorder_state(self, state: Tensor, index: Tensor) -> Tensor:
        return state.index_select(0, index)
