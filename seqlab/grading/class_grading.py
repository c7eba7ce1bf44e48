"""Grade a whole class at once: ``seqlab grade-class`` (see :mod:`seqlab.grading.cli`).

Every submission in nbgrader's ``submitted/<student>/<exercise>/`` (one student, one exercise) is graded
by nbgrader's own autograde for that student and exercise, as ``nbgrader autograde EXERCISE --student
ID --force`` would grade it: the course's configuration, its preprocessors, every notebook's kernels in
their own sandbox, the grades in the gradebook that ``c.CourseDirectory.db_url`` names, the notebook in
``autograded/``. ``--jobs N`` workers grade N submissions at a time. A worker is a Python process
(``python -m seqlab.grading.class_grading``) that loads nbgrader and the course's configuration once,
then grades the submissions this process sends it, one after another (a fresh process per submission
would spend two seconds of every few importing nbgrader).

**One worker with sqlite.** nbgrader opens a sqlite gradebook with SQLAlchemy's defaults: a rollback
journal, Python's busy timeout of 5 seconds, no retry. SQLite lets one process write at a time; a
grading process that must write (the student, the submission, the grades) while another process holds
the write lock waits 5 seconds, then fails with ``database is locked``: nbgrader drops that submission,
or, when the error comes from saving the grades, stops the whole run and suggests ``nbgrader db
upgrade``. So several workers need a database server (PostgreSQL, see the README), and with sqlite the
command refuses more than one.

**Resumable.** Once a submission is graded, a row in the gradebook (the table ``seqlab_graded``, next to
nbgrader's own tables, which it leaves alone) records the SHA-256 of the submission's files
(``timestamp.txt`` included) and of the exercise as the gradebook holds it (the release's cells and
points, what autograde grades with). A later run grades a submission again only when one of them changed,
its autograded notebook is gone, the gradebook has no grade for it, or it was never graded here (a
failure records nothing: it is tried again). ``--student`` and ``--exercise`` narrow the class;
``--force`` grades what is selected whether or not it changed.

A submission that fails to grade is reported with the reason nbgrader gave and does not stop the others.
Ctrl-C (or SIGTERM) stops the workers the way Ctrl-C stops ``nbgrader autograde``: the submission being
graded is cancelled, its half-written autograded folder removed, its kernels stopped; it is graded again
by the next run.
"""

from __future__ import annotations

import gc
import glob
import hashlib
import io
import json
import logging
import os
import re
import selectors
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections import deque
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from seqlab.grading import intake
from seqlab.grading.autograde import Refused, Stopped, format_points
from seqlab.grading.nbgrader_plugins import SafeAutograde

__all__ = ["GRADED_TABLE", "ClassGrading", "Course", "Outcome", "Submission"]
__all__ += ["format_summary", "open_course", "submission_digest"]

GRADED_TABLE = "seqlab_graded"
# Seconds a worker gets to finish after Ctrl-C (it stops its kernels and removes the half-graded folder).
STOP_GRACE = 20
SQLITE_ONE_WORKER = (
    "a sqlite gradebook takes one worker: nbgrader opens sqlite with SQLAlchemy's defaults (a rollback "
    "journal, Python's 5-second busy timeout, no retry), SQLite lets one process write at a time, and a "
    "grading process that writes while another holds the write lock waits 5 s and fails with 'database "
    "is locked' (nbgrader then drops that submission, or stops the whole run). Grade with --jobs 1, or put "
    "the gradebook on PostgreSQL (c.CourseDirectory.db_url; the README's 'A shared gradebook on "
    "PostgreSQL') to grade with several workers."
)


@dataclass(frozen=True)
class Submission:
    student: str
    exercise: str
    folder: Path


@dataclass
class Outcome:
    """What became of one submission."""

    student: str
    exercise: str
    status: str  # "graded", "unchanged" (skipped), "failed", "interrupted", "not started", "excluded"
    why: str = ""  # why it was graded: "new", "changed", "forced", ...
    score: float | None = None
    max_score: float | None = None
    seconds: float | None = None
    reason: str = ""  # why it failed
    notes: list = field(default_factory=list)  # what the intake left out of the submission, and why
    log: str = ""  # nbgrader's log, for a failure


