"""Exercise 7's realistic answers, wrong and right, against its tests (tests/buggy_answers.py says how).

Task 1 is ``pooling_weights`` (M heads' masked weights), task 2 ``self_attentive_embedding`` (the heads' pooled
vectors stacked), task 3 ``redundancy_penalty`` (Lin et al.'s ||α αᵀ - I||², averaged over the sequences with a
real position). Test cells: 1 ``test_weights_per_head``, 2 ``test_weights_padding_and_gradients``, 3
``test_embedding_stacks_heads``, 4 ``test_penalty_by_hand``, 5 ``test_penalty_conventions``.

| bug | the edit | must fail |
|---|---|---|
| softmax_over_the_heads | ``softmax(dim=1)``: over the heads, not the positions | 1, 2 |
| padding_attended | no mask: neither filled before the softmax nor zeroed after it | 1, 2 |
| weights_not_summing_to_one | a softmax over every position, the padding zeroed afterwards | 1, 2 |
| nan_gradient_for_an_empty_sequence | -inf at padding, then ``nan_to_num``: right weights, NaN gradient | 2 |
| nan_weights_for_an_empty_sequence | -inf at padding, no guard at all | 2 |
| finite_filler_not_zeroed | ``finfo.min`` at padding, not zeroed after: an empty sequence gets 1/S everywhere | 2 |
| bias_dropped | ``tanh(W_k h_i)``, no b | 1 |
| tanh_dropped | ``w_mᵀ (W_k h_i + b)`` | 1 |
| first_head_for_every_head | every head scores with w_1 | 1 |
| weights_detached | ``.detach()`` on the weights | 2 |
| heads_interleaved | the (B, M, Dk) pooled vectors flattened feature by feature, not head by head | 3 |
| heads_averaged | the mean of the heads' pooled vectors, (B, Dk) | 3 |
| heads_not_stacked | the (B, M, Dk) pooled vectors returned as they are | 3 |
| pair_reversed | ``return weights, embedding`` | 3 |
| empty_sequences_counted | the mean over every sequence, those with nothing real (P = M) too | 5 |
| batch_sum | the sum over the sequences, not the mean | 4 |
| norm_not_squared | ``||α αᵀ - I||_F``, not its square | 4 |
| positions_overlap | ``αᵀ α - I`` (S × S), not ``α αᵀ - I`` (M × M) | 4 |
| identity_missing | ``||α αᵀ||²`` | 4 |
| no_guard_for_a_batch_with_nothing_real | no guard for a batch with nothing real: the mean of no number, NaN | 5 |
| mask_as_lengths (review) | the mask read as lengths, arange < mask.sum(): wrong for a mask with gaps | 1 |
| tanh_after_w (review) | ``tanh(w_mᵀ (W_k h_i + b))``: the tanh around the score | 1 |
| ones_instead_of_identity (review) | ``α αᵀ - 1``: I read as a matrix of ones | 4 |
| heads_through_the_tests_oracle (review) | the setup's ``one_head_pooling`` per head: no parameter gradient | 2 |
"""

from buggy_answers import Bug, Variant, exercise_tests

EXERCISE = "ex07_attention_pooling"
WEIGHTS, EMBEDDING, PENALTY = "pooling_weights", "self_attentive_embedding", "redundancy_penalty"
T1, T2, T3 = "test_weights_per_head", "test_weights_padding_and_gradients", "test_embedding_stacks_heads"
T4, T5 = "test_penalty_by_hand", "test_penalty_conventions"

