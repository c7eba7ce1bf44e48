"""Exercise 2's realistic wrong answers score below full marks (tests/buggy_answers.py says how).

| bug | the edit | must fail |
|---|---|---|
| whole row flipped | ``reverse_padded`` is ``x.flip(1)``: the padding moves to the front | reverse, vs torch, padding |
| padding in the backward pass | the padded batch flipped, not reversed within its lengths | vs torch, padding |
| backward not reversed back | the backward outputs left in reading order | vs torch, padding |
| backward final state at the wrong end | taken at the last real token, like the forward one | shapes, vs torch |
| backward final state from the GRU | the one-directional GRU's h_n, after the padding | shapes, vs torch |
| forward final state from the GRU | the one-directional GRU's h_n, after the padding | shapes, vs torch |
| padding not zeroed | the outputs keep what the GRUs computed on the padding | shapes, vs torch |
"""

from buggy_answers import Bug, buggy_answer_tests, graded_fixture

MATCHES = {"test_encode_matches_torch", "test_encode_padding_and_gradients"}
FINAL_STATES = {"test_encode_shapes", "test_encode_matches_torch"}
BACKWARD_IN = "backward_rnn(reverse_padded(embedded, lengths))"
BACKWARD_OUT = "reverse_padded(backward_reversed, lengths)"
BUGS = {
    "whole_row_flipped": Bug(
        "reverse_padded",
        [("return x.gather(1, source.unsqueeze(2).expand_as(x))", "return x.flip(1)")],
        {"test_reverse_padded"} | MATCHES,
    ),
    "padding_in_the_backward_pass": Bug(
        "bidirectional_encode",
        [(BACKWARD_IN, "backward_rnn(embedded.flip(1))"), (BACKWARD_OUT, "backward_reversed.flip(1)")],
        MATCHES,
    ),
    "backward_not_reversed_back": Bug("bidirectional_encode", [(BACKWARD_OUT, "backward_reversed")], MATCHES),
    "backward_final_state_at_the_last_token": Bug(
        "bidirectional_encode",
        [("h_backward = backward_states[:, 0]", "h_backward = backward_states.gather(1, last).squeeze(1)")],
        FINAL_STATES,
    ),
    "backward_final_state_from_the_gru": Bug(
        "bidirectional_encode",
        [
            ("backward_reversed, _ = backward_rnn(", "backward_reversed, h_back = backward_rnn("),
            ("h_backward = backward_states[:, 0]", "h_backward = h_back[0]"),
        ],
        FINAL_STATES,
    ),
    "forward_final_state_from_the_gru": Bug(
        "bidirectional_encode",
        [
            ("forward_states, _ = forward_rnn(embedded)", "forward_states, h_fwd = forward_rnn(embedded)"),
            ("h_forward = forward_states.gather(1, last).squeeze(1)", "h_forward = h_fwd[0]"),
        ],
        FINAL_STATES,
    ),
    "padding_not_zeroed": Bug("bidirectional_encode", [(".masked_fill(~real.unsqueeze(2), 0.0)", "")], FINAL_STATES),
}
graded = graded_fixture("ex02_bidirectional_encoder", BUGS)
test_the_solution_scores_full_marks, test_a_buggy_answer_scores_below_full_marks = buggy_answer_tests(BUGS)
