"""The instructor's cycle for a class, with nbgrader's own commands and this repository's configuration,
in a temporary copy of the course: `make release`, students imported, submissions collected into
submitted/<student>/<exercise>/, autograde, generate_feedback, export to CSV; then release and autograde
run again, which must neither delete a submission nor change a grade.

Each student's expected score is derived from the solution notebook's points, never from an earlier run.
With ``total`` the exercise's points and ``late`` the points of the test cells below its last answer
cell (what breaking that answer costs):

| student   | hands in                                                          | expected     |
|-----------|-------------------------------------------------------------------|--------------|
| perfect   | every exercise: the solution                                      | total        |
| always_eq | every exercise: each answer returns an object whose ``__eq__`` is | 0            |
|           | always True (every test must see through it)                      |              |
| untouched | one exercise: the release as it was given out                     | 0            |
| loop      | the first exercise: an infinite loop before the last answer's     | total - late |
|           | code (graded with a short Execute.timeout)                        |              |
| crash     | one exercise: the solution, the last answer ending in os._exit(1) | total - late |
| deleted   | one exercise: every test cell deleted, the last answer not done   | total - late |
| edited    | one exercise: every test cell made ``pass`` and worth 100 points, | total - late |
|           | the last answer not done                                          | out of total |
| stderr    | one exercise: the solution, each answer cell printing to stderr   | total        |
|           | and warning                                                       |              |
| syntax    | one exercise: the solution, a syntax error in the last answer     | total - late |

The one-exercise students take the exercises in turn: what they test is nbgrader's mechanics, the same
for every exercise (and test_grading_roundtrip.py grades every exercise's untouched release), and this
keeps the class small enough to grade in CI. For what they did not hand in, the CSV must still list
them, with 0. The crash case relies on nbgrader_config.py's executor (seqlab.nbgrader_plugins): stock
nbgrader drops a submission whose kernel dies (no grade, no feedback, and autograde exits 1).
"""

import ast
import csv
import hashlib
import shutil
import subprocess
import time

import nbformat
import pytest
from grading_harness import (
    BIN,
    ROOT,
    answer_ids,
    cell,
    exercise_names,
    gradebook_scores,
    graded_points,
    nbgrader,
    nbgrader_meta,
    points_below,
    solved,
)

pytestmark = pytest.mark.xdist_group("class-cycle")

EXERCISES = exercise_names(ROOT / "solutions")
EVERY_EXERCISE = ["perfect", "always_eq"]
ONE_EXERCISE = ["untouched", "crash", "deleted", "edited", "stderr", "syntax"]  # in turn over the exercises
STUDENTS = EVERY_EXERCISE + ["loop"] + ONE_EXERCISE
HANDS_IN = {s: EXERCISES for s in EVERY_EXERCISE} | {"loop": EXERCISES[:1]}
HANDS_IN |= {s: [EXERCISES[i % len(EXERCISES)]] for i, s in enumerate(ONE_EXERCISE)} if EXERCISES else {}
# Seconds per cell for the infinite loop's notebook (the course's c.Execute.timeout is 60). Every cell of that
# notebook gets it, the setup cell's `import torch` too, which takes seconds on a busy machine: interrupted
# there, the kernel may not settle within nbclient's 4 s, and nbgrader then drops the whole submission.
LOOP_TIMEOUT = 20

ALWAYS_EQUAL = '''
class AlwaysEqual:
    """Equal to anything: a test that only compares with == would pass it."""

    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = object.__hash__
'''
STDERR = 'import sys\nimport warnings\n\nprint("my own debugging", file=sys.stderr)\nwarnings.warn("my own warning")\n'


def cheating(source: str) -> str:
    """An answer cell whose functions, and classes' forward/__call__, all return an AlwaysEqual."""
    lines = [ALWAYS_EQUAL]
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef):
            lines.append(f"def {node.name}(*args, **kwargs):\n    return AlwaysEqual()\n")
        elif isinstance(node, ast.ClassDef):
            lines.append(f"{ast.get_source_segment(source, node)}\n")
            lines.append(f"{node.name}.forward = {node.name}.__call__ = lambda self, *a, **k: AlwaysEqual()\n")
    assert len(lines) > 1, f"no function or class to cheat with in:\n{source}"
    return "\n".join(lines)


