"""The rendered book as its readers see it: every page opened in headless Chromium, with no network.

The book is built from the notebooks' stored outputs (tests/rendered_book.py, seconds), with its two Chinese
editions beside it (tools/book_editions.py: _build/html/zh_CN and zh_TW), served on 127.0.0.1, and every page
of _toc.yml (plus the index and search pages) of each edition is opened at 1280 px wide, with every request
that leaves the book aborted and recorded. A page fails on:

- a resource loaded from outside the book (a CDN's script, font or style): the book must read offline;
- raw TeX left in its text once MathJax has typeset it, or a formula MathJax could not typeset;
- a CJK character that no font the book ships covers (readers seldom have a Chinese font), or one that
  Chromium drew with another font than the book's (tools/subset_cjk_font.py makes the font);
- a broken local link (file or #anchor) or image, or an image without a description (alt text);
- a JavaScript error, or an error in the console (a failed load, a missing favicon);
- a cell whose printed output is cut into several boxes;
- Markdown left as text (``**``, a ``{term}`` or ``{cite}`` role): a translation that Sphinx could not parse;
- a page without its links to the same page in the other two editions;
- at 1280 px and at 390 px (a phone): a formula clipped instead of scrolling (or scrolling though it
  fits), a figure shrunk below three quarters of its size (its labels would be illegible; it scrolls
  instead), or more or fewer than one visible search box.

Screenshots of two pages at both widths are kept for a human to look at, in _build/screenshots/ (or
$SEQLAB_SCREENSHOTS); the test prints where. Skipped, with the reason, where Chromium is not
installed (`apt-get install chromium`, as .ci/run does) or Playwright is missing. A search for 注意力 in each
Chinese edition must find chapter 4 (Sphinx's Chinese search splits words with jieba).
"""

import functools
import html
import http.server
import importlib.util
import os
import re
import shutil
import threading
import urllib.parse
from pathlib import Path

import pytest
from rendered_book import ROOT, editions, shared_book

WIDTHS = {"desktop": 1280, "phone": 390}
# Pages to keep a picture of, scrolled to what: chapter 3's opening (Chinese prose and the
# encoder-decoder diagram) and chapter 4's translation heatmap (Chinese labels, a tall figure).
SCREENSHOT_PAGES = {
    "book/03_seq2seq": None,
    "book/04_attention": "#translation-with-attention-reordering-made-visible img",
}
SCREENSHOTS = Path(os.environ.get("SEQLAB_SCREENSHOTS", ROOT / "_build" / "screenshots"))
NO_TRANSITIONS = "*, *::before, *::after { transition: none !important; animation: none !important; }"
MIN_FIGURE_SCALE = 0.74  # seqlab.js lets a figure shrink to 3/4 of its size, then it scrolls
SHIPPED_FONT = ROOT / "seqlab" / "fonts" / "cjk-subset.ttf"


