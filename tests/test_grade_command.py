"""`seqlab grade PATH`: a perfect notebook, an untouched release, attacks, lost work, broken notebooks.

The perfect notebook, in a folder of its own, is graded against a copy of this repository's course
files (hidden tests from solutions/) whose nbgrader_config.py points the class gradebook at a server
that does not exist: the grading must not need it, and the course must be left exactly as it was. The untouched release
is graded where it lies in a student's copy of the course that has no solutions/ (visible tests only)
and no bubblewrap (its nbgrader_config.py names a program that does not exist): the command says that
it grades unsandboxed, and only the feedback file may appear.

The class cycle (tests/test_class_cycle.py) grades the kinds of ``grading_harness.KINDS`` end to end, each
test cell's score checked in the gradebook, all but the loop that swallows its interrupt, which is graded
here, where it meets ``--timeout``. Here, four kinds (``ATTEMPTS``) and a perfect notebook saved as
``ex1.ipynb`` are graded in one command over their folder, with a short cell timeout: that loop, and
three whose check is also this command's own: the vandal, which writes next to the notebook that the
command names (the student's own) and leaves a process behind; the 50 MB line, whose feedback page lands
next to the notebook; and the sidebar, whose repairs are notes under the table. Each scores what the
solution's points say, the course, the student's other files and the seqlab package stay byte-identical,
and no process they started is alive afterwards. Ctrl-C and SIGTERM stop the command without a traceback
and without leaving its temporary course (and the kernel's connection file) behind. Broken notebooks are
refused before nbgrader starts, so most of them run in-process.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import nbformat
import pytest
from grading_harness import (
    BIN,
    KINDS,
    ON_THE_COURSE,
    PLANTED,
    ROOT,
    SANDBOX_MISSING,
    answer_ids,
    attack,
    cell,
    exercise_names,
    graded_points,
    nbgrader_meta,
    points_below,
    processes_with,
    solved,
    written_left_as_stub,
    written_points,
)

from seqlab.grading import autograde
from seqlab.grading.cli import VISIBLE_ONLY, main, notebooks_in
from seqlab.grading.executor import answer_names, defined_names
from seqlab.grading.repair import ExerciseCell

pytestmark = pytest.mark.xdist_group("grade-command")

RELEASED = exercise_names(ROOT / "exercises")  # what students can grade
FIRST = RELEASED[0]
UNREACHABLE = "postgresql://nobody@127.0.0.1:9/class_gradebook"  # port 9 (discard): nothing answers
NO_BWRAP = '\nc.Sandbox.bwrap = "no-such-bwrap"\n'
needs_sandbox = pytest.mark.skipif(bool(SANDBOX_MISSING), reason=f"no sandbox here: {SANDBOX_MISSING}")
SKIP = {".git", ".venv", "_build", "__pycache__", ".ruff_cache", ".pytest_cache", ".ipynb_checkpoints"}


def release(name: str):
    return nbformat.read(ROOT / "exercises" / name / f"{name}.ipynb", as_version=4)


def seqlab_grade(*args, cwd, **env) -> subprocess.CompletedProcess:
    """The console script, as a student runs it (``env``: more environment variables)."""
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", **env)
    return subprocess.run(
        [str(BIN / "seqlab"), "grade", *map(str, args)], cwd=cwd, env=env, capture_output=True, text=True, timeout=900
    )


def course_copy(folder: Path) -> Path:
    """This repository's course files (solutions/ and exercises/), with a class gradebook on a server that
    does not exist: `seqlab grade` must use a gradebook of its own."""
    config = (ROOT / "nbgrader_config.py").read_text() + f'\nc.CourseDirectory.db_url = "{UNREACHABLE}"\n'
    (folder / "nbgrader_config.py").write_text(config)
    for name in ["solutions", "exercises"]:
        shutil.copytree(ROOT / name, folder / name, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    return folder


def snapshot(root: Path) -> dict:
    """``{path: (size, mtime)}`` of every file under ``root``, caches and environments aside."""
    files = {}
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d not in SKIP]
        for name in names:
            stat = (Path(folder) / name).stat()
            files[str((Path(folder) / name).relative_to(root))] = (stat.st_size, stat.st_mtime_ns)
    return files


def row(output: str, grade_id: str) -> str:
    return next(line for line in output.splitlines() if line.split()[:1] == [grade_id])


# ---------------------------------------------------------------------------------------------------
# A perfect notebook, graded with the hidden tests of this repository


@pytest.fixture(scope="module")
def perfect(tmp_path_factory):
    folder = tmp_path_factory.mktemp("student") / FIRST
    folder.mkdir()
    notebook = folder / f"{FIRST}.ipynb"
    solution = nbformat.read(ROOT / "solutions" / FIRST / f"{FIRST}.ipynb", as_version=4)
    nbformat.write(solved(release(FIRST), solution), notebook)
    course = course_copy(tmp_path_factory.mktemp("course"))  # away from concurrent work in the repository
    before = snapshot(course)
    result = seqlab_grade(notebook, cwd=course)  # the course is found from the working folder
    return {"notebook": notebook, "result": result, "before": before, "after": snapshot(course), "solution": solution}


def test_perfect_notebook_scores_full_marks(perfect):
    result = perfect["result"]
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert f"exercise {FIRST}, with the visible tests and the instructor's hidden tests" in out
    points = graded_points(perfect["solution"])
    for grade_id, p in points.items():
        assert row(out, grade_id).split() == [grade_id, f"{p:g}", "/", f"{p:g}"], row(out, grade_id)
    total = sum(points.values())
    assert row(out, "total").split()[:4] == ["total", f"{total:g}", "/", f"{total:g}"]
    written = written_points(perfect["solution"])  # answered: left to the instructor, not counted
    for grade_id, p in written.items():
        assert row(out, grade_id).split()[:3] == [grade_id, "-", "/"], row(out, grade_id)
        assert row(out, grade_id).endswith(f"{p:g}  graded by your instructor"), row(out, grade_id)
    if written:
        assert f"{sum(written.values()):g} more points graded by your instructor" in row(out, "total")
        assert "Full marks on the autograded tasks." in out
    else:
        assert "Full marks." in out


def test_perfect_notebook_gets_its_feedback_next_to_it(perfect):
    feedback = perfect["notebook"].with_name(f"{FIRST}.feedback.html")
    assert f"Feedback (it shows the hidden tests): {feedback}" in perfect["result"].stdout
    html = feedback.read_text()
    assert FIRST in html and "BEGIN HIDDEN TESTS" in html
    assert sorted(p.name for p in feedback.parent.iterdir()) == [feedback.name, f"{FIRST}.ipynb"]


def test_grading_leaves_the_course_as_it_was(perfect):
    assert perfect["after"] == perfect["before"]


# ---------------------------------------------------------------------------------------------------
# The untouched release, in a student's copy of the course without solutions/


@pytest.fixture(scope="module")
def untouched(tmp_path_factory):
    course = tmp_path_factory.mktemp("students-copy")
    # a machine without bubblewrap: its program under a name that does not exist
    (course / "nbgrader_config.py").write_text((ROOT / "nbgrader_config.py").read_text() + NO_BWRAP)
    shutil.copytree(ROOT / "exercises", course / "exercises")
    notebook = course / "exercises" / FIRST / f"{FIRST}.ipynb"
    before = snapshot(course)
    result = seqlab_grade(notebook.relative_to(course), cwd=course)  # the course is found above the notebook
    return {"course": course, "notebook": notebook, "result": result, "before": before, "after": snapshot(course)}


def test_untouched_release_scores_zero(untouched):
    result = untouched["result"]
    assert result.returncode == 1, result.stdout + result.stderr
    out = result.stdout
    assert "the visible tests only: this copy of the course has no solutions/" in out
    points = graded_points(release(FIRST))
    for grade_id, p in points.items():
        assert row(out, grade_id).split()[:4] == [grade_id, "0", "/", f"{p:g}"], row(out, grade_id)
    first_answer = next(nbgrader_meta(c)["grade_id"] for c in release(FIRST).cells if nbgrader_meta(c).get("solution"))
    assert "NotImplementedError" in row(out, next(iter(points)))  # the first line of the failure
    assert f"note: you have not answered {first_answer} yet" in out
    written = written_points(release(FIRST))  # not answered: 0, as nbgrader gives a stub
    for grade_id, p in written.items():
        assert row(out, grade_id).split()[:4] == [grade_id, "0", "/", f"{p:g}"], row(out, grade_id)
        assert "not answered: a written answer, graded by your instructor" in row(out, grade_id)
    total = sum(points.values()) + sum(written.values())
    assert row(out, "total").split() == ["total", "0", "/", f"{total:g}"]
    assert f"{total:g} of {total:g} points missing." in out


def test_without_bubblewrap_the_command_says_it_grades_unsandboxed(untouched):
    out = untouched["result"].stdout
    assert "warning: grading without a sandbox: bubblewrap is not installed (no no-such-bwrap on PATH" in out
    assert "The notebook runs with your rights" in out


def test_a_grade_without_hidden_tests_ends_saying_so(untouched, perfect):
    """Last, under the table: the points count the visible tests only, and the instructor's grade may differ."""
    assert untouched["result"].stdout.rstrip().splitlines()[-1] == VISIBLE_ONLY
    assert "visible tests only" in VISIBLE_ONLY and "instructor's grade" in VISIBLE_ONLY
    assert VISIBLE_ONLY not in perfect["result"].stdout


