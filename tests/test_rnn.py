"""seqlab.models.rnn against torch.nn: same parameters in, same outputs, states and gradients out."""

import itertools

import pytest
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
from torch.testing import assert_close

from seqlab.models import rnn

B, S, I, H = 4, 6, 3, 5
LENGTHS = torch.tensor([6, 2, 4, 1])  # unsorted, with a full-length and a one-step sequence

LAYERS = {"RNN": (rnn.RNN, nn.RNN), "LSTM": (rnn.LSTM, nn.LSTM), "GRU": (rnn.GRU, nn.GRU)}
CELLS = {
    "RNNCell": (rnn.RNNCell, nn.RNNCell),
    "LSTMCell": (rnn.LSTMCell, nn.LSTMCell),
    "GRUCell": (rnn.GRUCell, nn.GRUCell),
}


def pair(ours_cls, torch_cls, *args, **kwargs):
    """A torch.nn module and ours holding the same float64 parameters."""
    torch.manual_seed(0)
    reference = torch_cls(*args, **kwargs).double()
    ours = ours_cls(*args, **kwargs).double()
    ours.load_state_dict(reference.state_dict())
    return ours, reference


def flat(state):
    return state if isinstance(state, tuple) else (state,)


def assert_same_grads(ours, reference):
    ours_params = dict(ours.named_parameters())
    assert ours_params.keys() == dict(reference.named_parameters()).keys()
    for name, p in reference.named_parameters():
        assert_close(ours_params[name].grad, p.grad, msg=lambda m, name=name: f"grad of {name}: {m}")


@pytest.mark.parametrize("name", CELLS)
@pytest.mark.parametrize("with_state", [False, True])
def test_cell_matches_torch(name, with_state):
    ours, reference = pair(*CELLS[name], I, H)
    x = torch.randn(B, I, dtype=torch.double)
    state = None
    if with_state:
        state = (torch.randn(B, H, dtype=torch.double), torch.randn(B, H, dtype=torch.double))
        state = state if name == "LSTMCell" else state[0]
    out_ours, out_ref = ours(x, state), reference(x, state)
    for a, b in zip(flat(out_ours), flat(out_ref)):
        assert_close(a, b)
    sum(o.sin().sum() for o in flat(out_ours)).backward()
    sum(o.sin().sum() for o in flat(out_ref)).backward()
    assert_same_grads(ours, reference)


def test_cell_without_bias_and_relu():
    ours, reference = pair(rnn.RNNCell, nn.RNNCell, I, H, bias=False, nonlinearity="relu")
    x = torch.randn(B, I, dtype=torch.double)
    assert_close(ours(x), reference(x))
    assert ours.bias_ih is None


CASES = list(itertools.product(LAYERS, [1, 2], [False, True], [False, True]))


def run_both(ours, reference, x, state, lengths=None) -> tuple:
    """``(output, final state)`` of our layer and of torch.nn's over ``x``; with ``lengths``, ours reads
    them and torch's reads the packed batch."""
    if lengths is None:
        return ours(x, state), reference(x, state)
    packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
    out_ref, final_ref = reference(packed, state)
    out_ref, _ = pad_packed_sequence(out_ref, batch_first=True, total_length=x.shape[1])
    return ours(x, state, lengths=lengths), (out_ref, final_ref)


