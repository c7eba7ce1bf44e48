"""Exercise 8's realistic answers, right and wrong, against its tests (tests/buggy_answers.py says how).

| bug | the edit | must fail |
|---|---|---|
| positions cut into heads | ``split_heads`` reshapes straight to (B, M, T, d) | split_heads |
| split_heads checks too little | ``features < num_heads``, not ``%``: reshape's error, no ValueError | split_heads |
| key/value heads tiled | ``share_kv_heads`` tiles the G heads: query head m gets head m mod G | share_kv_heads |
| share_kv_heads checks too little | ``G > num_heads`` instead of divisibility: G = 3, M = 4 passes | share_kv_heads |
| scaled by d | ``grouped_attention`` divides the scores by d, not sqrt(d) | by hand |
| softmax over the queries | ``softmax(dim=-2)`` | by hand, masks |
| mask inverted | True read as "ignore" (torch's key_padding_mask convention) | masks |
| no guard | every masked score -inf, also in a row with nothing real, then times the mask: NaN | masks |
| empty rows uniform | the softmax is not zeroed afterwards: a query with no key spreads 1/S over the keys | masks |
| per-query mask read as padding | a (B, T, S) mask gets the (B, S) mask's new axes | masks |
| key/value heads tiled in the attention | ``grouped_attention`` repeats k and v itself, as a block | by hand, masks |
| stacked weights cut in three | ``in_proj_weight.chunk(3)``, as multi-head's (3E, E) | layer vs torch, gradients |
| keys split into M heads | the G*d key and value features split with num_heads | layer vs torch, gradients |
| heads merged without transpose | (B, M, T, d) reshaped straight to (B, T, M*d) | layer vs torch, gradients |
| output projection not transposed | ``@ out_proj_weight`` | layer vs torch, gradients |
| mask not passed | ``grouped_attention(q, k, v)`` in the layer | layer vs torch, gradients |
| query bias dropped | the query projection without b_Q | layer vs torch, gradients |
| heads pooled across groups | group g averages heads g, g + G, ... (head m in group m mod G) | mean pool |
| heads summed | each group's heads summed, not averaged | mean pool |
| first head kept | each group keeps its first head (the paper's other conversion) | mean pool |
| values not pooled | W_V left with M heads | mean pool |
| biases not pooled | in_proj_bias returned as it is | mean pool |
| the ceiling counted from 0 | ``share_kv_heads`` picks ceil(i G / M) for the 0-based entry i | share_kv_heads |
| key and value projections swapped | ``w_q, w_v, w_k = ...split(...)``, the biases too | layer vs torch, gradients |
| head size from the key/value heads | ``d = E // num_kv_heads`` | layer vs torch, gradients |

Every bug is caught by a visible test of its own task first; its message starts with the function's name.
Task 2 is the layer: ``grouped_attention`` (tests 3-4, 3 points: torch's scaled_dot_product_attention with
enable_gqa=True computes it, weights included with identity values, so it is a building block the text lets
the student take from torch) and ``grouped_query_attention`` (tests 5-6, 6 points), two answer cells followed
by the four tests. When grading, test 3 (task 2's first), test 5 and test 7 (task 3's) define the course's
versions of the earlier functions (hidden), so a bug in task 1 or in grouped_attention costs only its own
tests' points.

The correct variants: split_heads with chunk, view and unflatten; share_kv_heads with expand, a list of
heads, an index, and the 1-based ceiling formula; grouped_attention in the grouped layout without copies
(finite fill, then multiplied by the mask), head by head with chapter 4's masked_softmax,
softmax-zero-renormalise with a guarded denominator, and torch's scaled_dot_product_attention with values
[Val, I]; the layer with sliced F.linear, head by head, with the key/value weights copied to M heads, and
through torch's multi_head_attention_forward on copied rows; mean_pool_kv_heads group by group, with a
pooling matrix, and with unflatten.
"""

from buggy_answers import Bug, Variant, exercise_tests

