"""Exercise 6's realistic answers, right and wrong, against its tests (tests/buggy_answers.py says how).

"mixture" is task 1's two tests (by hand; padding and limits), "loss" task 2's (by hand; the log 0 guard),
"coverage" task 3's (by hand; padding and gradients).

| bug | the edit | must fail |
|---|---|---|
| padding takes a share | the scores go into the softmax unmasked | mixture (both) |
| padding scored 0 | padded scores filled with 0, not -inf: still a share | mixture (both) |
| scatter, not scatter_add | a repeated word keeps one share | mixture by hand |
| pointer onto positions | the share of position i lands on column i, not on its extended id | mixture by hand |
| sentinel as a switch | p_gen = sigmoid(e_sent), the positions' own softmax times 1 - p_gen | mixture by hand |
| p_gen from the wrong end | the sentinel is appended last but read as the first share | mixture by hand |
| exp without the max | exp(e) / sum exp(e): overflow at +100, 0 / 0 at -120 | mixture limits |
| mask multiplied | exp(e - max) * mask, the padding in the max: 0 / 0 at a padded score of 1e4 | mixture limits |
| zeros of the default dtype | the output starts as float32 zeros whatever the inputs' dtype | mixture by hand |
| log 0 | no guard on P(y_t): -log 0 = inf | loss guard |
| EPSILON added | log(P + EPSILON): 27.23 where P = 5e-13, and a gradient of 1e12 | loss guard |
| log clamped afterwards | log(P).clamp_min(log EPSILON): finite loss, NaN gradients | loss guard |
| pointer term unguarded | -log(p_gen + shares) without the clamp: inf, and 0 * inf = NaN at mu = 0 | loss guard |
| pointer term without the sentinel | -log(shares on y_t) only | loss by hand |
| pointer weight ignored | the pointer term always has weight 1 | loss by hand |
| padding counted | the padded target steps' terms kept | loss by hand |
| mean over all positions | divided by B * T instead of the N real steps | loss by hand |
| mean per sequence | each example's mean, then the batch's | loss by hand |
| no real step gives NaN | 0 / 0 without the clamp of N | loss guard |
| a float32 accumulator | the sum of the terms cast to float32, whatever the inputs' dtype | loss guard |
| coverage counts the current step | the running sum includes step t's own shares | coverage (both) |
| coverage over the positions | the running sum taken along S, not T | coverage (both) |
| source padding takes a share | the scores go into the softmax unmasked | coverage (both) |
| padding zeroed after the softmax | the softmax over every position, then the shares times src_mask | coverage (both) |
| target padding counted | tgt_mask ignored | coverage (both) |
| divided by B * T | the mean over every step, padded or not | coverage (both) |
| mean per summary | each example's mean, then the batch's | coverage (both) |
| mean of the steps' means | each step's mean over its real rows, then the mean over T | coverage (both) |
| no real step gives NaN | 0 / 0 without the clamp of N | coverage by hand |
| coverage of attention through seqlab | chapter 6's masked_softmax and mean_overlap: no sentinel | coverage by hand |
| sentinel counted as a position | the sentinel's column kept in the shares and their coverage | coverage (both) |
| exp without the max | exp(e) / sum exp(e): overflow at +100 | coverage padding |

Every bug is caught by a visible test of its own task first, its message naming the function. Correct variants:
task 1 through seqlab.models.pointer.final_distribution with p_gen = sigmoid(e_sent - logsumexp), as a loop over rows
with index_add, and with a hand-written stable softmax and a one-hot product; task 2 flattened to B * T rows with
the pointer term from its own softmax, as a loop over the real steps, and with boolean selection; task 3 as a loop
over steps calling seqlab.models.pointer.coverage_loss, by a log-sum-exp and a triangular matrix of earlier steps, with
seqlab's masked_softmax over the positions and the sentinel and cumsum minus the step, and with the student's own
sentinel_mixture (a zero-width vocabulary, one column per position) and seqlab.models.pointer.mean_overlap (allowed
reuse: the shares and their coverage are the student's). Task 3 was chapter 6's coverage of alpha_t, which
mean_overlap computes once the coverage is an exclusive cumsum; since the review it is the coverage of the
pointer's shares, and that delegating answer is a bug (coverage of attention through seqlab).
"""

