"""Assertions for the exercises' test cells: messages that tell the student what to fix.

nbgrader grades a test cell by what it leaves behind: an error or anything written to stderr scores 0,
a silent run scores full marks. So these helpers raise ``AssertionError`` with a message that says
what is wrong, and never warn or print.

torch is imported inside the helpers: the ``seqlab grade`` command imports this package and never
needs torch, which takes seconds to import.
"""

__all__ = ["check_tensor", "split_directions"]


def check_tensor(name: str, value, shape: tuple, dtype=None) -> None:
    """Raise ``AssertionError`` unless ``value`` is a tensor of exactly this shape (and dtype).

    Checking the type first means an object that merely compares equal to everything earns nothing.
    """
    import torch

    if not isinstance(value, torch.Tensor):
        raise AssertionError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    if tuple(value.shape) != tuple(shape):
        raise AssertionError(f"{name} must have shape {tuple(shape)}, got {tuple(value.shape)}")
    if dtype is not None and value.dtype != dtype:
        raise AssertionError(f"{name} must have dtype {dtype} (the dtype of the inputs), got {value.dtype}")


def split_directions(rnn) -> tuple:
    """Two one-directional copies of a one-layer bidirectional ``torch.nn.RNN``, ``GRU`` or ``LSTM``.

    The forward copy holds the parameters ``*_l0`` of ``rnn``, the backward copy ``*_l0_reverse``, renamed
    to ``*_l0`` (copied, not shared); both have ``rnn``'s class, sizes, ``batch_first``, device and dtype.
    Run the backward copy on each sequence reversed within its length and it gives what ``rnn``'s
    backward direction gives on a packed batch.

    Returns:
        ``(forward_rnn, backward_rnn)``.

    Raises:
        ValueError: ``rnn`` is not a one-layer bidirectional torch.nn recurrent layer.
    """
    import torch

    if not (isinstance(rnn, torch.nn.RNNBase) and rnn.bidirectional and rnn.num_layers == 1):
        raise ValueError(f"expected a one-layer bidirectional torch.nn.RNN, GRU or LSTM, got {rnn!r}")
    if getattr(rnn, "proj_size", 0):
        raise ValueError("an LSTM with proj_size is not supported")
    options = {"bias": rnn.bias, "batch_first": rnn.batch_first}
    if isinstance(rnn, torch.nn.RNN):
        options["nonlinearity"] = rnn.nonlinearity
    state = rnn.state_dict()
    halves = []
    for suffix in ("_l0", "_l0_reverse"):
        half = type(rnn)(rnn.input_size, rnn.hidden_size, **options).to(rnn.weight_ih_l0)
        half.load_state_dict(
            {name[: -len(suffix)] + "_l0": value for name, value in state.items() if name.endswith(suffix)}
        )
        halves.append(half.train(rnn.training))
    return tuple(halves)
