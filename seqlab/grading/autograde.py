"""Grade one exercise notebook where it is, with nbgrader, as the instructor's autograder would.

``seqlab grade PATH`` (see :mod:`seqlab.grading.cli`) calls :func:`grade`, which

1. reads the notebook and refuses, with a :class:`Refused` that says why, a file that is not a
   notebook, a corrupt notebook, a notebook of no exercise of this course, and a notebook of another
   exercise than its file or folder name claims (exercises are recognised by nbgrader's cell metadata:
   grade ids and the checksums that the release stamped on its cells);
2. builds a temporary course directory (the course's ``nbgrader_config.py``, a fresh sqlite gradebook)
   whose source is ``solutions/<exercise>/`` when this copy of the course has it, hidden tests
   included, and otherwise the release, whose tests are the visible ones only;
3. runs nbgrader's ``generate_assignment``, ``autograde`` and ``generate_feedback`` there, in a
   grading process (:class:`GradingProcesses`, the standard library's process pool), on a copy of the
   notebook; a folder's notebooks share the processes, each grading one notebook after another;
4. returns a :class:`Report`: the points of every graded cell with the first line of each failure,
   and the feedback HTML, copied next to the notebook as ``<name>.feedback.html`` (except inside
   ``solutions/``, which must hold notebooks only).

Nothing is written anywhere else: not in the course, not next to the notebook (the feedback aside).
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path

# jsonschema, which nbformat imports, builds a grammar for one optional format checker (IRIs, from the
# rfc3987_syntax package) when it is imported: a second per process, for a format that no notebook
# schema uses. Blocking that one import leaves the IRI format unchecked and everything else as it was.
sys.modules.setdefault("rfc3987_syntax", None)

import nbformat  # noqa: E402 (after the block above)

from seqlab.grading import intake, sandbox  # noqa: E402

__all__ = ["EXIT_FAILED", "EXIT_FULL_MARKS", "EXIT_POINTS_MISSING", "EXIT_REFUSED", "Exercise", "GradingFailed"]
__all__ += ["Refused", "Report", "Stopped", "Task", "find_course", "find_exercises", "format_points", "format_report"]
__all__ += ["grade", "identify"]
__all__ += ["GRACE", "LATE", "GradingProcesses", "feedback_path", "read_notebook"]

# `seqlab grade`'s exit statuses.
EXIT_FULL_MARKS = 0
EXIT_POINTS_MISSING = 1
DEFAULT_TOTAL = 300  # seconds for a whole notebook where the course sets no c.SandboxedExecute.total_timeout
EXIT_REFUSED = 2  # not a notebook of this course, corrupt, another exercise, no course found
EXIT_FAILED = 3  # nbgrader itself failed

FEEDBACK_SUFFIX = ".feedback.html"  # <name>.feedback.html next to <name>.ipynb (git ignores it)
STUDENT = "student"  # the student id in the temporary gradebook
NBGRADER_SECONDS = 120  # what nbgrader needs besides the notebook's cells (release, gradebook, feedback)
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


# The words both grading commands use (`seqlab grade` here, `seqlab grade-class` in class_grading.py, which
# imports them): one meaning each.


class Refused(Exception):
    """A grading command cannot do what it was asked (grade this notebook, or this class as asked): the
    message says why and what to do, and nothing was graded."""


class Stopped(KeyboardInterrupt):
    """SIGTERM, handled as Ctrl-C is: the command unwinds, stops what it started and removes what it made."""


def format_points(x: float | None) -> str:
    """Points as the score tables print them: ``3``, ``2.5``; ``-`` for none."""
    return "-" if x is None else f"{x:g}"


class GradingFailed(Exception):
    """nbgrader failed on a notebook it was given; the message ends with the tail of its log."""


# ---------------------------------------------------------------------------------------------------
# The course and its exercises


@dataclass(frozen=True)
class Exercise:
    """One exercise: ``<course>/exercises/<name>/<name>.ipynb`` and ``<course>/solutions/<name>/<name>.ipynb``."""

    name: str
    release: Path | None  # the student version; None if this copy of the course has not released it
    solution: Path | None  # the instructor's source, hidden tests included; None in a student's copy

    @property
    def number(self) -> str:
        """``"ex01"`` for ``ex01_lstm_cell``: what a file or folder name claims an exercise by."""
        return self.name.split("_")[0]


def find_course(start: Path) -> Path | None:
    """The nearest folder at or above ``start`` with ``nbgrader_config.py`` and ``exercises/`` or ``solutions/``."""
    start = start.resolve()
    for folder in [start, *start.parents]:
        if (folder / "nbgrader_config.py").is_file() and any((folder / d).is_dir() for d in ("exercises", "solutions")):
            return folder
    return None


def find_exercises(course: Path) -> dict:
    """``{name: Exercise}`` for every ``exercises/<name>/<name>.ipynb`` and ``solutions/<name>/<name>.ipynb``."""
    names = {p.parent.name for d in ("exercises", "solutions") for p in (course / d).glob("*/*.ipynb")}
    found = {}
    for name in sorted(names):
        release, solution = (course / d / name / f"{name}.ipynb" for d in ("exercises", "solutions"))
        release, solution = (p if p.is_file() else None for p in (release, solution))
        if release or solution:
            found[name] = Exercise(name, release, solution)
    return found


def _course_for(notebook: Path, course: Path | None) -> Path:
    """The course to grade against: ``course`` if given, else found above the notebook, the working
    folder, or the source tree this package was imported from."""
    if course is not None:
        if find_course(course) != course.resolve():
            raise Refused(f"{course} is not a course folder: it needs nbgrader_config.py and exercises/ or solutions/")
        return course.resolve()
    for start in (notebook.parent, Path.cwd(), Path(__file__).resolve().parents[1]):
        found = find_course(start)
        if found is not None:
            return found
    raise Refused("cannot find the course (a folder with nbgrader_config.py and exercises/): pass --course")


# ---------------------------------------------------------------------------------------------------
# Reading and recognising a notebook


def read_notebook(path: Path):
    """The notebook at ``path`` (nbformat 4), or :class:`Refused` if it is not a valid notebook."""
    if not path.exists():
        raise Refused(f"{path}: no such file")
    if path.is_dir():
        raise Refused(f"{path} is a folder: give the path of an exercise notebook (.ipynb)")
    if path.suffix != ".ipynb":
        raise Refused(f"{path} is not a notebook: exercise notebooks are .ipynb files")
    damaged = (
        f"{path} is corrupt: {{}}. If Jupyter still opens it, save it again; otherwise take the last good copy "
        "from .ipynb_checkpoints/ next to it, or start again from the exercise's release in exercises/"
    )
    if path.stat().st_size > intake.MAX_FILE_BYTES:
        raise Refused(damaged.format(f"it has more than {intake.MAX_FILE_BYTES:,} bytes"))
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise Refused(damaged.format("it is not UTF-8 text")) from None
    if not text.strip():
        raise Refused(damaged.format("the file is empty"))
    if intake.json_depth(text) > intake.MAX_JSON_DEPTH:  # json.loads would recurse until RecursionError
        raise Refused(damaged.format(f"its JSON nests more than {intake.MAX_JSON_DEPTH} deep"))
    try:
        data = json.loads(text)
    except RecursionError:
        raise Refused(damaged.format("its JSON nests too deep")) from None
    except json.JSONDecodeError as error:
        where = f"{error.msg}, line {error.lineno}, column {error.colno}"
        raise Refused(damaged.format(f"not valid JSON ({where})")) from None
    if not isinstance(data, dict) or "nbformat" not in data or not ("cells" in data or "worksheets" in data):
        raise Refused(f"{path} is not a notebook: it is JSON, but has no notebook format version or cells")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # nbformat warns about cells without ids, which it then adds
            nb = nbformat.reads(text, as_version=4, capture_validation_error={})
            nbformat.validate(nb)
    except (Exception, RecursionError) as error:  # nbformat raises several kinds (ValidationError, KeyError, ...)
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise Refused(damaged.format(f"it does not follow the notebook format ({first})")) from None
    return nb


def _nbgrader_cells(nb) -> dict:
    """``{grade_id: cell}`` for the cells that carry nbgrader metadata."""
    return {c.metadata.nbgrader.grade_id: c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id")}


def _pristine_release(exercise: Exercise, notebook: Path):
    """The exercise's release as it was given out, or ``None``.

    Students usually work in the release file itself (exercises/<name>/<name>.ipynb), so when that is the
    notebook being graded, the committed version is read from git instead.
    """
    if exercise.release is None:
        return None
    if exercise.release.resolve() != notebook.resolve():
        return nbformat.read(exercise.release, as_version=4)
    try:
        committed = subprocess.run(
            ["git", "show", f"HEAD:./{exercise.release.name}"],
            cwd=exercise.release.parent,
            capture_output=True,
            text=True,
            timeout=30,
        )
        return nbformat.reads(committed.stdout, as_version=4) if committed.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired, ValueError):
        return None


def _fingerprint(exercise: Exercise, notebook: Path) -> dict:
    """``{grade_id: checksum}`` of the exercise's cells as the release has them (a student's copy keeps
    them as they edit); the solution's grade ids with ``None`` checksums when there is no such release."""
    nb = _pristine_release(exercise, notebook)
    if nb is None:
        nb = nbformat.read(exercise.solution or exercise.release, as_version=4)
    return {gid: c.metadata.nbgrader.get("checksum") for gid, c in _nbgrader_cells(nb).items()}


