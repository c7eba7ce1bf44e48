"""No student markup runs in the instructor's browser (issue 25, item 2): a hostile submission, graded for
real, opened in nbgrader's formgrader on a real Jupyter server by Playwright driving Chromium.

A temporary course with one exercise (the first) is made from this repository's nbgrader_config.py and
solution (``nbgrader generate_assignment``). One student hands in the untouched release (0 points for the
code) with cells of their own and a written answer that carry the payloads of the issue:

| label               | where                                   | what                                       |
|---------------------|-----------------------------------------|--------------------------------------------|
| html-script         | a code cell's HTML output               | ``<script>``                               |
| html-img-onerror    | a code cell's HTML output               | ``<img src=x onerror=…>``                  |
| html-svg-onload     | a code cell's HTML output               | inline ``<svg onload=…>``                  |
| html-svg-script     | a code cell's HTML output               | inline ``<svg><script>…``                  |
| html-iframe         | a code cell's HTML output               | ``<iframe srcdoc="<script>…">``            |
| html-js-link        | a code cell's HTML output               | ``<a href="javascript:…">`` (clicked)      |
| js-output           | a code cell's output                    | ``application/javascript`` (Javascript())  |
| svg-onload          | a code cell's ``image/svg+xml`` output  | ``<svg onload=…>`` (SVG())                 |
| svg-script          | a code cell's ``image/svg+xml`` output  | ``<svg><script>…`` (SVG())                 |
| md-answer-img       | the written answer (markdown)           | ``<img src=x onerror=…>``                  |
| md-answer-script    | the written answer (markdown)           | ``<script>``                               |
| md-answer-link      | the written answer (markdown)           | ``[…](javascript:…)`` (clicked)            |
| md-own-img/-script/ | a markdown cell of the student's own    | the same three, and an ``<iframe>``        |
| -link/-iframe       |                                         |                                            |

Every payload, wherever it runs, marks itself (``window.__pwned``, ``document.title``, a console message,
an ``alert``) and then does what the issue's attack did through formgrader's own API: it reads the
submission's grades (GET /formgrader/api/grades) and sets each to its maximum (PUT
/formgrader/api/grade/<id>, the request formgrader's page sends to save a score), and writes
``pwned-<label>.txt`` into the course (PUT /api/contents/…). The outputs are made for real: the hostile
cells are executed once with nbclient before submission, as a student's would be, and ``nbgrader
autograde`` (sandboxed, the real command) executes them again in the student's kernel.

A Jupyter server (this environment's, nbgrader's server extensions on) serves the course on a free port of
127.0.0.1 with a token; Chromium, which reaches nothing but 127.0.0.1 and file://, opens the page an
instructor grades the submission on (/formgrader/submissions/<submission notebook id>/?index=0) and the
feedback page (``nbgrader generate_feedback``) as a file. The instructor logs in first on the server's
login page: a token in a formgrader page's address logs in for that page's folder only (nbgrader's
handlers set the cookie without a path), and formgrader's own API calls, the attack's among them, would be
refused. Every ``javascript:`` link a payload planted is clicked. Then: no payload ran on either page (no
flag, title, console message, dialog, popup or write request), the markup shown carries no script, event
handler, ``javascript:`` URL or iframe, the gradebook holds exactly what autograde wrote, no file of the
course was created or changed (the server's runtime, data and config folders are outside it), and what the
student wrote still reads, the PNG output still an ``<img>`` with a data: URI. Skipped, with the reason,
without Chromium, Playwright or bubblewrap (`nbgrader autograde` grades only in its sandbox).

Without a sanitiser (commit 61ccd63) 14 of the 16 payloads ran in formgrader and 13 in the feedback page,
the submission went from 0/12 to 12/12 and 14 files were written into the course. The two SVG() payloads
never ran: nbconvert shows an ``image/svg+xml`` output as an ``<img>`` (a data: URI), in which script does
not run; they stay for a template that inlines SVG. The Javascript() output does not run in the feedback
page only because nbconvert's ``$(…)`` before it fails there (no jQuery).
"""

import base64
import json
import os
import secrets
import shutil
import socket
import struct
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
import zlib
from pathlib import Path

import nbformat
import pytest
from grading_harness import BIN, ROOT, SANDBOX_MISSING, cell, nbgrader, written_points
from test_browser import CHROMIUM  # Chromium found as the book's browser test finds it