@pytest.mark.parametrize("name,num_layers,bidirectional,padded", CASES)
def test_layer_matches_torch(name, num_layers, bidirectional, padded):
    ours, reference = pair(*LAYERS[name], I, H, num_layers=num_layers, bidirectional=bidirectional, batch_first=True)
    D = 2 if bidirectional else 1
    x = torch.randn(B, S, I, dtype=torch.double)
    # A non-zero initial state checks that it is routed to the right layer and direction.
    h0 = torch.randn(num_layers * D, B, H, dtype=torch.double)
    state = (h0, torch.randn_like(h0)) if name == "LSTM" else h0

    (out_ours, final_ours), (out_ref, final_ref) = run_both(ours, reference, x, state, LENGTHS if padded else None)

    assert out_ours.shape == (B, S, D * H)
    assert_close(out_ours, out_ref)
    for a, b in zip(flat(final_ours), flat(final_ref)):
        assert a.shape == (num_layers * D, B, H)
        assert_close(a, b)

    # A loss that touches every output and final state, with different weights per position.
    weights = torch.randn_like(out_ours)
    loss_ours = (out_ours * weights).sum() + sum(s.pow(2).sum() for s in flat(final_ours))
    loss_ref = (out_ref * weights).sum() + sum(s.pow(2).sum() for s in flat(final_ref))
    loss_ours.backward()
    loss_ref.backward()
    assert_same_grads(ours, reference)


@pytest.mark.parametrize("name", LAYERS)
def test_padded_steps_are_zero_and_do_not_matter(name):
    layer = LAYERS[name][0](I, H, bidirectional=True)
    x = torch.randn(B, S, I)
    out, final = layer(x, lengths=LENGTHS)
    noisy = x.clone()
    for b, n in enumerate(LENGTHS):
        noisy[b, n:] = 100.0  # garbage in the padding
        assert (out[b, n:] == 0).all()
    out2, final2 = layer(noisy, lengths=LENGTHS)
    assert_close(out, out2)
    for a, b in zip(flat(final), flat(final2)):
        assert_close(a, b)


def test_default_state_is_zero():
    layer = rnn.GRU(I, H, num_layers=2)
    x = torch.randn(B, S, I)
    assert_close(layer(x)[0], layer(x, torch.zeros(2, B, H))[0])


def test_dropout_only_between_layers_in_training():
    ours, reference = pair(rnn.LSTM, nn.LSTM, I, H, num_layers=2, dropout=0.5, batch_first=True)
    x = torch.randn(B, S, I, dtype=torch.double)
    ours.eval()
    reference.eval()
    assert_close(ours(x)[0], reference(x)[0])
    ours.train()
    assert not torch.allclose(ours(x)[0], ours(x)[0])