EXERCISE = "ex08_multihead_attention"
SPLIT = {"test_split_heads"}
SHARE = {"test_share_kv_heads"}
BY_HAND = {"test_grouped_attention_by_hand"}
MASKS = {"test_grouped_attention_masks"}
LAYER = {"test_layer_matches_torch", "test_layer_gradients"}
POOL = {"test_mean_pool_kv_heads"}
SOFTMAX = "scores.softmax(dim=-1)  # over the keys"
ZEROED = "weights = torch.where(allowed, torch.softmax(scores, dim=-1), 0.0)"

BUGS = {
    "positions_cut_into_heads": Bug(
        "split_heads", [(".reshape(B, T, num_heads, d).permute(0, 2, 1, 3)", ".reshape(B, num_heads, T, d)")], SPLIT
    ),
    "split_heads_checks_too_little": Bug("split_heads", [("features % num_heads != 0", "features < num_heads")], SPLIT),
    "kv_heads_tiled": Bug(
        "share_kv_heads", [(".repeat_interleave(num_heads // G, dim=1)", ".repeat(1, num_heads // G, 1, 1)")], SHARE
    ),
    "share_kv_heads_checks_too_little": Bug("share_kv_heads", [("num_heads % G != 0", "G > num_heads")], SHARE),
    "scaled_by_d": Bug("grouped_attention", [("/ math.sqrt(d)", "/ d")], BY_HAND),
    "softmax_over_the_queries": Bug(
        "grouped_attention",
        [
            (SOFTMAX, "scores.softmax(dim=-2)"),
            (ZEROED, "weights = torch.where(allowed, torch.softmax(scores, dim=-2), 0.0)"),
        ],
        BY_HAND | MASKS,
    ),
    "mask_inverted": Bug(
        "grouped_attention",
        [
            ("torch.where(allowed, scores,", "torch.where(~allowed, scores,"),
            (ZEROED, ZEROED.replace("(allowed,", "(~allowed,")),
        ],
        MASKS,
    ),
    "no_guard": Bug(
        "grouped_attention",
        [
            ("torch.where(anything, -math.inf, 0.0)", "-math.inf"),
            (ZEROED, "weights = torch.softmax(scores, dim=-1) * allowed"),
        ],
        MASKS,
    ),
    "empty_rows_uniform": Bug("grouped_attention", [(ZEROED, "weights = torch.softmax(scores, dim=-1)")], MASKS),
    "per_query_mask_read_as_padding": Bug(
        "grouped_attention",
        [("mask[:, None, None, :] if mask.dim() == 2 else mask[:, None]", "mask[:, None, None, :]")],
        MASKS,
    ),
    "kv_heads_tiled_in_the_attention": Bug(
        "grouped_attention",
        [
            (
                "k, v = share_kv_heads(k, M), share_kv_heads(v, M)",
                "k, v = k.repeat(1, M // k.shape[1], 1, 1), v.repeat(1, M // v.shape[1], 1, 1)",
            )
        ],
        BY_HAND | MASKS,
    ),
    "stacked_weights_cut_in_three": Bug(
        "grouped_query_attention",
        [
            ("in_proj_weight.split([M * d, G * d, G * d])", "in_proj_weight.chunk(3)"),
            ("in_proj_bias.split([M * d, G * d, G * d])", "in_proj_bias.chunk(3)"),
        ],
        LAYER,
    ),
    "keys_split_into_M_heads": Bug(
        "grouped_query_attention",
        [
            ("split_heads(key @ w_k.T + b_k, G)", "split_heads(key @ w_k.T + b_k, M)"),
            ("split_heads(value @ w_v.T + b_v, G)", "split_heads(value @ w_v.T + b_v, M)"),
        ],
        LAYER,
    ),
    "heads_merged_without_transpose": Bug(
        "grouped_query_attention",
        [("context.transpose(1, 2).flatten(2)", "context.reshape(query.shape[0], query.shape[1], -1)")],
        LAYER,
    ),
    "output_projection_not_transposed": Bug(
        "grouped_query_attention", [("@ out_proj_weight.T", "@ out_proj_weight")], LAYER
    ),
    "mask_not_passed": Bug(
        "grouped_query_attention", [("grouped_attention(q, k, v, mask)", "grouped_attention(q, k, v)")], LAYER
    ),
    "query_bias_dropped": Bug(
        "grouped_query_attention",
        [("torch.nn.functional.linear(query, w_q, b_q)", "torch.nn.functional.linear(query, w_q)")],
        LAYER,
    ),
    "heads_pooled_across_groups": Bug(
        "mean_pool_kv_heads",
        [
            (
                "block.reshape(G, M // G, d, *block.shape[1:]).mean(dim=1)",
                "block.reshape(M // G, G, d, *block.shape[1:]).mean(dim=0)",
            )
        ],
        POOL,
    ),
    "heads_summed": Bug("mean_pool_kv_heads", [(".mean(dim=1).flatten(0, 1)", ".sum(dim=1).flatten(0, 1)")], POOL),
    "first_head_kept": Bug("mean_pool_kv_heads", [(".mean(dim=1).flatten(0, 1)", "[:, 0].flatten(0, 1)")], POOL),
    "values_not_pooled": Bug("mean_pool_kv_heads", [("pooled(w_k), pooled(w_v)]", "pooled(w_k), w_v]")], POOL),
    "biases_not_pooled": Bug(
        "mean_pool_kv_heads", [("torch.cat([b_q, pooled(b_k), pooled(b_v)])", "in_proj_bias")], POOL
    ),
    # Review (issue 24): three more a teaching assistant sees.
    "the_ceiling_counted_from_0": Bug(
        "share_kv_heads",
        [
            (
                "return kv.repeat_interleave(num_heads // G, dim=1)",
                "return kv[:, [math.ceil(i * G / num_heads) for i in range(num_heads)]]",
            )
        ],
        SHARE,
    ),
    "key_and_value_projections_swapped": Bug(
        "grouped_query_attention",
        [
            ("w_q, w_k, w_v = in_proj_weight.split(", "w_q, w_v, w_k = in_proj_weight.split("),
            ("b_q, b_k, b_v = in_proj_bias.split(", "b_q, b_v, b_k = in_proj_bias.split("),
        ],
        LAYER,
    ),
    "head_size_from_the_kv_heads": Bug(
        "grouped_query_attention", [("d = query.shape[-1] // M", "d = query.shape[-1] // G")], LAYER
    ),
}

