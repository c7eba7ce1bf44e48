"""Realistic answers to an exercise, right and wrong, run against its tests: the machinery that the files
``tests/test_buggy_<exercise>.py`` share (one file per exercise, so that pytest-xdist spreads them).

These files test the *tests*. A bug is a small edit of an answer cell of the solution, the kind of mistake a
student makes, the notebook otherwise solved; a variant is a correct answer written another way (a loop for a
vectorised product, ``where`` for a fill, another guard). Every student runs twice in one warm process
(tests/answer_runner.py, a fresh namespace each): "graded", the test cells with their hidden tests, as the grader
runs them, and "visible", as the student sees them. Then:

* the solution scores full marks;
* a bug scores below full marks, fails the tests named to catch it, and fails no test of another task: a later
  task is graded with the reference of the earlier ones, which its first test cell defines in a hidden block;
* a bug fails a visible test before submission (unless it says why no visible test can), the first one that fails
  is one of its own task's, and that test's message names the function the bug is in;
* a variant scores full marks in both runs.

Two students (the first bug, the first variant) are also graded end to end by one ``nbgrader autograde`` in the
sandbox with the course's grader: its verdicts must equal the in-process ones, so the fast path decides what the
grader decides (a test cell fails for an error or for anything it writes to stderr, a warning shown included).
The solution is not graded again here: the class cycle (tests/test_class_cycle.py) grades every exercise's
solution end to end and checks each test cell's points. A test file holds its tables and one line::

    BUGS = {"student": Bug("answer_grade_id", [(correct code, buggy code)], {"test_that_catches_it"})}
    VARIANTS = {"student": Variant("answer_grade_id", "the whole answer cell")}
    globals().update(exercise_tests(EXERCISE, BUGS, VARIANTS))
"""

import ast
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest
from grading_harness import (
    ROOT,
    SANDBOX_MISSING,
    cell,
    gradebook_scores,
    graded_points,
    nbgrader,
    nbgrader_meta,
    run_nbgrader,
    solved,
    without_markers,
)

RUNNER = Path(__file__).with_name("answer_runner.py")
HIDDEN_BEGIN, HIDDEN_END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
CONTROL = "control"  # the student who hands in the solution
# Bounds a hang (a cell that swallows every interrupt; a spinning cell meets its limit of 60 s of CPU time, a
# waiting one the 300 s watchdog, see answer_runner.py): the slowest file's runner uses well under a minute of CPU,
# so a busy machine never reaches it.
RUNNER_TIMEOUT = 1800
NOTEBOOK_SECONDS = 300  # nbgrader_config.py's c.SandboxedExecute.total_timeout: the grader's limit on a notebook
AUTOGRADE_START = 240  # seconds for nbgrader to start and write the gradebook, on a busy machine


@dataclass(frozen=True)
class Bug:
    answer: str  # grade id of the answer cell that gets the bug
    edits: list  # (the solution's code, the buggy code) pairs, each found once in that cell
    must_fail: set  # grade ids of the test cells that must catch it
    visible: bool = True  # False: no visible test can catch it (the test file says why)


@dataclass(frozen=True)
class Variant:
    answer: str  # grade id of the answer cell
    source: str  # the whole cell: a correct answer written another way


def solution_notebook(exercise: str):
    return nbformat.read(ROOT / "solutions" / exercise / f"{exercise}.ipynb", as_version=4)


def visible_form(source: str) -> str:
    """A test cell as the release shows it: its hidden blocks gone."""
    lines, hidden = [], False
    for line in source.splitlines():
        if line.strip() == HIDDEN_BEGIN:
            hidden = True
        elif line.strip() == HIDDEN_END:
            hidden = False
        elif not hidden:
            lines.append(line)
    return "\n".join(lines)


def graded_form(source: str) -> str:
    """A test cell as the grader runs it: its hidden blocks in, the markers out."""
    return "\n".join(line for line in source.splitlines() if line.strip() not in (HIDDEN_BEGIN, HIDDEN_END))


def plan_cells(solution) -> list:
    """The notebook's code cells as answer_runner.py takes them."""
    cells = []
    for c in solution.cells:
        if c.cell_type != "code":
            continue
        meta = nbgrader_meta(c)
        if meta.get("solution"):
            cells.append({"kind": "answer", "grade_id": meta["grade_id"], "graded": without_markers(c.source)})
        elif meta.get("grade"):
            source = c.source
            cells.append(
                {
                    "kind": "test",
                    "grade_id": meta["grade_id"],
                    "graded": graded_form(source),
                    "visible": visible_form(source),
                }
            )
        else:
            cells.append({"kind": "locked", "grade_id": meta.get("grade_id"), "graded": c.source, "visible": c.source})
    return cells


def tasks(cells: list) -> dict:
    """``{answer grade id: its task's test grade ids}``: the test cells after a run of answer cells, up to the
    next answer cell, belong to every answer of that run."""
    owners, current, tests = {}, [], []
    for c in cells:
        if c["kind"] == "answer":
            if tests:
                current, tests = [], []
            current.append(c["grade_id"])
            owners[c["grade_id"]] = tests
        elif c["kind"] == "test":
            tests.append(c["grade_id"])
    return {answer: set(own) for answer, own in owners.items()}


