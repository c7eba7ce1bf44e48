"""Exercise 5's realistic wrong answers score below full marks (tests/buggy_answers.py says how).

| bug | the edit | must fail |
|---|---|---|
| bilinear with W transposed | ``keys @ W`` where ``W k`` is ``keys @ W.T`` | bilinear |
| dot summed over the keys | the einsum sums over the key positions, not the features | dot, gradients |
| dot scores transposed | ``(B, S, T)``: every key against every query | dot, gradients |
| scaled by d | ``/ d`` instead of ``/ sqrt(d)`` | dot, gradients |
| scaled by the number of queries | ``sqrt(T)``: ``shape[1]`` for ``shape[-1]`` | dot, gradients |
| cosine without the eps guard | lengths not clamped: a zero vector gives 0/0 | cosine |
| cosine with a NaN gradient at zero | ``sqrt(sum of squares)`` clamped afterwards | cosine |
| cosine over the wrong dimension | the lengths taken over the positions (``dim=1``) | cosine, gradients |
| cosine with only the keys normalised | the queries keep their lengths | cosine, gradients |
"""

from buggy_answers import Bug, buggy_answer_tests, graded_fixture

MAPPED = "mapped_keys = torch.matmul(keys, weight.transpose(0, 1))"
EINSUM = 'torch.einsum("btd,bsd->bts", queries, keys)'
QUERY_LENGTHS = "query_lengths = torch.linalg.vector_norm(queries, dim=-1, keepdim=True).clamp(min=eps)"
KEY_LENGTHS = "key_lengths = torch.linalg.vector_norm(keys, dim=-1, keepdim=True).clamp(min=eps)"
BUGS = {
    "bilinear_with_W_transposed": Bug(
        "bilinear_scores", [(MAPPED, "mapped_keys = torch.matmul(keys, weight)")], {"test_bilinear"}
    ),
    "dot_summed_over_the_keys": Bug(
        "dot_scores",
        [(EINSUM, EINSUM.replace("->bts", "->btd"))],
        {"test_dot_and_scaled_dot", "test_gradients"},
    ),
    "dot_scores_transposed": Bug(
        "dot_scores",
        [(EINSUM, EINSUM.replace("->bts", "->bst"))],
        {"test_dot_and_scaled_dot", "test_gradients"},
    ),
    "scaled_by_d": Bug(
        "scaled_dot_scores",
        [("unscaled / math.sqrt(queries.shape[-1])", "unscaled / queries.shape[-1]")],
        {"test_dot_and_scaled_dot", "test_gradients"},
    ),
    "scaled_by_the_number_of_queries": Bug(
        "scaled_dot_scores",
        [("unscaled / math.sqrt(queries.shape[-1])", "unscaled / math.sqrt(queries.shape[1])")],
        {"test_dot_and_scaled_dot", "test_gradients"},
    ),
    "cosine_without_the_eps_guard": Bug(
        "cosine_scores",
        [
            (QUERY_LENGTHS, QUERY_LENGTHS.replace(".clamp(min=eps)", "")),
            (KEY_LENGTHS, KEY_LENGTHS.replace(".clamp(min=eps)", "")),
        ],
        {"test_cosine"},
    ),
    "cosine_nan_gradient_at_zero": Bug(
        "cosine_scores",
        [
            (QUERY_LENGTHS, "query_lengths = queries.pow(2).sum(dim=-1, keepdim=True).sqrt().clamp(min=eps)"),
            (KEY_LENGTHS, "key_lengths = keys.pow(2).sum(dim=-1, keepdim=True).sqrt().clamp(min=eps)"),
        ],
        {"test_cosine"},
    ),
    "cosine_over_the_positions": Bug(
        "cosine_scores",
        [
            (QUERY_LENGTHS, QUERY_LENGTHS.replace("dim=-1", "dim=1")),
            (KEY_LENGTHS, KEY_LENGTHS.replace("dim=-1", "dim=1")),
        ],
        {"test_cosine", "test_gradients"},
    ),
    "cosine_with_only_the_keys_normalised": Bug(
        "cosine_scores",
        [
            (
                "unit_queries, unit_keys = queries / query_lengths, keys / key_lengths",
                "unit_queries, unit_keys = queries, keys / key_lengths",
            )
        ],
        {"test_cosine", "test_gradients"},
    ),
}
graded = graded_fixture("ex05_scoring_functions", BUGS)
test_the_solution_scores_full_marks, test_a_buggy_answer_scores_below_full_marks = buggy_answer_tests(BUGS)
