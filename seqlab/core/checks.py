"""Input checks shared by every seqlab module.

A wrong shape is the most common bug in sequence code, so seqlab fails early and says exactly what
it expected and what it got, instead of broadcasting silently or returning NaN. Each check raises a
``ValueError`` whose message starts with the argument's name.

The public entry points (constructors, ``forward``, ``greedy_decode``, ``beam_search``, the functions a
chapter calls) run these checks once per call; the per-step code inside a decoding loop does not.
"""

import torch
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
    check_int_at_least(name, value, 1)


def check_int_at_least(name: str, value, minimum: int) -> None:
    """Raise a ``ValueError`` unless ``value`` is an int (not a bool) of at least ``minimum``.

    Example::

        >>> check_int_at_least("n_oov", 2.5, 0)
        Traceback (most recent call last):
        ValueError: n_oov must be an int of at least 0, got 2.5 (float)
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an int of at least {minimum}, got {value!r} ({type(value).__name__})")
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")


def check_not_empty(name: str, tensor: Tensor, dim: int, what: str) -> None:
    """Raise a ``ValueError`` if dimension ``dim`` of ``tensor`` has size 0.

    Args:
        what: what the dimension counts, with its symbol, for the message: ``"sequence (B)"``.

    Example::

        >>> check_not_empty("input", torch.zeros(2, 0, 3), 1, "step (S)")
        Traceback (most recent call last):
        ValueError: input: expected at least one step (S), got shape (2, 0, 3)
    """
    if tensor.shape[dim] == 0:
        raise ValueError(f"{name}: expected at least one {what}, got shape {_shape_str(tuple(tensor.shape))}")


def check_floating(name: str, tensor: Tensor) -> None:
    """Raise a ``ValueError`` unless ``tensor`` holds floating-point numbers.

    Example::

        >>> check_floating("scores", torch.ones(1, 1, 3, dtype=torch.long))
        Traceback (most recent call last):
        ValueError: scores: expected a floating-point tensor, got torch.int64
    """
    if not tensor.is_floating_point():
        raise ValueError(f"{name}: expected a floating-point tensor, got {tensor.dtype}")


def check_mask(name: str, mask: Tensor, expected: tuple) -> None:
    """:func:`check_shape`, and a bool dtype (True at real positions)."""
    check_shape(name, mask, expected)
    if mask.dtype != torch.bool:
        raise ValueError(f"{name}: expected a bool tensor (True at real positions), got {mask.dtype}")


def check_whole_numbers(name: str, values: Tensor) -> None:
    """Raise a ``ValueError`` unless every value is a whole number: an integer tensor, or a floating-point
    one without fractions (a length of 2.5 steps means nothing, and two code paths would round it two ways).

    Example::

        >>> check_whole_numbers("lengths", torch.tensor([3.0, 2.5]))
        Traceback (most recent call last):
        ValueError: lengths: expected whole numbers, got [3.0, 2.5]
    """
    if values.dtype == torch.bool or values.is_complex():
        raise ValueError(f"{name}: expected whole numbers, got a {values.dtype} tensor")
    if values.is_floating_point() and not bool((values == values.trunc()).all()):
        raise ValueError(f"{name}: expected whole numbers, got {values.tolist()}")


def check_lengths(name: str, lengths: Tensor, batch_size: int, max_length: int) -> None:
    """Raise a ``ValueError`` unless ``lengths`` is ``(B,)`` whole numbers in ``[1, S]``.

    The one check of sequence lengths in seqlab, with this one signature: every module that takes
    lengths calls it (:func:`check_src` for a model's ``src`` and ``src_lengths``).

    Args:
        name: what the lengths are called in the caller's signature (``"lengths"``, ``"src_lengths"``).
        lengths: the real length of each sequence of a padded batch.
        batch_size: B, the number of sequences.
        max_length: S, the padded length; no length may exceed it.

    Example::

        >>> check_lengths("src_lengths", torch.tensor([3, 7]), batch_size=2, max_length=5)
        Traceback (most recent call last):
        ValueError: src_lengths must lie in [1, 5] (the padded length S), got [3, 7]
    """
    check_shape(name, lengths, (batch_size,))
    check_whole_numbers(name, lengths)
    if lengths.numel() and (int(lengths.min()) < 1 or int(lengths.max()) > max_length):
        raise ValueError(f"{name} must lie in [1, {max_length}] (the padded length S), got {lengths.tolist()}")


def check_src(src: Tensor, src_lengths: Tensor) -> None:
    """Raise a ``ValueError`` unless ``src`` is ``(B, S)`` with at least one sequence and ``src_lengths``
    passes :func:`check_lengths` for it (the token ids themselves: :func:`check_token_ids`).

    Example::

        >>> check_src(torch.zeros(0, 4, dtype=torch.long), torch.zeros(0, dtype=torch.long))
        Traceback (most recent call last):
        ValueError: src: expected at least one sequence (B), got shape (0, 4)
    """
    check_shape("src", src, ("B", "S"))
    check_not_empty("src", src, 0, "sequence (B)")  # torch cannot pack an empty batch
    check_lengths("src_lengths", src_lengths, src.shape[0], src.shape[1])


def check_token_ids(name: str, ids: Tensor, vocab_size: int | None = None) -> None:
    """Raise a ``ValueError`` unless ``ids`` holds integer token ids in ``[0, vocab_size)``.

    Checked before an embedding looks them up: an id out of range would fail there with an
    ``IndexError`` that names neither the id nor the size (on CUDA, a device-side assert).

    Args:
        vocab_size: the number of ids the vocabulary has; None when any id ``>= 0`` is accepted (the
            pointer-generator reads its out-of-vocabulary ids as ``<unk>``).

    Example::

        >>> check_token_ids("src", torch.tensor([[4, 12]]), vocab_size=10)
        Traceback (most recent call last):
        ValueError: src: token id 12 is outside the vocabulary of 10 ids [0, 10)
    """
    if ids.is_floating_point() or ids.is_complex() or ids.dtype == torch.bool:
        raise ValueError(f"{name}: expected integer token ids, got a {ids.dtype} tensor")
    if ids.numel() == 0:
        return
    low, high = torch.stack(torch.aminmax(ids)).tolist()  # one pass over the ids, one synchronisation
    if vocab_size is None:
        if low < 0:
            raise ValueError(f"{name}: token id {low} is negative; ids start at 0")
    elif low < 0 or high >= vocab_size:
        bad = low if low < 0 else high
        raise ValueError(f"{name}: token id {bad} is outside the vocabulary of {vocab_size} ids [0, {vocab_size})")


def check_in_range(name: str, tensor: Tensor, low: float, high: float | None = None) -> None:
    """Raise a ``ValueError`` unless every value lies in ``[low, high]`` (``high`` None: finite and ``>= low``).

    NaN is never in range. The message gives the first value out of range and where it is.

    Example::

        >>> check_in_range("p_gen", torch.tensor([[0.5], [1.5]]), 0, 1)
        Traceback (most recent call last):
        ValueError: p_gen: expected values in [0, 1], got 1.5 at index (1, 0)
    """
    inside = (tensor >= low) & (tensor <= high if high is not None else torch.isfinite(tensor))
    if not bool(inside.all()):
        index = tuple(int(i) for i in (~inside).nonzero()[0])
        expected = f"values in [{low}, {high}]" if high is not None else f"finite values >= {low}"
        raise ValueError(f"{name}: expected {expected}, got {tensor[index].item()} at index {index}")
