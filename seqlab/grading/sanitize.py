"""No student markup runs anywhere: the grader's notebooks carry students' outputs and markdown as inert HTML.

What the grader writes (the autograded notebook, and from it the feedback HTML and what nbgrader's
formgrader shows the instructor) holds what a student's code displayed and what a student wrote. Both
are rendered as HTML in the instructor's browser, logged in to the formgrader, whose API can change any
grade; so a ``display(HTML("<script>…"))`` or a written answer with ``<img onerror=…>`` must arrive as
data. :class:`SanitizeMarkup`, an autograding step placed right after nbgrader saves the grades, keeps of
each output only what cannot run:

* ``text/plain``, and PNG, JPEG and GIF images (base64 text; their width and height when numbers);
* ``text/html`` and ``text/markdown``, through nh3 (the maintained binding of the Rust sanitiser ammonia):
  no ``<script>``, ``<style>``, ``<iframe>``, ``<object>``, ``<svg>``, forms, event handlers or ``style``;
  links only to ``http``, ``https`` and ``mailto``; ``data:`` only as the source of an image of those three
  types;
* nothing else: ``application/javascript``, ``image/svg+xml`` (an SVG can carry script), widgets, LaTeX
  and every other type are removed, and an output left with nothing says what was removed.

In formulas (``$…$``, ``$$…$$``), ``<`` and ``>`` become TeX's ``\\lt`` and ``\\gt``. A markdown cell
with HTML in it goes through nh3 the same way, and every markdown link or image whose
target is a ``javascript:``, ``vbscript:``, ``data:`` or ``file:`` URL (entities and spaces undone
first) points at ``#unsafe-link`` instead. A markdown cell without HTML is left as it is, so that
``a < b`` and quotes read as the student wrote them. Attachments keep only images of the three types;
cell tags keep only letters, digits, ``-`` and ``_`` (nbconvert writes them into class names); the
notebook's widget state goes.
"""

import html
import re
from html.parser import HTMLParser

import nh3
from nbconvert.filters.markdown_mistune import markdown2html_mistune
from nbgrader.preprocessors import NbGraderPreprocessor

__all__ = ["SanitizeMarkup", "active_parts", "clean_html", "clean_markdown", "clean_notebook", "clean_output"]

IMAGES = ("image/png", "image/jpeg", "image/gif")
SCHEMES = {"http", "https", "mailto", "data"}  # data: only for images, by _only_image_data
UNSAFE_SCHEMES = ("javascript:", "vbscript:", "data:", "file:")
ACTIVE_ATTRIBUTES = {"style", "srcdoc", "formaction", "action", "xlink:href", "http-equiv"}
MATH = re.compile(r"\$\$.+?\$\$|\$[^$\n]+?\$", re.S)
BASE64 = re.compile(r"[A-Za-z0-9+/=\s]*")
DATA_IMAGE = re.compile(r"data:image/(png|jpeg|gif);base64,[A-Za-z0-9+/=\s]*", re.I)
TAG_NAME = re.compile(r"[^A-Za-z0-9_-]")


def _only_image_data(tag: str, attribute: str, value: str) -> str | None:
    """nh3's attribute filter: a ``data:`` URL stays only as an ``<img>``'s source of a PNG, JPEG or GIF."""
    if value.strip().lower().startswith("data:"):
        return value if tag == "img" and attribute == "src" and DATA_IMAGE.fullmatch(value.strip()) else None
    return value


def clean_html(text: str) -> str:
    """``text`` as HTML that cannot run: nh3's default allow-list, with the link schemes above."""
    return nh3.clean(text, url_schemes=SCHEMES, attribute_filter=_only_image_data)


