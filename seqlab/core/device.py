"""Where a model runs, in which mode, and how to make a run repeatable.

Helpers that use a model leave it as they found it: on its own device, in its own mode.

torch and NumPy are imported inside these functions, not at the top: ``import seqlab`` (which the
``seqlab grade`` command does, and which never needs torch) then takes milliseconds, not seconds.
"""

import contextlib
import random


def pick_device():
    """CUDA when present, else the CPU; everything in the course runs unchanged on either."""
    import torch

    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def model_device(model):
    """The device of the model's first parameter (or buffer); the CPU for a model that holds neither."""
    import torch

    for tensor in (*model.parameters(), *model.buffers()):
        return tensor.device
    return torch.device("cpu")


def check_model_device(model, device):
    """The model's device; a ``ValueError`` if ``device`` is given and is another one.

    For helpers that measure a model where it is: they never move it, and say so when asked to.
    """
    import torch

    actual = model_device(model)
    if device is not None:
        wanted = torch.device(device)
        if wanted.type != actual.type or (wanted.index is not None and wanted.index != actual.index):
            raise ValueError(f"device: the model is on {actual}, not on {wanted}; move it there first (model.to(...))")
    return actual


@contextlib.contextmanager
def evaluating(model):
    """Run the ``with`` block with ``model`` in evaluation mode, then restore the mode it was in.

    Evaluation mode switches dropout off; a helper that decodes or measures must not leave a model
    that is being trained in evaluation mode behind it.
    """
    was_training = model.training
    model.eval()
    try:
        yield model
    finally:
        model.train(was_training)


def seed_everything(seed: int = 0) -> None:
    """Seed Python's ``random``, NumPy and torch (the CPU and every GPU), so that a run can be repeated.

    What it cannot do: Python's string hashing is seeded when the interpreter starts (set
    ``PYTHONHASHSEED`` before starting Python to fix it; seqlab never depends on hash order), and some
    CUDA kernels are not deterministic, so a GPU run may differ from a CPU run in the last digits.
    """
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA device
