"""Chapter 7: the generated tasks against independent labellers, and the models against naive loops
written from the papers' equations (attention pooling, word-by-word attention, the pyramidal listener,
the captioner's regions), hand-computed error rates."""

import math

import pytest
import torch
import torch.nn.functional as F
from torch.testing import assert_close

from seqlab.core.padding import BOS_ID
from seqlab.data import (
    COLOURS,
    ENTAILMENT_LABELS,
    HYPERNYMS,
    NEGATIVE_WORDS,
    POSITIVE_WORDS,
    SHAPE_COLOURS,
    character_patterns,
    entailment_task,
    sentiment_task,
    shapes_task,
    speech_task,
)
from seqlab.models.captioning import RegionCNN
from seqlab.models.encoder import Encoder
from seqlab.models.entailment import EntailmentClassifier
from seqlab.models.listener import Listener, character_error_rate
from seqlab.models.memory_seq2seq import MemorySeq2Seq
from seqlab.models.pooling import AttentionPooling, PooledClassifier

# --- the data -------------------------------------------------------------------------------------


def test_sentiment_labels_follow_the_decisive_words():
    examples = sentiment_task(400, seed=3)
    assert {label for _, label, _ in examples} == {"positive", "negative"}
    for tokens, label, decisive in examples:
        # an independent reading: the one sentiment word, and whether "not" stands right before it
        (at,) = [i for i, t in enumerate(tokens) if t in POSITIVE_WORDS + NEGATIVE_WORDS]
        negated = at > 0 and tokens[at - 1] == "not"
        positive = (tokens[at] in POSITIVE_WORDS) != negated
        assert label == ("positive" if positive else "negative"), tokens
        assert decisive == ([at - 1, at] if negated else [at])
        assert tokens.count("not") == int(negated)
    assert sentiment_task(5, seed=1) == sentiment_task(5, seed=1)


def _entailment_by_rules(premise, hypothesis):
    """Read the premise's clauses and judge the hypothesis, independently of the generator."""
    noun_of = {noun: hypernym for hypernym, (nouns, _) in HYPERNYMS.items() for noun in nouns}
    clauses = [c.split() for c in " ".join(premise).split(" while ")]
    negated = "not" in hypothesis
    words = [w for w in hypothesis if w not in ("do", "not")]
    h_number, h_verb, h_noun = words[0], words[-1], words[-2]
    h_colour = words[1] if len(words) == 4 else None
    group = noun_of.get(h_noun, h_noun)
    (clause,) = [c for c in clauses if noun_of.get(c[-2], c[-2]) == group]
    number, verb, noun = clause[0], clause[-1], clause[-2]
    colour = clause[1] if len(clause) == 4 else None
    if negated or h_number != number or (h_colour and colour and h_colour != colour) or h_verb != verb:
        return "contradiction"
    if (h_colour and not colour) or (h_noun != noun and h_noun != group):
        return "neutral"
    return "entailment"


def test_entailment_labels_follow_from_the_construction():
    examples = entailment_task(600, seed=4)
    assert {label for _, _, label in examples} == set(ENTAILMENT_LABELS)
    for premise, hypothesis, label in examples:
        assert _entailment_by_rules(premise, hypothesis) == label, (premise, hypothesis, label)
    assert all(w in COLOURS or w for p, _, _ in examples for w in p)
    assert entailment_task(5, seed=2) == entailment_task(5, seed=2)


def test_shape_captions_say_what_the_noise_free_image_shows():
    images, captions = shapes_task(200, noise=0.0, seed=5)
    assert images.shape == (200, 3, 24, 24)
    for image, caption in zip(images, captions):
        cells = image.view(3, 3, 8, 3, 8).permute(1, 3, 0, 2, 4)  # (row, col, 3, 8, 8)
        occupied = [(r, c) for r in range(3) for c in range(3) if cells[r, c].abs().sum() > 0]
        assert len(occupied) == 2  # already in reading order
        (r1, c1), (r2, c2) = occupied
        assert caption[2] == ("left" if r1 == r2 else "above")
        for (r, c), colour in zip(occupied, (caption[0], caption[-2])):
            lit = cells[r, c].sum(dim=(1, 2)) > 0  # (3,): which channels are on
            assert_close(cells[r, c].amax(dim=(1, 2)), torch.tensor(SHAPE_COLOURS[colour]) * lit)
    same = shapes_task(3, seed=1)
    assert torch.equal(same[0], shapes_task(3, seed=1)[0]) and same[1] == shapes_task(3, seed=1)[1]


