"""Chapter 7's experiments: each application's model and its no-attention baseline, trained on the same
data with the same budget by :func:`seqlab.experiments.train.fit`, then measured on held-out examples.

* :func:`sentiment_experiment`: attention pooling against the last states (:class:`PooledClassifier`);
* :func:`entailment_experiment`: word-by-word attention against conditional encoding;
* :func:`captioning_experiment`: attention over image regions against their mean, or against all
  regions side by side (``summary="flatten"``: a baseline that keeps positions);
* :func:`speech_experiment`: attention over the listener's states against its final states.

Each returns a dict with the trained ``model``, its test figures, its parameter count, the training
``seconds`` and the test data (for plots); the classifiers also return ``correct``, one bool per test
item, for paired statistics (:func:`seqlab.experiments.claims.paired_gap`). Sizes are keyword arguments, so a
baseline can be given as many parameters as the model it is compared with. Everything is generated
with the given ``seed``.
"""

import torch
import torch.nn.functional as F

from seqlab.core.device import evaluating, model_device
from seqlab.core.padding import BOS_ID, EOS_ID
from seqlab.data.batching import pad_sequences, shuffled_chunks
from seqlab.data.entailment import ENTAILMENT_LABELS, HYPERNYMS, entailment_task
from seqlab.data.sentiment import sentiment_task
from seqlab.data.shapes import shapes_task
from seqlab.data.speech import speech_task
from seqlab.data.vocab import Vocab
from seqlab.experiments.claims import parameter_count
from seqlab.experiments.train import fit, sequence_nll
from seqlab.models.captioning import RegionCNN
from seqlab.models.entailment import EntailmentClassifier
from seqlab.models.listener import Listener, character_error_rate
from seqlab.models.memory_seq2seq import MemorySeq2Seq
from seqlab.models.pooling import PooledClassifier

SENTIMENT_LABELS = ("negative", "positive")


def _train(model, batches, loss, epochs: int, lr: float, device) -> float:
    """Train with :func:`seqlab.experiments.train.fit`; the seconds it took (fit times every epoch)."""
    return sum(fit(model, batches, loss, epochs=epochs, lr=lr, device=device)["seconds"])


def _result(model, seconds: float, **figures) -> dict:
    return {"model": model, "parameters": parameter_count(model), "seconds": seconds, **figures}


def sentiment_batch(examples: list, vocab: Vocab) -> tuple:
    """``(src (B, S), src_lengths (B,), labels (B,))`` from :func:`~seqlab.data.sentiment_task` triples."""
    src, lengths = pad_sequences([vocab.encode(tokens) for tokens, _, _ in examples])
    labels = torch.tensor([SENTIMENT_LABELS.index(label) for _, label, _ in examples])  # (B,)
    return src, lengths, labels


def sentiment_experiment(
    pooling: str,
    n_train: int = 1500,
    n_test: int = 500,
    epochs: int = 2,
    batch_size: int = 32,
    seed: int = 0,
    device="cpu",
    encoding_size: int = 64,
) -> dict:
    """Train a :class:`PooledClassifier` (``pooling="attention"``, ``"last"`` or ``"mean"``) on sentiment sentences.

    ``encoding_size`` is the encoder's output size (both directions together): a larger one gives the
    last-state reader as many parameters as attention pooling (a size-matched control).

    Returns ``accuracy`` and ``decisive_weight``: the mean share of the pooling weights that falls on the
    decisive words (attention pooling only), ``correct``: one bool per test sentence (for paired
    statistics), with the model, ``test`` examples and ``vocab``.
    """
    train, test = sentiment_task(n_train, seed=seed), sentiment_task(n_test, seed=seed + 10_000)
    vocab = Vocab.build(tokens for tokens, _, _ in train + test)
    torch.manual_seed(seed)
    model = PooledClassifier(len(vocab), len(SENTIMENT_LABELS), encoding_size=encoding_size, pooling=pooling).to(device)

    def batches(epoch):
        return [sentiment_batch(chunk, vocab) for chunk in shuffled_chunks(train, batch_size, seed=seed + epoch)]

    def loss(model, batch):
        src, lengths, labels = batch
        return F.cross_entropy(model(src, lengths), labels)

    seconds = _train(model, batches, loss, epochs, 3e-3, device)
    src, lengths, labels = (t.to(device) for t in sentiment_batch(test, vocab))
    with torch.no_grad(), evaluating(model):
        correct = (model(src, lengths).argmax(dim=1) == labels).cpu()  # (B,)
        accuracy = correct.float().mean().item()
        decisive = None
        if pooling == "attention":
            weights = model.attention_weights(src, lengths)  # (B, S)
            decisive = sum(weights[i, d].sum().item() for i, (_, _, d) in enumerate(test)) / len(test)
    return _result(model, seconds, accuracy=accuracy, decisive_weight=decisive, correct=correct, test=test, vocab=vocab)