def _matches(cells: dict, fingerprint: dict) -> int:
    """How many of a notebook's nbgrader cells belong to an exercise: same grade id, and the same
    checksum where both have one (the release's checksum stays in a student's copy as they edit)."""
    count = 0
    for gid, c in cells.items():
        if gid in fingerprint:
            theirs, ours = c.metadata.nbgrader.get("checksum"), fingerprint[gid]
            count += theirs is None or ours is None or theirs == ours
    return count


def _claimed(path: Path, exercises: dict) -> str | None:
    """The exercise that the notebook's file name, or else its folder's name, says it is: ``ex01...`` or
    ``ex1...`` claims the course's ``ex01_*``. ``None`` when neither name starts with the number of one
    of the course's exercises: the notebook's cells alone then say which exercise it is."""
    numbers = {int(e.number[2:]): e.name for e in exercises.values() if e.number[2:].isdigit()}
    for name in (path.stem, path.resolve().parent.name):
        m = re.match(r"ex0*(\d+)(?!\d)", name)
        if m and int(m.group(1)) in numbers:
            return numbers[int(m.group(1))]
    return None


def identify(path: Path, nb, exercises: dict) -> str:
    """The name of the exercise that ``nb`` (read from ``path``) is, or :class:`Refused`."""
    names = ", ".join(exercises)
    cells = _nbgrader_cells(nb)
    if not cells:
        raise Refused(f"{path} is not an exercise of this course: it has no nbgrader cells (exercises: {names})")
    counts = {name: _matches(cells, _fingerprint(exercise, path)) for name, exercise in exercises.items()}
    best = max(counts, key=counts.get)
    if counts[best] == 0:
        raise Refused(
            f"{path} is not an exercise of this course: its nbgrader cells ({', '.join(sorted(cells)[:4])}...) "
            f"belong to none of its exercises ({names})"
        )
    claim = _claimed(path, exercises)
    if claim is None or counts.get(claim, 0) == counts[best]:
        return claim or best
    raise Refused(
        f"{path} is named as exercise {claim}, but it is exercise {best} (its cells are {best}'s): "
        f"grade {best}'s notebook under its own name, e.g. exercises/{best}/{best}.ipynb"
    )


