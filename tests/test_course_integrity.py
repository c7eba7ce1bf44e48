"""The course's invariants: solutions/ is the single source, exercises/ is exactly its nbgrader release,
and neither the release nor the rendered book shows a solution or a hidden test.

Secrets are found by reading solutions/: every line between ``### BEGIN SOLUTION`` and
``### END SOLUTION`` (solution code) or between ``### BEGIN HIDDEN TESTS`` and ``### END HIDDEN TESTS``
(hidden tests). A secret line that also appears in public (outside those regions in solutions/, or in
seqlab's own source, which students have) is not a secret; nor are lines too short to mean anything.
"""

import html
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import pytest
from rendered_book import editions, shared_book

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = ROOT / "solutions"
EXERCISES = ROOT / "exercises"
BIN = Path(sys.executable).parent  # the course environment's bin/ (nbgrader runs `alembic` from PATH)

MARKERS = ["BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"]
REGIONS = {
    "### BEGIN SOLUTION": ("### END SOLUTION", "solution"),
    "### BEGIN HIDDEN TESTS": ("### END HIDDEN TESTS", "hidden"),
}
MIN_SECRET_LENGTH = 10  # shorter lines ("else:", "return x") say nothing about a solution
# What nbgrader itself skips when it copies an assignment (CourseDirectory.ignore's defaults).
NBGRADER_IGNORES = {".ipynb_checkpoints", "__pycache__", "feedback"}


def assignments(folder: Path) -> list:
    return sorted(p.name for p in folder.iterdir() if p.is_dir() and p.name not in NBGRADER_IGNORES)


def notebooks(folder: Path) -> list:
    """Relative paths of the notebooks in ``folder/<assignment>/``."""
    return sorted(str(p.relative_to(folder)) for p in folder.glob("*/*.ipynb"))


@dataclass
class Secrets:
    solution: set = field(default_factory=set)
    hidden: set = field(default_factory=set)

    def all(self) -> set:
        return self.solution | self.hidden


def split_regions(source: str):
    """Yield (region, stripped line) for every line of a cell; region is None, "solution" or "hidden"."""
    region, end = None, None
    for line in source.splitlines():
        stripped = line.strip()
        if region is None and stripped in REGIONS:
            end, region = REGIONS[stripped]
        elif region is not None and stripped == end:
            region = None
        else:
            yield region, stripped


def public_lines() -> set:
    lines = {line.strip() for path in (ROOT / "seqlab").rglob("*.py") for line in path.read_text().splitlines()}
    for path in SOLUTIONS.glob("*/*.ipynb"):
        for cell in nbformat.read(path, as_version=4).cells:
            lines |= {line for region, line in split_regions(cell.source) if region is None}
    return lines


def find_secrets(paths) -> Secrets:
    public = public_lines()
    secrets = Secrets()
    for path in paths:
        for cell in nbformat.read(path, as_version=4).cells:
            for region, line in split_regions(cell.source):
                if region and len(line) >= MIN_SECRET_LENGTH and line not in public:
                    getattr(secrets, region).add(line)
    return secrets


def leaks(text: str, secrets: Secrets) -> list:
    """The markers and the secret lines that ``text`` contains (a secret must be a whole line of it)."""
    found = [f"marker {m!r}" for m in MARKERS if m in text]
    lines = {line.strip() for line in text.splitlines()}
    found += [f"solution line {line!r}" for line in sorted(secrets.solution & lines)]
    found += [f"hidden-test line {line!r}" for line in sorted(secrets.hidden & lines)]
    return found


def notebook_text(path: Path) -> str:
    nb = nbformat.read(path, as_version=4)
    parts = []
    for cell in nb.cells:
        parts.append(cell.source)
        for output in cell.get("outputs", []):
            parts.append(output.get("text", ""))
            parts.extend(v for v in output.get("data", {}).values() if isinstance(v, str))
    return "\n".join(parts)


def html_text(markup: str) -> str:
    """What a reader sees in a page: tags dropped (syntax highlighting splits code into spans), entities decoded."""
    markup = re.sub(r"<(script|style)\b.*?</\1>", "", markup, flags=re.S | re.I)
    return html.unescape(re.sub(r"<[^>]+>", "", markup))


