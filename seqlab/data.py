"""Vocabularies, padded batches, and the synthetic tasks that the chapters train on.

Every corpus is generated here, never downloaded, and is the same for the same ``seed``: generators
draw from their own ``random.Random(seed)`` and never touch the global random state.

* :func:`reversal_task`: reverse (or copy) a random symbol sequence; lengths are a parameter, so
  accuracy can be plotted against source length.
* :func:`date_task`: a date written in one of :data:`DATE_FORMATS` (English and Chinese) → ISO
  ``"2026-11-30"``, both sides as characters.
* :func:`translation_task`: grammar-generated English → Chinese phrases whose word order differs.
* :func:`right_context_task`: tagging where an ambiguous word's sense is given only by the words
  after it.
* :func:`summarisation_task`: short news stories → one-sentence summaries that copy names no
  vocabulary holds; :class:`PointerBatch` numbers each source's out-of-vocabulary words for copying.

Batches are **batch-first** with ``PAD_ID = 0``; masks are bool with True at real tokens.
Shape legend: B batch, S source length, T target length.
"""

import functools
import itertools
import random
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, fields
from datetime import date

import torch
from torch import Tensor

from seqlab.checks import check_shape

PAD, BOS, EOS, UNK = "<pad>", "<bos>", "<eos>", "<unk>"
PAD_ID, BOS_ID, EOS_ID, UNK_ID = 0, 1, 2, 3
SPECIAL_TOKENS = (PAD, BOS, EOS, UNK)  # ids 0..3 in every vocabulary

SPACE_TOKEN = "▁"  # character tasks keep spaces, as a visible token so that heatmap labels show them


# ----------------------------------------------------------------------------------------------
# Vocabulary


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
        for token_id in ids:
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


def build_vocabs(pairs: list[tuple[list[str], list[str]]], min_freq: int = 1) -> tuple[Vocab, Vocab]:
    """A source and a target :class:`Vocab` from the pairs that a task generator returns."""
    return Vocab.build((src for src, _ in pairs), min_freq), Vocab.build((tgt for _, tgt in pairs), min_freq)


def char_tokens(text: str) -> list[str]:
    """Split a string into characters, spaces written as :data:`SPACE_TOKEN`."""
    return [SPACE_TOKEN if c == " " else c for c in text]


def join_char_tokens(tokens: list[str]) -> str:
    """The inverse of :func:`char_tokens`."""
    return "".join(" " if t == SPACE_TOKEN else t for t in tokens)


# ----------------------------------------------------------------------------------------------
# Padded batches


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


def lengths_to_mask(lengths, max_len: int | None = None) -> Tensor:
    """A bool mask, True at the real (non-padding) positions of each row.

    Args:
        lengths: ``(B,)`` real length of each row.
        max_len: width ``S`` of the mask; the longest length when None.

    Shape:
        - returns ``(B, S)`` bool, ``mask[b, s] = s < lengths[b]``.

    Example::

        >>> lengths_to_mask(torch.tensor([3, 1]), max_len=4).int().tolist()
        [[1, 1, 1, 0], [1, 0, 0, 0]]

    Taught in chapter 2.
    """
    lengths = torch.as_tensor(lengths, dtype=torch.long)
    check_shape("lengths", lengths, ("B",))
    longest = int(lengths.max()) if lengths.numel() else 0
    if lengths.numel() and int(lengths.min()) < 0:
        raise ValueError(f"lengths must not be negative, got {lengths.tolist()}")
    S = longest if max_len is None else max_len
    if S < longest:
        raise ValueError(f"max_len={max_len} is shorter than the longest length {longest}")
    return torch.arange(S, device=lengths.device).unsqueeze(0) < lengths.unsqueeze(1)  # (B, S)


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
        """The same batch with every tensor moved to ``device``."""
        return Seq2SeqBatch(**{f.name: getattr(self, f.name).to(device) for f in fields(self)})

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
    if len(pairs) == 0:
        raise ValueError("make_seq2seq_batch needs at least one pair, got none")
    for i, (src, _) in enumerate(pairs):
        if len(src) == 0:
            raise ValueError(f"pair {i} has an empty source; an encoder needs at least one token")
    src, src_lengths = pad_sequences([src_vocab.encode(s) for s, _ in pairs])  # (B, S), (B,)
    targets = [tgt_vocab.encode(t) for _, t in pairs]
    tgt_in, tgt_lengths = pad_sequences([[BOS_ID] + t for t in targets])  # (B, T), (B,)
    tgt_out, _ = pad_sequences([t + [EOS_ID] for t in targets])  # (B, T): same lengths as tgt_in
    return Seq2SeqBatch(
        src=src,
        src_lengths=src_lengths,
        src_mask=lengths_to_mask(src_lengths),  # (B, S)
        tgt_in=tgt_in,
        tgt_out=tgt_out,
        tgt_mask=lengths_to_mask(tgt_lengths),  # (B, T)
    )


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
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    order = list(range(len(pairs)))
    if shuffle:
        random.Random(seed).shuffle(order)
    for start in range(0, len(order), batch_size):
        chunk = [pairs[i] for i in order[start : start + batch_size]]
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


