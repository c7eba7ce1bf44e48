"""The pointer-generator network with coverage of See, Liu and Manning (2017) (chapter 6).

A summary often repeats words of its source that no fixed vocabulary holds: names, numbers, places.
A plain attention model can only write ``<unk>`` for them. The pointer-generator mixes two ways of
producing the next word:

* **generate** from the vocabulary with the decoder's distribution ``P_vocab`` (as in chapter 4);
* **copy** a source word by **pointing** at it: the attention weights are a distribution over source
  positions, hence over the source's words.

A switch ``p_gen ∈ (0, 1)``, computed at every step, mixes them over an **extended vocabulary**: the
model's V words plus the source's out-of-vocabulary words, numbered V, V+1, ... per example::

    P(w) = p_gen · P_vocab(w) + (1 − p_gen) · Σ_{i : x_i = w} α_{t,i}

**Coverage** keeps a running sum of past attention, ``cov_{t,i} = Σ_{t' < t} α_{t',i}``. It is fed to
the attention scorer (so the model knows what it has already covered) and a loss
``Σ_i min(α_{t,i}, cov_{t,i})`` penalises attending again to what is already covered: See et al.'s
remedy for repeating oneself (chapter 6 measures what it does at toy scale). The symbols are the
book's (``book/notation.md``): decoder state ``s_t``, attention weights ``α_{t,i}``, context ``ctx_t``,
coverage ``cov_{t,i}``.
"""

from typing import Any, NamedTuple

import torch
from torch import Tensor, nn

from seqlab.core.checks import (
    check_in_range,
    check_int_at_least,
    check_mask,
    check_not_empty,
    check_shape,
    check_token_ids,
)
from seqlab.core.padding import UNK_ID, lengths_to_mask
from seqlab.models.attention import AdditiveScorer, masked_softmax
from seqlab.models.decoder import ContextDecoder
from seqlab.models.decoding import Decodable, Encoded
from seqlab.models.seq2seq import encoder_and_bridge


def final_distribution(vocab_probs: Tensor, attn: Tensor, p_gen: Tensor, src_ext_ids: Tensor, n_oov: int) -> Tensor:
    """Mix generating and copying into one distribution over the extended vocabulary.

    ``P(w) = p_gen · P_vocab(w) + (1 − p_gen) · Σ_{i : src_ext_ids_i = w} attn_i``

    The copy part *adds* the weights of every source position holding ``w``, so a word that appears
    twice in the source receives both weights. Ids ``V .. V + n_oov - 1`` are the source's
    out-of-vocabulary words, which only copying can produce.

    Args:
        vocab_probs: ``(B, V)`` the decoder's distribution over its vocabulary (rows sum to 1).
        attn: ``(B, S)`` attention weights over source positions (rows sum to 1; 0 on padding).
        p_gen: ``(B, 1)`` probability of generating rather than copying, in ``[0, 1]``.
        src_ext_ids: ``(B, S)`` long, each source token's id in the extended vocabulary.
        n_oov: the most out-of-vocabulary words of any example in the batch (an int ``>= 0``).

    Returns:
        ``(B, V + n_oov)`` probabilities; rows sum to 1.

    Example::

        >>> vocab_probs = torch.tensor([[0.5, 0.5, 0.0]])  # V = 3
        >>> attn, p_gen = torch.tensor([[0.25, 0.75]]), torch.tensor([[0.5]])
        >>> final_distribution(vocab_probs, attn, p_gen, torch.tensor([[1, 3]]), n_oov=1)  # id 3: an OOV word
        tensor([[0.2500, 0.3750, 0.0000, 0.3750]])

    Taught in chapter 6.
    """
    check_shape("vocab_probs", vocab_probs, ("B", "V"))
    B, V = vocab_probs.shape
    check_shape("attn", attn, (B, "S"))
    check_shape("p_gen", p_gen, (B, 1))
    check_shape("src_ext_ids", src_ext_ids, (B, attn.shape[1]))
    check_int_at_least("n_oov", n_oov, 0)
    check_in_range("p_gen", p_gen, 0, 1)  # outside [0, 1], one of the two parts gets a negative weight
    check_token_ids("src_ext_ids", src_ext_ids)
    if src_ext_ids.numel() and int(src_ext_ids.max()) >= V + n_oov:
        raise ValueError(
            f"src_ext_ids: ids must be < V + n_oov = {V + n_oov}, got {int(src_ext_ids.max())}; is n_oov too small?"
        )
    return _mix(vocab_probs, attn, p_gen, src_ext_ids, n_oov)


