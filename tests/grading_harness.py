"""Helpers shared by the tests that run nbgrader on a temporary course (the class cycle, the grade
command, PostgreSQL): run an nbgrader command, find a cell by grade id, fill a release in
from the solution notebook; and the submissions that attack the grading or damage their notebook.

Every graded kernel runs in bubblewrap (seqlab.grading.sandbox), and ``nbgrader autograde`` refuses
to grade without it. Where bubblewrap cannot run (``SANDBOX_MISSING`` says why; .ci/run installs it),
:func:`nbgrader` grades with the sandbox switched off, and the tests that need it are skipped.

pytest puts tests/ on sys.path (the folder has no __init__.py), so test files import this module as
``grading_harness``.
"""

import ast
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import nbformat

from seqlab.grading.sandbox import unavailable_reason

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent  # the course environment's bin/: nbgrader, and alembic that it runs
SANDBOX_MISSING = unavailable_reason()  # None where bubblewrap runs


def run_nbgrader(course: Path, *args: str, timeout: int = 240) -> subprocess.CompletedProcess:
    """One nbgrader command in the course, as it is (no sandbox fallback), its output captured."""
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    command = [str(BIN / "nbgrader"), *args, f"--CourseDirectory.root={course}"]
    return subprocess.run(command, cwd=course, env=env, capture_output=True, text=True, timeout=timeout)


def nbgrader(course: Path, *args: str, timeout: int = 240) -> float:
    """Run one nbgrader command in the course; fail with its log if it fails. Returns the wall time.
    ``timeout`` bounds a hang: a command over a whole class gives more, in proportion.

    Where bubblewrap cannot run, ``autograde`` runs with the sandbox switched off."""
    if SANDBOX_MISSING and args[:1] == ("autograde",):
        args = (*args, "--Sandbox.enabled=False")
    start = time.perf_counter()
    result = run_nbgrader(course, *args, timeout=timeout)
    assert result.returncode == 0, f"nbgrader {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}"
    return time.perf_counter() - start


def cell(nb, grade_id):
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def without_markers(source: str) -> str:
    """A solution cell as a student who solved it would hand it in: the solution, no nbgrader markers."""
    return "\n".join(
        line for line in source.splitlines() if "### BEGIN SOLUTION" not in line and "### END SOLUTION" not in line
    )


def solved(release, solution):
    """The release with every answer cell filled in from the solution notebook."""
    nb = nbformat.from_dict(release)
    for c in nb.cells:
        if c.metadata.get("nbgrader", {}).get("solution"):
            c.source = without_markers(cell(solution, c.metadata.nbgrader.grade_id).source)
    return nb


def nbgrader_meta(c) -> dict:
    return c.metadata.get("nbgrader", {})


def answer_ids(nb) -> list:
    """Grade ids of the cells where students write code, in notebook order (not the written answers)."""
    return [
        nbgrader_meta(c)["grade_id"] for c in nb.cells if nbgrader_meta(c).get("solution") and c.cell_type == "code"
    ]


def written_points(nb) -> dict:
    """``{grade_id: points}`` of the written answers: markdown answer cells that the instructor grades by
    hand (nbgrader's manually graded answers; autograde gives them 0 if left as the release's stub)."""
    return {
        nbgrader_meta(c)["grade_id"]: float(nbgrader_meta(c)["points"])
        for c in nb.cells
        if nbgrader_meta(c).get("grade") and nbgrader_meta(c).get("solution") and c.cell_type == "markdown"
    }


def written_left_as_stub(nb, release) -> dict:
    """``{grade_id: points}`` of the written answers that ``nb`` still holds as the release's stub (which
    autograde scores 0; an answered one waits for the instructor)."""
    return {gid: p for gid, p in written_points(release).items() if cell(nb, gid).source == cell(release, gid).source}