def test_speech_frames_hold_each_character_in_its_span():
    patterns = character_patterns()
    assert len({tuple(p.tolist()) for p in patterns.values()}) == len(patterns)  # all different
    for frames, chars, spans in speech_task(100, noise=0.0, seed=6):
        covered = torch.zeros(frames.shape[0], dtype=torch.bool)
        previous_end = 0
        for char, (start, end) in zip(chars, spans):
            assert start > previous_end or start >= 1  # silence before each character
            burst = frames[start:end]  # (duration, F)
            loudness = burst[:, patterns[char] > 0].mean()
            assert_close(burst, loudness * patterns[char].expand_as(burst))
            covered[start:end] = True
            previous_end = end
        assert (frames[~covered] == 0).all() and spans[-1][1] < frames.shape[0]
    lengths = [(f.shape[0], len(c)) for f, c, _ in speech_task(300, seed=0)]
    assert sum(s for s, _ in lengths) > 4 * sum(t for _, t in lengths)  # sources many times longer


# --- the models -----------------------------------------------------------------------------------


def test_attention_pooling_against_a_loop():
    torch.manual_seed(0)
    pooling = AttentionPooling(input_size=6, query_size=5).double()
    states = torch.randn(3, 4, 6, dtype=torch.float64)
    mask = torch.tensor([[True] * 4, [True, True, False, False], [True, False, False, False]])
    pooled, weights = pooling(states, mask)
    scorer = pooling.attention.scorer
    for b in range(3):
        real = [s for s in range(4) if mask[b, s]]
        scores = torch.stack(
            [
                scorer.v(torch.tanh(scorer.key_proj(states[b, s]) + scorer.query_proj(pooling.query))).squeeze()
                for s in real
            ]
        )
        expected = torch.zeros(4, dtype=torch.float64)
        expected[real] = scores.exp() / scores.exp().sum()
        assert_close(weights[b], expected)
        assert_close(pooled[b], sum(expected[s] * states[b, s] for s in range(4)))
    assert_close(weights.sum(dim=1), torch.ones(3, dtype=torch.float64))


def test_pooled_classifier_last_states_are_both_directions_at_their_ends():
    torch.manual_seed(1)
    model = PooledClassifier(vocab_size=10, num_classes=2, embedding_size=4, encoding_size=6, pooling="last")
    src, lengths = torch.tensor([[4, 5, 6], [7, 8, 0]]), torch.tensor([3, 2])
    pooled, weights = model.sentence_embedding(src, lengths)
    outputs, _ = model.encoder(src, lengths)  # (B, S, 6): forward half, backward half
    expected = torch.stack([torch.cat([outputs[b, lengths[b] - 1, :3], outputs[b, 0, 3:]]) for b in range(2)])
    assert weights is None and pooled.shape == (2, 6)
    assert_close(pooled, expected)
    attention_model = PooledClassifier(10, 2, 4, 6, pooling="attention")
    assert attention_model(src, lengths).shape == (2, 2)
    assert (attention_model.attention_weights(src, lengths)[1, 2] == 0).all()


def test_pooled_classifier_mean_is_the_mean_of_the_real_states():
    torch.manual_seed(8)
    model = PooledClassifier(vocab_size=10, num_classes=2, embedding_size=4, encoding_size=6, pooling="mean")
    src, lengths = torch.tensor([[4, 5, 6], [7, 8, 0]]), torch.tensor([3, 2])
    pooled, weights = model.sentence_embedding(src, lengths)
    outputs, _ = model.encoder(src, lengths)  # (B, S, 6)
    assert weights is None
    assert_close(pooled, torch.stack([outputs[0].mean(dim=0), outputs[1, :2].mean(dim=0)]))
    assert model(src, lengths).shape == (2, 2)
    with pytest.raises(ValueError, match="pooling='mean' has no attention weights"):
        model.attention_weights(src, lengths)
    with pytest.raises(ValueError, match="pooling must be 'attention', 'last' or 'mean'"):
        PooledClassifier(10, 2, pooling="max")


