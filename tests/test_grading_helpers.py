"""seqlab.grading's helpers for the exercises' test cells: clear tensor checks, and tensors that cross from the
student's kernel to the verdict kernel unchanged."""

import subprocess
import sys

import pytest
import torch

from seqlab import grading
from seqlab.grading import check_tensor

B, I, H = 2, 3, 4


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


@pytest.mark.parametrize(
    "tensor",
    [
        torch.arange(6).reshape(1, 6)[:, 2],  # one row of a column: size 1, stride 6
        torch.arange(12.0).reshape(3, 4).t(),  # transposed
        torch.arange(24, dtype=torch.float64).reshape(2, 3, 4)[:, ::2, 1:3],  # strided
        torch.zeros(0, 3),  # empty
        torch.tensor(True),  # 0-dimensional
    ],
    ids=["size-1 view", "transposed", "strided", "empty", "scalar"],
)
def test_tensors_cross_from_the_students_kernel_unchanged(tensor):
    """What the verdict kernel receives of a tensor (seqlab.grading.verdict's blob): any layout, the same
    values, dtype and shape."""
    from seqlab.grading.verdict import _tensor, _tensor_blob

    received = _tensor(*_tensor_blob(tensor))
    assert received.dtype == tensor.dtype and received.shape == tensor.shape
    assert torch.equal(received, tensor)


def test_the_verdict_kernel_compares_tensors_without_importing_torch_distributed():
    """torch's first ``assert_close`` imports torch.distributed.tensor (half a second) to look for DTensors;
    the verdict kernel, whose tensors are all plain, skips that and still compares. A fresh interpreter."""
    code = (
        "import sys, torch\n"
        "from torch.testing import assert_close\n"
        "from seqlab.grading.verdict import install_answers\n"
        "install_answers({}, [], 'answers.sock')\n"
        "assert_close(torch.ones(2), torch.ones(2))\n"
        "try:\n"
        "    assert_close(torch.ones(2), torch.zeros(2))\n"
        "except AssertionError:\n"
        "    print('told apart')\n"
        "print('torch.distributed.tensor' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=240)
    assert result.stdout == "told apart\nFalse\n", result.stderr[-3000:]
