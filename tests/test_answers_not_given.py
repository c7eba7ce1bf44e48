"""No exercise's answer is already in a student's hands: the code of every solution region appears neither in
the book's chapters, nor in seqlab's source, nor in the release, whatever its names and layout.

Code is compared as tokens, normalised: comments, whitespace and line breaks dropped, every name replaced by
one placeholder (so renaming variables hides nothing), attribute names and keywords kept (``.scatter_add``,
``torch.where``'s ``where``: what the code does), strings replaced by one placeholder. A solution region is
found in a text when the runs of ``WINDOW`` consecutive tokens of it that occur there cover at least
``COVERED`` of its tokens, or, for a region shorter than a window (but at least ``SHORTEST`` tokens), when the
whole region does. A shorter overlap is what a variant shares with what it varies, which the exercises allow
(chapter 3's greedy loop around exercise 4's location-aware step, seqlab's decoder calls inside it): the
answer's own part is the rest, and it is nowhere else. tests/test_course_integrity.py checks line
by line that the release shows no solution line; this check is the one a copy with other names cannot pass.
"""

import io
import keyword
import re
import tokenize
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
WINDOW = 24  # tokens: about two statements
COVERED = 0.5  # of a region's tokens: more than half of an answer written elsewhere is the answer given
SHORTEST = 10  # a region shorter than this ("return x") says nothing about a solution
NAME, STRING = "N", "S"
SKIPPED = {
    tokenize.COMMENT,
    tokenize.NL,
    tokenize.NEWLINE,
    tokenize.INDENT,
    tokenize.DEDENT,
    tokenize.ENCODING,
    tokenize.ENDMARKER,
    tokenize.TYPE_COMMENT,
}
FENCE = re.compile(r"```[^\n]*\n(.*?)```", re.S)


def normalised(code: str) -> list:
    """``code``'s tokens with names and strings replaced; code that does not tokenize gives what came before."""
    tokens, previous = [], None
    try:
        for token in tokenize.generate_tokens(io.StringIO(code).readline):
            if token.type in SKIPPED:
                continue
            if token.type == tokenize.NAME and not keyword.iskeyword(token.string) and previous != ".":
                text = NAME
            elif token.type == tokenize.STRING:
                text = STRING
            else:
                text = token.string
            tokens.append(text)
            previous = token.string
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return tokens


def solution_regions(source: str) -> list:
    """The code between ``### BEGIN SOLUTION`` and ``### END SOLUTION`` in a cell, one string per region."""
    regions, current = [], None
    for line in source.splitlines():
        if line.strip() == "### BEGIN SOLUTION":
            current = []
        elif line.strip() == "### END SOLUTION":
            regions.append("\n".join(current))
            current = None
        elif current is not None:
            current.append(line)
    return regions


def dedented(code: str) -> str:
    """A region's lines at the margin (a region inside a function is indented)."""
    lines = code.splitlines()
    margin = min((len(line) - len(line.lstrip()) for line in lines if line.strip()), default=0)
    return "\n".join(line[margin:] for line in lines)


def answers() -> dict:
    """``{"exNN: grade_id #k": normalised tokens}`` of every code solution region of every exercise."""
    found = {}
    for path in sorted((ROOT / "solutions").glob("*/*.ipynb")):
        for c in nbformat.read(path, as_version=4).cells:
            grade_id = c.metadata.get("nbgrader", {}).get("grade_id")
            if c.cell_type != "code" or not c.metadata.get("nbgrader", {}).get("solution"):
                continue
            for k, region in enumerate(solution_regions(c.source)):
                found[f"{path.stem}: {grade_id} #{k}"] = normalised(dedented(region))
    return found


def notebook_code(path: Path) -> list:
    """A notebook's code: its code cells, and the fenced code of its markdown cells."""
    nb = nbformat.read(path, as_version=4)
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    return code + [block for c in nb.cells if c.cell_type == "markdown" for block in FENCE.findall(c.source)]


