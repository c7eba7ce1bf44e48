"""Recurrent cells and layers written from scratch (chapter 1).

Everything here is **batch-first**: sequences are ``(B, S, input_size)``, never time-major.

The classes copy torch.nn's contract: the same constructor arguments, the same parameter names and
shapes, and the same gate order (LSTM: input, forget, cell, output; GRU: reset, update, new). So
``ours.load_state_dict(torch_module.state_dict())`` works and the outputs then match torch.nn.

Each cell's arithmetic lives in one ``*_update`` function, shared by the cell and the layer:

* the input projection ``x W_ih^T + b_ih`` does not depend on the previous state, so a layer computes
  it for all time steps at once (one matmul) and only the hidden projection runs in the time loop;
* a cell computes the same projection for its single step and calls the same update.

Shape legend: B batch, S sequence length, I input size, H hidden size, D directions (1 or 2),
L number of layers.

Names this module owns, with one meaning across seqlab:

* ``hidden_size`` (H) is torch.nn's: the size of a recurrent state, of *one direction* of a cell or
  layer. A bidirectional layer's output has ``D * hidden_size`` features per step. The layers, the
  :class:`~seqlab.models.encoder.Encoder` and the decoders take it in this meaning. A model that decodes
  (Seq2Seq, AttentionSeq2Seq, the pointer-generator, MemorySeq2Seq) takes the ``hidden_size`` of its
  decoder, the same meaning; its bidirectional encoder gets ``hidden_size // 2`` per direction
  (:func:`~seqlab.models.encoder.per_direction`), so that every encoder output, both directions together,
  has the decoder state's size. A size that means something else has its own name (``attention_size``,
  the additive scorer's hidden layer; ``encoding_size``, each position's encoding in the tagger and the
  pooled classifier; ``output_size``, an encoder's ``D * H``; ``d_model``, the Transformer's width).
* A recurrent *state* is ``h``, or the pair ``(h, c)`` for an LSTM. :func:`is_lstm_state` is the one
  place that tells them apart (by type: the pair is a tuple); :func:`state_parts`,
  :func:`hidden_state` and :func:`map_state` build on it, and every other module calls them.
"""

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from seqlab.core.checks import check_at_least_one, check_lengths, check_not_empty, check_shape

__all__ = [
    "RNNCell",
    "LSTMCell",
    "GRUCell",
    "RNN",
    "LSTM",
    "GRU",
    "is_lstm_state",
    "state_parts",
    "hidden_state",
    "map_state",
]


# ----------------------------------------------------------------------------------------------
# The three updates. Each takes the input projection ``gates_x = x W_ih^T + b_ih`` for one step.


def rnn_update(gates_x: Tensor, h: Tensor, weight_hh: Tensor, bias_hh, nonlinearity: str) -> Tensor:
    """Elman RNN step: ``h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh)``.

    Args:
        gates_x: ``(B, H)`` input projection of this step.
        h: ``(B, H)`` previous hidden state.
    """
    pre = gates_x + F.linear(h, weight_hh, bias_hh)  # (B, H)
    return torch.tanh(pre) if nonlinearity == "tanh" else torch.relu(pre)


def lstm_update(gates_x: Tensor, h: Tensor, c: Tensor, weight_hh: Tensor, bias_hh) -> tuple:
    """LSTM step, gates in torch's order (i, f, g, o)::

        i = σ(W_ii x + b_ii + W_hi h + b_hi)      input gate: how much new content to write
        f = σ(W_if x + b_if + W_hf h + b_hf)      forget gate: how much old memory to keep
        g = tanh(W_ig x + b_ig + W_hg h + b_hg)   candidate content
        o = σ(W_io x + b_io + W_ho h + b_ho)      output gate: how much memory to show
        c' = f * c + i * g
        h' = o * tanh(c')

    Args:
        gates_x: ``(B, 4H)`` input projection of this step.
        h, c: ``(B, H)`` previous hidden state and cell memory.
    """
    gates = gates_x + F.linear(h, weight_hh, bias_hh)  # (B, 4H)
    i, f, g, o = gates.chunk(4, dim=1)  # 4 x (B, H)
    c_next = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)  # (B, H)
    h_next = torch.sigmoid(o) * torch.tanh(c_next)  # (B, H)
    return h_next, c_next