def _mix(vocab_probs: Tensor, attn: Tensor, p_gen: Tensor, src_ext_ids: Tensor, n_oov: int) -> Tensor:
    """:func:`final_distribution` without its input checks, for the decoder's step: it runs at every
    step on the model's own tensors, which :meth:`PointerGenerator.start_decoding` checks once per source."""
    B = vocab_probs.shape[0]
    generate = p_gen * vocab_probs  # (B, V)
    extended = torch.cat([generate, generate.new_zeros(B, n_oov)], dim=1)  # (B, V + n_oov)
    # Copying: scatter_add sums the weights of repeated source words onto the same id.
    return extended.scatter_add(1, src_ext_ids, (1 - p_gen) * attn)  # (B, V + n_oov)


def coverage_loss(attn: Tensor, coverage: Tensor, mask: Tensor | None = None) -> Tensor:
    """The coverage loss of one decoder step: ``Σ_i min(α_{t,i}, cov_{t,i})``, averaged over the batch.

    ``coverage`` must be the sum of the *earlier* steps' attention (zeros at the first step), so a
    position is penalised only for being attended to again. Padded positions (``mask`` False) count
    for nothing.

    Args:
        attn: ``(B, S)`` this step's attention weights.
        coverage: ``(B, S)`` the sum of all earlier steps' attention weights.
        mask: ``(B, S)`` bool, True at real source tokens, or None.

    Returns:
        A scalar: the mean over the batch of each row's sum (0 for an empty batch).

    Example::

        >>> attn, coverage = torch.tensor([[0.5, 0.5, 0.0]]), torch.tensor([[1.0, 0.25, 0.0]])
        >>> coverage_loss(attn, coverage)  # min(0.5, 1) + min(0.5, 0.25) + 0
        tensor(0.7500)

    Taught in chapter 6.
    """
    check_shape("attn", attn, ("B", "S"))
    check_shape("coverage", coverage, tuple(attn.shape))
    overlap = torch.minimum(attn, coverage)  # (B, S)
    if mask is not None:
        check_mask("mask", mask, tuple(attn.shape))
        overlap = torch.where(mask, overlap, 0.0)  # (B, S): padded positions count for nothing
    if attn.shape[0] == 0:
        return overlap.sum()  # an empty batch has nothing to penalise: 0, not the NaN of an empty mean
    return overlap.sum(dim=1).mean()


# ----------------------------------------------------------------------------------------------
# The model


class CoverageAttention(nn.Module):
    r"""Additive attention that also sees each source position's coverage.

    ``e_{t,i} = wᵀ tanh(W_q s_{t-1} + W_k h_i + w_cov cov_{t,i} + b)``, ``α_t = masked_softmax(e_t)``,
    ``ctx_t = Σ_i α_{t,i} h_i``, where ``cov_{t,i}`` is how much attention position i has received
    before step t. With coverage all zero it is exactly chapter 4's additive attention.

    This is See et al.'s (2017) coverage term, their eq. 11, added to chapter 4's score with one
    difference: their eq. 11 scores with the decoder state ``s_t`` of the current step (their decoder
    updates its state first and then attends, and its ``p_gen`` reads that same ``s_t``), where this
    module, like Bahdanau et al. (2015) and chapter 4, scores with the previous state ``s_{t-1}``, so
    that ``ctx_t`` can be an input of the state update.

    Args:
        query_size: size of the decoder state s_{t-1} (the query).
        memory_size: size of each encoder state h_i (keys and values).
        attention_size: A, the additive scorer's hidden-layer width (:class:`~seqlab.models.attention.AdditiveScorer`).

    Shape:
        - query ``(B, Dq)``, memory ``(B, S, M)``, mask ``(B, S)``, prepared_keys ``(B, S, A)``,
          coverage ``(B, S)`` → context ``(B, M)``, weights ``(B, S)``.

    Example::

        >>> attention = CoverageAttention(query_size=6, memory_size=4, attention_size=8)
        >>> memory, mask = torch.randn(2, 3, 4), torch.tensor([[True, True, True], [True, True, False]])
        >>> prepared_keys = attention.scorer.prepare_keys(memory)  # (B, S, A), once per source
        >>> context, weights = attention(torch.randn(2, 6), memory, mask, prepared_keys, torch.zeros(2, 3))
        >>> context.shape, weights.shape, weights[1, 2].item()
        (torch.Size([2, 4]), torch.Size([2, 3]), 0.0)

    Taught in chapter 6.
    """

    def __init__(self, query_size: int, memory_size: int, attention_size: int):
        super().__init__()
        self.scorer = AdditiveScorer(query_size, memory_size, attention_size)
        self.coverage_proj = nn.Linear(1, attention_size, bias=False)  # w_cov

    def forward(self, query: Tensor, memory: Tensor, mask: Tensor, prepared_keys: Tensor, coverage: Tensor) -> tuple:
        projected = (
            self.scorer.query_proj(query).unsqueeze(1)  # (B, 1, A): W_q s_{t-1} + b
            + prepared_keys  # (B, S, A): W_k h_i, computed once per source
            + self.coverage_proj(coverage.unsqueeze(2))  # (B, S, A): w_cov cov_{t,i}
        )
        scores = self.scorer.v(torch.tanh(projected)).squeeze(2)  # (B, S)
        weights = masked_softmax(scores.unsqueeze(1), mask).squeeze(1)  # (B, S)
        context = (weights.unsqueeze(1) @ memory).squeeze(1)  # (B, 1, S) @ (B, S, M) -> (B, M)
        return context, weights


