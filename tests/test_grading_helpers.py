"""seqlab.grading: references switch off inside ``disabled`` and come back intact; clear tensor checks."""

import subprocess
import sys

import pytest
import torch
from torch import nn
from torch.testing import assert_close

import seqlab.rnn
from seqlab import grading
from seqlab.grading import (
    LSTM_OPTIONAL_REFERENCES,
    LSTM_REFERENCES,
    DisabledError,
    check_tensor,
    disabled,
    split_directions,
)
from seqlab.rnn import lstm_update as lstm_update_alias  # bound before any block, as a student could

B, I, H = 2, 3, 4


def lstm_inputs():
    torch.manual_seed(0)
    return torch.randn(B, I), (torch.randn(B, H), torch.randn(B, H))


def snapshot():
    """Everything ``disabled(*LSTM_REFERENCES)`` touches, by identity."""
    return {
        "lstm_update": seqlab.rnn.lstm_update,
        "lstm_update code": seqlab.rnn.lstm_update.__code__,
        "LSTMCell": seqlab.rnn.LSTMCell,
        "LSTMCell own": dict(vars(seqlab.rnn.LSTMCell)),
        "LSTM own": dict(vars(seqlab.rnn.LSTM)),
        "nn.LSTMCell own": dict(vars(nn.LSTMCell)),
        "nn.LSTM own": dict(vars(nn.LSTM)),
        "_VF own": dict(vars(torch._VF)),
        "torch.lstm_cell": torch.lstm_cell,
    }


def test_references_raise_inside_and_work_again_after():
    x, state = lstm_inputs()
    gates = torch.zeros(B, 4 * H)
    ours, theirs = seqlab.rnn.LSTMCell(I, H), nn.LSTMCell(I, H)
    layer = seqlab.rnn.LSTM(I, H)
    before = snapshot()
    expected = theirs(x, state)

    with disabled(*LSTM_REFERENCES, optional=LSTM_OPTIONAL_REFERENCES):
        calls = {
            "seqlab.rnn.lstm_update": lambda: seqlab.rnn.lstm_update(gates, *state, theirs.weight_hh, None),
            "seqlab.rnn.LSTMCell.__init__": lambda: seqlab.rnn.LSTMCell(I, H),
            "seqlab.rnn.LSTMCell.forward": lambda: ours(x, state),  # built before the block
            "seqlab.rnn.LSTM.forward": lambda: layer(x.unsqueeze(1)),
            "torch.nn.LSTMCell.forward": lambda: theirs(x, state),
            "torch.nn.LSTM.__init__": lambda: nn.LSTM(I, H),
            "torch.lstm_cell": lambda: torch.lstm_cell(x, state, theirs.weight_ih, theirs.weight_hh),
            "torch._VF.lstm_cell": lambda: torch._VF.lstm_cell(x, state, theirs.weight_ih, theirs.weight_hh),
        }
        for name, call in calls.items():
            with pytest.raises(DisabledError, match=rf"^{name.replace('.', '[.]')} is switched off"):
                call()
        # a name bound before the block is caught too: the function's code is swapped in place
        with pytest.raises(DisabledError, match="seqlab.rnn.lstm_update"):
            lstm_update_alias(torch.zeros(B, 4 * H), *state, theirs.weight_hh, None)
        # what a student legitimately uses keeps working, autograd included
        w = theirs.weight_ih.detach().clone().requires_grad_()
        torch.sigmoid(nn.functional.linear(x, w)).sum().backward()
        assert w.grad is not None
        # other recurrent modules are untouched (the patches on LSTM classes are not inherited upwards)
        assert seqlab.rnn.GRUCell(I, H)(x).shape == (B, H)

    after = snapshot()
    assert after.keys() == before.keys()
    for key in before:
        assert after[key] == before[key], f"{key} was not restored"
    assert_close(theirs(x, state), expected)
    assert ours(x, state)[0].shape == (B, H)
    assert lstm_update_alias(gates, *state, theirs.weight_hh, None)[1].shape == (B, H)
    assert layer(x.unsqueeze(1))[0].shape == (B, 1, H)


def test_restores_when_the_block_raises():
    before = snapshot()
    with pytest.raises(ZeroDivisionError):
        with disabled(*LSTM_REFERENCES, optional=LSTM_OPTIONAL_REFERENCES):
            raise ZeroDivisionError
    assert snapshot() == before