def gru_update(gates_x: Tensor, h: Tensor, weight_hh: Tensor, bias_hh) -> Tensor:
    """GRU step, gates in torch's order (r, z, n)::

        r = σ(W_ir x + b_ir + W_hr h + b_hr)            reset gate
        z = σ(W_iz x + b_iz + W_hz h + b_hz)            update gate: 1 keeps the old state
        n = tanh(W_in x + b_in + r * (W_hn h + b_hn))   candidate state
        h' = (1 - z) * n + z * h

    Args:
        gates_x: ``(B, 3H)`` input projection of this step.
        h: ``(B, H)`` previous hidden state.
    """
    gates_h = F.linear(h, weight_hh, bias_hh)  # (B, 3H)
    x_r, x_z, x_n = gates_x.chunk(3, dim=1)  # 3 x (B, H)
    h_r, h_z, h_n = gates_h.chunk(3, dim=1)  # 3 x (B, H)
    r = torch.sigmoid(x_r + h_r)
    z = torch.sigmoid(x_z + h_z)
    n = torch.tanh(x_n + r * h_n)  # the reset gate scales only the hidden part
    return (1 - z) * n + z * h


def reset_uniform(module: nn.Module) -> None:
    """Every parameter uniform in ``[-1/√H, 1/√H]``, H = ``module.hidden_size``, as torch.nn initialises its RNNs."""
    bound = 1.0 / math.sqrt(module.hidden_size)
    for p in module.parameters():
        nn.init.uniform_(p, -bound, bound)


def is_lstm_state(state) -> bool:
    """Whether ``state`` is an LSTM's pair ``(h, c)`` rather than a plain hidden state ``h``.

    The one place where seqlab tells an LSTM's state from the others: by its type, a tuple (torch.nn's
    LSTM takes and returns a tuple; its RNN and GRU a tensor).

    Example::

        >>> h, c = torch.zeros(1, 2, 3), torch.zeros(1, 2, 3)
        >>> is_lstm_state((h, c)), is_lstm_state(h)
        (True, False)
    """
    return isinstance(state, tuple)


def state_parts(state) -> tuple:
    """A recurrent state as a tuple of tensors: ``(h,)``, or ``(h, c)`` for an LSTM."""
    return tuple(state) if is_lstm_state(state) else (state,)


def hidden_state(state) -> Tensor:
    """The hidden state h of a recurrent state: the state itself, or the h of an LSTM's pair ``(h, c)``.

    Example::

        >>> h, c = torch.ones(1, 2, 3), torch.zeros(1, 2, 3)
        >>> hidden_state((h, c)) is h, hidden_state(h) is h
        (True, True)
    """
    return state_parts(state)[0]


def map_state(function, state):
    """Apply ``function`` to a recurrent state: to ``h``, or to both halves of an LSTM's ``(h, c)``.

    The result has the state's form: a tensor for a tensor, a pair for a pair.
    """
    mapped = tuple(function(part) for part in state_parts(state))
    return mapped if is_lstm_state(state) else mapped[0]


# ----------------------------------------------------------------------------------------------
# Cells: one time step.


class _CellBase(nn.Module):
    """What :class:`RNNCell`, :class:`LSTMCell` and :class:`GRUCell` share: parameters ``weight_ih``
    ``(G, I)``, ``weight_hh`` ``(G, H)`` and their biases, G = ``num_gates * H``, and the input checks."""

    num_gates = 1

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True):
        super().__init__()
        check_at_least_one("input_size", input_size)
        check_at_least_one("hidden_size", hidden_size)
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        G = self.num_gates * hidden_size
        self.weight_ih = nn.Parameter(torch.empty(G, input_size))
        self.weight_hh = nn.Parameter(torch.empty(G, hidden_size))
        if bias:
            self.bias_ih = nn.Parameter(torch.empty(G))
            self.bias_hh = nn.Parameter(torch.empty(G))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        reset_uniform(self)

    def _check_step(self, x: Tensor, *states: Tensor) -> None:
        check_shape("input", x, ("B", self.input_size))
        for state in states:
            check_shape("state", state, (x.shape[0], self.hidden_size))

    def _zeros(self, x: Tensor) -> Tensor:
        return x.new_zeros(x.shape[0], self.hidden_size)

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}" + ("" if self.bias else ", bias=False")


