"""The ``seqlab`` command (``[project.scripts]`` in pyproject.toml).

    seqlab grade PATH      grade an exercise notebook where it is (see seqlab.grading.autograde)
    seqlab grade-class     grade every submission of the class, N at a time (seqlab.grading.class_grading)

Exit statuses of ``seqlab grade``: 0 full marks; 1 points missing; 2 refused (not a notebook of this
course, corrupt, another exercise's notebook, no course found); 3 nbgrader failed or ran out of time;
130 interrupted (Ctrl-C); 143 stopped (SIGTERM). Of ``seqlab grade-class``: 0 every submission graded
or unchanged; 1 a submission failed; 2 refused (nothing graded); 130 interrupted; 143 stopped.
"""

import argparse
import concurrent.futures
import io
import json
import os
import signal
import sys
import threading
from pathlib import Path

try:
    from seqlab.grading import autograde
except ModuleNotFoundError as missing:  # nbgrader and nbformat come with the optional "grading" extra
    autograde, GRADING_MISSING = None, missing.name
try:
    from seqlab.grading import class_grading
except ImportError as error:  # the instructor's: a copy without it (the student edition) still has seqlab grade
    # (without the "grading" extra, nbgrader and nbformat are missing: the commands say what to install)
    if error.name not in ("seqlab.grading", "seqlab.grading.class_grading", "nbformat", "nbgrader", "distributed"):
        raise  # there, but it cannot import
    class_grading, CLASS_GRADING_MISSING = None, error.name

GRADE_HELP = """\
Grade an exercise notebook where it is, as the instructor's autograder would: nbgrader runs the
exercise's tests (the hidden ones too, when this copy of the course has solutions/) on a copy of it in
a temporary course, prints the points of every test with the first line of each failure, and writes
the feedback next to the notebook as <name>.feedback.html. Nothing else is written. The notebook runs
in a bubblewrap sandbox (no network, no access to your files); without bubblewrap it runs with your
rights, and the command says so."""

EXIT_STATUSES = """\
exit status: 0 full marks; 1 points missing; 2 refused (not a notebook of this course, a corrupt
notebook, another exercise's notebook, no course found); 3 nbgrader failed or ran out of time;
130 interrupted (Ctrl-C); 143 stopped (SIGTERM)"""


GRADE_CLASS_HELP = """\
Grade the class: every submission in nbgrader's submitted/<student>/<exercise>/, each by nbgrader's own
autograde for that student and exercise (its kernels in their own sandbox, its grades in the gradebook
that nbgrader_config.py's c.CourseDirectory.db_url names, its notebook in autograded/), one Dask task per
submission: on a local cluster of N worker processes (--jobs N), or on a running Dask cluster
(--scheduler ADDRESS), whose workers see the course folder at the same path. Run it in the course folder
(or give --course). Several workers need a database server for the gradebook (PostgreSQL): with sqlite,
there must be one worker, and the command says why.

A second run grades only what is new or changed since it was graded here (the submission's files, or
the exercise in the gradebook after `make release`), or whose autograded notebook or grade is gone; a
submission that failed is tried again. It prints a line as each submission is done, then a table: what
was graded, what failed and why (with the end of nbgrader's log), and how many were unchanged. A
failure never stops the others; a worker lost while it grades loses its task to another worker. Ctrl-C
cancels what the workers were grading (the next run grades it). Options after -- go to nbgrader, as on
its command line (e.g. -- --Execute.timeout=20)."""

