"""Writing summaries with the pointer-generator, and measuring them (chapter 6).

* :func:`summarise`: decode a summary for every story, copied ids written back as the story's words;
* :func:`attention_overlap`: how much a model attends again to what it already attended to;
* :func:`rouge`, :func:`oov_recall`, :func:`repetition_rate`, :func:`summary_quality`: the scores.
"""

import torch
from rouge_score import rouge_scorer

from seqlab.core.device import check_model_device, evaluating
from seqlab.data.extended_vocab import decode_extended, make_pointer_batch
from seqlab.models.pointer import PointerGenerator, mean_overlap

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


@torch.no_grad()
def summarise(model: PointerGenerator, pairs: list, vocab, max_len: int = 20, beam_size: int = 1) -> list:
    """Decode a summary for every source of ``pairs``, as words: copied ids become the source's words.

    Runs on the model's own device; decoding leaves the model's mode as it was.

    Taught in chapter 6.
    """
    device = check_model_device(model, None)
    outputs = []
    for begin in range(0, len(pairs), 256):
        batch = make_pointer_batch(pairs[begin : begin + 256], vocab).to(device)
        if beam_size > 1:
            ids = model.beam_search(batch.src, batch.src_lengths, max_len, beam_size=beam_size)
        else:
            ids = model.greedy_decode(batch.src, batch.src_lengths, max_len)
        outputs += [decode_extended(row, vocab, oovs) for row, oovs in zip(ids.tolist(), batch.oovs)]
    return outputs


@torch.no_grad()
def attention_overlap(model: PointerGenerator, pairs: list, vocab) -> float:
    """How much the model attends again to what it already attended to: the coverage loss
    ``Σ_i min(α_{t,i}, cov_{t,i})`` on the reference summaries (teacher forcing), averaged over every
    real target step of ``pairs``. Lower means less attention returns to covered positions; a model
    trained with the coverage loss is trained to lower exactly this, so chapter 6 judges repetition by
    the summaries' repeated n-grams instead.

    Runs on the model's own device, in evaluation mode (the model's mode is restored afterwards).

    Taught in chapter 6.
    """
    batch = make_pointer_batch(pairs, vocab).to(check_model_device(model, None))
    with evaluating(model):
        out = model.forward_with_details(batch.src, batch.src_lengths, batch.tgt_in)
    return mean_overlap(out, batch).item()