class PointerStep(NamedTuple):
    """One step of the pointer-generator: chapter 4's :class:`~seqlab.models.decoding.AttentionStep`
    ``(log_probs, state, weights)`` plus what the pointer adds (the step contract of
    :mod:`seqlab.models.decoding`). Its distributions are over the extended vocabulary."""

    log_probs: Tensor  # (B, V + n_oov): log P, with P clamped at EPSILON (what decoding ranks by)
    state: Any  # the decoder's new recurrent state s_t (1, B, H), as in DecoderStep and AttentionStep
    weights: Tensor  # (B, S): this step's attention α_t
    p_gen: Tensor  # (B,): the switch, the probability of generating rather than copying
    coverage: Tensor  # (B, S): the coverage cov_t this step attended with (the sum of earlier α)
    probs: Tensor  # (B, V + n_oov): P itself, the mixture of generating and copying


class PointerGenerator(Decodable, nn.Module):
    """An attention Seq2Seq that can copy source words: the pointer-generator, optionally with coverage.

    One vocabulary serves source and target (copying needs shared ids). Inputs ``src`` and
    ``tgt_in`` are in **extended** ids (see :func:`seqlab.data.extended_source_ids`): ids ``>= V`` are
    the example's out-of-vocabulary words. The model reads them as ``<unk>`` (it has no embedding for
    them) and can still write them, by copying.

    It is built from the earlier chapters' parts: chapter 2's encoder and bridge, chapter 4's additive
    attention with a coverage term (:class:`CoverageAttention`), and the decoder parts that chapter 4's
    :class:`~seqlab.models.attention_decoder.AttentionDecoder` composes (``self.decoder``, a
    :class:`~seqlab.models.decoder.ContextDecoder`: ``embed``, ``recur``, ``features``, ``output``).
    Each decoder step is chapter 4's loop, plus the switch::

        ctx_t, α_t = attention(s_{t-1}, encoder states, cov_t)    # cov_t: the sum of earlier α
        s_t        = cell([emb(y_{t-1}); ctx_t], s_{t-1})
        P_vocab    = softmax(W_out [s_t; ctx_t; emb(y_{t-1})] + b_out)
        p_gen      = σ(w_gen · [s_t; ctx_t; emb(y_{t-1})] + b_gen)
        P          = final_distribution(P_vocab, α_t, p_gen, src ids, n_oov)

    Args:
        vocab_size: V, the shared vocabulary (id 0 is padding).
        embedding_size, hidden_size: as for :class:`~seqlab.models.seq2seq.AttentionSeq2Seq`
            (a bidirectional GRU encoder with ``hidden_size // 2`` units per direction).
        coverage_weight: λ of the coverage loss; 0 switches coverage off (the attention gets zeros
            and no coverage loss is added). :meth:`enable_coverage` switches it on later.

    Shape:
        - ``model(src (B, S), src_lengths (B,), tgt_in (B, T)) -> probs (B, T, V + n_oov)``,
          ``n_oov = max(src) - V + 1`` (0 when the batch has no out-of-vocabulary word).
        - ``encode(src, src_lengths) -> Encoded(memory (B, S, H), mask (B, S), state s_0 (1, B, H))``.
        - ``step(prev_tokens (B,), state) -> PointerStep`` (:class:`PointerStep`): ``state`` is the
          decoding state of :meth:`start_decoding` (a dict), the step's ``.state`` the new recurrent
          state ``(1, B, H)``; :meth:`decode_step` carries the dict on.
        - ``greedy_decode(src, src_lengths, max_len)`` and ``beam_search(...)`` → ``(B, T')`` extended ids.

    Example::

        >>> model = PointerGenerator(vocab_size=10, embedding_size=4, hidden_size=6)
        >>> src = torch.tensor([[4, 11, 5], [6, 7, 0]])  # id 11 >= V: an out-of-vocabulary word (n_oov = 2)
        >>> probs = model(src, torch.tensor([3, 2]), torch.tensor([[1, 11], [1, 6]]))
        >>> probs.shape  # (B, T, V + n_oov)
        torch.Size([2, 2, 12])

    Taught in chapter 6.
    """

    def __init__(self, vocab_size: int, embedding_size: int = 32, hidden_size: int = 64, coverage_weight: float = 0.0):
        super().__init__()
        self.vocab_size = vocab_size
        self.coverage_weight = coverage_weight
        self.encoder, self.bridge = encoder_and_bridge(
            vocab_size, embedding_size, hidden_size, "gru", num_layers=1, bidirectional=True, dropout=0.0
        )
        before_decoder = torch.get_rng_state()
        self.attention = CoverageAttention(hidden_size, hidden_size, hidden_size)
        self.decoder = ContextDecoder(vocab_size, embedding_size, hidden_size, context_size=hidden_size)
        self.switch = nn.Linear(2 * hidden_size + embedding_size, 1)  # w and b of p_gen, reading decoder.features
        self._redraw_in_first_order(before_decoder)

    def _redraw_in_first_order(self, rng_state: Tensor) -> None:
        """Draw the decoder's initial weights again, in the order in which chapter 6 was first run (the
        embedding before the attention), so that a seed gives the same model as it did then."""
        torch.set_rng_state(rng_state)
        scorer = self.attention.scorer
        for part in (
            self.decoder.embedding,
            scorer.key_proj,
            scorer.query_proj,
            scorer.v,
            self.attention.coverage_proj,
            self.decoder.rnn,
            self.decoder.output,
            self.switch,
        ):
            part.reset_parameters()

    def enable_coverage(self, weight: float = 1.0) -> None:
        """Switch coverage on (See et al. add it for a short last phase of training)."""
        self.coverage_weight = weight

    def to_unk(self, ids: Tensor) -> Tensor:
        """Extended ids → model ids: every out-of-vocabulary id becomes ``<unk>``."""
        return ids.masked_fill(ids >= self.vocab_size, UNK_ID)

    def n_oov(self, src: Tensor) -> int:
        return max(0, int(src.max()) - self.vocab_size + 1) if src.numel() else 0

    def encode(self, src: Tensor, src_lengths: Tensor) -> Encoded:
        """``Encoded(memory (B, S, H), mask (B, S), state (1, B, H))``, as chapter 4's model encodes."""
        check_shape("src", src, ("B", "S"))
        check_token_ids("src", src)  # extended ids: any id >= V is an out-of-vocabulary word
        memory, final = self.encoder(self.to_unk(src), src_lengths)  # (B, S, H)
        mask = lengths_to_mask(src_lengths, src.shape[1]).to(src.device)  # (B, S)
        return Encoded(memory, mask, self.bridge(final))

    def start_decoding(self, src: Tensor, src_lengths: Tensor) -> dict:
        memory, mask, hidden = self.encode(src, src_lengths)
        return {
            "memory": memory,
            "mask": mask,
            "prepared_keys": self.attention.scorer.prepare_keys(memory),  # (B, S, A)
            "coverage": memory.new_zeros(src.shape),  # (B, S)
            "src": src,  # extended ids, for copying
            "hidden": hidden,  # (1, B, H)
            "n_oov": self.n_oov(src),
        }

    def step(self, prev_tokens: Tensor, state: dict) -> PointerStep:
        """One step from the decoding state ``state`` (the dict of :meth:`start_decoding`): a :class:`PointerStep`,
        chapter 4's step result (its ``state`` the new recurrent state ``(1, B, H)``) plus the switch, the
        coverage and P. :meth:`decode_step` returns the next decoding state."""
        decoder = self.decoder
        coverage_in = state["coverage"] if self.coverage_weight > 0 else torch.zeros_like(state["coverage"])
        embedded = decoder.embed(self.to_unk(prev_tokens).unsqueeze(1))  # (B, 1, E)
        # 1) attend, with the coverage so far
        query = state["hidden"][-1]  # (B, H)
        context, attn = self.attention(query, state["memory"], state["mask"], state["prepared_keys"], coverage_in)
        context = context.unsqueeze(1)  # (B, 1, H)
        # 2) update the decoder state
        output, hidden = decoder.recur(embedded, state["hidden"], context)  # (B, 1, H)
        # 3) generate: the vocabulary distribution, and the switch
        features = decoder.features(output, context, embedded).squeeze(1)  # (B, 2H + E)
        vocab_probs = torch.softmax(decoder.output(features), dim=1)  # (B, V)
        p_gen = torch.sigmoid(self.switch(features))  # (B, 1)
        # 4) mix generating and copying over the extended vocabulary
        probs = _mix(vocab_probs, attn, p_gen, state["src"], state["n_oov"])  # (B, V + n_oov): final_distribution
        log_probs = probs.clamp_min(EPSILON).log()  # (B, V + n_oov)
        return PointerStep(log_probs, hidden, attn, p_gen.squeeze(1), state["coverage"], probs)

    @staticmethod
    def _after(state: dict, step: PointerStep) -> dict:
        """The decoding state after ``step``: its recurrent state, and the coverage plus its attention."""
        return {**state, "hidden": step.state, "coverage": state["coverage"] + step.weights}

    def forward_with_details(self, src: Tensor, src_lengths: Tensor, tgt_in: Tensor) -> dict:
        """Teacher-forced run. Returns ``probs (B, T, V + n_oov)``, ``attn (B, T, S)``, ``p_gen (B, T)``
        and ``coverage (B, T, S)`` (the coverage *before* each step)."""
        check_shape("tgt_in", tgt_in, (src.shape[0], "T"))
        check_not_empty("tgt_in", tgt_in, 1, "step (T)")
        check_token_ids("tgt_in", tgt_in)  # extended ids, as src
        state = self.start_decoding(src, src_lengths)
        steps = []
        for t in range(tgt_in.shape[1]):
            step = self.step(tgt_in[:, t], state)
            state = self._after(state, step)
            steps.append({"probs": step.probs, "attn": step.weights, "p_gen": step.p_gen, "coverage": step.coverage})
        return {key: torch.stack([s[key] for s in steps], dim=1) for key in steps[0]}

    def forward(self, src: Tensor, src_lengths: Tensor, tgt_in: Tensor) -> Tensor:
        return self.forward_with_details(src, src_lengths, tgt_in)["probs"]  # (B, T, V + n_oov)

    # --- the decoding protocol of seqlab.models.decoding ---------------------------------------------

    def decode_step(self, prev_tokens: Tensor, state: dict) -> tuple:
        step = self.step(prev_tokens, state)
        return step.log_probs, self._after(state, step)  # log-probabilities over the extended vocabulary