GRADE_CLASS_STATUSES = """\
exit status: 0 every submission graded or unchanged; 1 a submission failed to grade; 2 refused (nothing
was graded: sqlite with more than one worker, no such student or exercise); 3 the Dask scheduler or
every worker was lost (the table says what was graded; a re-run grades the rest); 130 interrupted
(Ctrl-C); 143 stopped (SIGTERM)"""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="seqlab", description="The course's command line: seqlab grade PATH, seqlab grade-class."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    grade = commands.add_parser(
        "grade",
        help="grade an exercise notebook where it is",
        description=GRADE_HELP,
        epilog=EXIT_STATUSES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    grade.add_argument(
        "notebook", type=Path, metavar="PATH", help="the exercise notebook (.ipynb), or a folder: every notebook in it"
    )
    grade.add_argument("--course", type=Path, help="the course folder (default: found above PATH or here)")
    grade.add_argument(
        "--timeout",
        type=seconds,
        metavar="SECONDS",
        help="seconds per cell, at least 1 (default: the course's c.Execute.timeout); the whole notebook gets the "
        "course's c.SandboxedExecute.total_timeout (300 s by default), however many cells it has",
    )
    grade.add_argument(
        "-j",
        "--jobs",
        type=workers,
        metavar="N",
        help="for a folder: notebooks graded at once (default: 2 on two cores or more, else 1); each one's "
        "table is printed whole, in order",
    )
    grade.add_argument("-v", "--verbose", action="store_true", help="show nbgrader's log")

    grade_class = commands.add_parser(
        "grade-class",
        help="grade every submission of the class, N at a time",
        description=GRADE_CLASS_HELP,
        epilog=GRADE_CLASS_STATUSES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    grade_class.add_argument(
        "-j", "--jobs", type=workers, default=1, metavar="N", help="worker processes of the local cluster (default 1)"
    )
    grade_class.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="grade on the running Dask cluster whose scheduler is at ADDRESS (tcp://HOST:8786) instead of a local "
        "cluster; --jobs is then ignored",
    )
    grade_class.add_argument("--dashboard", action="store_true", help="print the address of Dask's dashboard")
    grade_class.add_argument(
        "--student", action="append", default=[], metavar="ID", help="only this student (may be repeated)"
    )
    grade_class.add_argument(
        "--exercise",
        "--assignment",
        action="append",
        default=[],
        metavar="NAME",
        help="only this exercise (nbgrader's assignment; may be repeated)",
    )
    grade_class.add_argument("--force", action="store_true", help="grade what is selected, changed or not")
    grade_class.add_argument("--course", type=Path, default=Path("."), help="the course folder (default: here)")
    grade_class.add_argument(
        "--timeout",
        type=seconds,
        metavar="SECONDS",
        help="a submission that grades longer than this fails, and is not retried (default: no limit but the "
        "course's per cell and per notebook)",
    )
    grade_class.add_argument("--json", type=Path, metavar="PATH", help="also write the outcome of each submission")
    grade_class.add_argument("-v", "--verbose", action="store_true", help="list the unchanged submissions too")
    grade_class.add_argument("nbgrader_args", nargs="*", metavar="-- NBGRADER OPTIONS", help=argparse.SUPPRESS)
    return parser


def _at_least_one(text: str, what: str, too_small: str) -> int:
    """An option's whole number, at least 1; ``what`` names it when it is not a whole number."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(too_small.format(value)) from None
    return value


def workers(text: str) -> int:
    """``--jobs``'s type: a whole number, at least 1."""
    return _at_least_one(text, "a whole number", "{} workers: at least 1")


def seconds(text: str) -> int:
    """``--timeout``'s type: a whole number of seconds, at least 1."""
    return _at_least_one(text, "a whole number of seconds", "{} is too short: a cell needs at least 1 second")


def _stop_on_sigterm(signum, frame):  # noqa: ARG001 (a signal handler's signature)
    raise autograde.Stopped  # handled as Ctrl-C: each command unwinds and cleans up


# The last line of a grade without solutions/ (a student's copy, the student edition): the table above it
# is not the instructor's grade.
VISIBLE_ONLY = "These points count the visible tests only: the instructor's grade, with the hidden tests, may differ."


def _tests(exercise: str, hidden_tests: bool) -> str:
    if hidden_tests:
        return f"the visible tests and the instructor's hidden tests (solutions/{exercise})"
    return (
        "the visible tests only: this copy of the course has no solutions/, so the instructor's hidden "
        "tests do not run and the final grade may be lower"
    )


def grade_command(args) -> int:
    if autograde is None:
        print(
            f"seqlab grade needs nbgrader, which this environment lacks (no module {GRADING_MISSING!r}): "
            "install the course environment (make test) or pip install 'seqlab[grading]'",
            file=sys.stderr,
        )
        return 2
    if args.notebook.is_dir():
        notebooks = notebooks_in(args.notebook)
        if not notebooks:
            print(f"seqlab grade: refused: {args.notebook} holds no notebook", file=sys.stderr)
            return autograde.EXIT_REFUSED
        jobs = min(args.jobs or default_jobs(), len(notebooks))
        with autograde.GradingProcesses(jobs) as processes:  # nbgrader imported once per process, not per notebook
            return max(grade_all(notebooks, args, processes))
    return grade_one(args.notebook, args)


def default_jobs() -> int:
    """Notebooks graded at once in a folder: two where there are two cores (a laptop has them), else one.
    Each grading runs its kernels one after another, so two keep two cores busy; more only queue."""
    return min(2, os.cpu_count() or 1)


def grade_all(notebooks: list, args, processes) -> list:
    """Grade ``notebooks`` in ``processes`` (autograde.GradingProcesses), as many at a time as it has; each
    one's output printed whole, in order. Their exit statuses.

    A thread waits for each grading. On Ctrl-C or SIGTERM the main thread stops the grading processes
    and waits for the threads, which remove their temporary courses as they unwind."""
    separator = "\n" + "-" * 100 + "\n"
    if processes.jobs <= 1:
        statuses = []
        for notebook in notebooks:
            statuses.append(grade_one(notebook, args, processes=processes))
            print(separator)
        return statuses

    def captured(notebook):
        out, err = io.StringIO(), io.StringIO()
        return grade_one(notebook, args, out=out, err=err, processes=processes), out.getvalue(), err.getvalue()

    print(
        f"{len(notebooks)} notebooks, graded {processes.jobs} at a time: each one's table appears when it is done.\n",
        flush=True,
    )
    statuses = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=processes.jobs, thread_name_prefix="seqlab-grade") as pool:
        futures = [pool.submit(captured, notebook) for notebook in notebooks]
        try:
            for future in futures:
                status, out, err = future.result()
                sys.stdout.write(out)
                sys.stdout.flush()
                sys.stderr.write(err)
                print(separator, flush=True)
                statuses.append(status)
        except BaseException:
            for future in futures:
                future.cancel()
            processes.stop()
            pool.shutdown(wait=True)  # the threads unwind: their gradings stopped, their folders removed
            raise
    return statuses


