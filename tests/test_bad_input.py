"""seqlab under bad input (issue 18): a ValueError that names the argument, the expected and the actual
value, or else the right answer, checked against a reference; never NaN, never an obscure failure.

Two tables: ERRORS (a call, and the fragments its message must hold: the argument's name first, then
the value that came) and ANSWERS (a call whose result must equal a reference's). A last part checks
that the checks run once per call, not at every decoder step.
"""

import math

import pytest
import torch
import torch.nn.functional as F
from torch.testing import assert_close

import seqlab.models.attention_decoder
import seqlab.models.decoder
import seqlab.models.pointer
from seqlab.core.padding import lengths_to_mask
from seqlab.data import Vocab
from seqlab.experiments.memory import LastStateClassifier
from seqlab.experiments.tagging import Tagger
from seqlab.experiments.train import sequence_nll
from seqlab.models import rnn
from seqlab.models.attention import Attention, CosineScorer, DotScorer, masked_softmax
from seqlab.models.attention_decoder import AttentionDecoder
from seqlab.models.decoder import ContextDecoder
from seqlab.models.decoding import BigramTable
from seqlab.models.encoder import Encoder
from seqlab.models.entailment import EntailmentClassifier
from seqlab.models.pointer import PointerGenerator, coverage_loss, final_distribution
from seqlab.models.seq2seq import AttentionSeq2Seq, Seq2Seq
from seqlab.models.transformer import Transformer, TransformerDecoderLayer, TransformerEncoderLayer

SRC_V, TGT_V = 10, 8  # vocabulary sizes of the small models below
SRC = torch.tensor([[4, 5, 6], [7, 8, 0]])  # (B, S) = (2, 3)
SRC_LENGTHS = torch.tensor([3, 2])
TGT_IN = torch.tensor([[1, 4, 5], [1, 6, 0]])  # (B, T) = (2, 3)
EMPTY_SRC, EMPTY_LENGTHS = torch.zeros(0, 3, dtype=torch.long), torch.zeros(0, dtype=torch.long)


def seq2seq():
    torch.manual_seed(0)
    return Seq2Seq(SRC_V, TGT_V, embedding_size=4, hidden_size=6)


def attention_seq2seq():
    torch.manual_seed(0)
    return AttentionSeq2Seq(SRC_V, TGT_V, embedding_size=4, hidden_size=6)


def pointer_generator():
    torch.manual_seed(0)
    return PointerGenerator(SRC_V, embedding_size=4, hidden_size=6)


MODELS = {"Seq2Seq": seq2seq, "AttentionSeq2Seq": attention_seq2seq, "PointerGenerator": pointer_generator}


def bigram():
    return BigramTable(torch.ones(5, 5))


def final_distribution_with(p_gen=None, src_ext_ids=None, n_oov=1):
    """final_distribution on a valid (B=1, V=5, S=2) example, one argument replaced."""
    p_gen = torch.tensor([[0.5]]) if p_gen is None else p_gen
    src_ext_ids = torch.tensor([[4, 5]]) if src_ext_ids is None else src_ext_ids
    return final_distribution(torch.full((1, 5), 0.2), torch.tensor([[0.5, 0.5]]), p_gen, src_ext_ids, n_oov)


