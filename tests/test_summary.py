"""seqlab.experiments.summary on hand-made summaries."""

import pytest

from seqlab.data import Vocab
from seqlab.experiments.summary import oov_recall, repetition_rate, rouge, summary_quality

VOCAB = Vocab(["opened", "a", "bridge", "in", "."])


def test_rouge_perfect_and_disjoint():
    ref = ["zorvan", "opened", "a", "bridge", "."]
    assert rouge([ref], [ref]) == pytest.approx({"rouge1": 1.0, "rouge2": 1.0, "rougeL": 1.0})
    assert rouge([["x", "y"]], [ref])["rouge1"] == 0.0


def test_rouge1_by_hand():
    # output shares 3 of its 4 words with a 5-word reference: P = 3/4, R = 3/5, F1 = 2PR/(P+R) = 2/3
    # (rouge-score drops punctuation, so the hand count uses words only)
    scores = rouge([["zorvan", "opened", "bridge", "twice"]], [["zorvan", "opened", "a", "new", "bridge"]])
    assert scores["rouge1"] == pytest.approx(2 / 3)


def test_rouge2_and_rouge_l_by_hand_on_chapter_6s_pair():
    # Chapter 6's worked example: the right words in a muddled order, part of them twice.
    reference = ["zorvan", "kelleth", "opened", "a", "bridge", "in", "dunmere"]
    output = ["dunmere", "kelleth", "opened", "a", "bridge", "kelleth", "opened"]
    scores = rouge([output], [reference])
    assert scores["rouge1"] == pytest.approx(5 / 7)  # zorvan and in missing; kelleth and opened clipped to 1
    # bigrams: "kelleth opened" (twice in the output, once in the reference: clipped), "opened a", "a bridge"
    assert scores["rouge2"] == pytest.approx(3 / 6)
    assert scores["rougeL"] == pytest.approx(4 / 7)  # LCS "kelleth opened a bridge": 4 of 7 words each side
    assert repetition_rate([output], n=2) == pytest.approx(1 / 6) and repetition_rate([output], n=3) == 0.0


def test_oov_recall_counts_only_words_outside_the_vocabulary():
    refs = [["zorvan", "kelleth", "opened", "a", "bridge", "."], ["mira", "opened", "a", "bridge", "."]]
    outs = [["zorvan", "<unk>", "opened", "a", "bridge", "."], ["<unk>", "opened", "a", "bridge", "."]]
    assert oov_recall(outs, refs, VOCAB) == pytest.approx(1 / 3)  # zorvan found; kelleth and mira not


def test_repetition_rate():
    assert repetition_rate([["a", "b", "a", "b", "a"]], n=2) == pytest.approx(2 / 4)  # (a b) and (b a) again
    assert repetition_rate([["a", "b", "c"]], n=2) == 0.0
    assert set(summary_quality([["a"]], [["a"]], VOCAB)) == {
        "rouge1",
        "rouge2",
        "rougeL",
        "oov_recall",
        "repeated_2grams",
    }
