"""The instructor's cycle for a class, with nbgrader's own commands, `seqlab grade-class` and this
repository's configuration, in a temporary copy of the course whose gradebook is on a PostgreSQL server
started here (tests/postgres_server.py): `make release`, students imported, submissions collected into
submitted/<student>/<exercise>/, the class graded by `seqlab grade-class --jobs 2` (each submission by
nbgrader's autograde, two at a time), generate_feedback, export to CSV; then release, grade-class and
autograde run again, which must neither delete a submission nor change a grade, and grade-class grades
nothing. Then the class changes: a submission handed in again is graded again alone, an unreadable one is
reported with nbgrader's reason, one student is regraded on their own, and a run interrupted by Ctrl-C
leaves no kernel and nothing half graded. Without PostgreSQL, the gradebook is sqlite and grade-class
has one worker. Every command runs here once for the whole class (this file was merged with the former
test_grading_roundtrip.py, which graded the same kinds of submission in a course of its own).

Each student's expected grades are derived from the solution notebook's points, never from an earlier
run: every test cell either passes (its points) or fails (0), and the gradebook must have each test
cell out of the solution's points. With ``total`` the exercise's points and ``late`` the test cells
below its last answer cell (what breaking that answer costs):

| student   | hands in                                                          | passes        |
|-----------|-------------------------------------------------------------------|---------------|
| perfect   | every exercise: the solution                                      | every test    |
| untouched | the 1st and 3rd exercises: the release as it was given out        | none          |
| always_eq | the 2nd exercise: each answer returns an object whose             | none          |
|           | ``__eq__`` is always True (every test must see through it)        |               |
| loop      | the first exercise: an infinite loop (of sleeps) before the last  | all but late  |
|           | answer's code, which the course's cell timeout interrupts         |               |
| crash     | one exercise: the solution, the last answer ending in os._exit(1) | all but late  |
| deleted   | one exercise: every test cell deleted, the last answer not done   | all but late  |
| edited    | one exercise: every test cell made ``pass`` and worth 100 points, | all but late, |
|           | the last answer not done                                          | out of total  |
| stderr    | one exercise: the solution, each answer cell printing to stderr   | every test    |
|           | and warning                                                       |               |
| syntax    | one exercise: the solution, a syntax error in the last answer     | all but late  |

What the grader does with the untouched release and always_eq is the same for every exercise (a stub's
error comes back from the student's kernel, an object equal to anything cannot: every answer is a
function); that each exercise's own tests fail both is checked for every exercise, in-process, with
tests/answer_runner.py (what nbgrader decides per test cell, without a sandbox and two kernels per
student, as tests/test_buggy_*.py run their answers). Every exercise is graded end to end with its
solution and with at least one wrong or damaged hand-in of these tables.

Students who attack the grading or lose work by accident (``grading_harness.KINDS``, shared with the
grade command's tests), each with one exercise, in turn after the ones above:

| student        | hands in                                                                 | passes     |
|----------------|--------------------------------------------------------------------------|------------|
| reads_solution | every answer runs the instructor's solution, read from solutions/        | none       |
| vandal         | the release, its first answer writing into the course, the gradebook,    | none       |
|                | another submission, the package; and a process left behind to go on      |            |
| big_line       | the solution, the first answer printing one 50 MB line                   | every test |
| copied_test    | the solution, a test cell copied below itself (one grade id twice)       | every test |
| answer_moved   | the solution, the last answer and the test below it deleted, the answer's| every test |
|                | code in a cell of its own                                                |            |
| graded_off     | the solution, every test's "graded" flag switched off                    | every test |
| sidebar        | the solution, a test's grade id deleted, a test made markdown, one worth | every test |
|                | 50 points, the first answer made a read-only cell                        |            |
| exits_in_call  | the solution, its last answer's function ending the kernel (os._exit)    | all but    |
|                | when a test calls it (a new kernel for each such test)                   | late       |
| transformer    | the first exercise: the release, its first answer installing an IPython  | none       |
|                | input transformer that makes every test cell `pass`                      |            |
| no_checks      | the first exercise: noise of the right shapes for answers, and           | none       |
|                | ``assert_close`` and ``check_tensor`` made no-ops                        |            |

The last kind, ``swallows`` (the solution and, after the first answer, a loop that swallows the timeout's
interrupt), is graded by `seqlab grade --timeout` in tests/test_grade_command.py, with its score and its
note, and not here; that file grades three kinds of this table too (vandal, big_line, sidebar), for what
only that command does with them, and no other.
Stock nbgrader drops the four damaged notebooks and the swallowed interrupt (no grade, and autograde
exits with an error); nbgrader_config.py's preprocessors repair them (seqlab.grading.repair) and replace
the kernel. Stock nbgrader gives the first two attacks and the last two full marks. Here an attack
scores no more than the untouched release: the kernels run in bubblewrap (seqlab.grading.sandbox), so
the course files, the gradebook and the other submissions are byte-identical after grading, and no
process a submission started is alive; the test cells run in a verdict kernel that never runs the
student's code (seqlab.grading.verdict). (Handing an answer to torch's or seqlab's own version is not an attack
here: each task asks for a variant they do not contain, and tests/test_buggy_*.py grade such answers.)
Where bubblewrap cannot run, the class is graded without it, the two attacks on
the course are left out and the sandbox's tests are skipped.

The one-exercise students take the exercises in turn, from the second (the first has the loop): what
they test is nbgrader's mechanics, the same for every exercise, and this keeps the class small enough to
grade in CI. For what they did not hand in, the CSV must still list them, with 0. The crash case relies
on nbgrader_config.py's executor (seqlab.grading.nbgrader_plugins): stock nbgrader drops a submission
whose kernel dies (no grade, no feedback, and autograde exits 1). Step timings are printed, never
asserted. Nothing is written in the repository; the file's tests share one module fixture, so under
``pytest -n 2 --dist loadfile`` they stay on one worker and the class is graded once.
"""

