"""The benchmark script runs (one round, short lengths) and writes its tables and plot; no timing is asserted."""

import subprocess
import sys
from pathlib import Path

import pytest
from postgres_server import unavailable as postgres_unavailable

ROOT = Path(__file__).resolve().parents[1]


def test_the_benchmark_runs_and_writes_its_report(tmp_path):
    command = [sys.executable, str(ROOT / "benchmarks" / "bench.py"), "--quick", "--out", str(tmp_path)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    report = (tmp_path / "latest.md").read_text()
    for section in ("seqlab.models.rnn against torch.nn", "d2l 1.0.3", "against the source length"):
        assert section in report
    assert (tmp_path / "time_vs_length.png").stat().st_size > 0


def test_the_class_grading_benchmark_runs_and_every_score_is_the_expected_one(tmp_path):
    """benchmarks/class_grading.py --quick: three submissions (correct, untouched, hostile) graded by
    grade-class against PostgreSQL; its table must find each score the one expected (it reuses the tests'
    generators of answers, and broke twice when they changed)."""
    reason = postgres_unavailable()
    if reason is not None:
        pytest.skip(f"the benchmark grades against PostgreSQL: {reason}")
    command = [sys.executable, str(ROOT / "benchmarks" / "class_grading.py"), "--quick", "--jobs", "1"]
    command += ["--rounds", "1", "--out", str(tmp_path)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = (tmp_path / "class_grading_quick.md").read_text()
    (row,) = [line for line in report.splitlines() if line.startswith("| 1 |")]
    assert row.endswith("| 3 of 3 |"), report