@dataclass
class Course:
    """The course as ``nbgrader autograde`` sees it, run in ``root`` with ``nbgrader_args``."""

    root: Path
    db_url: str
    course_id: str
    create_student: bool
    nbgrader_args: list
    coursedir: object = field(repr=False)  # nbgrader's CourseDirectory

    @property
    def sqlite(self) -> bool:
        from sqlalchemy.engine import make_url

        return make_url(self.db_url).get_backend_name() == "sqlite"

    @property
    def shown_url(self) -> str:
        """The gradebook's URL without its password."""
        from sqlalchemy.engine import make_url

        return make_url(self.db_url).render_as_string(hide_password=True)

    def folder(self, step: str, student: str, exercise: str) -> Path:
        return Path(self.coursedir.format_path(step, student, exercise))


@contextmanager
def _working_folder(path: Path):
    before = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


def _app(root: Path, nbgrader_args):
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


def open_course(root, nbgrader_args=()) -> Course:
    """The course in ``root``, configured as nbgrader sees it (nbgrader_config.py, ``nbgrader_args``)."""
    root = Path(root).resolve()
    if not root.is_dir():
        raise Refused(f"{root} is not a folder")
    # nbgrader runs `alembic` as a program when it creates a gradebook: the environment's bin/ first
    bin_dir = str(Path(sys.executable).parent)
    if bin_dir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")
    app = _app(root, nbgrader_args)
    coursedir = app.coursedir
    create = app.config.Autograde.get("create_student", True)
    return Course(
        Path(coursedir.root), coursedir.db_url, coursedir.course_id, bool(create), list(nbgrader_args), coursedir
    )


# ---------------------------------------------------------------------------------------------------
# What there is to grade


def find_submissions(course: Course, students=(), exercises=()) -> list:
    """The submissions in submitted/, as nbgrader finds them (its directory structure), in
    (exercise, student) order; only ``students`` and ``exercises`` when given."""
    step = course.coursedir.submitted_directory
    pattern = re.compile(course.coursedir.format_path(step, "(?P<student>[^/]+)", "(?P<exercise>[^/]+)", escape=True))
    found = []
    for path in glob.glob(course.coursedir.format_path(step, "*", "*")):
        match = pattern.fullmatch(path)
        if match is None or not (os.path.isdir(path) or os.path.islink(path)):  # a link is refused in plan()
            continue
        student, exercise = match["student"], match["exercise"]
        if (not students or student in students) and (not exercises or exercise in exercises):
            found.append(Submission(student, exercise, Path(path)))
    return sorted(found, key=lambda s: (s.exercise, s.student))


def submission_digest(folder: Path, ignore=intake.IGNORED) -> str:
    """SHA-256 of a submission as grading takes it (:func:`seqlab.grading.intake.inspect`): every accepted
    file's path and content, and every refused entry's path and reason; no link is followed, nothing but a
    regular file is read."""
    found = intake.inspect(folder, ignore)
    digest = hashlib.sha256()
    for rel in found.files:
        digest.update(os.fsencode(rel) + b"\0")
        digest.update(hashlib.sha256(intake.read_regular(folder, rel)).digest())
    for refused in found.refused:
        digest.update(b"refused\0" + refused.encode() + b"\0")
    return digest.hexdigest()


def exercise_digest(gradebook, exercise: str) -> str:
    """SHA-256 of an exercise as the gradebook holds it: what autograde restores and grades with."""
    assignment = gradebook.find_assignment(exercise)
    parts = []
    for notebook in sorted(assignment.notebooks, key=lambda n: n.name):
        cells = sorted(
            (c.name, c.cell_type, bool(c.locked), c.source or "", c.checksum or "") for c in notebook.source_cells
        )
        grades = sorted((c.name, float(c.max_score)) for c in notebook.grade_cells)
        tasks = sorted((c.name, float(c.max_score)) for c in notebook.task_cells)
        solutions = sorted(c.name for c in notebook.solution_cells)
        parts.append([notebook.name, cells, grades, tasks, solutions])
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


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