@pytest.mark.parametrize(
    "call,message",
    [
        (lambda: rnn.LSTM(I, H)(torch.randn(B, S, I + 1)), r"input: expected shape \(B, S, 3\), got \(4, 6, 4\)"),
        (lambda: rnn.LSTM(I, H)(torch.randn(S, I)), r"input: expected shape \(B, S, 3\), got \(6, 3\)"),
        (
            lambda: rnn.GRU(I, H)(torch.randn(B, S, I), torch.randn(2, B, H)),
            r"h_0: expected shape \(1, 4, 5\), got \(2, 4, 5\)",
        ),
        (lambda: rnn.LSTM(I, H)(torch.randn(B, S, I), torch.randn(1, B, H)), r"expected a pair \(h_0, c_0\)"),
        (
            lambda: rnn.RNN(I, H)(torch.randn(B, S, I), lengths=torch.tensor([1, 2])),
            r"lengths: expected shape \(4\), got \(2\)",
        ),
        (
            lambda: rnn.RNN(I, H)(torch.randn(B, S, I), lengths=torch.tensor([1, 2, 7, 3])),
            r"lengths must lie in \[1, 6\]",
        ),
        (lambda: rnn.LSTMCell(I, H)(torch.randn(B, I + 2)), r"input: expected shape \(B, 3\), got \(4, 5\)"),
        (
            lambda: rnn.GRUCell(I, H)(torch.randn(B, I), torch.randn(B + 1, H)),
            r"state: expected shape \(4, 5\), got \(5, 5\)",
        ),
        (lambda: rnn.GRU(I, H, batch_first=False), r"batch-first"),
    ],
)
def test_bad_input_names_shapes(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# ----------------------------------------------------------------------------------------------
# Gradients: against finite differences, and against torch.nn for every input.


def functional_layer(layer, lengths):
    """``layer`` as a function of (x, h_0[, c_0], *parameters), for torch.autograd.gradcheck."""
    names = [name for name, _ in layer.named_parameters()]
    n_states = 2 if layer.has_cell_state else 1

    def run(x, *rest):
        states, params = rest[:n_states], rest[n_states:]
        state = states if layer.has_cell_state else states[0]
        output, final = torch.func.functional_call(layer, dict(zip(names, params)), (x, state), {"lengths": lengths})
        return (output, *flat(final))

    return run


@pytest.mark.parametrize("lengths", [None, torch.tensor([4, 1, 3])])
def test_lstm_passes_gradcheck(lengths):
    """Gradients against finite differences, in float64: two layers, both directions, given initial
    states, every input and parameter, a row of length 1."""
    torch.manual_seed(0)
    layer = rnn.LSTM(2, 3, num_layers=2, bidirectional=True).double()
    x = torch.randn(3, 4, 2, dtype=torch.double, requires_grad=True)
    h0, c0 = (torch.randn(4, 3, 3, dtype=torch.double, requires_grad=True) for _ in range(2))
    params = [p.detach().clone().requires_grad_() for p in layer.parameters()]
    assert torch.autograd.gradcheck(functional_layer(layer, lengths), (x, h0, c0, *params))


def test_lstm_without_bias_and_without_parameter_grads():
    ours, reference = pair(rnn.LSTM, nn.LSTM, I, H, bias=False, batch_first=True)
    x = torch.randn(B, S, I, dtype=torch.double, requires_grad=True)
    for p in [*ours.parameters(), *reference.parameters()]:
        p.requires_grad_(False)
    (dx_ours,) = torch.autograd.grad(ours(x)[0].sum(), x)
    (dx_ref,) = torch.autograd.grad(reference(x)[0].sum(), x)
    assert_close(dx_ours, dx_ref)


@pytest.mark.parametrize("name", ["LSTM", "GRU"])
@pytest.mark.parametrize("seed", range(4))
def test_input_and_state_grads_match_torch(name, seed):
    """Gradients w.r.t. the input, h_0, c_0 and every weight equal torch.nn's, on random sizes (S = 1
    among them) and random lengths (a row of length 1 among them), padded or not."""
    generator = torch.Generator().manual_seed(seed)
    draw = lambda low, high: int(torch.randint(low, high + 1, (), generator=generator))  # noqa: E731
    Bs, Ss, Is, Hs = draw(1, 5), (1 if seed == 0 else draw(2, 7)), draw(1, 4), draw(1, 6)
    num_layers, bidirectional = draw(1, 2), bool(draw(0, 1))
    D = 2 if bidirectional else 1
    lengths = torch.randint(1, Ss + 1, (Bs,), generator=generator)
    lengths[-1] = 1
    ours, reference = pair(*LAYERS[name], Is, Hs, num_layers=num_layers, bidirectional=bidirectional, batch_first=True)
    for padded in (False, True):
        x = torch.randn(Bs, Ss, Is, dtype=torch.double, generator=generator, requires_grad=True)
        h0 = torch.randn(num_layers * D, Bs, Hs, dtype=torch.double, generator=generator)
        states = [h0, torch.randn_like(h0)] if name == "LSTM" else [h0]
        states = [s.requires_grad_() for s in states]
        state = tuple(states) if name == "LSTM" else states[0]
        weights = torch.randn(Bs, Ss, D * Hs, dtype=torch.double, generator=generator)
        (out_ours, final_ours), (out_ref, final_ref) = run_both(ours, reference, x, state, lengths if padded else None)
        grads = []
        for module, out, final in ((ours, out_ours, final_ours), (reference, out_ref, final_ref)):
            loss = (out * weights).sum() + sum((s * s.detach().sin()).sum() for s in flat(final))
            grads.append(torch.autograd.grad(loss, [x, *states, *module.parameters()]))
        for a, b in zip(*grads):
            assert_close(a, b)
