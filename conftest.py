"""pytest's shared set-up: the docstring examples of seqlab run as doctests (`make test`)."""

import pytest
import torch


@pytest.fixture(autouse=True)
def _torch_in_doctests(doctest_namespace):
    # Docstring examples write `torch.tensor(...)` as a reader would, without importing it first.
    doctest_namespace["torch"] = torch