class Records:
    """The ``seqlab_graded`` table: what was graded, from which files, against which exercise."""

    def __init__(self, db_url: str, course_id: str):
        from sqlalchemy import MetaData, create_engine
        from sqlalchemy.exc import DatabaseError

        self.engine = create_engine(db_url, future=True)
        self.table = _graded_table(MetaData())
        self.course_id = course_id
        try:
            self.table.create(self.engine, checkfirst=True)
        except DatabaseError:  # another grader created it at the same moment
            self.table.create(self.engine, checkfirst=True)

    def all(self) -> dict:
        """``{(exercise, student): (submission sha256, exercise sha256)}`` of this course."""
        from sqlalchemy import select

        t = self.table
        query = select(t.c.exercise, t.c.student, t.c.submission_sha256, t.c.exercise_sha256)
        with self.engine.connect() as connection:
            rows = connection.execute(query.where(t.c.course_id == self.course_id)).all()
        return {(r.exercise, r.student): (r.submission_sha256, r.exercise_sha256) for r in rows}

    def forget(self, exercise: str, student: str) -> None:
        t = self.table
        with self.engine.begin() as connection:
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


# ---------------------------------------------------------------------------------------------------
# The workers


def _worker_main(argv) -> int:
    """A worker: ``python -m seqlab.grading.class_grading NBGRADER_ARGS_JSON``, in the course folder.
    Reads one job a line on stdin (``{"exercise": ..., "student": ...}``), answers one line on stdout."""
    replies = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # whatever else prints goes to the worker's log, never into the replies
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        app = _app(Path.cwd(), json.loads(argv[0]))
        import nbgrader.converters  # noqa: F401 (loaded before the first submission's clock starts)

        replies.write(json.dumps({"ready": os.getpid()}) + "\n")
        for line in sys.stdin:
            job = json.loads(line)
            replies.write(json.dumps(autograde(app, job["exercise"], job["student"])) + "\n")
    except KeyboardInterrupt:
        return 130
    return 0


def _interrupt(signum, frame):  # noqa: ARG001 (a signal handler's signature)
    raise KeyboardInterrupt


def autograde(app, exercise: str, student: str) -> dict:
    """nbgrader's autograde of one submission, forced, as ``nbgrader autograde EXERCISE --student ID
    --force`` runs it: ``{"success": bool, "log": nbgrader's log, "error": a traceback or ""}``."""
    from nbgrader.converters.base import NbGraderException

    coursedir = app.coursedir
    coursedir.assignment_id, coursedir.student_id = glob.escape(exercise), glob.escape(student)
    buffer = io.StringIO()
    handler = logging.StreamHandler(buffer)
    handler.setFormatter(logging.Formatter("[%(levelname)s] %(message)s"))
    app.log.addHandler(handler)
    success, error = False, ""
    try:
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
        coursedir.assignment_id, coursedir.student_id = "", "*"
        # nbgrader's preprocessors open gradebooks they never close: free their connections now, not at
        # the garbage collector's leisure, so that a worker's hundredth submission holds as few as its first
        gc.collect()
    return {"success": success, "log": buffer.getvalue(), "error": error}


class Worker:
    """A worker process, in a session of its own (Ctrl-C in the terminal reaches this process only)."""

    def __init__(self, course: Course, env: dict, log_folder: Path, number: int):
        self.log_path = log_folder / f"worker-{number}.log"
        command = [sys.executable, "-m", "seqlab.grading.class_grading", json.dumps(course.nbgrader_args)]
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                command,
                cwd=course.root,
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                start_new_session=True,
            )
        os.set_blocking(self.process.stdout.fileno(), False)
        self.pending = b""
        self.job = None  # (submission, why, digests, started)
        self.ready = False

    def send(self, job) -> None:
        submission = job[0]
        self.job = (*job, time.monotonic())
        line = json.dumps({"exercise": submission.exercise, "student": submission.student}) + "\n"
        try:
            self.process.stdin.write(line.encode())
            self.process.stdin.flush()
        except BrokenPipeError:  # it has exited: its end of output says so, and the job fails
            pass

    def replies(self):
        """The complete lines the worker wrote so far, parsed; ``None`` at the end (it exited)."""
        try:
            chunk = self.process.stdout.read()
        except OSError:
            chunk = b""
        if chunk is None:  # nothing to read yet
            return []
        if chunk == b"":
            return None
        self.pending += chunk
        *lines, self.pending = self.pending.split(b"\n")
        return [json.loads(line) for line in lines if line.strip()]

    def log_tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def signal(self, signum) -> None:
        try:
            os.killpg(self.process.pid, signum)
        except ProcessLookupError:
            pass

    def close(self) -> None:
        for stream in (self.process.stdin, self.process.stdout):
            try:
                stream.close()
            except OSError:
                pass

    def finish(self, grace: float = STOP_GRACE) -> None:
        """No more work: its input closed, it exits; waited for (or killed after ``grace`` seconds)."""
        self.close()
        try:
            self.process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            self.signal(signal.SIGKILL)
            self.process.wait()