def autograded_score(grades: dict) -> float:
    """The score of ``{grade_id: auto score}``, in which a written answer waiting for the instructor is None."""
    return sum(score for score in grades.values() if score is not None)


def graded_points(nb) -> dict:
    """``{grade_id: points}`` of the autograded test cells, in notebook order."""
    return {
        nbgrader_meta(c)["grade_id"]: float(nbgrader_meta(c)["points"])
        for c in nb.cells
        if nbgrader_meta(c).get("grade") and not nbgrader_meta(c).get("solution")
    }


def points_below(nb, grade_id: str) -> dict:
    """``{grade_id: points}`` of the test cells below the cell ``grade_id``."""
    ids = [nbgrader_meta(c).get("grade_id") for c in nb.cells]
    below = set(ids[ids.index(grade_id) + 1 :])
    return {gid: points for gid, points in graded_points(nb).items() if gid in below}


def exercise_names(folder: Path) -> list:
    """The exercises in ``folder`` (solutions/ or exercises/): ``<name>/<name>.ipynb``."""
    return sorted(p.parent.name for p in folder.glob("*/*.ipynb") if p.stem == p.parent.name)


def gradebook_scores(db_url: str, assignment: str) -> dict:
    """``{student: (score, max_score, {grade_id: (auto_score, max_score)})}`` for one assignment, as the
    gradebook has them."""
    from nbgrader.api import Gradebook

    with Gradebook(db_url, course_id="seqlab") as gb:
        return {
            s.student.id: (
                s.score,
                s.max_score,
                {g.name: (g.auto_score, g.max_score) for n in s.notebooks for g in n.grades},
            )
            for s in gb.assignment_submissions(assignment)
        }


# ---------------------------------------------------------------------------------------------------
# Submissions that attack the grading or damage the notebook (the class cycle and `seqlab grade`)

# In the command line of every process an attack starts: none may be alive once grading is over.
MARKER = "seqlab-test-attack-process"
# A file an attack tries to create in the seqlab package (the course's source tree, through the
# editable install): it must never appear.
PLANTED = "planted_by_a_submission.txt"

# What the vandal writes to, from the kernel's working folder (<course>/autograded/<student>/<exercise>):
# the course, the gradebook, another student's submission, the package, and a file next to any notebook
# named on a process's command line (`seqlab grade` names the student's real notebook).
VANDALISE = """
import glob, pathlib
import seqlab

def targets():
    course = pathlib.Path("../../..")
    found = [pathlib.Path(seqlab.__file__).parent / "grading" / "{planted}", course / "nbgrader_config.py",
             course / "gradebook.db", course / "solutions" / "{ex}" / "planted.py",
             course / "exercises" / "{ex}" / "planted.py", course / "submitted" / "perfect" / "{ex}" / "{ex}.ipynb"]
    for cmdline in glob.glob("/proc/*/cmdline"):
        try:
            words = open(cmdline, "rb").read().decode(errors="replace").split(chr(0))
        except OSError:
            continue
        found += [pathlib.Path(w).with_name("planted.ipynb") for w in words if w.endswith(".ipynb")]
    return found

def vandalise():
    for target in targets():
        try:
            with open(target, "a") as f:
                f.write("\\n# planted by a submission\\n")
        except OSError:
            pass

vandalise()
"""
LATER = "\nimport time\nfor _ in range(240):\n    time.sleep(0.5)\n    vandalise()\n"


def vandal_cell(ex: str) -> str:
    """Code that writes where it must not, now and from a detached process that keeps trying for two
    minutes (longer than grading: if it survived, it would change the gradebook afterwards)."""
    attack = VANDALISE.format(planted=PLANTED, ex=ex)
    return (
        "import subprocess, sys\n\n"
        f"ATTACK = {attack!r}\n"
        "exec(ATTACK)\n"
        "# a session of its own (no signal to the kernel's group reaches it), and the kernel's stdout and\n"
        "# stderr (it would keep the grader's pipes open)\n"
        f"subprocess.Popen([sys.executable, '-c', ATTACK + {LATER!r}, '{MARKER}'], start_new_session=True)\n\n"
    )