# ---------------------------------------------------------------------------------------------------
# Grading in a temporary course


@dataclass
class Task:
    """One graded cell: a test cell (autograded), or an answer nbgrader leaves to a person."""

    grade_id: str
    earned: float | None  # None: a written answer, graded by the instructor, not by the autograder
    possible: float
    failure: str | None = None  # the first line of why points are missing


@dataclass
class Report:
    exercise: str
    notebook: Path
    hidden_tests: bool  # True: the instructor's hidden tests ran too (the course has solutions/)
    tasks: list
    notes: list = field(default_factory=list)  # what else the student should know (cells that raised, ...)
    feedback: Path | None = None
    sandbox: str = ""  # how the notebook ran: "sandboxed with bubblewrap", or why it was not

    @property
    def earned(self) -> float:
        return sum(t.earned for t in self.tasks if t.earned is not None)

    @property
    def possible(self) -> float:
        return sum(t.possible for t in self.tasks if t.earned is not None)

    @property
    def by_instructor(self) -> float:
        """The points of the written answers, which the instructor grades by hand (nbgrader's manually
        graded answer cells): not in ``earned`` or ``possible``."""
        return sum(t.possible for t in self.tasks if t.earned is None)

    @property
    def exit_status(self) -> int:
        return EXIT_FULL_MARKS if self.earned >= self.possible else EXIT_POINTS_MISSING


