"""Exercise 1's realistic answers, wrong and right, against its tests (tests/buggy_answers.py says how).

Task 1 is ``peephole_lstm_step`` (an LSTM step with peephole connections, Gers and Schmidhuber 2000), task 2
``peephole_lstm_over_sequence`` (that step along a padded batch of sequences of different lengths), task 3
``cho_gru_stack_step`` (one step of a stack of GRU layers with the reset gate before the matrix, Cho et al. 2014;
the single-layer step alone was chapter 1 §1.5's last cell, unbatched, so the task asks for the stack). Test cells: 1
``test_peephole_step_by_hand``, 2 ``test_peephole_step_matches_torch``, 3 ``test_padded_sequence_by_rows``, 4
``test_padded_sequence_matches_torch``, 5 ``test_cho_gru_by_hand``, 6 ``test_cho_gru_matches_torch``.

| bug | the edit | must fail |
|---|---|---|
| lstm_gates_g_and_o_swapped | blocks read as i, f, o, g | 1, 2 |
| lstm_gates_i_and_f_swapped | blocks read as f, i, g, o | 2 |
| no_tanh_on_the_memory | ``h' = o * c'`` | 1, 2 |
| candidate_squashed_by_a_sigmoid | ``g = σ(...)`` for ``tanh`` | 1 |
| output_gate_sees_the_old_memory | ``o = σ(... + w_co * c_{t-1})`` | 1 |
| output_peephole_dropped | ``o = σ(...)``, no peephole into o | 1 |
| peepholes_i_and_f_swapped | peephole blocks read as w_cf, w_ci, w_co | 1 |
| peepholes_read_the_hidden_state | ``w_ci * h`` and ``w_cf * h`` for ``* c`` | 1 |
| zeros_of_the_default_dtype | ``state=None``: ``torch.zeros(B, H, device=...)``, float32 whatever x is | 3 |
| state_not_carried | every step from the initial state | 3, 4 |
| initial_state_ignored | always from zeros | 3, 4 |
| state_runs_through_padding | outputs zeroed at padding, but the state keeps stepping there | 3, 4 |
| state_detached_between_steps | the carried state ``.detach()``-ed: no gradient through time | 4 |
| padded_outputs_hold_the_state | padded outputs repeat the frozen h instead of 0 | 3, 4 |
| length_off_by_one | ``t <= L`` counts one padded step as real | 3, 4 |
| mask_on_the_wrong_axis | ``arange(S) < lengths`` with no new axis, read as ``real[t]`` | 3, 4 |
| final_h_gathered_at_length_minus_one | ``h_n = outputs[b, L_b - 1]``: a row of length 0 gets the last column | 3 |
| torch_reset_placement | ``r * (W_hn h + b_hn)``, torch's placement, not Cho et al.'s | 5 |
| every_layer_reads_x | every layer reads x_t (raises when I != H) | 5, 6 |
| layer_above_reads_the_old_state_below | layer k > 1 reads h[k-1], the layer below's h_{t-1}, not its new h_t | 5, 6 |
| returns_only_the_top_layer | returns the top layer's (B, H) state, not (L, B, H) | 5, 6 |
| reset_on_b_hn_too | ``W_hn (r * h) + r * b_hn`` | 5 |
| b_hn_dropped | ``W_hn (r * h)`` with no ``b_hn`` | 5 |
| reset_ignored | ``W_hn h + b_hn`` | 5, 6 |
| reset_on_the_whole_preactivation | ``tanh(r * (W_in x + b_in + W_hn h + b_hn))`` | 5, 6 |
| gru_gates_r_and_z_swapped | blocks read as z, r, n | 5, 6 |
| gru_interpolation_swapped | ``h' = z * n + (1 - z) * h`` | 5, 6 |
| candidate_from_the_update_block | ``W_hz``'s rows (``H:2H``) in the candidate | 5, 6 |
"""