from buggy_answers import Bug, Variant, exercise_tests

EXERCISE = "ex06_pointer_generator"
MIX_HAND, MIX_LIMITS = "test_sentinel_by_hand", "test_sentinel_padding_and_limits"
LOSS_HAND, LOSS_GUARD = "test_sentinel_loss_by_hand", "test_sentinel_loss_guard"
COVERAGE = {"test_coverage_by_hand", "test_coverage_padding_and_gradients"}

MASKED = 'scores.masked_fill(~mask, float("-inf"))'
SHARES = "shares = candidates.softmax(dim=1)"
SCATTER = "mixed.scatter_add(1, src_ext_ids, shares[:, :-1])"
GUARD_P = "-p_target.clamp_min(EPSILON).log()"
GUARD_Q = "pointer_weight * p_pointer.clamp_min(EPSILON).log()"
SELECT = "per_step = torch.where(tgt_mask, per_step, torch.zeros_like(per_step))"
AVERAGE = "return per_step.sum() / tgt_mask.sum().clamp(min=1)"
PADDED_OUT = 'scores.masked_fill(padded, float("-inf"))'
COPIED = "copied = candidates.softmax(dim=2)[:, :, :S]"
EARLIER = "earlier = before.cumsum(dim=1)"
COV_SELECT = "overlap = torch.where(tgt_mask.unsqueeze(2), torch.minimum(copied, earlier), torch.zeros_like(copied))"
COV_AVERAGE = "return overlap.sum() / tgt_mask.sum().clamp(min=1)"