def test_unknown_target_raises_before_patching_anything():
    before = snapshot()
    with pytest.raises(ValueError, match="cannot disable 'seqlab.rnn.NoSuchCell'"):
        with disabled("seqlab.rnn.lstm_update", "seqlab.rnn.NoSuchCell"):
            pass  # pragma: no cover
    with pytest.raises(ValueError, match="cannot disable 'no_such_module.thing'"):
        with disabled("no_such_module.thing"):
            pass  # pragma: no cover
    with pytest.raises(ValueError, match="dotted path"):
        with disabled("lstm_update"):
            pass  # pragma: no cover
    assert snapshot() == before


def test_optional_targets_that_do_not_exist_are_skipped():
    with disabled("seqlab.rnn.lstm_update", optional=("torch.no_such_op", "no_such_module.f")):
        with pytest.raises(DisabledError):
            seqlab.rnn.lstm_update(None, None, None, None, None)
    assert not hasattr(torch, "no_such_op")


def test_nested_and_repeated_targets_restore_in_order():
    original = seqlab.rnn.lstm_update
    code = original.__code__
    with disabled("seqlab.rnn.lstm_update", "seqlab.rnn.lstm_update"):
        with disabled("seqlab.rnn.lstm_update", "torch.nn.LSTMCell.forward"):
            with pytest.raises(DisabledError):
                nn.LSTMCell(I, H)(torch.zeros(B, I))
        with pytest.raises(DisabledError):
            original(None, None, None, None, None)
        assert "forward" in vars(nn.LSTMCell)  # nn.LSTMCell defines its own forward: restored, not removed
    assert seqlab.rnn.lstm_update is original and original.__code__ is code
    assert nn.LSTMCell(I, H)(torch.zeros(B, I))[0].shape == (B, H)


def test_inherited_attributes_are_removed_again():
    assert "forward" not in vars(seqlab.rnn.LSTM) and "__init__" not in vars(seqlab.rnn.LSTMCell)
    with disabled("seqlab.rnn.LSTM", "seqlab.rnn.LSTMCell"):
        assert "forward" in vars(seqlab.rnn.LSTM)
        assert seqlab.rnn.GRU(I, H)(torch.zeros(B, 2, I))[0].shape == (B, 2, H)  # shares _LayerBase.forward
    assert "forward" not in vars(seqlab.rnn.LSTM) and "__init__" not in vars(seqlab.rnn.LSTMCell)


def test_silent(capfd):
    with disabled(*LSTM_REFERENCES, optional=LSTM_OPTIONAL_REFERENCES):
        pass
    out, err = capfd.readouterr()
    assert out == "" and err == ""


class EqualsEverything:
    def __eq__(self, other):
        return True

    shape = (B, H)


@pytest.mark.parametrize(
    "value,message",
    [
        (EqualsEverything(), "h_next must be a torch.Tensor, got EqualsEverything"),
        ([[0.0] * H] * B, "h_next must be a torch.Tensor, got list"),
        (torch.zeros(H, B), r"h_next must have shape \(2, 4\), got \(4, 2\)"),
        (torch.zeros(1, B, H), r"h_next must have shape \(2, 4\), got \(1, 2, 4\)"),
        (torch.zeros(B, H, dtype=torch.float64), "h_next must have dtype torch.float32"),
    ],
)
def test_check_tensor_rejects(value, message):
    with pytest.raises(AssertionError, match=message):
        check_tensor("h_next", value, (B, H), torch.float32)


def test_check_tensor_accepts():
    check_tensor("h_next", torch.zeros(B, H), (B, H), torch.float32)
    check_tensor("h_next", torch.zeros(B, H, dtype=torch.float64), torch.Size([B, H]))


def test_public_names():
    assert set(grading.__all__) <= set(dir(grading))


# ---------------------------------------------------------------------------------------------------
# The reference lists of exercises 2 and 3, and split_directions.


