"""Vocabularies: tokens ↔ ids, with the special tokens first (chapter 2).

A :class:`Vocab` gives every token an id; ids 0..3 are always ``<pad>``, ``<bos>``, ``<eos>`` and
``<unk>`` (:mod:`seqlab.core.padding`). Character tasks split text with :func:`char_tokens`, which writes a
space as the visible :data:`SPACE_TOKEN` so that heatmap labels show it.
"""

import operator
from collections import Counter
from collections.abc import Iterable

from torch import Tensor

from seqlab.core.padding import BOS_ID, EOS_ID, PAD_ID, SPECIAL_TOKENS, UNK_ID

SPACE_TOKEN = "▁"  # character tasks keep spaces, as a visible token so that heatmap labels show them


class Vocab:
    """A token ↔ id table whose first four ids are the special tokens.

    ``<pad>`` = 0, ``<bos>`` = 1, ``<eos>`` = 2, ``<unk>`` = 3; ordinary tokens follow in the order
    given. :meth:`build` counts a corpus and orders tokens by frequency (most frequent first), ties
    broken alphabetically, so the same corpus always gives the same ids.

    Args:
        tokens: the ordinary tokens, in id order (special tokens are skipped; duplicates are an error).

    Example::

        >>> vocab = Vocab.build([["a", "b", "a"], ["c"]])
        >>> vocab.encode(["a", "c", "z"], add_eos=True)
        [4, 6, 3, 2]
        >>> vocab.decode([4, 6, 2, 0, 0])
        ['a', 'c']

    Taught in chapter 2.
    """

    def __init__(self, tokens: Iterable[str] = ()):
        self._id_to_token = list(SPECIAL_TOKENS)
        self._token_to_id = {token: i for i, token in enumerate(SPECIAL_TOKENS)}
        for token in tokens:
            if token in SPECIAL_TOKENS:
                continue
            if token in self._token_to_id:
                raise ValueError(f"Vocab: token {token!r} is listed twice")
            self._token_to_id[token] = len(self._id_to_token)
            self._id_to_token.append(token)

    @classmethod
    def build(cls, sentences: Iterable[list[str]], min_freq: int = 1) -> "Vocab":
        """Count the tokens of ``sentences`` and keep those seen at least ``min_freq`` times."""
        if min_freq < 1:
            raise ValueError(f"min_freq must be at least 1, got {min_freq}")
        counts = Counter(token for sentence in sentences for token in sentence)
        # Sorting by (-count, token) never depends on hash order, so ids are repeatable.
        ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
        return cls(token for token, count in ordered if count >= min_freq)

    def __len__(self) -> int:
        return len(self._id_to_token)

    def __contains__(self, token: str) -> bool:
        return token in self._token_to_id

    @property
    def tokens(self) -> list[str]:
        """Every token, in id order (special tokens first)."""
        return list(self._id_to_token)

    def token_to_id(self, token: str) -> int:
        """The id of ``token``, or ``UNK_ID`` if the vocabulary does not hold it."""
        return self._token_to_id.get(token, UNK_ID)

    def id_to_token(self, token_id: int) -> str:
        """The token with this id; an id outside ``[0, len(vocab))`` is a ``ValueError``."""
        token_id = _as_id("token_id", token_id)
        if not 0 <= token_id < len(self):
            raise ValueError(f"id {token_id} is outside this vocabulary's range [0, {len(self)})")
        return self._id_to_token[token_id]

    def encode(self, tokens: list[str], add_bos: bool = False, add_eos: bool = False) -> list[int]:
        """Map tokens to ids (unknown tokens to ``UNK_ID``), optionally wrapped in ``<bos>`` … ``<eos>``."""
        if isinstance(tokens, str):
            raise ValueError("encode expects a list of tokens, got a str; use char_tokens(text) for characters")
        ids = [self.token_to_id(token) for token in tokens]
        return [BOS_ID] * add_bos + ids + [EOS_ID] * add_eos

    def decode(self, ids, strip_special: bool = True) -> list[str]:
        """Map ids (a list or a 1-D tensor) back to tokens.

        With ``strip_special``, decoding stops at the first ``<eos>`` and drops ``<pad>`` and ``<bos>``
        (``<unk>`` stays: it is information about the input). Without it, every id is written out.
        """
        if isinstance(ids, Tensor):
            if ids.dim() != 1:
                raise ValueError(f"decode expects a 1-D sequence of ids, got shape {tuple(ids.shape)}")
            ids = ids.tolist()
        tokens = []
        for token_id in (_as_id("ids", i) for i in ids):
            if strip_special and token_id == EOS_ID:
                break
            if strip_special and token_id in (PAD_ID, BOS_ID):
                continue
            tokens.append(self.id_to_token(token_id))
        return tokens

    def __repr__(self) -> str:
        shown = self._id_to_token[len(SPECIAL_TOKENS) : len(SPECIAL_TOKENS) + 8]
        more = ", ..." if len(self) > len(SPECIAL_TOKENS) + len(shown) else ""
        return f"Vocab(size={len(self)}, tokens={shown!r}{more})"


def _as_id(name: str, token_id) -> int:
    """``token_id`` as a Python int (ints, NumPy's and 0-d integer tensors qualify); a float such as 4.0 is a
    ``ValueError`` that names ``name``."""
    try:
        if isinstance(token_id, bool):
            raise TypeError
        return operator.index(token_id)
    except TypeError:
        raise ValueError(f"{name}: expected integer token ids, got {token_id!r} ({type(token_id).__name__})") from None


def build_vocabs(pairs: list[tuple[list[str], list[str]]], min_freq: int = 1) -> tuple[Vocab, Vocab]:
    """A source and a target :class:`Vocab` from the pairs that a task generator returns."""
    return Vocab.build((src for src, _ in pairs), min_freq), Vocab.build((tgt for _, tgt in pairs), min_freq)


def char_tokens(text: str) -> list[str]:
    """Split a string into characters, spaces written as :data:`SPACE_TOKEN`."""
    return [SPACE_TOKEN if c == " " else c for c in text]


def join_char_tokens(tokens: list[str]) -> str:
    """The inverse of :func:`char_tokens`."""
    return "".join(" " if t == SPACE_TOKEN else t for t in tokens)
