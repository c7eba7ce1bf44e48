"""Exercise 3's realistic answers, right and wrong, against its tests (tests/buggy_answers.py says how).

| bug | the edit | must fail |
|---|---|---|
| pieces strided | token w's pieces taken as units w, w + V, ... (``unflatten`` to (J, V)) | maxout |
| mean of the pieces | each token's logit the mean of its pieces, not the largest | maxout |
| output features reordered | the output layer reads ``[ctx; s_t; embed(y_(t-1))]`` | pool one, maxout |
| rnn input reordered | the recurrent layer reads ``[ctx; embed(y_(t-1))]`` | pool one, maxout |
| old state returned | the step returns s_(t-1), the state it was given | pool one |
| probabilities, not logs | ``softmax`` where ``log_softmax`` belongs | pool one, maxout |
| multiplied by the mask | ``token_log_p * is_real``: -inf at padding gives NaN | padding |
| nothing real gives NaN | ``sentence_loss[has_real].mean()``: NaN on a batch of padding only | padding |
| empty rows averaged in | the mean over all B rows, a row of padding only counting as a sentence of loss 0 | padding |
| the token mean | chapter 3's loss, every real token 1/N (sequence_nll) | by hand, padding |
| each sentence summed | each sentence's total, not its mean (Sutskever et al.'s objective) | by hand, padding |
| divided by T | each sentence divided by the padded length T, not by its N_y | by hand, padding |
| padding counted | the padded positions' log-probabilities enter the sums | by hand, padding |
| state not carried | every step reads s_0 (its first message now asks about the state) | translator, scores |
| token not fed back | every step reads <bos>, not the token the row wrote | by hand, translator |
| eos allowed at min_len | ``t < min_len``: <eos> ruled out one step too few | by hand, scores |
| eos given log-prob 0 | <eos> "ruled out" with 0, the largest log-probability, so it is always written | by hand |
| scores renormalised | the scores read log_softmax of the log-probabilities without <eos> | scores |
| scores after eos | the log-probabilities of the steps after <eos> added | scores |
| scores in float32 | the running scores start as float32 zeros whatever the model's dtype | scores |
| eos not padded | a row that has ended goes on writing tokens | by hand, translator |
| stops at the first eos | the loop ends when any row has written <eos> | by hand, translator |
| one step short | ``range(1, max_len)`` | by hand, translator |
| not from bos | every row starts from padding | by hand, translator |
| argmax over the batch | ``max(dim=0)``: the most likely row for each token | by hand, translator |
| log_softmax over the pieces | ``log_softmax`` over all J V pieces, then the max (right only at J = 1) | maxout |
| top h from the state | the output layer reads ``state[-1]``: an LSTM's is c, not its top h | pool one |
| pad_id ignored | real positions are ``targets != 0`` whatever ``pad_id`` says | by hand |
| eos ruled out from 0 | steps counted from 0: <eos> ruled out at steps 1..min_len + 1 | by hand |
| step delegated | ``decoder.step`` whatever the pool size (the chapter's step: right only at J = 1) | maxout |
| greedy delegated | ``seqlab.models.decoding.greedy_search`` as it is: ``min_len`` ignored | by hand |
| eos padded over | ``done`` updated before the padding: the row's <eos> becomes padding | by hand, translator |

Every bug is caught by a visible test of its own task first, and that test's message starts with the
function's name. The issue's three ex03 bugs are here: multiplied by the mask, nothing real gives
NaN, state not carried. Task 3 is graded with the grader's own decoder_step (a hidden block of test 5 defines it), so a
task-1 bug costs only task 1's points. The correct variants: decoder_step with a loop over the tokens' pieces,
with ``view`` and ``max(...).values`` over the recurrent layer called by hand, with strided slices and
``logsumexp``, and delegating to ``ContextDecoder.step`` at ``pool_size=1``; sentence_mean_nll as a loop over the
rows with indexing, as one weighted sum with ``torch.where``, and with seqlab's ``sequence_nll`` on each row;
sentence_mean_nll with torch's ``nll_loss``
and its ``ignore_index``; greedy_decode with a ``masked_fill`` of the <eos> column, with the raw choices padded
after each row's end step at the end, with per-row lists padded by seqlab, through
``seqlab.models.decoding.greedy_search`` around a step that calls decoder_step, and with ``topk(2)``.
"""