def public_code() -> dict:
    """``{place: [code, ...]}``: the chapters, seqlab's source, and the release."""
    places = {}
    for path in sorted((ROOT / "book").glob("*.ipynb")) + sorted((ROOT / "exercises").glob("*/*.ipynb")):
        places[str(path.relative_to(ROOT))] = notebook_code(path)
    for path in sorted((ROOT / "book").glob("*.md")):
        places[str(path.relative_to(ROOT))] = FENCE.findall(path.read_text())
    for path in sorted((ROOT / "seqlab").rglob("*.py")):
        places[str(path.relative_to(ROOT))] = [path.read_text()]
    return places


def windows(tokens: list, size: int) -> set:
    return {tuple(tokens[i : i + size]) for i in range(len(tokens) - size + 1)}


def coverage(region: list, found: set) -> float:
    """The fraction of ``region``'s tokens inside one of its windows that ``found`` holds."""
    covered = [False] * len(region)
    for i in range(len(region) - WINDOW + 1):
        if tuple(region[i : i + WINDOW]) in found:
            covered[i : i + WINDOW] = [True] * WINDOW
    return sum(covered) / max(len(region), 1)


def occurrences(regions: dict, places: dict) -> list:
    """``(region, place, coverage)`` for every region found in a place."""
    found = []
    for place, codes in places.items():
        texts = [normalised(code) for code in codes]
        long_windows = set().union(*(windows(tokens, WINDOW) for tokens in texts))
        for name, region in regions.items():
            if len(region) >= WINDOW:
                share = coverage(region, long_windows)
            elif len(region) >= SHORTEST:
                share = float(any(tuple(region) in windows(tokens, len(region)) for tokens in texts))
            else:
                share = 0.0
            if share >= COVERED:
                found.append((name, place, round(share, 2)))
    return found


def test_every_exercise_has_answers_to_look_for():
    regions = answers()
    exercises = {name.split(":")[0] for name, tokens in regions.items() if len(tokens) >= SHORTEST}
    assert exercises == {p.stem for p in (ROOT / "solutions").glob("*/*.ipynb")}


def test_no_answer_appears_in_the_book_seqlab_or_the_release():
    found = occurrences(answers(), public_code())
    listed = "\n".join(f"  {a} in {p} ({share:.0%} of it)" for a, p, share in found)
    assert not found, "answers already in the students' hands:\n" + listed


@pytest.mark.parametrize("disguise", ["renamed", "reformatted", "inside a longer function"])
def test_a_disguised_copy_is_found(disguise):
    """The check itself: the longest answer, copied into seqlab under other names or another layout, is found."""
    regions = answers()
    name, _ = max(regions.items(), key=lambda item: len(item[1]))
    exercise, rest = name.split(": ")
    grade_id, k = rest.split(" #")
    path = ROOT / "solutions" / exercise / f"{exercise}.ipynb"
    source = next(
        c.source
        for c in nbformat.read(path, as_version=4).cells
        if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id
    )
    code = dedented(solution_regions(source)[int(k)])
    if disguise == "renamed":
        names = {t.string for t in tokenize.generate_tokens(io.StringIO(code).readline) if t.type == tokenize.NAME}
        for i, old in enumerate(sorted(n for n in names if not keyword.iskeyword(n) and len(n) > 1)):
            code = re.sub(rf"(?<![.\w]){re.escape(old)}\b", f"renamed_{i}", code)
    elif disguise == "reformatted":
        code = "\n".join(line + "  # a comment" for line in code.splitlines())
    else:
        code = "def helper(*args):\n    unrelated = 1\n" + "\n".join("    " + line for line in code.splitlines())
    found = occurrences({name: regions[name]}, {"seqlab/copied.py": [code]})
    assert [(a, p) for a, p, _ in found] == [(name, "seqlab/copied.py")]