EXERCISE = "ex01_lstm_cell"
STUDENT = "mallory"
MARKER = "SEQLAB-PAYLOAD"  # in every payload's console message and code
# Bounds on waits: they only cut a hang short (a busy 2-core machine is slow, never this slow).
SERVER_START_S = 120
PAGE_LOAD_MS = 120_000
IDLE_MS = 60_000
# What the pages' own templates load from the network (refused here, offline): nbconvert's MathJax.
TEMPLATE_ASSETS = ("https://cdnjs.cloudflare.com/ajax/libs/mathjax/",)
SETTLE_MS = 2_500  # after the page is idle: time for a timer or a late handler to fire


try:
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import sync_playwright
except ImportError:  # the course environment has it (requirements.txt); a bare one may not
    sync_playwright = PlaywrightError = None

pytestmark = [
    pytest.mark.skipif(
        CHROMIUM is None,
        reason="Chromium is not installed (apt-get install chromium, as .ci/run does): "
        "the formgrader browser test needs it",
    ),
    pytest.mark.skipif(sync_playwright is None, reason="playwright is not installed (pip install -r requirements.txt)"),
    pytest.mark.skipif(
        bool(SANDBOX_MISSING), reason=f"no sandbox here (nbgrader autograde grades only in it): {SANDBOX_MISSING}"
    ),
]


# ---------------------------------------------------------------------------------------------------
# The payloads


def payload(label: str) -> str:
    """JavaScript that marks itself as ``label`` and forges the grades and a file, through formgrader's API,
    with the instructor's session. One line, no space, no double quote, ``<``, ``>``, ``&``, ``%`` or
    backslash: it fits in an HTML attribute, a ``javascript:`` URL and a markdown link as it is. It acts
    on ``window.parent`` (the page itself, unless it runs in an iframe of the page)."""
    return (
        "(function(w){"
        f"var l='{label}';"
        "w.__pwned=(w.__pwned||[]).concat([l]);"
        "w.document.title='PWNED-'+l;"
        f"w.console.log('{MARKER}-ran-'+l);"
        "var p=w.location.pathname.split('/');var i=p.indexOf('submissions');"
        "var x=(w.document.cookie.match(/_xsrf=([^;]*)/)||[])[1];"
        "var h={'Content-Type':'application/json','X-XSRFToken':x};"
        "if(i!=-1){"
        "w.fetch('/formgrader/api/grades?submission_id='+p[i+1]).then(function(r){return(r.json())})"
        ".then(function(gs){gs.forEach(function(g){w.fetch('/formgrader/api/grade/'+g.id,{method:'PUT',"
        "headers:h,body:JSON.stringify({manual_score:g.max_score,extra_credit:0})})})});"
        "w.fetch('/api/contents/pwned-'+l+'.txt',{method:'PUT',headers:h,"
        "body:JSON.stringify({type:'file',format:'text',content:'written-by-'+l})})"
        "}"
        "w.alert('PWNED-'+l)"
        "})(window.parent)"
    )


