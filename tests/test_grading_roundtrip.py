"""Grading round trips: nbgrader's own commands on a temporary course with a real sqlite gradebook.

One module fixture builds the course (solutions/ and nbgrader_config.py copied into tmp), releases
every exercise, writes one submission per scenario, autogrades them and reads the scores back from the
gradebook. Every test then checks one scenario. Every exercise's solution must score full marks and its
untouched release 0; the other scenarios (an infinite loop, edited and deleted test cells) use exercise 1.
Nothing is written in the repository, so this file runs in parallel with the rest of the suite
(pytest -n 2 --dist loadfile: the file stays on one worker and the course is built once).
"""

import csv
import shutil
from pathlib import Path

import nbformat
import pytest
from grading_harness import cell, nbgrader, solved

ROOT = Path(__file__).resolve().parents[1]
# Every assignment of solutions/ (solutions/<name>/<name>.ipynb); each has one notebook named like it.
EXERCISES = sorted(p.parent.name for p in (ROOT / "solutions").glob("*/*.ipynb") if p.stem == p.parent.name)
ASSIGNMENT = NOTEBOOK = "ex01_lstm_cell"  # the exercise of the other scenarios
STEP_TESTS = ["test_step_shapes", "test_step_matches_torch", "test_step_gradients"]
SEQUENCE_TESTS = ["test_sequence_shapes", "test_sequence_matches_torch"]
# Seconds per cell for the infinite-loop submission (the course's default is 60). Every cell gets it, the
# setup cell's `import torch` too, which took over 5 s on a busy 2-core machine: interrupted there, the
# kernel may not settle and nbgrader drops the whole submission. 20 s is safe and still short.
LOOP_TIMEOUT = 20

# Keep the tests of this file together if someone runs xdist with --dist loadgroup.
pytestmark = pytest.mark.xdist_group("grading-roundtrip")

BROKEN_SEQUENCE = """
def lstm_over_sequence(x, weight_ih, weight_hh, bias_ih, bias_hh, state=None):
    return torch.zeros(1), (torch.zeros(1), torch.zeros(1))  # wrong shapes: every sequence test fails
"""


def submit(course: Path, student: str, nb, assignment: str = ASSIGNMENT) -> None:
    folder = course / "submitted" / student / assignment
    folder.mkdir(parents=True)
    nbformat.write(nb, folder / f"{assignment}.ipynb")


