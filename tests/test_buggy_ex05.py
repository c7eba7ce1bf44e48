"""Exercise 5's realistic answers, wrong and right, against its tests (tests/buggy_answers.py says how).

Task 1 is low-rank bilinear scores, task 2 ALiBi's scaled dot scores (both ways: test 2; causal: test 3),
task 3 cosine scores with a key strength per query (scores: test 4; zero vectors: test 5). The tasks call no
earlier task's function, so no test cell needs an earlier task's reference.

| bug | the edit | must fail |
|---|---|---|
| low-rank: factors swapped | queries projected by W_K, keys by W_Q | low-rank |
| low-rank: key factor read as a Linear weight | ``keys @ W_K.T`` for W_K^T k | low-rank |
| low-rank: scores transposed | (B, S, T): every key against every query | low-rank |
| low-rank: no check on d | no ValueError when the factors' d differ | low-rank |
| low-rank: W formed | ``queries @ (W_Q @ W_K.T) @ keys^T``: right scores, the (Dq, Dk) W the rank saves | low-rank |
| low-rank: delegated to BilinearScorer | the chapter's scorer with ``weight = W_Q @ W_K.T``: W formed | low-rank |
| ALiBi: positions aligned at the end | query t at position t + S - T (a key-value cache's alignment) | alibi, causal |
| ALiBi: penalty added | ``+ slope * abs(t - i)`` | alibi, causal |
| ALiBi: penalty scaled too | ``(q . k - slope * abs(t - i)) / sqrt(d)`` | alibi, causal |
| ALiBi: signed distance | ``t - i`` without the absolute value (the paper's causal form used both ways) | alibi |
| ALiBi: scaled by d | ``/ d`` instead of ``/ sqrt(d)`` | alibi, causal |
| ALiBi: scaled by the number of queries | ``sqrt(T)``: ``shape[1]`` for ``shape[-1]`` | alibi, causal |
| ALiBi: no size check | no ValueError when query and key sizes differ | alibi |
| causal: diagonal masked | a query cannot see its own position (``i >= t``) | causal |
| causal: past masked | the keys before the query get -inf (``i < t``) | causal |
| causal: lowest float for -inf | ``torch.finfo(dtype).min`` instead of -inf | causal |
| causal: infinite distance times the slope | future keys at distance inf, times slope 0 is NaN | causal |
| key strength: no eps guard | lengths not clamped: a zero vector gives 0/0 | zero vectors |
| key strength: NaN gradient at zero | ``sqrt(sum of squares)`` clamped afterwards | zero vectors |
| key strength: lengths over the positions | the norms taken over ``dim=1`` | key strength |
| key strength: only the keys normalised | the queries keep their lengths | key strength |
| key strength: kappa per key | kappa broadcast along the keys, not the queries | key strength |
| key strength: exp for softplus | ``exp(w . q + b)`` | key strength |
| key strength: kappa from the unit query | ``w . q / max(|q|, eps) + b`` | key strength |
| key strength: bias outside the softplus | ``softplus(w . q) + b`` | key strength |
| key strength: kappa detached | ``softplus(...).detach()``: no gradient reaches w_kappa, b_kappa | key strength |
| key strength: kappa forgotten | plain cosine scores | key strength |
| key strength: kappa as a temperature | cosines divided by kappa_t, not multiplied | key strength |

The issue's case "cosine with ``norm + eps``" is decided in task 3's text: the formula says ``max(norm, eps)``,
``norm + eps`` is accepted, and the tests' tolerance (1e-5) is far above the two guards' difference on the
vectors they use (under 1e-6) and far below any bug's; it is a variant here (``norm_plus_eps``).

Review (issue 24): task 1's low-rank scores were, for every input, the chapter's bilinear scores with
W = W_Q W_K^T, so ``BilinearScorer`` with that weight earned full marks (it was a variant here). The text now
asks for the scores without W, or any tensor of Dq * Dk numbers, and test 1 records the largest tensor torch's
operations make; forming W and the delegation are bugs, and reusing ``DotScorer`` on the two projections is a
variant.
"""

from buggy_answers import Bug, Variant, exercise_tests

EXERCISE = "ex05_scoring_functions"