def assert_no_leaks_in_html(html_dir, secrets: Secrets | None = None) -> None:
    """Fail if any page of a rendered book shows a solution or hidden test of solutions/.

    Reads every ``.html`` page as text (tags removed, entities decoded), every ``.ipynb`` (cells and
    outputs) and every other text source the build copies (``_sources``: ``.md``, ``.txt``, ``.py``), and
    looks for nbgrader's markers and for the secret lines of solutions/.
    """
    secrets = find_secrets(sorted(SOLUTIONS.glob("*/*.ipynb"))) if secrets is None else secrets
    problems = []
    for path in sorted(Path(html_dir).rglob("*")):
        if path.suffix == ".html":
            text = html_text(path.read_text(errors="replace"))
        elif path.suffix == ".ipynb":
            text = notebook_text(path)
        elif path.suffix in {".md", ".txt", ".py"}:
            text = path.read_text(errors="replace")
        else:
            continue
        problems += [f"{path.relative_to(html_dir)}: {leak}" for leak in leaks(text, secrets)]
    assert not problems, "the rendered book shows solutions or hidden tests:\n" + "\n".join(problems)


# ---------------------------------------------------------------------------------------------------
# (e) solutions/ holds notebooks only; (d) every solution has its release and vice versa.


def test_solutions_hold_only_notebooks():
    """nbgrader copies every other file of solutions/<assignment>/ to the students, answers included."""
    others = [
        str(p.relative_to(ROOT))
        for p in SOLUTIONS.rglob("*")
        if p.is_file() and p.suffix != ".ipynb" and not NBGRADER_IGNORES & set(p.relative_to(SOLUTIONS).parts)
    ]
    assert not others, f"only notebooks may live in solutions/<assignment>/, found: {others}"


def test_every_solution_has_a_release_and_vice_versa():
    assert assignments(SOLUTIONS), "no assignment in solutions/"
    assert assignments(SOLUTIONS) == assignments(EXERCISES)
    assert notebooks(SOLUTIONS) == notebooks(EXERCISES), "run `make release` and commit exercises/"
    for name in assignments(SOLUTIONS):
        assert re.fullmatch(r"ex\d\d_[a-z0-9_]+", name), f"assignment folders are named exNN_name, got {name}"
        assert (SOLUTIONS / name / f"{name}.ipynb").is_file(), f"solutions/{name}/ must hold {name}.ipynb"


# ---------------------------------------------------------------------------------------------------
# (a) the committed release is exactly what nbgrader makes from solutions/.