def grade(
    path, course=None, timeout: int | None = None, log=None, announce=None, processes: "GradingProcesses | None" = None
) -> Report:
    """Autograde the exercise notebook at ``path`` in a temporary course; see the module docstring.

    Args:
        path: the student's notebook.
        course: the course folder; by default the one above ``path``, the working folder, or this package.
        timeout: seconds per cell (default: the course's ``c.Execute.timeout``).
        log: a callable that receives nbgrader's log (for ``--verbose``); by default it is dropped.
        announce: a callable ``(exercise, hidden_tests, unsandboxed)`` told what is graded before grading
            starts; ``unsandboxed`` is ``None``, or why the notebook runs without a sandbox.
        processes: the :class:`GradingProcesses` to grade in (a folder's notebooks share them); by
            default one started for this notebook and ended with it.

    Raises:
        Refused: the notebook cannot be graded (the message says why).
        GradingFailed: nbgrader failed, or grading ran past its time (``timeout`` for each code cell).
    """
    path = Path(path)
    nb = read_notebook(path)
    root = _course_for(path, None if course is None else Path(course))
    exercises = find_exercises(root)
    if not exercises:
        raise Refused(f"the course {root} has no exercises (exercises/<name>/<name>.ipynb)")
    exercise = exercises[identify(path, nb, exercises)]
    source = exercise.solution or exercise.release
    if timeout is not None and timeout < 1:
        raise ValueError(f"timeout must be at least 1 second, got {timeout}")
    config = _course_config(root)
    timeout = timeout or _course_timeout(config)
    # One time limit for the whole notebook, wall clock, however many cells it has: the course's
    # c.SandboxedExecute.total_timeout (seqlab.grading.executor stops the notebook there).
    total = _course_total(config)
    if announce is not None:
        announce(exercise.name, exercise.solution is not None, _unsandboxed(config))
    with tempfile.TemporaryDirectory(prefix="seqlab-grade-") as tmp:
        tmp = Path(tmp)
        shutil.copy(root / "nbgrader_config.py", tmp / "nbgrader_config.py")
        (tmp / "solutions" / exercise.name).mkdir(parents=True)
        shutil.copy(source, tmp / "solutions" / exercise.name / f"{exercise.name}.ipynb")
        if processes is None:
            with GradingProcesses(1) as own:
                result = _run_nbgrader(tmp, exercise.name, path, timeout, total, log, own)
        else:
            result = _run_nbgrader(tmp, exercise.name, path, timeout, total, log, processes)
        graded = nbformat.read(result["autograded"], as_version=4)
        report = Report(exercise.name, path, exercise.solution is not None, _tasks(graded, result["grades"]))
        report.notes = _notes(graded, result)
        report.sandbox = graded.metadata.get("seqlab", {}).get("sandbox", "")
        feedback = feedback_path(path, root)
        if feedback is None:
            report.notes.append(
                "no feedback written: solutions/ holds notebooks only (nbgrader copies the rest to students)"
            )
        else:
            try:
                shutil.copyfile(result["feedback"], feedback)
                report.feedback = feedback
            except OSError as error:
                report.notes.append(f"the feedback could not be written next to the notebook: {error}")
    return report


def _course_config(course: Path):
    """The course's nbgrader configuration (``nbgrader_config.py``)."""
    from traitlets.config.loader import PyFileConfigLoader

    return PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()


def _course_timeout(config) -> int:
    """The course's ``c.Execute.timeout`` (seconds per cell), or nbgrader's 30 when it sets none."""
    timeout = config.Execute.get("timeout", 30)
    return timeout if isinstance(timeout, int) and timeout > 0 else 30


def _course_total(config) -> int:
    """The course's ``c.SandboxedExecute.total_timeout`` (seconds for a whole notebook), or 300 when it sets none."""
    try:
        total = int(config.SandboxedExecute.get("total_timeout", DEFAULT_TOTAL))  # from a command line: a string
    except (TypeError, ValueError):
        return DEFAULT_TOTAL
    return total if total > 0 else DEFAULT_TOTAL


def _unsandboxed(config) -> str | None:
    """Why the notebook will run without a sandbox, or ``None`` when it runs in one."""
    settings = sandbox.Sandbox(config=config)
    if not settings.enabled:
        return "the course's nbgrader_config.py switches it off (c.Sandbox.enabled = False)"
    return settings.reason_unavailable()


def feedback_path(notebook: Path, course: Path) -> Path | None:
    """``<name>.feedback.html`` next to the notebook; ``None`` inside the course's solutions/, where any
    file but a notebook would go out to students with the next release."""
    if (course / "solutions").resolve() in notebook.resolve().parents:
        return None
    return notebook.with_name(notebook.stem + FEEDBACK_SUFFIX)


# The grading processes. nbgrader runs in a process of its own: it changes the working folder, writes to
# file descriptors 1 and 2, and a grading past its time must be stopped with its kernel. The processes
# are the standard library's pool (concurrent.futures), started with the "spawn" method (no copy of a
# caller's threads), and reused: each imports nbgrader once, a second saved on every notebook after its
# first (``seqlab grade FOLDER``; a Dask worker of ``seqlab grade-class``).

LATE = "late"  # what GradingProcesses.run returns for a grading stopped at its time limit
GRACE = 30  # seconds a grading process gets to stop a late grading itself before it is killed


class _TimeUp(BaseException):
    """Raised in a grading process at its time limit; a BaseException, so that it unwinds nbgrader's code
    as Ctrl-C does (nbclient stops the kernel on its way out)."""