# Task 1: low_rank_bilinear_scores
PROJECT_KEYS = "projected_keys = keys @ key_factor  # (B, S, d): W_K^T k, once per key"
PROJECT_QUERIES = "projected_queries = queries @ query_factor  # (B, T, d): W_Q^T q"
LOW_RANK_PRODUCT = "return projected_queries @ projected_keys.transpose(1, 2)"
RANK_CHECK = "if query_factor.shape[-1] != key_factor.shape[-1]:"
# Task 2: alibi_scores
PENALTY = "penalty = slope * offsets.abs().to(queries.dtype)  # (T, S)"
SCORES = 'scores = torch.einsum("btd,bsd->bts", queries, keys) / math.sqrt(size) - penalty  # (B, T, S)'
SIZE_CHECK = "if size != key_size:"
MASK = "scores = scores.masked_fill(offsets < 0, -math.inf)  # the keys after the query"
# Task 3: key_strength_scores
STRENGTH = "strength = torch.nn.functional.softplus(queries @ w_kappa + b_kappa)"
QUERY_LENGTHS = "query_lengths = torch.linalg.vector_norm(queries, dim=-1, keepdim=True).clamp(min=eps)"
KEY_LENGTHS = "key_lengths = torch.linalg.vector_norm(keys, dim=-1, keepdim=True).clamp(min=eps)"
COSINES = "cosines = (queries / query_lengths) @ (keys / key_lengths).transpose(1, 2)"
RETURN_STRENGTH = "return strength.unsqueeze(-1) * cosines"