def function_name(source: str) -> str:
    """The first function an answer cell defines: what a message about it must name."""
    return next(node.name for node in ast.parse(source).body if isinstance(node, ast.FunctionDef))


def edited(source: str, bug: Bug, student: str) -> str:
    for correct, wrong in bug.edits:
        assert source.count(correct) == 1, f"{student}: the answer no longer holds {correct!r} once: update the bug"
        source = source.replace(correct, wrong)
    return source


def with_bug(release, solution, bug: Bug):
    """The release, solved from the solution, with ``bug``'s edits in its answer cell (a notebook to hand in)."""
    nb = solved(release, solution)
    answer = cell(nb, bug.answer)
    answer.source = edited(answer.source, bug, bug.answer)
    return nb


def students(cells: list, bugs: dict, variants: dict) -> dict:
    """``{student: {answer grade id: source}}``, the control first."""
    answer = {c["grade_id"]: c["graded"] for c in cells if c["kind"] == "answer"}
    plan = {CONTROL: {}}
    plan |= {name: {bug.answer: edited(answer[bug.answer], bug, name)} for name, bug in bugs.items()}
    plan |= {name: {variant.answer: variant.source} for name, variant in variants.items()}
    return plan


def run_students(exercise: str, bugs: dict, variants: dict, folder: Path) -> dict:
    """Each student's verdicts in both runs, and what the tests need to judge them."""
    solution = solution_notebook(exercise)
    cells = plan_cells(solution)
    clash = (set(bugs) & set(variants)) | ({CONTROL} & (set(bugs) | set(variants)))
    assert not clash, f"a student's name is used twice: {clash}"
    plan, out = folder / "plan.json", folder / "verdicts.json"
    plan.write_text(json.dumps({"cells": cells, "students": students(cells, bugs, variants)}))
    env = dict(os.environ, OMP_NUM_THREADS="1", SEQLAB_PROGRESS="0")
    result = subprocess.run(
        [sys.executable, str(RUNNER), str(plan), str(out)],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=RUNNER_TIMEOUT,
    )
    assert result.returncode == 0, f"the answer runner failed:\n{result.stdout}\n{result.stderr}"
    answers = {c["grade_id"]: c["graded"] for c in cells if c["kind"] == "answer"}
    return {
        "verdicts": json.loads(out.read_text()),
        "points": graded_points(solution),
        "order": [c["grade_id"] for c in cells if c["kind"] == "test"],
        "tasks": tasks(cells),
        "names": {grade_id: function_name(source) for grade_id, source in answers.items()},
        "exercise": exercise,
    }


def graded_fixture(exercise: str, bugs: dict, variants: dict):
    """A module fixture: every student of ``bugs`` and ``variants``, and the solution, run once per test file."""

    @pytest.fixture(scope="module")
    def graded(tmp_path_factory):
        return run_students(exercise, bugs, variants, tmp_path_factory.mktemp("answers"))

    return graded


def score(run: dict, points: dict) -> float:
    return sum(points[grade_id] for grade_id, failure in run["tests"].items() if failure is None)


def failed(run: dict) -> list:
    return [grade_id for grade_id, failure in run["tests"].items() if failure is not None]


def _report(graded: dict, student: str, **fields) -> None:
    """One line per bug for the issue's table, when SEQLAB_BUGGY_REPORT names a file."""
    path = os.environ.get("SEQLAB_BUGGY_REPORT")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps({"exercise": graded["exercise"], "student": student, **fields}) + "\n")