def entailment_batch(examples: list, vocab: Vocab) -> tuple:
    """``(premise, premise_lengths, hypothesis, hypothesis_lengths, labels)`` from entailment triples."""
    premise, premise_lengths = pad_sequences([vocab.encode(p) for p, _, _ in examples])
    hypothesis, hypothesis_lengths = pad_sequences([vocab.encode(h) for _, h, _ in examples])
    labels = torch.tensor([ENTAILMENT_LABELS.index(label) for _, _, label in examples])  # (B,)
    return premise, premise_lengths, hypothesis, hypothesis_lengths, labels


def entailment_experiment(
    word_by_word: bool,
    n_clauses: int = 2,
    n_train: int = 2000,
    n_test: int = 600,
    epochs: int = 8,
    batch_size: int = 32,
    seed: int = 0,
    device="cpu",
    hidden_size: int = 64,
) -> dict:
    """Train an :class:`EntailmentClassifier` with or without word-by-word attention; ``accuracy`` on
    held-out pairs and ``correct`` (one bool per pair, for paired statistics), with the model, ``test``
    pairs and ``vocab``; ``n_clauses`` is the premise's number of clauses
    (:func:`~seqlab.data.entailment_task`), ``hidden_size`` each encoder's state size (a larger one
    gives conditional encoding as many parameters as attention: a size-matched control)."""
    train = entailment_task(n_train, n_clauses=n_clauses, seed=seed)
    test = entailment_task(n_test, n_clauses=n_clauses, seed=seed + 10_000)
    vocab = Vocab.build(sentence for p, h, _ in train + test for sentence in (p, h))
    torch.manual_seed(seed)
    model = EntailmentClassifier(
        len(vocab), len(ENTAILMENT_LABELS), hidden_size=hidden_size, word_by_word=word_by_word
    ).to(device)

    def batches(epoch):
        return [entailment_batch(chunk, vocab) for chunk in shuffled_chunks(train, batch_size, seed=seed + epoch)]

    def loss(model, batch):
        *inputs, labels = batch
        return F.cross_entropy(model(*inputs), labels)

    seconds = _train(model, batches, loss, epochs, 3e-3, device)
    *inputs, labels = (t.to(device) for t in entailment_batch(test, vocab))
    with torch.no_grad(), evaluating(model):
        correct = (model(*inputs).argmax(dim=1) == labels).cpu()  # (B,)
    return _result(model, seconds, accuracy=correct.float().mean().item(), correct=correct, test=test, vocab=vocab)


def target_batch(targets: list, vocab: Vocab) -> tuple:
    """Teacher forcing: ``tgt_in`` (``<bos>`` + target) and ``tgt_out`` (target + ``<eos>``), ``(B, T)`` each."""
    tgt_in, _ = pad_sequences([[BOS_ID] + vocab.encode(t) for t in targets])
    tgt_out, _ = pad_sequences([vocab.encode(t) + [EOS_ID] for t in targets])
    return tgt_in, tgt_out


def _train_and_decode(model, make_batch, train, test, vocab, epochs, batch_size, lr, seed, device) -> tuple:
    """Teacher-forced training on ``train``, then greedy decoding of ``test``: (seconds, decoded token lists)."""

    def batches(epoch):
        return [make_batch(chunk) for chunk in shuffled_chunks(train, batch_size, seed=seed + epoch)]

    def loss(model, batch):
        src, src_lengths, tgt_in, tgt_out = batch
        return sequence_nll(model(src, src_lengths, tgt_in), tgt_out)

    seconds = _train(model, batches, loss, epochs, lr, device)
    src, src_lengths, _, tgt_out = make_batch(test)
    src, src_lengths = src.to(device), None if src_lengths is None else src_lengths.to(device)
    decoded = model.greedy_decode(src, src_lengths, max_len=tgt_out.shape[1] + 2)
    return seconds, [vocab.decode(ids) for ids in decoded.tolist()]


