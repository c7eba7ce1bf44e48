"""Exercise 7's realistic wrong answers score below full marks (tests/buggy_answers.py says how).

| bug | the edit | must fail |
|---|---|---|
| padding attended | no mask at all: neither filled before the softmax nor applied after it | by hand, seqlab |
| softmax over the wrong axis | ``softmax(dim=0)``: over the batch | by hand, rows, seqlab |
| weights not summing to one | the mask applied after a softmax over every position | by hand, rows, seqlab |
"""

from buggy_answers import Bug, buggy_answer_tests, graded_fixture

FILL = "filled = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)"
BUGS = {
    "padding_attended": Bug(
        "masked_softmax",
        [(FILL, "filled = scores"), ("return weights * mask", "return weights")],
        {"test_masked_softmax_by_hand", "test_pool_matches_seqlab"},
    ),
    "softmax_over_the_batch": Bug(
        "masked_softmax",
        [("torch.softmax(filled, dim=-1)", "torch.softmax(filled, dim=0)")],
        {"test_masked_softmax_by_hand", "test_masked_softmax_rows", "test_pool_matches_seqlab"},
    ),
    "weights_not_summing_to_one": Bug(
        "masked_softmax",
        [(FILL, "filled = scores")],
        {"test_masked_softmax_by_hand", "test_masked_softmax_rows", "test_pool_matches_seqlab"},
    ),
}
graded = graded_fixture("ex07_attention_pooling", BUGS)
test_the_solution_scores_full_marks, test_a_buggy_answer_scores_below_full_marks = buggy_answer_tests(BUGS)
