"""Exercise 3's realistic wrong answers score below full marks (tests/buggy_answers.py says how).

| bug | the edit | must fail |
|---|---|---|
| stops at the first eos | the loop ends when any row has written ``<eos>`` | by hand, seqlab |
| state not carried | every step from the encoder's s_0 (the new state dropped) | seqlab |
| not from bos | every row starts from padding | by hand, seqlab |
| argmax over the batch | the most likely row for each token, ``max(dim=0)`` | by hand, seqlab, scores |
| eos not padded | a row that has ended goes on writing tokens | by hand, seqlab |
| one step short | ``range(max_len - 1)`` | by hand, seqlab |
| scores after eos | the log-probabilities of the steps after ``<eos>`` added | scores |
| padding counted | the loss sums every position's log-probability | loop, padding |
| mean over all positions | divided by B * T instead of the number of real tokens | loop, padding |
"""

from buggy_answers import Bug, buggy_answer_tests, graded_fixture

STEP = "log_probs, state = decoder_step(model.decoder, prev, state, context)"
SCORE = "scores = scores + best.masked_fill(ended, 0.0)"
SELECT = "torch.where(real, picked, torch.zeros_like(picked)).sum()"
BY_HAND, SEQLAB, SCORES = "test_greedy_by_hand", "test_greedy_matches_seqlab", "test_greedy_scores"
BUGS = {
    "stops_at_the_first_eos": Bug("greedy_decode", [("if ended.all():", "if ended.any():")], {BY_HAND, SEQLAB}),
    "state_not_carried": Bug(
        "greedy_decode", [(STEP, "log_probs, _ = decoder_step(model.decoder, prev, state, context)")], {SEQLAB}
    ),
    "not_from_bos": Bug(
        "greedy_decode",
        [("torch.full((B,), BOS_ID, dtype=torch.long", "torch.full((B,), PAD_ID, dtype=torch.long")],
        {BY_HAND, SEQLAB},
    ),
    "argmax_over_the_batch": Bug(
        "greedy_decode", [("log_probs.max(dim=1)", "log_probs.max(dim=0)")], {BY_HAND, SEQLAB, SCORES}
    ),
    "eos_not_padded": Bug(
        "greedy_decode", [("prev = prev.masked_fill(ended, PAD_ID)", "prev = prev")], {BY_HAND, SEQLAB}
    ),
    "one_step_short": Bug("greedy_decode", [("range(max_len)", "range(max_len - 1)")], {BY_HAND, SEQLAB}),
    "scores_after_eos": Bug("greedy_decode", [(SCORE, "scores = scores + best")], {SCORES}),
    "padding_counted": Bug(
        "masked_nll", [(SELECT, "picked.sum()")], {"test_loss_matches_loop", "test_loss_padding_and_gradient"}
    ),
    "mean_over_all_positions": Bug(
        "masked_nll",
        [("return -total / real.sum().clamp(min=1)", "return -total / targets.numel()")],
        {"test_loss_matches_loop", "test_loss_padding_and_gradient"},
    ),
}
graded = graded_fixture("ex03_seq2seq", BUGS)
test_the_solution_scores_full_marks, test_a_buggy_answer_scores_below_full_marks = buggy_answer_tests(BUGS)
