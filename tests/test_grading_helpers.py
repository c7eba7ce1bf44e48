"""seqlab.grading: references switch off inside ``disabled`` and come back intact; clear tensor checks."""

import pytest
import torch
from torch import nn
from torch.testing import assert_close

import seqlab.rnn
from seqlab import grading
from seqlab.grading import LSTM_OPTIONAL_REFERENCES, LSTM_REFERENCES, DisabledError, check_tensor, disabled
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
