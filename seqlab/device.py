"""Where to run, and how to make a run repeatable."""

import os
import random

import numpy as np
import torch


def pick_device() -> torch.device:
    """CUDA when present, else the CPU; everything in the course runs unchanged on either."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def seed_everything(seed: int = 0) -> None:
    """Seed Python, NumPy and torch (CPU and every GPU) so that a run can be repeated."""
    os.environ["PYTHONHASHSEED"] = str(seed)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA device
