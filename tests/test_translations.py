"""The Chinese editions' catalogs (locales/, tools/book_editions.py): complete, current, in the glossary's terms,
and zh_TW exactly what zh_CN, OpenCC, the glossary and the review make of it.

The rendered Chinese pages are opened in Chromium by tests/test_browser.py.
"""

import importlib.util
import re
from pathlib import Path

import pytest
from babel.messages.pofile import read_po

ROOT = Path(__file__).resolve().parents[1]
LOCALES = ROOT / "locales"


def _load_tool():
    spec = importlib.util.spec_from_file_location("book_editions", ROOT / "tools" / "book_editions.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


tool = _load_tool()
TERM = re.compile(r"\{term\}`([^`]*)`")  # {term}`text` or {term}`text <target>`


def catalogs(language: str) -> dict:
    """``{page: catalog}`` of a language, the page as the book names it ("book/04_attention")."""
    folder = LOCALES / language / "LC_MESSAGES"
    found = {}
    for path in sorted(folder.rglob("*.po")):
        with path.open("rb") as f:
            found[str(path.relative_to(folder).with_suffix(""))] = read_po(f, locale=language)
    return found


def messages(catalog) -> list:
    return [m for m in catalog if m.id]


def term_target(role_text: str) -> str:
    """The glossary entry a {term} role points at: its ``<target>``, or its whole text."""
    found = re.search(r"<([^<>]*)>\s*$", role_text)
    return (found.group(1) if found else role_text).strip().lower()


@pytest.fixture(scope="module")
def extracted(tmp_path_factory):
    """The English source's messages now: ``{page: set of msgids}`` (the gettext builder, seconds)."""
    from babel.messages.pofile import read_po as read_pot

    pot_dir = tool.extract_messages(tmp_path_factory.mktemp("gettext"))
    found = {}
    for path in sorted(pot_dir.rglob("*.pot")):
        with path.open("rb") as f:
            found[str(path.relative_to(pot_dir).with_suffix(""))] = {m.id for m in read_pot(f) if m.id}
    return found


@pytest.mark.parametrize("language", tool.TRANSLATED)
def test_every_message_is_translated_and_none_is_fuzzy(language):
    untranslated, fuzzy = [], []
    for page, catalog in catalogs(language).items():
        for message in messages(catalog):
            if not message.string:
                untranslated.append(f"{page}: {message.id[:70]}")
            elif message.fuzzy:
                fuzzy.append(f"{page}: {message.id[:70]}")
    assert catalogs(language), f"no catalog for {language}: run make translations"
    assert not untranslated, f"{len(untranslated)} untranslated in {language}:\n" + "\n".join(untranslated[:20])
    assert not fuzzy, f"{len(fuzzy)} fuzzy (the English changed) in {language}:\n" + "\n".join(fuzzy[:20])


@pytest.mark.parametrize("language", tool.TRANSLATED)
def test_the_catalogs_hold_exactly_the_english_texts_messages(language, extracted):
    """A changed English sentence is a new message that no catalog holds: this fails until `make translations`
    adds it (fuzzy, with the old translation as a hint) and a translator translates it."""
    have = {page: {m.id for m in messages(catalog)} for page, catalog in catalogs(language).items()}
    differ = sorted(set(have) ^ set(extracted))
    assert not differ, f"pages {differ}: a catalog without an English page, or the reverse: make translations"
    for page, ids in extracted.items():
        new, gone = ids - have[page], have[page] - ids
        assert not new and not gone, (
            f"{language} {page}: {len(new)} English messages have no translation (make translations, then translate), "
            f"{len(gone)} translations have no English any more:\n"
            + "\n".join(f"  new: {m[:90]}" for m in sorted(new)[:10])
            + "\n"
            + "\n".join(f"  gone: {m[:90]}" for m in sorted(gone)[:10])
        )


def test_zh_tw_is_derived_from_zh_cn():
    """zh_TW is never edited by hand: OpenCC's s2twp, the glossary's 繁體 terms, the review's fixes (a message
    copied unchanged, such as a formula or the glossary's head lines, stays as it is)."""
    simplified, traditional = catalogs("zh_CN"), catalogs("zh_TW")
    assert set(simplified) == set(traditional)
    drifted = []
    for page, catalog in simplified.items():
        theirs = {m.id: m.string for m in messages(traditional[page])}
        for message in messages(catalog):
            if theirs.get(message.id) != tool.taiwan_message(message.id, message.string):
                drifted.append(f"{page}: {message.id[:70]}")
    assert not drifted, "zh_TW differs from its derivation (python tools/book_editions.py derive-tw):\n" + "\n".join(
        drifted[:20]
    )


def test_glossary_terms_are_parsed_for_both_scripts():
    entries = {english.lower(): (simplified, traditional) for english, simplified, traditional in tool.glossary_terms()}
    assert entries["recurrent neural network"] == (["循环神经网络"], ["循環神經網路"])
    assert "注意力" in entries["attention"][0] and "注意力機制" in entries["attention"][1]
    assert tool.to_taiwan("循环神经网络的评分函数") == "循環神經網路的評分函數"  # OpenCC alone: 迴圈, 函式
    assert tool.to_taiwan("信息、程序和内存") == "資訊、程式和記憶體"  # Taiwan's words


@pytest.mark.parametrize("language", tool.TRANSLATED)
def test_a_glossary_term_is_translated_by_the_glossarys_chinese_form(language):
    """A message whose English links a glossary term ({term}`...`) links it in the translation too, and writes
    one of the glossary's Chinese forms of that term in this language."""
    column = 1 if language == "zh_CN" else 2
    forms = {entry[0].lower(): entry[column] for entry in tool.glossary_terms()}
    wrong = []
    for page, catalog in catalogs(language).items():
        for message in messages(catalog):
            if not message.string:
                continue
            targets = {term_target(text) for text in TERM.findall(message.id)}
            linked = {term_target(text) for text in TERM.findall(message.string)}
            for target in sorted(targets):
                chinese = forms.get(target, [])
                if target not in linked:
                    wrong.append(f"{page}: the term '{target}' is not linked ({{term}}) in: {message.string[:80]}")
                elif chinese and not any(form in message.string for form in chinese):
                    wrong.append(f"{page}: '{target}' is not written {' or '.join(chinese)} in: {message.string[:80]}")
    assert not wrong, f"{len(wrong)} terms off the glossary in {language}:\n" + "\n".join(wrong[:25])