VARIANTS = {
    "share_with_the_ceiling_formula": Variant(
        "share_kv_heads",
        """def share_kv_heads(kv, num_heads):
    M, G = num_heads, kv.shape[1]
    if M % G:
        raise ValueError(f"{G} key/value heads cannot serve {M} query heads in equal groups")
    # query head m = 1..M reads key/value head ceil(m G / M); code counts both from 0
    return torch.stack([kv[:, math.ceil(m * G / M) - 1] for m in range(1, M + 1)], dim=1)
""",
    ),
    "attention_by_torchs_sdpa": Variant(
        "grouped_attention",
        """def grouped_attention(q, k, v, mask=None):
    # torch's grouped attention (the reuse the text allows): values [Val, I] give the context and the weights at once
    B, G, S, d = v.shape
    eye = torch.eye(S, dtype=v.dtype, device=v.device).expand(B, G, S, S)
    allowed = None if mask is None else (mask[:, None, None, :] if mask.dim() == 2 else mask[:, None])
    both = torch.nn.functional.scaled_dot_product_attention(
        q, k, torch.cat([v, eye], dim=-1), attn_mask=allowed, enable_gqa=True
    )
    return both[..., :d], both[..., d:]
""",
    ),
    "split_heads_with_chunk": Variant(
        "split_heads",
        """def split_heads(x, num_heads):
    if x.shape[-1] % num_heads:
        raise ValueError(f"cannot split {x.shape[-1]} features into {num_heads} heads")
    return torch.stack(x.chunk(num_heads, dim=-1), dim=1)
""",
    ),
    "split_heads_with_view": Variant(
        "split_heads",
        """def split_heads(x, num_heads):
    B, L, E = x.shape
    d, rest = divmod(E, num_heads)
    if rest:
        raise ValueError("E = %d is not a multiple of num_heads = %d" % (E, num_heads))
    return x.view(B, L, num_heads, d).transpose(1, 2).contiguous()
""",
    ),
    "split_heads_with_unflatten": Variant(
        "split_heads",
        """def split_heads(x, num_heads):
    try:
        heads = x.unflatten(-1, (num_heads, -1))
    except RuntimeError:
        raise ValueError(f"{num_heads} heads do not divide {x.shape[-1]}") from None
    return heads.movedim(2, 1)
""",
    ),
    "share_with_expand": Variant(
        "share_kv_heads",
        """def share_kv_heads(kv, num_heads):
    B, G, S, d = kv.shape
    if num_heads % G:
        raise ValueError(f"G = {G} must divide num_heads = {num_heads}")
    return kv.unsqueeze(2).expand(B, G, num_heads // G, S, d).reshape(B, num_heads, S, d)
""",
    ),
    "share_with_a_list": Variant(
        "share_kv_heads",
        """def share_kv_heads(kv, num_heads):
    G = kv.size(1)
    group, rest = divmod(num_heads, G)
    if rest != 0:
        raise ValueError(f"{G} key/value heads, {num_heads} query heads")
    return torch.stack([kv[:, m // group] for m in range(num_heads)], dim=1)
""",
    ),
    "share_with_an_index": Variant(
        "share_kv_heads",
        """def share_kv_heads(kv, num_heads):
    G = kv.shape[1]
    if num_heads % G != 0:
        raise ValueError(f"num_heads={num_heads} is not a multiple of G={G}")
    index = torch.div(torch.arange(num_heads, device=kv.device), num_heads // G, rounding_mode="floor")
    return kv[:, index]
""",
    ),
    "attention_in_groups_without_copies": Variant(
        "grouped_attention",
        """def grouped_attention(q, k, v, mask=None):
    B, M, T, d = q.shape
    G, S = k.shape[1], k.shape[2]
    grouped = q.reshape(B, G, M // G, T, d)  # consecutive query heads: one group
    scores = grouped @ k.unsqueeze(2).transpose(-1, -2) / d**0.5  # (B, G, M/G, T, S)
    if mask is not None:
        allowed = mask.view(B, 1, 1, 1, S) if mask.dim() == 2 else mask.view(B, 1, 1, T, S)
        scores = scores.masked_fill(~allowed, torch.finfo(scores.dtype).min)
    weights = scores.softmax(dim=-1)
    if mask is not None:
        weights = weights * allowed
    context = weights @ v.unsqueeze(2)  # (B, G, M/G, T, d)
    return context.reshape(B, M, T, d), weights.reshape(B, M, T, S)
""",
    ),
    "attention_head_by_head_with_masked_softmax": Variant(
        "grouped_attention",
        """from seqlab.models.attention import masked_softmax


def grouped_attention(q, k, v, mask=None):
    B, M, T, d = q.shape
    G, S = k.shape[1], k.shape[2]
    if mask is None:
        mask = torch.ones(B, S, dtype=torch.bool, device=q.device)
    if mask.dim() == 2:
        mask = mask.unsqueeze(1).expand(B, T, S)
    contexts, all_weights = [], []
    for m in range(M):
        g = m // (M // G)
        scores = q[:, m] @ k[:, g].transpose(1, 2) / math.sqrt(d)  # (B, T, S)
        w = masked_softmax(scores.reshape(B * T, 1, S), mask.reshape(B * T, S)).reshape(B, T, S)
        all_weights.append(w)
        contexts.append(w @ v[:, g])
    return torch.stack(contexts, dim=1), torch.stack(all_weights, dim=1)
""",
    ),
    "attention_renormalised_with_a_guard": Variant(
        "grouped_attention",
        """def grouped_attention(q, k, v, mask=None):
    M, d = q.shape[1], q.shape[-1]
    k = k.repeat_interleave(M // k.shape[1], dim=1)
    v = v.repeat_interleave(M // v.shape[1], dim=1)
    scores = torch.einsum("bmtd,bmsd->bmts", q, k) / math.sqrt(d)
    if mask is None:
        weights = torch.softmax(scores, dim=-1)
    else:
        allowed = mask.unsqueeze(1) if mask.dim() == 3 else mask[:, None, None, :]
        allowed = allowed.to(scores.dtype)
        # softmax, zero the masked keys, renormalise: a row without keys divides its zeros by 1
        weights = torch.softmax(scores, dim=-1) * allowed
        total = weights.sum(dim=-1, keepdim=True)
        weights = weights / torch.where(total > 0, total, torch.ones_like(total))
    return torch.einsum("bmts,bmsd->bmtd", weights, v), weights
""",
    ),
    "layer_with_sliced_linear": Variant(
        "grouped_query_attention",
        """import torch.nn.functional as F


def grouped_query_attention(
    query, key, value, in_proj_weight, in_proj_bias, out_proj_weight, out_proj_bias, num_heads, num_kv_heads, mask=None
):
    E = query.shape[-1]
    d = E // num_heads
    kv = num_kv_heads * d
    q = F.linear(query, in_proj_weight[:E], in_proj_bias[:E])
    k = F.linear(key, in_proj_weight[E : E + kv], in_proj_bias[E : E + kv])
    v = F.linear(value, in_proj_weight[E + kv :], in_proj_bias[E + kv :])
    context, weights = grouped_attention(
        split_heads(q, num_heads), split_heads(k, num_kv_heads), split_heads(v, num_kv_heads), mask
    )
    merged = torch.cat(context.unbind(dim=1), dim=-1)  # [head 0; ...; head M-1]
    return F.linear(merged, out_proj_weight, out_proj_bias), weights
""",
    ),
    "layer_head_by_head": Variant(
        "grouped_query_attention",
        """def grouped_query_attention(
    query, key, value, in_proj_weight, in_proj_bias, out_proj_weight, out_proj_bias, num_heads, num_kv_heads, mask=None
):
    M, G = num_heads, num_kv_heads
    d = query.shape[-1] // M

    def project(x, start):
        rows = slice(start * d, (start + 1) * d)
        return (x @ in_proj_weight[rows].T + in_proj_bias[rows]).unsqueeze(1)  # (B, 1, L, d)

    heads, weights = [], []
    for m in range(M):
        g = m * G // M
        context, w = grouped_attention(project(query, m), project(key, M + g), project(value, M + G + g), mask)
        heads.append(context[:, 0])
        weights.append(w[:, 0])
    return torch.cat(heads, dim=-1) @ out_proj_weight.T + out_proj_bias, torch.stack(weights, dim=1)
""",
    ),
    "layer_with_copied_kv_weights": Variant(
        "grouped_query_attention",
        """def grouped_query_attention(
    query, key, value, in_proj_weight, in_proj_bias, out_proj_weight, out_proj_bias, num_heads, num_kv_heads, mask=None
):
    B, T, E = query.shape
    M, G = num_heads, num_kv_heads
    d = E // M
    w_q, w_k, w_v = torch.split(in_proj_weight, [E, G * d, G * d])
    b_q, b_k, b_v = torch.split(in_proj_bias, [E, G * d, G * d])
    # every query head its own copy of its group's key/value rows: multi-head attention with G = M
    copy = lambda w: w.view(G, d, *w.shape[1:]).repeat_interleave(M // G, dim=0).reshape(E, *w.shape[1:])
    w_k, w_v, b_k, b_v = copy(w_k), copy(w_v), copy(b_k), copy(b_v)
    to_heads = lambda x: x.view(x.shape[0], x.shape[1], M, d).permute(0, 2, 1, 3)
    q, k, v = to_heads(query @ w_q.T + b_q), to_heads(key @ w_k.T + b_k), to_heads(value @ w_v.T + b_v)
    context, weights = grouped_attention(q, k, v, mask)
    out = context.permute(0, 2, 1, 3).reshape(B, T, E) @ out_proj_weight.T + out_proj_bias
    return out, weights
""",
    ),
    "layer_through_torchs_multi_head_attention_forward": Variant(
        "grouped_query_attention",
        """def grouped_query_attention(
    query, key, value, in_proj_weight, in_proj_bias, out_proj_weight, out_proj_bias, num_heads, num_kv_heads, mask=None
):
    # torch's multi-head attention on copies: query head entry i gets key/value head entry i // (M/G)
    B, T, E = query.shape
    S, M, G = key.shape[1], num_heads, num_kv_heads
    d = E // M
    head = torch.arange(E, device=query.device) // d  # the query head entry of each of the E rows
    rows = head // (M // G) * d + torch.arange(E, device=query.device) % d  # its key/value head's row
    w_q, w_k, w_v = in_proj_weight.split([E, G * d, G * d])
    b_q, b_k, b_v = in_proj_bias.split([E, G * d, G * d])
    if mask is None:
        mask = torch.ones(B, S, dtype=torch.bool, device=query.device)
    allowed = mask[:, None, :].expand(B, T, S) if mask.dim() == 2 else mask
    some = allowed.any(dim=-1, keepdim=True)  # (B, T, 1); a query with no key looks at all, then is zeroed
    ignore = ~(allowed | ~some)
    out, weights = torch.nn.functional.multi_head_attention_forward(
        query.transpose(0, 1), key.transpose(0, 1), value.transpose(0, 1), E, M,
        torch.cat([w_q, w_k[rows], w_v[rows]]), torch.cat([b_q, b_k[rows], b_v[rows]]), None, None, False, 0.0,
        out_proj_weight, out_proj_bias, training=False, attn_mask=ignore.repeat_interleave(M, dim=0),
        average_attn_weights=False,
    )
    out = torch.where(some, out.transpose(0, 1), out_proj_bias)  # no key: a zero context, b_O alone
    return out, torch.where(some[:, None], weights, torch.zeros_like(weights))
""",
    ),
    "pool_group_by_group": Variant(
        "mean_pool_kv_heads",
        """def mean_pool_kv_heads(in_proj_weight, in_proj_bias, num_heads, num_kv_heads):
    E = in_proj_weight.shape[1]
    d, size = E // num_heads, num_heads // num_kv_heads
    weights, biases = [in_proj_weight[:E]], [in_proj_bias[:E]]
    for start in (E, 2 * E):
        for g in range(num_kv_heads):
            rows = slice(start + g * size * d, start + (g + 1) * size * d)
            weights.append(in_proj_weight[rows].reshape(size, d, E).mean(0))
            biases.append(in_proj_bias[rows].reshape(size, d).mean(0))
    return torch.cat(weights), torch.cat(biases)
""",
    ),
    "pool_with_a_matrix": Variant(
        "mean_pool_kv_heads",
        """def mean_pool_kv_heads(in_proj_weight, in_proj_bias, num_heads, num_kv_heads):
    E = in_proj_weight.shape[1]
    M, G = num_heads, num_kv_heads
    d = E // M
    like = dict(dtype=in_proj_weight.dtype, device=in_proj_weight.device)
    group_mean = torch.kron(torch.eye(G, **like), torch.full((1, M // G), G / M, **like))  # (G, M)
    P = torch.kron(group_mean, torch.eye(d, **like))  # (G*d, M*d): averages the heads of each group
    w_q, w_k, w_v = in_proj_weight.split(E)
    b_q, b_k, b_v = in_proj_bias.split(E)
    return torch.cat([w_q, P @ w_k, P @ w_v]), torch.cat([b_q, P @ b_k, P @ b_v])
""",
    ),
    "pool_with_unflatten": Variant(
        "mean_pool_kv_heads",
        """def mean_pool_kv_heads(in_proj_weight, in_proj_bias, num_heads, num_kv_heads):
    E = in_proj_weight.shape[-1]
    shape = (2, num_kv_heads, num_heads // num_kv_heads, E // num_heads)
    kv_w = in_proj_weight[E:].unflatten(0, shape).mean(2).flatten(0, 2)
    kv_b = in_proj_bias[E:].unflatten(0, shape).mean(2).flatten()
    return torch.cat([in_proj_weight[:E], kv_w]), torch.cat([in_proj_bias[:E], kv_b])
""",
    ),
}

globals().update(exercise_tests(EXERCISE, BUGS, VARIANTS))  # the fixture `graded` and the file's five tests