def test_encoder_initial_state_fused_and_from_scratch_agree():
    torch.manual_seed(2)
    fused = Encoder(10, 4, 5, bidirectional=False)
    scratch = Encoder(10, 4, 5, bidirectional=False, from_scratch=True)
    scratch.load_state_dict(fused.state_dict())
    src, lengths, state = torch.tensor([[4, 5, 6], [7, 8, 0]]), torch.tensor([3, 2]), torch.randn(1, 2, 5)
    out_fused, final_fused = fused(src, lengths, state)
    out_scratch, final_scratch = scratch(src, lengths, state)
    assert_close(out_fused, out_scratch)
    assert_close(final_fused, final_scratch)
    assert not torch.allclose(fused(src, lengths)[0], out_fused)  # the state is used


def test_word_by_word_attention_against_the_papers_equations():
    torch.manual_seed(3)
    model = EntailmentClassifier(vocab_size=12, embedding_size=4, hidden_size=5).double()
    premise, p_lengths = torch.tensor([[4, 5, 6, 7], [8, 9, 0, 0]]), torch.tensor([4, 2])
    hypothesis, h_lengths = torch.tensor([[4, 10, 11], [5, 6, 0]]), torch.tensor([3, 2])
    h_star, weights = model.represent(premise, p_lengths, hypothesis, h_lengths)
    scorer = model.attention.scorer
    for b in range(2):
        P, N = int(p_lengths[b]), int(h_lengths[b])
        Y, final = model.premise_encoder(premise[b : b + 1, :P], p_lengths[b : b + 1])  # (1, P, H)
        states, h_final = model.hypothesis_encoder(hypothesis[b : b + 1, :N], h_lengths[b : b + 1], final)
        Y, r = Y[0], torch.zeros(5, dtype=torch.float64)
        for t in range(N):
            # M = tanh(W^y Y + (W^h h_t + W^r r_{t-1}) ⊗ e); α = softmax(wᵀ M); r_t = Yᵀα + tanh(W^t r_{t-1})
            M = torch.tanh(scorer.key_proj(Y) + scorer.query_proj(torch.cat([states[0, t], r])))  # (P, A)
            alpha = torch.softmax(scorer.v(M).squeeze(1), dim=0)  # (P,)
            assert_close(weights[b, t, :P], alpha)
            assert (weights[b, t, P:] == 0).all()
            r = alpha @ Y + torch.tanh(model.carry(r))
        assert (weights[b, N:] == 0).all()  # padded hypothesis words look nowhere
        expected = torch.tanh(model.combine_r(r) + model.combine_h(h_final[-1, 0]))
        assert_close(h_star[b], expected)
    baseline = EntailmentClassifier(vocab_size=12, embedding_size=4, hidden_size=5, word_by_word=False)
    assert baseline(premise, p_lengths, hypothesis, h_lengths).shape == (2, 3)


def test_region_cnn_regions_are_row_major_maxima():
    torch.manual_seed(4)
    cnn = RegionCNN(output_size=6, grid=3)
    images = torch.randn(2, 3, 12, 12)
    memory, mask, summary = cnn(images, None)
    features = F.relu(cnn.conv2(F.relu(cnn.conv1(images))))  # (B, M, 12, 12)
    for r in range(3):
        for c in range(3):
            cell = features[:, :, 4 * r : 4 * r + 4, 4 * c : 4 * c + 4].amax(dim=(2, 3))  # (B, M)
            assert_close(memory[:, 3 * r + c], cell + cnn.position[3 * r + c])
    assert mask.all() and mask.shape == (2, 9)
    assert_close(summary, memory.mean(dim=1))