class Exercise:
    """One exercise of the temporary course: its release, its solution, and the points at stake."""

    def __init__(self, course, name: str):
        self.name = name
        self.release = nbformat.read(course / "exercises" / name / f"{name}.ipynb", as_version=4)
        self.solution = nbformat.read(course / "solutions" / name / f"{name}.ipynb", as_version=4)
        self.answers = answer_ids(self.solution)
        self.last = self.answers[-1]
        self.total = sum(graded_points(self.solution).values())
        self.late = sum(points_below(self.solution, self.last).values())
        assert self.total > 0 and self.late > 0, f"{name}: no test below its last answer cell {self.last}"

    def solved(self):
        return solved(self.release, self.solution)

    def last_unanswered(self):
        nb = self.solved()
        cell(nb, self.last).source = cell(self.release, self.last).source
        return nb

    def submission(self, student: str):
        """(notebook, expected score) of ``student``: the table in the module docstring."""
        early = self.total - self.late
        nb = self.solved()
        last = cell(nb, self.last)
        if student == "perfect":
            return nb, self.total
        if student == "untouched":
            return nbformat.from_dict(self.release), 0
        if student == "crash":
            last.source += "\n\nimport os\n\nos._exit(1)\n"
            return nb, early
        if student == "loop":
            last.source = "while True:\n    pass\n\n" + last.source
            return nb, early
        if student == "deleted":
            nb = self.last_unanswered()
            nb.cells = [
                c for c in nb.cells if not (nbgrader_meta(c).get("grade") and not nbgrader_meta(c).get("solution"))
            ]
            return nb, early
        if student == "edited":
            nb = self.last_unanswered()
            for grade_id in graded_points(nb):
                cell(nb, grade_id).source = "pass  # my tests"
                cell(nb, grade_id).metadata.nbgrader.points = 100
            return nb, early
        if student == "always_eq":
            for grade_id in self.answers:
                cell(nb, grade_id).source = cheating(cell(nb, grade_id).source)
            return nb, 0
        if student == "stderr":
            for grade_id in self.answers:
                cell(nb, grade_id).source = STDERR + cell(nb, grade_id).source
            return nb, self.total
        if student == "syntax":
            last.source += "\n\ndef broken(:\n    pass\n"
            return nb, early
        raise ValueError(student)


def digest(folder):
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*.ipynb"))
    }