# ----------------------------------------------------------------------------------------------
# Sequence reversal


def _check_n(n: int) -> None:
    if n < 1:
        raise ValueError(f"n (the number of examples) must be at least 1, got {n}")


def reversal_task(
    n: int, min_len: int = 3, max_len: int = 10, n_symbols: int = 10, seed: int = 0, reverse: bool = True
) -> list[tuple[list[str], list[str]]]:
    """Random symbol sequences and their reversal (or copy).

    Symbols are the letters ``"a"``, ``"b"``, … (``n_symbols`` of them); each length is uniform in
    ``[min_len, max_len]``. Every output token depends on one input token far away, which is what a
    fixed-size context vector finds hard as sequences grow.

    Args:
        n: number of pairs.
        min_len, max_len: shortest and longest source, both included.
        n_symbols: alphabet size, 1 to 26.
        seed: the draw; the same seed gives the same pairs.
        reverse: target is the reversed source; ``False`` gives the copy task.

    Example::

        >>> src, tgt = reversal_task(1, min_len=4, max_len=4)[0]
        >>> tgt == src[::-1]
        True

    Used in chapters 3 and 4.
    """
    _check_n(n)
    if not 1 <= min_len <= max_len:
        raise ValueError(f"need 1 <= min_len <= max_len, got min_len={min_len}, max_len={max_len}")
    if not 1 <= n_symbols <= 26:
        raise ValueError(f"n_symbols must lie in [1, 26], got {n_symbols}")
    rng = random.Random(seed)
    symbols = [chr(ord("a") + i) for i in range(n_symbols)]
    pairs = []
    for _ in range(n):
        src = rng.choices(symbols, k=rng.randint(min_len, max_len))
        pairs.append((src, src[::-1] if reverse else list(src)))
    return pairs


# ----------------------------------------------------------------------------------------------
# Date normalisation

MONTHS = tuple("January February March April May June July August September October November December".split())
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")  # date.weekday() order
ZH_DIGITS = "〇一二三四五六七八九"
ZH_WEEKDAYS = ("星期一", "星期二", "星期三", "星期四", "星期五", "星期六", "星期日")


def chinese_number(value: int) -> str:
    """Write 1..99 in Chinese numerals: 9 → 九, 10 → 十, 11 → 十一, 20 → 二十, 31 → 三十一."""
    if not 1 <= value <= 99:
        raise ValueError(f"chinese_number writes 1..99, got {value}")
    tens, ones = divmod(value, 10)
    if tens == 0:
        return ZH_DIGITS[ones]
    # "十" alone means ten; a leading "一" is dropped (十一, not 一十一); a trailing zero is silent.
    return (ZH_DIGITS[tens] if tens > 1 else "") + "十" + (ZH_DIGITS[ones] if ones else "")


def chinese_year(year: int) -> str:
    """Write a year digit by digit, as Chinese dates do: 2026 → 二〇二六."""
    return "".join(ZH_DIGITS[int(digit)] for digit in str(year))


def _ordinal(day: int) -> str:
    suffix = "th" if 11 <= day <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return f"{day}{suffix}"