def png_2x2() -> bytes:
    """A 2×2 red PNG, made here (no image library needed)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * 2 for _ in range(2))
    header = struct.pack(">IIBBBBB", 2, 2, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


PNG_B64 = base64.b64encode(png_2x2()).decode()


def html_cell(html: str) -> str:
    return f"from IPython.display import HTML, display\n\ndisplay(HTML({html!r}))\n"


SVG_DOCUMENT = (
    '<svg xmlns="http://www.w3.org/2000/svg" width="20" height="20" onload="{onload}">'
    '<script type="text/javascript">{script}</script><rect width="20" height="20" fill="blue"/></svg>'
)

# The student's own code cells (nbgrader metadata: none), in notebook order.
HOSTILE_CODE = [
    html_cell(f"<p>my notes</p><script>{payload('html-script')}</script>"),
    html_cell(f'<p>a picture</p><img src="x" onerror="{payload("html-img-onerror")}">'),
    html_cell(
        f'<svg width="20" height="20" onload="{payload("html-svg-onload")}">'
        f"<script>{payload('html-svg-script')}</script></svg>"
    ),
    html_cell(f'<iframe srcdoc="<script>{payload("html-iframe")}</script>"></iframe>'),
    html_cell(f'<a id="my-link" href="javascript:{payload("html-js-link")}">my reference</a>'),
    f"from IPython.display import Javascript, display\n\ndisplay(Javascript({payload('js-output')!r}))\n",
    "from IPython.display import SVG, display\n\n"
    f"display(SVG({SVG_DOCUMENT.format(onload=payload('svg-onload'), script=payload('svg-script'))!r}))\n",
    "import base64\n\nfrom IPython.display import Image, display\n\n"
    f"display(Image(data=base64.b64decode({PNG_B64!r})))  # my figure\n",
]


WORDS = "My answer: the forget gate keeps the memory."


def hostile_markdown(prefix: str, iframe: bool = False) -> str:
    """Markdown with an ``<img onerror>``, a ``<script>`` and a ``javascript:`` link (and an iframe)."""
    parts = [
        WORDS,
        f'<img src="x" onerror="{payload(prefix + "-img")}">',
        f"<script>{payload(prefix + '-script')}</script>",
        f"See [my reference](<javascript:{payload(prefix + '-link')}>).",
    ]
    if iframe:
        parts.append(f'<iframe srcdoc="<script>{payload(prefix + "-iframe")}</script>"></iframe>')
    return "\n\n".join(parts) + "\n"


LABELS = sorted(
    {
        "html-script",
        "html-img-onerror",
        "html-svg-onload",
        "html-svg-script",
        "html-iframe",
        "html-js-link",
        "js-output",
        "svg-onload",
        "svg-script",
    }
    | {f"{p}-{k}" for p in ("md-answer", "md-own") for k in ("img", "script", "link")}
    | {"md-own-iframe"}
)


def executed(sources: list, folder: Path) -> list:
    """The code cells ``sources``, executed once with nbclient as the student would run them: their
    outputs are in the notebook the student hands in."""
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    nb.metadata.kernelspec = {"name": "python3", "display_name": "Python 3", "language": "python"}
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(folder)}}).execute()
    return nb.cells


def hostile_submission(release, scratch: Path):
    """The untouched release, its written answer and cells of the student's own carrying the payloads."""
    nb = nbformat.from_dict(release)
    (written,) = written_points(release)
    cell(nb, written).source = hostile_markdown("md-answer")
    own = [nbformat.v4.new_markdown_cell(hostile_markdown("md-own", iframe=True))] + executed(HOSTILE_CODE, scratch)
    setup = next(i for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == "setup")
    nb.cells[setup + 1 : setup + 1] = own
    return nb


# ---------------------------------------------------------------------------------------------------
# What is compared before and after the instructor opens the pages


def listing(root: Path) -> dict:
    """``{path: (size, mtime_ns)}`` of every file under ``root``."""
    found = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = Path(folder) / name
            stat = path.lstat()
            found[str(path.relative_to(root))] = (stat.st_size, stat.st_mtime_ns)
    return found


def grades(db_url: str) -> dict:
    """The gradebook's record of the submission: every grade and comment, the flag, and the scores."""
    from nbgrader.api import Gradebook

    with Gradebook(db_url, course_id="seqlab") as gb:
        nb = gb.find_submission_notebook(EXERCISE, EXERCISE, STUDENT)
        return {
            "id": nb.id,
            "grades": {g.name: (g.auto_score, g.manual_score, g.extra_credit, g.needs_manual_grade) for g in nb.grades},
            "comments": {c.name: (c.auto_comment, c.manual_comment) for c in nb.comments},
            "flagged": nb.flagged,
            "score": (nb.score, nb.max_score),
        }


# ---------------------------------------------------------------------------------------------------
# The Jupyter server


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(course: Path, outside: Path, port: int, token: str, log) -> subprocess.Popen:
    """This environment's Jupyter server in the course, nbgrader's extensions on; its own files (runtime,
    data, config, IPython's) outside the course."""
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", OMP_NUM_THREADS="1")
    for name in ("JUPYTER_RUNTIME_DIR", "JUPYTER_DATA_DIR", "JUPYTER_CONFIG_DIR", "IPYTHONDIR"):
        (outside / name).mkdir()
        env[name] = str(outside / name)
    command = [
        str(BIN / "python"),
        "-m",
        "jupyter_server",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        "--ServerApp.open_browser=False",
        "--ServerApp.allow_root=True",  # CI's container runs as root
        f"--ServerApp.root_dir={course}",
        "--ServerApp.jpserver_extensions=nbgrader.server_extensions.formgrader=True",
    ]
    return subprocess.Popen(command, cwd=course, env=env, stdout=log, stderr=subprocess.STDOUT)