from buggy_answers import Bug, Variant, exercise_tests

EXERCISE = "ex01_lstm_cell"
STEP, SEQUENCE, GRU = "peephole_lstm_step", "peephole_lstm_over_sequence", "cho_gru_stack_step"
T1, T2, T3 = "test_peephole_step_by_hand", "test_peephole_step_matches_torch", "test_padded_sequence_by_rows"
T4, T5, T6 = "test_padded_sequence_matches_torch", "test_cho_gru_by_hand", "test_cho_gru_matches_torch"

BLOCKS = "pre_i, pre_f, pre_g, pre_o ="
SHOW = "show = torch.sigmoid(pre_o + w_co * new_memory)"
FREEZE = "h_t, c_t = torch.where(now, h_new, h_t), torch.where(now, c_new, c_t)"
OUTPUT = "every_h.append(torch.where(now, h_new, 0.0))"
CANDIDATE = "torch.tanh(x_n + (reset * h_prev) @ weight_hh[2 * H :].T + bias_hh[2 * H :])"
GATES = "reset = torch.sigmoid(x_r + h_r)\n        update = torch.sigmoid(x_z + h_z)"
BUGS = {
    # task 1: peephole_lstm_step
    "lstm_gates_g_and_o_swapped": Bug(STEP, [(BLOCKS, "pre_i, pre_f, pre_o, pre_g =")], {T1, T2}),
    "lstm_gates_i_and_f_swapped": Bug(STEP, [(BLOCKS, "pre_f, pre_i, pre_g, pre_o =")], {T2}),
    "no_tanh_on_the_memory": Bug(
        STEP, [("return show * torch.tanh(new_memory), new_memory", "return show * new_memory, new_memory")], {T1, T2}
    ),
    "candidate_squashed_by_a_sigmoid": Bug(STEP, [("write * torch.tanh(pre_g)", "write * torch.sigmoid(pre_g)")], {T1}),
    "output_gate_sees_the_old_memory": Bug(STEP, [(SHOW, "show = torch.sigmoid(pre_o + w_co * c)")], {T1}),
    "output_peephole_dropped": Bug(STEP, [(SHOW, "show = torch.sigmoid(pre_o)")], {T1}),
    "peepholes_i_and_f_swapped": Bug(
        STEP, [("w_ci, w_cf, w_co = peephole.split(H)", "w_cf, w_ci, w_co = peephole.split(H)")], {T1}
    ),
    "peepholes_read_the_hidden_state": Bug(
        STEP, [("pre_i + w_ci * c)", "pre_i + w_ci * h)"), ("pre_f + w_cf * c)", "pre_f + w_cf * h)")], {T1}
    ),
    # task 2: peephole_lstm_over_sequence
    "zeros_of_the_default_dtype": Bug(
        SEQUENCE,
        [("start = x.new_zeros(B, weight_hh.shape[1])", "start = torch.zeros(B, weight_hh.shape[1], device=x.device)")],
        {T3},
    ),
    "state_not_carried": Bug(
        SEQUENCE, [("peephole_lstm_step(x_t, h_t, c_t,", "peephole_lstm_step(x_t, *state,")], {T3, T4}
    ),
    "initial_state_ignored": Bug(SEQUENCE, [("if state is None:", "if True:")], {T3, T4}),
    "state_runs_through_padding": Bug(SEQUENCE, [(FREEZE, "h_t, c_t = h_new, c_new")], {T3, T4}),
    "state_detached_between_steps": Bug(
        SEQUENCE,
        [(FREEZE, "h_t, c_t = torch.where(now, h_new, h_t).detach(), torch.where(now, c_new, c_t).detach()")],
        {T4},
    ),
    "padded_outputs_hold_the_state": Bug(SEQUENCE, [(OUTPUT, "every_h.append(h_t)")], {T3, T4}),
    "length_off_by_one": Bug(SEQUENCE, [("< lengths.unsqueeze(1)", "<= lengths.unsqueeze(1)")], {T3, T4}),
    "mask_on_the_wrong_axis": Bug(
        SEQUENCE,
        [("< lengths.unsqueeze(1)  #", "< lengths  #"), ("real[:, t].unsqueeze(1)", "real[t].unsqueeze(1)")],
        {T3, T4},
    ),
    "final_h_gathered_at_length_minus_one": Bug(
        SEQUENCE,
        [
            (
                "return torch.stack(every_h, dim=1), (h_t, c_t)",
                "outputs = torch.stack(every_h, dim=1)\n"
                "    return outputs, (outputs[torch.arange(B, device=x.device), lengths - 1], c_t)",
            )
        ],
        {T3},
    ),
    # task 3: cho_gru_stack_step
    "torch_reset_placement": Bug(
        GRU, [(CANDIDATE, "torch.tanh(x_n + reset * (h_prev @ weight_hh[2 * H :].T + bias_hh[2 * H :]))")], {T5}
    ),
    "reset_on_b_hn_too": Bug(
        GRU,
        [(CANDIDATE, "torch.tanh(x_n + (reset * h_prev) @ weight_hh[2 * H :].T + reset * bias_hh[2 * H :])")],
        {T5},
    ),
    "b_hn_dropped": Bug(GRU, [(CANDIDATE, "torch.tanh(x_n + (reset * h_prev) @ weight_hh[2 * H :].T)")], {T5}),
    "reset_ignored": Bug(
        GRU, [(CANDIDATE, "torch.tanh(x_n + h_prev @ weight_hh[2 * H :].T + bias_hh[2 * H :])")], {T5, T6}
    ),
    "reset_on_the_whole_preactivation": Bug(
        GRU, [(CANDIDATE, "torch.tanh(reset * (x_n + h_prev @ weight_hh[2 * H :].T + bias_hh[2 * H :]))")], {T5, T6}
    ),
    "gru_gates_r_and_z_swapped": Bug(
        GRU,
        [(GATES, "reset = torch.sigmoid(x_z + h_z)\n        update = torch.sigmoid(x_r + h_r)")],
        {T5, T6},
    ),
    "gru_interpolation_swapped": Bug(
        GRU,
        [("(1 - update) * candidate + update * h_prev", "update * candidate + (1 - update) * h_prev")],
        {T5, T6},
    ),
    "candidate_from_the_update_block": Bug(
        GRU,
        [(CANDIDATE, "torch.tanh(x_n + (reset * h_prev) @ weight_hh[H : 2 * H].T + bias_hh[2 * H :])")],
        {T5, T6},
    ),
    # the stack (new in the review): what each layer reads, and what comes back
    "every_layer_reads_x": Bug(GRU, [("(below @ weight_ih.T + bias_ih)", "(x @ weight_ih.T + bias_ih)")], {T5, T6}),
    "layer_above_reads_the_old_state_below": Bug(
        GRU,
        [
            (
                "(below @ weight_ih.T + bias_ih)",
                "((x if not new_states else h[len(new_states) - 1]) @ weight_ih.T + bias_ih)",
            )
        ],
        {T5, T6},
    ),
    "returns_only_the_top_layer": Bug(GRU, [("return torch.stack(new_states)", "return below")], {T5, T6}),
}