# Every format says which number is the day: month names, year first, or day-first numerals only
# (there is deliberately no month-first "11/30/2026", which would make "01/02/2026" ambiguous).
# Years are always four digits. The year is the calendar year (date.year), never a week-based one.
_DATE_FORMATTERS = {
    "day_mon_year": lambda d: f"{d.day} {MONTHS[d.month - 1][:3]} {d.year}",  # 30 Nov 2026
    "day_month_year": lambda d: f"{d.day} {MONTHS[d.month - 1]} {d.year}",  # 30 November 2026
    "month_day_year": lambda d: f"{MONTHS[d.month - 1]} {d.day}, {d.year}",  # November 30, 2026
    "mon_day_year": lambda d: f"{MONTHS[d.month - 1][:3]} {d.day}, {d.year}",  # Nov 30, 2026
    "lower_day_mon_year": lambda d: f"{d.day} {MONTHS[d.month - 1][:3].lower()} {d.year}",  # 30 nov 2026
    "ordinal": lambda d: f"the {_ordinal(d.day)} of {MONTHS[d.month - 1]} {d.year}",  # the 30th of November 2026
    "weekday_day_month_year": lambda d: f"{WEEKDAYS[d.weekday()]}, {d.day} {MONTHS[d.month - 1]} {d.year}",
    "wkd_mon_day_year": lambda d: f"{WEEKDAYS[d.weekday()][:3]}, {MONTHS[d.month - 1][:3]} {d.day}, {d.year}",
    "dd/mm/yyyy": lambda d: f"{d.day:02d}/{d.month:02d}/{d.year}",  # 30/11/2026
    "dd.mm.yyyy": lambda d: f"{d.day:02d}.{d.month:02d}.{d.year}",  # 30.11.2026
    "yyyy.mm.dd": lambda d: f"{d.year}.{d.month:02d}.{d.day:02d}",  # 2026.11.30
    "zh": lambda d: f"{d.year}年{d.month}月{d.day}日",  # 2026年11月30日
    "zh_weekday": lambda d: f"{d.year}年{d.month}月{d.day}日 {ZH_WEEKDAYS[d.weekday()]}",  # 2026年11月30日 星期一
    "zh_numerals": lambda d: f"{chinese_year(d.year)}年{chinese_number(d.month)}月{chinese_number(d.day)}日",
}
DATE_FORMATS = tuple(_DATE_FORMATTERS)  # the format names, for format_date and date_task(formats=...)


def format_date(day: date, fmt_name: str) -> str:
    """Write ``day`` in the named format, e.g. ``format_date(date(2026, 11, 30), "zh")`` → ``"2026年11月30日"``.

    Locale-free: month and weekday names come from this module, not from ``strftime``.

    Used in chapters 3 and 4.
    """
    if fmt_name not in _DATE_FORMATTERS:
        raise ValueError(f"unknown date format {fmt_name!r}; choose one of {list(DATE_FORMATS)}")
    return _DATE_FORMATTERS[fmt_name](day)


def iso_date(day: date) -> str:
    """The target side: ``YYYY-MM-DD`` with the calendar year (``date.year``, not ``isocalendar()``'s)."""
    return f"{day.year:04d}-{day.month:02d}-{day.day:02d}"


def date_task(
    n: int,
    seed: int = 0,
    start: date = date(1950, 1, 1),
    end: date = date(2050, 12, 31),
    formats: Iterable[str] | None = None,
) -> list[tuple[list[str], list[str]]]:
    """Dates written in many ways, to be normalised to ISO ``YYYY-MM-DD``.

    Each pair draws a day uniformly from ``[start, end]`` and a format uniformly from ``formats``
    (default: all of :data:`DATE_FORMATS`). Both sides are lists of characters (:func:`char_tokens`),
    spaces as :data:`SPACE_TOKEN`.

    Example::

        >>> src, tgt = date_task(1, formats=["zh"])[0]
        >>> join_char_tokens(tgt), "年" in src
        ('2019-02-15', True)

    Used in chapters 3 and 4.
    """
    _check_n(n)
    if start > end:
        raise ValueError(f"start ({start}) must not be after end ({end})")
    formats = list(DATE_FORMATS if formats is None else formats)
    for name in formats:
        if name not in _DATE_FORMATTERS:
            raise ValueError(f"unknown date format {name!r}; choose from {list(DATE_FORMATS)}")
    if not formats:
        raise ValueError("formats must name at least one format")
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        day = date.fromordinal(rng.randint(start.toordinal(), end.toordinal()))
        text = format_date(day, rng.choice(formats))
        pairs.append((char_tokens(text), char_tokens(iso_date(day))))
    return pairs