import ast
import csv
import hashlib
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import nbformat
import pytest
from buggy_answers import RUNNER, plan_cells
from grading_harness import (
    BIN,
    KINDS,
    ON_THE_COURSE,
    ON_THE_VERDICT,
    PLANTED,
    ROOT,
    SANDBOX_MISSING,
    answer_ids,
    attack,
    autograded_score,
    cell,
    exercise_names,
    gradebook_scores,
    graded_points,
    nbgrader,
    nbgrader_meta,
    points_below,
    processes_with,
    run_nbgrader,
    solved,
    written_left_as_stub,
    written_points,
)
from postgres_server import postgres_server, query
from postgres_server import unavailable as postgres_unavailable

pytestmark = pytest.mark.xdist_group("class-cycle")

EXERCISES = exercise_names(ROOT / "solutions")
EVERY_EXERCISE = ["perfect"]
# the first untouched release is graded unsandboxed, the other one in the sandbox; every exercise, in-process
WRONG_EVERYWHERE = {"untouched": EXERCISES[0:3:2], "always_eq": EXERCISES[1:2]}
LOST_WORK = ["big_line", "copied_test", "answer_moved", "graded_off", "sidebar", "exits_in_call"]
ATTACKS = [] if SANDBOX_MISSING else sorted(ON_THE_COURSE)  # never run unsandboxed
# in turn over the exercises, from the second
ONE_EXERCISE = ["crash", "deleted", "edited", "stderr", "syntax"] + LOST_WORK + ATTACKS
# The first exercise, graded with the rest of the class: the course's own cell timeout (c.Execute.timeout, 60 s)
# interrupts the loop. (A shorter one for this notebook would apply to its every cell, the setup cell's
# `import torch` too, which a busy machine can make slow.) The loop sleeps: a worker waits, no core spins.
LOOPS = ["loop"]
VERDICT_ATTACKS = sorted(ON_THE_VERDICT)  # on the first exercise (written for its answers)
STUDENTS = EVERY_EXERCISE + list(WRONG_EVERYWHERE) + LOOPS + VERDICT_ATTACKS + ONE_EXERCISE
HANDS_IN = (
    {s: EXERCISES for s in EVERY_EXERCISE} | WRONG_EVERYWHERE | {s: EXERCISES[:1] for s in LOOPS + VERDICT_ATTACKS}
)
HANDS_IN |= {s: [EXERCISES[i % len(EXERCISES)]] for i, s in enumerate(ONE_EXERCISE, start=1)} if EXERCISES else {}
ENV = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")  # nbgrader runs `alembic`

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
        self.points = graded_points(self.solution)  # {grade_id: points} of the test cells
        self.written = written_points(self.solution)  # {grade_id: points} of the written answers
        self.below = points_below(self.solution, self.last)  # the test cells below the last answer
        self.total = sum(self.points.values()) + sum(self.written.values())
        self.late = sum(self.below.values())
        assert self.total > 0 and self.late > 0, f"{name}: no test below its last answer cell {self.last}"

    def passing(self, failing=()) -> dict:
        """``{grade_id: auto score}`` when the test cells ``failing`` fail and every other one passes."""
        return {grade_id: 0.0 if grade_id in failing else points for grade_id, points in self.points.items()}

    def solved(self):
        return solved(self.release, self.solution)

    def written_scores(self, nb) -> dict:
        """``{grade_id: auto score}`` of the written answers in ``nb``: None (for the instructor to grade)
        once answered, 0 where the answer is still the release's stub."""
        stubs = written_left_as_stub(nb, self.release)
        return {gid: 0.0 if gid in stubs else None for gid in self.written}

    def last_unanswered(self):
        nb = self.solved()
        cell(nb, self.last).source = cell(self.release, self.last).source
        return nb

    def submission(self, student: str):
        """(notebook, ``{grade_id: expected auto score}``) of ``student``: the table in the module docstring."""
        everything, nothing, early = self.passing(), self.passing(self.points), self.passing(self.below)
        nb = self.solved()
        last = cell(nb, self.last)
        if student == "perfect":
            return nb, everything
        if student == "untouched":
            return nbformat.from_dict(self.release), nothing
        if student == "crash":
            last.source += "\n\nimport os\n\nos._exit(1)\n"
            return nb, early
        if student == "loop":
            last.source = (
                "import time\n\nwhile True:  # waits for what never comes\n    time.sleep(1)\n\n" + last.source
            )
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
            return nb, nothing
        if student == "stderr":
            for grade_id in self.answers:
                cell(nb, grade_id).source = STDERR + cell(nb, grade_id).source
            return nb, everything
        if student == "syntax":
            last.source += "\n\ndef broken(:\n    pass\n"
            return nb, early
        outcome = {"everything": everything, "nothing": nothing, "early": early}[KINDS[student][1]]
        return attack(student, self.name, self.release, self.solution), outcome


