"""The benchmark script runs (one round, short lengths) and writes its tables and plot; no timing is asserted."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_benchmark_runs_and_writes_its_report(tmp_path):
    command = [sys.executable, str(ROOT / "benchmarks" / "bench.py"), "--quick", "--out", str(tmp_path)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    report = (tmp_path / "latest.md").read_text()
    for section in ("seqlab.rnn against torch.nn", "d2l 1.0.3", "against the source length"):
        assert section in report
    assert (tmp_path / "time_vs_length.png").stat().st_size > 0


def test_the_class_grading_benchmark_loads_what_it_grades():
    """benchmarks/class_grading.py needs PostgreSQL and minutes, so it is not run here; its imports are (the
    tests' generators of answers, which it reuses: it broke once when a test file was split)."""
    command = [sys.executable, str(ROOT / "benchmarks" / "class_grading.py"), "--help"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "grade-class" in done.stdout