def _error_cases():
    cases = []

    def case(name, call, *fragments):
        cases.append(pytest.param(call, fragments, id=name))

    # Decoding: max_len, beam_size, an empty batch.
    for model_name, make in [("BigramTable", bigram), *MODELS.items()]:
        case(f"{model_name} greedy max_len=0", lambda m=make: m().greedy_decode(SRC, SRC_LENGTHS, 0), "max_len", "0")
        case(f"{model_name} greedy max_len=-2", lambda m=make: m().greedy_decode(SRC, SRC_LENGTHS, -2), "max_len", "-2")
        case(f"{model_name} beam max_len=0", lambda m=make: m().beam_search(SRC, SRC_LENGTHS, 0), "max_len", "0")
        case(
            f"{model_name} greedy, empty batch",
            lambda m=make: m().greedy_decode(EMPTY_SRC, EMPTY_LENGTHS, 4),
            "src",
            "(0, 3)",
        )
        case(
            f"{model_name} beam, empty batch",
            lambda m=make: m().beam_search(EMPTY_SRC, EMPTY_LENGTHS, 4),
            "src",
            "(0, 3)",
        )
    case("beam_size=2.5", lambda: bigram().beam_search(SRC, SRC_LENGTHS, 4, beam_size=2.5), "beam_size", "2.5")
    case("beam_size=0", lambda: bigram().beam_search(SRC, SRC_LENGTHS, 4, beam_size=0), "beam_size", "0")
    case("greedy max_len=2.0", lambda: bigram().greedy_decode(SRC, SRC_LENGTHS, 2.0), "max_len", "2.0")

    # The models: an empty batch, an empty target, token ids outside the vocabulary, fractional lengths.
    for model_name, make in MODELS.items():
        case(
            f"{model_name} forward, empty batch",
            lambda m=make: m()(EMPTY_SRC, EMPTY_LENGTHS, torch.zeros(0, 2, dtype=torch.long)),
            "src",
            "(0, 3)",
        )
        case(
            f"{model_name} target length 0",
            lambda m=make: m()(SRC, SRC_LENGTHS, torch.zeros(2, 0, dtype=torch.long)),
            "tgt_in",
            "(2, 0)",
        )
        case(f"{model_name} src id -1", lambda m=make: m()(SRC - 1, SRC_LENGTHS, TGT_IN), "src", "-1")
        case(f"{model_name} tgt_in id -3", lambda m=make: m()(SRC, SRC_LENGTHS, TGT_IN - 3), "tgt_in", "-3")
        case(
            f"{model_name} src_lengths 2.5",
            lambda m=make: m()(SRC, torch.tensor([3.0, 2.5]), TGT_IN),
            "src_lengths",
            "2.5",
        )
        case(
            f"{model_name} greedy, src_lengths 2.5",
            lambda m=make: m().greedy_decode(SRC, torch.tensor([3.0, 2.5]), 4),
            "src_lengths",
            "2.5",
        )
    for model_name, make in [("Seq2Seq", seq2seq), ("AttentionSeq2Seq", attention_seq2seq)]:
        case(
            f"{model_name} src id {SRC_V}",
            lambda m=make: m()(SRC + 6, SRC_LENGTHS, TGT_IN),
            "src",
            f"{SRC_V}",
            f"{SRC_V} ids",
        )
        case(
            f"{model_name} tgt_in id {TGT_V}",
            lambda m=make: m()(SRC, SRC_LENGTHS, TGT_IN + 3),
            "tgt_in",
            f"{TGT_V}",
            f"{TGT_V} ids",
        )
        case(
            f"{model_name} greedy, src id 16",
            lambda m=make: m().greedy_decode(SRC + 8, SRC_LENGTHS, 4),
            "src",
            "16",
            f"{SRC_V} ids",
        )
        case(f"{model_name} float src", lambda m=make: m()(SRC.float(), SRC_LENGTHS, TGT_IN), "src", "torch.float32")
    case("Encoder src id 10", lambda: Encoder(SRC_V, 4, 3)(SRC + 6, SRC_LENGTHS), "src", "10", "10 ids")
    case(
        "Encoder from scratch src id 10",
        lambda: Encoder(SRC_V, 4, 3, from_scratch=True)(SRC + 6, SRC_LENGTHS),
        "src",
        "10",
        "10 ids",
    )
    case("Encoder src_lengths 2.5", lambda: Encoder(SRC_V, 4, 3)(SRC, torch.tensor([2.5, 2])), "src_lengths", "2.5")
    case(
        "Encoder from scratch src_lengths 2.5",
        lambda: Encoder(SRC_V, 4, 3, from_scratch=True)(SRC, torch.tensor([2.5, 2])),
        "src_lengths",
        "2.5",
    )
    case(
        "LastStateClassifier token id 8 with 8 ids",
        lambda: LastStateClassifier("gru", 8, 2)(torch.tensor([[1, 8]])),
        "tokens",
        "8",
        "8 ids",
    )
    case("Encoder empty batch", lambda: Encoder(SRC_V, 4, 3)(EMPTY_SRC, EMPTY_LENGTHS), "src", "(0, 3)")
    case(
        "ContextDecoder target length 0",
        lambda: ContextDecoder(TGT_V, 4, 5, 3)(torch.zeros(2, 0, dtype=torch.long), None, torch.zeros(2, 3)),
        "tgt_in",
        "(2, 0)",
    )
    case(
        "ContextDecoder tgt_in id 8",
        lambda: ContextDecoder(TGT_V, 4, 5, 3)(TGT_IN + 3, None, torch.zeros(2, 3)),
        "tgt_in",
        "8",
        "8 ids",
    )
    case(
        "AttentionDecoder target length 0",
        lambda: AttentionDecoder(TGT_V, 4, 5, 5, DotScorer())(
            torch.zeros(2, 0, dtype=torch.long), torch.zeros(1, 2, 5), torch.zeros(2, 3, 5), SRC > 0
        ),
        "tgt_in",
        "(2, 0)",
    )
    case(
        "AttentionDecoder tgt_in id 8",
        lambda: AttentionDecoder(TGT_V, 4, 5, 5, DotScorer())(
            TGT_IN + 3, torch.zeros(1, 2, 5), torch.zeros(2, 3, 5), SRC > 0
        ),
        "tgt_in",
        "8",
        "8 ids",
    )
    case(
        "sequence_nll target id 7 with V=7",
        lambda: sequence_nll(torch.zeros(1, 2, 7), torch.tensor([[3, 7]])),
        "targets",
        "7",
        "7 ids",
    )

    # seqlab.models.rnn: sizes, a sequence without steps, fractional lengths.
    for layer in (rnn.RNN, rnn.LSTM, rnn.GRU):
        name = layer.__name__
        case(f"{name}(3, 0)", lambda c=layer: c(3, 0), "hidden_size", "0")
        case(f"{name}(0, 3)", lambda c=layer: c(0, 3), "input_size", "0")
        case(f"{name} num_layers=1.5", lambda c=layer: c(3, 4, num_layers=1.5), "num_layers", "1.5")
        case(f"{name} dropout=1.5", lambda c=layer: c(3, 4, num_layers=2, dropout=1.5), "dropout", "1.5")
        case(f"{name} sequence length 0", lambda c=layer: c(3, 4)(torch.randn(2, 0, 3)), "input", "(2, 0, 3)")
        case(
            f"{name} lengths 2.5",
            lambda c=layer: c(3, 4)(torch.randn(2, 4, 3), lengths=torch.tensor([2.5, 4])),
            "lengths",
            "2.5",
        )
        case(
            f"{name} lengths [2.5, 4] as a list",
            lambda c=layer: c(3, 4)(torch.randn(2, 4, 3), lengths=[2.5, 4]),
            "lengths",
            "2.5",
        )
        case(
            f"{name} lengths 0",
            lambda c=layer: c(3, 4)(torch.randn(2, 4, 3), lengths=torch.tensor([0, 4])),
            "lengths",
            "[0, 4]",
        )
    for cell in (rnn.RNNCell, rnn.LSTMCell, rnn.GRUCell):
        case(f"{cell.__name__}(3, 0)", lambda c=cell: c(3, 0), "hidden_size", "0")
    case("lengths_to_mask 2.5", lambda: lengths_to_mask([2.5, 1]), "lengths", "2.5")

    # Attention.
    case(
        "masked_softmax integer scores",
        lambda: masked_softmax(torch.ones(1, 1, 3, dtype=torch.long), SRC[:1] > 0),
        "scores",
        "torch.int64",
    )
    case(
        "masked_softmax integer scores, no mask",
        lambda: masked_softmax(torch.ones(1, 1, 3, dtype=torch.long)),
        "scores",
        "torch.int64",
    )
    case(
        "masked_softmax float mask",
        lambda: masked_softmax(torch.zeros(1, 1, 3), torch.ones(1, 3)),
        "mask",
        "torch.float32",
    )

    # The pointer-generator's pieces.
    case("final_distribution p_gen=1.5", lambda: final_distribution_with(p_gen=torch.tensor([[1.5]])), "p_gen", "1.5")
    case(
        "final_distribution p_gen=-0.25",
        lambda: final_distribution_with(p_gen=torch.tensor([[-0.25]])),
        "p_gen",
        "-0.25",
    )
    case(
        "final_distribution p_gen=NaN",
        lambda: final_distribution_with(p_gen=torch.tensor([[math.nan]])),
        "p_gen",
        "nan",
    )
    case("final_distribution n_oov=2.5", lambda: final_distribution_with(n_oov=2.5), "n_oov", "2.5")
    case("final_distribution n_oov=-1", lambda: final_distribution_with(n_oov=-1), "n_oov", "-1")
    case(
        "final_distribution src_ext_ids -1",
        lambda: final_distribution_with(src_ext_ids=torch.tensor([[4, -1]])),
        "src_ext_ids",
        "-1",
    )
    case(
        "final_distribution float src_ext_ids",
        lambda: final_distribution_with(src_ext_ids=torch.tensor([[4.0, 5.0]])),
        "src_ext_ids",
        "torch.float32",
    )
    case(
        "coverage_loss float mask",
        lambda: coverage_loss(torch.rand(2, 3), torch.rand(2, 3), torch.ones(2, 3)),
        "mask",
        "torch.float32",
    )

    # Models that wrap another module report the caller's argument names, not the inner module's.
    for layer_name, make_layer in [
        ("Transformer", lambda **sizes: Transformer(SRC_V, TGT_V, **{"dim_feedforward": 8, **sizes})),
        ("TransformerEncoderLayer", lambda **sizes: TransformerEncoderLayer(**{"dim_feedforward": 8, **sizes})),
        ("TransformerDecoderLayer", lambda **sizes: TransformerDecoderLayer(**{"dim_feedforward": 8, **sizes})),
    ]:
        case(f"{layer_name} nhead=3", lambda m=make_layer: m(d_model=16, nhead=3), "d_model", "(16)", "nhead (3)")
        case(f"{layer_name} nhead=0", lambda m=make_layer: m(d_model=16, nhead=0), "nhead", "0")
        case(f"{layer_name} d_model=0", lambda m=make_layer: m(d_model=0, nhead=1), "d_model", "0")
        case(
            f"{layer_name} dim_feedforward=0",
            lambda m=make_layer: m(d_model=16, nhead=2, dim_feedforward=0),
            "dim_feedforward",
            "0",
        )
    case(
        "Transformer num_encoder_layers=0",
        lambda: Transformer(SRC_V, TGT_V, 16, 2, num_encoder_layers=0),
        "num_encoder_layers",
        "0",
    )
    case(
        "Transformer num_decoder_layers=0",
        lambda: Transformer(SRC_V, TGT_V, 16, 2, num_decoder_layers=0),
        "num_decoder_layers",
        "0",
    )

    def entailment(premise=SRC, premise_lengths=SRC_LENGTHS, hypothesis=TGT_IN, hypothesis_lengths=SRC_LENGTHS):
        torch.manual_seed(0)
        model = EntailmentClassifier(SRC_V, embedding_size=4, hidden_size=6)
        return model(premise, premise_lengths, hypothesis, hypothesis_lengths)

    case(
        "EntailmentClassifier premise_lengths 4",
        lambda: entailment(premise_lengths=torch.tensor([4, 2])),
        "premise_lengths",
        "4",
    )
    case(
        "EntailmentClassifier hypothesis_lengths 0",
        lambda: entailment(hypothesis_lengths=torch.tensor([3, 0])),
        "hypothesis_lengths",
        "0",
    )
    case("EntailmentClassifier premise id 10", lambda: entailment(premise=SRC + 6), "premise", "10")

    def tagger(tokens=SRC, lengths=SRC_LENGTHS):
        torch.manual_seed(0)
        return Tagger(SRC_V, num_tags=3, encoding_size=8)(tokens, lengths)

    case("Tagger lengths 4", lambda: tagger(lengths=torch.tensor([4, 2])), "lengths", "4")
    case("Tagger token id 10", lambda: tagger(tokens=SRC + 6), "tokens", "10")
    case("EntailmentClassifier hypothesis id 12", lambda: entailment(hypothesis=TGT_IN + 6), "hypothesis", "12")

    # The bigram toy model and the vocabulary.
    case(
        "BigramTable all-zero row",
        lambda: BigramTable(torch.tensor([[1.0, 1, 1], [0, 0, 0], [1, 1, 1]])),
        "table",
        "[1]",
    )
    case(
        "BigramTable negative weight",
        lambda: BigramTable(torch.tensor([[1.0, -1, 1], [1, 1, 1], [1, 1, 1]])),
        "table",
        "-1.0",
        "(0, 1)",
    )
    case("BigramTable infinite weight", lambda: BigramTable(torch.tensor([[1.0, math.inf], [1, 1]])), "table", "inf")
    case("Vocab.decode([4.0])", lambda: Vocab(["a", "b"]).decode([4.0]), "ids", "4.0")
    case("Vocab.decode(float tensor)", lambda: Vocab(["a", "b"]).decode(torch.tensor([4.0, 2.0])), "ids", "4.0")
    case("Vocab.id_to_token(4.0)", lambda: Vocab(["a", "b"]).id_to_token(4.0), "token_id", "4.0")
    return cases


