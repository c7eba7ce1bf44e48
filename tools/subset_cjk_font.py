"""Make seqlab/fonts/cjk-subset.ttf: the Chinese glyphs of the course, for its plots and its pages.

The machines the course runs on, and its readers' phones and laptops, seldom have a CJK font:
matplotlib would draw boxes for Chinese tick labels, and a browser for Chinese text. This keeps only
the characters the course uses (tens of KB instead of MBs):

- every character that seqlab.data can generate (the plots label them);
- every CJK character of the book's pages, as _toc.yml lists them: the chapters and the exercises
  (markdown, code and stored outputs), the glossary, and the bibliography's .bib files;
- every character of the Chinese editions: their catalogs (locales/*/LC_MESSAGES/, tools/book_editions.py)
  and the editions' names and titles (_ext/seqlab_book.py, tools/book_editions.py).

seqlab.experiments.plot registers the file with matplotlib, and the rendered book serves the same file with
@font-face (_static/seqlab.css, `unicode-range` = CJK_RANGES). tests/test_book_font.py fails when a
page holds a character the font lacks: run this again after adding Chinese to a page or to seqlab.data:

    apt-get download fonts-wqy-microhei && dpkg -x fonts-wqy-microhei_*.deb /tmp/wqy
    pip install fonttools
    python tools/subset_cjk_font.py /tmp/wqy/usr/share/fonts/truetype/wqy/wqy-microhei.ttc

Source: WenQuanYi Micro Hei 0.2.0-beta (Apache-2.0; see seqlab/fonts/LICENSE).
"""

import re
import sys
from datetime import date, timedelta
from pathlib import Path

import nbformat
import yaml
from fontTools import subset
from fontTools.ttLib import TTCollection, TTFont

from seqlab import data

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "seqlab" / "fonts" / "cjk-subset.ttf"

#: The code points the font is for: CJK radicals, punctuation, kana, bopomofo, ideographs (extension A,
#: the unified block, compatibility ideographs), vertical forms and full-width forms ("？", "，").
#: seqlab.css's @font-face lists the same ranges as its unicode-range (a test keeps them in step).
CJK_RANGES = [
    (0x2E80, 0x2FDF),
    (0x3000, 0x303F),
    (0x3040, 0x30FF),
    (0x3100, 0x312F),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xF900, 0xFAFF),
    (0xFE30, 0xFE4F),
    (0xFF00, 0xFFEF),
]
#: The same ranges as a regular-expression character class (Python's and JavaScript's syntax).
CJK_PATTERN = "[" + "".join(f"\\u{low:04X}-\\u{high:04X}" for low, high in CJK_RANGES) + "]"


def is_cjk(char: str) -> bool:
    return any(low <= ord(char) <= high for low, high in CJK_RANGES)


def css_unicode_range() -> str:
    """CJK_RANGES as CSS writes them: ``U+2E80-2FDF, U+3000-303F, ...``."""
    return ", ".join(f"U+{low:04X}-{high:04X}" for low, high in CJK_RANGES)


def course_characters() -> set:
    """Every CJK character that seqlab.data can generate."""
    chars = set()
    for _, tgt in data.translation_task(data.translation_grammar_size()):
        chars.update("".join(tgt))
    day = date(1950, 1, 1)
    while day.year < 2051:  # every Chinese date format of every day the date task can draw
        for fmt in data.DATE_FORMATS:
            chars.update(data.format_date(day, fmt))
        day += timedelta(days=1)
    return {c for c in chars if is_cjk(c)}


def toc_pages() -> list:
    """The pages of _toc.yml in reading order, as it names them ("book/intro")."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    pages = [toc["root"]]

    def walk(entries):
        for entry in entries:
            if "file" in entry:
                pages.append(entry["file"])
            walk(entry.get("sections", []) + entry.get("chapters", []))

    for part in toc.get("parts", []):
        walk(part.get("chapters", []))
    walk(toc.get("chapters", []))
    return pages


#: The packages whose own words the rendered book shows (buttons, the search page, "Skip to main content"), in
#: each edition's language: Sphinx's, the themes' and the extensions' Chinese catalogs.
UI_PACKAGES = ["sphinx", "pydata_sphinx_theme", "sphinx_book_theme", "sphinx_togglebutton", "sphinx_copybutton"]
CHINESE_CATALOG = re.compile(r"(^|/)zh([_-](cn|tw|hans|hant))?/", re.I)


def ui_catalogs() -> list:
    """The Chinese catalogs (zh, zh_CN, zh_TW) of UI_PACKAGES, as installed in the course environment."""
    import importlib.util

    found = []
    for package in UI_PACKAGES:
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            continue
        folder = Path(next(iter(spec.submodule_search_locations)))
        found += [p for p in sorted(folder.rglob("*.po")) if CHINESE_CATALOG.search(p.relative_to(folder).as_posix())]
        found += sorted(folder.rglob("copybutton.js_t"))  # sphinx-copybutton keeps its words in its script
    return found


def edition_sources() -> list:
    """What the Chinese editions show besides the English pages: their catalogs, the words of Sphinx and the
    themes in Chinese, and the editions' names."""
    names = [ROOT / "_ext" / "seqlab_book.py", ROOT / "tools" / "book_editions.py"]
    return sorted((ROOT / "locales").rglob("*.po")) + ui_catalogs() + names


def book_sources() -> list:
    """The files the rendered book shows: the pages of _toc.yml (notebooks or markdown) and the .bib files."""
    paths = []
    for name in toc_pages():
        candidates = [ROOT / name] if Path(name).suffix else [ROOT / f"{name}{s}" for s in (".ipynb", ".md")]
        paths += [path for path in candidates if path.is_file()][:1]
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    return paths + [ROOT / bib for bib in config.get("bibtex_bibfiles", [])]


def page_text(path: Path) -> str:
    """What a page can show: a notebook's cells and stored outputs, or a text file's content."""
    if path.suffix != ".ipynb":
        return path.read_text(encoding="utf-8")
    parts = []
    for cell in nbformat.read(path, as_version=4).cells:
        parts.append(cell.source)
        for output in cell.get("outputs", []):
            parts.append(output.get("text", ""))
            parts += [v if isinstance(v, str) else "".join(v) for v in output.get("data", {}).values()]
            parts += output.get("traceback", [])
    return "\n".join(p for p in parts if isinstance(p, str))


def book_characters() -> dict:
    """{character: the first page that shows it} for every CJK character of the book's pages."""
    found = {}
    for path in book_sources() + edition_sources():
        for char in re.findall(CJK_PATTERN, page_text(path)):
            found.setdefault(char, str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name)
    return found


def font_characters(path: Path = OUT) -> set:
    """The characters a font file has glyphs for."""
    return {chr(code) for code in TTFont(path).getBestCmap()}


def main(source: str) -> None:
    font = TTCollection(source).fonts[0]  # the first face: WenQuanYi Micro Hei
    options = subset.Options()
    options.name_IDs = ["*"]
    subsetter = subset.Subsetter(options)
    text = "".join(sorted(course_characters() | set(book_characters())))
    subsetter.populate(text=text)
    subsetter.subset(font)
    font.save(OUT)
    print(f"{len(text)} characters → {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main(sys.argv[1])