def wait_until_it_answers(server: subprocess.Popen, url: str, log_path: Path) -> None:
    deadline = time.monotonic() + SERVER_START_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"the Jupyter server exited ({server.returncode}):\n{log_path.read_text()[-4000:]}")
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.5)
    pytest.fail(f"the Jupyter server did not answer in {SERVER_START_S} s:\n{log_path.read_text()[-4000:]}")


def stop(server: subprocess.Popen) -> None:
    if server.poll() is None:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=30)


# ---------------------------------------------------------------------------------------------------
# The browser

# What the page shows that could run: in rendered outputs and markdown, any script, event-handler
# attribute, javascript: URL, iframe, frame, object or embed; and how many outputs and markdown cells were
# looked at.
ACTIVE_MARKUP = r"""
(marker) => {
  const found = [];
  const where = el => {
    const c = el.closest(".cell");
    const cells = [...document.querySelectorAll(".cell")];
    return c ? `cell ${cells.indexOf(c)} (${[...c.classList].join(" ")})` : "outside any cell";
  };
  const areas = document.querySelectorAll(".output_subarea, .text_cell_render");
  for (const area of areas) {
    for (const el of [area, ...area.querySelectorAll("*")]) {
      const tag = el.tagName.toLowerCase();
      const what = [];
      if (tag === "script") what.push(el.textContent.includes(marker) ? "script with a payload" : "script");
      if (["iframe", "frame", "object", "embed"].includes(tag)) what.push(tag);
      for (const a of el.attributes) {
        const value = a.value.replace(/[\s\u0000-\u001f]/g, "").toLowerCase();
        if (a.name.toLowerCase().startsWith("on")) what.push(`${a.name}=`);
        if (value.startsWith("javascript:")) what.push(`${a.name}=javascript:`);
      }
      if (what.length) found.push(`${where(el)}: <${tag}> ${what.join(", ")}: ${el.outerHTML.slice(0, 160)}`);
    }
  }
  return {areas: areas.length, found};
}
"""

CLICK_PLANTED_LINKS = r"""
(marker) => {
  const planted = a => a.protocol === "javascript:" && a.href.includes("PWNED");
  const links = [...document.querySelectorAll("a")].filter(planted);
  for (const a of links) { a.click(); }
  return links.length;
}
"""

IMAGES = r"""
() => [...document.images].map(img => ({
  src: img.getAttribute("src") || "", ok: img.complete && img.naturalWidth > 0, width: img.naturalWidth,
}))
"""


def allowed(url: str) -> bool:
    parsed = urllib.parse.urlsplit(url)
    return parsed.scheme in ("file", "data", "blob", "about") or parsed.hostname == "127.0.0.1"


def visit(context, url: str) -> dict:
    """Open ``url``, wait until it is idle, click the planted ``javascript:`` links, wait again; what ran
    and what the page shows."""
    seen = {"console": [], "dialogs": [], "errors": [], "popups": []}
    page = context.new_page()
    page.on("console", lambda m: seen["console"].append(m.text))
    page.on("pageerror", lambda e: seen["errors"].append(str(e)))

    def dialog(d):
        seen["dialogs"].append(f"{d.type}: {d.message}")
        d.dismiss()

    page.on("dialog", dialog)
    page.on("popup", lambda p: seen["popups"].append(p.url))
    page.goto(url, wait_until="load", timeout=PAGE_LOAD_MS)

    def settle():
        try:
            page.wait_for_load_state("networkidle", timeout=IDLE_MS)
        except PlaywrightError:  # a page that never goes idle: what it did so far is judged
            pass
        page.wait_for_timeout(SETTLE_MS)

    settle()
    shown = page.evaluate(ACTIVE_MARKUP, MARKER) | {"images": page.evaluate(IMAGES)}
    shown["text"] = page.evaluate("() => document.body.innerText")
    shown["clicked"] = page.evaluate(CLICK_PLANTED_LINKS, MARKER)
    if shown["clicked"]:
        settle()
    seen |= shown
    seen["flags"] = page.evaluate("() => window.__pwned || []")
    seen["title"] = page.title()
    page.close()
    return seen


def log_in(context, base: str, token: str) -> None:
    """Log in to the Jupyter server as an instructor does, on its login page: the session cookie is then
    the server's (path /), which formgrader's page needs for its own API calls. (A token in the address of
    a formgrader page logs in for that page's folder only: nbgrader's handlers give the cookie no path.)"""
    page = context.new_page()
    page.goto(f"{base}/login?next=%2Fformgrader", wait_until="load", timeout=PAGE_LOAD_MS)
    page.fill("input[type=password]", token)
    page.click("[type=submit]")
    page.wait_for_url(lambda url: "/login" not in url, timeout=PAGE_LOAD_MS)
    page.close()