@pytest.mark.parametrize("call, fragments", _error_cases())
def test_bad_input_raises_a_value_error_that_names_the_argument(call, fragments):
    with pytest.raises(ValueError) as raised:
        call()
    assert type(raised.value) is ValueError, f"expected a ValueError itself, got {type(raised.value).__name__}"
    message = str(raised.value)
    name = fragments[0]
    assert message.startswith(name + ":") or message.startswith(name + " "), f"the message must name {name}: {message}"
    for fragment in fragments[1:]:
        assert fragment in message, f"the message must say {fragment!r}: {message}"


# ----------------------------------------------------------------------------------------------
# Bad-looking input that has a right answer: it must be that answer, checked against a reference.


def nll_with_inf_at_padding():
    """A model that masks the <pad> logit: log P(<pad>) = -inf everywhere, and whole padded rows at -inf."""
    torch.manual_seed(0)
    logits = torch.randn(2, 3, 5)
    logits[:, :, 0] = -math.inf
    logits[1, 1:] = -math.inf
    targets = torch.tensor([[4, 2, 0], [3, 0, 0]])
    log_probs = logits.log_softmax(dim=-1).nan_to_num(nan=-math.inf)  # a row of only -inf: -inf, as a model may give
    ours_in, theirs_in = log_probs.clone().requires_grad_(), log_probs.clone().requires_grad_()
    ours = sequence_nll(ours_in, targets)
    theirs = F.nll_loss(theirs_in.flatten(0, 1), targets.flatten(), ignore_index=0)
    ours.backward(), theirs.backward()
    return (ours, ours_in.grad), (theirs, theirs_in.grad)