def test_gru_references_switch_off_and_come_back():
    from seqlab.rnn import gru_update as gru_update_alias  # bound before the block, as a student could

    torch.manual_seed(0)
    x, h = torch.randn(B, I), torch.randn(B, H)
    ours, theirs, layer = seqlab.rnn.GRUCell(I, H), nn.GRUCell(I, H), seqlab.rnn.GRU(I, H)
    expected = theirs(x, h)
    weights = (theirs.weight_ih, theirs.weight_hh, theirs.bias_ih, theirs.bias_hh)

    with disabled(*grading.GRU_REFERENCES, optional=grading.GRU_OPTIONAL_REFERENCES):
        calls = {
            "seqlab.rnn.gru_update": lambda: gru_update_alias(torch.zeros(B, 3 * H), h, theirs.weight_hh, None),
            "seqlab.rnn.GRUCell.forward": lambda: ours(x, h),
            "seqlab.rnn.GRU.forward": lambda: layer(x.unsqueeze(1)),
            "torch.nn.GRUCell.forward": lambda: theirs(x, h),
            "torch.nn.GRU.__init__": lambda: nn.GRU(I, H),
            "torch.gru_cell": lambda: torch.gru_cell(x, h, *weights),
            "torch._VF.gru_cell": lambda: torch._VF.gru_cell(x, h, *weights),
        }
        for name, call in calls.items():
            with pytest.raises(DisabledError, match=rf"^{name.replace('.', '[.]')} is switched off"):
                call()
        # what exercise 1's GRU step is written from keeps working, and so do the LSTM cells
        gates = x @ theirs.weight_ih.T + theirs.bias_ih  # (B, 3H)
        assert torch.sigmoid(gates).shape == (B, 3 * H)
        assert nn.LSTMCell(I, H)(x)[0].shape == (B, H)

    assert_close(theirs(x, h), expected)
    assert ours(x, h).shape == (B, H) and layer(x.unsqueeze(1))[0].shape == (B, 1, H)
    assert_close(gru_update_alias(gates, h, theirs.weight_hh, theirs.bias_hh), expected)


def test_bidirectional_references_switch_off_and_come_back():
    from torch.nn.utils.rnn import pack_padded_sequence as pack_alias  # bound before the block

    import seqlab.encoder

    torch.manual_seed(0)
    src, lengths = torch.tensor([[4, 5, 6], [7, 8, 0]]), torch.tensor([3, 2])
    encoder = seqlab.encoder.Encoder(vocab_size=10, embedding_size=3, hidden_size=4)
    bridge = seqlab.encoder.Bridge(4, 2, 5, 1, "gru")
    scratch = seqlab.rnn.GRU(3, 4, bidirectional=True)
    one_way = nn.GRU(3, 4, batch_first=True)
    embedded = torch.randn(2, 3, 3)
    expected = encoder(src, lengths)[0]

    with disabled(*grading.BIDIRECTIONAL_REFERENCES, optional=grading.BIDIRECTIONAL_OPTIONAL_REFERENCES):
        calls = {
            "pack_padded_sequence": lambda: pack_alias(embedded, lengths, batch_first=True),
            "pack_sequence": lambda: nn.utils.rnn.pack_sequence([embedded[0], embedded[1, :2]]),
            "Encoder.__init__": lambda: seqlab.encoder.Encoder(10, 3, 4),
            "Encoder.forward": lambda: encoder(src, lengths),
            "Bridge.forward": lambda: bridge(torch.zeros(2, 2, 4)),
            "last_layer_directions": lambda: seqlab.encoder.last_layer_directions(torch.zeros(2, 2, 4), 1, 2),
            "GRU.__init__": lambda: seqlab.rnn.GRU(3, 4),
            "GRU.forward": lambda: scratch(embedded, lengths=lengths),
            "LSTM.__init__": lambda: seqlab.rnn.LSTM(3, 4),
            "_pack_padded_sequence": lambda: torch._VF._pack_padded_sequence(embedded, lengths, True),
        }
        for name, call in calls.items():
            with pytest.raises(DisabledError, match=name.replace(".", "[.]")):
                call()
        # what exercise 2 builds on keeps working: one-directional torch layers, embeddings, indexing
        outputs, h_n = one_way(encoder.embedding(src))
        assert outputs.shape == (2, 3, 4) and h_n.shape == (1, 2, 4)

    assert_close(encoder(src, lengths)[0], expected)
    assert pack_alias(embedded, lengths, batch_first=True).data.shape == (5, 3)
    assert scratch(embedded, lengths=lengths)[0].shape == (2, 3, 8)
    assert bridge(encoder(src, lengths)[1]).shape == (1, 2, 5)