class GradingProcesses:
    """``jobs`` grading processes (a ``concurrent.futures.ProcessPoolExecutor``); a context manager.

    :meth:`run` runs a function in one of them under a time limit, at most ``jobs`` at a time (a caller
    beyond that waits its turn here, so that its limit counts from its start): the process stops the
    grading itself at the limit (an alarm that unwinds it like Ctrl-C) and answers :data:`LATE`; a
    process that has not answered ``grace`` seconds later is killed, with the others of its pool (the
    standard pool cannot stop one of its processes), and the next grading gets a new pool. :meth:`stop`
    (Ctrl-C, SIGTERM) stops every grading under way and starts no other. The processes ignore SIGINT, so
    that Ctrl-C in a terminal reaches the caller only, which stops them with SIGTERM: a busy one unwinds
    its grading (its kernel stopped) and ends, an idle one ends at once. A process whose caller is gone
    (killed) ends within a tenth of a second, and its sandboxed kernels with it.
    """

    def __init__(self, jobs: int = 1):
        import multiprocessing

        self.jobs = jobs
        self._context = multiprocessing.get_context("spawn")
        self._pool = None  # (executor, the queue where its processes put their pids)
        self._pids = {}  # {executor: the pids its processes said}
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(jobs)
        self._stopped = False
        self.grace = GRACE  # seconds past a grading's limit before its process is killed

    def __enter__(self):
        return self

    def __exit__(self, kind, error, trace):
        if kind is None:
            self.close()
        else:
            self.stop()

    def run(self, limit: float, function, *args):
        """``function(*args)`` in a grading process, which stops it after ``limit`` seconds: its result, or
        :data:`LATE`. Raises :class:`GradingFailed` when the process died, or when grading was stopped."""
        with self._slots:
            return self._run(limit, function, *args)

    def _run(self, limit: float, function, *args):
        from concurrent.futures import TimeoutError as NoAnswer
        from concurrent.futures.process import BrokenProcessPool

        for attempt in range(2):
            pool = self._current()
            try:
                future = pool[0].submit(_within, limit, function, *args)
                break
            except (BrokenProcessPool, RuntimeError):  # a process died while it waited, or another thread shut
                self._discard(pool)  # the pool down meanwhile: a new pool, once
                if self._stopped:
                    raise GradingFailed("not started: grading is being stopped") from None
                if attempt:
                    raise GradingFailed("the grading processes could not be started") from None
        try:
            return future.result(timeout=limit + self.grace)
        except (KeyboardInterrupt, SystemExit) as error:
            if future.done() and not future.cancelled() and future.exception() is error:
                # the process's own: stopped just as it took the grading
                raise GradingFailed("the grading process was stopped") from None
            self.stop()  # Ctrl-C or SIGTERM in this thread: stop the gradings before the caller unwinds
            raise
        except NoAnswer:
            self._discard(pool, kill=True)
            return LATE
        except BrokenProcessPool:  # one of its processes died: the others end too, before the caller unwinds
            self._discard(pool, kill=True)  # (none writes into a folder the caller removes)
            if self._stopped:
                raise GradingFailed("grading was stopped") from None
            raise GradingFailed("the grading process ended without answering (killed, or it crashed)") from None

    def _current(self) -> tuple:
        from concurrent.futures import ProcessPoolExecutor

        with self._lock:
            if self._stopped:
                raise GradingFailed("not started: grading is being stopped")
            if self._pool is None:
                said = self._context.SimpleQueue()
                executor = ProcessPoolExecutor(
                    self.jobs,
                    mp_context=self._context,
                    initializer=_grading_process_starts,
                    initargs=(os.getpid(), said),
                )
                self._pool = (executor, said)
            return self._pool

    def _discard(self, pool: tuple, kill: bool = False) -> None:
        """``pool`` is broken or late: the next grading gets a new one; its processes killed (``kill``)."""
        with self._lock:
            if self._pool is pool:
                self._pool = None
        if kill:
            self._kill(pool)
        pool[0].shutdown(wait=False, cancel_futures=True)
        with self._lock:
            self._pids.pop(pool[0], None)

    def _processes(self, pool: tuple) -> list:
        """The processes of ``pool`` alive now (``multiprocessing.Process`` objects)."""
        import multiprocessing

        with self._lock:
            known = self._pids.setdefault(pool[0], set())
            while not pool[1].empty():
                known.add(pool[1].get())
            # and those still starting (not yet said): the pool's own table, which submit fills at once
            known |= set(getattr(pool[0], "_processes", None) or ())
        return [p for p in multiprocessing.active_children() if p.pid in known]

    def pids(self) -> set:
        """The pids of the grading processes alive now."""
        pool = self._pool
        return set() if pool is None else {p.pid for p in self._processes(pool)}

    def _kill(self, pool: tuple) -> None:
        """SIGTERM to the processes of ``pool`` (a busy one unwinds its grading, stopping its kernel, and
        ends), SIGKILL to any left after 10 s."""
        processes = self._processes(pool)
        for process in processes:
            process.terminate()
        for process in processes:
            process.join(10)
            if process.is_alive():
                process.kill()
                process.join()

    def stop(self) -> None:
        """Stop every grading under way (Ctrl-C, SIGTERM); no other starts."""
        with self._lock:
            self._stopped, pool = True, self._pool
        if pool is not None:
            self._kill(pool)
            pool[0].shutdown(wait=True, cancel_futures=True)

    def close(self) -> None:
        """No more gradings: the processes end."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool[0].shutdown(wait=True)


def _grading_process_starts(caller: int, pids) -> None:
    """A grading process's start (the pool's initializer): it says its pid, ignores Ctrl-C (its caller
    stops it), ends quietly on SIGTERM while it waits (:func:`_within` unwinds a grading first), writes
    no bytecode, works from /, and ends when its caller is gone."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _end)
    sys.dont_write_bytecode = True
    os.chdir("/")
    pids.put(os.getpid())
    threading.Thread(target=_end_without, args=(caller,), name="seqlab-caller-watch", daemon=True).start()


