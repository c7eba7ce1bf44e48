"""Run an exercise's cells for many students in one warm Python process, a fresh namespace each.

``python tests/answer_runner.py PLAN OUT``: PLAN is a JSON file ``{"cells": [...], "students": {name: {grade_id:
source}}}``; each cell is ``{"kind": "answer" | "test" | "locked", "grade_id", "graded", "visible"}``, where
``graded`` is a test cell's source as the grader runs it (hidden tests included) and ``visible`` as the student
sees it. For each student, each of the two runs ("graded", "visible") executes every code cell in notebook order
in a new namespace: locked cells as they are, answer cells with the student's source, test cells in that run's
form. A test cell passes iff it raises nothing within ``CELL_SECONDS``; OUT gets, per student and run,
``{test grade_id: None or "ErrorType: message"}``, and the errors of other cells under ``"cells"``.

This is what nbgrader's autograde decides per test cell, without a sandbox and two kernels per student: the
students here are the course's own realistic answers (tests/buggy_answers.py), not submissions.
"""

import builtins
import contextlib
import io
import json
import signal
import sys

CELL_SECONDS = 60  # as the grader's per-cell limit


class CellTimeout(Exception):
    pass


def _alarm(*_):
    raise CellTimeout(f"the cell ran for more than {CELL_SECONDS} s")


def _describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"[:2000]


def run_one(cells: list, answers: dict, form: str) -> dict:
    """One student's notebook in one form ("graded" or "visible"): each test cell's verdict."""
    import torch

    namespace = {"__name__": "__main__", "__builtins__": builtins}
    verdicts, errors = {}, {}
    for index, cell in enumerate(cells):
        if cell["kind"] == "answer":
            source = answers.get(cell["grade_id"], cell["graded"])
        else:
            source = cell[form]
        signal.alarm(CELL_SECONDS)
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                exec(compile(source, f"<cell {index}: {cell['grade_id'] or cell['kind']}>", "exec"), namespace)
            outcome = None
        except BaseException as error:  # a student's cell may raise anything, SystemExit too
            outcome = _describe(error)
        finally:
            signal.alarm(0)
        if cell["kind"] == "test":
            verdicts[cell["grade_id"]] = outcome
        elif outcome is not None:
            errors[cell["grade_id"] or f"cell {index}"] = outcome
    # what a student's cell may have changed for the next student
    torch.set_default_dtype(torch.float32)
    torch.set_grad_enabled(True)
    return {"tests": verdicts, "cells": errors}


def main(plan_path: str, out_path: str) -> None:
    signal.signal(signal.SIGALRM, _alarm)
    with open(plan_path) as f:
        plan = json.load(f)
    results = {
        student: {form: run_one(plan["cells"], answers, form) for form in ("graded", "visible")}
        for student, answers in plan["students"].items()
    }
    with open(out_path, "w") as f:
        json.dump(results, f)


if __name__ == "__main__":
    main(*sys.argv[1:])