BUGS = {
    "padding_takes_a_share": Bug("sentinel_mixture", [(MASKED, "scores")], {MIX_HAND, MIX_LIMITS}),
    "padding_scored_0": Bug("sentinel_mixture", [(MASKED, "scores.masked_fill(~mask, 0.0)")], {MIX_HAND, MIX_LIMITS}),
    "scatter_not_scatter_add": Bug(
        "sentinel_mixture", [(SCATTER, "mixed.scatter(1, src_ext_ids, shares[:, :-1])")], {MIX_HAND}
    ),
    "pointer_onto_positions": Bug(
        "sentinel_mixture",
        [
            (
                SCATTER,
                "mixed.scatter_add(1, torch.arange(scores.shape[1], device=scores.device).expand_as(src_ext_ids), "
                "shares[:, :-1])",
            )
        ],
        {MIX_HAND},
    ),
    "sentinel_as_a_switch": Bug(
        "sentinel_mixture",
        [
            (
                SHARES,
                "alpha = candidates[:, :-1].softmax(dim=1)\n"
                "    switch = torch.sigmoid(sentinel_score)\n"
                "    shares = torch.cat([(1 - switch) * alpha, switch], dim=1)",
            )
        ],
        {MIX_HAND},
    ),
    "p_gen_from_the_wrong_end": Bug(
        "sentinel_mixture",
        [
            ("p_gen = shares[:, -1:]", "p_gen = shares[:, :1]"),
            (SCATTER, "mixed.scatter_add(1, src_ext_ids, shares[:, 1:])"),
        ],
        {MIX_HAND},
    ),
    "exp_without_the_max": Bug(
        "sentinel_mixture",
        [(SHARES, "shares = candidates.exp() / candidates.exp().sum(dim=1, keepdim=True)")],
        {MIX_LIMITS},
    ),
    "mask_multiplied": Bug(
        "sentinel_mixture",
        [
            (
                SHARES,
                "raw = torch.cat([scores, sentinel_score], dim=1)\n"
                "    keep = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=1)\n"
                "    weights = (raw - raw.max(dim=1, keepdim=True).values).exp() * keep\n"
                "    shares = weights / weights.sum(dim=1, keepdim=True)",
            )
        ],
        {MIX_LIMITS},
    ),
    "zeros_of_the_default_dtype": Bug(
        "sentinel_mixture",
        [("mixed = vocab_probs.new_zeros(B, V + n_oov)", "mixed = torch.zeros(B, V + n_oov)")],
        {MIX_HAND},
    ),
    "log_0": Bug("sentinel_loss", [(GUARD_P, "-p_target.log()")], {LOSS_GUARD}),
    "epsilon_added": Bug("sentinel_loss", [(GUARD_P, "-(p_target + EPSILON).log()")], {LOSS_GUARD}),
    "log_clamped_afterwards": Bug(
        "sentinel_loss", [(GUARD_P, "-p_target.log().clamp_min(-27.631021115928547)")], {LOSS_GUARD}
    ),
    "pointer_term_unguarded": Bug("sentinel_loss", [(GUARD_Q, "pointer_weight * p_pointer.log()")], {LOSS_GUARD}),
    "pointer_term_without_the_sentinel": Bug(
        "sentinel_loss",
        [("ones = vocab_probs.new_ones(B, width)", "ones = vocab_probs.new_zeros(B, width)")],
        {LOSS_HAND},
    ),
    "pointer_weight_ignored": Bug("sentinel_loss", [(GUARD_Q, "p_pointer.clamp_min(EPSILON).log()")], {LOSS_HAND}),
    "padding_counted": Bug("sentinel_loss", [(SELECT, "pass")], {LOSS_HAND}),
    "mean_over_all_positions": Bug(
        "sentinel_loss", [(AVERAGE, "return per_step.sum() / tgt_mask.numel()")], {LOSS_HAND}
    ),
    "mean_per_sequence": Bug(
        "sentinel_loss",
        [(AVERAGE, "return (per_step.sum(dim=1) / tgt_mask.sum(dim=1).clamp(min=1)).mean()")],
        {LOSS_HAND},
    ),
    "loss_of_no_real_step_is_nan": Bug(
        "sentinel_loss", [(AVERAGE, "return per_step.sum() / tgt_mask.sum()")], {LOSS_GUARD}
    ),
    "a_float32_accumulator": Bug(
        "sentinel_loss", [(AVERAGE, "return per_step.sum().float() / tgt_mask.sum().clamp(min=1)")], {LOSS_GUARD}
    ),
    "coverage_counts_the_current_step": Bug(
        "sequence_coverage_loss", [(EARLIER, "earlier = copied.cumsum(dim=1)")], COVERAGE
    ),
    "coverage_over_the_positions": Bug(
        "sequence_coverage_loss", [(EARLIER, "earlier = copied.cumsum(dim=2) - copied")], COVERAGE
    ),
    "source_padding_takes_a_share": Bug("sequence_coverage_loss", [(PADDED_OUT, "scores")], COVERAGE),
    # a TA's favourite: the softmax over every position, then the padding's shares zeroed by the mask
    "padding_zeroed_after_the_softmax": Bug(
        "sequence_coverage_loss",
        [(PADDED_OUT, "scores"), (COPIED, "copied = candidates.softmax(dim=2)[:, :, :S] * src_mask.unsqueeze(1)")],
        COVERAGE,
    ),
    "target_padding_counted": Bug(
        "sequence_coverage_loss", [(COV_SELECT, "overlap = torch.minimum(copied, earlier)")], COVERAGE
    ),
    "divided_by_B_times_T": Bug(
        "sequence_coverage_loss", [(COV_AVERAGE, "return overlap.sum() / tgt_mask.numel()")], COVERAGE
    ),
    "mean_per_summary": Bug(
        "sequence_coverage_loss",
        [(COV_AVERAGE, "return (overlap.sum(dim=(1, 2)) / tgt_mask.sum(dim=1).clamp(min=1)).mean()")],
        COVERAGE,
    ),
    "mean_of_the_steps_means": Bug(
        "sequence_coverage_loss",
        [(COV_AVERAGE, "return (overlap.sum(dim=(0, 2)) / tgt_mask.sum(dim=0).clamp(min=1)).mean()")],
        COVERAGE,
    ),
    "coverage_of_no_real_step_is_nan": Bug(
        "sequence_coverage_loss", [(COV_AVERAGE, "return overlap.sum() / tgt_mask.sum()")], {"test_coverage_by_hand"}
    ),
    # The delegating answer: chapter 6's coverage of the attention alpha_t (the task before the review), by
    # seqlab's masked_softmax and mean_overlap; the sentinel is never consulted.
    "coverage_of_attention_through_seqlab": Bug(
        "sequence_coverage_loss",
        [
            (
                "S = scores.shape[2]",
                "from types import SimpleNamespace\n\n"
                "    from seqlab.models.attention import masked_softmax\n"
                "    from seqlab.models.pointer import mean_overlap\n\n"
                "    attn = masked_softmax(scores, src_mask)\n"
                '    out = {"attn": attn, "coverage": attn.cumsum(dim=1) - attn}\n'
                "    return mean_overlap(out, SimpleNamespace(src_mask=src_mask, tgt_mask=tgt_mask))",
            )
        ],
        {"test_coverage_by_hand"},
    ),
    "sentinel_counted_as_a_position": Bug(
        "sequence_coverage_loss", [(COPIED, "copied = candidates.softmax(dim=2)")], COVERAGE
    ),
    "exp_without_the_max_in_coverage": Bug(
        "sequence_coverage_loss",
        [(COPIED, "copied = (candidates.exp() / candidates.exp().sum(dim=2, keepdim=True))[:, :, :S]")],
        {"test_coverage_padding_and_gradients"},
    ),
}