def _load_font_tool():
    spec = importlib.util.spec_from_file_location("subset_cjk_font", ROOT / "tools" / "subset_cjk_font.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


font_tool = _load_font_tool()


def find_chromium() -> str | None:
    """Chromium's executable: $SEQLAB_CHROMIUM, else Debian's `chromium` (or another Chrome) on PATH."""
    if os.environ.get("SEQLAB_CHROMIUM"):
        return os.environ["SEQLAB_CHROMIUM"]
    for name in ("chromium", "google-chrome", "google-chrome-stable", "chromium-browser"):
        if shutil.which(name):
            return shutil.which(name)
    return None


CHROMIUM = find_chromium()
try:
    from playwright.sync_api import sync_playwright
except ImportError:  # the course environment has it (requirements.txt); a bare one may not
    sync_playwright = None

pytestmark = [
    pytest.mark.skipif(
        CHROMIUM is None,
        reason="Chromium is not installed (apt-get install chromium, as .ci/run does): "
        "the real-browser test of the rendered book needs it",
    ),
    pytest.mark.skipif(sync_playwright is None, reason="playwright is not installed (pip install -r requirements.txt)"),
]


# Every page of _toc.yml, in reading order ("book/intro"), then the index and the search page; in each edition.
PAGES = [str(Path(page).with_suffix("")) for page in font_tool.toc_pages()] + ["genindex", "search"]
EDITIONS = list(editions.EDITIONS)  # "en" at the root of the book, the others in a folder each
EDITION_PAGES = [name if edition == "en" else f"{edition}/{name}" for edition in EDITIONS for name in PAGES]


def edition_of(page: str) -> str:
    first = page.split("/")[0]
    return first if first in editions.TRANSLATED else "en"


# ---------------------------------------------------------------------------------------------------
# The served book and the browser


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # no request log in the test's output
        pass


@pytest.fixture(scope="module")
def book(tmp_path_factory):
    """The rendered book and its Chinese editions, served on 127.0.0.1: (folder, base URL)."""
    html_dir = shared_book(tmp_path_factory)  # rendered once per session, read by test_course_integrity too
    handler = functools.partial(_QuietHandler, directory=str(html_dir))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield html_dir, f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as playwright:
        # Besides the per-request check below, no host name resolves but the book's own address.
        args = ["--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"]
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=args)
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def font_characters() -> set:
    return font_tool.font_characters(SHIPPED_FONT)


def test_every_page_is_checked(book):
    """Every HTML page of the build is one that the test opens (a page left out of _toc.yml is not)."""
    html_dir, _ = book
    built = {str(p.relative_to(html_dir).with_suffix("")) for p in html_dir.rglob("*.html")}
    redirects = {"index"} | {f"{language}/index" for language in editions.TRANSLATED}
    built = {page for page in built if "_static/" not in page} - redirects
    assert built == set(EDITION_PAGES), f"pages not opened by the test: {sorted(built - set(EDITION_PAGES))}"


# ---------------------------------------------------------------------------------------------------
# What the page shows, read by script after MathJax has finished

READ_PAGE = r"""
async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) { await MathJax.startup.promise; }
  await document.fonts.ready;
  const skip = "pre, code, script, style, mjx-container, .highlight, kbd, textarea";
  const prose = [], everything = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const element = node.parentElement;
    if (!element || element.closest("script, style, noscript, template")) continue;
    everything.push(node.data);
    if (!element.closest(skip)) prose.push(node.data);
  }
  const images = [...document.images].map(img => ({
    src: img.currentSrc || img.src, alt: img.getAttribute("alt"), ok: img.complete && img.naturalWidth > 0,
  }));
  const links = [...document.querySelectorAll("a[href]")].map(a => a.href);
  const ids = [...document.querySelectorAll("[id], a[name]")].map(e => e.id || e.getAttribute("name"));
  return {
    title: document.title,
    prose: prose.join(" "),
    text: everything.join(" "),
    mathjax: !!(window.MathJax && MathJax.startup),
    formulas: document.querySelectorAll("span.math, div.math").length,
    // cells whose printed output is cut into several boxes (nb_merge_streams joins them)
    split: [...document.querySelectorAll("div.cell_output")]
      .filter(output => output.querySelectorAll(":scope > .output.stream").length > 1).length,
    errors: [...document.querySelectorAll("mjx-merror")].map(e => e.textContent),
    images, links, ids,
    lang: document.documentElement.lang,
    editions: [...document.querySelectorAll("nav.seqlab-editions a")].map(a => a.getAttribute("hreflang")),
    current: [...document.querySelectorAll("nav.seqlab-editions [aria-current]")].map(e => e.getAttribute("lang")),
  };
}
"""