def test_decoder_and_loss_references_switch_off_and_come_back():
    import torch.nn.functional as F

    import seqlab.seq2seq
    import seqlab.train
    from seqlab.train import sequence_nll as nll_alias  # bound before the block

    torch.manual_seed(0)
    decoder = seqlab.seq2seq.ContextDecoder(vocab_size=7, embedding_size=3, hidden_size=4, context_size=5)
    model = seqlab.seq2seq.Seq2Seq(src_vocab_size=6, tgt_vocab_size=7, embedding_size=3, hidden_size=4)
    prev, state, context = torch.tensor([1, 2]), torch.zeros(1, 2, 4), torch.randn(2, 5)
    log_probs = torch.randn(2, 3, 7).log_softmax(dim=-1).requires_grad_()
    targets = torch.tensor([[4, 5, 2], [6, 2, 0]])
    expected = decoder.step(prev, state, context)[0]

    with disabled(*grading.DECODER_REFERENCES):
        for name, call in {
            "ContextDecoder.forward": lambda: decoder(prev.unsqueeze(1), state, context),
            "ContextDecoder.step": lambda: decoder.step(prev, state, context),
            "Seq2Seq.forward": lambda: model(torch.tensor([[4]]), torch.tensor([1]), torch.tensor([[1]])),
            "Seq2Seq.decode_step": lambda: model.decode_step(prev, (torch.zeros(2, 8), state)),
        }.items():
            with pytest.raises(DisabledError, match=name.replace(".", "[.]")):
                call()
        # the submodules that a decoder step is written from keep working
        embedded = decoder.embedding(prev)  # (2, 3)
        outputs, _ = decoder.rnn(torch.cat([embedded, context], dim=1).unsqueeze(1), state)
        assert decoder.output(torch.cat([outputs[:, 0], context, embedded], dim=1)).shape == (2, 7)

    with disabled(*grading.LOSS_REFERENCES, optional=grading.LOSS_OPTIONAL_REFERENCES):
        flat_scores, flat_targets = log_probs.flatten(0, 1), targets.flatten()
        calls = [
            ("sequence_nll", lambda: seqlab.train.sequence_nll(log_probs, targets)),
            ("sequence_nll", lambda: nll_alias(log_probs, targets)),
            ("nll_loss", lambda: F.nll_loss(flat_scores, flat_targets)),
            ("cross_entropy", lambda: F.cross_entropy(flat_scores, flat_targets)),
            ("NLLLoss", lambda: nn.NLLLoss()(flat_scores, flat_targets)),
            ("CrossEntropyLoss", lambda: nn.CrossEntropyLoss()(flat_scores, flat_targets)),
            ("nll_loss_nd", lambda: torch._C._nn.nll_loss_nd(flat_scores, flat_targets, None, 1, -100)),
        ]
        for name, call in calls:
            with pytest.raises(DisabledError, match=name):
                call()
        # a loss written from tensor operations works, gradients included
        picked = log_probs.gather(2, targets.unsqueeze(2)).squeeze(2)
        (-(picked * (targets != 0)).sum()).backward()
        assert log_probs.grad is not None
        assert decoder.step(prev, state, context)[0].shape == (2, 7)  # the decoder is not switched off here

    assert_close(decoder.step(prev, state, context)[0], expected)
    assert nll_alias(log_probs, targets).shape == ()
    assert F.nll_loss(log_probs.flatten(0, 1), targets.flatten()).shape == ()


# ---------------------------------------------------------------------------------------------------
# The reference lists of exercises 4 and 5 (attention, scoring functions).


