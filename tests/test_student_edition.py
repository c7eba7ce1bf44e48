"""The student edition (`make student-edition DIR=...`, tools/student_edition.py), built in a temporary folder.

Inside it: the course's files for students and no instructor's file; its README's two commands pass; the
book builds (from the chapters' stored outputs: that is the edition's `make book`); `seqlab grade` grades an
exercise with the visible tests and says so; no line of a solution or a hidden test of solutions/ appears
in any of its files, its built book and feedback page included; and an update from a changed course
replaces and removes the course's files, keeps the student's own files and edited exercise, and commits
only the course's files, naming the course commit.

Kept cheap: the edition's Makefile is pointed (VENV=) at an environment made of the course's installed
packages and the edition's seqlab, without pip (:func:`student_environment`), and its `make test` runs the
unit tests and doctests (TESTS=) while nbval over book/, which re-runs every chapter, is only collected.
The commands run with ``$MAKE`` (default ``make``).
"""

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import nbformat
import pytest
import yaml
from grading_harness import graded_points, solved, written_points
from test_course_integrity import find_secrets, html_text, leaks, notebook_text

from seqlab.grading.cli import VISIBLE_ONLY

ROOT = Path(__file__).resolve().parents[1]
MAKE = os.environ.get("MAKE", "make")
FIRST = "ex01_lstm_cell"
RELEASE = Path("exercises") / FIRST / f"{FIRST}.ipynb"
# What the edition's `make test` runs here: its unit tests and doctests, not nbval over book/ (minutes).
SOME_TESTS = "seqlab tests"

pytestmark = pytest.mark.xdist_group("student-edition")


def _load_tool():
    spec = importlib.util.spec_from_file_location("student_edition", ROOT / "tools" / "student_edition.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


tool = _load_tool()


def run(command: list, cwd: Path, env: dict | None = None, timeout: int = 600) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in {"MAKEFLAGS", "MFLAGS", "MAKELEVEL", "PYTHONPATH"}}
    clean |= {"OMP_NUM_THREADS": "1", "SEQLAB_PROGRESS": "0"} | (env or {})
    return subprocess.run(command, cwd=cwd, env=clean, capture_output=True, text=True, timeout=timeout)


def student_environment(edition: Path, folder: Path) -> Path:
    """An environment for the edition without pip: a venv whose site-packages puts the edition (its seqlab)
    and the course environment's site-packages on sys.path, with the course environment's programs and
    Jupyter data, stamped as installed so that the edition's Makefile uses it as it is."""
    base = Path(sys.base_prefix) / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}"
    subprocess.run([str(base), "-m", "venv", "--without-pip", str(folder)], check=True)
    site = Path(sysconfig.get_paths(vars={"base": str(folder), "platbase": str(folder)})["purelib"])
    # Plain folders, not site folders: the course's own editable seqlab (a .pth hook there) stays out.
    (site / "seqlab-edition.pth").write_text(f"{edition}\n{sysconfig.get_paths()['purelib']}\n")
    for name in ("share", "etc"):  # nbconvert's templates, the kernel spec, Jupyter's configuration
        if (Path(sys.prefix) / name).is_dir():
            (folder / name).symlink_to(Path(sys.prefix) / name)
    python = folder / "bin" / "python"
    for script in sorted((Path(sys.prefix) / "bin").iterdir()):  # jupyter-book, seqlab, alembic, ...
        target = folder / "bin" / script.name
        first, _, rest = script.read_bytes().partition(b"\n") if script.is_file() else (b"", b"", b"")
        if not target.exists() and first.startswith(b"#!") and b"python" in first:
            target.write_bytes(b"#!" + str(python).encode() + b"\n" + rest)
            target.chmod(0o755)
    (folder / ".installed").touch()  # newer than the edition's requirements.txt: nothing to install
    return folder


def edition_files(edition: Path) -> list:
    return sorted(p for p in edition.rglob("*") if p.is_file() and ".git" not in p.relative_to(edition).parts)


def git(edition: Path, *args) -> str:
    return subprocess.run(["git", *args], cwd=edition, check=True, capture_output=True, text=True).stdout


