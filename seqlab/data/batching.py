"""Padded batches: what a training loop feeds a model (chapters 2 and 3).

Batches are **batch-first** and padded on the right with ``PAD_ID = 0``; masks are bool with True at
real tokens. Shape legend: B batch, S source length, T target length.

* :func:`pad_sequences`: id lists of different lengths → one ``(B, S)`` tensor and the lengths;
* :class:`Seq2SeqBatch`, :func:`make_seq2seq_batch`, :func:`iterate_batches`: teacher forcing;
* :func:`make_tagging_batch`: one tag per token;
* :func:`train_test_split`: a split in which no test source is also a training source.
"""

import random
from collections.abc import Iterator
from dataclasses import dataclass, fields, replace

import torch
from torch import Tensor

from seqlab.core.checks import check_at_least_one
from seqlab.core.padding import BOS_ID, EOS_ID, PAD_ID, lengths_to_mask
from seqlab.data.vocab import Vocab


def pad_sequences(seqs: list[list[int]]) -> tuple[Tensor, Tensor]:
    """Stack id lists of different lengths into one tensor, padded on the right with ``PAD_ID``.

    Shape:
        - returns ``ids (B, S)`` long with ``S`` the longest length, and ``lengths (B,)`` long.

    Example::

        >>> ids, lengths = pad_sequences([[5, 6, 7], [8]])
        >>> ids.tolist(), lengths.tolist()
        ([[5, 6, 7], [8, 0, 0]], [3, 1])

    Taught in chapter 2.
    """
    if len(seqs) == 0:
        raise ValueError("pad_sequences needs at least one sequence, got none")
    lengths = torch.tensor([len(seq) for seq in seqs], dtype=torch.long)  # (B,)
    ids = torch.full((len(seqs), int(lengths.max())), PAD_ID, dtype=torch.long)  # (B, S)
    for row, seq in enumerate(seqs):
        ids[row, : len(seq)] = torch.tensor(seq, dtype=torch.long)
    return ids, lengths


@dataclass
class Seq2SeqBatch:
    """A padded batch of (source, target) pairs for teacher forcing.

    The decoder reads ``tgt_in`` and must predict ``tgt_out``, the same tokens shifted left by one:
    ``tgt_in = <bos> y1 y2 y3`` and ``tgt_out = y1 y2 y3 <eos>``. The loss counts only ``tgt_mask``.

    Taught in chapter 3.
    """

    src: Tensor  # (B, S) long: source ids, PAD_ID after each source's end
    src_lengths: Tensor  # (B,) long: real length of each source
    src_mask: Tensor  # (B, S) bool: True at real source tokens (attention may look only there)
    tgt_in: Tensor  # (B, T) long: decoder input, <bos> followed by the target
    tgt_out: Tensor  # (B, T) long: what the decoder must predict, the target followed by <eos>
    tgt_mask: Tensor  # (B, T) bool: True where tgt_out is real (the steps the loss counts)

    def to(self, device) -> "Seq2SeqBatch":
        """The same batch with every tensor moved to ``device`` (other fields are kept as they are)."""
        moved = {f.name: getattr(self, f.name) for f in fields(self)}
        return replace(self, **{name: v.to(device) for name, v in moved.items() if isinstance(v, Tensor)})

    def __len__(self) -> int:
        return self.src.shape[0]


def make_seq2seq_batch(pairs: list[tuple[list[str], list[str]]], src_vocab: Vocab, tgt_vocab: Vocab) -> Seq2SeqBatch:
    """Encode and pad (source tokens, target tokens) pairs into a :class:`Seq2SeqBatch`.

    Example::

        >>> vocab = Vocab(["a", "b"])
        >>> batch = make_seq2seq_batch([(["a", "b"], ["b", "a"])], vocab, vocab)
        >>> batch.tgt_in.tolist(), batch.tgt_out.tolist()
        ([[1, 5, 4]], [[5, 4, 2]])

    Taught in chapter 3.
    """
    check_pairs(pairs, "make_seq2seq_batch")
    sources = [src_vocab.encode(src) for src, _ in pairs]
    targets = [tgt_vocab.encode(tgt) for _, tgt in pairs]
    return Seq2SeqBatch(**teacher_forcing_tensors(sources, targets))


def check_pairs(pairs: list, caller: str) -> None:
    """At least one pair, and no empty source (an encoder needs at least one token)."""
    if len(pairs) == 0:
        raise ValueError(f"{caller} needs at least one pair, got none")
    for i, (src, _) in enumerate(pairs):
        if len(src) == 0:
            raise ValueError(f"pair {i} has an empty source; an encoder needs at least one token")


