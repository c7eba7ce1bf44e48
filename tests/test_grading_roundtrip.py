"""Grading round trips: nbgrader's own commands on a temporary course with a real sqlite gradebook.

One module fixture builds the course (solutions/ and nbgrader_config.py copied into tmp), releases
exercise 1, writes one submission per scenario, autogrades them and reads the scores back from the
gradebook. Every test then checks one scenario. Nothing is written in the repository, so this file
runs in parallel with the rest of the suite (pytest -n 2 --dist loadfile: the file stays on one worker
and the course is built once).
"""

import csv
import shutil
from pathlib import Path

import nbformat
import pytest
from grading_harness import cell, nbgrader, solved

ROOT = Path(__file__).resolve().parents[1]
ASSIGNMENT = NOTEBOOK = "ex01_lstm_cell"
STEP_TESTS = ["test_step_shapes", "test_step_matches_torch", "test_step_gradients"]
SEQUENCE_TESTS = ["test_sequence_shapes", "test_sequence_matches_torch"]
LOOP_TIMEOUT = 5  # seconds per cell for the infinite-loop submission (the course's default is 60)

# Keep the tests of this file together if someone runs xdist with --dist loadgroup.
pytestmark = pytest.mark.xdist_group("grading-roundtrip")

BROKEN_SEQUENCE = """
def lstm_over_sequence(x, weight_ih, weight_hh, bias_ih, bias_hh, state=None):
    return torch.zeros(1), (torch.zeros(1), torch.zeros(1))  # wrong shapes: every sequence test fails
"""


def submit(course: Path, student: str, nb) -> None:
    folder = course / "submitted" / student / ASSIGNMENT
    folder.mkdir(parents=True)
    nbformat.write(nb, folder / f"{NOTEBOOK}.ipynb")


def scores(course: Path, student: str):
    """(total score, max score, {grade_id: (auto_score, max_score)}) as the gradebook has them."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", course_id="seqlab") as gb:
        submission = gb.find_submission(ASSIGNMENT, student)
        grades = gb.find_submission_notebook(NOTEBOOK, ASSIGNMENT, student).grades
        return submission.score, submission.max_score, {g.name: (g.auto_score, g.max_score) for g in grades}


def autograded(course: Path, student: str):
    return nbformat.read(course / "autograded" / student / ASSIGNMENT / f"{NOTEBOOK}.ipynb", as_version=4)


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """A graded course: {"root": Path, "times": {step: seconds}}."""
    root = tmp_path_factory.mktemp("course")
    shutil.copy(ROOT / "nbgrader_config.py", root)
    shutil.copytree(ROOT / "solutions", root / "solutions", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    times = {"generate_assignment": nbgrader(root, "generate_assignment", ASSIGNMENT, "--force")}

    students = ["full", "blank", "edited", "deleted", "loop"]
    with open(root / "students.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "first_name", "last_name"])
        writer.writerows([s, s.title(), "Student"] for s in students)
    times["db student import"] = nbgrader(root, "db", "student", "import", "students.csv")

    release = nbformat.read(root / "exercises" / ASSIGNMENT / f"{NOTEBOOK}.ipynb", as_version=4)
    solution = nbformat.read(root / "solutions" / ASSIGNMENT / f"{NOTEBOOK}.ipynb", as_version=4)
    submit(root, "full", solved(release, solution))
    submit(root, "blank", release)

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
    times["autograde (4 submissions)"] = nbgrader(root, "autograde", ASSIGNMENT)

    # Graded on its own, with a short cell timeout, after the others (which are then not regraded).
    looping = solved(release, solution)
    cell(looping, "lstm_over_sequence").source = "while True:\n    pass"
    submit(root, "loop", looping)
    times["autograde (infinite loop)"] = nbgrader(
        root, "autograde", ASSIGNMENT, "--student=loop", f"--Execute.timeout={LOOP_TIMEOUT}"
    )
    return {"root": root, "times": times}


def test_solution_scores_full_marks(course):
    total, maximum, grades = scores(course["root"], "full")
    assert maximum == 10
    assert total == 10, grades
    assert all(auto == max_score for auto, max_score in grades.values()), grades


def test_untouched_release_scores_zero(course):
    total, maximum, grades = scores(course["root"], "blank")
    assert (total, maximum) == (0, 10), grades
    assert set(grades) == set(STEP_TESTS + SEQUENCE_TESTS)
    assert all(auto == 0 for auto, _ in grades.values()), grades
    errors = [o.ename for o in cell(autograded(course["root"], "blank"), "test_step_shapes").outputs if "ename" in o]
    assert errors == ["NotImplementedError"]


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
