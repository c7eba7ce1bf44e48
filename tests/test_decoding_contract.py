"""The models' common contract (seqlab.models.decoding): every model that decodes has the same
``encode``, ``greedy_decode`` and ``beam_search``, and they behave alike on a tiny batch.

The references are independent of the decoding code: teacher-forced scoring through the model's own
``forward`` (one call, every step at once), and an exhaustive search over every output of a tiny
vocabulary and length.
"""

import inspect
import itertools
import math

import pytest
import torch

from seqlab.core.padding import BOS_ID, EOS_ID, PAD_ID
from seqlab.models.attention import AdditiveScorer
from seqlab.models.attention_decoder import AttentionDecoder
from seqlab.models.decoder import ContextDecoder
from seqlab.models.decoding import AttentionStep, Decodable, DecoderStep, Encoded
from seqlab.models.listener import Listener
from seqlab.models.memory_seq2seq import MemorySeq2Seq
from seqlab.models.pointer import PointerGenerator, PointerStep
from seqlab.models.seq2seq import AttentionSeq2Seq, Seq2Seq
from seqlab.models.transformer import Transformer

V = 7  # every model's target vocabulary: pad, bos, eos, unk and 3 words
SRC = torch.tensor([[4, 5, 6, 5], [6, 4, 0, 0]])  # (B, S) token ids
LENGTHS = torch.tensor([4, 2])
FRAMES = torch.randn(2, 6, 3, generator=torch.Generator().manual_seed(0))  # (B, S, F) for the listener
FRAME_LENGTHS = torch.tensor([6, 4])


def models():
    """(name, model, src, src_lengths, log_probs of a teacher-forced tgt_in): every model that decodes."""
    torch.manual_seed(0)
    pointer = PointerGenerator(V, embedding_size=4, hidden_size=6)
    return [
        ("Seq2Seq", Seq2Seq(V, V, embedding_size=4, hidden_size=6), SRC, LENGTHS),
        ("Seq2Seq lstm", Seq2Seq(V, V, embedding_size=4, hidden_size=6, cell="lstm", num_layers=2), SRC, LENGTHS),
        ("AttentionSeq2Seq", AttentionSeq2Seq(V, V, embedding_size=4, hidden_size=6), SRC, LENGTHS),
        ("PointerGenerator", pointer, SRC, LENGTHS),
        ("MemorySeq2Seq", MemorySeq2Seq(Listener(3, 8), V, embedding_size=4, hidden_size=6), FRAMES, FRAME_LENGTHS),
        ("MemorySeq2Seq, no attention", MemorySeq2Seq(Listener(3, 8), V, 4, 6, attention=False), FRAMES, FRAME_LENGTHS),
        (
            "Transformer",
            Transformer(V, V, d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=2),
            SRC,
            LENGTHS,
        ),
    ]


MODELS = models()
IDS = [name for name, *_ in MODELS]


def teacher_forced_log_probs(model, src, src_lengths, tgt_in):
    """``(B, T, V)`` log-probabilities from the model's forward (the pointer's gives probabilities)."""
    with torch.no_grad():
        out = model.eval()(src, src_lengths, tgt_in)
    if isinstance(model, PointerGenerator):
        return out.clamp_min(1e-12).log()
    return out


def until_eos(row: list) -> list:
    """A decoded row without the padding after its eos."""
    return row[: row.index(EOS_ID) + 1] if EOS_ID in row else row


def rescore(model, src, src_lengths, tokens: list) -> float:
    """The sum of the tokens' log-probabilities, teacher-forced through ``forward``."""
    tgt_in = torch.tensor([[BOS_ID] + tokens[:-1]])
    log_probs = teacher_forced_log_probs(model, src, src_lengths, tgt_in)[0]  # (T, V)
    return log_probs.gather(1, torch.tensor(tokens).unsqueeze(1)).sum().item()


@pytest.mark.parametrize("method", ["greedy_decode", "beam_search"])
@pytest.mark.parametrize(("name", "model", "src", "src_lengths"), MODELS, ids=IDS)
def test_every_model_decodes_with_the_same_signature(name, model, src, src_lengths, method):  # noqa: ARG001
    assert isinstance(model, Decodable), f"{name} does not follow the decoding protocol"
    expected = inspect.signature(getattr(Decodable, method))
    assert inspect.signature(getattr(type(model), method)) == expected, f"{name}.{method}'s signature differs"