VARIANTS = {
    "mixture_through_seqlab": Variant(
        "sentinel_mixture",
        """def sentinel_mixture(vocab_probs, scores, sentinel_score, src_ext_ids, n_oov, mask):
    import seqlab.models.pointer
    from seqlab.models.attention import masked_softmax

    alpha = masked_softmax(scores.unsqueeze(1), mask).squeeze(1)  # (B, S): the book's attention
    real = scores.masked_fill(~mask, float("-inf"))
    p_gen = torch.sigmoid(sentinel_score - torch.logsumexp(real, dim=1, keepdim=True))  # e^s / (e^s + sum e^e)
    return seqlab.models.pointer.final_distribution(vocab_probs, alpha, p_gen, src_ext_ids, n_oov)
""",
    ),
    "mixture_row_by_row": Variant(
        "sentinel_mixture",
        """def sentinel_mixture(vocab_probs, scores, sentinel_score, src_ext_ids, n_oov, mask):
    rows = []
    for b in range(vocab_probs.shape[0]):
        real = mask[b]
        weights = torch.softmax(torch.cat([scores[b][real], sentinel_score[b]]), dim=0)
        row = torch.cat([weights[-1] * vocab_probs[b], vocab_probs.new_zeros(n_oov)])
        rows.append(row.index_add(0, src_ext_ids[b][real], weights[:-1]))
    if not rows:
        return vocab_probs.new_zeros(0, vocab_probs.shape[1] + n_oov)
    return torch.stack(rows)
""",
    ),
    "mixture_one_hot": Variant(
        "sentinel_mixture",
        """def sentinel_mixture(vocab_probs, scores, sentinel_score, src_ext_ids, n_oov, mask):
    keep = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=1)
    logits = torch.where(keep, torch.cat([scores, sentinel_score], dim=1), torch.tensor(float("-inf")).to(scores))
    logits = logits - logits.max(dim=1, keepdim=True).values
    weights = logits.exp() / logits.exp().sum(dim=1, keepdim=True)
    onehot = torch.nn.functional.one_hot(src_ext_ids, vocab_probs.shape[1] + n_oov).to(weights)
    copied = torch.einsum("bs,bsw->bw", weights[:, :-1], onehot)
    return torch.nn.functional.pad(weights[:, -1:] * vocab_probs, (0, n_oov)) + copied
""",
    ),
    "loss_flattened": Variant(
        "sentinel_loss",
        """def sentinel_loss(
    vocab_probs, scores, sentinel_score, src_ext_ids, n_oov, mask, tgt_out, tgt_mask, pointer_weight
):
    B, T, V = vocab_probs.shape
    S = scores.shape[2]
    ids = src_ext_ids.repeat_interleave(T, dim=0)  # (B * T, S), example-major like the reshapes
    real_src = mask.repeat_interleave(T, dim=0)
    flat_scores = scores.reshape(B * T, S)
    flat_sentinel = sentinel_score.reshape(B * T, 1)
    P = sentinel_mixture(vocab_probs.reshape(B * T, V), flat_scores, flat_sentinel, ids, n_oov, real_src)
    y = tgt_out.reshape(B * T, 1)
    p_y = P.gather(1, y).squeeze(1)
    shares = torch.cat([flat_scores.masked_fill(~real_src, -torch.inf), flat_sentinel], dim=1).softmax(dim=1)
    hits = (ids == y) & real_src
    q = shares[:, -1] + torch.where(hits, shares[:, :-1], torch.zeros_like(shares[:, :-1])).sum(dim=1)
    terms = -torch.log(torch.clamp(p_y, min=EPSILON)) - pointer_weight * torch.log(torch.clamp(q, min=EPSILON))
    real = tgt_mask.reshape(-1)
    return torch.where(real, terms, torch.zeros_like(terms)).sum() / torch.clamp(real.sum(), min=1)
""",
    ),
    "loss_step_by_step": Variant(
        "sentinel_loss",
        """def sentinel_loss(
    vocab_probs, scores, sentinel_score, src_ext_ids, n_oov, mask, tgt_out, tgt_mask, pointer_weight
):
    B, T, V = vocab_probs.shape
    terms = []
    for b in range(B):
        for t in range(T):
            if not tgt_mask[b, t]:
                continue
            args = (scores[b : b + 1, t], sentinel_score[b : b + 1, t], src_ext_ids[b : b + 1])
            P = sentinel_mixture(vocab_probs[b : b + 1, t], *args, n_oov, mask[b : b + 1])[0]
            everything = sentinel_mixture(torch.ones_like(P).unsqueeze(0), *args, 0, mask[b : b + 1])[0]
            y = tgt_out[b, t]
            guarded = torch.clamp(P[y], min=EPSILON), torch.clamp(everything[y], min=EPSILON)
            terms.append(-guarded[0].log() - pointer_weight * guarded[1].log())
    if not terms:
        return vocab_probs.new_zeros(())
    return torch.stack(terms).sum() / len(terms)
""",
    ),
    "loss_selected": Variant(
        "sentinel_loss",
        """def sentinel_loss(
    vocab_probs, scores, sentinel_score, src_ext_ids, n_oov, mask, tgt_out, tgt_mask, pointer_weight
):
    B, T, V = vocab_probs.shape
    steps = [
        sentinel_mixture(vocab_probs[:, t], scores[:, t], sentinel_score[:, t], src_ext_ids, n_oov, mask)
        for t in range(T)
    ]
    P = torch.stack(steps, dim=1)  # (B, T, V + n_oov)
    keep = torch.cat([mask.unsqueeze(1).expand(B, T, -1), torch.ones_like(tgt_mask).unsqueeze(2)], dim=2)
    logits = torch.cat([scores, sentinel_score], dim=2).masked_fill(~keep, float("-inf"))
    shares = logits.softmax(dim=2)  # (B, T, S + 1)
    on_target = (src_ext_ids.unsqueeze(1) == tgt_out.unsqueeze(2)) & mask.unsqueeze(1)  # (B, T, S)
    q = shares[..., -1] + (shares[..., :-1] * on_target).sum(dim=2)
    p_y = P.gather(2, tgt_out.unsqueeze(2)).squeeze(2)
    p_y, q = p_y[tgt_mask], q[tgt_mask]  # (N,)
    if p_y.numel() == 0:
        return vocab_probs.new_zeros(())
    return (-p_y.clamp_min(EPSILON).log() - pointer_weight * q.clamp_min(EPSILON).log()).mean()
""",
    ),
    "coverage_through_seqlab": Variant(
        "sequence_coverage_loss",
        """def sequence_coverage_loss(scores, sentinel_score, src_mask, tgt_mask):
    from seqlab.models.pointer import coverage_loss

    B, T, S = scores.shape
    copied = scores.new_zeros(B, S)
    total = scores.new_zeros(())
    for t in range(T):
        logits = torch.cat([scores[:, t].masked_fill(~src_mask, -torch.inf), sentinel_score[:, t]], dim=1)
        shares = torch.softmax(logits, dim=1)[:, :S]
        rows = tgt_mask[:, t]
        total = total + coverage_loss(shares[rows], copied[rows], src_mask[rows]) * rows.sum()
        copied = copied + shares
    return total / max(int(tgt_mask.sum()), 1)
""",
    ),
    "coverage_triangular": Variant(
        "sequence_coverage_loss",
        """def sequence_coverage_loss(scores, sentinel_score, src_mask, tgt_mask):
    T = scores.shape[1]
    keep = torch.where(src_mask[:, None, :], scores, torch.full_like(scores, -torch.inf))
    norm = torch.logsumexp(torch.cat([keep, sentinel_score], dim=2), dim=2, keepdim=True)
    shares = (keep - norm).exp()  # exp(-inf) = 0 at the padding
    earlier = torch.ones(T, T, device=scores.device).tril(diagonal=-1).to(scores.dtype)  # [t, u] = 1 where u < t
    coverage = torch.einsum("tu,bus->bts", earlier, shares)
    paid = torch.minimum(shares, coverage) * tgt_mask[:, :, None]
    n = tgt_mask.sum()
    return paid.sum() / n if n > 0 else paid.sum() * 0
""",
    ),
    "coverage_cumsum_minus_step": Variant(
        "sequence_coverage_loss",
        """def sequence_coverage_loss(scores, sentinel_score, src_mask, tgt_mask):
    from seqlab.models.attention import masked_softmax

    B, T, S = scores.shape
    everything = torch.cat([scores, sentinel_score], dim=2)
    real = torch.cat([src_mask, src_mask.new_ones(B, 1)], dim=1)  # (B, S + 1): the sentinel is always real
    shares = masked_softmax(everything, real)[..., :-1]
    coverage = shares.cumsum(dim=1) - shares
    overlap = torch.minimum(shares, coverage).masked_fill(~tgt_mask.unsqueeze(2), 0.0)
    return overlap.sum() / tgt_mask.sum().clamp(min=1)
""",
    ),
    # The most delegating answer the text allows: the shares from the student's own sentinel_mixture (a zero-width
    # vocabulary and one column per position), the coverage built, seqlab.models.pointer.mean_overlap for the masked
    # mean. The shares and their coverage are the student's: full marks, as it should.
    "coverage_with_sentinel_mixture_and_mean_overlap": Variant(
        "sequence_coverage_loss",
        """def sequence_coverage_loss(scores, sentinel_score, src_mask, tgt_mask):
    from types import SimpleNamespace

    from seqlab.models.pointer import mean_overlap

    B, T, S = scores.shape
    positions = torch.arange(S, device=scores.device).expand(B, S)
    nothing = scores.new_zeros(B, 0)
    shares = torch.stack(
        [sentinel_mixture(nothing, scores[:, t], sentinel_score[:, t], positions, S, src_mask) for t in range(T)], dim=1
    )
    out = {"attn": shares, "coverage": shares.cumsum(dim=1) - shares}
    return mean_overlap(out, SimpleNamespace(src_mask=src_mask, tgt_mask=tgt_mask))
""",
    ),
}

globals().update(exercise_tests(EXERCISE, BUGS, VARIANTS))  # the fixture `graded` and the file's five tests
