"""Measuring summaries: ROUGE, recall of out-of-vocabulary words, and repetition (chapter 6)."""

from rouge_score import rouge_scorer

ROUGE_TYPES = ("rouge1", "rouge2", "rougeL")


def rouge(outputs: list, references: list) -> dict:
    """Mean ROUGE-1, ROUGE-2 and ROUGE-L F1 (0 to 1) of token lists against references (rouge-score).

    ROUGE-N counts the n-grams the output shares with the reference; ROUGE-L the longest common
    subsequence. F1 balances precision (is what was written in the reference?) and recall (is the
    reference covered?).
    """
    scorer = rouge_scorer.RougeScorer(list(ROUGE_TYPES), use_stemmer=False)
    totals = dict.fromkeys(ROUGE_TYPES, 0.0)
    for output, reference in zip(outputs, references, strict=True):
        scores = scorer.score(" ".join(reference), " ".join(output))
        for name in ROUGE_TYPES:
            totals[name] += scores[name].fmeasure
    return {name: total / max(1, len(outputs)) for name, total in totals.items()}


def oov_recall(outputs: list, references: list, vocab) -> float:
    """Of the reference words the vocabulary lacks, the fraction that the output contains.

    A model that can only generate from its vocabulary scores 0: it can write ``<unk>`` at best.
    """
    found = total = 0
    for output, reference in zip(outputs, references, strict=True):
        written = set(output)
        for word in reference:
            if word not in vocab:
                total += 1
                found += word in written
    return found / total if total else 0.0


def repetition_rate(outputs: list, n: int = 2) -> float:
    """The fraction of n-grams in the outputs that repeat an earlier n-gram of the same output."""
    repeated = total = 0
    for output in outputs:
        seen = set()
        for i in range(len(output) - n + 1):
            gram = tuple(output[i : i + n])
            repeated += gram in seen
            total += 1
            seen.add(gram)
    return repeated / total if total else 0.0


def summary_quality(outputs: list, references: list, vocab, n: int = 2) -> dict:
    """ROUGE-1/2/L, OOV recall and the repeated-n-gram rate of a set of summaries, in one dict.

    Taught in chapter 6.
    """
    return {
        **rouge(outputs, references),
        "oov_recall": oov_recall(outputs, references, vocab),
        f"repeated_{n}grams": repetition_rate(outputs, n),
    }