def _stop_all(workers: list, grace: float = STOP_GRACE) -> None:
    """Ctrl-C to every worker, as to an ``nbgrader autograde`` in a terminal; whatever still runs after
    ``grace`` seconds (or at a second Ctrl-C) is killed."""
    for worker in workers:
        worker.signal(signal.SIGINT)
    deadline = time.monotonic() + grace
    try:
        for worker in workers:
            try:
                worker.process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
    except KeyboardInterrupt:
        pass
    for worker in workers:
        if worker.process.poll() is None:
            worker.signal(signal.SIGKILL)
            worker.process.wait()
        worker.close()


# ---------------------------------------------------------------------------------------------------
# Grading the class


class ClassGrading:
    """One run of ``seqlab grade-class``: :meth:`plan`, then :meth:`run`; ``outcomes`` as they come."""

    def __init__(
        self,
        course: Course,
        jobs: int = 1,
        students=(),
        exercises=(),
        force: bool = False,
        timeout: float | None = None,
        progress=print,
    ):
        if jobs < 1:
            raise Refused(f"--jobs must be at least 1, not {jobs}")
        if jobs > 1 and course.sqlite:
            raise Refused(f"--jobs {jobs} with the gradebook {course.shown_url}: {SQLITE_ONE_WORKER}")
        self.course, self.jobs, self.force, self.timeout = course, jobs, force, timeout
        self.students, self.exercises = list(students), list(exercises)
        self.progress = progress or (lambda _: None)
        self.outcomes = {}  # {(exercise, student): Outcome}
        self.queue = deque()  # (submission, why, digests) to grade
        self.seconds = 0.0  # wall time of run()
        self.stopped = None  # "interrupted" or "stopped" when run() was cut short

    # -- planning ------------------------------------------------------------------------------------

    def plan(self) -> None:
        """Find the submissions and decide which to grade; the gradebook gets the students it lacks (once,
        here, so that no two workers create one at the same time) and the records' table."""
        from nbgrader.api import Gradebook, MissingEntry

        course = self.course
        submissions = find_submissions(course, self.students, self.exercises)
        if not submissions:
            wanted = " ".join(
                ([f"of student {', '.join(self.students)}"] if self.students else [])
                + ([f"for exercise {', '.join(self.exercises)}"] if self.exercises else [])
            )
            where = course.coursedir.format_path(course.coursedir.submitted_directory, "STUDENT", "EXERCISE")
            if self.students or self.exercises:
                raise Refused(f"no submission {wanted} in {where}")
            self.progress(f"Nothing to grade: no submission in {where}.")
            return
        excluded = set(filter(None, course.coursedir.student_id_exclude.split(",")))
        Gradebook(course.db_url).close()  # nbgrader's preprocessors use its default course: made here, once
        with Gradebook(course.db_url, course_id=course.course_id) as gb:
            exercises = {a.name: exercise_digest(gb, a.name) for a in gb.assignments}
            known = {s.id for s in gb.students}
            if course.create_student:
                for student in sorted({s.student for s in submissions} - known - excluded):
                    gb.update_or_create_student(student)
            graded = set()
            for s in submissions:
                try:
                    gb.find_submission(s.exercise, s.student)
                    graded.add((s.exercise, s.student))
                except MissingEntry:
                    pass
        records = Records(course.db_url, course.course_id)
        try:
            recorded = records.all()
        finally:
            records.close()
        for s in submissions:
            key = (s.exercise, s.student)
            if s.student in excluded:
                self.outcomes[key] = Outcome(
                    s.student, s.exercise, "excluded", reason="CourseDirectory.student_id_exclude"
                )
                continue
            if s.exercise not in exercises:
                self.outcomes[key] = Outcome(
                    s.student,
                    s.exercise,
                    "failed",
                    reason=f"no exercise {s.exercise!r} in the gradebook: run nbgrader generate_assignment "
                    f"{s.exercise} (make release)",
                )
                continue
            try:
                intake.check_names(s.student, s.exercise)
                intake.check_folder(s.folder)
                found = intake.inspect(s.folder, tuple(course.coursedir.ignore))
                intake.leave_out_shadowed(found, f"{s.exercise}.ipynb", intake.the_notebook(found, s.exercise))
                digests = (submission_digest(s.folder, tuple(course.coursedir.ignore)), exercises[s.exercise])
            except (intake.SubmissionRefused, OSError) as refused:  # one student's folder never stops the class
                kind = "refused" if isinstance(refused, intake.SubmissionRefused) else "unreadable"
                why = f"{kind}: {refused}"
                self.outcomes[key] = Outcome(ascii(s.student)[1:-1], s.exercise, "failed", reason=why)
                continue
            notes = found.notes()
            why = self._why(s, digests, recorded.get(key), key in graded)
            if why is None:
                self.outcomes[key] = Outcome(s.student, s.exercise, "unchanged", notes=notes)
            else:
                self.queue.append((s, why, digests))
                self.outcomes[key] = Outcome(s.student, s.exercise, "not started", why=why, notes=notes)
        self._fill_unchanged_scores()

    def _why(self, s: Submission, digests: tuple, recorded, in_gradebook: bool) -> str | None:
        """Why ``s`` must be graded, or ``None`` when it is graded already, as it is now."""
        if self.force:
            return "forced"
        if recorded is None:
            return "new"
        if recorded[0] != digests[0]:
            return "changed"
        if recorded[1] != digests[1]:
            return "exercise changed"
        if not in_gradebook:
            return "not in the gradebook"
        autograded = self.course.folder(self.course.coursedir.autograded_directory, s.student, s.exercise)
        if not autograded.is_dir() or not any(autograded.glob("*.ipynb")):  # graded under the exercise's name
            return "autograded notebook missing"
        return None

    def _fill_unchanged_scores(self) -> None:
        unchanged = [o for o in self.outcomes.values() if o.status == "unchanged"]
        if unchanged:
            self._read_scores(unchanged)

    def _read_scores(self, outcomes) -> None:
        from nbgrader.api import Gradebook, MissingEntry

        with Gradebook(self.course.db_url, course_id=self.course.course_id) as gb:
            for o in outcomes:
                try:
                    submission = gb.find_submission(o.exercise, o.student)
                except MissingEntry:
                    continue
                o.score, o.max_score = float(submission.score), float(submission.max_score)

    # -- running -------------------------------------------------------------------------------------

    def _environment(self) -> dict:
        bin_dir = str(Path(sys.executable).parent)  # nbgrader runs `alembic` as a program
        env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""), PYTHONDONTWRITEBYTECODE="1")
        # torch's threads: the cores shared among the workers, unless the instructor chose
        env.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // self.jobs)))
        return env

    def run(self) -> None:
        """Grade what :meth:`plan` queued with ``jobs`` workers. On Ctrl-C (KeyboardInterrupt, or
        :class:`Stopped` for SIGTERM) or any other exception, the workers are stopped first (the submissions
        they were grading are marked interrupted), then the exception is raised again."""
        total = len(self.queue)
        if not total:
            if self.outcomes:
                self.progress("Nothing to grade: every submission is graded as it is now (--force grades it again).")
            return
        started = time.monotonic()
        wanted = min(self.jobs, total)
        self.progress(
            f"Grading {total} submission{'s' * (total != 1)} with {wanted} worker{'s' * (wanted != 1)}, "
            f"gradebook {self.course.shown_url}"
        )
        env = self._environment()
        records = Records(self.course.db_url, self.course.course_id)
        selector = selectors.DefaultSelector()
        workers, done, number = [], 0, 0

        def finish(worker, reply):
            nonlocal done
            done += 1
            self._finish(worker.job, reply, records, f"[{done:>{len(str(total))}}/{total}]", workers)
            worker.job = None

        def drop(worker):
            selector.unregister(worker.process.stdout)
            workers.remove(worker)

        with tempfile.TemporaryDirectory(prefix="seqlab-grade-class-") as logs:
            try:
                while self.queue or any(w.job for w in workers):
                    while len(workers) < min(wanted, len(self.queue) + sum(1 for w in workers if w.job)):
                        number += 1
                        worker = Worker(self.course, env, Path(logs), number)
                        workers.append(worker)
                        selector.register(worker.process.stdout, selectors.EVENT_READ, worker)
                    for worker in workers:
                        if worker.ready and worker.job is None and self.queue:
                            submission, why, digests = self.queue.popleft()
                            records.forget(submission.exercise, submission.student)  # until it is graded again
                            self.outcomes[submission.exercise, submission.student].status = "running"
                            worker.send((submission, why, digests))
                    for key, _ in selector.select(timeout=1.0):
                        worker = key.data
                        replies = worker.replies()
                        if replies is None:  # the worker exited
                            drop(worker)
                            worker.process.wait()
                            worker.close()
                            if worker.job is None and not worker.ready:
                                raise RuntimeError(f"a grading worker failed to start:\n{worker.log_tail()}")
                            if worker.job is not None:
                                died = f"its grading process died (exit status {worker.process.returncode})"
                                finish(worker, {"success": False, "log": worker.log_tail(), "died": died})
                            continue
                        for reply in replies:
                            if "ready" in reply:
                                worker.ready = True
                            else:
                                finish(worker, reply)
                    if self.timeout:
                        for worker in [w for w in workers if w.job and time.monotonic() - w.job[3] > self.timeout]:
                            drop(worker)
                            _stop_all([worker])
                            died = f"took longer than {self.timeout:g} s and was stopped"
                            finish(worker, {"success": False, "log": worker.log_tail(), "died": died})
                while workers:  # done: each worker exits when its input ends
                    worker = workers[0]
                    drop(worker)
                    worker.finish()
            except BaseException as stop:
                if isinstance(stop, KeyboardInterrupt):
                    self.stopped = "stopped (SIGTERM)" if isinstance(stop, Stopped) else "interrupted"
                    self.progress(
                        f"\n{self.stopped}: stopping the workers; the submissions being graded are cancelled "
                        "(the next run grades them)"
                    )
                running = [w for w in workers if w.job]
                _stop_all(workers)
                for worker in running:
                    submission = worker.job[0]
                    outcome = self.outcomes[submission.exercise, submission.student]
                    outcome.status, outcome.seconds = "interrupted", time.monotonic() - worker.job[3]
                raise
            finally:
                selector.close()
                for worker in workers:
                    worker.close()
                records.close()
                self.seconds = time.monotonic() - started

    def _finish(self, job, reply: dict, records: Records, counter: str, workers) -> None:
        submission, why, digests, started = job
        outcome = self.outcomes[submission.exercise, submission.student]
        outcome.seconds = time.monotonic() - started
        autograded = self.course.folder(
            self.course.coursedir.autograded_directory, submission.student, submission.exercise
        )
        if reply.get("success"):
            self._read_scores([outcome])
        if reply.get("success") and outcome.score is not None and autograded.is_dir():
            outcome.status = "graded"
            records.remember(submission.exercise, submission.student, digests, outcome.seconds)
            result = f"{format_points(outcome.score)}/{format_points(outcome.max_score)}"
        else:
            outcome.status = "failed"
            outcome.reason = reply.get("died") or (
                "nbgrader finished but wrote no grade"
                if reply.get("success")
                else failure_reason(reply.get("log", ""), reply.get("error", ""))
            )
            outcome.log = "\n".join(filter(None, [reply.get("log", ""), reply.get("error", "")]))
            result = outcome.reason
        running = sum(1 for w in workers if w.job) - 1
        self.progress(
            f"{counter} {outcome.status} {submission.student} {submission.exercise} ({why}): {result}, "
            f"{outcome.seconds:.1f} s [{running} running, {len(self.queue)} waiting]"
        )

    # -- the end -------------------------------------------------------------------------------------

    def counts(self) -> dict:
        counts = {}
        for outcome in self.outcomes.values():
            counts[outcome.status] = counts.get(outcome.status, 0) + 1
        return counts

    def report(self) -> dict:
        """What a ``--json`` file holds."""
        return {
            "gradebook": self.course.shown_url,
            "jobs": self.jobs,
            "seconds": round(self.seconds, 2),
            "stopped": self.stopped,
            "counts": self.counts(),
            "submissions": [
                {k: v for k, v in asdict(o).items() if k != "log"} for _, o in sorted(self.outcomes.items())
            ],
        }