def solution_reading_cell(ex: str, grade_id: str) -> str:
    """An answer cell that runs the instructor's solution of that cell, read from solutions/."""
    return (
        "import json, pathlib\n"
        "import seqlab\n\n"
        f"PLACES = [pathlib.Path('../../../solutions/{ex}/{ex}.ipynb'),  # from autograded/<student>/<ex>\n"
        f"          pathlib.Path(seqlab.__file__).parents[1] / 'solutions/{ex}/{ex}.ipynb']  # the source tree\n"
        "found = next((p for p in PLACES if p.exists()), PLACES[0])\n"
        "cells = json.loads(found.read_text())['cells']\n"
        f"mine = next(c for c in cells if c['metadata'].get('nbgrader', {{}}).get('grade_id') == '{grade_id}')\n"
        "exec(''.join(mine['source']))\n"
    )


SWALLOW = (
    "import time\n\n"
    "while True:  # my experiment: it swallows the interrupt that ends the cell's time\n"
    "    try:\n"
    "        time.sleep(0.1)\n"
    "    except BaseException:\n"
    "        pass\n"
)
BIG_LINE = "print('x' * 50_000_000)  # one 50 MB line\n\n"

# Attacks on the verdict (the test cells and what they check with), from an answer cell.
TRANSFORMER = (
    "def pass_the_tests(lines):  # an IPython input transformer: every test cell becomes `pass`\n"
    "    text = ''.join(lines)\n"
    "    return ['pass\\n'] if 'assert' in text or 'check_tensor' in text else lines\n\n"
    "get_ipython().input_transformers_cleanup.append(pass_the_tests)\n\n"
)
NO_CHECKS = (
    "import torch.testing\n"
    "import seqlab.grading\n"
    "import seqlab.grading.assertions\n\n"
    "def nothing(*args, **kwargs):\n"
    "    return None\n\n"
    "torch.testing.assert_close = seqlab.grading.check_tensor = seqlab.grading.assertions.check_tensor = nothing\n\n"
)
# Answers made of noise of the right shapes, with gradients (no check of values passes them): each answer runs
# the solution's function and adds noise to every floating-point tensor it returns.
NOISY = (
    "import torch as _torch\n\n"
    "def _noisy(value):\n"
    "    if isinstance(value, _torch.Tensor) and value.is_floating_point():\n"
    "        return value + _torch.randn_like(value)\n"
    "    if isinstance(value, (tuple, list)):\n"
    "        return type(value)(_noisy(v) for v in value)\n"
    "    return value\n\n"
)


def noisy_answer(source: str) -> str:
    """An answer cell whose functions return the solution's values plus noise."""
    names = [node.name for node in ast.parse(source).body if isinstance(node, ast.FunctionDef)]
    wrap = "\n_exact_{0} = {0}\n\n\ndef {0}(*args, **kwargs):\n    return _noisy(_exact_{0}(*args, **kwargs))\n"
    wrapped = "".join(wrap.format(name) for name in names)
    return NOISY + source + "\n" + wrapped


def test_ids(nb) -> list:
    return [
        nbgrader_meta(c)["grade_id"]
        for c in nb.cells
        if nbgrader_meta(c).get("grade") and not nbgrader_meta(c).get("solution")
    ]


