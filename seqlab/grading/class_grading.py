"""Grade a whole class at once: ``seqlab grade-class`` (see :mod:`seqlab.grading.cli`), on Dask.

Every submission in nbgrader's ``submitted/<student>/<exercise>/`` (one student, one exercise) is one
Dask task (:func:`seqlab.grading.cluster.grade_submission`), graded in a worker by nbgrader's own
autograde for that student and exercise, as ``nbgrader autograde EXERCISE --student ID --force`` would
grade it: the course's configuration, its preprocessors, every notebook's kernels in their own sandbox,
the grades in the gradebook that ``c.CourseDirectory.db_url`` names, the notebook in ``autograded/``.
By default the command starts a local cluster of ``--jobs N`` worker processes on this machine (one
thread each: a worker grades one submission at a time); ``--scheduler ADDRESS`` uses a running cluster
instead (``dask scheduler`` and ``dask worker``, dask-jobqueue, dask-kubernetes; the README says how).
The course folder is on storage that every worker sees, and every worker checks that it sees the same
course and that its environment grades the release and the solution as it must before it grades a
student (:mod:`seqlab.grading.cluster`).

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
points, what autograde grades with). The task writes it, after nbgrader's grades. A later run grades a
submission again only when one of them changed, its autograded notebook is gone, the gradebook has no
grade for it, or it was never graded here (a failure records nothing: it is tried again). ``--student``
and ``--exercise`` narrow the class; ``--force`` grades what is selected whether or not it changed.

**Whatever fails, each submission is graded once and recorded once.** A worker killed while it grades
loses its task to another worker (Dask's own rescheduling: the killed worker's sandboxed kernels die with
it, and the next attempt removes what it half wrote); a grading whose course cells raised is retried
(``retries=``); a submission that runs past ``--timeout`` is stopped there and reported, not retried; a
worker that never comes back, or a lost scheduler, ends the run with what was graded and what was not
(the next run grades the rest). A failure of one submission never stops the others. Ctrl-C (or SIGTERM)
cancels the futures and stops the gradings under way: the local cluster is closed (its workers, their
kernels with them), or, on a running cluster, the workers drop this run's plugin (each run registers its
own), which stops their grading processes; what they were grading is reported as interrupted and graded
by the next run.
"""

from __future__ import annotations

import glob
import hashlib
import json
import logging
import os
import re
import shutil
import signal
import sys
import threading
import time
import uuid
from collections import deque
from dataclasses import asdict, dataclass, field
from pathlib import Path

from seqlab.grading import intake
from seqlab.grading.autograde import Refused, Stopped, format_points
from seqlab.grading.cluster import (
    GRADED_TABLE,
    PLUGIN,
    BrokenGrading,
    GradingWorker,
    Records,
    course_fingerprint,
    grade_submission,
    nbgrader_autograde_app,
)

__all__ = ["GRADED_TABLE", "ClassGrading", "Course", "Outcome", "Submission"]
__all__ += ["format_summary", "open_course", "submission_digest"]

# A grading whose course cells raised (the environment, not the student) is tried this many times more.
RETRIES = 2
# Seconds without a scheduler, or without a worker, after which the run ends with what it has graded.
LOST_AFTER = 15
# Seconds the local cluster's workers get to stop when the run is interrupted.
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
    worker: str = ""  # the Dask worker that graded it (its address)


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