READ_LAYOUT = r"""
() => {
  const visible = e => { const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0 &&
    getComputedStyle(e).visibility !== "hidden" && e.offsetParent !== null; };
  // A typeset formula (mjx-math) reaching past a box that hides its overflow is clipped, unless a box
  // in between scrolls (and that box itself fits). A box that scrolls though its formula fits has a
  // needless scroll bar (MathJax's hidden copy for screen readers can be wider than the formula).
  const clipped = [], needless = [];
  for (const math of document.querySelectorAll("mjx-math")) {
    if (!visible(math)) continue;
    let right = math.getBoundingClientRect().right;
    for (let box = math.parentElement; box && box !== document.body; box = box.parentElement) {
      const overflow = getComputedStyle(box).overflowX;
      if (overflow === "visible") continue;
      if (["hidden", "clip"].includes(overflow) && right > box.getBoundingClientRect().right + 1) {
        clipped.push(math.closest("mjx-container").textContent.slice(0, 60));
        break;
      }
      right = Math.min(right, box.getBoundingClientRect().right);  // what lies beyond a box scrolls
    }
  }
  for (const box of document.querySelectorAll("span.math, div.math, div.math > mjx-container")) {
    if (!visible(box) || !["auto", "scroll"].includes(getComputedStyle(box).overflowX)) continue;
    const right = Math.max(...[...box.querySelectorAll("mjx-math")].map(m => m.getBoundingClientRect().right));
    if (box.scrollWidth > box.clientWidth + 1 && right <= box.getBoundingClientRect().right + 1) {
      needless.push(box.textContent.slice(0, 60));
    }
  }
  const shrunk = [...document.querySelectorAll("div.cell_output img")]
    .filter(img => visible(img) && img.naturalWidth > 0)
    .map(img => ({src: img.src.split("/").pop(), scale: img.getBoundingClientRect().width / img.naturalWidth}));
  // Search boxes and buttons of the page's frame (the search page's own form is its content).
  const search = [...document.querySelectorAll(".search-button-field, button.search-button, form.bd-search")]
    .filter(e => visible(e) && !e.closest("dialog, article, .bd-search-container")).length;
  return {clipped, needless, shrunk, search};
}
"""

# Mark the elements whose own text holds CJK characters, so that CDP can ask which fonts drew them.
MARK_CJK = r"""
(pattern) => {
  const cjk = new RegExp(pattern, "gu");
  const marked = [];
  for (const element of document.body.querySelectorAll("*")) {
    if (element.closest("script, style, noscript, template")) continue;
    let count = 0;
    for (const node of element.childNodes) {
      if (node.nodeType === Node.TEXT_NODE) count += (node.data.match(cjk) || []).length;
    }
    const box = element.getBoundingClientRect();
    if (count && box.width > 0 && box.height > 0) {
      element.setAttribute("data-cjk-probe", String(marked.length));
      marked.push({count, text: element.textContent.trim().slice(0, 40)});
    }
  }
  return marked;
}
"""


def local_target(url: str, base: str, html_dir: Path):
    """(file, fragment) of a URL inside the served book, or None for a URL outside it."""
    if not url.startswith(base):
        return None
    parts = urllib.parse.urlsplit(url)
    relative = urllib.parse.unquote(parts.path)[len(urllib.parse.urlsplit(base).path) :]
    target = html_dir / relative
    if target.is_dir():
        target = target / "index.html"
    return target, urllib.parse.unquote(parts.fragment)


@functools.cache
def anchors(path: Path) -> frozenset:
    text = path.read_text(encoding="utf-8", errors="replace")
    return frozenset(html.unescape(m) for m in re.findall(r'\b(?:id|name)="([^"]+)"', text))