def recurrent_layer_with_nan_at_padding(layer_cls):
    """NaN and inf at padded steps: the outputs, states and gradients of a clean padding (zeros)."""
    torch.manual_seed(0)
    layer = layer_cls(3, 4, num_layers=2, bidirectional=True)
    lengths = torch.tensor([4, 2, 3])
    clean = torch.randn(3, 4, 3) * lengths_to_mask(lengths, 4).unsqueeze(2)
    dirty = clean.clone()
    dirty[1, 2] = math.nan
    dirty[1, 3] = math.inf
    dirty[2, 3] = -math.inf

    def run(x):
        layer.zero_grad()
        output, state = layer(x, lengths=lengths)
        h_n = rnn.hidden_state(state)
        (output.sum() + h_n.sum()).backward()
        return output.detach(), h_n.detach(), [p.grad.clone() for p in layer.parameters()]

    return run(dirty), run(clean)


def cosine_in_float16():
    """Zero queries and keys stay zero in float16 (as in float32): scores 0 there, never NaN."""
    torch.manual_seed(0)
    queries, keys = torch.randn(2, 3, 4), torch.randn(2, 5, 4)
    queries[0, 1] = 0
    keys[1, 2] = 0
    ours = CosineScorer()(queries.half(), keys.half()).float()
    reference = CosineScorer()(queries, keys)
    assert not torch.isnan(ours).any() and (ours[0, 1] == 0).all() and (ours[1, :, 2] == 0).all()
    return ours, reference


