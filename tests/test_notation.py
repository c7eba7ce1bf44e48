"""One notation: a symbol means one thing in book/notation.md, and the glossary writes notation.md's symbols.

notation.md's tables give each symbol a row. A symbol is compared by its letter (with its decoration,
such as an arrow, and with a subscript that is a label, such as ``W_q`` or ``P_{vocab}``), whatever index
it carries: ``x_t`` and ``x_1, \\dots, x_S`` are one symbol, ``n`` and ``n_t`` are one symbol. So the table
cannot list a symbol twice with two meanings (it did: ``V`` for the vocabulary size and the values, ``n``
for the GRU's candidate and a sequence's length). The glossary's formulas must use the same symbols:
coverage is ``\\mathrm{cov}_{t,i}`` (it wrote ``c^t``, the LSTM's cell memory with a superscript step),
positions are counted from 1 (its causal mask said "positions 0 to t"), and beam search keeps ``beam_size``
hypotheses, not "the k best" (notation.md's k is a key).
"""

import re
from pathlib import Path

import pytest

BOOK = Path(__file__).resolve().parent.parent / "book"

# An index: what a subscript holds when it counts steps, positions, heads or feature pairs.
INDEX = re.compile(r"^[\s{}tijmaST0-9,+\-'<]*(\\dots)?[\s{}tijmaST0-9,+\-'<]*$|^\{?pos\b.*$")
# The one letter with two uses, documented in notation.md: torch's name i_t for the LSTM's input gate
# (always with its step), besides the source position i.
SHARED_ON_PURPOSE = {"i"}


def table_rows(text: str) -> list[tuple[str, str]]:
    """(first cell, the rest) of every row of every markdown table, header and rule lines left out."""
    rows = []
    lines = text.splitlines()
    for number, line in enumerate(lines):
        if not line.startswith("|") or set(line) <= set("|-: "):
            continue
        if number + 1 < len(lines) and set(lines[number + 1]) <= set("|-: ") and "-" in lines[number + 1]:
            continue  # a header
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        rows.append((cells[0], " | ".join(cells[1:])))
    return rows


def top_level_parts(math: str) -> list[str]:
    """Split at the commas and semicolons outside braces: ``x_{t,i}, y`` -> ``x_{t,i}``, ``y``."""
    parts, depth, current = [], 0, ""
    for char in math:
        depth += {"{": 1, "}": -1}.get(char, 0)
        if char in ",;" and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    return parts + [current]


def symbols(cell: str) -> set[str]:
    """The symbols a table cell defines: every letter in its math, its index subscripts removed."""
    found = set()
    for math in re.findall(r"\$([^$]+)\$", cell):
        math = re.sub(r"=.*", "", math)  # "i = 1, \dots, S": the range is not a symbol
        for part in top_level_parts(math.replace(r"\dots", ",").replace(r"\ldots", ",")):
            part = part.strip()
            if not part:
                continue
            match = re.match(r"^((?:\\[a-z]+\{)?\\?[A-Za-z]+\}?)(?:_(\{[^}]*\}|.))?", part)
            if not match:
                continue
            base, subscript = match.group(1), match.group(2)
            if subscript and not INDEX.match(subscript):
                base = f"{base}_{subscript.strip('{}')}"  # a label: W_q, P_{vocab}, D_k
            found.add(base)
    return found


def duplicated_symbols(text: str) -> dict[str, list[str]]:
    rows = {}
    for first, _ in table_rows(text):
        for symbol in symbols(first):
            rows.setdefault(symbol, []).append(first)
    return {symbol: firsts for symbol, firsts in rows.items() if len(firsts) > 1 and symbol not in SHARED_ON_PURPOSE}


def glossary_entry(text: str, term: str) -> str:
    match = re.search(rf"^{re.escape(term)}\n(.*?)(?=\n\n)", text, flags=re.M | re.S)
    assert match, f"the glossary has no entry {term!r}"
    return match.group(1)


def glossary_problems(glossary: str, notation: str) -> list[str]:
    problems = []
    coverage_symbol = r"\mathrm{cov}"
    assert coverage_symbol in notation, "notation.md no longer names coverage \\mathrm{cov}: update this test"
    coverage = glossary_entry(glossary, "coverage")
    if coverage_symbol not in coverage:
        problems.append(f"the glossary's coverage does not write notation.md's {coverage_symbol}_{{t,i}}")
    for math in re.findall(r"\$([^$]+)\$", glossary):
        if re.search(r"\^\{?t\b|\^\{t'\}", math):
            problems.append(f"a step written as a superscript, ${math}$ (notation.md: always a subscript)")
    beam = re.search(r"^beam search\n(.*?)(?=\n\n)", glossary, flags=re.M | re.S)
    if beam and re.search(r"(?<![\w`])\$?k\$?(?![\w`])", beam.group(1)):
        problems.append("the glossary's beam search writes k for the beam size; notation.md's k is a key")
    causal = glossary_entry(glossary, "causal mask")
    for start in re.findall(r"positions \$?([0-9])", causal):
        if start != "1":
            problems.append(f"the causal mask counts positions from {start}; notation.md counts from 1")
    return problems


def test_notation_lists_every_symbol_once():
    duplicated = duplicated_symbols((BOOK / "notation.md").read_text())
    assert not duplicated, f"symbols listed in more than one row of notation.md: {duplicated}"


def test_glossary_writes_notation_symbols():
    problems = glossary_problems((BOOK / "glossary.md").read_text(), (BOOK / "notation.md").read_text())
    assert not problems, problems


def test_the_old_errors_are_caught():
    # The table and glossary lines of before the fix (d08361a), in a small table and two glossary entries.
    old_notation = (
        "| symbol | meaning |\n|---|---|\n"
        "| $V$ | vocabulary size |\n"
        "| $r_t, z_t, n_t$ | the GRU's gates |\n"
        "| $Q, K, V$ | queries, keys, values |\n"
        "| $n$ | a sequence's length |\n"
        r"| $\mathrm{cov}_{t,i}$ | coverage |" "\n"
    )
    assert set(duplicated_symbols(old_notation)) == {"V", "n"}
    old_glossary = (
        "causal mask\n因果掩码\n  The decoder's self-attention mask: position t may look at positions 0 to t only.\n\n"
        "coverage\n覆盖机制\n  The attention received so far, $c^t = \\sum_{t' < t} a^{t'}$, fed to the score.\n\n"
        "beam search\n束搜索\n  Decoding that keeps the k best partial outputs at every step instead of one.\n\n"
    )
    problems = glossary_problems(old_glossary, old_notation)
    assert any("coverage does not write" in p for p in problems), problems
    assert any("superscript" in p for p in problems), problems
    assert any("from 0" in p for p in problems), problems
    assert any("beam size" in p for p in problems), problems


@pytest.mark.parametrize(
    "cell, expected",
    [
        (r"$x_t$, $h_t$", {"x", "h"}),
        (r"$x_1, \dots, x_S$", {"x"}),
        (r"$w$, $W_q$, $W_k$, $b$", {"w", "W_q", "W_k", "b"}),
        (r"$P_{vocab}$, $P$", {"P_vocab", "P"}),
        (r"$\mathrm{cov}_{t,i}$", {r"\mathrm{cov}"}),
        (r"$i = 1, \dots, S$; $j$", {"i", "j"}),
        (r"$\overrightarrow{h}_i$, $\overleftarrow{h}_i$", {r"\overrightarrow{h}", r"\overleftarrow{h}"}),
        (r"$PE_{pos, 2a}$", {"PE"}),
    ],
)
def test_symbols_of_a_cell(cell, expected):
    assert symbols(cell) == expected
