"""Exercise 4's realistic wrong answers score below full marks (tests/buggy_answers.py says how).

| bug | the edit | must fail |
|---|---|---|
| softmax over the wrong axis | ``dim=1`` (the queries) in the masked softmax | softmax, attend, step, greedy |
| padding attended | the step attends without the mask | step |
| query from the new state | the step attends again with s_t for the prediction (Luong's order) | step, steps, greedy |
| query from the bottom layer | ``state[0]`` instead of the top layer's ``state[-1]`` | step |
| context not fed into the cell | the GRU reads zeros where the context goes | step, steps, greedy |
| no log-softmax | the step returns the output layer's scores | step, steps |
| state not carried | greedy decoding feeds s_0 to every step | greedy, rows |
| all rows stopped at the first eos | ``ended.any()`` instead of ``ended.all()`` | greedy, rows |
| ended rows not padded | a row goes on writing tokens after its eos | greedy, rows |
| no early stop | always ``max_len`` steps | greedy, rows |
| decoding starts from padding | ``PAD_ID`` instead of ``BOS_ID`` as y_0 | greedy, rows |
"""

from buggy_answers import Bug, buggy_answer_tests, graded_fixture

STEP = "attention_decoder_step"
GREEDY = "greedy_decode"
ATTEND = "context, weights = attend(query, memory, memory, mask, W_q, b_q, W_k, v)"
CELL = "layers.rnn(torch.cat([embedded, context], dim=2), state)"
PREDICT = "    logits = layers.output("
STEP_TESTS = {"test_decoder_step", "test_decoder_steps_and_gradients"}
GREEDY_TESTS = {"test_greedy_matches_seqlab", "test_greedy_rows_end_on_their_own"}
BUGS = {
    "softmax_over_the_queries": Bug(
        "masked_softmax",
        [
            (
                "torch.softmax(torch.where(real, scores, floor), dim=-1)",
                "torch.softmax(torch.where(real, scores, floor), dim=1)",
            )
        ],
        {"test_softmax_real_keys", "test_attend", "test_decoder_step", "test_greedy_matches_seqlab"},
    ),
    "padding_attended": Bug(
        STEP,
        [(ATTEND, ATTEND.replace("mask, W_q", "None, W_q"))],
        {"test_decoder_step"},
    ),
    "query_from_the_new_state": Bug(
        STEP,
        [
            (
                PREDICT,
                "    context, weights = attend(new_state[-1].unsqueeze(1), memory, memory, mask, W_q, b_q, W_k, v)\n"
                + PREDICT,
            )
        ],
        STEP_TESTS | {"test_greedy_matches_seqlab"},
    ),
    "query_from_the_bottom_layer": Bug(
        STEP,
        [("query = state[-1].unsqueeze(1)", "query = state[0].unsqueeze(1)")],
        {"test_decoder_step"},
    ),
    "context_not_fed_into_the_cell": Bug(
        STEP,
        [(CELL, CELL.replace("[embedded, context]", "[embedded, torch.zeros_like(context)]"))],
        STEP_TESTS | {"test_greedy_matches_seqlab"},
    ),
    "scores_not_log_probabilities": Bug(
        STEP,
        [("return torch.log_softmax(logits, dim=-1), new_state", "return logits, new_state")],
        STEP_TESTS,
    ),
    "state_not_carried": Bug(
        GREEDY,
        [("log_probs, state, _ = attention_decoder_step(", "log_probs, _, _ = attention_decoder_step(")],
        GREEDY_TESTS,
    ),
    "all_rows_stopped_at_the_first_eos": Bug(GREEDY, [("if ended.all():", "if ended.any():")], GREEDY_TESTS),
    "ended_rows_not_padded": Bug(
        GREEDY,
        [("prev = log_probs.argmax(dim=-1).masked_fill(ended, PAD_ID)", "prev = log_probs.argmax(dim=-1)")],
        GREEDY_TESTS,
    ),
    "no_early_stop": Bug(
        GREEDY, [("if ended.all():\n            break", "if ended.all():\n            pass")], GREEDY_TESTS
    ),
    "decoding_starts_from_padding": Bug(
        GREEDY,
        [("torch.full((src.shape[0],), BOS_ID,", "torch.full((src.shape[0],), PAD_ID,")],
        GREEDY_TESTS,
    ),
}
graded = graded_fixture("ex04_attention", BUGS)
test_the_solution_scores_full_marks, test_a_buggy_answer_scores_below_full_marks = buggy_answer_tests(BUGS)