def attention_in_float16_with_a_zero_key():
    torch.manual_seed(0)
    queries, keys, values = torch.randn(1, 2, 4), torch.randn(1, 3, 4), torch.randn(1, 3, 2)
    keys[0, 1] = 0
    context, weights = Attention(CosineScorer())(queries.half(), keys.half(), values.half())
    expected = Attention(CosineScorer())(queries, keys, values)
    return (context.float(), weights.float()), expected


def masked_softmax_at_the_dtype_minimum(dtype):
    """The only real score equals the dtype's most negative number: it gets all the weight."""
    low = torch.finfo(dtype).min
    scores = torch.tensor([[[low, 0.0, 0.0], [low, low, 5.0]]], dtype=dtype)  # (B, T, S) = (1, 2, 3)
    mask = torch.tensor([[True, False, False]])
    expected = torch.tensor([[[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]]], dtype=dtype)
    return masked_softmax(scores, mask), expected


def masked_softmax_with_real_keys_at_minus_inf():
    """-inf at some real keys (an earlier masking): weight 0 there; a row with all real keys at -inf is all
    zeros, as a row without real keys is, with finite gradients."""
    scores = torch.tensor([[[0.0, -math.inf, 1.0], [-math.inf, -math.inf, 2.0]]], dtype=torch.float64)
    scores.requires_grad_()
    mask = torch.tensor([[True, True, False]])
    weights = masked_softmax(scores, mask)
    (grad,) = torch.autograd.grad((weights * torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)).sum(), scores)
    assert torch.isfinite(grad).all()
    expected = torch.tensor([[[1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]], dtype=torch.float64)
    return weights.detach(), expected


def coverage_loss_of_an_empty_batch():
    attn = torch.zeros(0, 4, requires_grad=True)
    loss = coverage_loss(attn, torch.zeros(0, 4), torch.zeros(0, 4, dtype=torch.bool))
    loss.backward()
    return (loss, attn.grad.shape), (torch.tensor(0.0), (0, 4))


def whole_float_lengths(from_scratch):
    """Lengths 3.0 and 2.0 are whole: the same result as 3 and 2, on both code paths."""
    torch.manual_seed(0)
    encoder = Encoder(SRC_V, 4, 3, from_scratch=from_scratch)
    return encoder(SRC, SRC_LENGTHS.float()), encoder(SRC, SRC_LENGTHS)


ANSWERS = {
    "sequence_nll at -inf padded log-probs equals F.nll_loss(ignore_index)": nll_with_inf_at_padding,
    "CosineScorer in float16 with a zero query and a zero key": cosine_in_float16,
    "Attention(CosineScorer) in float16 with a zero key": attention_in_float16_with_a_zero_key,
    "masked_softmax float16, the only real score at the minimum": lambda: masked_softmax_at_the_dtype_minimum(
        torch.float16
    ),
    "masked_softmax float32, the only real score at the minimum": lambda: masked_softmax_at_the_dtype_minimum(
        torch.float32
    ),
    "masked_softmax with real keys at -inf": masked_softmax_with_real_keys_at_minus_inf,
    "coverage_loss of an empty batch is 0": coverage_loss_of_an_empty_batch,
    "lengths_to_mask with whole float lengths": lambda: (lengths_to_mask([3.0, 1.0], 4), lengths_to_mask([3, 1], 4)),
    "Encoder with whole float lengths": lambda: whole_float_lengths(False),
    "Encoder from scratch with whole float lengths": lambda: whole_float_lengths(True),
    **{
        f"{c.__name__} with NaN and inf at padded steps": lambda c=c: recurrent_layer_with_nan_at_padding(c)
        for c in (rnn.RNN, rnn.LSTM, rnn.GRU)
    },
}


@pytest.mark.parametrize("make", ANSWERS.values(), ids=ANSWERS.keys())
def test_bad_looking_input_gets_the_right_answer(make):
    ours, reference = make()
    assert not any(torch.isnan(t).any() for t in _tensors(ours)), "NaN in the result"
    assert_close(ours, reference, atol=2e-3, rtol=1e-2, check_dtype=False)


def _tensors(nested) -> list:
    if isinstance(nested, torch.Tensor):
        return [nested] if nested.is_floating_point() else []
    if isinstance(nested, tuple | list):
        return [t for item in nested for t in _tensors(item)]
    return []


# ----------------------------------------------------------------------------------------------
# The checks run once per call, before the loop over steps, never at every decoder step.


def _count_calls(monkeypatch, module, name):
    calls = []
    original = getattr(module, name)

    def counting(*args, **kwargs):
        calls.append(args[0])
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, counting)
    return calls


