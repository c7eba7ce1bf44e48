"""The book's three editions from one English source: English, 简体中文 (zh_CN) and 繁體中文 (zh_TW).

Sphinx's own internationalisation does the work (https://www.sphinx-doc.org/en/master/usage/advanced/intl.html):
the gettext builder extracts every paragraph, heading, list item, table cell, admonition and caption of the
pages in _toc.yml as a message; sphinx-intl keeps one catalog per page and language under locales/; the HTML
build with ``language`` set replaces each message by its translation. Code, printed outputs and figures are not
messages: the Chinese editions show the stored outputs of the English notebooks, nothing is executed again.

    python tools/book_editions.py extract      # messages of the English source -> locales/*/LC_MESSAGES/*.po
    python tools/book_editions.py derive-tw    # zh_TW from zh_CN: OpenCC s2twp, the glossary's 繁體 terms, reviews
    python tools/book_editions.py build zh_CN zh_TW   # -> _build/html/zh_CN, _build/html/zh_TW

zh_CN is written by translators. zh_TW is never edited by hand: it is derived from zh_CN by OpenCC's Taiwan
phrase conversion (``s2twp``: 信息 -> 資訊, 程序 -> 程式, 内存 -> 記憶體 ...), then the glossary's 繁體 term
replaces OpenCC's wherever they differ, then the fixes of the bilingual review (locales/zh_TW_review.yml, one
phrase -> phrase per line) are applied; tests/test_translations.py checks that the catalogs are exactly that.
"""

import argparse
import shutil
import subprocess
import sys
import tempfile
from functools import cache
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
LOCALES = ROOT / "locales"
TRANSLATED = ["zh_CN", "zh_TW"]  # the editions built from catalogs; English is the source
EDITIONS = {"en": "English", "zh_CN": "简体中文", "zh_TW": "繁體中文"}
TITLES = {"zh_CN": "从 RNN 到注意力", "zh_TW": "從 RNN 到注意力"}  # the book's title in each edition
REVIEW = LOCALES / "zh_TW_review.yml"
JUPYTER_BOOK = Path(sys.executable).parent / "jupyter-book"
SPHINX_INTL = Path(sys.executable).parent / "sphinx-intl"


def book_config(language: str = "en", execute: bool = False) -> dict:
    """_config.yml for one edition: ``language`` set, the chapters' stored outputs used unless ``execute``,
    and every path absolute (jupyter-book reads them relative to the configuration file, which is elsewhere)."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    if not execute:
        config["execute"]["execute_notebooks"] = "off"
    sphinx = config.setdefault("sphinx", {})
    for name, path in (sphinx.get("local_extensions") or {}).items():
        sphinx["local_extensions"][name] = str((ROOT / path).resolve())
    settings = sphinx.setdefault("config", {})
    settings["language"] = language
    config["title"] = TITLES.get(language, config["title"])
    settings["project"] = config["title"]  # the catalogs' header names it
    settings["locale_dirs"] = [str(LOCALES)]
    settings["gettext_compact"] = False  # one catalog per page: locales/<language>/LC_MESSAGES/book/04_attention.po
    settings["gettext_location"] = False  # no "file:line" comments, which change with every edit above a message
    settings["gettext_uuid"] = False
    if language != "en":
        # docutils' smart quotes would turn an ASCII apostrophe into the language's closing quote: T' (T prime)
        # became T and zh_TW's closing corner bracket (U+300F); the translations write their own quotation marks.
        settings["smartquotes"] = False
    return config


def run_jupyter_book(config: dict, out_dir: Path, *options: str) -> Path:
    """``jupyter-book build`` of the repository with ``config`` into ``out_dir``; fails with its warnings."""
    out_dir.mkdir(parents=True, exist_ok=True)
    config_path = out_dir / "_config.yml"
    config_path.write_text(yaml.safe_dump(config, allow_unicode=True, sort_keys=False), encoding="utf-8")
    command = [str(JUPYTER_BOOK), "build", str(ROOT), "--config", str(config_path), "--path-output", str(out_dir)]
    build = subprocess.run([*command, *options], capture_output=True, text=True, timeout=900)
    log = build.stdout + build.stderr
    if build.returncode != 0:
        warnings = [line for line in log.splitlines() if "WARNING" in line or "ERROR" in line]
        raise RuntimeError("jupyter-book build failed:\n" + "\n".join(warnings[:30] or [log[-3000:]]))
    return out_dir / "_build"


def build_edition(language: str, html_dir: Path) -> Path:
    """One edition's HTML, from the stored outputs, into ``html_dir`` (replaced); a warning fails it."""
    with tempfile.TemporaryDirectory(prefix=f"book-{language}-") as scratch:
        built = run_jupyter_book(book_config(language), Path(scratch), "--warningiserror", "--keep-going")
        if html_dir.exists():
            shutil.rmtree(html_dir)
        shutil.copytree(built / "html", html_dir)
    return html_dir


def extract_messages(out_dir: Path) -> Path:
    """The English source's messages, one .pot per page, in ``out_dir``; returns the folder of the .pot files."""
    built = run_jupyter_book(book_config("en"), out_dir, "--builder", "custom", "--custom-builder", "gettext")
    return built / "gettext"