VARIANTS = {
    # task 1: the gates one at a time, from explicit row slices
    "step_gate_by_gate": Variant(
        STEP,
        "def peephole_lstm_step(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh, peephole):\n"
        "    H = h.shape[1]\n"
        "\n"
        "    def pre(k):  # gate k in torch's order i, f, g, o\n"
        "        rows = slice(k * H, (k + 1) * H)\n"
        "        from_x = torch.addmm(bias_ih[rows], x, weight_ih[rows].T)\n"
        "        return from_x + torch.addmm(bias_hh[rows], h, weight_hh[rows].T)\n"
        "\n"
        "    i = torch.sigmoid(pre(0) + peephole[0:H] * c)\n"
        "    f = torch.sigmoid(pre(1) + peephole[H : 2 * H] * c)\n"
        "    c_next = f * c + i * torch.tanh(pre(2))\n"
        "    o = torch.sigmoid(pre(3) + peephole[2 * H : 3 * H] * c_next)\n"
        "    return o * torch.tanh(c_next), c_next\n",
    ),
    # task 1: torch.nn.functional.linear, chunk, and the peepholes as a (3, H) matrix
    "step_linear_and_chunk": Variant(
        STEP,
        "import torch.nn.functional as F\n"
        "\n"
        "def peephole_lstm_step(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh, peephole):\n"
        "    i, f, g, o = (F.linear(x, weight_ih, bias_ih) + F.linear(h, weight_hh, bias_hh)).chunk(4, dim=-1)\n"
        "    p = peephole.view(3, -1)\n"
        "    c_next = torch.sigmoid(f + p[1] * c) * c + torch.sigmoid(i + p[0] * c) * torch.tanh(g)\n"
        "    h_next = torch.sigmoid(o + p[2] * c_next) * torch.tanh(c_next)\n"
        "    return h_next, c_next\n",
    ),
    # task 1: einsum over the weights seen as (4, H, .) and the gates stacked
    "step_einsum": Variant(
        STEP,
        "def peephole_lstm_step(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh, peephole):\n"
        "    B, H = h.shape\n"
        "    gates = (torch.einsum('ghi,bi->gbh', weight_ih.view(4, H, -1), x)\n"
        "             + torch.einsum('ghk,bk->gbh', weight_hh.view(4, H, H), h)\n"
        "             + (bias_ih + bias_hh).view(4, 1, H))  # (4, B, H)\n"
        "    w = peephole.view(3, 1, H)\n"
        "    input_gate = (gates[0] + w[0] * c).sigmoid()\n"
        "    forget_gate = (gates[1] + w[1] * c).sigmoid()\n"
        "    memory = forget_gate * c + input_gate * gates[2].tanh()\n"
        "    output_gate = (gates[3] + w[2] * memory).sigmoid()\n"
        "    return output_gate * memory.tanh(), memory\n",
    ),
    # task 2: the mask as numbers, the state blended and the outputs multiplied (padding is finite)
    "sequence_mask_multiplied": Variant(
        SEQUENCE,
        "def peephole_lstm_over_sequence(x, lengths, weight_ih, weight_hh, bias_ih, bias_hh, peephole, state=None):\n"
        "    B, S, _ = x.shape\n"
        "    H = weight_hh.shape[1]\n"
        "    if state is None:\n"
        "        state = (torch.zeros(B, H, dtype=x.dtype, device=x.device),\n"
        "                 torch.zeros(B, H, dtype=x.dtype, device=x.device))\n"
        "    h, c = state\n"
        "    outputs = []\n"
        "    for t in range(S):\n"
        "        m = (lengths > t).to(x.dtype).unsqueeze(1)  # (B, 1): 1 at a real step\n"
        "        h_new, c_new = peephole_lstm_step(x[:, t], h, c, weight_ih, weight_hh, bias_ih, bias_hh, peephole)\n"
        "        h = m * h_new + (1 - m) * h\n"
        "        c = m * c_new + (1 - m) * c\n"
        "        outputs.append(m * h_new)\n"
        "    return torch.stack(outputs, dim=1), (h, c)\n",
    ),
    # task 2: one row at a time on its real steps only, padded with zeros afterwards
    "sequence_row_by_row": Variant(
        SEQUENCE,
        "def peephole_lstm_over_sequence(x, lengths, weight_ih, weight_hh, bias_ih, bias_hh, peephole, state=None):\n"
        "    B, S, _ = x.shape\n"
        "    H = weight_hh.shape[1]\n"
        "    if state is None:\n"
        "        zeros = x.new_zeros(B, H)\n"
        "        state = (zeros, zeros)\n"
        "    rows, finals_h, finals_c = [], [], []\n"
        "    for b in range(B):\n"
        "        h, c = state[0][b : b + 1], state[1][b : b + 1]\n"
        "        seen = []\n"
        "        for t in range(int(lengths[b])):\n"
        "            x_t = x[b : b + 1, t]\n"
        "            h, c = peephole_lstm_step(x_t, h, c, weight_ih, weight_hh, bias_ih, bias_hh, peephole)\n"
        "            seen.append(h)\n"
        "        seen.append(x.new_zeros(S - len(seen), H))\n"
        "        rows.append(torch.cat(seen, dim=0))\n"
        "        finals_h.append(h)\n"
        "        finals_c.append(c)\n"
        "    return torch.stack(rows), (torch.cat(finals_h), torch.cat(finals_c))\n",
    ),
    # task 2: outputs written in place into a zero tensor, the state updated where real by index
    "sequence_index_assign": Variant(
        SEQUENCE,
        "def peephole_lstm_over_sequence(x, lengths, weight_ih, weight_hh, bias_ih, bias_hh, peephole, state=None):\n"
        "    B, S, _ = x.shape\n"
        "    H = weight_hh.shape[1]\n"
        "    h, c = state if state is not None else (x.new_zeros(B, H), x.new_zeros(B, H))\n"
        "    outputs = x.new_zeros(B, S, H)\n"
        "    for t in range(S):\n"
        "        real = lengths > t  # (B,)\n"
        "        if not real.any():\n"
        "            break\n"
        "        h_new, c_new = peephole_lstm_step(x[:, t], h, c, weight_ih, weight_hh, bias_ih, bias_hh, peephole)\n"
        "        h, c = h.clone(), c.clone()\n"
        "        h[real] = h_new[real]\n"
        "        c[real] = c_new[real]\n"
        "        outputs[real, t] = h_new[real]\n"
        "    return outputs, (h, c)\n",
    ),
    # task 3: each gate's matrices taken apart, torch.nn.functional.linear, the layers by index
    "gru_per_gate_matrices": Variant(
        GRU,
        "import torch.nn.functional as F\n"
        "\n"
        "def cho_gru_stack_step(x, h, layers):\n"
        "    states = []\n"
        "    for k in range(len(layers)):\n"
        "        weight_ih, weight_hh, bias_ih, bias_hh = layers[k]\n"
        "        inp = x if k == 0 else states[k - 1]\n"
        "        W_ir, W_iz, W_in = weight_ih.chunk(3)\n"
        "        W_hr, W_hz, W_hn = weight_hh.chunk(3)\n"
        "        b_ir, b_iz, b_in = bias_ih.chunk(3)\n"
        "        b_hr, b_hz, b_hn = bias_hh.chunk(3)\n"
        "        r = torch.sigmoid(F.linear(inp, W_ir, b_ir) + F.linear(h[k], W_hr, b_hr))\n"
        "        z = torch.sigmoid(F.linear(inp, W_iz, b_iz) + F.linear(h[k], W_hz, b_hz))\n"
        "        n = torch.tanh(F.linear(inp, W_in, b_in) + F.linear(r * h[k], W_hn, b_hn))\n"
        "        states.append(z * h[k] + (1 - z) * n)\n"
        "    return torch.stack(states, dim=0)\n",
    ),
    # task 3: the whole hidden product for the gates (its third block unused), lerp, written into a new tensor
    "gru_full_product_then_candidate": Variant(
        GRU,
        "def cho_gru_stack_step(x, h, layers):\n"
        "    H = h.shape[-1]\n"
        "    h_next = torch.empty_like(h)\n"
        "    inp = x\n"
        "    for k, (weight_ih, weight_hh, bias_ih, bias_hh) in enumerate(layers):\n"
        "        gx = inp @ weight_ih.T + bias_ih\n"
        "        gh = h[k] @ weight_hh.T + bias_hh  # the third block is torch's, not used\n"
        "        r = torch.sigmoid(gx[:, :H] + gh[:, :H])\n"
        "        z = torch.sigmoid(gx[:, H : 2 * H] + gh[:, H : 2 * H])\n"
        "        n = torch.tanh(gx[:, 2 * H :] + torch.mm(r * h[k], weight_hh[2 * H :].t()) + bias_hh[2 * H :])\n"
        "        inp = torch.lerp(n, h[k], z)  # a tensor of its own: the next layer reads it, not a view of h_next\n"
        "        h_next[k] = inp\n"
        "    return h_next\n",
    ),
    # task 3: einsum over the weights seen as (3, H, .), the stack by recursion
    "gru_einsum_recursive": Variant(
        GRU,
        "def one_layer(x, h, weight_ih, weight_hh, bias_ih, bias_hh):\n"
        "    B, H = h.shape\n"
        "    from_x = torch.einsum('ghi,bi->gbh', weight_ih.view(3, H, -1), x) + bias_ih.view(3, 1, H)\n"
        "    W_hh = weight_hh.view(3, H, H)\n"
        "    b_hh = bias_hh.view(3, 1, H)\n"
        "    r = torch.sigmoid(from_x[0] + torch.einsum('hk,bk->bh', W_hh[0], h) + b_hh[0])\n"
        "    z = torch.sigmoid(from_x[1] + torch.einsum('hk,bk->bh', W_hh[1], h) + b_hh[1])\n"
        "    n = torch.tanh(from_x[2] + torch.einsum('hk,bk->bh', W_hh[2], r * h) + b_hh[2])\n"
        "    return (1 - z) * n + z * h\n"
        "\n"
        "def cho_gru_stack_step(x, h, layers):\n"
        "    first = one_layer(x, h[0], *layers[0])\n"
        "    if len(layers) == 1:\n"
        "        return first.unsqueeze(0)\n"
        "    return torch.cat([first.unsqueeze(0), cho_gru_stack_step(first, h[1:], layers[1:])])\n",
    ),
    # task 3 (new in the review): chapter 1 §1.5's unbatched lines, one row and one layer at a time (reuse the
    # text allows: the stack around them is the task)
    "gru_chapter_lines_row_by_row": Variant(
        GRU,
        "def cho_gru_stack_step(x, h, layers):\n"
        "    rows = []\n"
        "    for b in range(x.shape[0]):\n"
        "        x_t, per_layer = x[b], []\n"
        "        for k, (weight_ih, weight_hh, bias_ih, bias_hh) in enumerate(layers):\n"
        "            W_ir, W_iz, W_in = weight_ih.chunk(3)\n"
        "            W_hr, W_hz, W_hn = weight_hh.chunk(3)\n"
        "            b_ir, b_iz, b_in = bias_ih.chunk(3)\n"
        "            b_hr, b_hz, b_hn = bias_hh.chunk(3)\n"
        "            h_prev = h[k, b]\n"
        "            r_t = torch.sigmoid(W_ir @ x_t + b_ir + W_hr @ h_prev + b_hr)\n"
        "            z_t = torch.sigmoid(W_iz @ x_t + b_iz + W_hz @ h_prev + b_hz)\n"
        "            n_cho = torch.tanh(W_in @ x_t + b_in + W_hn @ (r_t * h_prev) + b_hn)\n"
        "            x_t = (1 - z_t) * n_cho + z_t * h_prev\n"
        "            per_layer.append(x_t)\n"
        "        rows.append(torch.stack(per_layer))\n"
        "    return torch.stack(rows, dim=1)\n",
    ),
}

globals().update(exercise_tests(EXERCISE, BUGS, VARIANTS))  # the fixture `graded` and the file's five tests