def test_region_cnn_flattened_summary_keeps_positions_and_the_default_draws():
    torch.manual_seed(7)
    default = RegionCNN(output_size=5, grid=3)
    torch.manual_seed(7)
    flat = RegionCNN(output_size=5, grid=3, summary="flatten")
    for name, parameter in default.named_parameters():  # the new layer is drawn after the others
        assert torch.equal(parameter, dict(flat.named_parameters())[name]), name
    images = torch.randn(2, 3, 9, 9)
    memory, _, summary = flat(images, None)
    assert summary.shape == (2, 5)
    for b in range(2):  # the regions side by side, row-major, through one linear layer
        assert_close(summary[b], flat.flat.weight @ torch.cat(list(memory[b])) + flat.flat.bias)
    swapped = images.clone()  # move the contents of the first region to the last: only the flat summary notices
    swapped[:, :, :3, :3], swapped[:, :, 6:, 6:] = images[:, :, 6:, 6:], images[:, :, :3, :3]
    assert not torch.allclose(flat(swapped, None)[2], summary)
    regions = memory - flat.position  # (B, 9, M): what each region holds
    assert_close((regions[:, [8, 1, 2, 3, 4, 5, 6, 7, 0]] + flat.position).mean(dim=1), memory.mean(dim=1))
    with pytest.raises(ValueError, match="summary must be 'mean' or 'flatten'"):
        RegionCNN(summary="max")


@pytest.mark.parametrize(
    ("experiment", "kwargs", "figure"),
    [
        ("sentiment_experiment", {"pooling": "last", "encoding_size": 10}, "accuracy"),
        ("entailment_experiment", {"word_by_word": False, "hidden_size": 6}, "accuracy"),
        (
            "captioning_experiment",
            {"attention": False, "summary": "flatten", "output_size": 4, "hidden_size": 6, "cell": 4},
            "exact_match",
        ),
        ("speech_experiment", {"attention": True, "hidden_size": 6, "listener_size": 4, "lr": 1e-3}, "cer"),
    ],
)
def test_experiments_take_their_sizes_and_report_per_item_results(experiment, kwargs, figure):
    from seqlab.experiments import applications

    result = getattr(applications, experiment)(n_train=8, n_test=6, epochs=1, batch_size=4, **kwargs)
    assert result["parameters"] == sum(p.numel() for p in result["model"].parameters())
    assert 0.0 <= result[figure] <= 1.5
    if "correct" in result:  # one bool per test item, for paired statistics
        assert result["correct"].shape == (6,) and result["correct"].dtype == torch.bool
        assert result["accuracy"] == pytest.approx(result["correct"].float().mean().item())
    # The size reached the model: the sentiment encoder's two directions share encoding_size, the
    # entailment encoder (one direction) has hidden_size units, torch.nn's meaning.
    if experiment == "sentiment_experiment":
        assert result["model"].encoder.rnn.hidden_size == kwargs["encoding_size"] // 2
    if experiment == "entailment_experiment":
        assert result["model"].premise_encoder.rnn.hidden_size == kwargs["hidden_size"]


