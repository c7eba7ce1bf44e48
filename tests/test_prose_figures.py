"""Every figure a chapter's prose states comes from that chapter's own run (issue 12).

A percentage or a decimal number in a chapter's markdown must appear in the chapter's stored outputs
or in its code, so that re-executing a chapter can never leave its text behind. Exempt: section
numbers, numbers inside formulas, and figures quoted from a paper (a sentence that cites one). No cell is
exempt for being "worked by hand" (issue 23): hand-worked arithmetic is computed and printed by the
cell beside it, so a sentence can never contradict the output under it.
"""

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "book").glob("[0-9][0-9]_*.ipynb"))

PERCENT = re.compile(r"(?<![\w.\\{])(\d+(?:\.\d+)?)\s?%")
DECIMAL = re.compile(r"(?<![\w.\\{§])(\d+\.\d+)(?![\w.])")
SECTION = re.compile(
    r"(^#+ \d+(?:\.\d+)*|§\s?\d+(?:\.\d+)*|\b(?:[Ss]ection|[Cc]hapter|[Tt]able|[Ff]igure) \d+(?:\.\d+)*)", re.M
)
MATH = re.compile(r"\$\$.*?\$\$|\$[^$\n]*\$|`[^`\n]*`", re.S)


def run_text(nb: dict) -> str:
    """What the page's run shows or computes: every code cell's source and its stored text outputs."""
    parts = []
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        parts.append("".join(cell["source"]))
        for output in cell.get("outputs", []):
            parts.append("".join(output.get("text", "")))
            for kind in ("text/plain", "text/markdown", "text/html"):
                parts.append("".join(output.get("data", {}).get(kind, "")))
    return "\n".join(parts)


def stated_figures(text: str) -> list[tuple[str, str]]:
    """``(number, context)`` for every percentage and decimal in prose, outside formulas and section numbers."""
    prose = SECTION.sub(" ", MATH.sub(" ", text))
    matches = {m.start(): m for pattern in (PERCENT, DECIMAL) for m in pattern.finditer(prose)}  # 91.3 % once
    found = []
    for start in sorted(matches):
        match = matches[start]
        if "{cite" in prose[max(0, start - 200) : match.end() + 200]:  # a figure quoted from a paper, cited
            continue
        found.append((match.group(1), " ".join(prose[max(0, start - 60) : match.end() + 20].split())))
    return found


def test_the_check_finds_a_figure_the_run_does_not_show():
    nb = {"cells": [{"cell_type": "code", "source": ["print(0.913)"], "outputs": [{"text": "0.913\n"}]}]}
    prose = "## 4.7 Results\nThe model reached 91.3 % (its loss: 0.913), where §3.8 found 12.5 %; $p = 0.5$."
    missing = [n for n, _ in stated_figures(prose) if n not in run_text(nb)]
    assert missing == ["91.3", "12.5"]
    assert stated_figures("about 3 points (36.44 → 39.53) {cite:p}`see2017get`") == []


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_every_figure_in_the_prose_comes_from_the_run(chapter):
    nb = json.loads(chapter.read_text())
    shown = run_text(nb)
    unsupported = []
    for index, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "markdown":
            continue
        for number, context in stated_figures("".join(cell["source"])):
            if number not in shown:
                unsupported.append(f"cell {index}: {number} in “{context}”")
    assert not unsupported, (
        f"{chapter.name} states figures that none of its outputs or code contains (print them from the run, "
        "hand-worked arithmetic included):\n" + "\n".join(unsupported)
    )