FILLS = '.masked_fill(~real, float("-inf")).masked_fill(~anything, 0.0)'
GUARD = ".masked_fill(~anything, 0.0)"
ZEROED = "torch.softmax(closed, dim=-1).masked_fill(~real, 0.0)"
LINEAR = "torch.tanh(torch.nn.functional.linear(states, key_weight, bias))"
STACK = "return per_head.flatten(start_dim=1), weights"
MEAN = "per_sequence[counted].mean()"
BUGS = {
    "softmax_over_the_heads": Bug(
        WEIGHTS, [("torch.softmax(closed, dim=-1)", "torch.softmax(closed, dim=1)")], {T1, T2}
    ),
    "padding_attended": Bug(WEIGHTS, [(FILLS, ""), (ZEROED, "torch.softmax(closed, dim=-1)")], {T1, T2}),
    "weights_not_summing_to_one": Bug(WEIGHTS, [(FILLS, "")], {T1, T2}),
    "nan_gradient_for_an_empty_sequence": Bug(
        WEIGHTS,
        [
            (FILLS, ' + torch.zeros_like(scores).masked_fill(~real, float("-inf"))'),
            (ZEROED, "torch.softmax(closed, dim=-1).nan_to_num(0.0)"),
        ],
        {T2},
    ),
    "nan_weights_for_an_empty_sequence": Bug(WEIGHTS, [(GUARD, ""), (ZEROED, "torch.softmax(closed, dim=-1)")], {T2}),
    "finite_filler_not_zeroed": Bug(
        WEIGHTS,
        [(FILLS, ".masked_fill(~real, torch.finfo(scores.dtype).min)"), (ZEROED, "torch.softmax(closed, dim=-1)")],
        {T2},
    ),
    "bias_dropped": Bug(WEIGHTS, [(LINEAR, "torch.tanh(torch.nn.functional.linear(states, key_weight))")], {T1}),
    "tanh_dropped": Bug(WEIGHTS, [(LINEAR, "torch.nn.functional.linear(states, key_weight, bias)")], {T1}),
    "first_head_for_every_head": Bug(
        WEIGHTS,
        [('torch.einsum("ma,bsa->bms", w, features)', "(features @ w[0]).unsqueeze(1).expand(-1, w.shape[0], -1)")],
        {T1},
    ),
    "weights_detached": Bug(WEIGHTS, [(ZEROED, ZEROED + ".detach()")], {T2}),
    "heads_interleaved": Bug(
        EMBEDDING, [(STACK, "return per_head.transpose(1, 2).flatten(start_dim=1), weights")], {T3}
    ),
    "heads_averaged": Bug(EMBEDDING, [(STACK, "return per_head.mean(dim=1), weights")], {T3}),
    "heads_not_stacked": Bug(EMBEDDING, [(STACK, "return per_head, weights")], {T3}),
    "pair_reversed": Bug(EMBEDDING, [(STACK, "return weights, per_head.flatten(start_dim=1)")], {T3}),
    "empty_sequences_counted": Bug(PENALTY, [(MEAN, "per_sequence.mean()")], {T5}),
    "batch_sum": Bug(PENALTY, [(MEAN, "per_sequence[counted].sum()")], {T4}),
    "norm_not_squared": Bug(PENALTY, [(".square().sum(dim=(1, 2))", ".square().sum(dim=(1, 2)).sqrt()")], {T4}),
    "positions_overlap": Bug(
        PENALTY,
        [
            ("weights @ weights.transpose(1, 2)", "weights.transpose(1, 2) @ weights"),
            ("torch.eye(weights.shape[1]", "torch.eye(weights.shape[2]"),
        ],
        {T4},
    ),
    "identity_missing": Bug(PENALTY, [("(overlap - identity)", "overlap")], {T4}),
    "no_guard_for_a_batch_with_nothing_real": Bug(PENALTY, [("if not counted.any():", "if False:")], {T5}),
    # Added in review: a TA's bugs. The mask read as lengths (right padding assumed; the text allows gaps).
    "mask_as_lengths": Bug(
        WEIGHTS,
        [
            (
                "real = mask.unsqueeze(1).expand_as(scores)",
                "lengths = mask.sum(dim=1, keepdim=True)  # (B, 1)\n"
                "    real = (torch.arange(mask.shape[1], device=mask.device) < lengths).unsqueeze(1).expand_as(scores)",
            )
        ],
        {T1},
    ),
    # tanh around the score, not inside it: tanh(w_mᵀ (W_k h_i + b))
    "tanh_after_w": Bug(
        WEIGHTS,
        [
            (LINEAR, "torch.nn.functional.linear(states, key_weight, bias)"),
            ('torch.einsum("ma,bsa->bms", w, features)', 'torch.tanh(torch.einsum("ma,bsa->bms", w, features))'),
        ],
        {T1},
    ),
    # I read as a matrix of ones
    "ones_instead_of_identity": Bug(PENALTY, [("(overlap - identity)", "(overlap - 1)")], {T4}),
    # The delegating answer: the setup cell's oracle, one AttentionPooling per head. Its weights are right, but the
    # parameters are copied in under torch.no_grad: no gradient reaches key_weight, bias or w.
    "heads_through_the_tests_oracle": Bug(
        WEIGHTS,
        [
            (
                "features = torch.tanh(",
                "return torch.stack([one_head_pooling(key_weight, bias, w[m])(states, mask)[1] "
                "for m in range(w.shape[0])], dim=1)\n    features = torch.tanh(",
            )
        ],
        {T2},
    ),
}

