"""The font the course ships covers every CJK character it shows, in the plots and in the book's pages.

seqlab/fonts/cjk-subset.ttf is made by tools/subset_cjk_font.py; the rendered book serves it with
@font-face (_static/seqlab.css). A page that gains a Chinese character the font lacks fails here, with
the character and the page: run the tool again (its docstring says how). tests/test_browser.py checks
the same in Chromium, on the rendered pages.
"""

import importlib.util
import re
import unicodedata
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


# Characters named by Unicode, not by code point: the reference is Unicode's own names, independent of
# CJK_RANGES. The first and last character of every range, the glyphs the course prints, and neighbours
# just outside the ranges that must stay Latin/other fonts' business.
CJK_BY_NAME = [
    "CJK RADICAL REPEAT",
    "KANGXI RADICAL FLUTE",
    "IDEOGRAPHIC SPACE",
    "IDEOGRAPHIC FULL STOP",
    "LEFT CORNER BRACKET",
    "RIGHT WHITE CORNER BRACKET",
    "IDEOGRAPHIC HALF FILL SPACE",
    "HIRAGANA LETTER SMALL A",
    "KATAKANA LETTER A",
    "KATAKANA DIGRAPH KOTO",
    "BOPOMOFO LETTER B",
    "BOPOMOFO LETTER NN",
    "CJK UNIFIED IDEOGRAPH-3400",
    "CJK UNIFIED IDEOGRAPH-4DBF",
    "CJK UNIFIED IDEOGRAPH-4E00",
    "CJK UNIFIED IDEOGRAPH-9FFF",
    "CJK COMPATIBILITY IDEOGRAPH-F900",
    "CJK COMPATIBILITY IDEOGRAPH-FAD9",
    "PRESENTATION FORM FOR VERTICAL TWO DOT LEADER",
    "WAVY LOW LINE",
    "FULLWIDTH EXCLAMATION MARK",
    "FULLWIDTH COMMA",
    "FULLWIDTH QUESTION MARK",
    "HALFWIDTH WHITE CIRCLE",
]
NOT_CJK_BY_NAME = [
    "LATIN SMALL LETTER A",
    "EM DASH",
    "LEFT DOUBLE QUOTATION MARK",
    "RIGHTWARDS ARROW",
    "HEXAGRAM FOR THE CREATIVE HEAVEN",
    "YI SYLLABLE IT",
    "HANGUL SYLLABLE GA",
    "LATIN SMALL LIGATURE FF",
    "SMALL COMMA",
    "ZERO WIDTH NO-BREAK SPACE",
]


def test_the_cjk_ranges_hold_exactly_the_characters_unicode_names_so():
    for name in CJK_BY_NAME + NOT_CJK_BY_NAME:
        char, expected = unicodedata.lookup(name), name in CJK_BY_NAME
        assert tool.is_cjk(char) is expected, f"is_cjk(U+{ord(char):04X} {name}) should be {expected}"
        assert bool(re.fullmatch(tool.CJK_PATTERN, char)) is expected, f"CJK_PATTERN on {name}"
        in_css = any(
            int(low, 16) <= ord(char) <= int(high, 16)
            for low, high in re.findall(r"U\+([0-9A-F]+)-([0-9A-F]+)", tool.css_unicode_range())
        )
        assert in_css is expected, f"the CSS unicode-range on {name}"