EXPECTED_CHECKS = {
    "Seq2Seq": {"seqlab.models.decoder": 1},
    "AttentionSeq2Seq": {"seqlab.models.attention_decoder": 1},
    "PointerGenerator": {"seqlab.models.pointer": 4},
}


@pytest.mark.parametrize("model_name", list(MODELS))
def test_token_ids_are_checked_once_per_call_not_per_step(monkeypatch, model_name):
    model = MODELS[model_name]()
    counted = {
        module.__name__: _count_calls(monkeypatch, module, "check_token_ids")
        for module in (seqlab.models.decoder, seqlab.models.attention_decoder, seqlab.models.pointer)
    }
    long_target = torch.randint(4, TGT_V, (2, 12))
    model(SRC, SRC_LENGTHS, long_target)  # 12 teacher-forced steps
    model.greedy_decode(SRC, SRC_LENGTHS, 12)  # up to 12 decoder steps
    model.beam_search(SRC, SRC_LENGTHS, 12, beam_size=2)
    per_call = {name: len(calls) for name, calls in counted.items() if calls}
    # forward checks tgt_in once, the pointer-generator also its src once per encoded batch (forward, greedy,
    # beam): never once per step, which would count 12 and more
    assert per_call == EXPECTED_CHECKS[model_name], per_call