def _end(signum, frame):  # noqa: ARG001 (a signal handler's signature)
    """SIGTERM in an idle grading process: it ends at once (it holds nothing to clean up)."""
    os._exit(0)


def _end_without(caller: int) -> None:
    """In a grading process: once its caller is gone (killed with SIGKILL), end at once, its kernels'
    sessions closed first (their processes killed, their folders unmounted and removed: see
    :func:`seqlab.grading.sandbox.close_open_sessions`); what it half wrote, the next attempt removes.
    Ending at once, rather than unwinding the grading, keeps it from writing beside that next attempt."""
    while os.getppid() == caller:
        time.sleep(0.1)
    try:
        sandbox.close_open_sessions()
    finally:
        os.kill(os.getpid(), signal.SIGKILL)


def _within(limit: float, function, *args):
    """In a grading process: ``function(*args)``, or :data:`LATE` when it ran ``limit`` seconds. nbgrader
    catches every exception of a grading, so the alarm's is noted before it is raised. SIGTERM meanwhile
    unwinds the grading like Ctrl-C (nbclient stops the kernel), and the process then ends. Whatever the
    alarm interrupted, the process is left as a grading leaves it: working from /, its output discarded."""
    ran_out, stopped = [], []

    def time_up(signum, frame):  # noqa: ARG001 (a signal handler's signature)
        ran_out.append(True)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the unwinding that follows is not cut short either
        raise _TimeUp

    def terminated(signum, frame):  # noqa: ARG001
        stopped.append(True)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # once: a second SIGTERM must not cut the clean-up short
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, time_up), signal.signal(signal.SIGTERM, terminated)
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        result = function(*args)
    except (_TimeUp, KeyboardInterrupt):
        result = LATE
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous[0])
        signal.signal(signal.SIGTERM, previous[1])
        if stopped or ran_out:  # the signal may have cut a grading's own clean-up short
            sandbox.close_open_sessions()
        if stopped:
            os._exit(1)
        if ran_out:
            os.chdir("/")
            with open(os.devnull, "wb") as nothing:
                os.dup2(nothing.fileno(), 1)
                os.dup2(nothing.fileno(), 2)
    return LATE if ran_out else result


def _run_nbgrader(
    course: Path, exercise: str, notebook: Path, timeout: int, total: int, log, processes: GradingProcesses
) -> dict:
    """Grade with :func:`_nbgrader_steps` in one of ``processes``, nbgrader's log in ``course/nbgrader.log``.

    The notebook gets ``total`` seconds; nbgrader itself, some more. Past that, or when the caller is
    interrupted (Ctrl-C, SIGTERM), the grading is stopped, and so is its kernel (a sandboxed kernel dies
    with the process that started it; one without a sandbox is stopped by it as it unwinds). The
    temporary course, with the kernel's connection file, goes with the caller's temporary folder.
    """
    limit = total + NBGRADER_SECONDS
    try:
        status = processes.run(limit, _in_course, course, exercise, notebook.resolve(), timeout, total)
    except GradingFailed as failure:
        raise GradingFailed(f"grading {notebook}: {failure}") from None
    log_file = course / "nbgrader.log"
    text = log_file.read_bytes().decode(errors="replace") if log_file.is_file() else ""
    if log is not None:
        log(text)
    result_file = course / "result.json"
    if status == LATE:
        raise GradingFailed(f"grading {notebook} took longer than {limit} s and was stopped")
    tail = "\n".join(text.strip().splitlines()[-25:])
    if status != 0 or not result_file.is_file():
        raise GradingFailed(f"nbgrader failed to grade {notebook} (exit status {status}):\n{tail}")
    return json.loads(result_file.read_text())


def alembic_head() -> str:
    """The newest migration of nbgrader's gradebook: what ``alembic heads`` prints, without a subprocess."""
    from alembic.script import ScriptDirectory
    from nbgrader.dbutil import ALEMBIC_DIR

    return ScriptDirectory(ALEMBIC_DIR).get_current_head()