def test_attention_references_switch_off_and_come_back():
    import seqlab.attention
    from seqlab.attention import masked_softmax as softmax_alias  # bound before the block, as a student could

    torch.manual_seed(0)
    queries, keys, values = torch.randn(2, 3, 4), torch.randn(2, 5, 6), torch.randn(2, 5, 2)
    mask = torch.tensor([[True, True, True, False, False], [False] * 5])  # the second row: no real key
    scorer = seqlab.attention.AdditiveScorer(4, 6, 7)  # built before the block
    attention = seqlab.attention.Attention(scorer)
    prepared = scorer.prepare_keys(keys)
    scores = scorer(queries, keys)
    expected = attention(queries, keys, values, mask)
    torch_masked_softmax = torch._masked_softmax

    with disabled(*grading.ATTENTION_REFERENCES, optional=grading.ATTENTION_OPTIONAL_REFERENCES):
        calls = {
            "masked_softmax": lambda: seqlab.attention.masked_softmax(scores, mask),
            "masked_softmax alias": lambda: softmax_alias(scores, mask),
            "AdditiveScorer.__init__": lambda: seqlab.attention.AdditiveScorer(4, 6, 7),
            "AdditiveScorer.forward": lambda: scorer(queries, keys),
            "AdditiveScorer.prepare_keys": lambda: scorer.prepare_keys(keys),
            "AdditiveScorer.score": lambda: scorer.score(queries, prepared),
            "AdditiveScorer.__init__ via make_scorer": lambda: seqlab.attention.make_scorer("additive", 4, 6, 7),
            "Attention.__init__": lambda: seqlab.attention.Attention(scorer),
            "Attention.forward": lambda: attention(queries, keys, values, mask),
            "torch.masked.softmax": lambda: torch.masked.softmax(scores, 2, mask=mask.unsqueeze(1).expand_as(scores)),
            "torch.masked.softmax via _ops": lambda: torch.masked._ops.softmax(scores, 2),
            "_masked_softmax": lambda: torch._masked_softmax(scores, ~mask.unsqueeze(1).expand_as(scores), 2),
        }
        for name, call in calls.items():
            with pytest.raises(DisabledError, match=name.split()[0].replace(".", "[.]")):
                call()
        # what exercise 4 is written from keeps working: the weights of a scorer, tanh, matrix products, where,
        # finfo and torch.softmax, gradients included
        q = queries.clone().requires_grad_()
        hidden = torch.tanh(scorer.query_proj(q).unsqueeze(2) + (keys @ scorer.key_proj.weight.T).unsqueeze(1))
        ours = hidden @ scorer.v.weight[0]  # (2, 3, 5)
        real = mask.unsqueeze(1)
        filled = torch.where(real, ours, torch.finfo(ours.dtype).min)
        weights = torch.where(real, torch.softmax(filled, dim=-1), 0.0)
        assert_close((weights @ values, weights), expected)
        (grad,) = torch.autograd.grad(weights.sum(), q)
        assert torch.isfinite(grad).all()

    assert_close(attention(queries, keys, values, mask), expected)
    assert_close(softmax_alias(scores, mask), expected[1])
    assert_close(scorer.score(queries, scorer.prepare_keys(keys)), scores)
    assert_close(torch.masked.softmax(scores, 2), torch.softmax(scores, dim=2))
    assert torch._masked_softmax is torch_masked_softmax


def test_pooling_references_switch_off_and_come_back():
    import seqlab.attention
    import seqlab.pooling

    torch.manual_seed(0)
    states, mask = torch.randn(2, 5, 6), torch.tensor([[True] * 5, [True] * 2 + [False] * 3])
    pooling = seqlab.pooling.AttentionPooling(6, 4)  # built before the block
    expected = pooling(states, mask)

    with disabled(*grading.POOLING_REFERENCES, optional=grading.POOLING_OPTIONAL_REFERENCES):
        calls = {
            "AttentionPooling.__init__": lambda: seqlab.pooling.AttentionPooling(6, 4),
            "AttentionPooling.forward": lambda: pooling(states, mask),
            "masked_softmax": lambda: seqlab.attention.masked_softmax(torch.zeros(2, 1, 5), mask),
            "Attention.forward": lambda: pooling.attention(states[:, :1], states, states, mask),
        }
        for name, call in calls.items():
            with pytest.raises(DisabledError, match=name.split()[0].replace(".", "[.]")):
                call()
        # what exercise 7 is written from keeps working: the module's weights, tanh, matrix products,
        # masked_fill and torch.softmax
        scorer = pooling.attention.scorer
        scores = torch.tanh(states @ scorer.key_proj.weight.T + scorer.query_proj(pooling.query)) @ scorer.v.weight[0]
        weights = torch.softmax(scores.masked_fill(~mask, torch.finfo(scores.dtype).min), dim=-1) * mask
        assert_close(((weights.unsqueeze(1) @ states).squeeze(1), weights), expected)

    assert_close(pooling(states, mask), expected)