def test_release_is_regenerated_exactly(tmp_path):
    shutil.copy(ROOT / "nbgrader_config.py", tmp_path)
    shutil.copytree(SOLUTIONS, tmp_path / "solutions", ignore=shutil.ignore_patterns(*NBGRADER_IGNORES))
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    # What `make release` runs: "*" is a glob over solutions/, every exercise in one nbgrader process.
    result = subprocess.run(
        [str(BIN / "nbgrader"), "generate_assignment", "*", "--force", f"--CourseDirectory.root={tmp_path}"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, f"nbgrader generate_assignment failed:\n{result.stderr}"

    assert notebooks(tmp_path / "exercises") == notebooks(EXERCISES)
    for relative in notebooks(EXERCISES):
        # Nothing needs normalising: nbgrader's output is a function of the source notebook (checksums
        # are MD5s of cell sources, cell ids come from the source, and nbgrader_config.py drops the
        # execution timestamps with the outputs), so the whole notebook must match, not just the cells.
        fresh = nbformat.read(tmp_path / "exercises" / relative, as_version=4)
        committed = nbformat.read(EXERCISES / relative, as_version=4)
        stale = f"exercises/{relative} is not what solutions/ gives: run `make release` and commit it"
        assert len(fresh.cells) == len(committed.cells), stale
        for new, old in zip(fresh.cells, committed.cells):
            assert (new.cell_type, new.get("id")) == (old.cell_type, old.get("id")), stale
            assert new.source == old.source, f"{stale} (cell {old.get('id')}: source)"
            assert new.metadata == old.metadata, f"{stale} (cell {old.get('id')}: metadata)"
        assert fresh == committed, f"{stale} (notebook metadata or outputs)"


# ---------------------------------------------------------------------------------------------------
# (b) the release shows no solution and no hidden test.


@pytest.mark.parametrize("relative", notebooks(SOLUTIONS))
def test_there_are_secrets_to_look_for(relative):
    """Guards the leak checks against passing vacuously (markers misspelt, regions not found)."""
    secrets = find_secrets([SOLUTIONS / relative])
    assert len(secrets.solution) >= 3, f"{relative}: found too few solution lines: {secrets.solution}"
    assert len(secrets.hidden) >= 3, f"{relative}: found too few hidden-test lines: {secrets.hidden}"


@pytest.mark.parametrize("relative", notebooks(EXERCISES))
def test_release_shows_no_solution_and_no_hidden_test(relative):
    secrets = find_secrets(sorted(SOLUTIONS.glob("*/*.ipynb")))
    found = leaks(notebook_text(EXERCISES / relative), secrets)
    assert not found, f"exercises/{relative} leaks:\n" + "\n".join(found)


@pytest.mark.parametrize("relative", notebooks(EXERCISES))
def test_release_has_no_outputs(relative):
    nb = nbformat.read(EXERCISES / relative, as_version=4)
    assert not [c.id for c in nb.cells if c.get("outputs")], "the release must be shipped without outputs"


# ---------------------------------------------------------------------------------------------------
# The solution notebooks follow the grading rules (DESIGN.md, "Grading rules that nbgrader imposes").


@pytest.mark.parametrize("relative", notebooks(SOLUTIONS))
def test_solution_notebook_follows_the_grading_rules(relative):
    nb = nbformat.read(SOLUTIONS / relative, as_version=4)
    assert nb.metadata.kernelspec.name == "python3"
    graded = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]
    answers = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")]
    written = [c for c in graded if c in answers]  # written answers, graded by the instructor
    tests = [c for c in graded if c not in answers]
    assert tests and answers
    for cell in written:
        grade_id = cell.metadata.nbgrader.grade_id
        assert cell.cell_type == "markdown" and not cell.metadata.nbgrader.locked, f"{grade_id}: a written answer"
        assert cell.metadata.nbgrader.points > 0, f"{grade_id}: a written answer needs points"
    for cell in tests:
        grade_id = cell.metadata.nbgrader.grade_id
        assert cell.cell_type == "code" and cell.metadata.nbgrader.locked, f"{grade_id}: tests are locked code"
        assert cell.metadata.nbgrader.points > 0, f"{grade_id}: a test cell needs points"
        assert "### BEGIN HIDDEN TESTS" in cell.source, f"{grade_id}: every test cell has hidden tests"
        # The stored outputs are those of the solution: a test cell that writes to stderr or fails scores 0,
        # and one that ends in a value would be read as partial credit.
        kinds = [(o.output_type, o.get("name")) for o in cell.outputs]
        assert ("stream", "stderr") not in kinds, f"{grade_id} writes to stderr"
        assert not {"error", "execute_result"} & {k for k, _ in kinds}, f"{grade_id}: outputs {kinds}"
    for cell in answers:
        assert "### BEGIN SOLUTION" in cell.source, f"{cell.metadata.nbgrader.grade_id}: no solution region"
    # nbgrader 0.9.6 puts a deleted test cell back after the nbgrader cell before it in the source, looking
    # that cell up among the submission's answer and test cells only: a locked cell that is neither (the
    # setup), or a markdown cell with nbgrader metadata, right before a test cell makes autograde crash.
    # A written answer (a manually graded markdown answer) is the notebook's last nbgrader cell, so no test
    # cell comes back after it.
    marked = [c.id for c in nb.cells if c.cell_type == "markdown" and "nbgrader" in c.metadata and c not in written]
    assert not marked, f"markdown cells other than written answers must carry no nbgrader metadata: {marked}"
    marked_cells = [c for c in nb.cells if "nbgrader" in c.metadata]
    last = marked_cells[len(marked_cells) - len(written) :]
    assert last == written, "the written answers come after every other nbgrader cell"
    tracked = [c.metadata.nbgrader for c in nb.cells if "nbgrader" in c.metadata]
    for before, cell in zip(tracked, tracked[1:]):
        if cell.get("grade"):
            assert before.get("grade") or before.get("solution"), f"test {cell.grade_id} follows {before.grade_id}"


TASK_HEADING = re.compile(r"^## Task \d+: .*\((\d+) points?(, graded by your instructor)?\)$", re.MULTILINE)
TEST_FIRST_LINE = re.compile(r"^# Test \d+ \((\d+) points?\): ")


@pytest.mark.parametrize("relative", notebooks(SOLUTIONS))
def test_exercise_states_what_each_task_is_worth(relative):
    """The introduction states the total (``N points in all``); each ``## Task k: ... (P points)`` heading
    the points of the graded cells below it up to the next task; each test cell's first line its own."""
    nb = nbformat.read(SOLUTIONS / relative, as_version=4)
    meta = [c.metadata.get("nbgrader", {}) for c in nb.cells]
    total = sum(m.get("points", 0) for m in meta if m.get("grade"))
    assert f"{total:g} points in all" in nb.cells[0].source, f"the introduction must say '{total:g} points in all'"
    tasks = []  # [heading, points it states, points of its graded cells, written answer]
    for cell, m in zip(nb.cells, meta):
        heading = TASK_HEADING.search(cell.source) if cell.cell_type == "markdown" else None
        if heading:
            tasks.append([heading.group(0), int(heading.group(1)), 0, bool(heading.group(2))])
        elif m.get("grade"):
            assert tasks, f"{m['grade_id']} comes before the first task heading"
            tasks[-1][2] += m["points"]
            if not m.get("solution"):
                first = TEST_FIRST_LINE.match(cell.source)
                assert first, f"{m['grade_id']}: the first line must be '# Test n (p points): ...'"
                assert int(first.group(1)) == m["points"], (
                    f"{m['grade_id']}: says {first.group(1)}, worth {m['points']}"
                )
            else:
                assert tasks[-1][3], f"{m['grade_id']}: its task must say 'graded by your instructor'"
    assert tasks, "no '## Task k: ... (P points)' heading"
    for heading, stated, worth, _ in tasks:
        assert stated == worth, f"{heading!r}: its graded cells are worth {worth:g}"


# ---------------------------------------------------------------------------------------------------
# (c) the rendered book, and the leak check itself.


def test_rendered_book_shows_no_solution(tmp_path_factory):
    html_dir = shared_book(tmp_path_factory)  # as `make book` and `make book-zh` render it, from the stored outputs
    for language in ["en", *editions.TRANSLATED]:
        edition = html_dir if language == "en" else html_dir / language
        assert (edition / "exercises").is_dir(), f"the {language} edition's exercise pages were not rendered"
    assert_no_leaks_in_html(html_dir)  # every edition: zh_CN/ and zh_TW/ are inside


def page(code: str) -> str:
    """A page as Sphinx renders a code cell: highlighted tokens in spans, HTML entities."""
    spans = "".join(f'<span class="n">{html.escape(token)}</span>' for token in re.split(r"(\W)", code))
    return f'<html><body><div class="highlight"><pre>{spans}</pre></div><script>var x = 1;</script></body></html>'


def test_leak_check_finds_solutions_in_html(tmp_path):
    secrets = find_secrets(sorted(SOLUTIONS.glob("*/*.ipynb")))
    (tmp_path / "clean.html").write_text(page("import torch\nprint('hello')\n"))
    assert_no_leaks_in_html(tmp_path, secrets)

    for kind, lines in [("solution", secrets.solution), ("hidden-test", secrets.hidden)]:
        line = sorted(lines)[0]
        leaked = tmp_path / "leak"
        leaked.mkdir(exist_ok=True)
        (leaked / "page.html").write_text(page(f"def f(x):\n    {line}\n"))
        with pytest.raises(AssertionError, match=f"leak/page.html: {kind} line"):
            assert_no_leaks_in_html(tmp_path, secrets)
        shutil.rmtree(leaked)

    (tmp_path / "marker.html").write_text(page("    ### BEGIN SOLUTION\n"))
    with pytest.raises(AssertionError, match="marker.html: marker 'BEGIN SOLUTION'"):
        assert_no_leaks_in_html(tmp_path, secrets)


# ---------------------------------------------------------------------------------------------------
# The nbval sanitize rules do what the notebooks rely on.


@pytest.mark.parametrize(
    "gpu,cpu",
    [
        ("tensor([1., 2.], device='cuda:0')", "tensor([1., 2.])"),
        ("tensor(0.5000, device='cuda:1', grad_fn=<AddBackward0>)", "tensor(0.5000, grad_fn=<AddBackward0>)"),
        ("running on device='cuda:0'", "running on device='cpu'"),
        ("device(type='cuda', index=0)", "device(type='cpu')"),
        ("<seqlab.models.rnn.LSTM object at 0x7f3a2c1d9e80>", "<seqlab.models.rnn.LSTM object at 0x55d0c0ffee00>"),
    ],
)
def test_nbval_sanitize_rules(gpu, cpu):
    from nbval.plugin import get_sanitize_patterns

    rules = get_sanitize_patterns((ROOT / "tests" / "nbval_sanitize.cfg").read_text())
    assert len(rules) >= 3

    def sanitize(text):
        for regex, replace in rules:  # in file order, as nbval applies them
            text = re.sub(regex, replace, text)
        return text

    assert sanitize(gpu) == sanitize(cpu)
    assert "cuda" not in sanitize(gpu)