def test_pyramidal_listener_concatenates_neighbours():
    torch.manual_seed(5)
    listener = Listener(n_features=3, output_size=4, pyramid=1)
    frames, lengths = torch.randn(2, 5, 3), torch.tensor([5, 3])
    memory, mask, summary = listener(frames, lengths)
    assert memory.shape == (2, 3, 4) and mask.tolist() == [[True] * 3, [True, True, False]]
    for b in range(2):
        S = int(lengths[b])
        first, _ = listener.layers[0](frames[b : b + 1, :S])  # (1, S, 4): the plain layer, one sequence
        if S % 2:
            first = F.pad(first, (0, 0, 0, 1))
        pairs = torch.stack([torch.cat([first[0, 2 * i], first[0, 2 * i + 1]]) for i in range(first.shape[1] // 2)])
        second, h_n = listener.layers[1](pairs.unsqueeze(0))  # (1, S/2, 4)
        assert_close(memory[b, : pairs.shape[0]], second[0])
        assert_close(summary[b], torch.cat([h_n[0, 0], h_n[1, 0]]))
    assert (memory[1, 2] == 0).all()


def memory_seq2seq_reference(model, frames, lengths, tgt_in) -> torch.Tensor:
    """The model's teacher-forced log-probabilities with its attention written out here: scores from the
    scorer, -inf at padded frames, softmax, the weighted sum of the memory, then chapter 3's decoder step
    reading that context (without attention: the summary at every step)."""
    memory, mask, summary = model.memory_encoder(frames, lengths)  # (B, S, M), (B, S), (B, M)
    state = torch.tanh(model.init_state(summary)).unsqueeze(0)  # (1, B, H)
    context_decoder = model.decoder.context_decoder if model.attention else model.decoder
    steps = []
    for t in range(tgt_in.shape[1]):
        if model.attention:
            scores = model.decoder.attention.scorer(state[-1].unsqueeze(1), memory).squeeze(1)  # (B, S)
            weights = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
            context = (weights.unsqueeze(2) * memory).sum(dim=1)  # (B, M)
        else:
            context = summary
        log_probs, state = context_decoder.step(tgt_in[:, t], state, context)
        steps.append(log_probs)
    return torch.stack(steps, dim=1)  # (B, T, V)


@pytest.mark.parametrize("attention", [True, False])
def test_memory_seq2seq_teacher_forcing_equals_its_steps(attention):
    torch.manual_seed(6)
    model = MemorySeq2Seq(Listener(3, 8), tgt_vocab_size=7, embedding_size=4, hidden_size=6, attention=attention)
    frames, lengths = torch.randn(2, 5, 3), torch.tensor([5, 3])
    tgt_in = torch.tensor([[BOS_ID, 4, 5], [BOS_ID, 6, 4]])
    log_probs = model(frames, lengths, tgt_in)
    # Against an independent reference first: comparing the model only with its own steps passes a step
    # whose attention is switched off, since the teacher-forced loop runs the same step.
    assert_close(log_probs, memory_seq2seq_reference(model, frames, lengths, tgt_in))
    state = model.start_decoding(frames, lengths)
    for t in range(3):
        step, state = model.decode_step(tgt_in[:, t], state)
        assert_close(step, log_probs[:, t])
    decoded = model.greedy_decode(frames, lengths, max_len=4)
    assert decoded.shape[0] == 2 and decoded.shape[1] <= 4
    if attention:
        weights = model.attention_weights(frames, lengths, tgt_in)  # (B, T, S)
        assert_close(weights.sum(dim=2), torch.ones(2, 3))
        assert (weights[1, :, 3:] == 0).all()
    else:
        with pytest.raises(ValueError, match="no attention weights"):
            model.attention_weights(frames, lengths, tgt_in)


def test_character_error_rate_by_hand():
    # "kitten" → "sitting": 3 edits over 7 reference characters; a perfect pair adds 0 edits, 3 characters
    assert character_error_rate([list("kitten"), list("abc")], [list("sitting"), list("abc")]) == 3 / 10
    assert character_error_rate([[]], [list("ab")]) == 1.0
    assert math.isclose(character_error_rate(["abcd"], ["ab"]), 1.0)  # two insertions over two characters
    with pytest.raises(ValueError, match="as many hypotheses"):
        character_error_rate([list("a")], [])


# --- chapter 7's measures of where a model looks, on weights set by hand ----------------------------


class _FixedWeights(torch.nn.Module):
    """A stand-in model whose attention weights are given: what the measures read, nothing else."""

    def __init__(self, weights, pyramid=0):
        super().__init__()
        self.weights, self.dummy = weights, torch.nn.Parameter(torch.zeros(1))
        self.memory_encoder = torch.nn.Module()
        self.memory_encoder.pyramid = pyramid

    def attention_weights(self, *args):  # noqa: ARG002 (any model's inputs)
        return self.weights


def test_clause_attention_is_the_share_on_the_hypothesis_clause():
    from seqlab.data import Vocab
    from seqlab.experiments.applications import clause_attention

    premise = "two red dogs run while three buses wait".split()
    test = [(premise, "three vehicles wait".split(), "entailment"), (premise, "two dogs run".split(), "entailment")]
    vocab = Vocab.build([premise, *(h for _, h, _ in test)])
    weights = torch.zeros(2, 3, 8)
    weights[0, :, 5] = 1.0  # hypothesis 1 (second clause) looks at "three buses wait": all on its clause
    weights[1, :, 0] = 0.5  # hypothesis 2 (first clause): half on "two", half on "while"
    weights[1, :, 4] = 0.5
    assert clause_attention(_FixedWeights(weights), test, vocab) == pytest.approx((1.0 + 0.5) / 2)


def test_clause_attention_counts_only_the_hypothesis_clause_of_three():
    from seqlab.data import Vocab
    from seqlab.experiments.applications import clause_attention

    # clauses: positions 0-3 ("two red dogs run"), 5-7 ("three buses wait"), 9-11 ("four women sing")
    premise = "two red dogs run while three buses wait while four women sing".split()
    test = [(premise, "three vehicles wait".split(), "entailment"), (premise, "four people sing".split(), "entailment")]
    vocab = Vocab.build([premise, *(h for _, h, _ in test)])
    weights = torch.zeros(2, 3, 12)
    weights[0, :, 5] = 0.25  # hypothesis 1 (second clause): a quarter on it, the rest on the third clause
    weights[0, :, 9] = 0.75
    weights[1, :, 10] = 1.0  # hypothesis 2 (third clause): all on it
    assert clause_attention(_FixedWeights(weights), test, vocab) == pytest.approx((0.25 + 1.0) / 2)


def test_caption_alignment_counts_words_looking_at_their_shape():
    from seqlab.data import Vocab
    from seqlab.experiments.applications import caption_alignment

    images, captions = shapes_task(1, noise=0.0, seed=0)
    cells = images[0].abs().view(3, 3, 8, 3, 8).sum(dim=(0, 2, 4)).flatten()  # (9,): the occupied regions
    first, second = sorted(cells.topk(2).indices.tolist())
    T = len(captions[0]) + 1
    weights = torch.zeros(1, T, 9)
    weights[0, :2, first] = 1.0  # the first shape's colour and shape words look at it
    weights[0, -3, second] = 1.0  # the second shape's colour word too
    weights[0, -2, first] = 1.0  # its shape word looks at the wrong shape
    vocab = Vocab.build(captions)
    assert caption_alignment(_FixedWeights(weights), images, captions, vocab) == 3 / 4


def test_speech_alignment_reads_spans_and_monotonicity():
    from seqlab.data import Vocab
    from seqlab.experiments.applications import speech_alignment

    test = [(torch.zeros(10, 4), ["a", "b"], [(1, 3), (5, 8)]), (torch.zeros(10, 4), ["b", "a"], [(1, 4), (6, 9)])]
    vocab = Vocab.build([c for _, c, _ in test])
    weights = torch.zeros(2, 3, 10)
    weights[0, 0, 2], weights[0, 1, 6] = 1.0, 1.0  # both in their spans, moving forwards
    weights[1, 0, 7], weights[1, 1, 2] = 1.0, 1.0  # both outside their spans, moving backwards
    assert speech_alignment(_FixedWeights(weights), test, vocab) == {"in_span": 0.5, "monotonic": 0.5}
    pyramid = torch.zeros(2, 3, 5)  # a pyramidal listener: state s covers frames 2s and 2s + 1
    pyramid[0, 0, 1], pyramid[0, 1, 3] = 1.0, 1.0  # frames 2-3 overlap (1, 3); frames 6-7 overlap (5, 8)
    pyramid[1, 0, 0], pyramid[1, 1, 4] = 1.0, 1.0  # frames 0-1 overlap (1, 4); frames 8-9 overlap (6, 9)
    assert speech_alignment(_FixedWeights(pyramid, pyramid=1), test, vocab) == {"in_span": 1.0, "monotonic": 1.0}