VARIANTS = {
    # Task 1: reuse of chapter 4's masked softmax (allowed), a loop, the finite-filler recipe, and the answer of
    # issue 24 that zeroes the padding after a softmax over all positions and renormalises with a guard (its
    # padded gradients are about 1e-17, not exactly 0: correct).
    "weights_by_seqlab_masked_softmax": Variant(
        WEIGHTS,
        "from seqlab.models.attention import masked_softmax\n\n\n"
        "def pooling_weights(states, mask, key_weight, bias, w):\n"
        "    hidden = torch.tanh(states @ key_weight.T + bias)  # (B, S, A)\n"
        "    scores = (hidden @ w.T).transpose(1, 2)  # (B, M, S): one row per head\n"
        "    return masked_softmax(scores, mask)\n",
    ),
    # -inf filled at padding with no guard, the weights zeroed at padding afterwards: the NaN of a sequence with
    # nothing real is overwritten forward, and masked_fill passes no gradient to what it filled, so none goes back.
    "weights_minus_inf_zeroed_after": Variant(
        WEIGHTS,
        "def pooling_weights(states, mask, key_weight, bias, w):\n"
        "    scores = (torch.tanh(states @ key_weight.T + bias) @ w.T).transpose(1, 2)  # (B, M, S)\n"
        "    padded = ~mask.unsqueeze(1)  # (B, 1, S)\n"
        '    weights = torch.softmax(scores.masked_fill(padded, float("-inf")), dim=-1)\n'
        "    return weights.masked_fill(padded, 0.0)\n",
    ),
    "weights_by_loop": Variant(
        WEIGHTS,
        "def pooling_weights(states, mask, key_weight, bias, w):\n"
        "    sequences = []\n"
        "    for b in range(states.shape[0]):\n"
        "        real = mask[b]\n"
        "        heads = []\n"
        "        for m in range(w.shape[0]):\n"
        "            e = torch.tanh(states[b] @ key_weight.T + bias) @ w[m]  # (S,)\n"
        "            row = torch.zeros_like(e)\n"
        "            if real.any():\n"
        "                row = row.masked_scatter(real, torch.softmax(e[real], dim=0))\n"
        "            heads.append(row)\n"
        "        sequences.append(torch.stack(heads))\n"
        "    return torch.stack(sequences)\n",
    ),
    "weights_by_finite_filler_times_mask": Variant(
        WEIGHTS,
        "def pooling_weights(states, mask, key_weight, bias, w):\n"
        '    e = torch.einsum("bsa,ma->bms", torch.tanh(states @ key_weight.transpose(0, 1) + bias), w)\n'
        "    keep = mask[:, None, :]\n"
        "    filled = e.masked_fill(~keep, torch.finfo(e.dtype).min)\n"
        "    return torch.softmax(filled, dim=-1) * keep\n",
    ),
    "weights_zeroed_then_renormalised": Variant(
        WEIGHTS,
        "def pooling_weights(states, mask, key_weight, bias, w):\n"
        "    scores = torch.tanh(states @ key_weight.T + bias) @ w.T  # (B, S, M)\n"
        "    p = torch.softmax(scores, dim=1) * mask.unsqueeze(-1)  # padding zeroed\n"
        "    total = p.sum(dim=1, keepdim=True)\n"
        "    p = p / torch.where(total > 0, total, torch.ones_like(total))  # a sequence with nothing real stays 0\n"
        "    return p.transpose(1, 2)\n",
    ),
    # Added in review: chapter 7's AttentionPooling itself, one head at a time, with the given tensors as its
    # parameters (torch.func.functional_call keeps them in the graph): reuse the text allows, full marks.
    "weights_by_attention_pooling_per_head": Variant(
        WEIGHTS,
        "from seqlab.models.pooling import AttentionPooling\n\n\n"
        "def pooling_weights(states, mask, key_weight, bias, w):\n"
        "    A, Dk = key_weight.shape\n"
        "    pooling = AttentionPooling(input_size=Dk, query_size=A).to(device=states.device, dtype=states.dtype)\n"
        "    heads = []\n"
        "    for m in range(w.shape[0]):\n"
        "        params = {\n"
        '            "query": torch.zeros_like(pooling.query),\n'
        '            "attention.scorer.key_proj.weight": key_weight,\n'
        '            "attention.scorer.query_proj.weight": torch.zeros_like(\n'
        "                pooling.attention.scorer.query_proj.weight\n"
        "            ),\n"
        '            "attention.scorer.query_proj.bias": bias,  # W_q q + b = b\n'
        '            "attention.scorer.v.weight": w[m : m + 1],\n'
        "        }\n"
        "        heads.append(torch.func.functional_call(pooling, params, (states, mask))[1])  # (B, S)\n"
        "    return torch.stack(heads, dim=1)\n",
    ),
    # Task 2: einsum, a loop over the heads, broadcasting.
    "embedding_by_einsum": Variant(
        EMBEDDING,
        "def self_attentive_embedding(states, mask, key_weight, bias, w):\n"
        "    weights = pooling_weights(states, mask, key_weight, bias, w)\n"
        '    ctx = torch.einsum("bms,bsd->bmd", weights, states)\n'
        "    return ctx.reshape(ctx.shape[0], -1), weights\n",
    ),
    "embedding_by_loop_over_heads": Variant(
        EMBEDDING,
        "def self_attentive_embedding(states, mask, key_weight, bias, w):\n"
        "    weights = pooling_weights(states, mask, key_weight, bias, w)\n"
        "    heads = [(weights[:, m].unsqueeze(-1) * states).sum(dim=1) for m in range(w.shape[0])]\n"
        "    return torch.cat(heads, dim=-1), weights\n",
    ),
    "embedding_by_broadcasting": Variant(
        EMBEDDING,
        "def self_attentive_embedding(states, mask, key_weight, bias, w):\n"
        "    alpha = pooling_weights(states, mask, key_weight, bias, w)  # (B, M, S)\n"
        "    ctx = (alpha.unsqueeze(-1) * states.unsqueeze(1)).sum(dim=2)  # (B, M, Dk)\n"
        "    return ctx.reshape(states.shape[0], -1), alpha\n",
    ),
    # Task 3: a loop over sequences, the expanded square with boolean selection, torch's Frobenius norm.
    "penalty_by_loop": Variant(
        PENALTY,
        "def redundancy_penalty(weights, mask):\n"
        "    total, count = weights.new_zeros(()), 0\n"
        "    for b in range(weights.shape[0]):\n"
        "        if mask[b].any():\n"
        "            a = weights[b]\n"
        "            eye = torch.eye(a.shape[0], dtype=a.dtype, device=a.device)\n"
        "            total = total + ((a @ a.T - eye) ** 2).sum()\n"
        "            count += 1\n"
        "    return total / max(count, 1)\n",
    ),
    "penalty_expanded_on_selected_sequences": Variant(
        PENALTY,
        "def redundancy_penalty(weights, mask):\n"
        "    real = weights[mask.any(dim=1)]  # (n, M, S): the sequences that count\n"
        "    if real.shape[0] == 0:\n"
        "        return weights.sum() * 0\n"
        "    gram = torch.matmul(real, real.transpose(-1, -2))  # (n, M, M)\n"
        "    p = gram.pow(2).sum((-1, -2)) - 2 * real.pow(2).sum((-1, -2)) + real.shape[1]  # ||G||² - 2 tr G + M\n"
        "    return p.mean()\n",
    ),
    # Added in review: every sequence's penalty, the empty ones zeroed by torch.where, the count as an integer.
    "penalty_by_where": Variant(
        PENALTY,
        "def redundancy_penalty(weights, mask):\n"
        '    gram = torch.einsum("bms,bns->bmn", weights, weights)  # (B, M, M)\n'
        "    off = gram - torch.eye(weights.shape[1], dtype=weights.dtype, device=weights.device)\n"
        "    p = off.flatten(start_dim=1).pow(2).sum(dim=1)  # (B,)\n"
        "    counted = mask.any(dim=1)\n"
        "    return torch.where(counted, p, torch.zeros_like(p)).sum() / counted.sum().clamp(min=1)\n",
    ),
    "penalty_by_matrix_norm": Variant(
        PENALTY,
        "def redundancy_penalty(weights, mask):\n"
        "    eye = torch.eye(weights.shape[1], dtype=weights.dtype, device=weights.device)\n"
        '    p = torch.linalg.matrix_norm(weights @ weights.mT - eye, ord="fro") ** 2  # (B,)\n'
        "    counted = mask.any(dim=1).to(weights.dtype)  # P is finite: a 0/1 factor is safe here\n"
        "    return (p * counted).sum() / counted.sum().clamp_min(1.0)\n",
    ),
}

globals().update(exercise_tests(EXERCISE, BUGS, VARIANTS))  # the fixture `graded` and the file's five tests