def captioning_experiment(
    attention: bool,
    n_train: int = 2000,
    n_test: int = 300,
    epochs: int = 8,
    batch_size: int = 32,
    seed: int = 0,
    device="cpu",
    summary: str = "mean",
    output_size: int = 32,
    hidden_size: int = 64,
    cell: int = 8,
    lr: float = 3e-3,
) -> dict:
    """Train a :class:`MemorySeq2Seq` over a :class:`RegionCNN` on :func:`~seqlab.data.shapes_task`.

    ``summary`` is what a decoder without attention reads (:class:`RegionCNN`'s argument): ``"mean"``,
    the mean of the regions, or ``"flatten"``, all regions side by side, projected (it keeps where
    each region is). ``output_size`` is each region's size M, ``hidden_size`` the decoder's state size,
    ``cell`` each region's side in pixels (:func:`~seqlab.data.shapes_task`), ``lr`` Adam's learning rate.

    Returns ``exact_match`` (whole captions right), ``relation_accuracy`` (the relation word right) and
    ``binding_accuracy`` (both shapes with their colours in the right places), with the model,
    ``test_images``, ``test_captions``, ``outputs`` and ``vocab``.
    """
    images, captions = shapes_task(n_train + n_test, cell=cell, seed=seed)
    vocab = Vocab.build(captions)
    torch.manual_seed(seed)
    memory_encoder = RegionCNN(output_size=output_size, summary=summary)
    model = MemorySeq2Seq(memory_encoder, len(vocab), hidden_size=hidden_size, attention=attention).to(device)
    indices = list(range(n_train))

    def make_batch(chunk):
        return (images[chunk], None, *target_batch([captions[i] for i in chunk], vocab))

    test = list(range(n_train, n_train + n_test))
    seconds, outputs = _train_and_decode(model, make_batch, indices, test, vocab, epochs, batch_size, lr, seed, device)
    references = [captions[i] for i in test]
    relation = sum(o[2:3] == r[2:3] for o, r in zip(outputs, references)) / n_test
    binding = sum(o[:2] == r[:2] and o[-2:] == r[-2:] for o, r in zip(outputs, references)) / n_test
    exact = sum(o == r for o, r in zip(outputs, references)) / n_test
    return _result(
        model, seconds, exact_match=exact, relation_accuracy=relation, binding_accuracy=binding,
        test_images=images[n_train:], test_captions=references, outputs=outputs, vocab=vocab,
    )  # fmt: skip


def speech_experiment(
    attention: bool, pyramid: int = 0, n_train: int = 1500, n_test: int = 300, epochs: int = 5, batch_size: int = 32,
    seed: int = 0, device="cpu", hidden_size: int = 64, listener_size: int = 64, lr: float = 3e-3,
) -> dict:  # fmt: skip
    """Train a :class:`MemorySeq2Seq` over a :class:`Listener` on :func:`~seqlab.data.speech_task`.

    ``hidden_size`` is the speller's state size, ``listener_size`` the listener's output size M
    (larger ones give a model without attention as many parameters as one with it), ``lr`` Adam's
    learning rate.

    Returns ``cer`` (:func:`character_error_rate` of greedy transcripts) and ``exact_match``, with the
    model, ``test`` triples, ``outputs`` and ``vocab``.
    """
    examples = speech_task(n_train + n_test, seed=seed)
    train, test = examples[:n_train], examples[n_train:]
    vocab = Vocab.build(chars for _, chars, _ in examples)
    torch.manual_seed(seed)
    n_bins = examples[0][0].shape[1]
    model = MemorySeq2Seq(
        Listener(n_bins, listener_size, pyramid=pyramid), len(vocab), hidden_size=hidden_size, attention=attention
    ).to(device)

    def make_batch(chunk):
        lengths = torch.tensor([frames.shape[0] for frames, _, _ in chunk])  # (B,)
        frames = torch.nn.utils.rnn.pad_sequence([f for f, _, _ in chunk], batch_first=True)  # (B, S, F)
        return (frames, lengths, *target_batch([chars for _, chars, _ in chunk], vocab))

    seconds, outputs = _train_and_decode(model, make_batch, train, test, vocab, epochs, batch_size, lr, seed, device)
    references = [chars for _, chars, _ in test]
    exact = sum(o == r for o, r in zip(outputs, references)) / len(test)
    return _result(
        model, seconds, cer=character_error_rate(outputs, references), exact_match=exact, test=test, outputs=outputs,
        vocab=vocab,
    )  # fmt: skip