def _nbgrader_steps(course: Path, exercise: str, notebook: Path, timeout: int, total: int) -> int:
    """In the temporary course: generate the assignment (its cells go into the gradebook), submit a copy
    of the notebook, autograde it, generate its feedback, and write ``result.json``."""
    import nbgrader.api
    from nbgrader.api import Gradebook
    from nbgrader.apps import NbGraderAPI
    from nbgrader.utils import compute_checksum
    from traitlets.config.loader import PyFileConfigLoader

    # A new gradebook is stamped with the newest migration, which nbgrader asks `alembic heads` for in
    # a subprocess (two seconds): read it from the migrations folder in this process instead.
    nbgrader.api.get_alembic_version = alembic_head

    config = PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
    config.CourseDirectory.root = str(course)
    # The temporary course's own layout (grade() puts the source in solutions/), whatever the course's file
    # says: the student edition's nbgrader_config.py holds the grading rules only, not the course's folders.
    config.CourseDirectory.source_directory = "solutions"
    # Never the course's own gradebook, wherever its db_url points (a class's PostgreSQL server).
    config.CourseDirectory.db_url = f"sqlite:///{course / 'gradebook.db'}"
    config.Execute.timeout = timeout
    config.SandboxedExecute.total_timeout = total
    # The kernel's folders (connection file, scratch) inside the temporary course, which goes at the end
    # whatever happens; and a student's own notebook runs unsandboxed, with a warning, where bubblewrap
    # cannot run (an instructor's class refuses to).
    config.SandboxedExecute.session_folder = str(course)
    config.Sandbox.fallback_unsandboxed = True
    api = NbGraderAPI(config=config)
    coursedir = api.coursedir
    submitted = Path(coursedir.format_path(coursedir.submitted_directory, STUDENT, exercise))
    submitted.mkdir(parents=True)
    shutil.copyfile(notebook, submitted / f"{exercise}.ipynb")
    for step, run in [
        ("generate_assignment", lambda: api.generate_assignment(exercise, force=True, create=True)),
        ("autograde", lambda: api.autograde(exercise, STUDENT, force=True, create=True)),
        ("generate_feedback", lambda: api.generate_feedback(exercise, STUDENT, force=True)),
    ]:
        outcome = run()
        print(f"--- nbgrader {step}\n{outcome.get('log', '')}{outcome.get('error', '')}", flush=True)
        if not outcome["success"]:
            return 1
    with Gradebook(config.CourseDirectory.db_url, course_id=coursedir.course_id) as gb:
        grades = gb.find_submission_notebook(exercise, exercise, STUDENT).grades
        grades = [
            {"grade_id": g.name, "auto": g.auto_score, "manual": g.manual_score, "max": g.max_score} for g in grades
        ]
        cells = gb.find_notebook(exercise, exercise)
        tests = {c.name for c in cells.grade_cells} - {c.name for c in cells.solution_cells}
    # What the student changed, by nbgrader's checksums: the release stamped one on each of its nbgrader
    # cells, and the student's copy keeps it as they change the cell.
    mine = {}
    for c in nbformat.read(submitted / f"{exercise}.ipynb", as_version=4).cells:
        meta = c.metadata.get("nbgrader")
        if isinstance(meta, dict) and isinstance(meta.get("grade_id"), str) and meta["grade_id"]:
            mine[meta["grade_id"]] = (meta, "checksum" in meta and compute_checksum(c) != meta["checksum"])
    autograded = Path(coursedir.format_path(coursedir.autograded_directory, STUDENT, exercise)) / f"{exercise}.ipynb"
    feedback = Path(coursedir.format_path(coursedir.feedback_directory, STUDENT, exercise)) / f"{exercise}.html"
    result = {
        "grades": grades,
        "autograded": str(autograded),
        "feedback": str(feedback),
        "unanswered": [
            g for g, (meta, changed) in mine.items() if meta.get("solution") and "checksum" in meta and not changed
        ],
        "edited": [g for g, (meta, changed) in mine.items() if g in tests and changed],
    }
    (course / "result.json").write_text(json.dumps(result))
    return 0


# ---------------------------------------------------------------------------------------------------
# Reading the results


def _first_line(text: str) -> str:
    lines = [line.strip() for line in _ANSI.sub("", text).splitlines() if line.strip()]
    return lines[0] if lines else ""


def _error_line(output) -> str:
    """``ename: evalue`` (its first line); without an evalue, the traceback's last line if it names the
    error with more words (nbgrader's timeout: ``CellTimeoutError: No reply from kernel before timeout``)."""
    if output.get("evalue"):
        return f"{output.ename}: {_first_line(output.evalue)}"
    lines = [line.strip() for line in _ANSI.sub("", "\n".join(output.get("traceback", []))).splitlines()]
    last = next((line for line in reversed(lines) if line), "").rstrip(":")
    return last if last.startswith(output.ename) else output.ename