def update_catalogs(pot_dir: Path) -> None:
    """locales/<language>/LC_MESSAGES/*.po brought in step with the messages: new ones added untranslated,
    changed ones marked fuzzy (their old translation kept as a hint), removed ones made obsolete."""
    languages = [option for language in TRANSLATED for option in ("-l", language)]
    command = [str(SPHINX_INTL), "update", "-p", str(pot_dir), "-d", str(LOCALES), "--line-width", "0", *languages]
    subprocess.run(command, check=True, capture_output=True, text=True)


# ---------------------------------------------------------------------------------------------------
# zh_TW from zh_CN


@cache
def _converter(config: str):
    import opencc

    return opencc.OpenCC(config)


def glossary_terms() -> list:
    """``[(english, simplified forms, traditional forms)]`` of book/glossary.md's entries: after the English
    term, each line is a Chinese form, simplified, traditional, or both when the two scripts write it alike
    (OpenCC tells which); the first form of a script is the one the book uses."""
    text = (ROOT / "book" / "glossary.md").read_text(encoding="utf-8")
    body = text.split("```{glossary}", 1)[1].split("```", 1)[0]
    entries, current = [], None
    for line in body.splitlines():
        if not line.strip() or line.startswith(":"):
            current = None if not line.strip() else current
            continue
        if line.startswith(" "):  # the definition
            current = None
            continue
        if current is None:
            current = (line.strip(), [], [])
            entries.append(current)
            continue
        form = line.strip()
        if form.isascii():  # an English alias (BPTT)
            continue
        to_traditional, to_simplified = _converter("s2t.json").convert(form), _converter("t2s.json").convert(form)
        if to_traditional == form or to_simplified != form:  # written alike, or a traditional form
            current[2].append(form)
        if to_simplified == form or to_traditional != form:  # written alike, or a simplified form
            current[1].append(form)
    return entries


def review_fixes() -> list:
    """``[(phrase, replacement)]`` of the bilingual review of zh_TW, applied after OpenCC and the glossary."""
    if not REVIEW.exists():
        return []
    fixes = yaml.safe_load(REVIEW.read_text(encoding="utf-8")) or {}
    return list(fixes.items())


@cache
def glossary_fixes() -> list:
    """``[(OpenCC's form, the glossary's 繁體 form)]`` where s2twp turns a 简体 term into another word than the
    glossary's (循环神经网络 -> 迴圈神經網路, not 循環神經網路; 评分函数 -> 評分函式, not 評分函數), longest first;
    a 简体 form is paired with the 繁體 form at the same place in its entry, or the entry's first."""
    fixes = {}
    for _english, simplified_forms, traditional_forms in glossary_terms():
        for i, form in enumerate(simplified_forms):
            converted = _converter("s2twp.json").convert(form)
            if traditional_forms and converted not in traditional_forms:
                fixes[converted] = traditional_forms[i] if i < len(traditional_forms) else traditional_forms[0]
    return sorted(fixes.items(), key=lambda fix: -len(fix[0]))


def to_taiwan(simplified: str) -> str:
    """A zh_CN translation as zh_TW: OpenCC's s2twp, then the glossary's 繁體 terms, then the review's fixes."""
    text = _converter("s2twp.json").convert(simplified)
    for converted, term in glossary_fixes():
        text = text.replace(converted, term)
    for phrase, replacement in review_fixes():
        text = text.replace(phrase, replacement)
    return text


def taiwan_message(english: str, simplified: str) -> str:
    """A message's zh_TW translation from its zh_CN one. A message copied unchanged (a formula, a name, the
    glossary's head lines, which give both scripts) stays unchanged."""
    return simplified if simplified == english else to_taiwan(simplified)


def derive_taiwan() -> int:
    """Write every zh_TW catalog from its zh_CN one (the messages, their order and flags kept). Returns how many
    messages it wrote."""
    from babel.messages.pofile import read_po, write_po

    written = 0
    for source in sorted((LOCALES / "zh_CN" / "LC_MESSAGES").rglob("*.po")):
        target = LOCALES / "zh_TW" / source.relative_to(LOCALES / "zh_CN")
        with source.open("rb") as f:
            catalog = read_po(f, locale="zh_CN")
        catalog.locale = "zh_TW"
        for message in catalog:
            if message.id and message.string:
                message.string = taiwan_message(message.id, message.string)
                written += 1
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("wb") as f:
            write_po(f, catalog, width=0, include_previous=True)
    return written


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("extract", help="update locales/ from the English source's messages")
    commands.add_parser("derive-tw", help="write the zh_TW catalogs from the zh_CN ones")
    build = commands.add_parser("build", help="build editions into _build/html/<language>")
    build.add_argument("languages", nargs="+", choices=TRANSLATED)
    args = parser.parse_args(argv)
    if args.command == "extract":
        with tempfile.TemporaryDirectory(prefix="book-gettext-") as scratch:
            update_catalogs(extract_messages(Path(scratch)))
        print(f"catalogs updated under {LOCALES}; then run: python tools/book_editions.py derive-tw")
    elif args.command == "derive-tw":
        print(f"zh_TW: {derive_taiwan()} messages derived from zh_CN")
    else:
        for language in args.languages:
            out = build_edition(language, ROOT / "_build" / "html" / language)
            print(f"{EDITIONS[language]}: file://{out}/index.html")


if __name__ == "__main__":
    main()