def make_release(course) -> float:
    """The Makefile's own `make release`, run in the temporary course with the course environment
    (``-o env``: the environment exists, do not rebuild it there)."""
    start = time.perf_counter()
    result = subprocess.run(
        ["make", "-o", "env", "release", f"BIN={BIN}"], cwd=course, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, f"make release failed:\n{result.stdout}\n{result.stderr}"
    return time.perf_counter() - start


def exported(course, name: str) -> dict:
    nbgrader(course, "export", f"--to={name}")
    with open(course / name, newline="") as f:
        return {
            (row["assignment"], row["student_id"]): (float(row["score"]), float(row["max_score"]))
            for row in csv.DictReader(f)
        }


@pytest.fixture(scope="module")
def cycle(tmp_path_factory):
    course = tmp_path_factory.mktemp("class")
    for name in ["nbgrader_config.py", "Makefile"]:
        shutil.copy2(ROOT / name, course / name)
    shutil.copytree(ROOT / "solutions", course / "solutions", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    times = {"make release": make_release(course)}
    exercises = {name: Exercise(course, name) for name in EXERCISES}

    with open(course / "students.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "first_name", "last_name"])
        writer.writerows([s, s.title(), "Student"] for s in STUDENTS)
    nbgrader(course, "db", "student", "import", "students.csv")

    # Collected submissions: submitted/<student>/<exercise>/<exercise>.ipynb.
    expected = {}  # {(exercise, student): points}, for the submissions handed in
    for student, names in HANDS_IN.items():
        for ex in (exercises[name] for name in names):
            nb, expected[ex.name, student] = ex.submission(student)
            folder = course / "submitted" / student / ex.name
            folder.mkdir(parents=True)
            nbformat.write(nb, folder / f"{ex.name}.ipynb")

    # One student's full set first (timed), then the infinite loop with a short cell timeout, then the
    # rest of the class: autograde skips the submissions that are graded already.
    times["autograde one student"] = sum(nbgrader(course, "autograde", ex, "--student=perfect") for ex in exercises)
    times["autograde the loop"] = nbgrader(
        course, "autograde", EXERCISES[0], "--student=loop", f"--Execute.timeout={LOOP_TIMEOUT}"
    )
    times["autograde the rest"] = sum(nbgrader(course, "autograde", ex) for ex in exercises)
    times["generate_feedback"] = sum(nbgrader(course, "generate_feedback", ex) for ex in exercises)
    grades = exported(course, "grades.csv")
    db_url = f"sqlite:///{course / 'gradebook.db'}"
    first = {
        "submitted": digest(course / "submitted"),
        "scores": {ex: gradebook_scores(db_url, ex) for ex in exercises},
        "autograded": digest(course / "autograded"),
        "csv": grades,
    }

    # Again: release and autograde must keep every submission and every grade.
    make_release(course)
    for ex in exercises:
        nbgrader(course, "autograde", ex)
    again = {
        "submitted": digest(course / "submitted"),
        "scores": {ex: gradebook_scores(db_url, ex) for ex in exercises},
        "autograded": digest(course / "autograded"),
        "csv": exported(course, "grades-again.csv"),
    }
    print(
        f"\nclass cycle ({len(STUDENTS)} students, {len(expected)} submissions, {len(exercises)} exercises), seconds:"
    )
    for step, seconds in times.items():
        print(f"  {step:<24} {seconds:6.1f}")
    print(f"  {'class (all autograding)':<24} {sum(v for k, v in times.items() if k.startswith('autograde')):6.1f}")
    return {"course": course, "exercises": exercises, "expected": expected, "first": first, "again": again}


def test_the_class_has_exercises():
    assert EXERCISES, "no exercise in solutions/"


@pytest.mark.parametrize("student", STUDENTS)
def test_every_student_gets_the_right_score(cycle, student):
    for name in HANDS_IN[student]:
        ex = cycle["exercises"][name]
        score, max_score, grades = cycle["first"]["scores"][name][student]
        assert max_score == ex.total, f"{student}, {name}: out of {max_score}, not {ex.total}"
        assert score == cycle["expected"][name, student], f"{student}, {name}: {score}, grades {grades}"


def test_the_csv_holds_every_student(cycle):
    rows = cycle["first"]["csv"]
    assert {student for _, student in rows} == set(STUDENTS)
    for name, ex in cycle["exercises"].items():
        for student in STUDENTS:
            expected = cycle["expected"].get((name, student), 0)  # 0 for what was not handed in
            assert rows[name, student] == (expected, ex.total), (name, student)


def test_no_run_aborts_the_batch(cycle):
    """Every submission was graded (nbgrader removes a submission it failed on) and has feedback."""
    for name, student in cycle["expected"]:
        assert (cycle["course"] / "autograded" / student / name / f"{name}.ipynb").is_file(), (student, name)
        assert (cycle["course"] / "feedback" / student / name / f"{name}.html").is_file(), (student, name)


def autograded(cycle, student):
    """(exercise, autograded notebook) of a student who handed in one exercise."""
    (name,) = HANDS_IN[student]
    path = cycle["course"] / "autograded" / student / name / f"{name}.ipynb"
    return cycle["exercises"][name], nbformat.read(path, as_version=4)


def test_crash_and_loop_are_recorded_where_they_happened(cycle):
    for student, error in [("crash", "DeadKernelError"), ("loop", "CellTimeoutError")]:
        ex, nb = autograded(cycle, student)
        errors = [o.ename for o in cell(nb, ex.last).outputs if o.output_type == "error"]
        assert error in errors, (student, errors)


def test_deleted_and_edited_test_cells_are_restored(cycle):
    for student in ["deleted", "edited"]:
        ex, nb = autograded(cycle, student)
        for grade_id, points in graded_points(ex.solution).items():
            # nbgrader puts a deleted cell back with a first line that says so
            assert cell(nb, grade_id).source.endswith(cell(ex.solution, grade_id).source), (student, grade_id)
            assert cell(nb, grade_id).metadata.nbgrader.points == points, (student, grade_id)


def test_release_and_autograde_again_keep_submissions_and_grades(cycle):
    first, again = cycle["first"], cycle["again"]
    assert again["submitted"] == first["submitted"], "a submission was changed or deleted"
    assert len(first["submitted"]) == len(cycle["expected"])
    assert again["autograded"] == first["autograded"], "an autograded notebook was changed or deleted"
    assert again["scores"] == first["scores"], "a grade changed"
    assert again["csv"] == first["csv"]


def test_the_course_configuration_keeps_nbgraders_default_preprocessors():
    """nbgrader_config.py lists nbgrader's autograde preprocessors with one swap; a newer nbgrader that
    changes its defaults must show up here, not as a silently different autograder."""
    from nbgrader.converters import Autograde
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()
    ours = list(config.Autograde.autograde_preprocessors)
    default = Autograde.class_traits()["autograde_preprocessors"].default()
    names = [f"{p.__module__.split('.')[0]}.preprocessors.{p.__name__}" for p in default]
    assert ours == [
        "seqlab.grading.nbgrader_plugins.ExecuteSurvivingKernelDeath" if n == "nbgrader.preprocessors.Execute" else n
        for n in names
    ]