from buggy_answers import Bug, Variant, exercise_tests

EXERCISE = "ex03_seq2seq"
POOL_ONE, MAXOUT = "test_step_pool_one", "test_step_maxout"
LOSS_BY_HAND, LOSS_PADDING = "test_loss_by_hand", "test_loss_padding_and_gradient"
BY_HAND, TRANSLATOR, SCORES = "test_greedy_by_hand", "test_greedy_translator", "test_greedy_scores"

MAXOUT_LINE = "pieces.unflatten(-1, (-1, pool_size)).amax(dim=-1)"
FEATURES = "torch.cat([outputs, context[:, None], embedded], dim=-1)"
RECUR = "outputs, state = decoder.recur(embedded, state, context[:, None])"
SELECT = "token_log_p.masked_fill(~is_real, 0.0)"
MEAN = "return sentence_loss.sum() / has_real.sum().clamp(min=1)"
DIVIDE = "-token_log_p.sum(dim=-1) / lengths.clamp(min=1)"
STEP = "log_probs, state = decoder_step(model.decoder, token, state, context)"

BUGS = {
    "pieces_strided": Bug(
        "decoder_step", [(MAXOUT_LINE, "pieces.unflatten(-1, (pool_size, -1)).amax(dim=-2)")], {MAXOUT}
    ),
    "mean_of_the_pieces": Bug(
        "decoder_step", [(MAXOUT_LINE, "pieces.unflatten(-1, (-1, pool_size)).mean(dim=-1)")], {MAXOUT}
    ),
    "output_features_reordered": Bug(
        "decoder_step", [(FEATURES, "torch.cat([context[:, None], outputs, embedded], dim=-1)")], {POOL_ONE, MAXOUT}
    ),
    "rnn_input_reordered": Bug(
        "decoder_step",
        [(RECUR, "outputs, state = decoder.rnn(torch.cat([context[:, None], embedded], dim=-1), state)")],
        {POOL_ONE, MAXOUT},
    ),
    "old_state_returned": Bug("decoder_step", [(RECUR, RECUR.replace("outputs, state", "outputs, _"))], {POOL_ONE}),
    "probabilities_not_logs": Bug(
        "decoder_step",
        [("return logits.log_softmax(dim=-1), state", "return logits.softmax(dim=-1), state")],
        {POOL_ONE, MAXOUT},
    ),
    "multiplied_by_the_mask": Bug("sentence_mean_nll", [(SELECT, "token_log_p * is_real")], {LOSS_PADDING}),
    "nothing_real_gives_nan": Bug(
        "sentence_mean_nll", [(MEAN, "return sentence_loss[has_real].mean()")], {LOSS_PADDING}
    ),
    "empty_rows_averaged_in": Bug(
        "sentence_mean_nll", [(MEAN, "return sentence_loss.sum() / len(targets)")], {LOSS_PADDING}
    ),
    "the_token_mean": Bug(
        "sentence_mean_nll",
        [(MEAN, "return -token_log_p.sum() / lengths.sum().clamp(min=1)")],
        {LOSS_BY_HAND, LOSS_PADDING},
    ),
    "each_sentence_summed": Bug(
        "sentence_mean_nll", [(DIVIDE, "-token_log_p.sum(dim=-1)")], {LOSS_BY_HAND, LOSS_PADDING}
    ),
    "divided_by_T": Bug(
        "sentence_mean_nll", [(DIVIDE, "-token_log_p.sum(dim=-1) / targets.shape[1]")], {LOSS_BY_HAND, LOSS_PADDING}
    ),
    "padding_counted": Bug(
        "sentence_mean_nll", [(f"token_log_p = {SELECT}", "token_log_p = token_log_p")], {LOSS_BY_HAND, LOSS_PADDING}
    ),
    "state_not_carried": Bug(
        "greedy_decode", [(STEP, STEP.replace("log_probs, state", "log_probs, _"))], {TRANSLATOR, SCORES}
    ),
    "token_not_fed_back": Bug(
        "greedy_decode",
        [(STEP, "log_probs, state = decoder_step(model.decoder, torch.full_like(token, BOS_ID), state, context)")],
        {BY_HAND, TRANSLATOR},
    ),
    "eos_allowed_at_min_len": Bug("greedy_decode", [("if t <= min_len:", "if t < min_len:")], {BY_HAND, SCORES}),
    "eos_given_log_prob_zero": Bug(
        "greedy_decode", [('log_probs[:, EOS_ID] = float("-inf")', "log_probs[:, EOS_ID] = 0.0")], {BY_HAND}
    ),
    "scores_renormalised": Bug(
        "greedy_decode",
        [("best, token = log_probs.max(dim=-1)", "best, token = log_probs.log_softmax(dim=-1).max(dim=-1)")],
        {SCORES},
    ),
    "scores_after_eos": Bug("greedy_decode", [("total += torch.where(done, 0.0, best)", "total += best")], {SCORES}),
    "scores_in_float32": Bug(
        "greedy_decode", [("total = context.new_zeros(rows)", "total = torch.zeros(rows, device=src.device)")], {SCORES}
    ),
    "eos_not_padded": Bug(
        "greedy_decode", [("token = torch.where(done, PAD_ID, token)", "token = token")], {BY_HAND, TRANSLATOR}
    ),
    "stops_at_the_first_eos": Bug(
        "greedy_decode", [("if bool(done.all()):", "if bool(done.any()):")], {BY_HAND, TRANSLATOR}
    ),
    "one_step_short": Bug("greedy_decode", [("range(1, max_len + 1)", "range(1, max_len)")], {BY_HAND, TRANSLATOR}),
    "not_from_bos": Bug(
        "greedy_decode",
        [("torch.full((rows,), BOS_ID, dtype=torch.long", "torch.full((rows,), PAD_ID, dtype=torch.long")],
        {BY_HAND, TRANSLATOR},
    ),
    "log_softmax_over_the_pieces": Bug(
        "decoder_step",
        [
            ("pieces = decoder.output(features[:, 0])", "pieces = decoder.output(features[:, 0]).log_softmax(dim=-1)"),
            ("return logits.log_softmax(dim=-1), state", "return logits, state"),
        ],
        {MAXOUT},
    ),
    "top_h_from_the_state": Bug(
        "decoder_step",
        [(FEATURES, "torch.cat([state[-1][:, None], context[:, None], embedded], dim=-1)")],
        {POOL_ONE},
    ),
    "pad_id_ignored": Bug(
        "sentence_mean_nll", [("is_real = targets.ne(pad_id)", "is_real = targets.ne(0)")], {LOSS_BY_HAND}
    ),
    "eos_ruled_out_from_0": Bug("greedy_decode", [("if t <= min_len:", "if t - 1 <= min_len:")], {BY_HAND}),
    "eos_padded_over": Bug(
        "greedy_decode",
        [
            (
                "token = torch.where(done, PAD_ID, token)",
                "done |= token == EOS_ID\n        token = torch.where(done, PAD_ID, token)",
            ),
            ("written.append(token)\n        done |= token == EOS_ID", "written.append(token)"),
        ],
        {BY_HAND, TRANSLATOR},
    ),
    "step_delegated": Bug(
        "decoder_step",
        [(f"    {RECUR}", f"    return decoder.step(prev_tokens, state, context)\n    {RECUR}")],
        {MAXOUT},
    ),
    "greedy_delegated": Bug(
        "greedy_decode",
        [
            (
                "    context, _, state = model.encode(src, src_lengths)",
                "    from seqlab.models.decoding import greedy_search\n\n"
                "    start = model.start_decoding(src, src_lengths)\n"
                "    return greedy_search(model, start, len(src), max_len, src.device)\n"
                "    context, _, state = model.encode(src, src_lengths)",
            )
        ],
        {BY_HAND},
    ),
    "argmax_over_the_batch": Bug(
        "greedy_decode", [("log_probs.max(dim=-1)", "log_probs.max(dim=0)")], {BY_HAND, TRANSLATOR, SCORES}
    ),
}