def notebooks_in(folder: Path) -> list:
    """The notebooks in a folder and its subfolders, in name order (Jupyter's checkpoints left out)."""
    return sorted(p for p in folder.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)


def grade_one(notebook: Path, args, out=None, err=None, processes=None) -> int:
    """Grade one notebook and print its table to ``out`` (standard output), messages to ``err``."""
    out, err = out or sys.stdout, err or sys.stderr

    def say(*text, **kwargs):
        print(*text, file=out, flush=True, **kwargs)

    def announce(exercise, hidden_tests, unsandboxed):
        say(f"Grading {notebook}: exercise {exercise}, with {_tests(exercise, hidden_tests)}.")
        if unsandboxed:
            say(
                f"warning: grading without a sandbox: {unsandboxed}. The notebook runs with your rights: "
                "it can read and change your files."
            )
        say()

    log = (lambda text: print(text, file=err)) if args.verbose else None
    try:
        report = autograde.grade(
            notebook, course=args.course, timeout=args.timeout, log=log, announce=announce, processes=processes
        )
    except autograde.Refused as refusal:
        print(f"seqlab grade: refused: {refusal}", file=err)
        return autograde.EXIT_REFUSED
    except autograde.GradingFailed as failure:
        print(f"seqlab grade: {failure}", file=err)
        return autograde.EXIT_FAILED
    say(autograde.format_report(report))
    if report.feedback is not None:
        shows = " (it shows the hidden tests)" if report.hidden_tests else ""
        say(f"\nFeedback{shows}: {report.feedback}")
    missing = report.possible - report.earned
    if report.by_instructor:  # written answers: the autograder gives them no points either way
        later = f" The written answers ({report.by_instructor:g} points) are {autograde.BY_INSTRUCTOR}."
        say(
            f"\nFull marks on the autograded tasks.{later}"
            if missing <= 0
            else f"\n{missing:g} of {report.possible:g} autograded points missing.{later}"
        )
    else:
        say("\nFull marks." if missing <= 0 else f"\n{missing:g} of {report.possible:g} points missing.")
    if not report.hidden_tests:
        say(VISIBLE_ONLY)
    return report.exit_status


