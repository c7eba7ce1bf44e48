"""The ``seqlab`` command (``[project.scripts]`` in pyproject.toml).

    seqlab grade PATH      grade an exercise notebook where it is (see seqlab.grading.autograde)

Exit statuses of ``seqlab grade``: 0 full marks; 1 points missing; 2 refused (not a notebook of this
course, corrupt, another exercise's notebook, no course found); 3 nbgrader failed.
"""

import argparse
import sys
from pathlib import Path

try:
    from seqlab.grading import autograde
except ModuleNotFoundError as missing:  # nbgrader and nbformat come with the optional "grading" extra
    autograde, GRADING_MISSING = None, missing.name

GRADE_HELP = """\
Grade an exercise notebook where it is, as the instructor's autograder would: nbgrader runs the
exercise's tests (the hidden ones too, when this copy of the course has solutions/) on a copy of it in
a temporary course, prints the points of every test with the first line of each failure, and writes
the feedback next to the notebook as <name>.feedback.html. Nothing else is written."""

EXIT_STATUSES = """\
exit status: 0 full marks; 1 points missing; 2 refused (not a notebook of this course, a corrupt
notebook, another exercise's notebook, no course found); 3 nbgrader failed"""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="seqlab", description="The course's command line: seqlab grade PATH.")
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
    grade.add_argument("--timeout", type=int, help="seconds per cell (default: the course's c.Execute.timeout)")
    grade.add_argument("-v", "--verbose", action="store_true", help="show nbgrader's log")
    return parser


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
        statuses = []
        for notebook in notebooks:
            statuses.append(grade_one(notebook, args))
            print("\n" + "-" * 100 + "\n")
        return max(statuses)
    return grade_one(args.notebook, args)


def notebooks_in(folder: Path) -> list:
    """The notebooks in a folder and its subfolders, in name order (Jupyter's checkpoints left out)."""
    return sorted(p for p in folder.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)


def grade_one(notebook: Path, args) -> int:
    def announce(exercise, hidden_tests):
        print(f"Grading {notebook}: exercise {exercise}, with {_tests(exercise, hidden_tests)}.\n", flush=True)

    log = (lambda text: print(text, file=sys.stderr)) if args.verbose else None
    try:
        report = autograde.grade(notebook, course=args.course, timeout=args.timeout, log=log, announce=announce)
    except autograde.Refused as refusal:
        print(f"seqlab grade: refused: {refusal}", file=sys.stderr)
        return autograde.EXIT_REFUSED
    except autograde.GradingFailed as failure:
        print(f"seqlab grade: {failure}", file=sys.stderr)
        return autograde.EXIT_FAILED
    print(autograde.format_report(report))
    if report.feedback is not None:
        shows = " (it shows the hidden tests)" if report.hidden_tests else ""
        print(f"\nFeedback{shows}: {report.feedback}")
    missing = report.possible - report.earned
    print("\nFull marks." if missing <= 0 else f"\n{missing:g} of {report.possible:g} points missing.")
    return report.exit_status


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "grade":
        return grade_command(args)
    raise AssertionError(f"unknown command {args.command}")  # argparse refuses unknown commands first


if __name__ == "__main__":
    sys.exit(main())
