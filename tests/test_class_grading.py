"""``seqlab grade-class`` without grading anything: what it refuses, and the pieces that decide what to grade
and say why a submission failed. The class itself is graded with two workers against PostgreSQL, graded
again (nothing), changed, regraded one student at a time and interrupted in tests/test_class_cycle.py,
where the class's submissions already are.
"""

import os
import shutil
import subprocess

import pytest
from grading_harness import BIN, ROOT

from seqlab.grading.class_grading import failure_reason, submission_digest

ENV = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")


def grade_class(course, *args) -> subprocess.CompletedProcess:
    command = [str(BIN / "seqlab"), "grade-class", *args]
    return subprocess.run(command, cwd=course, env=ENV, capture_output=True, text=True, timeout=120)


@pytest.fixture
def course(tmp_path):
    """A course folder with the course's nbgrader_config.py (a sqlite gradebook) and one submission."""
    shutil.copy2(ROOT / "nbgrader_config.py", tmp_path)
    folder = tmp_path / "submitted" / "alice" / "ex01_lstm_cell"
    folder.mkdir(parents=True)
    shutil.copy2(ROOT / "exercises" / "ex01_lstm_cell" / "ex01_lstm_cell.ipynb", folder)
    return tmp_path


def test_sqlite_with_two_workers_is_refused_and_says_why(course):
    done = grade_class(course, "--jobs", "2")
    assert done.returncode == 2, done.stdout + done.stderr
    said = " ".join(done.stderr.split())
    assert "refused: --jobs 2 with the gradebook sqlite:///" in said
    for why in ["one process write at a time", "5-second busy timeout", "database is locked", "--jobs 1", "PostgreSQL"]:
        assert why in said, why
    assert not (course / "gradebook.db").exists(), "a refused run touched the gradebook"
    assert not (course / "autograded").exists()


def test_a_student_with_no_submission_is_refused(course):
    done = grade_class(course, "--student", "bob")
    assert done.returncode == 2
    assert "refused: no submission of student bob in" in done.stderr
    assert not (course / "gradebook.db").exists()


def test_students_and_exercises_are_chosen_with_grade_class_options(course):
    done = grade_class(course, "--", "--student=alice")
    assert done.returncode == 2
    assert "with grade-class's --student and --exercise" in done.stderr


@pytest.mark.parametrize("jobs", ["0", "-1", "two"])
def test_jobs_is_a_whole_number_of_at_least_one(course, jobs):
    done = grade_class(course, "--jobs", jobs)
    assert done.returncode == 2
    assert "--jobs" in done.stderr


def test_the_digest_follows_the_submission_and_ignores_checkpoints(tmp_path):
    (tmp_path / "ex.ipynb").write_text("{}")
    first = submission_digest(tmp_path)
    (tmp_path / ".ipynb_checkpoints").mkdir()
    (tmp_path / ".ipynb_checkpoints" / "ex-checkpoint.ipynb").write_text("{ }")
    assert submission_digest(tmp_path) == first
    (tmp_path / "timestamp.txt").write_text("2025-01-01 10:00:00.000000 UTC")
    second = submission_digest(tmp_path)
    assert second != first
    (tmp_path / "ex.ipynb").write_text('{"cells": []}')
    assert submission_digest(tmp_path) not in (first, second)
    (tmp_path / "ex.ipynb").rename(tmp_path / "renamed.ipynb")
    assert submission_digest(tmp_path) not in (first, second)


NBGRADER_LOG = """\
[INFO] Sanitizing /course/submitted/carol/ex01/ex01.ipynb
[ERROR] There was an error processing assignment: /course/submitted/carol/ex01
[ERROR] Traceback (most recent call last):
  File "/venv/nbgrader/converters/base.py", line 400, in convert_notebooks
    self.convert_single_notebook(notebook_filename)
nbformat.reader.NotJSONError: Notebook does not appear to be JSON: '{"cells": ['

[ERROR] There was an error processing assignment 'ex01' for student 'carol'
[ERROR] Please see the the above traceback for details on the specific errors on the above failures.
"""


def test_the_failure_reason_is_the_exception_nbgrader_reports():
    reason = "nbformat.reader.NotJSONError: Notebook does not appear to be JSON: '{\"cells\": ['"
    assert failure_reason(NBGRADER_LOG) == reason


def test_without_a_traceback_the_reason_is_nbgraders_last_own_error():
    log = "[INFO] Skipping\n[ERROR] No notebooks were matched by '/c/submitted/carol/ex01'\n[ERROR] Did you mean: x\n"
    assert failure_reason(log) == "No notebooks were matched by '/c/submitted/carol/ex01'"
    assert "log" in failure_reason("")
    assert (
        failure_reason("", "Traceback (most recent call last):\n  File x\nRuntimeError: boom\n") == "RuntimeError: boom"
    )


def test_a_copy_of_the_course_without_class_grading_still_has_seqlab_grade():
    """The student edition may leave seqlab.grading.class_grading out: the seqlab command still starts,
    seqlab grade is there, and grade-class says what is missing."""
    code = (
        "import sys\n"
        "sys.modules['seqlab.grading.class_grading'] = None  # as if the file were not there\n"
        "from seqlab.grading import cli\n"
        "assert cli.autograde is not None and cli.class_grading is None\n"
        "sys.exit(cli.main(['grade-class']))\n"
    )
    done = subprocess.run([str(BIN / "python"), "-c", code], env=ENV, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "this copy of the course has no class grading" in done.stderr