def check_links(info: dict, base: str, html_dir: Path) -> list:
    problems = []
    for url in sorted(set(info["links"])):
        target = local_target(url, base, html_dir)
        if target is None:
            continue  # a link out of the book (a paper's DOI) is followed by the reader, not loaded
        path, fragment = target
        if not path.is_file():
            problems.append(f"broken link: {url[len(base) :]} (no such file)")
        elif fragment and path.suffix == ".html" and fragment not in anchors(path):
            problems.append(f"broken link: {url[len(base) :]} (no #{fragment} in that page)")
    for image in info["images"]:
        if not image["ok"]:
            problems.append(f"broken image: {image['src']}")
        alt = (image["alt"] or "").strip()
        if not alt or re.search(r"\.(png|jpe?g|svg|gif)$|_images/", alt):
            problems.append(f"image without a description (alt={alt!r}): {image['src'].split('/')[-1]}")
    return problems


def check_text(info: dict, title: str, font_characters: set) -> list:
    problems = []
    if info["formulas"] and not info["mathjax"]:
        problems.append(f"{info['formulas']} formulas but MathJax did not start")
    raw_tex = re.findall(r"\\[()\[\]]|\$\$|\\[A-Za-z]{2,}|\$[^$\s][^$]{0,80}\$", info["prose"])
    if raw_tex:
        problems.append(f"{len(raw_tex)} pieces of raw TeX in the text, e.g. {raw_tex[:3]}")
    problems += [f"MathJax could not typeset: {error!r}" for error in info["errors"]]
    if info["split"]:
        problems.append(f"{info['split']} cells print their output in several boxes")
    missing = sorted({c for c in info["text"] if font_tool.is_cjk(c)} - font_characters)
    if missing:
        problems.append(f"CJK characters that no shipped font covers: {''.join(missing)}")
    if info["title"].count(title) > 1:
        problems.append(f"the tab title repeats the book's title: {info['title']!r}")
    markup = re.findall(r"\*\*|\{term\}|\{cite:?\w*\}|\{ref\}", info["prose"])
    if markup:
        problems.append(f"Markdown left as text (a translation Sphinx could not parse?): {sorted(set(markup))}")
    return problems


def check_editions(info: dict, edition: str, name: str) -> list:
    """The page says its language, and links to itself in the other editions (check_links follows the links)."""
    lang = edition.replace("_", "-")
    problems = [] if info["lang"] == lang else [f"<html lang={info['lang']!r}>, not {lang!r}"]
    if name in ("genindex", "search"):  # pages of the theme, with no text of their own
        return problems
    others = sorted(e.replace("_", "-") for e in EDITIONS if e != edition)
    if sorted(info["editions"]) != others or info["current"] != [lang]:
        problems.append(f"links to the other editions: {info['editions']} (current {info['current']}), not {others}")
    return problems


def check_cjk_fonts(page, cdp) -> list:
    """Every CJK character on screen was drawn with the book's own font (a custom, downloaded font)."""
    marked = page.evaluate(MARK_CJK, font_tool.CJK_PATTERN)
    if not marked:
        return []
    cdp.send("DOM.enable")
    cdp.send("CSS.enable")
    root = cdp.send("DOM.getDocument", {"depth": -1})["root"]["nodeId"]
    node_ids = cdp.send("DOM.querySelectorAll", {"nodeId": root, "selector": "[data-cjk-probe]"})["nodeIds"]
    problems = []
    for node_id in node_ids:
        attributes = cdp.send("DOM.getAttributes", {"nodeId": node_id})["attributes"]
        probe = int(dict(zip(attributes[::2], attributes[1::2]))["data-cjk-probe"])
        fonts = cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node_id})["fonts"]
        custom = sum(font["glyphCount"] for font in fonts if font["isCustomFont"])
        if custom < marked[probe]["count"]:
            used = ", ".join(f"{f['familyName']} ({f['glyphCount']})" for f in fonts)
            problems.append(f"CJK drawn without the book's font in {marked[probe]['text']!r}: {used}")
    cdp.send("CSS.disable")
    cdp.send("DOM.disable")
    return problems