# ----------------------------------------------------------------------------------------------
# English → Chinese phrase translation
#
# Four differences in word order and form, each visible in an alignment heatmap:
#   1. an adjective is the predicate on its own in Chinese (no "be"), and takes an adverb: 很 when
#      English has none or "very", 不 for "not":      "you are big ."  → "你 很 大 。"
#   2. a time phrase moves from the English end to right after the subject:
#                                                      "we are busy today ." → "我们 今天 很 忙 。"
#   3. a place phrase moves before the verb, as 在 + place:
#                                                      "they eat rice at home ." → "他们 在 家 吃 饭 。"
#   4. a yes/no question keeps statement order and ends in 吗 ？:
#                                                      "do you eat rice ?" → "你 吃 饭 吗 ？"

# (English subject, its form of "be", its form of "do", Chinese)
_SUBJECTS = [
    ("i", "am", "do", "我"),
    ("you", "are", "do", "你"),
    ("he", "is", "does", "他"),
    ("she", "is", "does", "她"),
    ("we", "are", "do", "我们"),
    ("they", "are", "do", "他们"),
]
_ADJECTIVES = {
    "big": "大",
    "small": "小",
    "busy": "忙",
    "tired": "累",
    "happy": "高兴",
    "hungry": "饿",
    "tall": "高",
    "cold": "冷",
}
_DEGREES = [("", "很"), ("very", "很"), ("not", "不")]  # (English adverb, Chinese adverb)
# (base form, third-person singular, English object, Chinese verb and object)
_VERBS = [
    ("eat", "eats", "rice", "吃 饭"),
    ("drink", "drinks", "tea", "喝 茶"),
    ("drink", "drinks", "coffee", "喝 咖啡"),
    ("read", "reads", "books", "看 书"),
    ("watch", "watches", "tv", "看 电视"),
    ("learn", "learns", "chinese", "学 中文"),
]
_TIMES = {"today": "今天", "tomorrow": "明天", "now": "现在", "tonight": "今晚"}
_PLACES = {
    "at home": "在 家",
    "at school": "在 学校",
    "in the park": "在 公园",
    "in the library": "在 图书馆",
    "at the office": "在 办公室",
}


def _words(parts: list[str]) -> list[str]:
    return " ".join(part for part in parts if part).split()


def _adjective_pair(subject: tuple, degree: tuple, adjective: str, time: str, question: bool) -> tuple:
    en_subject, be, _, zh_subject = subject
    en = [be, en_subject] if question else [en_subject, be]
    en += [degree[0], adjective, time, "?" if question else "."]
    zh = [zh_subject, _TIMES.get(time, ""), degree[1], _ADJECTIVES[adjective], "吗 ？" if question else "。"]
    return _words(en), _words(zh)


def _verb_pair(subject: tuple, negated: bool, verb: tuple, place: str, time: str, question: bool) -> tuple:
    en_subject, _, do, zh_subject = subject
    base, third_person, obj, zh_verb_object = verb
    if question:
        en = [do, en_subject, base]
    elif negated:
        en = [en_subject, do, "not", base]
    else:
        en = [en_subject, third_person if do == "does" else base]
    en += [obj, place, time, "?" if question else "."]
    zh = [zh_subject, _TIMES.get(time, ""), "不" if negated else "", _PLACES.get(place, ""), zh_verb_object]
    return _words(en), _words(zh + ["吗 ？" if question else "。"])