class RNNCell(_CellBase):
    r"""An Elman RNN cell: :math:`h' = \tanh(W_{ih} x + b_{ih} + W_{hh} h + b_{hh})`.

    Args:
        input_size: features of the input ``x``.
        hidden_size: features of the hidden state ``h``.
        bias: if ``False``, no ``bias_ih`` and ``bias_hh``.
        nonlinearity: ``"tanh"`` or ``"relu"``.

    Shape:
        - input ``(B, I)``, hx ``(B, H)`` (zeros when omitted) → ``(B, H)``.

    Example::

        >>> cell = RNNCell(3, 5)
        >>> cell(torch.randn(2, 3)).shape
        torch.Size([2, 5])

    Taught in chapter 1.
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh"):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"nonlinearity must be 'tanh' or 'relu', got {nonlinearity!r}")
        self.nonlinearity = nonlinearity
        super().__init__(input_size, hidden_size, bias)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        h = self._zeros(input) if hx is None else hx
        self._check_step(input, h)
        gates_x = F.linear(input, self.weight_ih, self.bias_ih)  # (B, H)
        return rnn_update(gates_x, h, self.weight_hh, self.bias_hh, self.nonlinearity)


class LSTMCell(_CellBase):
    r"""A long short-term memory cell; the gate equations are in :func:`lstm_update`.

    ``weight_ih`` is ``(4H, I)`` and ``weight_hh`` is ``(4H, H)``, rows stacked as (i, f, g, o).

    Args:
        input_size: features of the input ``x``.
        hidden_size: features of ``h`` and of the cell memory ``c``.
        bias: if ``False``, no ``bias_ih`` and ``bias_hh``.

    Shape:
        - input ``(B, I)``, hx ``((B, H), (B, H))`` (zeros when omitted) → ``(h', c')``, each ``(B, H)``.

    Example::

        >>> cell = LSTMCell(3, 5)
        >>> h, c = cell(torch.randn(2, 3))
        >>> h.shape, c.shape
        (torch.Size([2, 5]), torch.Size([2, 5]))

    Taught in chapter 1.
    """

    num_gates = 4

    def forward(self, input: Tensor, hx: tuple | None = None) -> tuple:
        h, c = (self._zeros(input), self._zeros(input)) if hx is None else hx
        self._check_step(input, h, c)
        gates_x = F.linear(input, self.weight_ih, self.bias_ih)  # (B, 4H)
        return lstm_update(gates_x, h, c, self.weight_hh, self.bias_hh)


class GRUCell(_CellBase):
    r"""A gated recurrent unit cell; the gate equations are in :func:`gru_update`.

    ``weight_ih`` is ``(3H, I)`` and ``weight_hh`` is ``(3H, H)``, rows stacked as (r, z, n).

    Args:
        input_size: features of the input ``x``.
        hidden_size: features of the hidden state ``h``.
        bias: if ``False``, no ``bias_ih`` and ``bias_hh``.

    Shape:
        - input ``(B, I)``, hx ``(B, H)`` (zeros when omitted) → ``(B, H)``.

    Example::

        >>> GRUCell(3, 5)(torch.randn(2, 3)).shape
        torch.Size([2, 5])

    Taught in chapter 1.
    """

    num_gates = 3

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        h = self._zeros(input) if hx is None else hx
        self._check_step(input, h)
        gates_x = F.linear(input, self.weight_ih, self.bias_ih)  # (B, 3H)
        return gru_update(gates_x, h, self.weight_hh, self.bias_hh)


# ----------------------------------------------------------------------------------------------
# Layers: whole sequences, several layers, one or two directions, padded batches.


class _LayerBase(nn.Module):
    """What :class:`RNN`, :class:`LSTM` and :class:`GRU` share: parameters, padding, the loop over layers and
    directions. A subclass sets ``num_gates`` and ``has_cell_state`` and writes ``_step``, one update."""

    num_gates = 1
    has_cell_state = False  # what this layer's state is (LSTM: the pair (h, c)); a given state: is_lstm_state

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = True,
        dropout: float = 0.0,
        bidirectional: bool = False,
    ):
        super().__init__()
        if not batch_first:
            raise ValueError("seqlab is batch-first throughout: inputs are (B, S, I); batch_first must be True")
        check_at_least_one("input_size", input_size)
        check_at_least_one("hidden_size", hidden_size)
        check_at_least_one("num_layers", num_layers)
        if isinstance(dropout, bool) or not isinstance(dropout, int | float) or not 0 <= dropout <= 1:
            raise ValueError(f"dropout must be a probability in [0, 1], got {dropout!r}")
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = True
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.num_directions = 2 if bidirectional else 1

        # torch.nn's names: weight_ih_l{layer}{suffix}, suffix "_reverse" for the backward direction.
        G = self.num_gates * hidden_size
        for layer in range(num_layers):
            layer_input = input_size if layer == 0 else hidden_size * self.num_directions
            for suffix in self._suffixes():
                self.register_parameter(f"weight_ih_l{layer}{suffix}", nn.Parameter(torch.empty(G, layer_input)))
                self.register_parameter(f"weight_hh_l{layer}{suffix}", nn.Parameter(torch.empty(G, hidden_size)))
                if bias:
                    self.register_parameter(f"bias_ih_l{layer}{suffix}", nn.Parameter(torch.empty(G)))
                    self.register_parameter(f"bias_hh_l{layer}{suffix}", nn.Parameter(torch.empty(G)))
        self.reset_parameters()

    def _suffixes(self) -> list:
        return ["", "_reverse"][: self.num_directions]

    def reset_parameters(self) -> None:
        reset_uniform(self)

    def _weights(self, layer: int, suffix: str) -> tuple:
        get = lambda name: getattr(self, f"{name}_l{layer}{suffix}", None)  # noqa: E731
        return get("weight_ih"), get("weight_hh"), get("bias_ih"), get("bias_hh")

    def _step(self, gates_x: Tensor, state: tuple, weight_hh: Tensor, bias_hh) -> tuple:
        """One update; ``state`` is a tuple: ``(h,)``, or ``(h, c)`` for the LSTM."""
        raise NotImplementedError

    def _check_input(self, x: Tensor, lengths) -> Tensor | None:
        check_shape("input", x, ("B", "S", self.input_size))
        check_not_empty("input", x, 1, "step (S)")  # as torch.nn: a sequence has at least one step
        if lengths is None:
            return None
        lengths = torch.as_tensor(lengths, device=x.device)
        check_lengths("lengths", lengths, x.shape[0], x.shape[1])
        return lengths

    def _initial_state(self, x: Tensor, state) -> tuple:
        """The initial state as a tuple of ``(L*D, B, H)`` tensors (zeros when ``state`` is None)."""
        expected = (self.num_layers * self.num_directions, x.shape[0], self.hidden_size)
        n = 2 if self.has_cell_state else 1
        if state is None:
            return tuple(x.new_zeros(expected) for _ in range(n))
        states = state_parts(state)
        if len(states) != n:
            wanted = "a pair (h_0, c_0)" if self.has_cell_state else "one tensor h_0, not a pair"
            raise ValueError(f"state: expected {wanted}, got {len(states)} tensors")
        for name, s in zip(("h_0", "c_0"), states):
            check_shape(name, s, expected)
        return states

    def _run_direction(self, gates_x: Tensor, state: tuple, weights: tuple, mask, reverse: bool):
        """Run one direction of one layer over time.

        Args:
            gates_x: ``(B, S, G)`` input projections of every step.
            state: tuple of ``(B, H)`` initial states.
            mask: ``(B, S)`` bool, True at real tokens, or None.
            reverse: walk from the last step to the first.

        Returns:
            ``(B, S, H)`` outputs (zero at padded steps) and the tuple of final states.
        """
        _, weight_hh, _, bias_hh = weights
        # unbind, not gates_x[:, t]: the backward of an index fills a whole (B, S, G) tensor at every step.
        steps = gates_x.unbind(1)  # S tensors (B, G)
        real = None if mask is None else mask.unsqueeze(2).unbind(1)  # S tensors (B, 1)
        outputs = [None] * len(steps)
        for t in reversed(range(len(steps))) if reverse else range(len(steps)):
            new_state = self._step(steps[t], state, weight_hh, bias_hh)
            if real is None:
                state = new_state
                outputs[t] = new_state[0]
            else:
                # A padded step keeps the old state, so the final state is the one at the last real
                # step, and the backward direction starts from its initial state at the last real token.
                state = tuple(torch.where(real[t], new, old) for new, old in zip(new_state, state))
                outputs[t] = torch.where(real[t], new_state[0], 0.0)  # zero at padded steps, even after inf or NaN
        return torch.stack(outputs, dim=1), state  # (B, S, H)

    def forward(self, input: Tensor, state=None, lengths=None):
        """Run the layer stack over a batch of sequences.

        Args:
            input: ``(B, S, I)``.
            state: initial ``h_0`` of shape ``(L*D, B, H)`` (LSTM: the pair ``(h_0, c_0)``), zeros if None.
            lengths: ``(B,)`` real length of each sequence in a padded batch, or None if none is padded.

        Returns:
            ``output (B, S, D*H)``, the last layer's hidden state at every step (both directions
            concatenated, zero at padded steps), and ``h_n (L*D, B, H)`` (LSTM: ``(h_n, c_n)``), the
            final state of every layer and direction, indexed ``layer * D + direction``.
        """
        lengths = self._check_input(input, lengths)
        initial = self._initial_state(input, state)
        S = input.shape[1]
        mask = None
        if lengths is not None:
            mask = torch.arange(S, device=input.device).unsqueeze(0) < lengths.unsqueeze(1)  # (B, S)
            # Padded steps are never read: whatever they hold (inf, NaN) reaches no output and no gradient.
            input = torch.where(mask.unsqueeze(2), input, 0.0)  # (B, S, I)

        finals = []  # one tuple of (B, H) states per (layer, direction)
        layer_input = input  # (B, S, I) then (B, S, D*H)
        for layer in range(self.num_layers):
            outputs = []
            for direction, suffix in enumerate(self._suffixes()):
                index = layer * self.num_directions + direction
                weights = self._weights(layer, suffix)
                gates_x = F.linear(layer_input, weights[0], weights[2])  # (B, S, G): all steps at once
                state0 = tuple(s[index] for s in initial)  # (B, H) each
                out, final = self._run_direction(gates_x, state0, weights, mask, reverse=direction == 1)
                outputs.append(out)  # (B, S, H)
                finals.append(final)
            layer_input = torch.cat(outputs, dim=2)  # (B, S, D*H)
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_input = F.dropout(layer_input, self.dropout, training=True)

        h_n = torch.stack([f[0] for f in finals])  # (L*D, B, H)
        if self.has_cell_state:
            c_n = torch.stack([f[1] for f in finals])  # (L*D, B, H)
            return layer_input, (h_n, c_n)
        return layer_input, h_n

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bidirectional:
            s += ", bidirectional=True"
        return s


class RNN(_LayerBase):
    r"""A multi-layer Elman RNN, each step :math:`h_t = \tanh(W_{ih} x_t + b_{ih} + W_{hh} h_{t-1} + b_{hh})`.

    With ``nonlinearity="relu"``, ReLU replaces tanh (the step is :func:`rnn_update`).

    Args:
        input_size: features I of each input step.
        hidden_size: features H of the hidden state of one direction.
        num_layers: stacked layers L; layer ``l > 0`` reads layer ``l - 1``'s output.
        nonlinearity: ``"tanh"`` (default) or ``"relu"``.
        bias: if ``False``, no bias parameters.
        batch_first: must be ``True`` (kept for torch.nn's signature).
        dropout: dropout on every layer's output except the last, in training.
        bidirectional: add a second direction (D = 2) that reads the sequence right to left.

    Shape (``forward(input, state=None, lengths=None)``, see :meth:`_LayerBase.forward`):
        - input ``(B, S, I)``; state ``h_0 (L*D, B, H)``; lengths ``(B,)`` with values in ``[1, S]``.
        - returns ``(output, h_n)``: output ``(B, S, D*H)``, ``h_n (L*D, B, H)`` indexed ``layer * D + direction``.

    Parameters have torch.nn's names (``weight_ih_l0``, ``weight_hh_l0_reverse``, ...), so
    ``load_state_dict(torch.nn.RNN(...).state_dict())`` works. With ``lengths``, padded steps give zero
    output and each direction's final state is taken at the last real step it reads (as torch.nn gives
    for a packed sequence): the forward one at the last real token, ``→h_S``, the backward one at the
    first token, ``←h_1`` (index 0).

    Example::

        >>> layer = RNN(input_size=3, hidden_size=5, num_layers=2, bidirectional=True)
        >>> output, h_n = layer(torch.randn(4, 7, 3), lengths=torch.tensor([7, 2, 5, 1]))
        >>> output.shape, h_n.shape
        (torch.Size([4, 7, 10]), torch.Size([4, 4, 5]))

    Taught in chapter 1.
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, nonlinearity: str = "tanh", **kwargs):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"nonlinearity must be 'tanh' or 'relu', got {nonlinearity!r}")
        self.nonlinearity = nonlinearity
        super().__init__(input_size, hidden_size, num_layers, **kwargs)

    def _step(self, gates_x, state, weight_hh, bias_hh):
        return (rnn_update(gates_x, state[0], weight_hh, bias_hh, self.nonlinearity),)