def check_layout(page, width: str) -> list:
    layout = page.evaluate(READ_LAYOUT)
    problems = [f"at {width} width, a formula is clipped: {text!r}" for text in layout["clipped"]]
    problems += [f"at {width} width, a formula has a scroll bar for nothing: {text!r}" for text in layout["needless"]]
    problems += [
        f"at {width} width, a figure is shown at {image['scale']:.0%} of its size: {image['src']}"
        for image in layout["shrunk"]
        if image["scale"] < MIN_FIGURE_SCALE
    ]
    if layout["search"] != 1:
        problems.append(f"at {width} width, {layout['search']} search boxes are visible (one is enough)")
    return problems


@pytest.mark.parametrize("name", EDITION_PAGES)
def test_page_reads_offline(name, book, browser, font_characters):
    html_dir, base = book
    edition = edition_of(name)
    title = editions.book_config(edition)["title"]
    context = browser.new_context(viewport={"width": WIDTHS["desktop"], "height": 900}, service_workers="block")
    page = context.new_page()
    problems, outside, console = [], [], []

    def block_outside(route):
        url = route.request.url
        if url.startswith(base) or url.startswith(("data:", "blob:", "about:")):
            route.continue_()
        else:
            outside.append(url)
            route.abort("blockedbyclient")

    context.route("**/*", block_outside)
    page.on("console", lambda message: console.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: console.append(f"uncaught: {error}"))

    def failed_load(response):
        if response.status >= 400 and response.url.startswith(base):
            problems.append(f"{response.status} for {response.url[len(base) :]}")

    page.on("response", failed_load)
    try:
        page.goto(base + name + ".html", wait_until="load")
        # The theme slides its sidebars in and out when the width changes: no transitions, so that the
        # layout measured (and photographed) right after a resize is the final one.
        page.add_style_tag(content=NO_TRANSITIONS)
        info = page.evaluate(READ_PAGE)
        problems += check_text(info, title, font_characters)
        problems += check_editions(info, edition, name.removeprefix(f"{edition}/"))
        problems += check_links(info, base, html_dir)
        problems += check_cjk_fonts(page, context.new_cdp_session(page))
        for width, pixels in WIDTHS.items():
            page.set_viewport_size({"width": pixels, "height": 900 if pixels > 600 else 844})
            page.wait_for_timeout(100)  # let the layout settle
            problems += check_layout(page, width)
            bare = name.removeprefix(f"{edition}/")
            if bare in SCREENSHOT_PAGES:
                if SCREENSHOT_PAGES[bare]:
                    scroll_to = "selector => document.querySelector(selector).scrollIntoView()"
                    page.evaluate(scroll_to, SCREENSHOT_PAGES[bare])
                SCREENSHOTS.mkdir(parents=True, exist_ok=True)
                shot = SCREENSHOTS / f"{name.replace('/', '_')}-{pixels}px.png"
                page.screenshot(path=shot, full_page=False, animations="disabled")
                print(f"screenshot: {shot}")
    finally:
        context.close()
    problems += [f"loads from outside the book: {url}" for url in sorted(set(outside))]
    problems += [f"console error: {text}" for text in console]
    assert not problems, f"{name}.html:\n  " + "\n  ".join(problems)


@pytest.mark.parametrize("edition", editions.TRANSLATED)
def test_search_finds_a_chinese_word(edition, book, browser):
    """Sphinx's Chinese search index (words split by jieba): 注意力 finds chapter 4 in both editions."""
    _, base = book
    context = browser.new_context(service_workers="block")
    page = context.new_page()
    try:
        page.goto(base + f"{edition}/search.html?q=" + urllib.parse.quote("注意力"), wait_until="load")
        # searchtools.js fills the summary line once the last result is shown
        page.wait_for_function("(document.querySelector('p.search-summary') || {}).innerText", timeout=60_000)
        found = page.eval_on_selector_all("ul.search li a", "links => links.map(a => a.getAttribute('href'))")
    finally:
        context.close()
    assert any("book/04_attention" in href for href in found), f"注意力 found only {found}"