def answer_tests(bugs: dict, variants: dict) -> tuple:
    """The four tests of a file, over ``graded`` (the fixture of :func:`graded_fixture`)."""

    def test_the_solution_scores_full_marks(graded):
        runs, points = graded["verdicts"][CONTROL], graded["points"]
        for form in ("graded", "visible"):
            assert not failed(runs[form]), f"the solution fails {form} tests: {runs[form]['tests']}"
            assert not runs[form]["cells"], f"a cell of the solution raises ({form}): {runs[form]['cells']}"
        assert score(runs["graded"], points) == sum(points.values())

    @pytest.mark.parametrize("student", bugs)
    def test_a_bug_loses_only_its_own_tasks_points(graded, student):
        bug, points = bugs[student], graded["points"]
        run = graded["verdicts"][student]["graded"]
        own = graded["tasks"][bug.answer]
        assert bug.must_fail, f"{student}: name the tests that must catch the bug"
        assert bug.must_fail <= own, f"{student}: must_fail names tests of another task: {sorted(bug.must_fail - own)}"
        total = sum(points.values())
        assert score(run, points) < total, f"{student} scored full marks: {run['tests']}"
        missed = bug.must_fail - set(failed(run))
        assert not missed, f"{student}: {sorted(missed)} passed; verdicts {run['tests']}"
        elsewhere = set(failed(run)) - own
        assert not elsewhere, f"{student}: a slip in {bug.answer} also costs {sorted(elsewhere)}: {run['tests']}"
        print(f"{student}: {score(run, points):g} / {total:g}, failing {failed(run)}")

    @pytest.mark.parametrize("student", bugs)
    def test_a_bug_fails_a_visible_test_first_in_its_own_task(graded, student):
        bug = bugs[student]
        run = graded["verdicts"][student]["visible"]
        first = next((grade_id for grade_id in graded["order"] if run["tests"][grade_id] is not None), None)
        graded_run = graded["verdicts"][student]["graded"]
        _report(
            graded,
            student,
            answer=bug.answer,
            score=score(graded_run, graded["points"]),
            full=sum(graded["points"].values()),
            caught_visibly=first is not None,
            first_test=first,
            first_message=first and run["tests"][first].splitlines()[0][:300],
        )
        if not bug.visible:
            pytest.skip(f"{student}: no visible test can catch it (the test file says why)")
        assert first is not None, f"{student} passes every visible test: only the hidden tests catch it"
        assert first in graded["tasks"][bug.answer], f"{student}: the first visible failure is {first}, another task's"
        name = graded["names"][bug.answer]
        assert name in run["tests"][first], f"{student}: the first message does not name {name}: {run['tests'][first]}"

    @pytest.mark.parametrize("student", variants)
    def test_a_correct_variant_scores_full_marks(graded, student):
        for form in ("graded", "visible"):
            run = graded["verdicts"][student][form]
            assert not failed(run), f"{student}, a correct answer, fails {form} tests: {run['tests']}"
            assert not run["cells"], f"{student}: a cell raises ({form}): {run['cells']}"

    return (
        test_the_solution_scores_full_marks,
        test_a_bug_loses_only_its_own_tasks_points,
        test_a_bug_fails_a_visible_test_first_in_its_own_task,
        test_a_correct_variant_scores_full_marks,
    )


def grade_end_to_end(course: Path, exercise: str, answers: dict) -> dict:
    """``{student: {test grade id: passed}}`` from one ``nbgrader autograde`` in a new course holding this
    exercise, graded by the course's configuration and sandbox; ``answers`` is ``{student: {answer grade id:
    source}}``, every other answer the solution's."""
    shutil.copy2(ROOT / "nbgrader_config.py", course)
    shutil.copytree(ROOT / "solutions" / exercise, course / "solutions" / exercise)
    nbgrader(course, "generate_assignment", exercise, "--force")
    release = nbformat.read(course / "exercises" / exercise / f"{exercise}.ipynb", as_version=4)
    solution = solution_notebook(exercise)
    for student, sources in answers.items():
        nb = solved(release, solution)
        for grade_id, source in sources.items():
            cell(nb, grade_id).source = source
        folder = course / "submitted" / student / exercise
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / f"{exercise}.ipynb")
    args = ("autograde", exercise, *(("--Sandbox.enabled=False",) if SANDBOX_MISSING else ()))
    # bounds a hang only: nbgrader's start and the gradebook, then each notebook as long as the grader allows it
    result = run_nbgrader(course, *args, timeout=AUTOGRADE_START + NOTEBOOK_SECONDS * len(answers))
    assert result.returncode == 0, f"nbgrader {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}"
    points = graded_points(solution)
    return {
        student: {gid: score == points[gid] for gid, (score, _) in grades.items() if gid in points}
        for student, (_, _, grades) in gradebook_scores(f"sqlite:///{course / 'gradebook.db'}", exercise).items()
    }


def grader_agreement_test(exercise: str, bugs: dict, variants: dict):
    """The first bug and the first variant, graded by one nbgrader autograde: the same verdicts, cell by cell.

    Not the solution: the class cycle (tests/test_class_cycle.py) grades it end to end, every exercise, and
    checks each test cell's points; here test_the_solution_scores_full_marks checks its in-process verdicts."""

    def test_the_grader_gives_the_same_verdicts(graded, tmp_path):
        plan = students(plan_cells(solution_notebook(exercise)), bugs, variants)
        chosen = [*list(bugs)[:1], *list(variants)[:1]]
        assert chosen, "a file with neither a bug nor a variant has nothing for the grader to agree on"
        by_grader = grade_end_to_end(tmp_path, exercise, {student: plan[student] for student in chosen})
        for student in chosen:
            here = {gid: failure is None for gid, failure in graded["verdicts"][student]["graded"]["tests"].items()}
            assert by_grader[student] == here, f"{student}: nbgrader {by_grader[student]}, in process {here}"

    return test_the_grader_gives_the_same_verdicts


def exercise_tests(exercise: str, bugs: dict, variants: dict) -> dict:
    """The module attributes of a buggy-answer file: the fixture ``graded`` and its five tests, by name."""
    tests = [*answer_tests(bugs, variants), grader_agreement_test(exercise, bugs, variants)]
    return {"graded": graded_fixture(exercise, bugs, variants)} | {test.__name__: test for test in tests}