@functools.lru_cache(maxsize=1)
def _translation_pairs() -> tuple:
    """Every sentence of the grammar, in a fixed order (questions are never negated)."""
    times, places = [""] + list(_TIMES), [""] + list(_PLACES)
    pairs = []
    for subject, adjective, time in itertools.product(_SUBJECTS, _ADJECTIVES, times):
        for degree in _DEGREES:
            pairs.append(_adjective_pair(subject, degree, adjective, time, question=False))
            if degree[0] != "not":
                pairs.append(_adjective_pair(subject, degree, adjective, time, question=True))
    for subject, verb, place, time in itertools.product(_SUBJECTS, _VERBS, places, times):
        for negated, question in [(False, False), (True, False), (False, True)]:
            pairs.append(_verb_pair(subject, negated, verb, place, time, question))
    return tuple(pairs)


def translation_grammar_size() -> int:
    """How many distinct pairs :func:`translation_task` can produce (4440)."""
    return len(_translation_pairs())


def translation_task(n: int, seed: int = 0) -> list[tuple[list[str], list[str]]]:
    """English → Chinese phrase pairs from a small grammar, space-separated tokens on both sides.

    With ``n`` at most :func:`translation_grammar_size`, the pairs are distinct (drawn without
    replacement). With a larger ``n``, every sentence appears once and the rest are drawn again with
    replacement, so some repeat; :func:`train_test_split` keeps repeats on one side of the split.

    Example::

        >>> ("are you very big ?".split(), "你 很 大 吗 ？".split()) in translation_task(translation_grammar_size())
        True

    Used in chapter 4.
    """
    _check_n(n)
    grammar = _translation_pairs()
    rng = random.Random(seed)
    if n <= len(grammar):
        chosen = rng.sample(grammar, n)
    else:
        chosen = rng.sample(grammar, len(grammar)) + rng.choices(grammar, k=n - len(grammar))
    return [(list(src), list(tgt)) for src, tgt in chosen]


# ----------------------------------------------------------------------------------------------
# Right-context tagging

# word → {sense tag: right-context cues}. Each cue belongs to exactly one (word, sense), so the words
# after the ambiguous word decide its tag, and nothing before it does.
AMBIGUOUS_WORDS = {
    "apple": {
        "FRUIT": ["it is tasty", "it is sweet and juicy", "it grows on trees"],
        "COMPANY": ["it is more stable than android", "it sells phones and laptops", "its shares went up"],
    },
    "java": {
        "COFFEE": ["it smells great in the morning", "it is served hot with milk", "the beans are roasted"],
        "LANGUAGE": ["it compiles to bytecode", "it has static types", "the code runs everywhere"],
    },
    "python": {
        "SNAKE": ["it can swallow a rat", "it lives in the jungle", "its skin has scales"],
        "LANGUAGE": ["it has clean syntax", "it runs my scripts", "the code reads like english"],
    },
    "jaguar": {
        "ANIMAL": ["it hunts at night", "it has spotted fur", "it climbs trees"],
        "CAR": ["it has a powerful engine", "it is parked outside", "it needs new tyres"],
    },
    "amazon": {
        "RIVER": ["it flows through brazil", "it is full of fish", "its water is brown"],
        "COMPANY": ["it delivers parcels fast", "it sells everything online", "its warehouses are huge"],
    },
}
# Left contexts say nothing about the sense: every one is used with every word and both senses.
LEFT_CONTEXTS = [
    "i like",
    "my friend talks about",
    "we read about",
    "she often mentions",
    "everyone knows",
    "they asked me about",
]


def right_context_task(n: int, seed: int = 0) -> list[tuple[list[str], list[str]]]:
    """Sentences in which one ambiguous word's sense is decided only by the words after it.

    Each sentence is ``left context + word + "because" + cue``, e.g.
    ``"i like apple because it is tasty"`` (apple is FRUIT) and
    ``"i like apple because it is more stable than android"`` (COMPANY). The word, the left context
    and the sense are drawn uniformly (the two senses equally likely), then a cue of that sense.

    Tags are ``"O"`` for ordinary words and the sense (``"FRUIT"``, ``"COMPANY"``, …) for the
    ambiguous word. A left-to-right tagger must tag the word having read only the words before it,
    which carry no information about the sense, so it can do no better than chance (50 %) there; a
    bidirectional one also reads the cue.

    Example::

        >>> tokens, tags = right_context_task(1)[0]
        >>> len(tokens) == len(tags), sum(tag != "O" for tag in tags)
        (True, 1)

    Taught in chapter 2.
    """
    _check_n(n)
    rng = random.Random(seed)
    words = list(AMBIGUOUS_WORDS)
    examples = []
    for _ in range(n):
        word = rng.choice(words)
        left = LEFT_CONTEXTS[rng.randrange(len(LEFT_CONTEXTS))].split()
        sense = rng.choice(list(AMBIGUOUS_WORDS[word]))  # dicts keep insertion order: repeatable
        right = ["because"] + rng.choice(AMBIGUOUS_WORDS[word][sense]).split()
        tokens = left + [word] + right
        tags = ["O"] * len(left) + [sense] + ["O"] * len(right)
        examples.append((tokens, tags))
    return examples