def test_scorer_references_switch_off_and_come_back():
    import torch.nn.functional as F

    import seqlab.attention as attention

    torch.manual_seed(0)
    queries, keys = torch.randn(2, 3, 4), torch.randn(2, 5, 4)
    bilinear = attention.BilinearScorer(4, 4)  # built before the block
    dot, scaled, cosine = attention.DotScorer(), attention.ScaledDotScorer(), attention.CosineScorer()
    scorers = {"bilinear": bilinear, "dot": dot, "scaled": scaled, "cosine": cosine}
    expected = {name: scorer(queries, keys) for name, scorer in scorers.items()}
    pairs = queries[:, :1].expand(2, 5, 4), keys  # (2, 5, 4) twice: one cosine per key

    with disabled(*grading.SCORER_REFERENCES):
        calls = {
            "BilinearScorer.__init__": lambda: attention.BilinearScorer(4, 4),
            "BilinearScorer.forward": lambda: bilinear(queries, keys),
            "BilinearScorer.prepare_keys": lambda: bilinear.prepare_keys(keys),
            "BilinearScorer.score": lambda: bilinear.score(queries, keys),
            "DotScorer.__init__": lambda: attention.DotScorer(),
            "DotScorer.__init__ via make_scorer": lambda: attention.make_scorer("dot", 4, 4),
            "DotScorer.forward": lambda: dot(queries, keys),
            "DotScorer.score": lambda: attention.DotScorer.score(None, queries, keys),  # needs no instance
            "ScaledDotScorer.__init__": lambda: attention.ScaledDotScorer(),
            "ScaledDotScorer.forward": lambda: scaled(queries, keys),
            "ScaledDotScorer.score": lambda: scaled.score(queries, keys),
            "CosineScorer.__init__": lambda: attention.CosineScorer(),
            "CosineScorer.forward": lambda: cosine(queries, keys),
            "CosineScorer.prepare_keys": lambda: cosine.prepare_keys(keys),
            "CosineScorer.score": lambda: cosine.score(queries, keys),
            "functional.cosine_similarity": lambda: F.cosine_similarity(*pairs, dim=-1),
            "torch.cosine_similarity": lambda: torch.cosine_similarity(*pairs, dim=-1),
            "CosineSimilarity.__init__": lambda: nn.CosineSimilarity(dim=-1),
            "functional.bilinear": lambda: F.bilinear(*pairs, bilinear.weight.unsqueeze(0)),
            "torch.bilinear": lambda: torch.bilinear(*pairs, bilinear.weight.unsqueeze(0), None),
            "Bilinear.__init__": lambda: nn.Bilinear(4, 4, 1),
        }
        for name, call in calls.items():
            with pytest.raises(DisabledError, match=name.split()[0].replace(".", "[.]")):
                call()
        # what exercise 5 is written from keeps working: matrix products, norms, clamp, F.normalize
        assert_close(queries @ (keys @ bilinear.weight.T).transpose(1, 2), expected["bilinear"])
        assert_close(queries @ keys.transpose(1, 2), expected["dot"])
        assert_close(queries @ keys.transpose(1, 2) / 2.0, expected["scaled"])  # sqrt(4) = 2
        lengths = torch.linalg.vector_norm(queries, dim=-1, keepdim=True).clamp(min=1e-8)
        assert_close((queries / lengths) @ F.normalize(keys, dim=-1).transpose(1, 2), expected["cosine"])

    for name, scorer in scorers.items():
        assert_close(scorer(queries, keys), expected[name])
    assert_close(attention.make_scorer("scaled_dot", 4, 4)(queries, keys), expected["scaled"])
    assert_close(F.cosine_similarity(*pairs, dim=-1), expected["cosine"][:, 0])
    assert_close(nn.CosineSimilarity(dim=-1)(*pairs), torch.cosine_similarity(*pairs, dim=-1))
    assert nn.Bilinear(4, 4, 1)(*pairs).shape == (2, 5, 1)


def reversed_within_lengths(x, lengths):
    """Row b: the first lengths[b] steps in reverse order, then the padding where it was (a plain loop)."""
    out = x.clone()
    for b, n in enumerate(lengths.tolist()):
        out[b, :n] = x[b, :n].flip(0)
    return out


@pytest.mark.parametrize(
    "layer", [nn.GRU, nn.LSTM, lambda *a, **k: nn.RNN(*a, nonlinearity="relu", **k)], ids=["gru", "lstm", "rnn"]
)
def test_split_directions_gives_the_two_halves_of_a_packed_bidirectional_layer(layer):
    torch.manual_seed(1)
    B, S, E, H = 3, 5, 2, 4
    rnn = layer(E, H, batch_first=True, bidirectional=True).double()
    x, lengths = torch.randn(B, S, E, dtype=torch.float64), torch.tensor([5, 2, 3])
    packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
    expected, _ = nn.utils.rnn.pad_packed_sequence(rnn(packed)[0], batch_first=True, total_length=S)

    forward_rnn, backward_rnn = split_directions(rnn)
    for half in (forward_rnn, backward_rnn):
        assert type(half) is type(rnn) and not half.bidirectional and half.batch_first
        assert half.weight_ih_l0.dtype == torch.float64
        assert {p.data_ptr() for p in half.parameters()}.isdisjoint(p.data_ptr() for p in rnn.parameters())
    mask = (torch.arange(S) < lengths.unsqueeze(1)).unsqueeze(2)
    forward_out = forward_rnn(x)[0] * mask
    backward_out = reversed_within_lengths(backward_rnn(reversed_within_lengths(x, lengths))[0], lengths) * mask
    assert_close(torch.cat([forward_out, backward_out], dim=2), expected)


