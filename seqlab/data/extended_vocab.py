"""The pointer-generator's extended vocabulary, and batches over it (chapter 6)."""

from collections.abc import Iterator
from dataclasses import dataclass

from torch import Tensor

from seqlab.core.padding import BOS_ID, EOS_ID, PAD_ID, UNK_ID
from seqlab.data.batching import Seq2SeqBatch, check_pairs, shuffled_chunks, teacher_forcing_tensors
from seqlab.data.vocab import Vocab

# Copying needs one vocabulary for both sides: a source word and the same target word must have the
# same id. Each example's out-of-vocabulary source words get temporary ids V, V+1, ... (V the
# vocabulary's size), in order of first appearance; the targets use those ids too, so the loss can
# reward copying a name that the vocabulary does not hold.


def build_shared_vocab(pairs: list[tuple[list[str], list[str]]], min_freq: int = 1) -> Vocab:
    """One :class:`Vocab` for sources and targets, keeping the tokens found in at least ``min_freq`` pairs.

    Unlike :meth:`Vocab.build`, a token counts once per pair, however often that pair repeats it: a
    name that one story mentions twice and its summary copies once is still a word of one pair only,
    so ``min_freq=2`` leaves it out of the vocabulary.

    Taught in chapter 6.
    """
    return Vocab.build((sorted(set(src) | set(tgt)) for src, tgt in pairs), min_freq)


def extended_source_ids(tokens: list[str], vocab: Vocab) -> tuple[list[int], list[str]]:
    """Source ids over the extended vocabulary, and the source's out-of-vocabulary words.

    A token in ``vocab`` gets its id; the k-th distinct out-of-vocabulary token (in order of first
    appearance) gets ``len(vocab) + k``, the same id every time it appears.

    Returns:
        ``(ids, oovs)``: one id per token, and the out-of-vocabulary words, ``oovs[k]`` having id
        ``len(vocab) + k``.

    Example::

        >>> vocab = Vocab(["said", "."])  # said = 4, . = 5; len(vocab) = 6
        >>> extended_source_ids(["kelleth", "said", "zorvan", "kelleth", "."], vocab)
        ([6, 4, 7, 6, 5], ['kelleth', 'zorvan'])

    Taught in chapter 6.
    """
    if isinstance(tokens, str):
        raise ValueError("extended_source_ids expects a list of tokens, got a str")
    ids, oov_index = [], {}
    for token in tokens:
        if token in vocab:
            ids.append(vocab.token_to_id(token))
        else:
            k = oov_index.setdefault(token, len(oov_index))
            ids.append(len(vocab) + k)
    return ids, list(oov_index)


def extended_target_ids(tokens: list[str], vocab: Vocab, oovs: list[str]) -> list[int]:
    """Target ids over the extended vocabulary of one source (without ``<bos>`` or ``<eos>``).

    A token in ``vocab`` gets its id, a token of ``oovs`` (the source's out-of-vocabulary words) gets
    ``len(vocab) + its index``, and any other token ``UNK_ID``: a word found in neither place can be
    neither generated nor copied.

    Example::

        >>> vocab = Vocab(["said", "."])
        >>> extended_target_ids(["kelleth", "said", "dunmere", "."], vocab, ["kelleth", "zorvan"])
        [6, 4, 3, 5]

    Taught in chapter 6.
    """
    if isinstance(tokens, str):
        raise ValueError("extended_target_ids expects a list of tokens, got a str")
    position = {word: k for k, word in enumerate(oovs)}
    ids = []
    for token in tokens:
        if token in vocab:
            ids.append(vocab.token_to_id(token))
        elif token in position:
            ids.append(len(vocab) + position[token])
        else:
            ids.append(UNK_ID)
    return ids