def test_only_the_feedback_file_is_written(untouched):
    new = set(untouched["after"]) - set(untouched["before"])
    changed = {p for p in untouched["before"] if untouched["after"].get(p) != untouched["before"][p]}
    assert new == {f"exercises/{FIRST}/{FIRST}.feedback.html"}
    assert not changed


# ---------------------------------------------------------------------------------------------------
# Attacks and lost work, graded in one command over their folder

ATTEMPTS_TIMEOUT = 40  # seconds per cell: 13 times exercise 1's slowest cell (3 s, import torch, on a quiet machine);
# the loop that swallows its interrupt costs this, twice at most, asleep (no CPU)
# The kinds of KINDS graded here (each is graded by the class cycle too, with every test cell's score):
# those whose check is the command's own (see the module docstring).
ATTEMPTS = ["vandal", "big_line", "sidebar", "swallows"]


def sections(output: str) -> dict:
    """``{notebook file name: its part of the output}`` of `seqlab grade FOLDER`."""
    parts = {}
    for part in output.split("-" * 100):
        head = next((line for line in part.splitlines() if line.startswith("Grading ")), None)
        if head is not None:
            parts[Path(head.split(": exercise")[0][len("Grading ") :]).name] = part
    return parts


@pytest.fixture(scope="module")
def attempts(tmp_path_factory):
    """The kinds ``ATTEMPTS`` of ``KINDS`` and a perfect notebook saved as ex1.ipynb, for the first exercise,
    in one folder; the student's other work in another one; graded with TMPDIR in a folder of its own."""
    course = course_copy(tmp_path_factory.mktemp("attempts-course"))
    student = tmp_path_factory.mktemp("student")
    folder, other = student / "attempts", student / "other"
    folder.mkdir()
    other.mkdir()
    solution = nbformat.read(ROOT / "solutions" / FIRST / f"{FIRST}.ipynb", as_version=4)
    kinds = [k for k in ATTEMPTS if not (SANDBOX_MISSING and k in ON_THE_COURSE)]  # never run unsandboxed
    for kind in kinds:
        nbformat.write(attack(kind, FIRST, release(FIRST), solution), folder / f"{kind}.ipynb")
    nbformat.write(solved(release(FIRST), solution), folder / "ex1.ipynb")  # recognised by its cells
    nbformat.write(release(FIRST), other / f"{FIRST}.ipynb")
    (other / "notes.txt").write_text("my notes")
    temporary = Path(tempfile.mkdtemp(prefix="seqlab-test-"))  # a short path: it holds the kernel's sockets
    try:
        before = {"course": snapshot(course), "other": snapshot(other), "tmp": snapshot(temporary)}
        result = seqlab_grade(folder, "--timeout", ATTEMPTS_TIMEOUT, cwd=course, TMPDIR=str(temporary))
        after = {"course": snapshot(course), "other": snapshot(other), "tmp": snapshot(temporary)}
    finally:
        shutil.rmtree(temporary, ignore_errors=True)
    return {
        "result": result,
        "sections": sections(result.stdout),
        "kinds": kinds,
        "points": graded_points(solution),
        "late": points_below(solution, answer_ids(solution)[-1]),
        # the written answers' points that an attempt left as the release's stub: 0 out of them
        "unanswered": {
            kind: sum(
                written_left_as_stub(nbformat.read(folder / f"{kind}.ipynb", as_version=4), release(FIRST)).values()
            )
            for kind in kinds
        },
        "folder": folder,
        "before": before,
        "after": after,
        "left behind": processes_with(),
    }


