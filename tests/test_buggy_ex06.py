"""Exercise 6's realistic wrong answers score below full marks (tests/buggy_answers.py says how).

"final distribution" is its three tests, "loss" the loss by hand and against seqlab.

| bug | the edit | must fail |
|---|---|---|
| p_gen on the wrong part | vocabulary weighted by 1 − p_gen, attention by p_gen | final distribution, loss |
| attention onto positions | weight of position i added to column i, not to its extended id | final distribution |
| scatter, not scatter_add | a repeated word keeps one weight; copying overwrites generating | final distribution |
| switch weights in the equation's order | ``[ctx; s; embed]`` against the weight's ``[w_s; w_ctx; w_y]`` | p_gen |
| switch without its bias | ``b_gen`` left out | p_gen |
| log 0 | no guard: ``-log 0 = inf``, NaN gradients | log 0 guard |
| EPSILON added | ``log(P + EPSILON)``: finite, but a gradient of 10^12 through a step with P = 0 | log 0 guard |
| log clamped afterwards | ``log(P).clamp_min(log EPSILON)``: a finite loss, NaN gradients | log 0 guard |
| padding counted | the padded target steps' terms kept | loss |
| mean over all positions | divided by B · T instead of the real steps | loss |
| mean per sequence | each example's mean, then the batch's | loss |
| coverage counts the current step | ``min(α_t, cov_t + α_t)`` | both coverage tests |
| coverage ignores the mask | padded positions counted | coverage over steps and mask |
"""

from buggy_answers import Bug, buggy_answer_tests, graded_fixture

FINAL_TESTS = {"test_final_by_hand", "test_final_copies", "test_final_limits_and_gradients"}
LOSS_TESTS = {"test_loss_by_hand", "test_loss_matches_seqlab"}
GUARD = "log_picked = picked.clamp_min(EPSILON).log()"
MASKING = "log_picked = torch.where(tgt_mask, log_picked, torch.zeros_like(log_picked))"
AVERAGE = "return -log_picked.sum() / tgt_mask.sum().clamp(min=1)"
BUGS = {
    "p_gen_on_the_wrong_part": Bug(
        "final_distribution",
        [
            (
                "torch.cat([p_gen * vocab_probs, unknown_columns], dim=1)",
                "torch.cat([(1 - p_gen) * vocab_probs, unknown_columns], dim=1)",
            ),
            ("copied = (1 - p_gen) * attn", "copied = p_gen * attn"),
        ],
        FINAL_TESTS | LOSS_TESTS,
    ),
    "attention_onto_positions": Bug(
        "final_distribution",
        [
            (
                "scatter_add(1, src_ext_ids, copied)",
                "scatter_add(1, torch.arange(attn.shape[1], device=attn.device).expand_as(src_ext_ids), copied)",
            )
        ],
        FINAL_TESTS,
    ),
    "scatter_not_scatter_add": Bug(
        "final_distribution", [("scatter_add(1, src_ext_ids, copied)", "scatter(1, src_ext_ids, copied)")], FINAL_TESTS
    ),
    "switch_weights_in_the_equations_order": Bug(
        "generation_probability",
        [("torch.cat([s, ctx, y_emb], dim=1)", "torch.cat([ctx, s, y_emb], dim=1)")],
        {"test_p_gen"},
    ),
    "switch_without_its_bias": Bug(
        "generation_probability", [("features @ weight.T + bias", "features @ weight.T")], {"test_p_gen"}
    ),
    "log_0": Bug("pointer_loss", [(GUARD, "log_picked = picked.log()")], {"test_loss_log0_guard"}),
    "epsilon_added": Bug("pointer_loss", [(GUARD, "log_picked = (picked + EPSILON).log()")], {"test_loss_log0_guard"}),
    "log_clamped_afterwards": Bug(
        "pointer_loss",
        [
            (GUARD, "log_picked = picked.log().clamp_min(math.log(EPSILON))"),
            ("T = tgt_out.shape[1]", "import math\n    T = tgt_out.shape[1]"),
        ],
        {"test_loss_log0_guard"},
    ),
    "padding_counted": Bug("pointer_loss", [(MASKING, "log_picked = log_picked")], LOSS_TESTS),
    "mean_over_all_positions": Bug(
        "pointer_loss", [(AVERAGE, "return -log_picked.sum() / tgt_mask.numel()")], LOSS_TESTS
    ),
    "mean_per_sequence": Bug(
        "pointer_loss", [(AVERAGE, "return (-log_picked.sum(dim=1) / tgt_mask.sum(dim=1)).mean()")], LOSS_TESTS
    ),
    "coverage_counts_the_current_step": Bug(
        "coverage_loss",
        [("torch.minimum(attn, coverage)", "torch.minimum(attn, coverage + attn)")],
        {"test_coverage_by_hand", "test_coverage_over_steps_and_mask"},
    ),
    "coverage_ignores_the_mask": Bug(
        "coverage_loss",
        [("attended_again = torch.where(mask, attended_again, torch.zeros_like(attended_again))", "pass")],
        {"test_coverage_over_steps_and_mask"},
    ),
}
graded = graded_fixture("ex06_pointer_generator", BUGS)
test_the_solution_scores_full_marks, test_a_buggy_answer_scores_below_full_marks = buggy_answer_tests(BUGS)