@pytest.mark.parametrize(("name", "model", "src", "src_lengths"), MODELS, ids=IDS)
def test_every_model_encodes_to_the_same_kind_of_thing(name, model, src, src_lengths):
    with torch.no_grad():
        encoded = model.encode(src, src_lengths)
    assert isinstance(encoded, Encoded), f"{name}.encode returned a {type(encoded).__name__}"
    memory, mask, state = encoded
    assert memory.shape[0] == 2
    if mask is None:  # one context vector
        assert memory.dim() == 2, f"{name}: a memory of one vector is (B, M), got {tuple(memory.shape)}"
    else:
        assert mask.dtype == torch.bool and mask.shape == memory.shape[:2]
        assert mask[:, 0].all() and mask[0].all() and not mask[1].all()  # row 1 is the shorter source
    # The state is the decoder's initial state, computed here from the model's parts without encode (which
    # start_decoding calls, so comparing the two would be circular), and decoding starts from it.
    expected = initial_state(model, src, src_lengths)
    start = model.start_decoding(src, src_lengths)
    for name_of, actual in (("encode(...).state", state), ('start_decoding(...)["hidden"]', start["hidden"])):
        for part, expected_part in zip(as_tuple(actual), as_tuple(expected), strict=True):
            assert torch.equal(part, expected_part), f"{name}: {name_of} is not the decoder's initial state"


def as_tuple(state) -> tuple:
    return state if isinstance(state, tuple) else (state,)


def initial_state(model, src, src_lengths):
    """The decoder's initial state, from the model's parts: the bridge of the encoder's final states (the
    recurrent models), ``tanh(W summary + b)`` (MemorySeq2Seq), or the empty history (the Transformer)."""
    with torch.no_grad():
        if isinstance(model, Transformer):
            return torch.zeros(len(model.decoder_layers), src.shape[0], 0, model.d_model)  # (L, B, 0, H)
        if isinstance(model, MemorySeq2Seq):
            _, _, summary = model.memory_encoder(src, src_lengths)  # (B, M)
            return torch.tanh(model.init_state(summary)).unsqueeze(0)  # (1, B, H)
        _, final = model.encoder(src, src_lengths)  # (L*D, B, H) (LSTM: a pair)
        return model.bridge(final)  # (L, B, H) (LSTM: a pair)


def test_each_step_tuple_starts_with_the_earlier_ones():
    assert DecoderStep._fields == ("log_probs", "state")
    assert AttentionStep._fields[:2] == DecoderStep._fields
    assert PointerStep._fields[:3] == AttentionStep._fields


def test_every_decoders_step_returns_its_type_with_the_recurrent_state():
    """``step(...).state`` is the decoder's recurrent state ``(L, B, H)`` in every step tuple, never the
    decoding state (the dict that ``start_decoding`` and ``decode_step`` carry)."""
    torch.manual_seed(0)
    B, S, H, M = 2, 4, 6, 5
    prev_tokens, memory = torch.tensor([BOS_ID, BOS_ID]), torch.randn(B, S, M)
    mask = torch.tensor([[True] * 4, [True, True, False, False]])
    context_decoder = ContextDecoder(V, embedding_size=4, hidden_size=H, context_size=M, num_layers=2)
    step = context_decoder.step(prev_tokens, torch.zeros(2, B, H), memory[:, 0])
    assert type(step) is DecoderStep and step.state.shape == (2, B, H)
    attention_decoder = AttentionDecoder(V, 4, H, M, AdditiveScorer(H, M, 8))
    prepared_keys = attention_decoder.attention.scorer.prepare_keys(memory)
    step = attention_decoder.step(prev_tokens, torch.zeros(1, B, H), memory, mask, prepared_keys)
    assert type(step) is AttentionStep and step.state.shape == (1, B, H)
    pointer = PointerGenerator(V, embedding_size=4, hidden_size=H)
    start = pointer.start_decoding(SRC, LENGTHS)
    step = pointer.step(prev_tokens, start)
    assert type(step) is PointerStep
    assert isinstance(step.state, torch.Tensor) and step.state.shape == start["hidden"].shape == (1, B, H)
    # decode_step carries the decoding state on: the new recurrent state, and the coverage plus the attention
    _, after = pointer.decode_step(prev_tokens, start)
    assert torch.equal(after["hidden"], step.state)
    assert torch.equal(after["coverage"], start["coverage"] + step.weights)