# ----------------------------------------------------------------------------------------------
# Templated summarisation, with names that no vocabulary holds
#
# A story is a lead sentence (who did what, where, when), a detail with a number, and a distractor
# that has nothing to do with the lead; the summary is the lead without the when:
#   "on monday , zorvan kelleth opened a bridge in dunmere . the bridge cost 40 million dollars .
#    meanwhile , traffic on the main road was slow ."  →  "zorvan kelleth opened a bridge in dunmere ."
# Names and places are glued together from syllables, so nearly every one is new: a vocabulary built
# on the training stories cannot hold them, and only copying can write them.

_NAME_ONSETS = ("b", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "dr", "gr", "th", "w")
_NAME_VOWELS = ("a", "e", "i", "o", "u", "ae", "ei")
_NAME_CODAS = ("", "n", "r", "l", "s", "th", "m", "v", "k")
_PLACE_ENDINGS = ("mere", "ford", "holm", "wick", "ton", "by", "stead", "moor", "field", "haven", "port", "dale")

_WEEKDAY_WORDS = tuple(day.lower() for day in WEEKDAYS)
_ROLES = ("a local teacher", "a business owner", "a retired nurse", "the new mayor", "a young engineer")

# action → detail sentences that go with it; each holds a {number} and some the last name again.
_ACTIONS = {
    "opened a bridge": ("the bridge cost {number} million dollars .", "{last} said the work took {number} years ."),
    "won the election": ("{last} won {number} percent of the vote .", "the count ended after {number} hours ."),
    "signed a contract": ("the contract is worth {number} million dollars .", "{last} signed for {number} years ."),
    "opened a school": ("the school has {number} classrooms .", "{last} said {number} children will start soon ."),
    "closed the factory": ("{number} workers lost their jobs .", "the factory had been open for {number} years ."),
    "visited the hospital": ("{last} met {number} nurses and doctors .", "the hospital has {number} beds ."),
    "sold the company": ("the price was {number} million dollars .", "{last} had run it for {number} years ."),
    "won the race": ("{last} finished {number} seconds ahead .", "{number} runners started the race ."),
}
# Lead sentences: the summary is "{first} {last} {action} in {place} ." whatever the order here.
_LEADS_WITH_PLACE = (
    "on {day} , {first} {last} {action} in {place} .",
    "{first} {last} {action} in {place} on {day} .",
    "in {place} , {first} {last} {action} on {day} .",
    "{first} {last} , {role} , {action} in {place} .",
    "residents of {place} say that {first} {last} {action} .",
)
_LEADS_WITHOUT_PLACE = (
    "on {day} , {first} {last} {action} .",
    "{first} {last} , {role} , {action} on {day} .",
)
# Sentences that mention the last name, or the place, a second time.
_ECHOES = ("{last} said it was a great day for {place} .", "{last} thanked everyone who helped .")
# Nothing here belongs in the summary: {other_place} is a second place and {count} a second number.
_DISTRACTORS = (
    "meanwhile , traffic on the main road was slow .",
    "the weather was cold and wet all week .",
    "the football club lost {count} games in a row .",
    "meanwhile , heavy rain fell in {other_place} .",
    "shops in the town centre stayed open late .",
    "prices at the market rose by {count} percent .",
)


def _syllable(rng: random.Random) -> str:
    return rng.choice(_NAME_ONSETS) + rng.choice(_NAME_VOWELS) + rng.choice(_NAME_CODAS)