def digest(folder, pattern="*.ipynb", leave_out=()):
    """``{path: sha256}`` of the files under ``folder`` (those that match ``pattern``), but ``leave_out``."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob(pattern))
        if p.is_file() and not any(part in leave_out for part in p.relative_to(folder).parts)
    }


# What nbgrader itself writes while it grades; every other file of the course must stay as it was.
GRADING_OUTPUT = ("autograded", "feedback", "gradebook.db", "grades.csv", "grades-again.csv", "nbgrader.log")


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


def exported_columns(course, name: str) -> dict:
    """``{(exercise, student): notes}`` of the CSV that `nbgrader export` wrote."""
    with open(course / name, newline="") as f:
        return {(row["assignment"], row["student_id"]): row["notes"] for row in csv.DictReader(f)}


def gradebook_digest(db_url: str) -> str:
    """SHA-256 of every row of every table of the gradebook (a sqlite file or a PostgreSQL database)."""
    from sqlalchemy import MetaData, create_engine, select

    engine = create_engine(db_url)
    try:
        metadata = MetaData()
        metadata.reflect(engine)
        found = hashlib.sha256()
        with engine.connect() as connection:
            for name in sorted(metadata.tables):
                rows = sorted(repr(tuple(row)) for row in connection.execute(select(metadata.tables[name])))
                found.update(f"{name}\n{rows}\n".encode())
        return found.hexdigest()
    finally:
        engine.dispose()


@pytest.fixture(scope="module")
def gradebook_server():
    """A PostgreSQL server for the class's gradebook (tests/postgres_server.py), or ``None`` where none can
    start: the class is then graded with a sqlite gradebook and one worker."""
    if postgres_unavailable() is not None:
        yield None
        return
    with postgres_server() as url:
        query(url, "CREATE DATABASE class")
        yield f"{url}/class"


class GradeClass:
    """``seqlab grade-class`` in the course, each run's --json report kept (outside the course)."""

    def __init__(self, course, reports, jobs: int):
        self.course, self.reports, self.jobs, self.runs = course, reports, jobs, 0

    def command(self, *args, nbgrader_args=()) -> tuple:
        """(command line, report path) of a run; where bubblewrap cannot run, the sandbox is switched off."""
        self.runs += 1
        report = self.reports / f"run-{self.runs}.json"
        extra = [*nbgrader_args] + (["--Sandbox.enabled=False"] if SANDBOX_MISSING else [])
        command = [str(BIN / "seqlab"), "grade-class", "--jobs", str(self.jobs), *args, "--json", str(report)]
        return command + (["--", *extra] if extra else []), report

    def __call__(self, *args, nbgrader_args=(), status: int = 0) -> dict:
        """Run it; fail with its output unless it exits with ``status``. Its report, with its output and
        wall time."""
        command, report = self.command(*args, nbgrader_args=nbgrader_args)
        start = time.perf_counter()
        result = subprocess.run(command, cwd=self.course, env=ENV, capture_output=True, text=True, timeout=3600)
        assert result.returncode == status, (
            f"{' '.join(command)}: exit {result.returncode}\n{result.stdout}\n{result.stderr}"
        )
        return json.loads(report.read_text()) | {"output": result.stdout, "wall": time.perf_counter() - start}


def by_status(report: dict) -> dict:
    """``{status: {(exercise, student), ...}}`` of a grade-class report."""
    found = {}
    for s in report["submissions"]:
        found.setdefault(s["status"], set()).add((s["exercise"], s["student"]))
    return found


def kernels_of(course, student: str) -> list:
    """The processes (sandboxes, kernels) grading ``student``'s notebooks: their command line or working
    folder is under autograded/<student>/."""
    folder = str(course / "autograded" / student)
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            words = (proc / "cmdline").read_bytes().decode(errors="replace").split("\0")
            cwd = os.readlink(proc / "cwd")
        except OSError:
            continue
        if cwd.startswith(folder) or any(w.startswith(folder) for w in words):
            found.append((int(proc.name), " ".join(words)[:200]))
    return found