def test_the_pointer_generators_step_does_not_run_final_distributions_checks(monkeypatch):
    calls = _count_calls(monkeypatch, seqlab.models.pointer, "check_in_range")
    model = pointer_generator()
    model(SRC, SRC_LENGTHS, torch.randint(4, SRC_V, (2, 12)))
    model.greedy_decode(SRC, SRC_LENGTHS, 12)
    assert calls == []


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("model_name", list(MODELS))
def test_out_of_vocabulary_ids_on_cuda_are_a_value_error_not_a_device_side_assert(model_name):
    model = MODELS[model_name]().cuda()
    src, lengths, tgt_in = SRC.cuda(), SRC_LENGTHS.cuda(), TGT_IN.cuda()
    for bad_src, bad_tgt in [(src - 1, tgt_in), (src, tgt_in - 3), (src + 20, tgt_in + 20)]:
        if model_name == "PointerGenerator" and bool((bad_src >= 0).all() and (bad_tgt >= 0).all()):
            continue  # ids >= V are the pointer-generator's out-of-vocabulary words: valid
        with pytest.raises(ValueError, match="token id"):
            model(bad_src, lengths, bad_tgt)
    assert model(src, lengths, tgt_in).is_cuda  # the device still works: no assert was triggered
    torch.cuda.synchronize()
