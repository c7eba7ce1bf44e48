"""Input checks shared by every seqlab module.

A wrong shape is the most common bug in sequence code, so seqlab fails early and says exactly what
it expected and what it got, instead of broadcasting silently or returning NaN.
"""

from torch import Tensor


def _shape_str(shape) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ")"


def check_shape(name: str, tensor: Tensor, expected: tuple) -> None:
    """Raise a ``ValueError`` unless ``tensor.shape`` matches ``expected``.

    Args:
        name: what the tensor is called in the caller's signature, for the message.
        tensor: the tensor to check.
        expected: one entry per dimension: an int that must match, or a symbol such as ``"B"`` for a
            size that may be anything.

    Example::

        >>> check_shape("input", torch.zeros(2, 7, 3), ("B", "S", 4))
        Traceback (most recent call last):
        ValueError: input: expected shape (B, S, 4), got (2, 7, 3)
    """
    if not isinstance(tensor, Tensor):
        raise ValueError(f"{name}: expected a tensor of shape {_shape_str(expected)}, got {type(tensor).__name__}")
    matches = tensor.dim() == len(expected) and all(
        isinstance(e, str) or e == d for e, d in zip(expected, tensor.shape)
    )
    if not matches:
        raise ValueError(f"{name}: expected shape {_shape_str(expected)}, got {_shape_str(tuple(tensor.shape))}")


def check_at_least_one(name: str, value) -> None:
    """Raise a ``ValueError`` unless ``value`` is an int of at least 1 (a count, a size, a length).

    Example::

        >>> check_at_least_one("batch_size", 0)
        Traceback (most recent call last):
        ValueError: batch_size must be at least 1, got 0
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an int of at least 1, got {value!r} ({type(value).__name__})")
    if value < 1:
        raise ValueError(f"{name} must be at least 1, got {value}")