@functools.lru_cache(maxsize=1)
def _summarisation_common_words() -> frozenset:
    """Every word the templates write themselves; a generated name must not be one of them."""
    texts = [*_WEEKDAY_WORDS, *_ROLES, *_ECHOES, *_DISTRACTORS, *_LEADS_WITH_PLACE, *_LEADS_WITHOUT_PLACE]
    texts += [text for action, details in _ACTIONS.items() for text in (action, *details)]
    return frozenset(word for text in texts for word in text.split() if not word.startswith("{"))


def _new_word(rng: random.Random, make) -> str:
    """Draw ``make(rng)`` until it is not a template word (almost always the first draw)."""
    while (word := make(rng)) in _summarisation_common_words():
        pass
    return word


def _person_name(rng: random.Random) -> tuple[str, str]:
    first = _new_word(rng, lambda r: _syllable(r) + _syllable(r))
    last = _new_word(rng, lambda r: _syllable(r) + _syllable(r))
    return first, last


def _place_name(rng: random.Random) -> str:
    return _new_word(rng, lambda r: _syllable(r) + r.choice(_PLACE_ENDINGS))


def summarisation_task(n: int, seed: int = 0) -> list[tuple[list[str], list[str]]]:
    """Short news stories and one-sentence summaries that copy a person's (and a place's) name.

    Each story has two or three sentences (15 to 35 tokens, lower case, punctuation as tokens): a lead
    that says who did what (one of a few actions), usually where and when; then a detail with a number
    and a distractor, in either order, or one of them; some stories mention the last name (and the
    place) a second time. The summary (5 to 10 tokens) is the lead's who, what and where::

        "zorvan kelleth opened a bridge in dunmere ."

    First names, last names and places are made from random syllables, so nearly every one is new:
    with :func:`build_shared_vocab` and ``min_freq=2`` they are out of vocabulary, and a model can
    write them only by copying them from the story. Every word of a summary is either a common
    template word or a word of its own story.

    Example::

        >>> src, tgt = summarisation_task(1)[0]
        >>> all(word in src for word in tgt[:2])  # the name is copied from the story
        True

    Taught in chapter 6.
    """
    _check_n(n)
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        first, last = _person_name(rng)
        action = rng.choice(list(_ACTIONS))  # dicts keep insertion order: repeatable
        has_place = rng.random() < 0.8
        slots = {
            "first": first,
            "last": last,
            "action": action,
            "place": _place_name(rng),
            "other_place": _place_name(rng),
            "day": rng.choice(_WEEKDAY_WORDS),
            "role": rng.choice(_ROLES),
            "number": str(rng.randint(2, 99)),
            "count": str(rng.randint(2, 99)),
        }
        lead = rng.choice(_LEADS_WITH_PLACE if has_place else _LEADS_WITHOUT_PLACE)
        detail = rng.choice(_ACTIONS[action])
        extra = rng.choice(_DISTRACTORS + (_ECHOES if has_place else _ECHOES[1:]))
        shape = rng.random()
        if shape < 0.5:  # three sentences, the lead first
            sentences = [lead, detail, extra] if rng.random() < 0.5 else [lead, extra, detail]
        elif shape < 0.75:
            sentences = [lead, detail]
        else:  # a distractor before the lead: the summary does not always start at the first word
            sentences = [rng.choice(_DISTRACTORS), lead, detail]
        src = " ".join(sentences).format(**slots).split()
        tgt = f"{first} {last} {action}{' in ' + slots['place'] if has_place else ''} .".split()
        pairs.append((src, tgt))
    return pairs