class LSTM(_LayerBase):
    """A multi-layer LSTM over a batch of sequences; each step is :func:`lstm_update` (gates i, f, g, o).

    The state is the pair ``(h, c)``: the hidden state and the cell memory, both ``H`` features per
    direction. ``weight_ih_l{l}`` is ``(4H, I)`` (``(4H, D*H)`` for ``l > 0``), rows stacked as (i, f, g, o).

    Args:
        input_size: features I of each input step.
        hidden_size: features H of ``h`` and of ``c``, in one direction.
        num_layers: stacked layers L; layer ``l > 0`` reads layer ``l - 1``'s output.
        bias: if ``False``, no bias parameters.
        batch_first: must be ``True`` (kept for torch.nn's signature).
        dropout: dropout on every layer's output except the last, in training.
        bidirectional: add a second direction (D = 2) that reads the sequence right to left.

    Shape (``forward(input, state=None, lengths=None)``, see :meth:`_LayerBase.forward`):
        - input ``(B, S, I)``; state the pair ``(h_0, c_0)``, each ``(L*D, B, H)``; lengths ``(B,)`` in ``[1, S]``.
        - returns ``(output, (h_n, c_n))``: output ``(B, S, D*H)``; ``h_n`` and ``c_n`` ``(L*D, B, H)``.

    Parameters have torch.nn's names, so ``load_state_dict(torch.nn.LSTM(...).state_dict())`` works.
    With ``lengths``, padded steps give zero output and the final states are taken at each direction's
    last real step (as torch.nn gives for a packed sequence).

    Example::

        >>> layer = LSTM(input_size=3, hidden_size=5)
        >>> output, (h_n, c_n) = layer(torch.randn(4, 7, 3))
        >>> output.shape, h_n.shape, c_n.shape
        (torch.Size([4, 7, 5]), torch.Size([1, 4, 5]), torch.Size([1, 4, 5]))

    Taught in chapter 1.
    """

    num_gates = 4
    has_cell_state = True

    def _step(self, gates_x, state, weight_hh, bias_hh):
        return lstm_update(gates_x, state[0], state[1], weight_hh, bias_hh)


