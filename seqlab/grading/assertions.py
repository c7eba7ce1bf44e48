"""Assertions for the exercises' test cells: messages that tell the student what to fix.

nbgrader grades a test cell by what it leaves behind: an error or anything written to stderr scores 0,
a silent run scores full marks. So these helpers raise ``AssertionError`` with a message that says
what is wrong, and never warn or print.

torch is imported inside the helpers: the ``seqlab grade`` command imports this package and never
needs torch, which takes seconds to import.
"""

__all__ = ["check_tensor"]


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