# kind: (what it does, what it must score: "everything", "nothing" or "early", all but the tests below the
# last answer)
KINDS = {
    "reads_solution": ("every answer runs the instructor's solution, read from solutions/", "nothing"),
    "vandal": (
        "writes into the course, the gradebook, other submissions, the package, from a process left behind",
        "nothing",
    ),
    "big_line": ("the solution, its first answer printing one 50 MB line", "everything"),
    "copied_test": ("the solution, a test cell copied below itself (two cells with one grade id)", "everything"),
    "answer_moved": (
        "the solution, the last answer cell and the test below it deleted, the answer's code in a cell of its own",
        "everything",
    ),
    "graded_off": ("the solution, every test cell's graded flag switched off", "everything"),
    "sidebar": (
        "the solution, a test's grade id deleted, a test made markdown, one worth 50, an answer made read-only",
        "everything",
    ),
    "swallows": (
        "the solution, a cell of its own after the first answer whose loop swallows the interrupt",
        "everything",
    ),
    "exits_in_call": ("the solution, its last answer's function ending the kernel (os._exit) when called", "early"),
    "transformer": ("the release, its first answer making every test cell `pass` (an input transformer)", "nothing"),
    "no_checks": ("exercise 1: noise for answers, assert_close and check_tensor made no-ops", "nothing"),
}
FIRST_EXERCISE_ONLY = {"no_checks"}  # written for exercise 1's answers
ON_THE_COURSE = {"reads_solution", "vandal"}  # attacks never run without the sandbox
ON_THE_VERDICT = {"transformer", "no_checks"}


def attack(kind: str, ex: str, release, solution):
    """The notebook that ``kind`` (a key of ``KINDS``) hands in for exercise ``ex``."""
    nb = solved(release, solution)
    answers = answer_ids(solution)
    first, last = cell(nb, answers[0]), cell(nb, answers[-1])
    tests = test_ids(nb)
    if kind == "reads_solution":
        for grade_id in answers:
            cell(nb, grade_id).source = solution_reading_cell(ex, grade_id)
    elif kind == "vandal":
        nb = nbformat.from_dict(release)
        cell(nb, answers[0]).source = vandal_cell(ex) + cell(nb, answers[0]).source
    elif kind == "big_line":
        first.source = BIG_LINE + first.source
    elif kind == "copied_test":
        copy = nbformat.from_dict(cell(nb, tests[0]))
        copy["id"] = uuid.uuid4().hex[:8]  # Jupyter gives a pasted cell an id of its own, not its metadata
        nb.cells.insert(nb.cells.index(cell(nb, tests[0])) + 1, copy)
    elif kind == "answer_moved":
        at = nb.cells.index(last)
        own = nbformat.v4.new_code_cell(last.source)
        del nb.cells[at : at + 2]
        nb.cells.insert(at, own)
    elif kind == "graded_off":
        for grade_id in tests:
            cell(nb, grade_id).metadata.nbgrader.grade = False
    elif kind == "sidebar":
        second, third = cell(nb, tests[1]), cell(nb, tests[2])
        del cell(nb, tests[0]).metadata.nbgrader["grade_id"]
        second.cell_type = "markdown"
        del second["outputs"], second["execution_count"]
        third.metadata.nbgrader.points = 50
        first.metadata.nbgrader.update(solution=False, locked=True)
    elif kind == "swallows":
        nb.cells.insert(nb.cells.index(first) + 1, nbformat.v4.new_code_cell(SWALLOW))
    elif kind == "exits_in_call":
        name = next(n.name for n in ast.parse(last.source).body if isinstance(n, ast.FunctionDef))
        last.source += f"\n\nimport os\n\n\ndef {name}(*args, **kwargs):\n    os._exit(1)\n"
    elif kind == "transformer":
        nb = nbformat.from_dict(release)
        cell(nb, answers[0]).source = TRANSFORMER + cell(nb, answers[0]).source
    elif kind == "no_checks":
        for grade_id in answers:
            cell(nb, grade_id).source = noisy_answer(cell(nb, grade_id).source)
        first.source = NO_CHECKS + first.source
    else:
        raise ValueError(kind)
    return nb


def processes_with(marker: str = MARKER) -> list:
    """``(pid, command line)`` of the processes whose command line holds ``marker``."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            words = cmdline.read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        if marker in words:
            found.append((int(cmdline.parent.name), " ".join(words)[:200]))
    return found