EPSILON = 1e-12  # probabilities are clamped here before a log: a target the model cannot produce costs -log(1e-12)


def pointer_loss(model: PointerGenerator, batch) -> Tensor:
    """Negative log-likelihood of the targets over the extended vocabulary, plus λ · coverage loss.

    Both are averaged over the real target tokens. ``-log p`` uses ``p`` clamped at ``EPSILON``, so a
    target the model cannot produce (an unknown word absent from the source) gives a large finite loss,
    never ``inf``. Use it as ``train_seq2seq(..., batch_loss=pointer_loss)``.

    Taught in chapter 6.
    """
    out = model.forward_with_details(batch.src, batch.src_lengths, batch.tgt_in)
    picked = out["probs"].gather(2, batch.tgt_out.unsqueeze(2)).squeeze(2)  # (B, T): P(target)
    log_picked = torch.where(batch.tgt_mask, picked.clamp_min(EPSILON).log(), 0.0)  # (B, T): 0 at padding
    nll = -log_picked.sum() / batch.tgt_mask.sum().clamp(min=1)
    if model.coverage_weight == 0:
        return nll
    return nll + model.coverage_weight * mean_overlap(out, batch)


def mean_overlap(out: dict, batch) -> Tensor:
    """The coverage loss averaged over every real target step of the batch.

    Args:
        out: :meth:`PointerGenerator.forward_with_details`'s ``attn`` and ``coverage``, ``(B, T, S)``.
        batch: its ``tgt_mask (B, T)`` says which steps are real, its ``src_mask (B, S)`` which positions.
    """
    src_mask = batch.src_mask.unsqueeze(1).expand_as(out["attn"])  # (B, T, S)
    # One row per real target step: (N, S) with N the number of real target tokens.
    return coverage_loss(out["attn"][batch.tgt_mask], out["coverage"][batch.tgt_mask], src_mask[batch.tgt_mask])