LOW_RANK, ALIBI, CAUSAL = {"test_low_rank_bilinear"}, {"test_alibi"}, {"test_alibi_causal"}
KEY_STRENGTH, ZEROS = {"test_key_strength"}, {"test_key_strength_zero_vectors"}
BUGS = {
    # Task 1
    "low_rank_factors_swapped": Bug(
        "low_rank_bilinear_scores",
        [
            (PROJECT_KEYS, PROJECT_KEYS.replace("keys @ key_factor", "keys @ query_factor")),
            (PROJECT_QUERIES, PROJECT_QUERIES.replace("queries @ query_factor", "queries @ key_factor")),
        ],
        LOW_RANK,
    ),
    "low_rank_key_factor_read_as_a_linear_weight": Bug(
        "low_rank_bilinear_scores", [(PROJECT_KEYS, PROJECT_KEYS.replace("key_factor", "key_factor.T"))], LOW_RANK
    ),
    "low_rank_scores_transposed": Bug(
        "low_rank_bilinear_scores",
        [(LOW_RANK_PRODUCT, "return projected_keys @ projected_queries.transpose(1, 2)")],
        LOW_RANK,
    ),
    "low_rank_no_check_on_d": Bug("low_rank_bilinear_scores", [(RANK_CHECK, "if False:")], LOW_RANK),
    "low_rank_forms_w": Bug(
        "low_rank_bilinear_scores",
        [
            (PROJECT_KEYS, "weight = query_factor @ key_factor.T  # (Dq, Dk): W"),
            (PROJECT_QUERIES, "pass"),
            (LOW_RANK_PRODUCT, "return queries @ weight @ keys.transpose(1, 2)"),
        ],
        LOW_RANK,
    ),
    "low_rank_delegated_to_bilinear_scorer": Bug(
        "low_rank_bilinear_scores",
        [
            (
                PROJECT_KEYS,
                "from seqlab.models.attention import BilinearScorer\n"
                "    scorer = BilinearScorer(queries.shape[-1], keys.shape[-1]).to(queries)",
            ),
            (PROJECT_QUERIES, "pass"),
            (
                LOW_RANK_PRODUCT,
                "return torch.func.functional_call(scorer, {'weight': query_factor @ key_factor.T}, (queries, keys))",
            ),
        ],
        LOW_RANK,
    ),
    # Task 2
    "alibi_penalty_added": Bug("alibi_scores", [(SCORES, SCORES.replace("- penalty", "+ penalty"))], ALIBI | CAUSAL),
    "alibi_penalty_scaled_too": Bug(
        "alibi_scores",
        [(SCORES, 'scores = (torch.einsum("btd,bsd->bts", queries, keys) - penalty) / math.sqrt(size)')],
        ALIBI | CAUSAL,
    ),
    "alibi_signed_distance": Bug(
        "alibi_scores", [(PENALTY, "penalty = slope * offsets.to(queries.dtype)  # (T, S)")], ALIBI
    ),
    "alibi_scaled_by_d": Bug("alibi_scores", [(SCORES, SCORES.replace("math.sqrt(size)", "size"))], ALIBI | CAUSAL),
    "alibi_scaled_by_the_number_of_queries": Bug(
        "alibi_scores", [(SCORES, SCORES.replace("math.sqrt(size)", "math.sqrt(queries.shape[1])"))], ALIBI | CAUSAL
    ),
    "alibi_no_size_check": Bug("alibi_scores", [(SIZE_CHECK, "if False:")], ALIBI),
    "alibi_positions_aligned_at_the_end": Bug(
        "alibi_scores",
        [
            (
                "query_positions = torch.arange(queries.shape[1], device=queries.device).unsqueeze(1)",
                "query_positions = (torch.arange(queries.shape[1], device=queries.device) + keys.shape[1]"
                " - queries.shape[1]).unsqueeze(1)",
            )
        ],
        ALIBI | CAUSAL,
    ),
    "causal_diagonal_masked": Bug("alibi_scores", [(MASK, MASK.replace("offsets < 0", "offsets <= 0"))], CAUSAL),
    "causal_past_masked": Bug("alibi_scores", [(MASK, MASK.replace("offsets < 0", "offsets > 0"))], CAUSAL),
    "causal_lowest_float_for_minus_inf": Bug(
        "alibi_scores", [(MASK, MASK.replace("-math.inf", "torch.finfo(scores.dtype).min"))], CAUSAL
    ),
    "causal_infinite_distance_times_the_slope": Bug(
        "alibi_scores",
        [
            (
                PENALTY,
                "distances = offsets.abs().to(queries.dtype)  # (T, S)\n"
                "    if causal:\n"
                "        distances = distances.masked_fill(offsets < 0, math.inf)  # the keys after the query\n"
                "    penalty = slope * distances  # (T, S)",
            ),
            (MASK, "pass"),
        ],
        CAUSAL,
    ),
    # Task 3
    "key_strength_no_eps_guard": Bug(
        "key_strength_scores",
        [
            (QUERY_LENGTHS, QUERY_LENGTHS.replace(".clamp(min=eps)", "")),
            (KEY_LENGTHS, KEY_LENGTHS.replace(".clamp(min=eps)", "")),
        ],
        ZEROS,
    ),
    "key_strength_nan_gradient_at_zero": Bug(
        "key_strength_scores",
        [
            (QUERY_LENGTHS, "query_lengths = queries.pow(2).sum(dim=-1, keepdim=True).sqrt().clamp(min=eps)"),
            (KEY_LENGTHS, "key_lengths = keys.pow(2).sum(dim=-1, keepdim=True).sqrt().clamp(min=eps)"),
        ],
        ZEROS,
    ),
    "key_strength_lengths_over_the_positions": Bug(
        "key_strength_scores",
        [
            (QUERY_LENGTHS, QUERY_LENGTHS.replace("dim=-1", "dim=1")),
            (KEY_LENGTHS, KEY_LENGTHS.replace("dim=-1", "dim=1")),
        ],
        KEY_STRENGTH,
    ),
    "key_strength_only_the_keys_normalised": Bug(
        "key_strength_scores", [(COSINES, "cosines = queries @ (keys / key_lengths).transpose(1, 2)")], KEY_STRENGTH
    ),
    "key_strength_kappa_per_key": Bug(
        "key_strength_scores", [(RETURN_STRENGTH, "return strength.unsqueeze(1) * cosines")], KEY_STRENGTH
    ),
    "key_strength_exp_for_softplus": Bug(
        "key_strength_scores", [(STRENGTH, "strength = torch.exp(queries @ w_kappa + b_kappa)")], KEY_STRENGTH
    ),
    "key_strength_kappa_from_the_unit_query": Bug(
        "key_strength_scores",
        [
            (STRENGTH, "pass"),
            (
                COSINES,
                COSINES + "\n    strength = torch.nn.functional.softplus("
                "(queries / query_lengths).squeeze(-1) @ w_kappa + b_kappa)",
            ),
        ],
        KEY_STRENGTH,
    ),
    "key_strength_bias_outside_the_softplus": Bug(
        "key_strength_scores",
        [(STRENGTH, "strength = torch.nn.functional.softplus(queries @ w_kappa) + b_kappa")],
        KEY_STRENGTH,
    ),
    "key_strength_kappa_detached": Bug(
        "key_strength_scores",
        [(STRENGTH, "strength = torch.nn.functional.softplus(queries @ w_kappa + b_kappa).detach()")],
        KEY_STRENGTH,
    ),
    "key_strength_kappa_forgotten": Bug("key_strength_scores", [(RETURN_STRENGTH, "return cosines")], KEY_STRENGTH),
    "key_strength_kappa_as_a_temperature": Bug(
        "key_strength_scores", [(RETURN_STRENGTH, "return cosines / strength.unsqueeze(-1)")], KEY_STRENGTH
    ),
}