def _failure(c) -> str | None:
    """The first line of why a graded code cell lost points: its last error (after a timeout nbgrader
    adds CellTimeoutError after the KeyboardInterrupt), or what it wrote to stderr."""
    errors = [o for o in c.get("outputs", []) if o.output_type == "error"]
    if errors:
        return _error_line(errors[-1])
    stderr = [o for o in c.get("outputs", []) if o.output_type == "stream" and o.name == "stderr"]
    if stderr:
        return f"wrote to stderr (a test must stay silent): {_first_line(stderr[0].text)}"
    return None


BY_INSTRUCTOR = "graded by your instructor"  # what the table says of a written answer


def _tasks(graded, grades: list) -> list:
    """One :class:`Task` per grade, in the notebook's order."""
    cells = _nbgrader_cells(graded)
    order = {gid: i for i, gid in enumerate(cells)}
    tasks = []
    for g in sorted(grades, key=lambda g: order.get(g["grade_id"], len(order))):
        c = cells.get(g["grade_id"])
        earned = g["auto"] if g["manual"] is None else g["manual"]
        task = Task(g["grade_id"], earned, g["max"])
        written = c is not None and c.cell_type == "markdown" and c.metadata.nbgrader.get("solution")
        if earned is None:
            task.failure = BY_INSTRUCTOR
        elif written and earned < g["max"]:  # nbgrader gives an answer left as the release's stub 0
            task.failure = f"not answered: a written answer, {BY_INSTRUCTOR}"
        elif earned < g["max"]:
            task.failure = (_failure(c) if c is not None and c.cell_type == "code" else None) or "partial credit"
        tasks.append(task)
    return tasks


def _notes(graded, result: dict) -> list:
    """What explains the failures, in the notebook's order: answers not written yet, the student's own
    cells that raised, test cells that were edited (nbgrader graded the originals); then what grading
    repaired or met (deleted or copied cells, damaged settings, a kernel lost and replaced)."""
    notes = []
    for gid, c in _nbgrader_cells(graded).items():
        meta = c.metadata.nbgrader
        if gid in result["unanswered"]:
            notes.append(f"you have not answered {gid} yet: it is still the release's stub")
        elif meta.get("solution") and not meta.get("grade") and c.cell_type == "code":
            failure = _failure(c)
            if failure and not failure.startswith("wrote to stderr"):
                notes.append(f"your cell {gid} raised {failure}")
        elif gid in result["edited"]:
            notes.append(f"the test cell {gid} was edited in your notebook: the original was graded")
    return notes + list(graded.metadata.get("seqlab", {}).get("notes", []))


def format_report(report: Report) -> str:
    """The score table that ``seqlab grade`` prints."""
    width = max([len("total")] + [len(t.grade_id) for t in report.tasks])
    possible = max([len(format_points(report.possible))] + [len(format_points(t.possible)) for t in report.tasks])
    lines = [f"{'task':<{width}}  {'points':>{2 * possible + 3}}  first line of the failure"]
    for t in report.tasks:
        earned = format_points(t.earned)
        points = f"{earned:>{possible}} / {format_points(t.possible):<{possible}}"
        lines.append(f"{t.grade_id:<{width}}  {points}  {t.failure or ''}")
    earned, possible_total = format_points(report.earned), format_points(report.possible)
    total = f"{'total':<{width}}  {earned:>{possible}} / {possible_total:<{possible}}"
    if report.by_instructor:
        more = f"{format_points(report.by_instructor)} more point{'' if report.by_instructor == 1 else 's'}"
        total += f"  autograded; {more} {BY_INSTRUCTOR}"
    lines.append(total)
    lines = [line.rstrip() for line in lines]
    lines += [f"note: {note}" for note in report.notes]
    return "\n".join(lines)


def _in_course(course: Path, exercise: str, notebook: Path, timeout: int, total: int) -> int:
    """:func:`_nbgrader_steps` in ``course``, everything printed (kernels included) in its ``nbgrader.log``.

    Python's warnings start afresh for each notebook (a warning shown once per place is shown in each
    notebook's log, not in the first one's only)."""
    sys.stdout.flush()
    sys.stderr.flush()
    with open(course / "nbgrader.log", "wb") as log, open(os.devnull, "wb") as nothing:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        os.chdir(course)
        try:
            with warnings.catch_warnings():
                return _nbgrader_steps(course, exercise, notebook, timeout, total)
        except (Exception, SystemExit):  # nbgrader's failure, whatever it is: to the log, its status to the caller
            traceback.print_exc()
            return 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(nothing.fileno(), 1)
            os.dup2(nothing.fileno(), 2)
            os.chdir("/")