def decode_extended(ids, vocab: Vocab, oovs: list[str], strip_special: bool = True) -> list[str]:
    """Map extended ids (a list or a 1-D tensor) back to words: ``len(vocab) + k`` is ``oovs[k]``.

    Special tokens are handled as :meth:`Vocab.decode` handles them: with ``strip_special``, decoding
    stops at the first ``<eos>`` and drops ``<pad>`` and ``<bos>``.

    Example::

        >>> decode_extended([6, 4, 7, 5, 2, 0], Vocab(["said", "."]), ["kelleth", "zorvan"])
        ['kelleth', 'said', 'zorvan', '.']

    Taught in chapter 6.
    """
    if isinstance(ids, Tensor):
        if ids.dim() != 1:
            raise ValueError(f"decode_extended expects a 1-D sequence of ids, got shape {tuple(ids.shape)}")
        ids = ids.tolist()
    V = len(vocab)
    tokens = []
    for token_id in ids:
        if strip_special and token_id == EOS_ID:
            break
        if strip_special and token_id in (PAD_ID, BOS_ID):
            continue
        if token_id >= V:
            if token_id - V >= len(oovs):
                raise ValueError(
                    f"id {token_id} is outside the extended vocabulary [0, {V + len(oovs)}) of this source"
                )
            tokens.append(oovs[token_id - V])
        else:
            tokens.append(vocab.id_to_token(token_id))
    return tokens


@dataclass
class PointerBatch(Seq2SeqBatch):
    """A :class:`~seqlab.data.batching.Seq2SeqBatch` over the extended vocabulary.

    ``src``, ``tgt_in`` and ``tgt_out`` hold extended ids: a source's out-of-vocabulary word k is
    ``V + k`` (V the vocabulary's size), in the source, in the target, and in the decoder's input.
    The model maps ids ``>= V`` to ``<unk>`` before embedding them (an embedding has V rows only) and
    uses the extended ids to copy and to score the output.

    Taught in chapter 6.
    """

    oovs: list[list[str]]  # per example, its source's out-of-vocabulary words: id V + k is oovs[b][k]
    n_oov: int  # the most out-of-vocabulary words of any example: outputs have V + n_oov columns


def make_pointer_batch(pairs: list[tuple[list[str], list[str]]], vocab: Vocab) -> PointerBatch:
    """Encode and pad (source tokens, target tokens) pairs over each source's extended vocabulary.

    Example::

        >>> vocab = Vocab(["said", "."])  # said = 4, . = 5; len(vocab) = 6
        >>> batch = make_pointer_batch([(["kelleth", "said", "."], ["kelleth", "said", "."])], vocab)
        >>> batch.src.tolist(), batch.tgt_out.tolist(), batch.oovs
        ([[6, 4, 5]], [[6, 4, 5, 2]], [['kelleth']])

    Taught in chapter 6.
    """
    check_pairs(pairs, "make_pointer_batch")
    encoded = [extended_source_ids(src, vocab) for src, _ in pairs]
    oovs = [words for _, words in encoded]
    targets = [extended_target_ids(tgt, vocab, words) for (_, tgt), words in zip(pairs, oovs)]
    tensors = teacher_forcing_tensors([ids for ids, _ in encoded], targets)
    return PointerBatch(**tensors, oovs=oovs, n_oov=max(len(words) for words in oovs))


def iterate_pointer_batches(
    pairs: list[tuple[list[str], list[str]]],
    src_vocab: Vocab,
    tgt_vocab: Vocab,
    batch_size: int,
    shuffle: bool = True,
    seed: int = 0,
) -> Iterator[PointerBatch]:
    """Yield :class:`PointerBatch` objects that together cover ``pairs`` once (one epoch).

    The signature is :func:`~seqlab.data.batching.iterate_batches`'s, so a training loop takes either;
    copying needs one vocabulary for both sides, so ``src_vocab`` and ``tgt_vocab`` must be the same
    :class:`Vocab`.

    Taught in chapter 6.
    """
    if src_vocab is not tgt_vocab:
        raise ValueError(
            "iterate_pointer_batches: src_vocab and tgt_vocab must be the same Vocab object (copying needs "
            "one vocabulary for both sides; see build_shared_vocab), got two different ones"
        )
    for chunk in shuffled_chunks(pairs, batch_size, shuffle, seed):
        yield make_pointer_batch(chunk, src_vocab)