VARIANTS = {
    # Task 1
    "low_rank_einsum": Variant(
        "low_rank_bilinear_scores",
        """def low_rank_bilinear_scores(queries, keys, query_factor, key_factor):
    if query_factor.size(-1) != key_factor.size(-1):
        raise ValueError(f"rank mismatch: {query_factor.size(-1)} vs {key_factor.size(-1)}")
    return torch.einsum("btq,qr,bsk,kr->bts", queries, query_factor, keys, key_factor)
""",
    ),
    "low_rank_sum_over_columns": Variant(
        "low_rank_bilinear_scores",
        """def low_rank_bilinear_scores(queries, keys, query_factor, key_factor):
    d = query_factor.shape[1]
    if key_factor.shape[1] != d:
        raise ValueError(f"d differs: W_Q {tuple(query_factor.shape)}, W_K {tuple(key_factor.shape)}")
    scores = 0
    for r in range(d):  # one rank-one bilinear score per column pair
        on_queries = queries @ query_factor[:, r]  # (B, T)
        on_keys = keys @ key_factor[:, r]  # (B, S)
        scores = scores + on_queries.unsqueeze(2) * on_keys.unsqueeze(1)  # (B, T, S)
    return scores
""",
    ),
    "low_rank_reuses_dot_scorer": Variant(
        "low_rank_bilinear_scores",
        """from seqlab.models.attention import DotScorer


def low_rank_bilinear_scores(queries, keys, query_factor, key_factor):
    if query_factor.shape[1] != key_factor.shape[1]:
        raise ValueError(f"the factors' d: {query_factor.shape[1]} and {key_factor.shape[1]}")
    return DotScorer()(queries @ query_factor, keys @ key_factor)  # the dot score of the two d-sized maps
""",
    ),
    "low_rank_row_by_row_bmm": Variant(
        "low_rank_bilinear_scores",
        """def low_rank_bilinear_scores(queries, keys, query_factor, key_factor):
    (_, d), (_, d_k) = query_factor.shape, key_factor.shape
    if d != d_k:
        raise ValueError(f"W_Q has d = {d} columns but W_K has {d_k}")
    rows = []
    for q_b, k_b in zip(queries, keys):  # one row of the batch at a time
        rows.append(torch.mm(torch.mm(q_b, query_factor), torch.mm(k_b, key_factor).t()))
    return torch.stack(rows)
""",
    ),
    # Task 2
    "alibi_loops_for_the_penalty": Variant(
        "alibi_scores",
        """def alibi_scores(queries, keys, slope, causal=False):
    T, S, d = queries.shape[1], keys.shape[1], queries.shape[2]
    if keys.shape[2] != d:
        raise ValueError(f"query size {d} != key size {keys.shape[2]}")
    bias = [[-math.inf if causal and i > t else -slope * abs(t - i) for i in range(S)] for t in range(T)]
    bias = torch.tensor(bias, dtype=queries.dtype, device=queries.device)  # (T, S)
    return queries @ keys.transpose(1, 2) / d**0.5 + bias  # (B, T, S)
""",
    ),
    "alibi_reuses_scaled_dot_scorer": Variant(
        "alibi_scores",
        """from seqlab.models.attention import ScaledDotScorer


def alibi_scores(queries, keys, slope, causal=False):
    scores = ScaledDotScorer()(queries, keys)  # (B, T, S); its ValueError gives both sizes
    t = torch.arange(queries.shape[1], device=queries.device, dtype=queries.dtype)
    i = torch.arange(keys.shape[1], device=keys.device, dtype=keys.dtype)
    distance = torch.cdist(t[:, None], i[:, None], p=1)  # (T, S): |t - i|
    scores = scores - slope * distance
    if causal:
        future = torch.ones(queries.shape[1], keys.shape[1], dtype=torch.bool, device=queries.device).triu(1)
        scores = torch.where(future, torch.full_like(scores, float("-inf")), scores)
    return scores
""",
    ),
    "alibi_where_and_broadcast": Variant(
        "alibi_scores",
        """def alibi_scores(queries, keys, slope, causal=False):
    if queries.size(-1) != keys.size(-1):
        raise ValueError(f"sizes differ: queries {queries.size(-1)}, keys {keys.size(-1)}")
    dots = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(queries.size(-1))  # (B, T, S)
    t = torch.arange(1, queries.size(1) + 1, device=queries.device).view(-1, 1)  # positions from 1
    i = torch.arange(1, keys.size(1) + 1, device=keys.device).view(1, -1)
    scores = dots - slope * (t - i).abs()
    if causal:
        scores = torch.where(i > t, -torch.inf, scores)
    return scores
""",
    ),
    # Task 3
    "norm_plus_eps": Variant(
        "key_strength_scores",
        """def key_strength_scores(queries, keys, w_kappa, b_kappa, eps=1e-8):
    if queries.shape[-1] != keys.shape[-1]:
        raise ValueError(f"queries of size {queries.shape[-1]}, keys of size {keys.shape[-1]}")
    kappa = torch.nn.functional.softplus(queries @ w_kappa + b_kappa)  # (B, T)
    unit_queries = queries / (torch.linalg.vector_norm(queries, dim=-1, keepdim=True) + eps)
    unit_keys = keys / (torch.linalg.vector_norm(keys, dim=-1, keepdim=True) + eps)
    return kappa[:, :, None] * torch.bmm(unit_queries, unit_keys.transpose(1, 2))
""",
    ),
    "key_strength_normalize": Variant(
        "key_strength_scores",
        """import torch.nn.functional as F


def key_strength_scores(queries, keys, w_kappa, b_kappa, eps=1e-8):
    if queries.shape[-1] != keys.shape[-1]:
        raise ValueError(f"sizes {queries.shape[-1]} and {keys.shape[-1]} differ")
    cosines = F.normalize(queries, dim=-1, eps=eps) @ F.normalize(keys, dim=-1, eps=eps).mT  # (B, T, S)
    return F.softplus(torch.einsum("btd,d->bt", queries, w_kappa) + b_kappa).unsqueeze(-1) * cosines
""",
    ),
    "key_strength_reuses_cosine_scorer": Variant(
        "key_strength_scores",
        """from seqlab.models.attention import CosineScorer


def key_strength_scores(queries, keys, w_kappa, b_kappa, eps=1e-8):
    kappa = torch.nn.functional.softplus(queries @ w_kappa + b_kappa)  # (B, T)
    return CosineScorer(scale=kappa.unsqueeze(-1))(queries, keys)  # its ValueError gives both sizes
""",
    ),
    "key_strength_cosine_similarity_and_log1p": Variant(
        "key_strength_scores",
        """def key_strength_scores(queries, keys, w_kappa, b_kappa, eps=1e-8):
    if queries.shape[2] != keys.shape[2]:
        raise ValueError(f"D of the queries is {queries.shape[2]}, of the keys {keys.shape[2]}")
    cosines = torch.nn.functional.cosine_similarity(queries.unsqueeze(2), keys.unsqueeze(1), dim=-1, eps=eps)
    kappa = torch.log1p(torch.exp((queries * w_kappa).sum(-1) + b_kappa))  # (B, T), softplus written out
    return kappa.unsqueeze(2) * cosines  # (B, T, S)
""",
    ),
    "key_strength_one_clamp_on_the_product": Variant(
        "key_strength_scores",
        """def key_strength_scores(queries, keys, w_kappa, b_kappa, eps=1e-8):
    B, T, D = queries.shape
    if keys.shape[-1] != D:
        raise ValueError(f"queries have {D} features, keys {keys.shape[-1]}")
    lengths = torch.linalg.vector_norm(queries, dim=-1)[:, :, None] * torch.linalg.vector_norm(keys, dim=-1)[:, None, :]
    cosines = queries @ keys.transpose(1, 2) / lengths.clamp(min=eps * eps)  # (B, T, S): one guard, on the product
    kappa = torch.nn.functional.softplus(queries @ w_kappa + b_kappa)  # (B, T)
    return kappa[..., None] * cosines
""",
    ),
}

globals().update(exercise_tests(EXERCISE, BUGS, VARIANTS))  # the fixture `graded` and the file's five tests