def test_split_directions_rejects_what_it_cannot_split():
    for rnn in [nn.GRU(2, 3), nn.GRU(2, 3, num_layers=2, bidirectional=True), nn.Linear(2, 3)]:
        with pytest.raises(ValueError, match="one-layer bidirectional"):
            split_directions(rnn)


def test_a_first_optimizer_can_be_built_inside_the_exercise_blocks():
    """Exercise 3 trains inside ``disabled``: torch's lazy imports (the first Adam imports torch._dynamo) must work.

    Run in a fresh interpreter, where nothing has imported torch._dynamo yet.
    """
    code = (
        "import torch\n"
        "from seqlab import grading\n"
        "lists = [(grading.LOSS_REFERENCES, grading.LOSS_OPTIONAL_REFERENCES),\n"
        "         (grading.BIDIRECTIONAL_REFERENCES, grading.BIDIRECTIONAL_OPTIONAL_REFERENCES),\n"
        "         (grading.ATTENTION_REFERENCES, grading.ATTENTION_OPTIONAL_REFERENCES),\n"
        "         (grading.SCORER_REFERENCES, ())]\n"
        "for targets, optional in lists:\n"
        "    with grading.disabled(*targets, optional=optional):\n"
        "        torch.optim.Adam([torch.nn.Parameter(torch.zeros(2))])\n"
        "        import torch._dynamo\n"
        "print('built')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=240)
    assert result.returncode == 0 and result.stdout == "built\n", result.stderr[-3000:]


def test_pointer_references_switch_off_and_come_back():
    import seqlab.pointer
    from seqlab.pointer import coverage_loss as coverage_alias  # bound before the block, as a student could
    from seqlab.pointer import final_distribution as final_alias

    torch.manual_seed(0)
    vocab_probs, attn = torch.randn(2, 5).softmax(dim=1), torch.randn(2, 3).softmax(dim=1)
    p_gen, src_ext_ids = torch.tensor([[0.3], [0.8]]), torch.tensor([[4, 5, 4], [6, 2, 0]])
    coverage = torch.rand(2, 3)
    expected = final_alias(vocab_probs, attn, p_gen, src_ext_ids, n_oov=2), coverage_alias(attn, coverage)

    with disabled(*grading.POINTER_REFERENCES):
        calls = {
            "final_distribution": lambda: seqlab.pointer.final_distribution(vocab_probs, attn, p_gen, src_ext_ids, 2),
            "coverage_loss": lambda: seqlab.pointer.coverage_loss(attn, coverage),
        }
        calls["final_distribution alias"] = lambda: final_alias(vocab_probs, attn, p_gen, src_ext_ids, 2)
        calls["coverage_loss alias"] = lambda: coverage_alias(attn, coverage)
        for name, call in calls.items():
            with pytest.raises(DisabledError, match=name.split()[0]):
                call()
        # the tensor operations that the exercise is written from keep working
        extended = torch.cat([p_gen * vocab_probs, torch.zeros(2, 2)], dim=1)  # (2, 7)
        mixed = extended.scatter_add(1, src_ext_ids, (1 - p_gen) * attn)
        assert_close(mixed, expected[0])
        assert_close(torch.minimum(attn, coverage).sum(dim=1).mean(), expected[1])

    assert_close(final_alias(vocab_probs, attn, p_gen, src_ext_ids, n_oov=2), expected[0])
    assert_close(seqlab.pointer.coverage_loss(attn, coverage), expected[1])


@pytest.mark.parametrize(
    "tensor",
    [
        torch.arange(6).reshape(1, 6)[:, 2],  # one row of a column: size 1, stride 6
        torch.arange(12.0).reshape(3, 4).t(),  # transposed
        torch.arange(24, dtype=torch.float64).reshape(2, 3, 4)[:, ::2, 1:3],  # strided
        torch.zeros(0, 3),  # empty
        torch.tensor(True),  # 0-dimensional
    ],
    ids=["size-1 view", "transposed", "strided", "empty", "scalar"],
)
def test_tensors_cross_from_the_students_kernel_unchanged(tensor):
    """What the verdict kernel receives of a tensor (seqlab.grading.verdict's blob): any layout, the same
    values, dtype and shape."""
    from seqlab.grading.verdict import _tensor, _tensor_blob

    received = _tensor(*_tensor_blob(tensor))
    assert received.dtype == tensor.dtype and received.shape == tensor.shape
    assert torch.equal(received, tensor)


def test_the_verdict_kernel_compares_tensors_without_importing_torch_distributed():
    """torch's first ``assert_close`` imports torch.distributed.tensor (half a second) to look for DTensors;
    the verdict kernel, whose tensors are all plain, skips that and still compares. A fresh interpreter."""
    code = (
        "import sys, torch\n"
        "from torch.testing import assert_close\n"
        "from seqlab.grading.verdict import install_answers\n"
        "install_answers({}, [], 'answers.sock')\n"
        "assert_close(torch.ones(2), torch.ones(2))\n"
        "try:\n"
        "    assert_close(torch.ones(2), torch.zeros(2))\n"
        "except AssertionError:\n"
        "    print('told apart')\n"
        "print('torch.distributed.tensor' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=240)
    assert result.stdout == "told apart\nFalse\n", result.stderr[-3000:]


# Ways around the guard that a hostile student found (issue 13's review of the new tasks): each earned a
# task's points with borrowed code; review.findings must list each for the instructor.
AROUND_THE_GUARD = {
    "an alias of torch's builtin cell": (
        "from torch import gru_cell as _g\n\ndef gru_cell_step(x, h, w_ih, w_hh, b_ih, b_hh):\n"
        "    return _g(x, h, w_ih, w_hh, b_ih, b_hh)\n",
        "names a reference that the hidden tests switch off (torch.gru_cell)",
    ),
    "the guard's resolver replaced": (
        "import pkgutil\n\npkgutil.resolve_name = lambda name: None\n",
        "replaces pkgutil.resolve_name",
    ),
    "a second copy of a module": (
        "import importlib.util\n\nspec = importlib.util.spec_from_file_location('copy', 'decoding.py')\n"
        "module = importlib.util.module_from_spec(spec)\nspec.loader.exec_module(module)\n",
        "loads a module's code a second time, or its source (spec_from_file_location)",
    ),
    "an object moved to a copy's class": (
        "def decoder_step(decoder, tokens, state, context):\n    decoder.__class__ = Copy\n"
        "    return decoder.step(tokens, state, context)\n",
        "changes an object's class (__class__)",
    ),
    "the verdict's namespace changed": (
        "import contextlib\nimport seqlab.grading.verdict as v\n\n"
        "v.__dict__['_switched_off'] = lambda guard, blocks: contextlib.nullcontext()\n",
        "reaches into a function (__dict__)",
    ),
    "the grading machinery imported": (
        "import seqlab.grading.verdict as v\n",
        "imports the grading machinery (seqlab.grading.verdict)",
    ),
    "torch's internals through another module": (
        "import torch.nn.functional as F\n\nstep = F.torch._C._VariableFunctions.gru_cell\n",
        "calls torch's internals (torch.nn.functional.torch._C._VariableFunctions.gru_cell)",
    ),
    "a private attribute by name": (
        "import torch\n\ninternals = getattr(torch, '_C')\n",
        "reaches a private attribute",
    ),
    "a module's source": (
        "import inspect\nimport seqlab.decoding\n\ncode = inspect.getsource(seqlab.decoding)\n",
        "getsource",
    ),
}


@pytest.mark.parametrize("source, listed", AROUND_THE_GUARD.values(), ids=list(AROUND_THE_GUARD))
def test_ways_around_the_guard_are_listed_for_review(source, listed):
    from seqlab.grading.review import findings

    assert any(listed in what for _, what in findings(source)), findings(source)


def test_the_references_named_for_review_are_the_guards_own():
    from seqlab.grading.review import SWITCHED_OFF

    assert {"torch.gru_cell", "torch.nn.GRUCell", "seqlab.decoding.greedy_search"} <= SWITCHED_OFF
    assert all(isinstance(name, str) and "." in name for name in SWITCHED_OFF)