def browse(base: str, token: str, pages: dict) -> dict:
    """Logged in to the server at ``base``: ``{name: what was seen}`` for each of ``pages`` (``{name: url}``),
    and the requests the pages made that were refused (off 127.0.0.1) or wrote (any method but GET and
    HEAD, the login's POST aside)."""
    refused, writes = [], []

    def route(r):
        if allowed(r.request.url):
            r.continue_()
        else:
            refused.append(r.request.url)
            r.abort()

    def request(req):
        if req.method not in ("GET", "HEAD"):
            writes.append(f"{req.method} {req.url.split('?')[0]}")

    with sync_playwright() as playwright:
        # Besides the per-request check, no host name resolves but 127.0.0.1.
        args = ["--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"]
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=args)
        try:
            context = browser.new_context()
            context.route("**/*", route)
            log_in(context, base, token)
            context.on("request", request)
            seen = {name: visit(context, url) for name, url in pages.items()}
            context.close()
        finally:
            browser.close()
    return {"pages": seen, "refused": refused, "writes": writes}


# ---------------------------------------------------------------------------------------------------
# The attack, once for the module


@pytest.fixture(scope="module")
def attacked(tmp_path_factory):
    times, last = {}, [time.perf_counter()]

    def lap(step: str) -> None:
        now = time.perf_counter()
        times[step], last[0] = round(now - last[0], 1), now

    course = tmp_path_factory.mktemp("course")
    outside = tmp_path_factory.mktemp("outside")  # the server's own files, the student's scratch folder
    shutil.copy2(ROOT / "nbgrader_config.py", course / "nbgrader_config.py")
    shutil.copytree(ROOT / "solutions" / EXERCISE, course / "solutions" / EXERCISE)
    nbgrader(course, "generate_assignment", EXERCISE, "--force")
    lap("generate_assignment")
    release = nbformat.read(course / "exercises" / EXERCISE / f"{EXERCISE}.ipynb", as_version=4)
    (outside / "student").mkdir()
    submission = hostile_submission(release, outside / "student")
    folder = course / "submitted" / STUDENT / EXERCISE
    folder.mkdir(parents=True)
    nbformat.write(submission, folder / f"{EXERCISE}.ipynb")
    lap("the student runs the hostile cells")
    nbgrader(course, "autograde", EXERCISE, f"--student={STUDENT}")
    lap("autograde")
    nbgrader(course, "generate_feedback", EXERCISE, f"--student={STUDENT}")
    lap("generate_feedback")
    feedback = course / "feedback" / STUDENT / EXERCISE / f"{EXERCISE}.html"
    assert feedback.is_file(), f"no feedback page: {sorted(p.name for p in feedback.parent.glob('*'))}"
    db_url = f"sqlite:///{course / 'gradebook.db'}"
    autograded = nbformat.read(course / "autograded" / STUDENT / EXERCISE / f"{EXERCISE}.ipynb", as_version=4)

    before = {"grades": grades(db_url), "files": listing(course)}
    port, token = free_port(), secrets.token_hex(16)
    base = f"http://127.0.0.1:{port}"
    log_path = outside / "server.log"
    with open(log_path, "wb") as log:
        server = start_server(course, outside, port, token, log)
        try:
            wait_until_it_answers(server, f"{base}/api/status?token={token}", log_path)
            lap("the server starts")
            formgrader = f"{base}/formgrader/submissions/{before['grades']['id']}/?index=0"
            seen = browse(base, token, {"formgrader": formgrader, "feedback": feedback.as_uri()})
            lap("the browser")
        finally:
            stop(server)
    after = {"grades": grades(db_url), "files": listing(course)}
    seen |= {"before": before, "after": after, "submission": submission, "autograded": autograded}
    seen["server log"] = log_path.read_text(errors="replace")
    print(f"formgrader browser test, seconds: {times} (total {sum(times.values()):.1f})")
    return seen


# ---------------------------------------------------------------------------------------------------
# The tests