class GRU(_LayerBase):
    """A multi-layer GRU over a batch of sequences; each step is :func:`gru_update` (gates r, z, n).

    ``weight_ih_l{l}`` is ``(3H, I)`` (``(3H, D*H)`` for ``l > 0``), rows stacked as (r, z, n).

    Args:
        input_size: features I of each input step.
        hidden_size: features H of the hidden state of one direction.
        num_layers: stacked layers L; layer ``l > 0`` reads layer ``l - 1``'s output.
        bias: if ``False``, no bias parameters.
        batch_first: must be ``True`` (kept for torch.nn's signature).
        dropout: dropout on every layer's output except the last, in training.
        bidirectional: add a second direction (D = 2) that reads the sequence right to left.

    Shape (``forward(input, state=None, lengths=None)``, see :meth:`_LayerBase.forward`):
        - input ``(B, S, I)``; state ``h_0 (L*D, B, H)``; lengths ``(B,)`` with values in ``[1, S]``.
        - returns ``(output, h_n)``: output ``(B, S, D*H)``, ``h_n (L*D, B, H)`` indexed ``layer * D + direction``.

    Parameters have torch.nn's names, so ``load_state_dict(torch.nn.GRU(...).state_dict())`` works.
    With ``lengths``, padded steps give zero output and the final state is taken at each direction's
    last real step (as torch.nn gives for a packed sequence).

    Example::

        >>> layer = GRU(input_size=3, hidden_size=5, bidirectional=True)
        >>> output, h_n = layer(torch.randn(4, 7, 3))
        >>> output.shape, h_n.shape
        (torch.Size([4, 7, 10]), torch.Size([2, 4, 5]))

    Taught in chapter 1.
    """

    num_gates = 3

    def _step(self, gates_x, state, weight_hh, bias_hh):
        return (gru_update(gates_x, state[0], weight_hh, bias_hh),)


# The from-scratch layers, and torch.nn's fused layers with the same parameters, by cell name.
LAYERS = {"rnn": RNN, "lstm": LSTM, "gru": GRU}
TORCH_LAYERS = {"rnn": nn.RNN, "lstm": nn.LSTM, "gru": nn.GRU}
CELLS = tuple(LAYERS)  # ("rnn", "lstm", "gru"): the cell names that models take as cell=