@pytest.mark.parametrize(("name", "model", "src", "src_lengths"), MODELS, ids=IDS)
def test_every_model_decodes_alike_on_a_tiny_batch(name, model, src, src_lengths):
    model.train()
    greedy = model.greedy_decode(src, src_lengths, max_len=5)
    assert model.training, f"{name}: greedy_decode left the model in evaluation mode"
    assert greedy.dtype == torch.long and greedy.shape[0] == 2 and 1 <= greedy.shape[1] <= 5
    for row in greedy.tolist():  # after eos, only padding
        if EOS_ID in row:
            assert all(t == PAD_ID for t in row[row.index(EOS_ID) + 1 :])
    # Greedy's tokens are each step's argmax of the teacher-forced distribution.
    for b in range(2):
        tokens = until_eos(greedy[b].tolist())
        tgt_in = torch.tensor([[BOS_ID] + tokens[:-1]])
        log_probs = teacher_forced_log_probs(model, src[b : b + 1], src_lengths[b : b + 1], tgt_in)[0]
        assert log_probs.argmax(dim=1).tolist() == tokens, f"{name}: greedy is not the argmax at every step"
    model.train()
    beam = model.beam_search(src, src_lengths, max_len=5, beam_size=1)
    assert model.training
    assert torch.equal(beam, greedy), f"{name}: beam_size=1 differs from greedy"
    _, hypotheses = model.beam_search(src, src_lengths, max_len=5, beam_size=3, return_hypotheses=True)
    for b, hyps in enumerate(hypotheses):
        assert 1 <= len(hyps) <= 3
        for h in hyps:
            rescored = rescore(model, src[b : b + 1], src_lengths[b : b + 1], h.tokens)
            assert math.isclose(h.score, rescored, rel_tol=1e-4, abs_tol=1e-4), name


def all_outputs(vocab_size: int, max_len: int):
    """Every output a search can give: ends at its first eos, or is cut off at ``max_len`` tokens."""
    for length in range(1, max_len + 1):
        for tokens in itertools.product(range(vocab_size), repeat=length):
            ends = tokens[-1] == EOS_ID
            if EOS_ID not in tokens[:-1] and (ends or length == max_len):
                yield list(tokens)


@pytest.mark.parametrize("attention", [True, False])
def test_memory_seq2seq_beam_search_finds_the_best_output_of_an_exhaustive_search(attention):
    """A beam wide enough to keep every hypothesis is an exhaustive search: its best output is the best of
    all outputs, scored independently by teacher forcing; a narrow beam scores at most that, at least greedy."""
    vocab_size, max_len = 5, 3
    torch.manual_seed(3)
    model = MemorySeq2Seq(Listener(3, 8), vocab_size, embedding_size=4, hidden_size=6, attention=attention).eval()
    with torch.no_grad():  # sharpen the random model so that outputs differ clearly in score
        model.decoder.context_decoder.output.weight.mul_(4.0) if attention else model.decoder.output.weight.mul_(4.0)
    for b in range(2):
        src, lengths = FRAMES[b : b + 1], FRAME_LENGTHS[b : b + 1]
        scored = sorted(((rescore(model, src, lengths, t), t) for t in all_outputs(vocab_size, max_len)), reverse=True)
        best_score, best = scored[0]
        assert best_score - scored[1][0] > 1e-3  # no tie at the top: the test can tell outputs apart
        wide, hyps = model.beam_search(src, lengths, max_len, beam_size=len(scored), return_hypotheses=True)
        assert hyps[0][0].tokens == best
        assert math.isclose(hyps[0][0].score, best_score, rel_tol=1e-5, abs_tol=1e-5)
        assert [h.tokens for h in hyps[0][:5]] == [t for _, t in scored[:5]]
        greedy = until_eos(model.greedy_decode(src, lengths, max_len)[0].tolist())
        narrow = model.beam_search(src, lengths, max_len, beam_size=2, return_hypotheses=True)[1][0][0]
        assert rescore(model, src, lengths, greedy) - 1e-5 <= narrow.score <= best_score + 1e-5