def grade_class_command(args) -> int:
    if autograde is None:
        print(
            f"seqlab grade-class needs nbgrader, which this environment lacks (no module {GRADING_MISSING!r})",
            file=sys.stderr,
        )
        return 2
    if class_grading is None:
        if CLASS_GRADING_MISSING == "distributed":
            print(
                "seqlab grade-class grades on Dask, which this environment lacks: install the course environment "
                "(make env) or pip install 'seqlab[class-grading]'",
                file=sys.stderr,
            )
        else:
            print(
                "seqlab grade-class: this copy of the course has no class grading (the instructor's)", file=sys.stderr
            )
        return 2
    # SIGTERM is handled as Ctrl-C: the workers are stopped, the table printed.
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _stop_on_sigterm) if main_thread else None
    try:
        try:
            course = class_grading.open_course(args.course, args.nbgrader_args)
            run = class_grading.ClassGrading(
                course,
                args.jobs,
                args.student,
                args.exercise,
                force=args.force,
                timeout=args.timeout,
                progress=lambda line: print(line, flush=True),
                scheduler=args.scheduler,
                dashboard=args.dashboard,
            )
            run.plan()
        except autograde.Refused as refusal:
            print(f"seqlab grade-class: refused: {refusal}", file=sys.stderr)
            return 2
        except KeyboardInterrupt as stop:
            how = "stopped (SIGTERM)" if isinstance(stop, autograde.Stopped) else "interrupted"
            print(f"\nseqlab grade-class: {how} before grading began: nothing was graded", file=sys.stderr)
            return 143 if isinstance(stop, autograde.Stopped) else 130
        refused = None
        try:
            run.run()
        except KeyboardInterrupt:
            pass  # the workers are stopped; run.stopped says how
        except autograde.Refused as refusal:  # the cluster cannot grade this class (no scheduler, sqlite, ...)
            refused = refusal
        finally:
            print("\n" + class_grading.format_summary(run, verbose=args.verbose), flush=True)
            if args.json is not None:
                args.json.write_text(json.dumps(run.report(), indent=1) + "\n")
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, previous)
    if refused is not None:
        print(f"seqlab grade-class: refused: {refused}", file=sys.stderr)
        return 2
    if run.stopped:
        print(f"seqlab grade-class: {run.stopped}", file=sys.stderr)
        return 143 if run.stopped.startswith("stopped") else 130
    if run.lost:
        return 3
    return 1 if run.counts().get("failed") else 0


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "grade-class":
        return grade_class_command(args)
    if args.command != "grade":
        raise AssertionError(f"unknown command {args.command}")  # argparse refuses unknown commands first
    # Ctrl-C or SIGTERM: the grading process is stopped and the temporary course removed on the way out.
    main_thread = threading.current_thread() is threading.main_thread()  # only it can handle signals
    previous = signal.signal(signal.SIGTERM, _stop_on_sigterm) if main_thread else None
    try:
        return grade_command(args)
    except KeyboardInterrupt as stop:
        how = "stopped (SIGTERM)" if isinstance(stop, autograde.Stopped) else "interrupted"
        print(f"\nseqlab grade: {how}: nothing was graded further, and nothing was left behind", file=sys.stderr)
        return 143 if isinstance(stop, autograde.Stopped) else 130
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    sys.exit(main())
