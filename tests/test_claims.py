"""The tolerance words (seqlab.experiments.claims): each check against hand-worked cases, and every chapter that
writes one of the words calls the check that guards it (issue 23)."""

import json
import re
from pathlib import Path

import pytest
import torch
from torch import nn

from seqlab.experiments import claims

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "book").glob("[0-9][0-9]_*.ipynb"))
CODE_SPAN = re.compile(r"`[^`\n]*`")


def test_each_word_holds_at_its_tolerance_and_fails_just_past_it():
    claims.assert_perfect(1.0, "x")
    with pytest.raises(AssertionError, match="perfectly"):
        claims.assert_perfect(0.999, "x")
    claims.assert_almost(0.98, "x")
    with pytest.raises(AssertionError, match="almost"):
        claims.assert_almost(0.97, "x")
    claims.assert_near_chance(0.29, chance=0.25, what="x")
    claims.assert_near_chance(0.21, chance=0.25, what="x")
    with pytest.raises(AssertionError, match="near chance"):
        claims.assert_near_chance(0.31, chance=0.25, what="x")  # the old guard `< 0.5` let 0.31 pass
    claims.assert_above_chance(0.31, chance=0.25, what="x")
    with pytest.raises(AssertionError, match="above chance"):
        claims.assert_above_chance(0.29, chance=0.25, what="x")
    with pytest.raises(ValueError, match="fraction"):
        claims.assert_almost(98.0, "x")  # a percentage where a fraction belongs


def test_a_comparison_needs_three_paired_seeds_and_every_one_to_agree():
    claims.assert_beats([0.9, 0.8, 0.7], [0.8, 0.7, 0.6], "x")
    with pytest.raises(AssertionError, match=r"seed\(s\) \[1\]"):
        claims.assert_beats([0.9, 0.7, 0.7], [0.8, 0.7, 0.6], "x")
    with pytest.raises(ValueError, match="at least 3 seeds"):
        claims.assert_beats([0.9, 0.8], [0.8, 0.7], "x")
    assert claims.seed_summary([1.0, 2.0, 3.0]) == "2.000 ± 1.000 over 3 seeds (1.000, 2.000, 3.000)"
    assert claims.seed_summary([1.0, 2.0, 3.0], unit="(data seed, model seed) pairs") == (
        "2.000 ± 1.000 over 3 (data seed, model seed) pairs (1.000, 2.000, 3.000)"
    )


def test_the_paired_gap_is_the_error_of_the_differences():
    a = torch.tensor([1.0, 1.0, 0.0, 1.0])
    b = torch.tensor([1.0, 0.0, 0.0, 0.0])
    gap, error = claims.paired_gap(a, b)  # differences 0, 1, 0, 1: mean 0.5, sd 0.5774, error 0.2887
    assert gap == pytest.approx(0.5)
    assert error == pytest.approx(0.5773503 / 2)
    # Same per-item scores for both: the paired error is 0, though each model's own spread is not.
    assert claims.paired_gap(a, a) == (0.0, 0.0)


def test_size_and_start_checks_look_at_the_parameters():
    torch.manual_seed(0)
    small, large = nn.Linear(10, 10), nn.Linear(10, 12)  # 110 and 132 parameters: 16.7 % apart
    assert claims.parameter_count(small) == 110
    with pytest.raises(AssertionError, match="110 and 132"):
        claims.assert_size_matched(small, large, "x")
    claims.assert_size_matched(small, nn.Linear(10, 11), "x")  # 121: 9.1 %
    twin = nn.Linear(10, 10)
    twin.load_state_dict(small.state_dict())
    assert claims.assert_same_start(small, twin, "x") == ["weight", "bias"]
    with torch.no_grad():
        twin.bias[0] += 1e-7
    with pytest.raises(AssertionError, match="1 of 2 shared parameters differ"):
        claims.assert_same_start(small, twin, "x")


def prose_words(text: str) -> set[str]:
    """The tolerance words a chapter's markdown uses, outside code spans; the longest phrase wins."""
    text = CODE_SPAN.sub(" ", text).lower()
    found = set()
    for word in sorted(claims.WORDS, key=len, reverse=True):
        pattern = re.compile(r"\b" + re.escape(word) + r"\b")
        if pattern.search(text):
            found.add(word)
            text = pattern.sub(" ", text)
    return found


def test_prose_words_prefers_the_longest_phrase():
    assert prose_words("It reverses almost perfectly, and `perfectly` is code.") == {"almost perfectly"}
    assert prose_words("near chance, then perfectly") == {"near chance", "perfectly"}


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_every_tolerance_word_in_a_chapter_is_guarded_by_its_check(chapter):
    nb = json.loads(chapter.read_text())
    markdown = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    unguarded = [f"“{word}” needs {claims.WORDS[word]}" for word in sorted(prose_words(markdown))
                 if not re.search(r"\b" + claims.WORDS[word] + r"\(", code)]
    assert not unguarded, f"{chapter.name} uses tolerance words no assertion guards: " + "; ".join(unguarded)