def open_course(root, nbgrader_args=()) -> Course:
    """The course in ``root``, configured as nbgrader sees it (nbgrader_config.py, ``nbgrader_args``)."""
    root = Path(root).resolve()
    if not root.is_dir():
        raise Refused(f"{root} is not a folder")
    # nbgrader runs `alembic` as a program when it creates a gradebook: the environment's bin/ first
    bin_dir = str(Path(sys.executable).parent)
    if bin_dir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")
    app = nbgrader_autograde_app(root, nbgrader_args)
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
        scheduler: str | None = None,
        dashboard: bool = False,
        bar: bool | None = None,
    ):
        if jobs < 1:
            raise Refused(f"--jobs must be at least 1, not {jobs}")
        if jobs > 1 and course.sqlite and scheduler is None:
            raise Refused(f"--jobs {jobs} with the gradebook {course.shown_url}: {SQLITE_ONE_WORKER}")
        self.course, self.jobs, self.force, self.timeout = course, jobs, force, timeout
        self.scheduler, self.dashboard, self.bar = scheduler, dashboard, bar
        self.students, self.exercises = list(students), list(exercises)
        self.progress = progress or (lambda _: None)
        self.outcomes = {}  # {(exercise, student): Outcome}
        self.queue = deque()  # (submission, why, digests) to grade
        self.seconds = 0.0  # wall time of run()
        self.stopped = None  # "interrupted" or "stopped" when run() was cut short
        self.lost = None  # why the cluster was lost (the scheduler, every worker), when it was
        self.refused = {}  # {worker address: why it grades nothing}
        self.workers = jobs  # how many workers graded (a running cluster's, counted when the run starts)
        self.plugin = f"{PLUGIN}-{uuid.uuid4().hex[:12]}"  # this run's worker plugin
        self.allowed = {}  # {future: the workers it may run on} for a job given back by a refusing worker

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

    # -- running -------------------------------------------------------------------------------------

    def _connect(self, wanted: int):
        """``(client, cluster)``: a client of the running cluster at ``--scheduler`` (cluster ``None``), or
        of a local cluster of ``wanted`` worker processes, one thread each, started here."""
        import dask
        from distributed import Client, LocalCluster

        # The environment's bin/ first on every worker's PATH (nbgrader runs `alembic` as a program), and a
        # worker takes one task at a time from the scheduler: a task waiting behind a grading on a worker
        # that is killed or interrupted would be lost with it for nothing.
        # A worker starts its grading process with multiprocessing, which a daemonic process may not: the
        # local cluster's nannies start their workers as ordinary processes.
        dask.config.set({"distributed.scheduler.worker-saturation": 1.0, "distributed.worker.daemon": False})
        if self.scheduler is not None:
            try:
                client = Client(self.scheduler, timeout=LOST_AFTER)
            except OSError as error:  # no scheduler there (distributed raises OSError subclasses)
                raise Refused(f"no Dask scheduler answers at {self.scheduler}: {error}") from None
            try:
                client.wait_for_workers(1, timeout=LOST_AFTER * 10)
            except TimeoutError:
                client.close()
                raise Refused(
                    f"the Dask scheduler at {self.scheduler} has had no worker for {LOST_AFTER * 10} s"
                ) from None
            return client, None
        cluster = LocalCluster(
            n_workers=wanted,
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0" if self.dashboard else None,
            silence_logs=50,  # CRITICAL only: a lost worker is reported in the table, not as a traceback
        )
        return Client(cluster), cluster

    def _register(self, client) -> None:
        coursedir = self.course.coursedir
        source, release = coursedir.source_directory, coursedir.release_directory
        fingerprint = course_fingerprint(self.course.root, source, release)
        course = self.course
        plugin = GradingWorker(
            self.plugin,
            str(course.root),
            course.nbgrader_args,
            fingerprint,
            source,
            release,
            course.db_url,
            course.course_id,
        )
        client.register_plugin(plugin, name=self.plugin)

    def _submit(self, client, job, workers=None):
        submission = job[0]
        task = {
            "exercise": submission.exercise,
            "student": submission.student,
            "digests": list(job[2]),
            "db_url": self.course.db_url,
            "course_id": self.course.course_id,
            "timeout": self.timeout,
            "plugin": self.plugin,
            "autograded": str(
                self.course.folder(self.course.coursedir.autograded_directory, submission.student, submission.exercise)
            ),
        }
        key = f"grade-{submission.exercise}-{submission.student}-{uuid.uuid4().hex[:8]}"
        future = client.submit(grade_submission, task, key=key, pure=False, retries=RETRIES, workers=workers)
        if workers is not None:
            self.allowed[future] = set(workers)
        return future

    def run(self) -> None:
        """Grade what :meth:`plan` queued, one Dask task per submission. On Ctrl-C (KeyboardInterrupt, or
        :class:`Stopped` for SIGTERM) or any other exception, the futures are cancelled and the gradings
        under way stopped first (those submissions are marked interrupted), then the exception is raised
        again. A lost scheduler (or no worker left) ends the run; ``lost`` says why."""
        total = len(self.queue)
        if not total:
            if self.outcomes:
                self.progress("Nothing to grade: every submission is graded as it is now (--force grades it again).")
            return
        started = time.monotonic()
        wanted = min(self.jobs, total)
        client = cluster = bar = None
        handlers = {}  # the signal handlers set aside while the run is stopped
        # distributed logs its failed reconnections with tracebacks: the run's own lines say what was lost
        client_log = logging.getLogger("distributed.client")
        level, client_log.level = client_log.level, logging.CRITICAL
        futures = {}  # {future: (submission, why, digests)}
        try:
            client, cluster = self._connect(wanted)
            self.workers = len(client.scheduler_info()["workers"]) if cluster is None else wanted
            if cluster is None and self.course.sqlite and self.workers > 1:
                raise Refused(
                    f"the cluster at {self.scheduler} has {self.workers} workers and the gradebook is "
                    f"{self.course.shown_url}: {SQLITE_ONE_WORKER}"
                )
            where = "" if cluster is None else ""
            if cluster is None:
                where = f" on the Dask cluster at {self.scheduler}"
            workers = f"{self.workers} worker{'s' * (self.workers != 1)}"
            self.progress(
                f"Grading {total} submission{'s' * (total != 1)} with {workers}{where}, "
                f"gradebook {self.course.shown_url}"
            )
            if self.dashboard:
                self.progress(f"Dask's dashboard: {client.dashboard_link}")
            self._register(client)
            self._forget_queued()
            for job in self.queue:
                futures[self._submit(client, job)] = job
                self.outcomes[job[0].exercise, job[0].student].status = "running"
            self.queue.clear()
            bar = _progress_bar(total, self.bar)
            self._collect(client, futures, total, bar, started)
        except BaseException as stop:
            if threading.current_thread() is threading.main_thread():  # a second Ctrl-C or SIGTERM must not
                # cut the clean-up short; the handlers are put back at the end
                handlers = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGTERM, signal.SIGINT)}
            if isinstance(stop, KeyboardInterrupt):
                self.stopped = "stopped (SIGTERM)" if isinstance(stop, Stopped) else "interrupted"
                self.progress(
                    f"\n{self.stopped}: stopping the workers; the submissions being graded are cancelled "
                    "(the next run grades them)"
                )
            if client is not None and futures:
                self._stop(client, cluster, futures, "interrupted" if self.stopped else "not started")
            raise
        finally:
            if bar is not None:
                bar.close()
            self._close(client, cluster)
            client_log.setLevel(level)
            for sig, handler in handlers.items():
                signal.signal(sig, handler)
            self.seconds = time.monotonic() - started

    def _collect(self, client, futures: dict, total: int, bar, started: float) -> None:
        """Wait for the futures and finish each submission as its future does; resubmit what a refusing
        worker gave back, what the scheduler cancelled (its connection to the client lost for a moment), and
        what waits for workers that are all gone; end the run when the scheduler or every worker is gone
        for ``LOST_AFTER`` s."""
        done = 0
        alone_since = None  # since when there has been no scheduler, or no worker
        checked = 0.0
        while futures:
            finished = [f for f in futures if f.done()]
            for future in finished:
                job = futures.pop(future)
                self.allowed.pop(future, None)
                reply = _reply(future)
                if reply is None:  # cancelled by the scheduler: submitted again once it answers
                    if client.status == "running":
                        futures[self._submit(client, job)] = job
                    else:
                        futures[future] = job
                    continue
                if "refused" in reply:
                    resubmitted = self._refused(client, job, reply)
                    if resubmitted is not None:
                        futures[resubmitted] = job
                        continue
                done += 1
                self._finish(job, reply, f"[{done:>{len(str(total))}}/{total}]", len(futures))
                if bar is not None:
                    bar.update(1)
                    bar.set_postfix_str(self._tally(len(futures), started), refresh=False)
            if time.monotonic() - checked > 2:
                checked = time.monotonic()
                why = _alone(client, self.refused)
                alone_since = None if why is None else (alone_since or time.monotonic())
                if why is not None and time.monotonic() - alone_since > LOST_AFTER:
                    self.lost = why
                    self.progress(f"\n{why}: the run ends with what was graded (the next run grades the rest)")
                    self._stop(client, None, futures, "lost")
                    return
                if why is None:
                    self._unstrand(client, futures)
            time.sleep(0.2)

    def _unstrand(self, client, futures: dict) -> None:
        """A job given back by a refusing worker may run only on the others: when they are all gone, it goes
        to the workers there are now that have not refused (or, with none, waits for the run's end)."""
        present = set(client.scheduler_info()["workers"])
        for future, allowed in list(self.allowed.items()):
            if future in futures and not future.done() and not allowed & present:
                others = sorted(present - set(self.refused))
                if others:
                    job = futures.pop(future)
                    self.allowed.pop(future)
                    future.cancel()
                    futures[self._submit(client, job, workers=others)] = job

    def _tally(self, left: int, started: float) -> str:
        counts = self.counts()
        graded = counts.get("graded", 0)
        rate = graded / max(time.monotonic() - started, 1e-9) * 60
        return f"graded {graded}, failed {counts.get('failed', 0)}, left {left}, {rate:.1f} a minute"

    def _refused(self, client, job, reply: dict):
        """A worker gave a submission back (it sees another course, or its environment is broken): say why,
        once, and send the submission to the workers that have not refused; ``None`` when there is none."""
        worker, why = reply["worker"], reply["refused"]
        if worker not in self.refused:
            self.refused[worker] = why
            self.progress(f"worker {worker} refuses to grade: {why}")
        others = sorted(set(client.scheduler_info()["workers"]) - set(self.refused))
        if not others:
            return None
        return self._submit(client, job, workers=others)

    def _stop(self, client, cluster, futures: dict, status: str) -> None:
        """Cancel the futures; stop the gradings under way (the local cluster closed; on a running cluster,
        the workers drop this run's plugin, which stops their grading processes); each submission then is
        graded (its record was written in time), or ``status``, with its half-written autograded folder
        removed where its worker is gone (on a running cluster the next attempt removes it)."""
        if status != "lost":  # else there is no scheduler to ask, nor to cancel with
            try:
                client.cancel(list(futures))
            except Exception:  # the scheduler went meanwhile
                pass
        if cluster is not None:
            cluster.close(timeout=STOP_GRACE)
        elif status == "interrupted":
            try:
                client.unregister_worker_plugin(self.plugin)
            except Exception:  # the scheduler went meanwhile
                pass
        recorded = self._records()
        for submission, _, digests in futures.values():
            outcome = self.outcomes[submission.exercise, submission.student]
            if recorded.get((submission.exercise, submission.student)) == tuple(digests):
                outcome.status = "graded"  # it finished before it could be stopped
                self._read_scores([outcome])
                continue
            outcome.status = status
            if cluster is not None:  # its workers are gone: what they half wrote goes
                autograded = self.course.folder(
                    self.course.coursedir.autograded_directory, submission.student, submission.exercise
                )
                shutil.rmtree(autograded, ignore_errors=True)
        if status == "lost":
            for outcome in self.outcomes.values():
                if outcome.status == "lost":
                    outcome.reason = self.lost

    def _forget_queued(self) -> None:
        """The records of what this run grades go now, not when a worker takes each up: a submission the
        run never got to (interrupted, lost) is not taken for graded by its record of an earlier grading."""
        records = Records(self.course.db_url, self.course.course_id)
        try:
            records.forget_all((submission.exercise, submission.student) for submission, _, _ in self.queue)
        finally:
            records.close()

    def _records(self) -> dict:
        try:
            records = Records(self.course.db_url, self.course.course_id)
        except Exception:
            return {}
        try:
            return records.all()
        finally:
            records.close()

    def _close(self, client, cluster) -> None:
        if client is not None and cluster is None:  # a running cluster: its workers drop this run's plugin
            try:  # (and end its grading processes)
                client.unregister_worker_plugin(self.plugin)
            except Exception:  # the scheduler is gone, or the plugin never got there
                pass
        for thing in (client, cluster):
            if thing is not None:
                try:
                    thing.close(timeout=STOP_GRACE)
                except Exception:  # closing what is already gone
                    pass

    def _finish(self, job, reply: dict, counter: str, left: int) -> None:
        submission, why, _ = job
        outcome = self.outcomes[submission.exercise, submission.student]
        outcome.seconds, outcome.worker = reply.get("seconds"), reply.get("worker", "")
        if reply.get("success"):
            outcome.status = "graded"
            outcome.score, outcome.max_score = reply["score"], reply["max_score"]
            result = f"{format_points(outcome.score)}/{format_points(outcome.max_score)}"
        else:
            outcome.status = "failed"
            outcome.reason = (
                reply.get("late")
                or reply.get("died")
                or reply.get("refused")
                or (failure_reason(reply.get("log", ""), reply.get("error", "")))
            )
            outcome.log = "\n".join(filter(None, [reply.get("log", ""), reply.get("error", "")]))
            result = outcome.reason
        seconds = "" if outcome.seconds is None else f", {outcome.seconds:.1f} s"
        self.progress(
            f"{counter} {outcome.status} {submission.student} {submission.exercise} ({why}): {result}{seconds} "
            f"[{left} left]"
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
            "scheduler": self.scheduler,
            "workers": self.workers,
            "refused": self.refused,
            "lost": self.lost,
            "seconds": round(self.seconds, 2),
            "stopped": self.stopped,
            "counts": self.counts(),
            "submissions": [
                {k: v for k, v in asdict(o).items() if k != "log"} for _, o in sorted(self.outcomes.items())
            ],
        }


