"""Realistic wrong answers, graded by nbgrader with the hidden tests: the machinery that the files
``tests/test_buggy_<exercise>.py`` share (one file per exercise, so that pytest-xdist spreads them).

Each bug is a small edit of an answer cell of the solution, the kind of mistake a student makes; the
notebook is otherwise solved. Every bug is one student of a temporary course, so one ``nbgrader
autograde`` run grades all of an exercise's bugs, with the solution itself as a control that must score
full marks. Each bug must lose points, and in particular fail the test cells that are there to catch it
(other test cells may fail too). Written answers, graded by the instructor, have no automatic score and
are left out of both sides.

A test file is three lines and its table of bugs::

    BUGS = {"student_name": Bug("answer_grade_id", [(correct code, buggy code)], {"test_that_catches_it"})}
    graded = graded_fixture(EXERCISE, BUGS)
    test_the_solution_scores_full_marks, test_a_buggy_answer_scores_below_full_marks = buggy_answer_tests(BUGS)
"""

import shutil
from dataclasses import dataclass

import nbformat
import pytest
from grading_harness import ROOT, cell, gradebook_scores, graded_points, nbgrader, solved


@dataclass(frozen=True)
class Bug:
    answer: str  # grade id of the answer cell that gets the bug
    edits: list  # (the solution's code, the buggy code) pairs, each found once in that cell
    must_fail: set  # grade ids of the test cells that must catch it


def with_bug(release, solution, bug: Bug):
    """The release, solved from the solution, with ``bug``'s edits in its answer cell."""
    nb = solved(release, solution)
    answer = cell(nb, bug.answer)
    for correct, wrong in bug.edits:
        assert answer.source.count(correct) == 1, f"{bug.answer} no longer holds {correct!r} once: update the bug"
        answer.source = answer.source.replace(correct, wrong)
    return nb


CONTROL = "control"  # the student who hands in the solution


def grade_bugs(course, exercise: str, bugs: dict) -> tuple:
    """Grade the solution and each of ``bugs`` (``{student: Bug}``) in one nbgrader run in ``course``.

    Returns ``({student: (autograded score, {grade_id: auto_score})}, {grade_id: points})`` over the
    autograded test cells only."""
    shutil.copy2(ROOT / "nbgrader_config.py", course)
    shutil.copytree(ROOT / "solutions" / exercise, course / "solutions" / exercise)
    nbgrader(course, "generate_assignment", exercise, "--force")
    release = nbformat.read(course / "exercises" / exercise / f"{exercise}.ipynb", as_version=4)
    solution = nbformat.read(course / "solutions" / exercise / f"{exercise}.ipynb", as_version=4)
    submissions = {CONTROL: solved(release, solution)}
    submissions |= {student: with_bug(release, solution, bug) for student, bug in bugs.items()}
    for student, nb in submissions.items():
        folder = course / "submitted" / student / exercise
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / f"{exercise}.ipynb")
    nbgrader(course, "autograde", exercise)
    points = graded_points(solution)
    scores = {}
    for student, (_, _, grades) in gradebook_scores(f"sqlite:///{course / 'gradebook.db'}", exercise).items():
        auto = {gid: score for gid, (score, _) in grades.items() if gid in points}
        scores[student] = (sum(auto.values()), auto)
    return scores, points


def graded_fixture(exercise: str, bugs: dict):
    """A module fixture: :func:`grade_bugs` for ``exercise``, once per test file."""

    @pytest.fixture(scope="module")
    def graded(tmp_path_factory):
        return grade_bugs(tmp_path_factory.mktemp("buggy"), exercise, bugs)

    return graded


def buggy_answer_tests(bugs: dict) -> tuple:
    """The two tests of a file: the control scores full marks; each bug loses what must catch it."""

    def test_the_solution_scores_full_marks(graded):
        scores, points = graded
        score, grades = scores[CONTROL]
        assert grades == points, f"the solution lost points in the same run: {grades}"

    @pytest.mark.parametrize("student", bugs)
    def test_a_buggy_answer_scores_below_full_marks(graded, student):
        scores, points = graded
        bug = bugs[student]
        assert student in scores, f"{student}'s notebook was not graded"
        score, grades = scores[student]
        assert bug.must_fail <= set(points), f"{student}: must_fail names no test cell: {bug.must_fail - set(points)}"
        assert score < sum(points.values()), f"{student} scored full marks: {grades}"
        caught = {grade_id for grade_id, auto in grades.items() if auto == 0}
        assert bug.must_fail <= caught, f"{student}: {sorted(bug.must_fail - caught)} passed; grades {grades}"
        print(f"{student}: {score:g} / {sum(points.values()):g}, failing {sorted(caught)}")

    return test_the_solution_scores_full_marks, test_a_buggy_answer_scores_below_full_marks
