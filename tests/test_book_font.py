"""The font the course ships covers every CJK character it shows, in the plots and in the book's pages.

seqlab/fonts/cjk-subset.ttf is made by tools/subset_cjk_font.py; the rendered book serves it with
@font-face (_static/seqlab.css). A page that gains a Chinese character the font lacks fails here, with
the character and the page: run the tool again (its docstring says how). tests/test_browser.py checks
the same in Chromium, on the rendered pages.
"""

import importlib.util
import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def _load_font_tool():
    spec = importlib.util.spec_from_file_location("subset_cjk_font", ROOT / "tools" / "subset_cjk_font.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


tool = _load_font_tool()


def test_the_tool_reads_every_page_of_the_book():
    pages = set(re.findall(r"(?:root|file):\s*(\S+)", (ROOT / "_toc.yml").read_text(encoding="utf-8")))
    sources = tool.book_sources()
    assert {str(path.relative_to(ROOT).with_suffix("")) for path in sources if path.suffix != ".bib"} == pages
    assert "book/glossary" in pages, "the glossary's 简体 and 繁體 terms must be in the font"
    assert ROOT / "book" / "references.bib" in sources


def test_every_cjk_character_of_the_book_has_a_glyph():
    have = tool.font_characters(tool.OUT)
    missing = {char: page for char, page in tool.book_characters().items() if char not in have}
    assert not missing, "the shipped font lacks characters the book shows (run tools/subset_cjk_font.py): " + ", ".join(
        f"{char} ({page})" for char, page in sorted(missing.items())
    )


def test_every_cjk_character_of_the_tasks_has_a_glyph():
    missing = tool.course_characters() - tool.font_characters(tool.OUT)
    assert not missing, f"the shipped font lacks characters seqlab.data generates: {''.join(sorted(missing))}"


def test_the_book_serves_the_font_for_exactly_the_cjk_ranges():
    css = (ROOT / "_static" / "seqlab.css").read_text(encoding="utf-8")
    face = re.search(r"@font-face\s*{(.*?)}", css, re.S).group(1)
    assert 'url("cjk-subset.ttf")' in face
    unicode_range = re.search(r"unicode-range:\s*([^;]+);", face).group(1)
    assert unicode_range.strip() == tool.css_unicode_range(), "seqlab.css's unicode-range is not CJK_RANGES"
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    assert "seqlab/fonts" in config["sphinx"]["config"]["html_static_path"], "the build must copy the font"


def test_is_cjk_matches_the_pattern():
    for char in "你好，？。年月日ア가":
        assert tool.is_cjk(char) == bool(re.fullmatch(tool.CJK_PATTERN, char)), char
    assert tool.is_cjk("你") and tool.is_cjk("？") and not tool.is_cjk("a") and not tool.is_cjk("→")