def _reply(future) -> dict | None:
    """What a finished future says, as a reply of :func:`seqlab.grading.cluster.grade_submission`: its
    result; a failure for a task that raised (after Dask's retries) or whose workers kept dying;
    ``None`` for a future cancelled without us (the scheduler lost it)."""
    from distributed import KilledWorker

    if future.status == "finished":
        return future.result()
    if future.status == "cancelled":
        return None
    error = future.exception()
    if isinstance(error, KilledWorker):
        return {"success": False, "died": f"every worker that graded it died ({error})"}
    if isinstance(error, BrokenGrading):
        return {"success": False, "died": f"{error} (tried {RETRIES + 1} times)"}
    return {"success": False, "error": f"{type(error).__name__}: {error}"}


def _alone(client, refused=()) -> str | None:
    """Why the run cannot go on (no scheduler, no worker, or only workers that refuse), or ``None``."""
    if client.status != "running":
        return f"the Dask scheduler was lost (the client is {client.status})"
    try:
        workers = set(client.scheduler_info()["workers"])
    except Exception as error:
        return f"the Dask scheduler was lost ({type(error).__name__})"
    if not workers:
        return "no Dask worker is left"
    if not workers - set(refused):
        return "every Dask worker left refuses to grade"
    return None


def _progress_bar(total: int, shown: bool | None):
    """tqdm's bar of the submissions graded, on standard error; ``shown=None``: where it is a terminal and
    SEQLAB_PROGRESS is not 0."""
    from tqdm.auto import tqdm

    if shown is None:
        shown = sys.stderr.isatty() and os.environ.get("SEQLAB_PROGRESS", "1") != "0"
    if not shown:
        return None
    return tqdm(total=total, unit="submission", file=sys.stderr, dynamic_ncols=True)


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


STATUSES = ["graded", "failed", "interrupted", "lost", "running", "not started", "excluded", "unchanged"]


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
    workers = f"{run.workers} worker{'s' * (run.workers != 1)}"
    lines.append(f"{total} submission{'s' * (total != 1)}: {', '.join(said)}; {run.seconds:.0f} s with {workers}.")
    for worker, why in sorted(run.refused.items()):
        lines.append(f"worker {worker} refused to grade: {why}")
    if run.lost:
        lines.append(f"{run.lost}: the submissions marked lost were not graded; run the command again for them.")
    failed = sorted(
        (o for o in run.outcomes.values() if o.status == "failed" and o.log), key=lambda o: (o.student, o.exercise)
    )
    for o in failed:
        tail = "\n".join("    " + line for line in o.log.strip().splitlines()[-20:])
        lines.append(f"\n{o.student} {o.exercise} failed: {o.reason}\n  the end of nbgrader's log:\n{tail}")
    return "\n".join(lines)