def teacher_forcing_tensors(sources: list[list[int]], targets: list[list[int]]) -> dict:
    """Pad encoded sources and targets into the six tensors of a :class:`Seq2SeqBatch`.

    ``tgt_in`` is ``<bos>`` + target and ``tgt_out`` is target + ``<eos>``: the same length, shifted by one.
    """
    src, src_lengths = pad_sequences(sources)  # (B, S), (B,)
    tgt_in, tgt_lengths = pad_sequences([[BOS_ID] + t for t in targets])  # (B, T), (B,)
    tgt_out, _ = pad_sequences([t + [EOS_ID] for t in targets])  # (B, T): same lengths as tgt_in
    return {
        "src": src,
        "src_lengths": src_lengths,
        "src_mask": lengths_to_mask(src_lengths),  # (B, S)
        "tgt_in": tgt_in,
        "tgt_out": tgt_out,
        "tgt_mask": lengths_to_mask(tgt_lengths),  # (B, T)
    }


def shuffled_chunks(items: list, batch_size: int, shuffle: bool = True, seed: int = 0) -> Iterator[list]:
    """Cut ``items`` into chunks of ``batch_size`` (the last holds the rest), in an order drawn from ``seed``."""
    check_at_least_one("batch_size", batch_size)
    order = list(range(len(items)))
    if shuffle:
        random.Random(seed).shuffle(order)
    for start in range(0, len(order), batch_size):
        yield [items[i] for i in order[start : start + batch_size]]


def iterate_batches(
    pairs: list[tuple[list[str], list[str]]],
    src_vocab: Vocab,
    tgt_vocab: Vocab,
    batch_size: int,
    shuffle: bool = True,
    seed: int = 0,
) -> Iterator[Seq2SeqBatch]:
    """Yield :class:`Seq2SeqBatch` objects that together cover ``pairs`` once (one epoch).

    Every batch holds ``batch_size`` pairs except perhaps the last, which holds the rest.

    Args:
        shuffle: visit the pairs in an order drawn from ``seed``; pass the epoch number as ``seed``
            for a new, still repeatable, order every epoch.

    Taught in chapter 3.
    """
    for chunk in shuffled_chunks(pairs, batch_size, shuffle, seed):
        yield make_seq2seq_batch(chunk, src_vocab, tgt_vocab)


def make_tagging_batch(
    examples: list[tuple[list[str], list[str]]], word_vocab: Vocab, tag_vocab: Vocab
) -> tuple[Tensor, Tensor, Tensor]:
    """Encode and pad (tokens, tags) examples, one tag per token.

    Tags are padded with ``PAD_ID`` too, which ``tag_vocab`` reads as ``<pad>``: pass
    ``ignore_index=PAD_ID`` to the loss so padded positions count for nothing.

    Shape:
        - returns ``tokens (B, S)``, ``tags (B, S)`` and ``lengths (B,)``, all long.

    Taught in chapter 2.
    """
    if len(examples) == 0:
        raise ValueError("make_tagging_batch needs at least one example, got none")
    for i, (tokens, tags) in enumerate(examples):
        if len(tokens) != len(tags):
            raise ValueError(f"example {i}: {len(tokens)} tokens but {len(tags)} tags; need one tag per token")
    tokens, lengths = pad_sequences([word_vocab.encode(t) for t, _ in examples])  # (B, S), (B,)
    tags, _ = pad_sequences([tag_vocab.encode(t) for _, t in examples])  # (B, S)
    return tokens, tags, lengths


def train_test_split(pairs: list, test_fraction: float = 0.2, seed: int = 0) -> tuple[list, list]:
    """Split pairs so that no test source also appears in training.

    Pairs are grouped by their source; whole groups go to one side, so a repeated source can never
    sit on both. ``test_fraction`` is therefore a fraction of the distinct sources.

    Returns:
        ``(train, test)``, each in the order of ``pairs``.

    Taught in chapter 3.
    """
    if not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction must lie strictly between 0 and 1, got {test_fraction}")
    sources = list(dict.fromkeys(tuple(src) for src, _ in pairs))  # distinct, in first-seen order
    if len(sources) < 2:
        raise ValueError(f"need at least 2 distinct sources to split, got {len(sources)}")
    random.Random(seed).shuffle(sources)
    n_test = min(max(round(test_fraction * len(sources)), 1), len(sources) - 1)
    test_sources = set(sources[:n_test])
    train = [pair for pair in pairs if tuple(pair[0]) not in test_sources]
    test = [pair for pair in pairs if tuple(pair[0]) in test_sources]
    return train, test
