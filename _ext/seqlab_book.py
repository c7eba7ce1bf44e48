"""The rendered book's own Sphinx tweaks, loaded by _config.yml (sphinx.local_extensions).

1. One copy of each inline script. Sphinx 7.4 lists a script that an extension adds with
   ``app.add_js_file(None, body=...)`` after the builder has started twice (once with the file name
   None, once with ""). For sphinx-thebe's ``const THEBE_JS_URL = ...`` the second copy is a JavaScript
   error on every page ("Identifier 'THEBE_JS_URL' has already been declared").
2. Citations in the form the chapters' prose reads, with round brackets: {cite:t} gives
   "Bahdanau et al. (2015)" and {cite:p} "(Bahdanau et al., 2015)" (_config.yml's
   bibtex_reference_style: author_year_round). sphinxcontrib-bibtex's own author_year style uses
   square brackets.
3. Every page links to the same page in the book's other editions (English, 简体中文, 繁體中文: tools/book_editions.py):
   English is built into _build/html, each Chinese edition into _build/html/<language>.
4. Figures glued into a translated paragraph ({glue:text} in a Chinese edition): Sphinx parses each translated
   paragraph as a small document of its own, where myst-nb finds no glue data; the page's own is read instead.
5. The sidebar's captions in the reader's language: sphinx-external-toc adds the table of contents after Sphinx
   has translated the page, so its captions ("Chapters and their exercises") are translated here.
"""

import dataclasses
from pathlib import Path

import sphinxcontrib.bibtex.plugin
from myst_nb.ext.glue.roles import PasteTextRole
from sphinx import addnodes
from sphinx.locale import init as init_locale
from sphinx.transforms import SphinxTransform
from sphinx.util.i18n import docname_to_domain
from sphinxcontrib.bibtex.style.referencing import BracketStyle
from sphinxcontrib.bibtex.style.referencing.author_year import AuthorYearReferenceStyle


def _round_brackets() -> BracketStyle:
    return BracketStyle(left="(", right=")")


def _round_brackets_semicolons() -> BracketStyle:
    return BracketStyle(left="(", right=")", sep="; ")  # (Cho et al., 2014; Sutskever et al., 2014)


@dataclasses.dataclass
class RoundAuthorYearStyle(AuthorYearReferenceStyle):
    """sphinxcontrib-bibtex's author-year citations, in round brackets (its documented recipe)."""

    bracket_parenthetical: BracketStyle = dataclasses.field(default_factory=_round_brackets_semicolons)
    bracket_textual: BracketStyle = dataclasses.field(default_factory=_round_brackets)
    bracket_author: BracketStyle = dataclasses.field(default_factory=_round_brackets)
    bracket_label: BracketStyle = dataclasses.field(default_factory=_round_brackets)
    bracket_year: BracketStyle = dataclasses.field(default_factory=_round_brackets)


sphinxcontrib.bibtex.plugin.register_plugin(
    "sphinxcontrib.bibtex.style.referencing", "author_year_round", RoundAuthorYearStyle
)


def _script_key(script) -> tuple:
    return (script.filename or "", tuple(sorted(script.attributes.items())))


def one_copy_of_each_script(_app, _pagename, _templatename, context, _doctree):
    scripts, seen = [], set()
    for script in context.get("script_files", []):
        if _script_key(script) not in seen:
            seen.add(_script_key(script))
            scripts.append(script)
    context["script_files"] = scripts


EDITIONS = {"en": "English", "zh_CN": "简体中文", "zh_TW": "繁體中文"}  # language: its name, in itself


def edition_links(app, pagename, _templatename, context, doctree):
    """A line of links above the page's text: this page in each edition, the current one not a link."""
    if doctree is None or "body" not in context:  # the search and index pages have no text of their own
        return
    here = app.config.language if app.config.language in EDITIONS else "en"
    to_root = "../" * pagename.count("/") + ("" if here == "en" else "../")
    items = []
    for language, name in EDITIONS.items():
        lang = language.replace("_", "-")
        if language == here:
            items.append(f'<span class="seqlab-edition-current" lang="{lang}" aria-current="page">{name}</span>')
        else:
            folder = "" if language == "en" else f"{language}/"
            href = f"{to_root}{folder}{pagename}.html"
            items.append(f'<a class="seqlab-edition" href="{href}" hreflang="{lang}" lang="{lang}">{name}</a>')
    nav = '<nav class="seqlab-editions" aria-label="Editions">' + " · ".join(items) + "</nav>\n"
    context["body"] = nav + context["body"]


def glue_from_the_page(role_class):
    """``role_class.run``, reading a {glue:text} key inside a translated paragraph as ``<its page>::key``: Sphinx
    parses each translated paragraph as a document of its own, which has no glue data of its own; myst-nb's
    reference to another page's glue finds the page's (the role splits a format off at the last colon, so a
    key without one gets ``:s``, the default)."""
    run = role_class.run

    def run_on_the_page(self):
        if str(getattr(self.document, "current_source", "")).endswith("<translated>") and "::" not in self.text:
            env = self.document.settings.env
            page = Path(env.doc2path(env.docname)).name
            self.text = f"{page}::{self.text}" + ("" if ":" in self.text else ":s")
        return run(self)

    role_class.run = run_on_the_page


class TranslateTocCaptions(SphinxTransform):
    """After sphinx-external-toc's InsertToctrees (priority 100), its toctrees' captions from the page's catalog."""

    default_priority = 101

    def apply(self, **_kwargs):
        toctrees = [node for node in self.document.findall(addnodes.toctree) if node.get("caption")]
        if not toctrees or not self.config.language or self.config.language == "en":
            return
        domain = docname_to_domain(self.env.docname, self.config.gettext_compact)
        folders = [str(self.env.srcdir / folder) for folder in self.config.locale_dirs]
        catalog, found = init_locale(folders, self.config.language, domain)
        if not found:
            return
        for node in toctrees:
            node["caption"] = node["rawcaption"] = catalog.gettext(node["caption"])


def setup(app):
    app.add_transform(TranslateTocCaptions)
    glue_from_the_page(PasteTextRole)
    app.connect("html-page-context", one_copy_of_each_script)
    app.connect("html-page-context", edition_links)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
