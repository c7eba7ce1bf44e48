"""What a Dask worker does for ``seqlab grade-class`` (see :mod:`seqlab.grading.class_grading`).

The command submits one task per submission (:func:`grade_submission`, one student's exercise) to a Dask
client, and registers a worker plugin (:class:`GradingWorker`) that every worker of the cluster runs,
those that join later too. A task grades in its worker's grading process (the standard library's process
pool, :class:`seqlab.grading.autograde.GradingProcesses`) exactly as ``nbgrader autograde EXERCISE
--student ID --force`` would in the course folder (the course's nbgrader_config.py, every kernel in its
sandbox), and writes the grades to the gradebook that ``c.CourseDirectory.db_url`` names; then the task
writes the record of what it graded (the table ``seqlab_graded``): a task that dies before its record is
written leaves a submission that the next attempt, or the next run, grades again from the start
(``--force``: the half-written autograded folder is removed, nbgrader's grade rows are overwritten). A
grading runs under a time limit (``--timeout``, or the course's limit for a notebook and nbgrader's own
time), and its process stops it there, kernels and all: the submission fails, and is not retried.

Before a worker grades anything it checks, once:

1. that it sees the course the command sees: the same folder, the same ``nbgrader_config.py``, release
   and solutions, byte for byte (:func:`course_fingerprint`; the course folder is on storage that every
   worker sees). A worker that sees another course grades nothing: each task it is given comes back
   *refused*, with the difference, and the command sends it to another worker.
2. for each exercise it is given, that grading works here: it grades the untouched release (0 points)
   and the solution (full marks) in a throwaway course (:func:`self_check`). A worker whose environment
   is broken (its kernels cannot import seqlab, say) refuses all further work and says why, so that no
   student's score is ever its zero. A check that passed is kept in the gradebook (``seqlab_self_checks``)
   for the worker's environment (:func:`environment_digest`: the machine, the Python, the environment
   variables, the installed software) and the exercise as the course has it: a worker of the same
   environment, in this run or a later one, does not check it again.

When a locked cell of the course before the first answer (setup, imports) raises, the worker checks
itself again at once (:meth:`GradingWorker.recheck`): if it fails, the grading is not a score, the task
raises :class:`BrokenGrading` for Dask to retry (``retries=``) and the worker refuses the rest; if it
passes, the submission broke the cell itself, and is scored. A grading whose process died is retried too.
"""

from __future__ import annotations

import gc
import glob
import hashlib
import io
import logging
import os
import re
import shutil
import sys
import tempfile
import threading
import time
import traceback
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

from distributed import get_worker
from distributed.diagnostics.plugin import WorkerPlugin

from seqlab.grading import autograde as one_notebook
from seqlab.grading import sandbox
from seqlab.grading.autograde import Refused
from seqlab.grading.nbgrader_plugins import SafeAutograde

__all__ = ["GRADED_TABLE", "PLUGIN", "SELF_CHECKS_TABLE", "BrokenGrading", "GradingWorker", "Records", "SelfChecks"]
__all__ += ["autograde", "course_fingerprint", "exercise_digest"]
__all__ += ["DAEMONIC", "environment_digest", "grade_submission", "self_check"]

PLUGIN = "seqlab-grade-class"  # the worker plugin's name on every worker
GRADED_TABLE = "seqlab_graded"
SELF_CHECKS_TABLE = "seqlab_self_checks"


class BrokenGrading(Exception):
    """A grading whose result is not the student's: a locked cell of the course raised (the environment,
    not the submission). Raised from the task, so that Dask retries it."""