__all__ = [
    "SENTIMENT_LABELS",
    "caption_alignment",
    "captioning_experiment",
    "clause_attention",
    "entailment_batch",
    "entailment_experiment",
    "sentiment_batch",
    "sentiment_experiment",
    "speech_alignment",
    "speech_experiment",
    "target_batch",
]


# --- where the models look ------------------------------------------------------------------------


@torch.no_grad()
def clause_attention(model, test: list, vocab: Vocab) -> float:
    """Mean weight that word-by-word attention puts on the premise clause the hypothesis is about (the
    clause whose noun or hypernym the hypothesis names), over all real hypothesis words."""
    noun_groups = {n: h for h, (nouns, _) in HYPERNYMS.items() for n in nouns} | {h: h for h in HYPERNYMS}
    *inputs, _ = (t.to(model_device(model)) for t in entailment_batch(test, vocab))
    with evaluating(model):
        weights = model.attention_weights(*inputs)  # (B, T, P)
    shares = []
    for i, (premise, hypothesis, _) in enumerate(test):
        group = noun_groups[next(w for w in reversed(hypothesis) if w in noun_groups)]
        # the premise's clauses, as (start, stop) positions between the "while"s
        bounds = [-1] + [j for j, w in enumerate(premise) if w == "while"] + [len(premise)]
        for start, stop in zip(bounds[:-1], bounds[1:]):
            if noun_groups[next(w for w in premise[start + 1 : stop] if w in noun_groups)] == group:
                break
        shares.append(weights[i, : len(hypothesis), start + 1 : stop].sum(dim=1).mean().item())
    return sum(shares) / len(shares)


@torch.no_grad()
def caption_alignment(model, images, captions: list, vocab: Vocab, grid: int = 3) -> float:
    """The fraction of colour and shape words whose most-attended region is the region of the shape
    they name (the first two words the first shape in reading order, the last two the second).
    Teacher-forced on the reference captions."""
    tgt_in, _ = target_batch(captions, vocab)
    device = model_device(model)
    with evaluating(model):
        weights = model.attention_weights(images.to(device), None, tgt_in.to(device))  # (B, T, grid²)
    cell = images.shape[-1] // grid
    brightness = images.abs().view(len(captions), 3, grid, cell, grid, cell).mean(dim=(1, 3, 5)).flatten(1)  # (B, g²)
    hits = total = 0
    for i, caption in enumerate(captions):
        first, second = sorted(brightness[i].topk(2).indices.tolist())  # the two shapes, in reading order
        for t, region in ((0, first), (1, first), (len(caption) - 2, second), (len(caption) - 1, second)):
            hits += int(weights[i, t].argmax()) == region
            total += 1
    return hits / total


@torch.no_grad()
def speech_alignment(model, test: list, vocab: Vocab) -> dict:
    """Teacher-forced on the reference transcripts: ``in_span``, the fraction of characters whose
    most-attended listener state lies over the character's own frames (a pyramidal listener's state s
    covers frames ``s·2^p .. (s+1)·2^p - 1``), and ``monotonic``, the fraction of transcripts whose
    most-attended states never move backwards."""
    frames = torch.nn.utils.rnn.pad_sequence([f for f, _, _ in test], batch_first=True)  # (B, S, F)
    lengths = torch.tensor([f.shape[0] for f, _, _ in test])  # (B,)
    tgt_in, _ = target_batch([chars for _, chars, _ in test], vocab)
    device = model_device(model)
    with evaluating(model):
        weights = model.attention_weights(frames.to(device), lengths.to(device), tgt_in.to(device))  # (B, T, S')
    stride = 2**model.memory_encoder.pyramid
    in_span = total = monotonic = 0
    for i, (_, chars, spans) in enumerate(test):
        peaks = weights[i, : len(chars)].argmax(dim=1).tolist()  # one listener state per character
        monotonic += all(a <= b for a, b in zip(peaks, peaks[1:]))
        for peak, (start, end) in zip(peaks, spans):
            in_span += start < (peak + 1) * stride and peak * stride < end  # the state's frames overlap the span
            total += 1
    return {"in_span": in_span / total, "monotonic": monotonic / len(test)}
