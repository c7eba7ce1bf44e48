"""Helpers shared by the tests that run nbgrader on a temporary course (round trips, the class cycle,
the grade command, PostgreSQL): run an nbgrader command, find a cell by grade id, fill a release in
from the solution notebook.

pytest puts tests/ on sys.path (the folder has no __init__.py), so test files import this module as
``grading_harness``.
"""

import os
import subprocess
import sys
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent  # the course environment's bin/: nbgrader, and alembic that it runs


def nbgrader(course: Path, *args: str) -> float:
    """Run one nbgrader command in the course; fail with its log if it fails. Returns the wall time."""
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    start = time.perf_counter()
    result = subprocess.run(
        [str(BIN / "nbgrader"), *args, f"--CourseDirectory.root={course}"],
        cwd=course,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, f"nbgrader {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}"
    return time.perf_counter() - start


def cell(nb, grade_id):
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def without_markers(source: str) -> str:
    """A solution cell as a student who solved it would hand it in: the solution, no nbgrader markers."""
    return "\n".join(
        line for line in source.splitlines() if "### BEGIN SOLUTION" not in line and "### END SOLUTION" not in line
    )


def solved(release, solution):
    """The release with every answer cell filled in from the solution notebook."""
    nb = nbformat.from_dict(release)
    for c in nb.cells:
        if c.metadata.get("nbgrader", {}).get("solution"):
            c.source = without_markers(cell(solution, c.metadata.nbgrader.grade_id).source)
    return nb
