"""Exercise 1's realistic wrong answers score below full marks (tests/buggy_answers.py says how).

| bug | the edit | must fail |
|---|---|---|
| LSTM gates g and o swapped | blocks read as i, f, o, g | step by hand, step vs torch, sequence vs torch |
| LSTM gates i and f swapped | blocks read as f, i, g, o | step by hand, step vs torch, sequence vs torch |
| no tanh on the memory | h' = o * c' | step by hand, step vs torch, sequence vs torch |
| state not carried, from the initial state | every step starts from ``state`` | sequence vs torch |
| state not carried, from zeros | every step starts from zeros | sequence vs torch |
| initial state ignored | always starts from zeros | sequence vs torch |
| GRU gates r and z swapped | blocks read as z, r, n | GRU by hand, GRU vs torch |
| reset on the whole pre-activation | n = tanh(r * (W_in x + b_in + W_hn h + b_hn)) | GRU by hand, GRU vs torch |
| reset before the product | n = tanh(W_in x + b_in + W_hn (r * h) + b_hn), Cho et al.'s | GRU by hand, GRU vs torch |
| b_hn outside the reset product | n = tanh(W_in x + b_in + r * (W_hn h) + b_hn) | GRU by hand, GRU vs torch |
| interpolation swapped | h' = z * n + (1 - z) * h | GRU by hand, GRU vs torch |
"""

from buggy_answers import Bug, buggy_answer_tests, graded_fixture

STEP_TESTS = {"test_step_shapes", "test_step_matches_torch", "test_sequence_matches_torch"}
GRU_TESTS = {"test_gru_step_by_hand", "test_gru_step_matches_torch"}
CANDIDATE = "torch.tanh(x_n + reset * h_n)"
CARRIED = "lstm_cell_step(x_t, h_t, c_t,"
LOOP = "    for x_t in x.unbind(dim=1):\n"
BUGS = {
    "lstm_gates_g_and_o_swapped": Bug(
        "lstm_cell_step", [("pre_i, pre_f, pre_g, pre_o =", "pre_i, pre_f, pre_o, pre_g =")], STEP_TESTS
    ),
    "lstm_gates_i_and_f_swapped": Bug(
        "lstm_cell_step", [("pre_i, pre_f, pre_g, pre_o =", "pre_f, pre_i, pre_g, pre_o =")], STEP_TESTS
    ),
    "no_tanh_on_the_memory": Bug(
        "lstm_cell_step",
        [("return show * torch.tanh(new_memory), new_memory", "return show * new_memory, new_memory")],
        STEP_TESTS,
    ),
    "state_not_carried_from_the_initial_state": Bug(
        "lstm_over_sequence", [(CARRIED, "lstm_cell_step(x_t, *state,")], {"test_sequence_matches_torch"}
    ),
    "state_not_carried_from_zeros": Bug(
        "lstm_over_sequence",
        [(LOOP, LOOP + "        h_t = c_t = x.new_zeros(x.shape[0], weight_hh.shape[1])\n")],
        {"test_sequence_matches_torch"},
    ),
    "initial_state_ignored": Bug(
        "lstm_over_sequence", [("if state is None:", "if True:")], {"test_sequence_matches_torch"}
    ),
    "gru_gates_r_and_z_swapped": Bug(
        "gru_cell_step",
        [("x_r, x_z, x_n = from_x", "x_z, x_r, x_n = from_x"), ("h_r, h_z, h_n = from_h", "h_z, h_r, h_n = from_h")],
        GRU_TESTS,
    ),
    "gru_reset_on_the_whole_preactivation": Bug(
        "gru_cell_step", [(CANDIDATE, "torch.tanh(reset * (x_n + h_n))")], GRU_TESTS
    ),
    "gru_reset_before_the_product": Bug(
        "gru_cell_step",
        [(CANDIDATE, "torch.tanh(x_n + (reset * h) @ weight_hh[2 * H :].T + bias_hh[2 * H :])")],
        GRU_TESTS,
    ),
    "gru_b_hn_outside_the_reset": Bug(
        "gru_cell_step",
        [(CANDIDATE, "torch.tanh(x_n + reset * (h @ weight_hh[2 * H :].T) + bias_hh[2 * H :])")],
        GRU_TESTS,
    ),
    "gru_interpolation_swapped": Bug(
        "gru_cell_step",
        [("(1 - update) * candidate + update * h", "update * candidate + (1 - update) * h")],
        GRU_TESTS,
    ),
}
graded = graded_fixture("ex01_lstm_cell", BUGS)
test_the_solution_scores_full_marks, test_a_buggy_answer_scores_below_full_marks = buggy_answer_tests(BUGS)
