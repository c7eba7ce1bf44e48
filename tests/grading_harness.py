"""Helpers shared by the tests that run nbgrader on a temporary course (the class cycle, the grade
command, PostgreSQL): run an nbgrader command, find a cell by grade id, fill a release in
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


def nbgrader_meta(c) -> dict:
    return c.metadata.get("nbgrader", {})


def answer_ids(nb) -> list:
    """Grade ids of the cells where students write code, in notebook order."""
    return [nbgrader_meta(c)["grade_id"] for c in nb.cells if nbgrader_meta(c).get("solution")]


def graded_points(nb) -> dict:
    """``{grade_id: points}`` of the autograded test cells, in notebook order."""
    return {
        nbgrader_meta(c)["grade_id"]: float(nbgrader_meta(c)["points"])
        for c in nb.cells
        if nbgrader_meta(c).get("grade") and not nbgrader_meta(c).get("solution")
    }


def points_below(nb, grade_id: str) -> dict:
    """``{grade_id: points}`` of the test cells below the cell ``grade_id``."""
    ids = [nbgrader_meta(c).get("grade_id") for c in nb.cells]
    below = set(ids[ids.index(grade_id) + 1 :])
    return {gid: points for gid, points in graded_points(nb).items() if gid in below}


def exercise_names(folder: Path) -> list:
    """The exercises in ``folder`` (solutions/ or exercises/): ``<name>/<name>.ipynb``."""
    return sorted(p.parent.name for p in folder.glob("*/*.ipynb") if p.stem == p.parent.name)


def gradebook_scores(db_url: str, assignment: str) -> dict:
    """``{student: (score, max_score, {grade_id: (auto_score, max_score)})}`` for one assignment, as the
    gradebook has them."""
    from nbgrader.api import Gradebook

    with Gradebook(db_url, course_id="seqlab") as gb:
        return {
            s.student.id: (
                s.score,
                s.max_score,
                {g.name: (g.auto_score, g.max_score) for n in s.notebooks for g in n.grades},
            )
            for s in gb.assignment_submissions(assignment)
        }