@pytest.fixture(scope="module")
def edition(tmp_path_factory):
    folder = tmp_path_factory.mktemp("edition") / "seqlab-students"
    result = run([MAKE, "-s", "student-edition", f"DIR={folder}"], cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    return folder


@pytest.fixture(scope="module")
def environment(edition, tmp_path_factory):
    return student_environment(edition, tmp_path_factory.mktemp("env") / "venv")


def student_run(command: list, edition: Path, environment: Path, **kwargs) -> subprocess.CompletedProcess:
    path = f"{environment / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"
    return run(command, cwd=kwargs.pop("cwd", edition), env={"PATH": path}, **kwargs)


def readme_commands(edition: Path) -> list:
    """The commands of the README's section "The two commands"."""
    section = (edition / "README.md").read_text().split("## The two commands", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    return [line.split("#")[0].strip() for line in block.splitlines() if line.split("#")[0].strip()]


@pytest.fixture(scope="module")
def commands(edition, environment):
    """``{command: result}`` for the README's two commands, run in the edition."""
    results = {}
    for command in readme_commands(edition):
        extra = [f"TESTS={SOME_TESTS}"] if command == "make test" else []
        results[command] = student_run(
            [MAKE, *command.split()[1:], f"VENV={environment}", *extra], edition, environment
        )
    return results


@pytest.fixture(scope="module")
def graded(edition, environment, tmp_path_factory):
    """`seqlab grade` in the edition: the untouched release where it lies, and a solved copy outside."""
    untouched = student_run(["seqlab", "grade", str(RELEASE)], edition, environment)
    outside = tmp_path_factory.mktemp("work")
    solution = nbformat.read(ROOT / "solutions" / FIRST / f"{FIRST}.ipynb", as_version=4)
    nbformat.write(solved(nbformat.read(edition / RELEASE, as_version=4), solution), outside / f"{FIRST}.ipynb")
    full = student_run(
        ["seqlab", "grade", f"{FIRST}.ipynb", "--course", str(edition)], edition, environment, cwd=outside
    )
    return {"untouched": untouched, "solved": full}


# ---------------------------------------------------------------------------------------------------
# What the edition holds


def test_the_edition_holds_what_students_get(edition):
    for path in ["README.md", "Makefile", "requirements.txt", "pyproject.toml", "nbgrader_config.py", "_config.yml",
                 "_toc.yml", "_static/seqlab.css", "_ext/seqlab_book.py", "book/intro.md", "book/glossary.md",
                 "book/notation.md", "book/references.md", "conftest.py", "tests/nbval_sanitize.cfg",
                 "seqlab/fonts/cjk-subset.ttf", tool.MANIFEST]:  # fmt: skip
        assert (edition / path).is_file(), f"the edition lacks {path}"
    for path in tool.course_paths(ROOT, ["book", "exercises", "_static", "_ext"]):
        assert (edition / path).read_bytes() == (ROOT / path).read_bytes(), f"the edition's {path} is not the course's"
    modules = {p.relative_to(ROOT) for p in (ROOT / "seqlab").rglob("*.py") if "grading" not in p.parts}
    assert all((edition / m).is_file() for m in modules), "the edition lacks some of seqlab's models or data"
    assert sorted(p.name for p in (edition / "seqlab" / "grading").glob("*.py")) == sorted(tool.grading_modules(ROOT))
    assert not any((edition / "seqlab" / "grading" / name).exists() for name in tool.INSTRUCTOR_GRADING)
    assert sorted(p.name for p in (edition / "tests").glob("*.py")) == sorted(tool.STUDENT_TESTS)


def test_the_edition_holds_nothing_of_the_instructors(edition):
    for path in ["solutions", "gradebook.db", ".ci", ".github", "benchmarks", "tools", "environment.yml",
                 ".pre-commit-config.yaml", "tests/grading_harness.py", "tests/test_course_integrity.py"]:  # fmt: skip
        assert not (edition / path).exists(), f"the edition holds the instructor's {path}"
    config = (edition / "nbgrader_config.py").read_text()
    for word in ["CourseDirectory", "solutions", "db_url", "ExportApp", "os.environ"]:
        assert word not in config, f"the edition's nbgrader_config.py says {word}"
    for package in tool.INSTRUCTOR_PACKAGES:
        assert not re.search(rf"(?m)^{re.escape(package)}==", (edition / "requirements.txt").read_text()), package
    readme = (edition / "README.md").read_text()
    assert "## Instructors" not in readme and "make release" not in readme and "nbgrader autograde" not in readme
    pages = re.findall(r"(?:root|file):\s*(\S+)", (edition / "_toc.yml").read_text())
    assert pages and not [page for page in pages if "solutions" in page]
    for page in pages:
        assert any((edition / f"{page}{suffix}").is_file() for suffix in (".md", ".ipynb")), f"_toc.yml: {page}"


def test_the_edition_is_a_repository_at_the_course_commit(edition):
    named = re.search(r"from course commit ([0-9a-f]{40})", git(edition, "log", "-1", "--format=%B")).group(1)
    git(ROOT, "merge-base", "--is-ancestor", named, "HEAD")  # the course's commit (or one before it)
    subject = git(ROOT, "log", "-1", "--format=%s", named).strip()
    assert subject not in git(edition, "log", "--format=%B"), "the course's commit messages stay in the course"
    assert git(edition, "status", "--porcelain", "--untracked-files=all") == ""  # _build/ and feedback: ignored
    manifest = json.loads((edition / tool.MANIFEST).read_text())["files"]
    assert sorted(manifest) == sorted(set(git(edition, "ls-files").split()) - {tool.MANIFEST})


# ---------------------------------------------------------------------------------------------------
# Inside it: the README's commands, the book, seqlab grade


def test_the_readme_names_two_commands(edition):
    assert readme_commands(edition) == ["make book", "make test"]


def test_make_book_builds_the_book_from_its_stored_outputs(edition, commands):
    result = commands["make book"]
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "The book is built" in result.stdout
    html = edition / "_build" / "html"
    chapter = (html / "book" / "01_rnn_lstm_gru.html").read_text()
    assert "<img" in chapter, "chapter 1's stored figures are not in the built page"
    assert (html / "exercises" / FIRST / f"{FIRST}.html").is_file()
    config = yaml.safe_load((edition / "_config.yml").read_text(encoding="utf-8"))
    assert config["execute"]["execute_notebooks"] == "off", "the edition's book build executes the chapters"


def test_make_test_passes(commands):
    result = commands["make test"]
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    passed = re.search(r"(\d+) passed", result.stdout)
    assert passed and int(passed.group(1)) > 100 and " failed" not in result.stdout, result.stdout[-3000:]


def test_every_test_of_the_edition_is_collected(edition, environment):
    """The whole of the edition's `make test`, collected: every shipped test, every module of seqlab (its
    doctests) and every chapter (nbval) is found and imports with what the edition holds."""
    result = student_run(
        [str(environment / "bin" / "python"), "-m", "pytest", "--collect-only", "-q", "--doctest-modules", "--nbval",
         "--nbval-sanitize-with", "tests/nbval_sanitize.cfg", "seqlab", "tests", "book"],
        edition, environment,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    collected = int(re.search(r"(\d+) tests? collected", result.stdout).group(1))
    assert collected > 400 and "error" not in result.stdout.lower().split("collected")[-1]
    assert "book/01_rnn_lstm_gru.ipynb::Cell" in result.stdout and "tests/test_rnn.py::" in result.stdout


def row(output: str, grade_id: str) -> str:
    return next(line for line in output.splitlines() if line.split()[:1] == [grade_id])


def test_seqlab_grade_grades_with_the_visible_tests_and_says_so(edition, graded):
    release = nbformat.read(edition / RELEASE, as_version=4)
    points = graded_points(release)
    total = sum(points.values())
    untouched = graded["untouched"]
    assert untouched.returncode == 1, untouched.stdout + untouched.stderr
    out = untouched.stdout
    assert f"exercise {FIRST}, with the visible tests only" in out
    for grade_id, p in points.items():  # each test ran on the student's stub
        assert row(out, grade_id).split()[1:] == ["0", "/", f"{p:g}", "NotImplementedError"], row(out, grade_id)
    assert out.rstrip().splitlines()[-1] == VISIBLE_ONLY
    solved_run = graded["solved"]
    assert solved_run.returncode == 0, solved_run.stdout + solved_run.stderr
    assert f"exercise {FIRST}, with the visible tests only" in solved_run.stdout
    assert row(solved_run.stdout, "total").split()[:4] == ["total", f"{total:g}", "/", f"{total:g}"]
    for grade_id in written_points(release):  # answered: the instructor's to grade
        assert row(solved_run.stdout, grade_id).endswith("graded by your instructor"), row(solved_run.stdout, grade_id)
    assert "Full marks" in solved_run.stdout and solved_run.stdout.rstrip().splitlines()[-1] == VISIBLE_ONLY


# ---------------------------------------------------------------------------------------------------
# No solution, no hidden test


def secret_findings(folder: Path, secrets) -> list:
    """Every leak of a solution or hidden-test line in every file under ``folder`` (its .git aside): as
    text, and notebooks by their cells and outputs, pages by what they show."""
    found = []
    for path in edition_files(folder):
        raw = path.read_bytes().decode("utf-8", errors="replace")
        texts = [raw]
        if path.suffix == ".ipynb":
            texts.append(notebook_text(path))
        elif path.suffix == ".html":
            texts.append(html_text(raw))
        found += [f"{path.relative_to(folder)}: {leak}" for text in texts for leak in leaks(text, secrets)]
    return found


@pytest.fixture(scope="module")
def secrets():
    return find_secrets(sorted((ROOT / "solutions").glob("*/*.ipynb")))


def test_no_line_of_a_solution_or_hidden_test_anywhere(edition, commands, graded, secrets):
    """Every file: the edition as written, its built book and the feedback page that grading wrote."""
    assert (edition / "_build" / "html" / "index.html").is_file() and commands
    assert (edition / RELEASE).with_name(f"{FIRST}.feedback.html").is_file() and graded
    found = secret_findings(edition, secrets)
    assert not found, "the student edition shows solutions or hidden tests:\n" + "\n".join(found[:30])


def test_the_scan_finds_a_planted_line(tmp_path, secrets):
    hidden, answer = sorted(secrets.hidden)[0], sorted(secrets.solution)[0]
    (tmp_path / "notes.py").write_text(f"x = 1\n    {hidden}\n")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(f"def f():\n    {answer}")])
    nbformat.write(nb, tmp_path / "work.ipynb")
    found = secret_findings(tmp_path, secrets)
    assert any(f.startswith("notes.py: hidden-test line") for f in found), found
    assert any(f.startswith("work.ipynb: solution line") for f in found), found


# ---------------------------------------------------------------------------------------------------
# Updating in place


def course_copy(folder: Path) -> Path:
    """This course's files, in a repository of their own, so that a test can change the course."""
    listed = git(ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard").split("\0")
    paths = [p for p in listed if p and (ROOT / p).is_file()]
    for path in paths:
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / path, folder / path)
    git(folder, "init", "-q")
    commit(folder, paths, "the course")
    return folder


def commit(repository: Path, paths: list, message: str) -> None:
    git(repository, "add", "--", *paths)
    git(repository, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", message)


def test_an_update_replaces_the_courses_files_and_keeps_the_students(tmp_path):
    # An edition of a course that the test can change, with a student's work in it: their own files, and
    # their exercise, edited.
    course = course_copy(tmp_path / "course")
    edition = tmp_path / "edition"
    script = [sys.executable, str(ROOT / "tools" / "student_edition.py"), str(edition), "--course", str(course)]
    first = run(script, cwd=ROOT)
    assert first.returncode == 0, first.stdout + first.stderr
    (edition / "my_notes.md").write_text("attention is a weighted average\n")
    scratch = edition / "exercises" / FIRST / "scratch.py"
    scratch.write_text("print('trying things')\n")
    mine = nbformat.read(edition / RELEASE, as_version=4)
    mine.cells.append(nbformat.v4.new_code_cell("# my own cell: I tried a smaller hidden size here"))
    nbformat.write(mine, edition / RELEASE)
    my_exercise = (edition / RELEASE).read_bytes()
    (edition / "_static" / "favicon.svg").unlink()  # a course file that the student deleted comes back
    second = next(p for p in sorted((edition / "exercises").glob("*/*.ipynb")) if p.parent.name != FIRST)

    # The course changes: a page edited, a file added, another removed, both exercises changed.
    (course / "book" / "intro.md").write_text((course / "book" / "intro.md").read_text() + "\nA new paragraph.\n")
    (course / "_static" / "extra.css").write_text("/* new */\n")
    (course / "_static" / "seqlab.js").unlink()
    for path in [course / RELEASE, course / second.relative_to(edition)]:
        nb = nbformat.read(path, as_version=4)
        nb.cells[0].source += "\n\n(Updated by the instructor.)"
        nbformat.write(nb, path)
    changed = ["book/intro.md", "_static/extra.css", "_static/seqlab.js", str(RELEASE)]
    commit(course, [*changed, str(second.relative_to(edition))], "a change")
    head = git(course, "rev-parse", "HEAD").strip()

    before = git(edition, "rev-parse", "HEAD").strip()
    result = run(script, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"kept {RELEASE}" in result.stdout

    assert "A new paragraph." in (edition / "book" / "intro.md").read_text()
    assert (edition / "_static" / "extra.css").is_file() and not (edition / "_static" / "seqlab.js").exists()
    assert "(Updated by the instructor.)" in nbformat.read(second, as_version=4).cells[0].source
    assert (edition / RELEASE).read_bytes() == my_exercise, "the student's edited exercise was overwritten"
    assert (edition / "my_notes.md").read_text() == "attention is a weighted average\n"
    assert scratch.read_text() == "print('trying things')\n"
    assert (edition / "_static" / "favicon.svg").read_bytes() == (course / "_static" / "favicon.svg").read_bytes()

    assert git(edition, "rev-parse", "HEAD~1").strip() == before
    assert f"from course commit {head}" in git(edition, "log", "-1", "--format=%B")
    committed = set(git(edition, "show", "--name-only", "--format=", "HEAD").split())
    assert committed == {"book/intro.md", "_static/extra.css", "_static/seqlab.js", str(second.relative_to(edition)),
                         tool.MANIFEST}  # fmt: skip
    status = git(edition, "status", "--porcelain", "--untracked-files=all").splitlines()
    assert f" M {RELEASE}" in status and "?? my_notes.md" in status and f"?? {scratch.relative_to(edition)}" in status

    # Nothing new in the course: nothing to commit, nothing touched.
    again = run(script, cwd=ROOT)
    assert again.returncode == 0 and "nothing to commit" in again.stdout, again.stdout + again.stderr
    assert git(edition, "rev-list", "--count", "HEAD").strip() == "2"
    assert (edition / RELEASE).read_bytes() == my_exercise


# ---------------------------------------------------------------------------------------------------
# The tool's refusals and lists


def test_the_tool_refuses_a_folder_that_is_not_an_edition(tmp_path):
    (tmp_path / "thesis.tex").write_text("mine\n")
    with pytest.raises(tool.Refused, match="not a student edition"):
        tool.build(tmp_path)
    with pytest.raises(tool.Refused, match="overlaps the course"):
        tool.build(ROOT / "_build" / "edition")
    assert (tmp_path / "thesis.tex").read_text() == "mine\n" and not (tmp_path / ".git").exists()


def test_the_tool_refuses_solutions_markers_and_missing_pages():
    toc = b"format: jb-book\nroot: book/intro\n"
    good = {"_toc.yml": toc, "book/intro.md": b"# Intro\n"}
    tool.check(good)
    for bad, reason in [
        ({"solutions/ex/ex.ipynb": b"{}"}, "instructor's"),
        ({"seqlab/x.py": b"    ### BEGIN HIDDEN TESTS\n"}, "marker"),
        ({"book/intro.md": b"# moved\n", "_toc.yml": toc + b"chapters:\n  - file: book/gone\n"}, "lacks"),
    ]:
        with pytest.raises(tool.Refused, match=reason):
            tool.check(good | bad)


def test_the_grading_rules_leave_the_instructors_settings_out():
    config = (
        "import os\nc = get_config()\n"
        'c.CourseDirectory.db_url = os.environ["SEQLAB_GRADEBOOK_URL"]\n'
        'c.CourseDirectory.source_directory = "solutions"\n'
        "c.Execute.timeout = 60\n"
        'c.ExportApp.plugin_class = "seqlab.grading.nbgrader_plugins.ExportWithNotes"\n'
    )
    rules = tool.grading_rules(config)
    assert "c.Execute.timeout = 60" in rules
    assert "CourseDirectory" not in rules and "ExportApp" not in rules and "environ" not in rules
    with pytest.raises(tool.Refused, match="not a literal"):
        tool.grading_rules(config + 'c.Sandbox.bwrap = os.environ["BWRAP"]\n')


def test_every_file_of_tests_is_classified():
    """A new test file is shipped to students or kept by the instructor on purpose: name it in one list."""
    assert not set(tool.STUDENT_TESTS) & set(tool.INSTRUCTOR_TESTS)
    assert tool.unclassified_tests(ROOT) == [], "name these in STUDENT_TESTS or INSTRUCTOR_TESTS"