def total(part: str) -> str:
    """``earned / possible`` of the autograded points (the written answers' points follow it)."""
    return " ".join(row(part, "total").split()[1:4])


def test_every_attempt_is_graded(attempts):
    assert sorted(attempts["sections"]) == sorted([f"{k}.ipynb" for k in attempts["kinds"]] + ["ex1.ipynb"]), (
        attempts["result"].stdout + attempts["result"].stderr
    )


@pytest.mark.parametrize("kind", ATTEMPTS)
def test_an_attempt_scores_what_the_solutions_points_say(attempts, kind):
    if kind not in attempts["kinds"]:
        pytest.skip(f"no attack without a sandbox: {SANDBOX_MISSING}")
    possible, late = sum(attempts["points"].values()) + attempts["unanswered"][kind], sum(attempts["late"].values())
    expected = {"everything": possible, "nothing": 0, "early": possible - late}[KINDS[kind][1]]
    part = attempts["sections"][f"{kind}.ipynb"]
    assert total(part) == f"{expected:g} / {possible:g}", part


def test_a_correct_notebook_saved_as_ex1_is_graded(attempts):
    part = attempts["sections"]["ex1.ipynb"]
    assert f"exercise {FIRST}" in part and "Full marks" in part


@pytest.mark.parametrize(
    "kind, note",
    [
        ("sidebar", "had been made a markdown cell"),
        ("swallows", "ignored the interrupt: a new kernel ran the cells above it again"),
        ("big_line", "was cut at"),
    ],
)
def test_what_grading_repaired_is_a_note(attempts, kind, note):
    part = attempts["sections"][f"{kind}.ipynb"]
    assert any(line.startswith("note: ") and note in line for line in part.splitlines()), part