# ----------------------------------------------------------------------------------------------
# The pointer-generator's extended vocabulary
#
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
class PointerBatch:
    """A padded batch for the pointer-generator: a :class:`Seq2SeqBatch` over the extended vocabulary.

    ``src``, ``tgt_in`` and ``tgt_out`` hold extended ids: a source's out-of-vocabulary word k is
    ``V + k`` (V the vocabulary's size), in the source, in the target, and in the decoder's input.
    The model maps ids ``>= V`` to ``<unk>`` before embedding them (an embedding has V rows only) and
    uses the extended ids to copy and to score the output.

    Taught in chapter 6.
    """

    src: Tensor  # (B, S) long: source ids in the extended vocabulary, PAD_ID after each source's end
    src_lengths: Tensor  # (B,) long: real length of each source
    src_mask: Tensor  # (B, S) bool: True at real source tokens
    tgt_in: Tensor  # (B, T) long: <bos> followed by the target, extended ids (map >= V to <unk> to embed)
    tgt_out: Tensor  # (B, T) long: the target followed by <eos>, extended ids (what the output must give)
    tgt_mask: Tensor  # (B, T) bool: True where tgt_out is real (the steps the loss counts)
    oovs: list[list[str]]  # per example, its source's out-of-vocabulary words: id V + k is oovs[b][k]
    n_oov: int  # the most out-of-vocabulary words of any example: outputs have V + n_oov columns

    def to(self, device) -> "PointerBatch":
        """The same batch with every tensor moved to ``device`` (``oovs`` and ``n_oov`` are kept)."""
        moved = {f.name: getattr(self, f.name) for f in fields(self)}
        return PointerBatch(**{name: v.to(device) if isinstance(v, Tensor) else v for name, v in moved.items()})

    def __len__(self) -> int:
        return self.src.shape[0]


def make_pointer_batch(pairs: list[tuple[list[str], list[str]]], vocab: Vocab) -> PointerBatch:
    """Encode and pad (source tokens, target tokens) pairs over each source's extended vocabulary.

    Example::

        >>> vocab = Vocab(["said", "."])  # said = 4, . = 5; len(vocab) = 6
        >>> batch = make_pointer_batch([(["kelleth", "said", "."], ["kelleth", "said", "."])], vocab)
        >>> batch.src.tolist(), batch.tgt_out.tolist(), batch.oovs
        ([[6, 4, 5]], [[6, 4, 5, 2]], [['kelleth']])

    Taught in chapter 6.
    """
    if len(pairs) == 0:
        raise ValueError("make_pointer_batch needs at least one pair, got none")
    for i, (src, _) in enumerate(pairs):
        if len(src) == 0:
            raise ValueError(f"pair {i} has an empty source; an encoder needs at least one token")
    encoded = [extended_source_ids(src, vocab) for src, _ in pairs]
    src, src_lengths = pad_sequences([ids for ids, _ in encoded])  # (B, S), (B,)
    oovs = [words for _, words in encoded]
    targets = [extended_target_ids(tgt, vocab, words) for (_, tgt), words in zip(pairs, oovs)]
    tgt_in, tgt_lengths = pad_sequences([[BOS_ID] + t for t in targets])  # (B, T), (B,)
    tgt_out, _ = pad_sequences([t + [EOS_ID] for t in targets])  # (B, T): same lengths as tgt_in
    return PointerBatch(
        src=src,
        src_lengths=src_lengths,
        src_mask=lengths_to_mask(src_lengths),  # (B, S)
        tgt_in=tgt_in,
        tgt_out=tgt_out,
        tgt_mask=lengths_to_mask(tgt_lengths),  # (B, T)
        oovs=oovs,
        n_oov=max(len(words) for words in oovs),
    )


def iterate_pointer_batches(
    pairs: list[tuple[list[str], list[str]]],
    src_vocab: Vocab,
    tgt_vocab: Vocab,
    batch_size: int,
    shuffle: bool = True,
    seed: int = 0,
) -> Iterator[PointerBatch]:
    """Yield :class:`PointerBatch` objects that together cover ``pairs`` once (one epoch).

    The signature is :func:`iterate_batches`'s, so a training loop takes either; copying needs one
    vocabulary for both sides, so ``src_vocab`` and ``tgt_vocab`` must be the same :class:`Vocab`.

    Taught in chapter 6.
    """
    if src_vocab is not tgt_vocab:
        raise ValueError(
            "iterate_pointer_batches: src_vocab and tgt_vocab must be the same Vocab object (copying needs "
            "one vocabulary for both sides; see build_shared_vocab), got two different ones"
        )
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    order = list(range(len(pairs)))
    if shuffle:
        random.Random(seed).shuffle(order)
    for start in range(0, len(order), batch_size):
        chunk = [pairs[i] for i in order[start : start + batch_size]]
        yield make_pointer_batch(chunk, src_vocab)