def scores(course: Path, student: str, assignment: str = ASSIGNMENT):
    """(total score, max score, {grade_id: (auto_score, max_score)}) as the gradebook has them."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", course_id="seqlab") as gb:
        submission = gb.find_submission(assignment, student)
        grades = gb.find_submission_notebook(assignment, assignment, student).grades
        return submission.score, submission.max_score, {g.name: (g.auto_score, g.max_score) for g in grades}


def autograded(course: Path, student: str, assignment: str = ASSIGNMENT):
    return nbformat.read(course / "autograded" / student / assignment / f"{assignment}.ipynb", as_version=4)


def points_of(assignment: str) -> dict:
    """``{grade_id: points}`` of the solution notebook's test cells, in notebook order."""
    nb = nbformat.read(ROOT / "solutions" / assignment / f"{assignment}.ipynb", as_version=4)
    meta = [c.metadata.get("nbgrader", {}) for c in nb.cells]
    return {m["grade_id"]: m["points"] for m in meta if m.get("grade")}


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """A graded course: {"root": Path, "times": {step: seconds}}."""
    root = tmp_path_factory.mktemp("course")
    shutil.copy(ROOT / "nbgrader_config.py", root)
    shutil.copytree(ROOT / "solutions", root / "solutions", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    times = {
        f"generate_assignment {name}": nbgrader(root, "generate_assignment", name, "--force") for name in EXERCISES
    }

    students = ["full", "blank", "edited", "deleted", "loop"]
    with open(root / "students.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "first_name", "last_name"])
        writer.writerows([s, s.title(), "Student"] for s in students)
    times["db student import"] = nbgrader(root, "db", "student", "import", "students.csv")

    for name in EXERCISES:
        release = nbformat.read(root / "exercises" / name / f"{name}.ipynb", as_version=4)
        solution = nbformat.read(root / "solutions" / name / f"{name}.ipynb", as_version=4)
        submit(root, "full", solved(release, solution), name)
        submit(root, "blank", release, name)

    release = nbformat.read(root / "exercises" / ASSIGNMENT / f"{NOTEBOOK}.ipynb", as_version=4)
    solution = nbformat.read(root / "solutions" / ASSIGNMENT / f"{NOTEBOOK}.ipynb", as_version=4)

    edited = solved(release, solution)
    cell(edited, "lstm_over_sequence").source = BROKEN_SEQUENCE
    cell(edited, "test_sequence_shapes").source = "pass"
    cheat = cell(edited, "test_sequence_matches_torch")
    cheat.source, cheat.metadata.nbgrader.points = 'print("ok")', 100
    submit(root, "edited", edited)

    deleted = solved(release, solution)
    cell(deleted, "lstm_over_sequence").source = BROKEN_SEQUENCE
    gone = {"test_step_matches_torch", "test_sequence_matches_torch"}
    deleted.cells = [c for c in deleted.cells if c.metadata.get("nbgrader", {}).get("grade_id") not in gone]
    submit(root, "deleted", deleted)
    for name in EXERCISES:  # ex01: full, blank, edited and deleted; the others: full and blank
        times[f"autograde {name}"] = nbgrader(root, "autograde", name)

    # Graded on its own, with a short cell timeout, after the others (which are then not regraded).
    looping = solved(release, solution)
    cell(looping, "lstm_over_sequence").source = "while True:\n    pass"
    submit(root, "loop", looping)
    times["autograde (infinite loop)"] = nbgrader(
        root, "autograde", ASSIGNMENT, "--student=loop", f"--Execute.timeout={LOOP_TIMEOUT}"
    )
    return {"root": root, "times": times}


def test_every_exercise_is_graded():
    assert {ASSIGNMENT, "ex02_bidirectional_encoder", "ex03_seq2seq"} <= set(EXERCISES), EXERCISES
    assert points_of(ASSIGNMENT) == dict.fromkeys(STEP_TESTS + SEQUENCE_TESTS, 2)


@pytest.mark.parametrize("assignment", EXERCISES)
def test_solution_scores_full_marks(course, assignment):
    points = points_of(assignment)
    total, maximum, grades = scores(course["root"], "full", assignment)
    assert set(grades) == set(points), grades
    assert maximum == sum(points.values())
    assert total == maximum, grades
    assert all(auto == max_score for auto, max_score in grades.values()), grades


@pytest.mark.parametrize("assignment", EXERCISES)
def test_untouched_release_scores_zero(course, assignment):
    points = points_of(assignment)
    total, maximum, grades = scores(course["root"], "blank", assignment)
    assert (total, maximum) == (0, sum(points.values())), grades
    assert set(grades) == set(points)
    assert all(auto == 0 for auto, _ in grades.values()), grades
    # the first test fails on the stub that the student replaces, not on something else
    first = cell(autograded(course["root"], "blank", assignment), next(iter(points)))
    assert [o.ename for o in first.outputs if "ename" in o] == ["NotImplementedError"]


def test_infinite_loop_times_out_and_the_rest_is_graded(course):
    total, _, grades = scores(course["root"], "loop")
    assert {name: grades[name][0] for name in STEP_TESTS} == dict.fromkeys(STEP_TESTS, 2), grades
    assert {name: grades[name][0] for name in SEQUENCE_TESTS} == dict.fromkeys(SEQUENCE_TESTS, 0), grades
    assert total == 6
    nb = autograded(course["root"], "loop")
    errors = [o.ename for o in cell(nb, "lstm_over_sequence").outputs if o.output_type == "error"]
    assert "CellTimeoutError" in errors, errors  # after the KeyboardInterrupt that stopped the loop
    # the kernel was interrupted, not lost: the cells after the loop ran (and failed on the missing function)
    later = [o.ename for o in cell(nb, "test_sequence_shapes").outputs if o.output_type == "error"]
    assert later == ["NameError"]
    # one cell timeout, plus the usual start-up and grading of the rest
    assert course["times"]["autograde (infinite loop)"] < LOOP_TIMEOUT + 45


def test_edited_test_cells_are_restored(course):
    total, maximum, grades = scores(course["root"], "edited")
    assert maximum == 10
    assert grades["test_sequence_matches_torch"] == (0, 2), "the points edited to 100 must be reset to 2"
    assert grades["test_sequence_shapes"] == (0, 2), "the test replaced by `pass` must run again, and fail"
    assert total == 6, grades
    nb = autograded(course["root"], "edited")
    original = nbformat.read(course["root"] / "solutions" / ASSIGNMENT / f"{NOTEBOOK}.ipynb", as_version=4)
    for name in SEQUENCE_TESTS:
        # the original test, hidden tests included, is what ran
        assert cell(nb, name).source == cell(original, name).source
        assert "### BEGIN HIDDEN TESTS" in cell(nb, name).source


def test_deleted_test_cells_come_back(course):
    total, maximum, grades = scores(course["root"], "deleted")
    assert maximum == 10
    assert grades["test_step_matches_torch"] == (2, 2), "a deleted test of a correct answer comes back and passes"
    assert grades["test_sequence_matches_torch"] == (0, 2), "a deleted test of a wrong answer comes back and fails"
    assert total == 6, grades
    nb = autograded(course["root"], "deleted")
    for name in ["test_step_matches_torch", "test_sequence_matches_torch"]:
        assert "was missing from the submission" in cell(nb, name).source
        assert cell(nb, name).outputs, f"{name} was added back but not run"