class _ActiveParts(HTMLParser):
    """What of an HTML page could run: a tag outside nh3's allow-list, an event handler or other active
    attribute, a URL with a scheme that runs (or ``data:`` anywhere but an image's source)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.found = []

    def handle_starttag(self, tag, attrs):
        if tag not in nh3.ALLOWED_TAGS:
            self.found.append(f"<{tag}>")
        for name, value in attrs:
            value = value or ""
            plain = re.sub(r"[\x00-\x20]", "", value).lower()
            if name.startswith("on") or name in ACTIVE_ATTRIBUTES:
                self.found.append(f"<{tag} {name}>")
            elif plain.startswith(UNSAFE_SCHEMES) and not (
                tag == "img" and name == "src" and DATA_IMAGE.fullmatch(value.strip())
            ):
                self.found.append(f"<{tag} {name}={value[:40]!r}>")

    handle_startendtag = handle_starttag


def active_parts(page: str) -> list:
    """The parts of ``page`` that could run (see :class:`_ActiveParts`); ``[]`` for inert HTML."""
    parser = _ActiveParts()
    parser.feed(page)
    parser.close()
    return parser.found


def clean_markdown(text: str) -> str:
    """Markdown that renders without running anything (see the module docstring).

    It is judged by what nbconvert's own renderer (the formgrader's and the feedback's) makes of it, not
    by its source: a ``javascript:`` link can be written in more ways than a pattern can list. Where the
    rendered page would hold anything active, the cell becomes that page cleaned by nh3, in one HTML block
    (no blank line in it, so the renderer reads no markdown inside); were even that to render active
    parts, the student's text is shown as plain text.
    """
    # Inside formulas "<" and ">" become TeX's \lt and \gt, which MathJax draws the same: a browser never
    # reads "$x<y$" as the start of a tag, and "$<img onerror=…>$" is a formula, not an image.
    text = MATH.sub(lambda m: m[0].replace("<", r"\lt ").replace(">", r"\gt "), text)
    rendered = markdown2html_mistune(text)
    if not active_parts(rendered):
        return text
    cleaned = "<div>\n" + re.sub(r"\n\s*\n", "\n", clean_html(rendered)).strip() + "\n</div>"
    if active_parts(markdown2html_mistune(cleaned)):
        return "<pre>" + html.escape(text) + "</pre>"
    return cleaned


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else value if isinstance(value, str) else ""


def clean_output(output: dict) -> dict:
    """One output of a code cell, with only what cannot run (see the module docstring)."""
    if "data" not in output:
        return output  # a stream or an error: nbconvert escapes their text
    kept, removed = {}, []
    for mime, value in output["data"].items():
        text = _text(value)
        if mime == "text/plain":
            kept[mime] = text
        elif mime in IMAGES and text and BASE64.fullmatch(text):
            kept[mime] = text
        elif mime == "text/html":
            kept[mime] = clean_html(text)
        elif mime == "text/markdown":
            kept[mime] = clean_markdown(text)
        else:
            removed.append(mime)
    if not kept:
        kept["text/plain"] = f"[{', '.join(removed) or 'this output'}: not shown in grading]"
    output["data"] = kept
    sizes = {}
    for mime in IMAGES:
        meta = output.get("metadata", {}).get(mime)
        if mime in kept and isinstance(meta, dict):
            sizes[mime] = {k: v for k, v in meta.items() if k in ("width", "height") and isinstance(v, int | float)}
    output["metadata"] = sizes
    return output


def clean_notebook(nb) -> list:
    """Sanitise the notebook in place; returns what was changed, one line each (for the grader's log)."""
    changed = []
    if nb.get("metadata", {}).pop("widgets", None) is not None:
        changed.append("the notebook's widget state was removed")
    for index, cell in enumerate(nb.get("cells", [])):
        label = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") or f"#{index + 1}"
        tags = cell.get("metadata", {}).get("tags")
        if isinstance(tags, list):
            cell["metadata"]["tags"] = [TAG_NAME.sub("", t) for t in tags if isinstance(t, str)]
        if cell.get("cell_type") == "markdown":
            source = _text(cell.get("source", ""))
            clean = clean_markdown(source)
            if clean != source:
                cell["source"] = clean
                changed.append(f"markdown cell {label}: HTML or links that could run were removed")
            attachments = cell.get("attachments")
            if isinstance(attachments, dict):
                cell["attachments"] = {
                    name: {m: v for m, v in data.items() if m in IMAGES and isinstance(v, str)}
                    for name, data in attachments.items()
                    if isinstance(data, dict)
                }
        for output in cell.get("outputs", []):
            before = {k: _text(v) for k, v in output.get("data", {}).items()}
            clean_output(output)
            if output.get("data") is not None and output["data"] != before:
                changed.append(f"cell {label}: an output's HTML, script or other active content was removed")
    return changed


class SanitizeMarkup(NbGraderPreprocessor):
    """Autograding step, right after execution: :func:`clean_notebook` on the notebook nbgrader will write."""

    def preprocess(self, nb, resources):
        for line in clean_notebook(nb):
            self.log.warning("Sanitised: %s", line)
        return nb, resources