def course_fingerprint(root, source: str = "solutions", release: str = "exercises") -> dict:
    """``{path relative to the course: SHA-256}`` of what every worker must see as the command does: the
    course's ``nbgrader_config.py`` and every notebook of its release and source folders."""
    root = Path(root)
    found = {}
    for pattern in ["nbgrader_config.py", f"{release}/*/*.ipynb", f"{source}/*/*.ipynb"]:
        for path in sorted(root.glob(pattern)):
            found[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def differences(root: str, expected: dict, source: str, release: str) -> str | None:
    """Why the course this worker sees at ``root`` is not the command's, or ``None`` when it is."""
    if not Path(root, "nbgrader_config.py").is_file():
        return f"it does not see the course folder {root} (no nbgrader_config.py there)"
    seen = course_fingerprint(root, source, release)
    changed = sorted(p for p in expected.keys() & seen.keys() if expected[p] != seen[p])
    missing, extra = sorted(expected.keys() - seen.keys()), sorted(seen.keys() - expected.keys())
    said = [f"{p} differs" for p in changed] + [f"{p} is missing" for p in missing] + [f"{p} is extra" for p in extra]
    if not said:
        return None
    more = f" (and {len(said) - 3} more)" if len(said) > 3 else ""
    return f"it sees another course at {root}: {', '.join(said[:3])}{more}"


class GradingWorker(WorkerPlugin):
    """The worker plugin (``distributed.WorkerPlugin``'s protocol: ``setup``/``teardown``) that holds what
    a worker keeps between its tasks: its verdict on the course and on its own environment, and its
    grading process (:class:`seqlab.grading.autograde.GradingProcesses`, one: a worker grades one
    submission at a time)."""

    def __init__(
        self,
        name: str,
        root: str,
        nbgrader_args: list,
        fingerprint: dict,
        source: str,
        release: str,
        db_url: str,
        course_id: str,
    ):
        self.name = name  # the run's own (PLUGIN and a run id): a run never replaces another run's plugin
        self.root, self.nbgrader_args, self.fingerprint = root, list(nbgrader_args), fingerprint
        self.source, self.release, self.db_url, self.course_id = source, release, db_url, course_id

    def setup(self, worker=None):
        self.worker = worker
        self.checked = set()  # the exercises whose release and solution grade here as they must
        self.lock = threading.Lock()
        self.processes = one_notebook.GradingProcesses(1)
        self.limit = one_notebook.DEFAULT_TOTAL + one_notebook.NBGRADER_SECONDS
        try:
            self.refusal = self._refusal()
        except Exception as error:  # whatever stops the checks: this worker grades nothing, and says why
            self.refusal = f"its checks could not run: {type(error).__name__}: {first_lines(str(error))}"

    def _refusal(self) -> str | None:
        import multiprocessing

        # nbgrader runs `alembic` as a program: this environment's bin/ first on PATH (the grading process
        # inherits it)
        bin_dir = str(Path(sys.executable).parent)
        if bin_dir not in os.environ.get("PATH", "").split(os.pathsep):
            os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")
        refusal = differences(self.root, self.fingerprint, self.source, self.release)
        if refusal is not None:
            return refusal
        if multiprocessing.current_process().daemon:
            return DAEMONIC
        from traitlets.config.loader import KVArgParseConfigLoader

        config = one_notebook._course_config(Path(self.root))
        config.merge(KVArgParseConfigLoader(argv=self.nbgrader_args).load_config())  # options after --
        settings = sandbox.Sandbox(config=config)
        if settings.enabled and settings.reason_unavailable():  # the class's kernels would not start
            return f"its kernels cannot run in their sandbox: {settings.reason_unavailable()}"
        # a grading's time limit, unless --timeout sets one: the course's for a notebook, and nbgrader's own time
        self.limit = one_notebook._course_total(config) + one_notebook.NBGRADER_SECONDS
        self.environment = environment_digest()
        return None

    def teardown(self, worker=None):  # noqa: ARG002 (the plugin protocol's signature)
        self.processes.stop()

    def refuses(self, exercise: str) -> str | None:
        """Why this worker grades nothing, or ``None``: it sees the course, and its environment grades
        ``exercise``'s release and solution as they must be graded (checked once per exercise; see
        :meth:`_check` for when a check passed elsewhere counts)."""
        with self.lock:
            if self.refusal is None and exercise not in self.checked:
                self.refusal = self._check(exercise)
                if self.refusal is None:
                    self.checked.add(exercise)
            return self.refusal

    def _check(self, exercise: str) -> str | None:
        """:func:`self_check`, unless a worker of the same environment (:func:`environment_digest`) passed
        it for this exercise as the course has it now (its release, solution and nbgrader_config.py): the
        gradebook keeps the checks that passed (the table ``seqlab_self_checks``), and the workers of one
        environment take turns (a Dask lock), so that a machine checks an exercise once, not once per
        worker and per run. A check that fails is never kept: the next worker, or run, checks again."""
        course = exercise_digest(self.fingerprint, exercise, self.source, self.release, self.nbgrader_args)
        checks = SelfChecks(self.db_url, self.course_id)
        try:
            from distributed import Lock

            with Lock(f"seqlab-self-check-{self.environment}-{course}"):
                if checks.passed(self.environment, exercise, course):
                    return None
                refusal = self_check(Path(self.root), exercise, self.source, self.release, self.processes)
                if refusal is None:
                    checks.remember(self.environment, exercise, course, self.worker.address)
                return refusal
        finally:
            checks.close()

    def recheck(self, exercise: str) -> str | None:
        """A grading broke on the course's own cells: this worker's own check of ``exercise``, now (no
        verdict of another worker's, no kept one). ``None`` when it passes (the submission broke them); else
        why, and this worker grades nothing more."""
        with self.lock:
            self.checked.discard(exercise)
            if self.refusal is None:
                self.refusal = self_check(Path(self.root), exercise, self.source, self.release, self.processes)
            if self.refusal is None:
                self.checked.add(exercise)
            return self.refusal


DAEMONIC = (
    "it is a daemonic process (Dask's default for a worker started by a nanny), which cannot start the "
    "grading processes: start its workers with the setting distributed.worker.daemon false (the "
    "environment variable DASK_DISTRIBUTED__WORKER__DAEMON=False; the README says how for each launcher)"
)


# The environment variables that decide how a grading runs: the kernels' (the sandbox passes these on),
# Python's, Jupyter's and the dynamic linker's, and where programs are found. Others (a login's, a
# batch job's, a worker's) leave the digest alone, so that the workers of one installation share it.
DECISIVE_ENV = re.compile(r"^(PATH|HOME|VIRTUAL_ENV|CONDA_PREFIX|(PYTHON|JUPYTER|IPYTHON|LD_|NBGRADER|SEQLAB).*)$")


def environment_digest() -> str:
    """SHA-256 of what decides how this worker grades: its machine, its Python, the environment variables
    that matter (``DECISIVE_ENV`` and the sandbox's ``KEEP_ENV``), and the software a grading would use as
    installed now: the names, sizes and times of the entries of Python's own and site folders (a package
    installed or removed changes them) and of every file of the seqlab package, the kernel specs, IPython's
    startup files, and bubblewrap. Workers with the same digest share their self-checks."""
    import site
    import socket
    import sysconfig

    from jupyter_core.paths import jupyter_path

    seen = [socket.gethostname(), sys.executable, sys.prefix, sys.version]
    seen.append(sorted((k, v) for k, v in os.environ.items() if DECISIVE_ENV.match(k) or k in sandbox.KEEP_ENV))

    def entries(folder: Path, deep: bool) -> None:
        seen.append(str(folder))
        try:
            for entry in sorted(folder.rglob("*") if deep else folder.iterdir()):
                if "__pycache__" not in entry.parts:
                    stat = entry.stat()
                    seen.append((str(entry.relative_to(folder)), stat.st_size, stat.st_mtime_ns))
        except OSError as error:
            seen.append(repr(error))

    installed = {sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"], *site.getsitepackages()}
    for folder in sorted(installed | {site.getusersitepackages()}):
        entries(Path(folder), deep=False)
    entries(Path(__file__).resolve().parents[1], deep=True)  # the seqlab package, this file's
    for folder in jupyter_path("kernels"):
        entries(Path(folder), deep=True)
    entries(Path.home() / ".ipython" / "profile_default" / "startup", deep=True)
    bwrap = shutil.which("bwrap")
    seen.append((bwrap, Path(bwrap).stat().st_mtime_ns if bwrap else None))
    return hashlib.sha256(repr(seen).encode()).hexdigest()


def exercise_digest(fingerprint: dict, exercise: str, source: str, release: str, nbgrader_args=()) -> str:
    """SHA-256 of what a self-check of ``exercise`` vouches for: the course's nbgrader_config.py, the
    exercise's release and its solution (from :func:`course_fingerprint`'s hashes), and the options given
    to nbgrader after ``--`` (a check made under other options says nothing of these)."""
    wanted = ("nbgrader_config.py", f"{release}/{exercise}/", f"{source}/{exercise}/")
    parts = sorted((path, digest) for path, digest in fingerprint.items() if path.startswith(wanted))
    return hashlib.sha256(repr([parts, list(nbgrader_args)]).encode()).hexdigest()


def self_check(root: Path, exercise: str, source: str, release: str, processes) -> str | None:
    """Grade ``exercise``'s untouched release (it must score 0) and its solution (full marks) in a
    throwaway course, in ``processes``; ``None``, or why this worker's grading cannot be trusted."""
    expected = {"release": 0.0, "solution": None}  # None: full marks
    with tempfile.TemporaryDirectory(prefix="seqlab-self-check-") as tmp:
        for kind, folder in [("release", release), ("solution", source)]:
            original = root / folder / exercise / f"{exercise}.ipynb"
            if not original.is_file():
                return f"its self-check cannot find the {kind} of {exercise} ({original})"
            copy = Path(tmp) / kind / f"{exercise}.ipynb"  # its feedback goes there, not into the course
            copy.parent.mkdir()
            shutil.copyfile(original, copy)
            try:
                report = one_notebook.grade(copy, course=root, processes=processes)
            except (Refused, one_notebook.GradingFailed) as failure:
                return f"its self-check could not grade the {kind} of {exercise}: {first_lines(str(failure))}"
            want = report.possible if expected[kind] is None else expected[kind]
            if report.earned != want:
                failures = "; ".join(f"{t.grade_id}: {t.failure}" for t in report.tasks if t.failure)
                notes = "; ".join(report.notes)
                return (
                    f"its environment is broken: the {kind} of {exercise} scored "
                    f"{one_notebook.format_points(report.earned)}/{one_notebook.format_points(report.possible)} "
                    f"here, not {one_notebook.format_points(want)} ({first_lines(failures or notes)})"
                )
    return None


def first_lines(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def broken_course_cells(path: Path) -> list:
    """``["setup: ModuleNotFoundError: ...", ...]``: the locked cells of the course that come before the
    first answer (setup, imports: nothing a student wrote has run yet) and raised in the autograded
    notebook at ``path``. A locked cell after an answer may fail because of that answer: the student's."""
    import nbformat

    broken = []
    for cell in nbformat.read(path, as_version=4).cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution") or meta.get("grade"):
            break
        if cell.cell_type != "code" or not meta.get("locked"):
            continue
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                broken.append(f"{meta.get('grade_id', '?')}: {output.get('ename')}: {output.get('evalue', '')}")
    return broken


def grade_submission(job: dict) -> dict:
    """A Dask task: grade one submission on this worker (see the module docstring).

    ``job``: ``exercise``, ``student``, ``digests`` (the submission's and the exercise's SHA-256, recorded
    once graded), ``db_url``, ``course_id``, ``timeout`` (seconds, or None). Returns ``{"refused": why}``
    when this worker grades nothing, else ``{"success", "log", "error", "score", "max_score", "seconds",
    "worker"}`` (and ``"late"`` for a grading stopped at its time limit). Raises :class:`BrokenGrading`
    when the course's own cells raised, or the grading process died (Dask retries it)."""
    worker = get_worker()
    plugin = worker.plugins[job["plugin"]]
    exercise, student = job["exercise"], job["student"]
    why = plugin.refuses(exercise)
    if why is not None:
        return {"refused": why, "worker": worker.address}
    started = time.monotonic()
    autograded = Path(job["autograded"])
    limit = job.get("timeout") or plugin.limit
    records = Records(job["db_url"], job["course_id"])
    try:
        records.forget(exercise, student)  # until it is graded again
        shutil.rmtree(autograded, ignore_errors=True)  # what a grading cut short left
        try:
            reply = plugin.processes.run(limit, autograde, plugin.root, plugin.nbgrader_args, exercise, student)
        except one_notebook.GradingFailed as failure:
            shutil.rmtree(autograded, ignore_errors=True)
            raise BrokenGrading(f"grading {exercise} of {student} on {worker.address}: {failure}") from None
        seconds = time.monotonic() - started
        if reply == one_notebook.LATE:
            shutil.rmtree(autograded, ignore_errors=True)
            late = f"took longer than {limit:g} s and was stopped"
            return {"success": False, "late": late, "worker": worker.address, "seconds": seconds}
        reply.update(worker=worker.address, seconds=seconds)
        notebooks = sorted(glob.glob(os.path.join(glob.escape(str(autograded)), "*.ipynb")))
        broken = [b for nb in notebooks for b in broken_course_cells(Path(nb))] if reply["success"] else []
        if broken:  # the environment's fault, unless this worker's own check, now, says it grades well
            if plugin.recheck(exercise) is not None:
                shutil.rmtree(autograded, ignore_errors=True)
                raise BrokenGrading(
                    f"a locked cell of {exercise} raised on {worker.address} (the environment, not the student): "
                    + "; ".join(broken)
                )
            # it does: the submission broke the course's cells itself (a torch.py beside the notebook, say)
        if reply["success"]:
            reply["score"], reply["max_score"] = scores(job["db_url"], job["course_id"], exercise, student)
            if reply["score"] is not None and autograded.is_dir():
                records.remember(exercise, student, tuple(job["digests"]), reply["seconds"])
            else:
                reply["success"] = False
                reply["error"] = "nbgrader finished but wrote no grade"
        else:
            shutil.rmtree(autograded, ignore_errors=True)
        return reply
    finally:
        records.close()


# ---------------------------------------------------------------------------------------------------
# nbgrader in the course, and the record of what was graded


@contextmanager
def _working_folder(path: Path):
    before = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


def nbgrader_autograde_app(root: Path, nbgrader_args):
    """nbgrader's autograde application, configured as ``nbgrader autograde`` would be in ``root``."""
    from nbgrader.apps.autogradeapp import AutogradeApp

    app = AutogradeApp()
    try:
        with _working_folder(root):  # nbgrader reads nbgrader_config.py from the working folder
            app.initialize(list(nbgrader_args))
    except SystemExit as stop:  # a bad option: nbgrader has said why
        raise Refused(f"nbgrader refused the options {list(nbgrader_args)} (exit status {stop.code})") from None
    if app.extra_args or app.coursedir.assignment_id or app.coursedir.student_id != "*":
        raise Refused("choose students and exercises with grade-class's --student and --exercise, not nbgrader's")
    return app


def autograde(root: str, nbgrader_args: list, exercise: str, student: str) -> dict:
    """In a grading process: nbgrader's autograde of one submission, forced, as ``nbgrader autograde
    EXERCISE --student ID --force`` runs it in the course folder ``root``: ``{"success": bool, "log":
    nbgrader's log, "error": a traceback or ""}``."""
    from nbgrader.converters.base import NbGraderException

    app = nbgrader_autograde_app(Path(root), nbgrader_args)
    app.log.handlers = []  # nbgrader's log goes to the reply, not to the worker's terminal
    app.log.propagate = False
    coursedir = app.coursedir
    coursedir.assignment_id, coursedir.student_id = glob.escape(exercise), glob.escape(student)
    buffer = io.StringIO()
    handler = logging.StreamHandler(buffer)
    handler.setFormatter(logging.Formatter("[%(levelname)s] %(message)s"))
    app.log.addHandler(handler)
    success, error = False, ""
    try:
        with _working_folder(Path(root)):  # nbgrader reads the course from the working folder
            converter = SafeAutograde(coursedir=coursedir, parent=app)
            converter.force = True
            converter.start()
        success = True
    except NbGraderException:  # nbgrader has logged why
        pass
    except Exception:
        error = traceback.format_exc()
    finally:
        app.log.removeHandler(handler)
        # nbgrader's preprocessors open gradebooks they never close: free their connections now, not at
        # the garbage collector's leisure, so that a process's hundredth submission holds as few as its first
        gc.collect()
    return {"success": success, "log": buffer.getvalue(), "error": error}


def _graded_table(metadata):
    from sqlalchemy import Column, DateTime, Float, String, Table

    return Table(
        GRADED_TABLE,
        metadata,
        Column("course_id", String(128), primary_key=True),
        Column("exercise", String(128), primary_key=True),
        Column("student", String(128), primary_key=True),
        Column("submission_sha256", String(64), nullable=False),
        Column("exercise_sha256", String(64), nullable=False),
        Column("graded_at", DateTime, nullable=False),
        Column("seconds", Float),
    )


def _engine_with(table, db_url: str):
    """An engine on the gradebook at ``db_url``, with ``table`` made there if it was not."""
    from sqlalchemy import create_engine
    from sqlalchemy.exc import DatabaseError

    engine = create_engine(db_url, future=True)
    try:
        table.create(engine, checkfirst=True)
    except DatabaseError:  # another worker created it at the same moment
        table.create(engine, checkfirst=True)
    return engine


class Records:
    """The ``seqlab_graded`` table: what was graded, from which files, against which exercise."""

    def __init__(self, db_url: str, course_id: str):
        from sqlalchemy import MetaData

        self.table = _graded_table(MetaData())
        self.engine, self.course_id = _engine_with(self.table, db_url), course_id

    def all(self) -> dict:
        """``{(exercise, student): (submission sha256, exercise sha256)}`` of this course."""
        from sqlalchemy import select

        t = self.table
        query = select(t.c.exercise, t.c.student, t.c.submission_sha256, t.c.exercise_sha256)
        with self.engine.connect() as connection:
            rows = connection.execute(query.where(t.c.course_id == self.course_id)).all()
        return {(r.exercise, r.student): (r.submission_sha256, r.exercise_sha256) for r in rows}

    def forget(self, exercise: str, student: str) -> None:
        self.forget_all([(exercise, student)])

    def forget_all(self, keys) -> None:
        """Forget the records of ``keys`` (``(exercise, student)`` pairs), in one transaction."""
        t = self.table
        with self.engine.begin() as connection:
            for exercise, student in keys:
                connection.execute(
                    t.delete().where(t.c.course_id == self.course_id, t.c.exercise == exercise, t.c.student == student)
                )

    def remember(self, exercise: str, student: str, digests: tuple, seconds: float) -> None:
        self.forget(exercise, student)
        row = dict(
            course_id=self.course_id,
            exercise=exercise,
            student=student,
            submission_sha256=digests[0],
            exercise_sha256=digests[1],
            graded_at=datetime.now(timezone.utc).replace(tzinfo=None),
            seconds=seconds,
        )
        with self.engine.begin() as connection:
            connection.execute(self.table.insert().values(**row))

    def close(self) -> None:
        self.engine.dispose()


class SelfChecks:
    """The ``seqlab_self_checks`` table: which environment passed the self-check of which exercise, as the
    course had it (see :meth:`GradingWorker._check`)."""

    def __init__(self, db_url: str, course_id: str):
        from sqlalchemy import Column, DateTime, MetaData, String, Table

        self.table = Table(
            SELF_CHECKS_TABLE,
            MetaData(),
            Column("course_id", String(128), primary_key=True),
            Column("environment_sha256", String(64), primary_key=True),
            Column("exercise", String(128), primary_key=True),
            Column("exercise_sha256", String(64), primary_key=True),
            Column("worker", String(256)),
            Column("checked_at", DateTime, nullable=False),
        )
        self.engine, self.course_id = _engine_with(self.table, db_url), course_id

    def passed(self, environment: str, exercise: str, course: str) -> bool:
        from sqlalchemy import select

        t = self.table
        query = select(t.c.worker).where(
            t.c.course_id == self.course_id,
            t.c.environment_sha256 == environment,
            t.c.exercise == exercise,
            t.c.exercise_sha256 == course,
        )
        with self.engine.connect() as connection:
            return connection.execute(query).first() is not None

    def remember(self, environment: str, exercise: str, course: str, worker: str) -> None:
        row = dict(
            course_id=self.course_id,
            environment_sha256=environment,
            exercise=exercise,
            exercise_sha256=course,
            worker=worker,
            checked_at=datetime.now(timezone.utc).replace(tzinfo=None),
        )
        from sqlalchemy.exc import IntegrityError

        try:
            with self.engine.begin() as connection:
                connection.execute(self.table.insert().values(**row))
        except IntegrityError:  # another worker of this environment passed it at the same moment
            pass

    def close(self) -> None:
        self.engine.dispose()


def scores(db_url: str, course_id: str, exercise: str, student: str) -> tuple:
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(db_url, course_id=course_id) as gb:
        try:
            submission = gb.find_submission(exercise, student)
        except MissingEntry:
            return None, None
        return float(submission.score), float(submission.max_score)