def test_a_50_mb_line_leaves_a_small_feedback_page(attempts):
    assert (attempts["folder"] / "big_line.feedback.html").stat().st_size < 2_000_000


@needs_sandbox
def test_attempts_say_they_are_sandboxed_and_change_nothing_else(attempts):
    assert "without a sandbox" not in attempts["result"].stdout
    assert attempts["after"]["course"] == attempts["before"]["course"]
    assert attempts["after"]["other"] == attempts["before"]["other"], "the student's other work changed"
    assert not (ROOT / "seqlab" / "grading" / PLANTED).exists(), "an attack wrote into the seqlab package"
    written = {p.name for p in attempts["folder"].iterdir()} - {f"{k}.ipynb" for k in attempts["kinds"]}
    assert written == {f"{k}.feedback.html" for k in attempts["kinds"]} | {"ex1.ipynb", "ex1.feedback.html"}


@needs_sandbox
def test_no_process_of_an_attempt_outlives_grading_nor_any_temporary_file(attempts):
    assert attempts["left behind"] == []
    assert attempts["after"]["tmp"] == attempts["before"]["tmp"] == {}, "a temporary file was left behind"


def processes_naming(text: str) -> list:
    """The command lines that mention ``text`` (a kernel names its connection file, under TMPDIR)."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            line = cmdline.read_bytes().decode(errors="replace").replace("\0", " ")
        except OSError:
            continue
        if text in line:
            found.append(line[:200])
    return found


@pytest.mark.parametrize(
    "signum, status, said", [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "stopped")]
)
@pytest.mark.parametrize("notebooks", [1, 3], ids=["one notebook", "a folder, two at once"])
def test_ctrl_c_and_sigterm_stop_grading_and_leave_nothing(tmp_path, request, signum, status, said, notebooks):
    """While a cell runs (in two notebooks at once, a third waiting, when a folder is graded): no
    traceback, no temporary course, no connection file, no kernel left."""
    nb = release(FIRST)
    nb.cells.insert(1, nbformat.v4.new_code_cell("open('started', 'w').close()\nimport time\n\ntime.sleep(600)\n"))
    for n in range(notebooks):
        nbformat.write(nb, tmp_path / f"{n}_{FIRST}.ipynb")
    path = tmp_path / f"0_{FIRST}.ipynb" if notebooks == 1 else tmp_path
    temporary = Path(tempfile.mkdtemp(prefix="seqlab-test-"))  # a short path: it holds the kernel's sockets
    request.addfinalizer(lambda: shutil.rmtree(temporary, ignore_errors=True))
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", TMPDIR=str(temporary))
    command = [str(BIN / "seqlab"), "grade", str(path), "--course", str(ROOT), "--jobs", "2"]
    # Ctrl-C as from a terminal: a suite started as a background job (`make test &`) ignores SIGINT, and the
    # processes it starts inherit that, so the grading command would never see this one.
    default_sigint = lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)  # noqa: E731
    grading = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint
    )
    started, deadline = "seqlab-grade-*/seqlab-kernel-*/student-work/started", time.monotonic() + 120
    running = min(notebooks, 2)
    while len(list(temporary.glob(started))) < running and time.monotonic() < deadline:
        time.sleep(0.2)
    assert len(list(temporary.glob(started))) == running, "the cells never started"
    grading.send_signal(signum)
    out, err = grading.communicate(timeout=60)
    assert grading.returncode == status, out + err
    assert f"seqlab grade: {said}" in err and "Traceback" not in err, err
    assert list(temporary.iterdir()) == [], "a temporary file was left behind"
    assert processes_naming(str(temporary)) == [], "a process of the grading is still alive"


@pytest.mark.parametrize("value", ["0", "-5", "1.5", "soon"])
def test_a_timeout_that_is_not_a_positive_whole_number_is_refused(capsys, value):
    with pytest.raises(SystemExit) as stop:
        main(["grade", "anything.ipynb", "--timeout", value])
    assert stop.value.code == 2
    assert "--timeout" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------------
# Broken notebooks are refused, with a message and exit status 2


def refused(path, capsys, course=ROOT) -> str:
    listing = sorted(p.name for p in path.parent.iterdir())
    assert main(["grade", str(path), "--course", str(course)]) == autograde.EXIT_REFUSED
    assert sorted(p.name for p in path.parent.iterdir()) == listing, "a refused notebook gets no feedback"
    err = capsys.readouterr().err
    assert err.startswith("seqlab grade: refused: ")
    return err


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("corrupt.ipynb", '{"cells": [{"cell_type": "code", "source": "x = ', "is corrupt: not valid JSON"),
        ("empty.ipynb", "", "is corrupt: the file is empty"),
        ("bad-cell.ipynb", '{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [{"cell_type": "code"}]}',
         "is corrupt: it does not follow the notebook format"),
        ("answers.txt", "my answers", "is not a notebook: exercise notebooks are .ipynb files"),
        ("data.ipynb", '{"predictions": [1, 2, 3]}', "is not a notebook: it is JSON"),
    ],
)  # fmt: skip
def test_a_broken_file_is_refused(tmp_path, capsys, name, content, message):
    (tmp_path / name).write_text(content)
    assert message in refused(tmp_path / name, capsys)


def test_the_refusal_exit_status_of_the_console_script(tmp_path):
    (tmp_path / f"{FIRST}.ipynb").write_text(json.dumps({"nbformat": 4})[:-3])
    result = seqlab_grade(tmp_path / f"{FIRST}.ipynb", cwd=ROOT)
    assert result.returncode == 2 and "is corrupt: not valid JSON" in result.stderr, result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{FIRST}.ipynb"]


def test_a_notebook_of_no_exercise_is_refused(tmp_path, capsys):
    plain = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print('hello')")])
    nbformat.write(plain, tmp_path / f"{FIRST}.ipynb")
    assert "it has no nbgrader cells" in refused(tmp_path / f"{FIRST}.ipynb", capsys)

    other_course = release(FIRST)  # nbgrader cells, but of another course: other ids and checksums
    for c in other_course.cells:
        if "nbgrader" in c.metadata:
            c.metadata.nbgrader.grade_id = "q_" + c.metadata.nbgrader.grade_id
            c.metadata.nbgrader.checksum = "0" * 32
    nbformat.write(other_course, tmp_path / f"{FIRST}.ipynb")
    assert "belong to none of its exercises" in refused(tmp_path / f"{FIRST}.ipynb", capsys)


@pytest.fixture
def two_exercise_course(tmp_path):
    """A course with FIRST and a second exercise (ex99_other: FIRST's release under other grade ids)."""
    course = tmp_path / "course"
    shutil.copytree(ROOT / "exercises" / FIRST, course / "exercises" / FIRST)
    shutil.copy(ROOT / "nbgrader_config.py", course)
    other = release(FIRST)
    for c in other.cells:
        if "nbgrader" in c.metadata:
            c.metadata.nbgrader.grade_id = "other_" + c.metadata.nbgrader.grade_id
    (course / "exercises" / "ex99_other").mkdir()
    nbformat.write(other, course / "exercises" / "ex99_other" / "ex99_other.ipynb")
    return course, other


def test_another_exercises_notebook_is_refused(tmp_path, capsys, two_exercise_course):
    course, other = two_exercise_course
    nbformat.write(other, tmp_path / f"{FIRST}.ipynb")  # named by its file
    err = refused(tmp_path / f"{FIRST}.ipynb", capsys, course)
    assert f"is named as exercise {FIRST}, but it is exercise ex99_other" in err

    (tmp_path / "ex99_other").mkdir()  # named by its folder
    nbformat.write(release(FIRST), tmp_path / "ex99_other" / "my answers.ipynb")
    err = refused(tmp_path / "ex99_other" / "my answers.ipynb", capsys, course)
    assert f"is named as exercise ex99_other, but it is exercise {FIRST}" in err


def test_a_release_file_overwritten_with_another_exercise_is_refused(capsys, two_exercise_course):
    """Students work in the release file itself; git still has the release as it was given out."""
    course, other = two_exercise_course
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", "-c", "commit.gpgsign=false"]
    subprocess.run(["git", "init", "-q", str(course)], check=True)
    subprocess.run([*git, "-C", str(course), "add", "."], check=True)
    subprocess.run([*git, "-C", str(course), "commit", "-q", "-m", "release"], check=True)
    notebook = course / "exercises" / FIRST / f"{FIRST}.ipynb"
    nbformat.write(other, notebook)
    assert "but it is exercise ex99_other" in refused(notebook, capsys, course)


def test_a_notebook_named_after_no_exercise_is_recognised(tmp_path, two_exercise_course):
    course, other = two_exercise_course
    exercises = autograde.find_exercises(course)
    for nb, name in [(release(FIRST), FIRST), (other, "ex99_other")]:
        nbformat.write(nb, tmp_path / "homework.ipynb")
        assert autograde.identify(tmp_path / "homework.ipynb", nb, exercises) == name
    edited = release(FIRST)  # a student's edits change neither grade ids nor the release's checksums
    cell(edited, next(iter(graded_points(edited)))).source = "pass"
    assert autograde.identify(tmp_path / "homework.ipynb", edited, exercises) == FIRST


@pytest.mark.parametrize(
    "claimed, actual",
    [(a, b) for a in RELEASED for b in RELEASED if a != b]
    or [pytest.param(FIRST, FIRST, marks=pytest.mark.skip("one exercise released so far"))],
)
def test_a_released_exercise_renamed_as_another_is_refused(tmp_path, capsys, claimed, actual):
    nbformat.write(release(actual), tmp_path / f"{claimed}.ipynb")
    assert f"is named as exercise {claimed}, but it is exercise {actual}" in refused(
        tmp_path / f"{claimed}.ipynb", capsys
    )


def test_no_feedback_file_goes_into_solutions(tmp_path):
    """nbgrader copies every file of solutions/<exercise>/ but notebooks to the students."""
    inside = tmp_path / "solutions" / FIRST / f"{FIRST}.ipynb"
    assert autograde.feedback_path(inside, tmp_path) is None
    outside = tmp_path / "exercises" / FIRST / f"{FIRST}.ipynb"
    assert autograde.feedback_path(outside, tmp_path) == outside.with_name(f"{FIRST}.feedback.html")


def test_make_grade_runs_seqlab_grade():
    def make(*args):
        return subprocess.run(["make", "-n", "-o", "env", "grade", *args], cwd=ROOT, capture_output=True, text=True)

    assert f'{BIN}/seqlab grade "some notebook.ipynb"' in make("NB=some notebook.ipynb").stdout
    usage = subprocess.run(["make", "-s", "-o", "env", "grade"], cwd=ROOT, capture_output=True, text=True)
    assert usage.returncode != 0 and "usage: make grade NB=" in usage.stderr


def test_without_the_grading_extra_the_command_says_what_to_install():
    # nbformat and nbgrader come with the optional "grading" extra; without them, a clear refusal.
    code = (
        "import sys\n"
        "sys.modules['nbformat'] = None  # as if it were not installed\n"
        "from seqlab.grading.cli import main\n"
        "sys.exit(main(['grade', 'anything.ipynb']))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 2, done.stderr
    assert "seqlab[grading]" in done.stderr and "nbformat" in done.stderr


def test_the_gradebook_is_stamped_with_the_migration_alembic_names(monkeypatch):
    # seqlab grade reads the newest migration in-process instead of running `alembic heads`.
    import nbgrader.api

    monkeypatch.setenv("PATH", f"{BIN}{os.pathsep}{os.environ['PATH']}")  # nbgrader's way runs the program
    assert autograde.alembic_head() == nbgrader.api.get_alembic_version()


def test_a_folder_is_graded_notebook_by_notebook_and_an_empty_one_is_refused(tmp_path):
    (tmp_path / "ex02" / ".ipynb_checkpoints").mkdir(parents=True)
    (tmp_path / "ex01").mkdir()
    for path in ["ex02/b.ipynb", "ex02/.ipynb_checkpoints/b-checkpoint.ipynb", "ex01/a.ipynb", "notes.txt"]:
        (tmp_path / path).write_text("{}")
    assert notebooks_in(tmp_path) == [tmp_path / "ex01/a.ipynb", tmp_path / "ex02/b.ipynb"]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["grade", str(empty), "--course", str(ROOT)]) == autograde.EXIT_REFUSED


@pytest.mark.parametrize("name", exercise_names(ROOT / "solutions"))
def test_the_verdict_kernel_stands_in_for_exactly_the_answers_functions(name):
    """The names the verdict kernel binds to the student's functions: those the solution's answer cells
    define, found from the test cells alone as well (a release used as the source keeps only stubs)."""
    solution = nbformat.read(ROOT / "solutions" / name / f"{name}.ipynb", as_version=4)
    cells = {}
    for c in solution.cells:
        meta = nbgrader_meta(c)
        if meta.get("grade_id"):
            flags = {flag: bool(meta.get(flag)) for flag in ("locked", "grade", "solution", "task")}
            cells[meta["grade_id"]] = ExerciseCell(
                meta["grade_id"], c.cell_type, **flags, points=None, checksum=None, source=c.source
            )
    answers = sorted({n for c in cells.values() if c.solution for n in defined_names(c.source)})
    assert answers and answer_names(cells) == answers
    # A release: its answers' stubs, and test cells without their hidden tests (which may define the grader's
    # own versions of earlier answers, to grade a later task with them).
    hidden = re.compile(r"^\s*### BEGIN HIDDEN TESTS.*?^\s*### END HIDDEN TESTS[^\n]*\n?", re.S | re.M)
    stubs = {
        k: replace(c, source="# YOUR CODE HERE\nraise NotImplementedError()")
        if c.solution
        else replace(c, source=hidden.sub("", c.source))
        for k, c in cells.items()
    }
    assert answer_names(stubs) == answers


def test_stopped_grading_processes_start_no_other_grading(tmp_path):
    """Ctrl-C while a folder is graded stops its grading processes: no grading starts after the stop (a
    Python session that grades again makes new ones)."""
    processes = autograde.GradingProcesses(1)
    processes.stop()
    with pytest.raises(autograde.GradingFailed, match="not started: grading is being stopped"):
        autograde._run_nbgrader(tmp_path, FIRST, tmp_path / f"{FIRST}.ipynb", 1, 1, None, processes)
    assert processes.pids() == set()


def blocks_the_alarm_and_sleeps(seconds: float) -> str:
    """In a grading process: a grading that does not stop at its alarm (a C call that never returns, say)."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
    time.sleep(seconds)
    return "done"


def test_a_folder_reuses_its_grading_process_and_replaces_one_that_died_or_hung(tmp_path):
    """``seqlab grade FOLDER`` grades in one set of grading processes (the standard library's pool): the
    process that graded a notebook grades the next, also after nbgrader failed there; one killed while
    it waited is replaced; a grading past its time limit is stopped by its process, which grades on, and
    a process that does not stop it is killed and replaced; none outlives the block."""
    solution = nbformat.read(ROOT / "solutions" / FIRST / f"{FIRST}.ipynb", as_version=4)
    notebook = tmp_path / f"{FIRST}.ipynb"
    nbformat.write(solved(release(FIRST), solution), notebook)
    full = sum(graded_points(solution).values())
    (tmp_path / "course").mkdir()
    course = course_copy(tmp_path / "course")
    config = (course / "nbgrader_config.py").read_text()
    with autograde.GradingProcesses(1) as processes:
        assert autograde.grade(notebook, course=course, processes=processes).earned == full
        (first,) = processes.pids()
        # nbgrader fails in the course (a preprocessor that does not exist), in the process that waited
        (course / "nbgrader_config.py").write_text(config + '\nc.Autograde.autograde_preprocessors = ["no.Such"]\n')
        with pytest.raises(autograde.GradingFailed, match="nbgrader failed"):
            autograde.grade(notebook, course=course, processes=processes)
        assert processes.pids() == {first}, "the process did not grade on after nbgrader failed"
        (course / "nbgrader_config.py").write_text(config)
        os.kill(first, signal.SIGKILL)  # killed from outside while it waits
        deadline = time.monotonic() + 30
        while first in processes.pids() and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1)  # the pool's own thread notices, and marks it broken
        assert autograde.grade(notebook, course=course, processes=processes).earned == full
        (second,) = processes.pids()
        assert second != first
        # past its time limit: the process stops the function itself (its alarm) and grades on
        assert processes.run(1, time.sleep, 60) == autograde.LATE
        assert processes.pids() == {second}
        assert processes.run(5, sorted, [2, 1]) == [1, 2]
        # one that does not stop at its alarm is killed when the grace after the limit is over
        processes.grace = 1
        started = time.monotonic()
        assert processes.run(1, blocks_the_alarm_and_sleeps, 60) == autograde.LATE
        assert time.monotonic() - started < 30
        assert second not in processes.pids()
        assert processes.run(5, sorted, [3, 2]) == [2, 3]
        (last,) = processes.pids()
        assert last not in (first, second)
    assert processes.pids() == set() and not Path(f"/proc/{last}").exists(), "a grading process outlived the block"