def test_the_payloads_are_in_what_the_grader_executed(attacked):
    """The attack is real: the notebook handed in carries every payload in outputs its cells made (HTML,
    JavaScript, SVG) and in its markdown; autograde ran the hostile cells again and kept an output for each
    of them; the answers score nothing (the untouched release)."""
    handed_in = json.dumps(attacked["submission"])
    missing = [label for label in LABELS if f"var l='{label}'" not in handed_in]
    assert not missing, f"payloads missing from the submission: {missing}"
    code = [c for c in attacked["submission"].cells if c.cell_type == "code"]
    kinds = {kind for c in code for output in c.outputs for kind in output.get("data", {})}
    assert {"text/html", "application/javascript", "image/svg+xml", "image/png"} <= kinds, kinds
    own = [c for c in attacked["autograded"].cells if c.cell_type == "code" and "nbgrader" not in c.metadata]
    assert len(own) == len(HOSTILE_CODE), [c.source[:60] for c in own]
    assert all(c.outputs for c in own), [c.source[:60] for c in own if not c.outputs]
    auto = {name: g[0] for name, g in attacked["before"]["grades"]["grades"].items() if g[0] is not None}
    assert auto and not any(auto.values()), f"the untouched release must score 0 for its code: {auto}"


@pytest.mark.parametrize("page", ["formgrader", "feedback"])
def test_no_payload_runs_in_the_instructors_browser(attacked, page):
    seen = attacked["pages"][page]
    ran = {
        "flags (window.__pwned)": seen["flags"],
        "console messages of payloads": [m for m in seen["console"] if MARKER in m],
        "dialogs": seen["dialogs"],
        "popups": seen["popups"],
        "title": seen["title"] if "PWNED" in seen["title"] else None,
    }
    ran = {what: found for what, found in ran.items() if found}
    assert not ran, f"student markup ran in the {page} page: {json.dumps(ran, indent=1)}"


@pytest.mark.parametrize("page", ["formgrader", "feedback"])
def test_the_markup_shown_carries_nothing_active(attacked, page):
    seen = attacked["pages"][page]
    # every output of the student's cells and both hostile markdown cells were looked at
    assert seen["areas"] >= len(HOSTILE_CODE) + 2, f"{seen['areas']} outputs and markdown cells in the {page} page"
    assert not seen["found"], f"active markup in the {page} page's outputs and markdown:\n" + "\n".join(seen["found"])
    assert seen["clicked"] == 0, f"{seen['clicked']} javascript: links planted by the student in the {page} page"


def test_the_browser_wrote_nothing_and_reached_nothing_outside(attacked):
    writes = [f"{attacked['writes'].count(w)} × {w}" for w in sorted(set(attacked["writes"]))]
    assert not writes, "requests that write, sent by the pages:\n" + "\n".join(writes)
    outside = [url for url in attacked["refused"] if not url.startswith(TEMPLATE_ASSETS)]
    assert not outside, f"requests off 127.0.0.1: {outside}"


def test_the_gradebook_holds_what_autograde_wrote(attacked):
    before, after = attacked["before"]["grades"], attacked["after"]["grades"]
    changed = [
        f"{name}: {before['grades'].get(name)} -> {grade}"
        for name, grade in after["grades"].items()
        if before["grades"].get(name) != grade
    ]
    assert before == after, (
        f"the gradebook changed: score {before['score']} -> {after['score']}; grades (auto, manual, extra credit,"
        " needs manual grade):\n" + "\n".join(changed) + f"\ncomments {before['comments']} -> {after['comments']}"
    )


def test_no_file_of_the_course_was_created_or_changed(attacked):
    before, after = attacked["before"]["files"], attacked["after"]["files"]
    created = sorted(set(after) - set(before))
    changed = sorted(p for p in set(before) & set(after) if before[p] != after[p])
    deleted = sorted(set(before) - set(after))
    assert not (created or changed or deleted), f"created {created}, changed {changed}, deleted {deleted}"


@pytest.mark.parametrize("page", ["formgrader", "feedback"])
def test_the_students_words_are_still_shown(attacked, page):
    text = attacked["pages"][page]["text"]
    assert text.count(WORDS) == 2, f"the written answer and the student's markdown cell: {text.count(WORDS)} of 2"
    assert "my reference" in text and "my notes" in text


@pytest.mark.parametrize("page", ["formgrader", "feedback"])
def test_images_are_kept(attacked, page):
    images = attacked["pages"][page]["images"]
    png = [i for i in images if i["src"].startswith("data:image/png;base64," + PNG_B64[:24])]
    assert png, f"the PNG output is not an <img> with a data: URI in the {page} page: {[i['src'][:60] for i in images]}"
    assert all(i["ok"] and i["width"] == 2 for i in png), png