@pytest.fixture(scope="module")
def cycle(tmp_path_factory, gradebook_server):
    course = tmp_path_factory.mktemp("class")
    for name in ["nbgrader_config.py", "Makefile"]:
        shutil.copy2(ROOT / name, course / name)
    if gradebook_server is not None:  # the gradebook on PostgreSQL, as a course that grades with workers
        with open(course / "nbgrader_config.py", "a") as f:
            f.write(f'\nc.CourseDirectory.db_url = "{gradebook_server}"\n')
    db_url = gradebook_server or f"sqlite:///{course / 'gradebook.db'}"
    grade_class = GradeClass(course, tmp_path_factory.mktemp("reports"), jobs=2 if gradebook_server else 1)
    shutil.copytree(ROOT / "solutions", course / "solutions", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    times = {"make release": make_release(course)}
    exercises = {name: Exercise(course, name) for name in EXERCISES}

    with open(course / "students.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "first_name", "last_name"])
        writer.writerows([s, s.title(), "Student"] for s in STUDENTS)
    nbgrader(course, "db", "student", "import", "students.csv")

    # Collected submissions: submitted/<student>/<exercise>/<exercise>.ipynb.
    expected = {}  # {(exercise, student): {grade_id: auto score}}, for the submissions handed in
    for student, names in HANDS_IN.items():
        for ex in (exercises[name] for name in names):
            nb, expected[ex.name, student] = ex.submission(student)
            expected[ex.name, student] |= ex.written_scores(nb)
            folder = course / "submitted" / student / ex.name
            folder.mkdir(parents=True)
            nbformat.write(nb, folder / f"{ex.name}.ipynb")

    # Without bubblewrap, autograde refuses to grade anyone (here: bubblewrap under a name that does not
    # exist), unless the instructor switches the sandbox off (here: the untouched release of one student).
    refused = run_nbgrader(course, "autograde", EXERCISES[0], "--Sandbox.bwrap=no-such-bwrap")
    start = time.perf_counter()
    runs = {
        "unsandboxed": grade_class(
            "--student=untouched", f"--exercise={EXERCISES[0]}", nbgrader_args=["--Sandbox.enabled=False"]
        )
    }
    times["autograde unsandboxed"] = time.perf_counter() - start
    course_files = digest(course, "*", leave_out=GRADING_OUTPUT)

    # The class with seqlab grade-class (what is graded already is skipped).
    runs["class"] = grade_class()
    times["autograde the rest"] = runs["class"]["wall"]
    left_behind = processes_with()  # what a submission started and grading did not stop
    gradebook_after_grading = gradebook_digest(db_url)
    # every exercise, as README says; the bound, for a hang, is 30 s a submission (it takes 1 or 2 s each)
    times["generate_feedback"] = nbgrader(course, "generate_feedback", "*", timeout=30 * len(expected))
    grades = exported(course, "grades.csv")
    first = {
        "submitted": digest(course / "submitted"),
        "scores": {ex: gradebook_scores(db_url, ex) for ex in exercises},
        "autograded": digest(course / "autograded"),
        "csv": grades,
    }
    first["columns"] = exported_columns(course, "grades.csv")
    sandbox = {
        "refused": refused,
        "course files": (course_files, digest(course, "*", leave_out=GRADING_OUTPUT)),
        "left behind": left_behind + processes_with(),  # at the end of grading, and after feedback and export
        "gradebook": (gradebook_after_grading, gradebook_digest(db_url)),
    }

    # Again: release, grade-class and nbgrader's own autograde must keep every submission and every grade.
    make_release(course)
    runs["again"] = grade_class()
    nbgrader(course, "autograde", EXERCISES[0])
    again = {
        "submitted": digest(course / "submitted"),
        "scores": {ex: gradebook_scores(db_url, ex) for ex in exercises},
        "autograded": digest(course / "autograded"),
        "csv": exported(course, "grades-again.csv"),
    }

    # Then the class changes: one submission is handed in again (the syntax error fixed), one cannot be
    # read; then one student is regraded alone; then a run is interrupted.
    fixed = HANDS_IN["syntax"][0]
    nbformat.write(exercises[fixed].solved(), course / "submitted" / "syntax" / fixed / f"{fixed}.ipynb")
    (course / "submitted" / "corrupt" / EXERCISES[0]).mkdir(parents=True)
    (course / "submitted" / "corrupt" / EXERCISES[0] / f"{EXERCISES[0]}.ipynb").write_text('{"cells": [')
    runs["changed"] = grade_class(status=1)
    runs["one student"] = grade_class("--student=stderr", "--force")
    runs["one student, unchanged"] = grade_class("--student=stderr")
    shutil.rmtree(course / "submitted" / "corrupt")
    runs["interrupted"] = interrupted_run(course, grade_class, exercises[EXERCISES[1]])
    runs["interrupted"]["record"] = {key for key in graded_records(db_url) if key[1] == "sleeper"}
    print(
        f"\nclass cycle ({len(STUDENTS)} students, {len(expected)} submissions, {len(exercises)} exercises, "
        f"grade-class --jobs {grade_class.jobs}, gradebook {db_url.split(':')[0]}), seconds:"
    )
    for step, seconds in times.items():
        print(f"  {step:<24} {seconds:6.1f}")
    print(f"  {'class (all autograding)':<24} {sum(v for k, v in times.items() if k.startswith('autograde')):6.1f}")
    return {
        "course": course,
        "exercises": exercises,
        "expected": expected,
        "first": first,
        "again": again,
        "sandbox": sandbox,
        "runs": runs,
        "jobs": grade_class.jobs,
        "db_url": db_url,
        "fixed": (fixed, exercises[fixed].total),
    }


SLEEPER = "import time\n\ntime.sleep(600)  # a long experiment: grading is interrupted while it runs\n\n"


def interrupted_run(course, grade_class, ex) -> dict:
    """grade-class interrupted (SIGINT, as Ctrl-C sends) while it grades a notebook whose first answer
    sleeps: its report and output, its exit status, how long it took to stop, and the processes grading
    that notebook afterwards."""
    nb = ex.solved()
    cell(nb, ex.answers[0]).source = SLEEPER + cell(nb, ex.answers[0]).source
    (course / "submitted" / "sleeper" / ex.name).mkdir(parents=True)
    nbformat.write(nb, course / "submitted" / "sleeper" / ex.name / f"{ex.name}.ipynb")
    command, report = grade_class.command("--student=sleeper")
    default_sigint = lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)  # noqa: E731 (a background job ignores it)
    child = subprocess.Popen(
        command,
        cwd=course,
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=default_sigint,
    )
    try:
        deadline = time.monotonic() + 240
        while not kernels_of(course, "sleeper") and time.monotonic() < deadline and child.poll() is None:
            time.sleep(0.5)
        grading = bool(kernels_of(course, "sleeper"))
        time.sleep(2)  # the kernels run the notebook
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        output, _ = child.communicate(timeout=120)
        stopped_after = time.monotonic() - sent
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    time.sleep(1)
    return json.loads(report.read_text()) | {
        "output": output,
        "status": child.returncode,
        "grading when interrupted": grading,
        "stopped after": stopped_after,
        "left": kernels_of(course, "sleeper"),
        "autograded": (course / "autograded" / "sleeper" / ex.name).exists(),
    }


def graded_records(db_url: str) -> set:
    """``{(exercise, student)}`` that grade-class recorded as graded (its table in the gradebook)."""
    from sqlalchemy import create_engine, text

    engine = create_engine(db_url)
    try:
        with engine.connect() as connection:
            return {tuple(row) for row in connection.execute(text("SELECT exercise, student FROM seqlab_graded"))}
    finally:
        engine.dispose()


def test_the_class_has_exercises():
    assert EXERCISES, "no exercise in solutions/"
    assert {"ex01_lstm_cell", "ex02_bidirectional_encoder", "ex03_seq2seq"} <= set(EXERCISES), EXERCISES
    first = nbformat.read(ROOT / "solutions" / "ex01_lstm_cell" / "ex01_lstm_cell.ipynb", as_version=4)
    # the attacks on the verdict are graded on exercise 1 (grading_harness.FIRST_EXERCISE_ONLY)
    assert answer_ids(first)[0] == "peephole_lstm_step" and graded_points(first), answer_ids(first)
    assert all(points > 0 for points in graded_points(first).values()), graded_points(first)
    # every kind of submission is graded here, but the loop that swallows its interrupt (test_grade_command.py)
    assert set(KINDS) - set(STUDENTS) == {"swallows"} | (set(ON_THE_COURSE) if SANDBOX_MISSING else set())
    # every exercise is graded end to end with its solution and with something wrong or damaged
    assert all(sum(name in names for student, names in HANDS_IN.items() if student != "perfect") for name in EXERCISES)


@pytest.mark.parametrize("student", STUDENTS)
def test_every_student_gets_the_right_score(cycle, student):
    """The score, and every test cell's (auto score, max score), as the gradebook has them."""
    for name in HANDS_IN[student]:
        ex = cycle["exercises"][name]
        expected = cycle["expected"][name, student]
        score, max_score, grades = cycle["first"]["scores"][name][student]
        assert max_score == ex.total, f"{student}, {name}: out of {max_score}, not {ex.total}"
        # every test cell graded, out of the solution's points (an edited 100 is reset), passed or failed
        every = ex.points | ex.written
        assert grades == {gid: (expected[gid], points) for gid, points in every.items()}, (student, name)
        assert score == autograded_score(expected), f"{student}, {name}: {score}, grades {grades}"


def test_the_csv_holds_every_student(cycle):
    rows = cycle["first"]["csv"]
    assert {student for _, student in rows} == set(STUDENTS)
    for name, ex in cycle["exercises"].items():
        for student in STUDENTS:
            expected = autograded_score(cycle["expected"].get((name, student), {}))  # 0 if not handed in
            assert rows[name, student] == (expected, ex.total), (name, student)


def test_no_run_aborts_the_batch(cycle):
    """Every submission was graded (nbgrader removes a submission it failed on) and has feedback."""
    for name, student in cycle["expected"]:
        assert (cycle["course"] / "autograded" / student / name / f"{name}.ipynb").is_file(), (student, name)
        assert (cycle["course"] / "feedback" / student / name / f"{name}.html").is_file(), (student, name)


def autograded(cycle, student, name=None):
    """(exercise, autograded notebook) of a student: the one exercise they handed in, or ``name``."""
    if name is None:
        (name,) = HANDS_IN[student]
    path = cycle["course"] / "autograded" / student / name / f"{name}.ipynb"
    return cycle["exercises"][name], nbformat.read(path, as_version=4)


def errors(nb, grade_id) -> list:
    return [o.ename for o in cell(nb, grade_id).outputs if o.output_type == "error"]


def failed_with(nb, grade_id, ename: str) -> bool:
    """The test cell failed once, with ``ename``: raised as it is, or reported by the exercise's own check as
    what the student's function raised ("peephole_lstm_step raised NameError: ...")."""
    (error, *more) = [o for o in cell(nb, grade_id).outputs if o.output_type == "error"] or [None]
    return error is not None and not more and (error.ename == ename or f"raised {ename}" in error.evalue)


def test_an_untouched_release_fails_on_its_stubs(cycle):
    """The first test fails on the stub that the student replaces, not on something else."""
    for name in HANDS_IN["untouched"]:
        ex, nb = autograded(cycle, "untouched", name)
        assert errors(nb, next(iter(ex.points))) == ["NotImplementedError"], name


@pytest.mark.parametrize("name", EXERCISES)
def test_each_exercises_tests_fail_the_untouched_release_and_the_cheat(tmp_path, name):
    """Both wrong hand-ins of the table, for every exercise (the class grades each exercise with one of them),
    in-process (tests/answer_runner.py): every test cell fails, with its hidden tests as the grader runs it,
    and an untouched release fails its first test on the stub (NotImplementedError, raised as it is or
    reported by the exercise's check as what the student's function raised)."""
    ex = Exercise(ROOT, name)
    cells = plan_cells(ex.solution)
    answers = {c["grade_id"]: c["graded"] for c in cells if c["kind"] == "answer"}
    assert list(answers) == ex.answers
    students = {
        "untouched": {gid: cell(ex.release, gid).source for gid in answers},
        "always_eq": {gid: cheating(source) for gid, source in answers.items()},
    }
    plan, out = tmp_path / "plan.json", tmp_path / "verdicts.json"
    plan.write_text(json.dumps({"cells": cells, "students": students}))
    env = dict(os.environ, OMP_NUM_THREADS="1", SEQLAB_PROGRESS="0")
    # a bound for a hang only: each cell has the runner's own limit, and this runs a few seconds
    done = subprocess.run(
        [str(BIN / "python"), str(RUNNER), str(plan), str(out)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1800,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    verdicts = json.loads(out.read_text())
    for student in students:
        tests = verdicts[student]["graded"]["tests"]
        assert list(tests) == list(ex.points), (student, tests)
        passed = [gid for gid, failure in tests.items() if failure is None]
        assert not passed, f"{name}: {student} passes {passed}"
    first = verdicts["untouched"]["graded"]["tests"][next(iter(ex.points))]
    assert first.startswith("NotImplementedError") or "raised NotImplementedError" in first, first


def test_crash_and_loop_are_recorded_where_they_happened(cycle):
    for student, error in [("crash", "DeadKernelError"), ("loop", "CellTimeoutError")]:
        ex, nb = autograded(cycle, student)
        assert error in errors(nb, ex.last), (student, errors(nb, ex.last))


def test_the_loop_is_interrupted_and_the_rest_is_graded(cycle):
    ex, nb = autograded(cycle, "loop")
    # one cell timeout, the loop's (after the KeyboardInterrupt that stopped it), and no other
    timed_out = [
        nbgrader_meta(c).get("grade_id")
        for c in nb.cells
        if any(o.get("ename") == "CellTimeoutError" for o in c.get("outputs", []))
    ]
    assert timed_out == [ex.last], timed_out
    # the kernel was interrupted, not lost: the cells after the loop ran (and failed on the missing function)
    assert failed_with(nb, next(iter(ex.below)), "NameError"), cell(nb, next(iter(ex.below))).outputs


def test_deleted_and_edited_test_cells_are_restored(cycle):
    for student in ["deleted", "edited"]:
        ex, nb = autograded(cycle, student)
        for grade_id, points in ex.points.items():
            # nbgrader puts a deleted cell back with a first line that says so
            assert cell(nb, grade_id).source.endswith(cell(ex.solution, grade_id).source), (student, grade_id)
            assert cell(nb, grade_id).metadata.nbgrader.points == points, (student, grade_id)


def test_deleted_test_cells_come_back_and_run(cycle):
    ex, nb = autograded(cycle, "deleted")
    for grade_id in ex.points:
        assert "was missing from the submission" in cell(nb, grade_id).source, grade_id
        assert cell(nb, grade_id).outputs, f"{grade_id} was added back but not run"


def test_edited_test_cells_are_the_originals_hidden_tests_included(cycle):
    ex, nb = autograded(cycle, "edited")
    hidden = [gid for gid in ex.points if "### BEGIN HIDDEN TESTS" in cell(ex.solution, gid).source]
    assert hidden, f"{ex.name}: no hidden test to check"
    for grade_id in ex.points:
        assert cell(nb, grade_id).source == cell(ex.solution, grade_id).source, grade_id
    for grade_id in hidden:
        assert "### BEGIN HIDDEN TESTS" in cell(nb, grade_id).source, grade_id


def test_release_and_autograde_again_keep_submissions_and_grades(cycle):
    first, again = cycle["first"], cycle["again"]
    assert again["submitted"] == first["submitted"], "a submission was changed or deleted"
    assert len(first["submitted"]) == len(cycle["expected"])
    assert again["autograded"] == first["autograded"], "an autograded notebook was changed or deleted"
    assert again["scores"] == first["scores"], "a grade changed"
    assert again["csv"] == first["csv"]


def test_the_course_configuration_keeps_nbgraders_default_preprocessors():
    """nbgrader_config.py lists nbgrader's preprocessors with the course's swaps; a newer nbgrader that
    changes its defaults must show up here, not as a silently different autograder."""
    from nbgrader.converters import Autograde
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()

    def defaults(name):
        default = Autograde.class_traits()[name].default()
        return [f"{p.__module__.split('.')[0]}.preprocessors.{p.__name__}" for p in default]

    plugins = "seqlab.grading.nbgrader_plugins"
    autograde = []
    for n in defaults("autograde_preprocessors"):
        autograde.append("seqlab.grading.executor.SandboxedExecute" if n == "nbgrader.preprocessors.Execute" else n)
        if n == "nbgrader.preprocessors.SaveAutoGrades":
            autograde.append("seqlab.grading.sanitize.SanitizeMarkup")
    assert list(config.Autograde.autograde_preprocessors) == autograde
    sanitize = []
    for n in defaults("sanitize_preprocessors"):
        sanitize.append(f"{plugins}.OverwriteCellsKeepingWork" if n == "nbgrader.preprocessors.OverwriteCells" else n)
        if n == "nbgrader.preprocessors.ClearOutput":
            sanitize.append(f"{plugins}.RepairCellMetadata")
    assert list(config.Autograde.sanitize_preprocessors) == sanitize


# ---------------------------------------------------------------------------------------------------
# The sandbox, the attacks and the work that stock nbgrader loses

needs_sandbox = pytest.mark.skipif(bool(SANDBOX_MISSING), reason=f"no sandbox here: {SANDBOX_MISSING}")


def notes(cycle, student, name=None) -> list:
    return autograded(cycle, student, name)[1].metadata.get("seqlab", {}).get("notes", [])


def test_without_bubblewrap_autograde_refuses_unless_switched_off(cycle):
    refused = cycle["sandbox"]["refused"]
    assert refused.returncode != 0
    assert "refusing to grade without a sandbox" in refused.stderr + refused.stdout
    assert "--Sandbox.enabled=False" in refused.stderr + refused.stdout
    _, nb = autograded(cycle, "untouched", EXERCISES[0])  # graded first, with the sandbox switched off
    assert nb.metadata.seqlab["sandbox"].startswith("no sandbox (switched off with Sandbox.enabled=False)")


@needs_sandbox
def test_every_other_kernel_ran_in_the_sandbox(cycle):
    for name, student in cycle["expected"]:
        if (name, student) != (EXERCISES[0], "untouched"):
            _, nb = autograded(cycle, student, name)
            assert nb.metadata.seqlab["sandbox"] == "sandboxed with bubblewrap", (student, name)


@needs_sandbox
def test_grading_leaves_the_course_the_submissions_and_the_package_as_they_were(cycle):
    before, after = cycle["sandbox"]["course files"]
    assert set(before) >= {"nbgrader_config.py", "Makefile", "students.csv"}
    assert after == before, {p for p in set(before) | set(after) if before.get(p) != after.get(p)}
    assert not list(cycle["course"].rglob("planted*")), "an attack wrote into the course"
    assert not (ROOT / "seqlab" / "grading" / PLANTED).exists(), "an attack wrote into the seqlab package"


@needs_sandbox
def test_no_process_of_a_submission_outlives_grading(cycle):
    assert cycle["sandbox"]["left behind"] == []
    right_after, at_the_end = cycle["sandbox"]["gradebook"]
    assert at_the_end == right_after, "the gradebook changed after grading"


def test_a_50_mb_line_is_cut_to_the_output_limit(cycle):
    ex, nb = autograded(cycle, "big_line")
    path = cycle["course"] / "autograded" / "big_line" / ex.name / f"{ex.name}.ipynb"
    assert path.stat().st_size < 1_000_000
    feedback = cycle["course"] / "feedback" / "big_line" / ex.name / f"{ex.name}.html"
    assert feedback.stat().st_size < 2_000_000
    assert any("was cut at" in note for note in notes(cycle, "big_line")), notes(cycle, "big_line")


@pytest.mark.parametrize(
    "student, note",
    [
        ("copied_test", "times: the last copy is graded"),
        ("answer_moved", "was missing: the original was put back"),
        ("graded_off", "had its graded flag switched off: graded as the exercise's"),
        ("sidebar", "had been made a markdown cell"),
    ],
)
def test_lost_work_is_graded_with_a_note(cycle, student, note):
    """The score is checked with every other student's; here, that the repair is said."""
    assert any(note in n for n in notes(cycle, student)), notes(cycle, student)


# ---------------------------------------------------------------------------------------------------
# Verdicts out of the student's reach


def test_test_cells_ran_in_the_verdict_kernel(cycle):
    """A test cell's outputs are the verdict kernel's: the exercise's source ran there, whatever the
    student's kernel made of the cell (the transformer makes every cell with an assert `pass`, the code
    that serves the test's calls included: the calls fail)."""
    ex, nb = autograded(cycle, "perfect", EXERCISES[0])
    first_test = next(iter(ex.points))
    assert any(o.get("name") == "stdout" and o.text.startswith("ok:") for o in cell(nb, first_test).outputs)
    ex, nb = autograded(cycle, "transformer")
    assert failed_with(nb, first_test, "ConnectionError"), cell(nb, first_test).outputs
    (error,) = [o for o in cell(nb, first_test).outputs if o.output_type == "error"]
    assert "the notebook's kernel does not answer" in error.evalue


def test_the_export_lists_the_repairs(cycle):
    for student in ["copied_test", "graded_off", "sidebar", "answer_moved"]:
        (name,) = HANDS_IN[student]
        listed = cycle["first"]["columns"][name, student]
        assert "graded as the exercise's" in listed or "put back" in listed or "last copy" in listed, listed


# ---------------------------------------------------------------------------------------------------
# seqlab grade-class: workers, resuming, one student, Ctrl-C


def rows(report: dict) -> dict:
    return {(s["exercise"], s["student"]): s for s in report["submissions"]}


def test_the_class_was_graded_by_two_workers_against_postgresql(cycle):
    if cycle["jobs"] == 1:
        pytest.skip(f"graded with one worker and a sqlite gradebook: {postgres_unavailable()}")
    assert cycle["db_url"].startswith("postgresql://")
    assert not list(cycle["course"].glob("*.db")), "the gradebook must be on the server, not in a sqlite file"
    assert cycle["runs"]["class"]["jobs"] == 2
    assert "with 2 workers, gradebook postgresql://" in cycle["runs"]["class"]["output"]


def test_grade_class_grades_every_submission_once(cycle):
    runs = cycle["runs"]
    first = [runs[name] for name in ("unsandboxed", "class")]
    graded = [key for run in first for key in by_status(run).get("graded", ())]
    assert sorted(graded) == sorted(cycle["expected"])
    assert by_status(runs["class"])["unchanged"] == set(graded) - by_status(runs["class"])["graded"]
    assert all(set(by_status(run)) <= {"graded", "unchanged"} for run in first)
    for key, row in rows(runs["class"]).items():
        if row["status"] == "graded":
            assert row["why"] == "new" and row["score"] == autograded_score(cycle["expected"][key]), row
    assert "skipped as unchanged, 0 failed" in runs["class"]["output"]


def test_a_second_run_grades_nothing(cycle):
    again = cycle["runs"]["again"]
    assert by_status(again) == {"unchanged": set(cycle["expected"])}
    assert "Nothing to grade" in again["output"]


def test_a_changed_submission_is_regraded_alone_and_an_unreadable_one_is_reported(cycle):
    """The syntax error fixed: graded again (full marks), nothing else; a notebook that is not JSON is refused
    as corrupt by the intake, with the reason, in the table, and does not stop the other (exit status 1)."""
    run = cycle["runs"]["changed"]
    fixed, total = cycle["fixed"]
    assert by_status(run) == {
        "graded": {(fixed, "syntax")},
        "failed": {(EXERCISES[0], "corrupt")},
        "unchanged": set(cycle["expected"]) - {(fixed, "syntax")},
    }
    row = rows(run)[fixed, "syntax"]
    written = sum(cycle["exercises"][fixed].written.values())  # answered: the instructor's to grade
    assert (row["why"], row["score"], row["max_score"]) == ("changed", total - written, total)
    reason = rows(run)[EXERCISES[0], "corrupt"]["reason"]
    assert "corrupt notebook" in reason and "not valid JSON" in reason, reason
    assert reason in run["output"] and "corrupt" in run["output"]
    assert "1 graded" in run["output"] and "1 failed" in run["output"]


def test_one_student_is_regraded_alone(cycle):
    (name,) = HANDS_IN["stderr"]
    forced, unchanged = cycle["runs"]["one student"], cycle["runs"]["one student, unchanged"]
    assert by_status(forced) == {"graded": {(name, "stderr")}}
    row = rows(forced)[name, "stderr"]
    score, max_score, _ = cycle["first"]["scores"][name]["stderr"]
    assert (row["why"], row["score"], row["max_score"]) == ("forced", score, max_score)
    assert by_status(unchanged) == {"unchanged": {(name, "stderr")}}


def test_ctrl_c_stops_the_workers_and_leaves_nothing_half_graded(cycle):
    run = cycle["runs"]["interrupted"]
    assert run["grading when interrupted"], "the sleeper's kernels never started"
    assert run["status"] == 130, run["output"]
    assert run["stopped after"] < 60, run["stopped after"]
    assert by_status(run) == {"interrupted": {(EXERCISES[1], "sleeper")}}
    assert "interrupted: stopping the workers" in run["output"]
    assert run["left"] == [], "a kernel of the interrupted notebook is still running"
    assert not run["autograded"], "the half-graded notebook was left in autograded/"
    assert run["record"] == set(), "an interrupted submission was recorded as graded"
