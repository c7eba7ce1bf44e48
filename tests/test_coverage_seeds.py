"""book/runs/coverage_seeds.py, whose committed results chapter 6 reads (section 6.7), runs at a small size,
and the committed file has the chapter's settings, at least three pairs and every model and comparison the
chapter reads. What this test does not check: that the committed numbers are what the script computes at full
size (about 4 minutes of CPU). Chapter 6 checks one pair of it, when it runs on a CPU with one thread: that the
committed pair (0, 0) is the chapter's own run, to 1e-9 in every measure."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "runs"))

import coverage_seeds  # noqa: E402

COMMITTED = ROOT / "book" / "runs" / "coverage_seeds.json"


def check_runs(results: dict) -> None:
    for run in results["runs"]:
        assert set(run["models"]) == set(coverage_seeds.MODELS)
        for quality in run["models"].values():
            assert {"rouge1", "rouge2", "rougeL", "oov_recall", "repeated_3grams", "parameters"} <= set(quality)
            assert 0 <= quality["rouge1"] <= 1 and quality["parameters"] > 0
        assert set(run["paired_rouge1"]) == {f"{a} − {b}" for a, b in coverage_seeds.COMPARISONS}
        for comparison in run["paired_rouge1"].values():
            assert comparison["error"] >= 0


def test_the_script_runs_at_a_small_size(tmp_path):
    out = tmp_path / "seeds.json"
    command = [sys.executable, str(ROOT / "book" / "runs" / "coverage_seeds.py"), "--quick", "--out", str(out)]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "SEQLAB_PROGRESS": "0"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(out.read_text())
    assert results["settings"] == {"stories": 200, "epochs": 2, "max_len": 40}
    assert [(run["data_seed"], run["model_seed"]) for run in results["runs"]] == [(0, 0)]
    check_runs(results)


def test_the_committed_results_are_the_chapters_experiment_over_at_least_three_pairs():
    results = json.loads(COMMITTED.read_text())
    assert results["settings"] == {"stories": 1700, "epochs": 3, "max_len": 40}  # section 6.7's data and budget
    pairs = [(run["data_seed"], run["model_seed"]) for run in results["runs"]]
    assert len(set(pairs)) == len(pairs) >= 3 and (0, 0) in pairs
    check_runs(results)