def failure_reason(log: str, error: str = "") -> str:
    """One line that says why nbgrader failed: the exception its log (or ``error``) reports, else its first
    error of its own."""
    lines = "\n".join([log, error]).splitlines()
    reason = None
    for i, line in enumerate(lines):  # the last traceback's exception: its first line that is not indented
        if line.endswith("Traceback (most recent call last):"):
            reason = next((after for after in lines[i + 1 :] if after and not after[0].isspace()), reason)
    if reason is None:
        generic = ("There was an error processing", "Please see the")
        errors = [line.removeprefix("[ERROR] ") for line in lines if line.startswith("[ERROR] ")]
        reason = next((e for e in errors if not e.startswith(generic)), None)
    reason = (reason or "nbgrader failed (the end of its log is below the table)").strip()
    return reason if len(reason) <= 300 else reason[:297] + "..."


STATUSES = ["graded", "failed", "interrupted", "running", "not started", "excluded", "unchanged"]


def format_summary(run: ClassGrading, verbose: bool = False) -> str:
    """The table at the end: a row for each submission graded, failed, cut short or excluded (and, with
    ``verbose``, for each one skipped as unchanged); the counts; the end of nbgrader's log of each failure."""
    shown = [o for o in run.outcomes.values() if verbose or o.status != "unchanged"]
    shown.sort(key=lambda o: (STATUSES.index(o.status), o.student, o.exercise))
    rows = []
    for o in shown:
        score = "-" if o.score is None else f"{format_points(o.score)}/{format_points(o.max_score)}"
        seconds = "-" if o.seconds is None else f"{o.seconds:.1f}"
        note = "; ".join(filter(None, [o.reason or o.why, *o.notes]))
        rows.append([o.student, o.exercise, o.status, score, seconds, note])
    lines = []
    if rows:
        rows.insert(0, ["student", "exercise", "result", "score", "seconds", "why graded / why it failed"])
        widths = [max(len(r[i]) for r in rows) for i in range(5)]
        rows.insert(1, ["-" * w for w in widths] + ["-" * len(rows[0][5])])
        for r in rows:
            cells = [c.rjust(w) if i in (3, 4) else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))]
            lines.append("  ".join(cells + [r[5]]).rstrip())
        lines.append("")
    counts = run.counts()
    graded = counts.get("graded", 0)
    rate = f" ({graded / run.seconds * 60:.1f} a minute)" if graded and run.seconds else ""
    said = [f"{graded} graded{rate}", f"{counts.get('unchanged', 0)} skipped as unchanged"]
    said += [f"{counts.get('failed', 0)} failed"] + [f"{counts[s]} {s}" for s in STATUSES[2:-1] if counts.get(s)]
    total = sum(counts.values())
    workers = f"{run.jobs} worker{'s' * (run.jobs != 1)}"
    lines.append(f"{total} submission{'s' * (total != 1)}: {', '.join(said)}; {run.seconds:.0f} s with {workers}.")
    failed = sorted(
        (o for o in run.outcomes.values() if o.status == "failed" and o.log), key=lambda o: (o.student, o.exercise)
    )
    for o in failed:
        tail = "\n".join("    " + line for line in o.log.strip().splitlines()[-20:])
        lines.append(f"\n{o.student} {o.exercise} failed: {o.reason}\n  the end of nbgrader's log:\n{tail}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(_worker_main(sys.argv[1:]))
