"""Exercise 8's realistic wrong answers score below full marks (tests/buggy_answers.py says how).

| bug | the edit | must fail |
|---|---|---|
| scaling by d | scores ``/ d`` instead of ``/ math.sqrt(d)`` | the example by hand, torch |
| heads split along the wrong axis | ``reshape(B, h, L, d)``: positions cut into heads | split_heads, torch |
| mask inverted | True read as "ignore" (torch's convention) | masks, torch |
| softmax over the queries | ``softmax(dim=-2)`` | the example by hand, masks, torch |
"""

from buggy_answers import Bug, buggy_answer_tests, graded_fixture

BUGS = {
    "scaling_by_d": Bug(
        "scaled_dot_product_attention",
        [("/ math.sqrt(d)", "/ d")],
        {"test_attention_by_hand", "test_matches_torch"},
    ),
    "heads_split_along_the_wrong_axis": Bug(
        "split_heads",
        [
            (".reshape(B, L, num_heads, E // num_heads).transpose(1, 2)", ".reshape(B, num_heads, L, E // num_heads)"),
            (".transpose(1, 2).reshape(B, L, num_heads * d)", ".reshape(B, L, num_heads * d)"),  # its inverse
        ],
        {"test_split_heads", "test_matches_torch"},
    ),
    "mask_inverted": Bug(
        "scaled_dot_product_attention",
        [("masked_fill(~allowed,", "masked_fill(allowed,"), ("weights * allowed", "weights * ~allowed")],
        {"test_attention_masks", "test_matches_torch"},
    ),
    "softmax_over_the_queries": Bug(
        "scaled_dot_product_attention",
        [("torch.softmax(scores, dim=-1)", "torch.softmax(scores, dim=-2)")],
        {"test_attention_by_hand", "test_attention_masks", "test_matches_torch"},
    ),
}
graded = graded_fixture("ex08_multihead_attention", BUGS)
test_the_solution_scores_full_marks, test_a_buggy_answer_scores_below_full_marks = buggy_answer_tests(BUGS)