STEP_HEAD = "def decoder_step(decoder, prev_tokens, state, context, pool_size=1):\n"
LOSS_HEAD = "def sentence_mean_nll(log_probs, targets, pad_id=0):\n"
GREEDY_HEAD = (
    "from seqlab.core.padding import BOS_ID, EOS_ID, PAD_ID\n\n\n@torch.no_grad()\n"
    "def greedy_decode(model, src, src_lengths, max_len, min_len=0):\n"
)
VARIANTS = {
    "step_loop_over_the_pieces": Variant(
        "decoder_step",
        STEP_HEAD
        + """    embedded = decoder.embedding(prev_tokens)
    rnn_input = torch.cat([embedded, context], dim=1).unsqueeze(1)
    top, state = decoder.rnn(rnn_input, state)
    pieces = decoder.output(torch.cat([top.squeeze(1), context, embedded], dim=1))
    V = pieces.shape[1] // pool_size
    logits = []
    for w in range(V):
        best = pieces[:, w * pool_size]
        for q in range(1, pool_size):
            best = torch.maximum(best, pieces[:, w * pool_size + q])
        logits.append(best)
    return torch.log_softmax(torch.stack(logits, dim=1), dim=1), state
""",
    ),
    "step_view_and_max_values": Variant(
        "decoder_step",
        STEP_HEAD
        + """    B = prev_tokens.shape[0]
    emb = decoder.embedding(prev_tokens.unsqueeze(1))  # (B, 1, E)
    out, new_state = decoder.rnn(torch.cat((emb, context.unsqueeze(1)), dim=2), state)
    feats = torch.cat((out, context.unsqueeze(1), emb), dim=2).squeeze(1)
    pre = decoder.output.weight @ feats.T + decoder.output.bias.unsqueeze(1)  # (r V, B)
    logits = pre.T.reshape(B, -1, pool_size).max(dim=2).values
    return torch.nn.functional.log_softmax(logits, dim=-1), new_state
""",
    ),
    "step_strided_slices_and_logsumexp": Variant(
        "decoder_step",
        STEP_HEAD
        + """    e = decoder.embed(prev_tokens.view(-1, 1))
    c = context.view(len(context), 1, -1)
    s_seq, s = decoder.recur(e, state, c)
    p = decoder.output(torch.cat([s_seq, c, e], -1)).squeeze(1)
    logits = p[:, 0::pool_size]
    for q in range(1, pool_size):
        logits = torch.max(logits, p[:, q::pool_size])
    return logits - torch.logsumexp(logits, dim=-1, keepdim=True), s
""",
    ),
    "step_delegates_at_pool_one": Variant(
        "decoder_step",
        STEP_HEAD
        + """    if pool_size == 1:
        return decoder.step(prev_tokens, state, context)  # the special case is seqlab's
    embedded = decoder.embed(prev_tokens[:, None])
    outputs, state = decoder.recur(embedded, state, context[:, None])
    pieces = decoder.output(torch.cat([outputs, context[:, None], embedded], dim=-1))[:, 0]
    grouped = pieces.reshape(pieces.shape[0], pieces.shape[1] // pool_size, pool_size)
    return grouped.max(-1)[0].log_softmax(-1), state
""",
    ),
    "loss_loop_over_rows": Variant(
        "sentence_mean_nll",
        LOSS_HEAD
        + """    sentence_losses = []
    for row_log_probs, row_targets in zip(log_probs, targets):
        real = row_targets != pad_id
        if real.any():
            picked = row_log_probs[real].gather(1, row_targets[real].unsqueeze(1))
            sentence_losses.append(-picked.mean())
    if not sentence_losses:
        return log_probs.new_zeros(())
    return torch.stack(sentence_losses).mean()
""",
    ),
    "loss_one_weighted_sum": Variant(
        "sentence_mean_nll",
        LOSS_HEAD
        + """    real = targets != pad_id
    n_y = real.sum(dim=1, keepdim=True)  # (B, 1)
    n_sentences = (n_y > 0).sum().clamp(min=1)
    weights = torch.where(real, 1.0 / (n_y.clamp(min=1) * n_sentences), 0.0)  # (B, T)
    picked = log_probs.gather(2, targets.unsqueeze(-1)).squeeze(-1)
    picked = torch.where(real, picked, torch.zeros_like(picked))
    return -(picked * weights).sum()
""",
    ),
    "loss_sequence_nll_per_row": Variant(
        "sentence_mean_nll",
        LOSS_HEAD
        + """    from seqlab.experiments.train import sequence_nll

    rows = [b for b in range(len(targets)) if (targets[b] != pad_id).any()]
    if not rows:
        return torch.zeros((), dtype=log_probs.dtype, device=log_probs.device)
    losses = [sequence_nll(log_probs[b : b + 1], targets[b : b + 1], pad_id=pad_id) for b in rows]
    return torch.stack(losses).mean()
""",
    ),
    "loss_nll_loss_ignore_index": Variant(
        "sentence_mean_nll",
        LOSS_HEAD
        + """    B, T, V = log_probs.shape
    nll = torch.nn.functional.nll_loss(
        log_probs.reshape(B * T, V), targets.reshape(B * T), ignore_index=pad_id, reduction="none"
    ).view(B, T)  # 0 at padding, whatever log_probs holds there
    counts = (targets != pad_id).sum(dim=1)
    kept = counts > 0
    if not bool(kept.any()):
        return nll.sum() * 0.0
    return (nll[kept].sum(dim=1) / counts[kept]).mean()
""",
    ),
    "greedy_end_steps_then_pad": Variant(
        "greedy_decode",
        GREEDY_HEAD
        + """    context, _, state = model.encode(src, src_lengths)
    B = src.shape[0]
    prev = torch.full((B,), BOS_ID, dtype=torch.long, device=src.device)
    end = torch.full((B,), max_len + 1, device=src.device)  # the step of each row's first <eos>
    raw, picked = [], []
    for t in range(1, max_len + 1):
        log_p, state = decoder_step(model.decoder, prev, state, context)
        is_eos = torch.arange(log_p.shape[1], device=log_p.device) == EOS_ID
        choice = (torch.where(is_eos, float("-inf"), log_p) if t <= min_len else log_p).argmax(dim=1)
        raw.append(choice)
        picked.append(log_p.gather(1, choice[:, None])[:, 0])
        end = torch.where((choice == EOS_ID) & (end > max_len), t, end)
        prev = choice  # an ended row goes on; what it writes is padded over below
        if bool((end <= max_len).all()):
            break
    after = torch.arange(1, len(raw) + 1, device=src.device)[None, :] > end[:, None]  # (B, T): past the row's <eos>
    tokens = torch.stack(raw, dim=1).masked_fill(after, PAD_ID)
    scores = torch.stack(picked, dim=1).masked_fill(after, 0.0).sum(dim=1)
    return tokens, scores
""",
    ),
    "greedy_masked_fill_of_the_eos_column": Variant(
        "greedy_decode",
        GREEDY_HEAD
        + """    ctx, _, s = model.encode(src, src_lengths)
    B = len(src)
    y = torch.full((B,), BOS_ID, dtype=torch.long, device=src.device)
    finished = torch.zeros(B, dtype=torch.bool, device=src.device)
    scores = torch.zeros(B, dtype=ctx.dtype, device=src.device)
    outputs = []
    for step in range(max_len):
        log_p, s = decoder_step(model.decoder, y, s, ctx)
        if step < min_len:
            is_eos = torch.arange(log_p.shape[1], device=log_p.device) == EOS_ID
            choice = log_p.masked_fill(is_eos, float("-inf")).argmax(dim=1)
        else:
            choice = log_p.argmax(dim=1)
        scores = scores + log_p.gather(1, choice[:, None]).squeeze(1).masked_fill(finished, 0)
        y = choice.masked_fill(finished, PAD_ID)
        outputs.append(y)
        finished = finished | (y == EOS_ID)
        if finished.all():
            break
    return torch.stack(outputs, dim=1), scores
""",
    ),
    "greedy_lists_per_row": Variant(
        "greedy_decode",
        GREEDY_HEAD
        + """    from seqlab.models.decoding import pad_token_lists

    context, _, state = model.encode(src, src_lengths)
    B = src.shape[0]
    rows = [[] for _ in range(B)]
    scores = [context.new_zeros(()) for _ in range(B)]
    prev = torch.full((B,), BOS_ID, dtype=torch.long, device=src.device)
    for t in range(max_len):
        if all(row and row[-1] == EOS_ID for row in rows):
            break
        log_probs, state = decoder_step(model.decoder, prev, state, context)
        nxt = []
        for b in range(B):
            if rows[b] and rows[b][-1] == EOS_ID:
                nxt.append(PAD_ID)
                continue
            order = log_probs[b].argsort(descending=True).tolist()
            token = order[0] if (order[0] != EOS_ID or t >= min_len) else order[1]
            rows[b].append(token)
            scores[b] = scores[b] + log_probs[b, token]
            nxt.append(token)
        prev = torch.tensor(nxt, device=src.device)
    return pad_token_lists(rows, device=src.device), torch.stack(scores)
""",
    ),
    "greedy_through_seqlab_greedy_search": Variant(
        "greedy_decode",
        GREEDY_HEAD
        + """    from seqlab.models.decoding import greedy_search

    class WithMyStep:
        # seqlab.models.decoding's protocol: every step through decoder_step, <eos> ruled out for min_len steps
        def __init__(self):
            self.t = 0

        def decode_step(self, prev, state):
            log_probs, hidden = decoder_step(model.decoder, prev, state["hidden"], state["context"])
            self.t += 1
            if self.t <= min_len:
                log_probs = log_probs.clone()
                log_probs[:, EOS_ID] = -float("inf")
            return log_probs, {**state, "hidden": hidden}

    context, _, hidden = model.encode(src, src_lengths)
    state = {"context": context, "hidden": hidden}
    return greedy_search(WithMyStep(), state, len(src), max_len, src.device)
""",
    ),
    "greedy_top_two": Variant(
        "greedy_decode",
        GREEDY_HEAD
        + """    context, _, state = model.encode(src, src_lengths)
    B = src.size(0)
    prev = src.new_full((B,), BOS_ID)
    alive = torch.ones(B, dtype=torch.bool, device=src.device)
    total = torch.zeros(B, dtype=context.dtype, device=src.device)
    columns = []
    for t in range(1, max_len + 1):
        log_probs, state = decoder_step(model.decoder, prev, state, context)
        top_values, top_tokens = log_probs.topk(2, dim=1)
        use_second = (top_tokens[:, 0] == EOS_ID) & (t <= min_len)
        token = torch.where(use_second, top_tokens[:, 1], top_tokens[:, 0])
        value = torch.where(use_second, top_values[:, 1], top_values[:, 0])
        total = total + value * alive
        token = token * alive
        columns.append(token)
        prev = token
        alive = alive & (token != EOS_ID)
        if not alive.any():
            break
    return torch.stack(columns, dim=1), total
""",
    ),
}

globals().update(exercise_tests(EXERCISE, BUGS, VARIANTS))  # the fixture `graded` and the file's five tests
