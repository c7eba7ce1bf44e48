"""seqlab.data: vocabularies, padded batches, and the task generators' labels.

Labels are checked against hand-written cases and against parsers written here, independently of
the generators' own code.
"""

import random
import re
from collections import Counter, defaultdict
from datetime import date

import pytest
import torch

from seqlab.data import (
    AMBIGUOUS_WORDS,
    BOS_ID,
    DATE_FORMATS,
    EOS_ID,
    LEFT_CONTEXTS,
    PAD_ID,
    SPACE_TOKEN,
    UNK_ID,
    PointerBatch,
    Seq2SeqBatch,
    Vocab,
    build_shared_vocab,
    build_vocabs,
    char_tokens,
    chinese_number,
    chinese_year,
    date_task,
    decode_extended,
    extended_source_ids,
    extended_target_ids,
    format_date,
    iso_date,
    iterate_batches,
    iterate_pointer_batches,
    join_char_tokens,
    lengths_to_mask,
    make_pointer_batch,
    make_seq2seq_batch,
    make_tagging_batch,
    multi_sentence_summarisation_task,
    pad_sequences,
    reversal_task,
    right_context_task,
    summarisation_task,
    train_test_split,
    translation_grammar_size,
    translation_task,
)

# ----------------------------------------------------------------------------------------------
# Vocab


def test_special_ids_are_fixed():
    vocab = Vocab.build([["x", "y"]])
    assert (PAD_ID, BOS_ID, EOS_ID, UNK_ID) == (0, 1, 2, 3)
    assert [vocab.id_to_token(i) for i in range(4)] == ["<pad>", "<bos>", "<eos>", "<unk>"]
    assert vocab.token_to_id("<eos>") == EOS_ID and vocab.token_to_id("x") >= 4


def test_build_orders_by_frequency_then_token():
    vocab = Vocab.build([["b", "c", "a"], ["c", "b", "d"], ["c"]])  # c:3, b:2, a:1, d:1
    assert vocab.tokens == ["<pad>", "<bos>", "<eos>", "<unk>", "c", "b", "a", "d"]
    assert len(vocab) == 8
    assert Vocab.build([["d", "a", "c", "b"]]).tokens[4:] == ["a", "b", "c", "d"]  # ties: alphabetical


def test_encode_decode_round_trip_and_unknowns():
    sentences = [["the", "cat", "sat"], ["the", "dog"]]
    vocab = Vocab.build(sentences)
    for sentence in sentences:
        assert vocab.decode(vocab.encode(sentence)) == sentence
        assert vocab.decode(vocab.encode(sentence, add_bos=True, add_eos=True)) == sentence
    assert vocab.encode(["the", "zebra"]) == [vocab.token_to_id("the"), UNK_ID]
    assert vocab.encode(["cat"], add_bos=True, add_eos=True) == [BOS_ID, vocab.token_to_id("cat"), EOS_ID]
    assert "cat" in vocab and "zebra" not in vocab and "<pad>" in vocab


def test_decode_stops_at_eos_only_when_stripping():
    vocab = Vocab(["a", "b"])  # a = 4, b = 5
    assert vocab.decode([BOS_ID, 4, 5, EOS_ID, 4, PAD_ID]) == ["a", "b"]
    assert vocab.decode([4, UNK_ID, PAD_ID]) == ["a", "<unk>"]
    assert vocab.decode([BOS_ID, 4, EOS_ID, PAD_ID], strip_special=False) == ["<bos>", "a", "<eos>", "<pad>"]
    assert vocab.decode(torch.tensor([4, 5, EOS_ID])) == ["a", "b"]


def test_min_freq_drops_rare_tokens():
    vocab = Vocab.build([["a", "a", "b"], ["a", "c", "c"]], min_freq=2)
    assert vocab.tokens[4:] == ["a", "c"]
    assert vocab.encode(["b"]) == [UNK_ID]


def test_vocab_errors_and_repr():
    vocab = Vocab(["a"])
    with pytest.raises(ValueError, match=r"id 5 is outside this vocabulary's range \[0, 5\)"):
        vocab.id_to_token(5)
    with pytest.raises(ValueError, match="got a str"):
        vocab.encode("abc")
    with pytest.raises(ValueError, match="listed twice"):
        Vocab(["a", "a"])
    with pytest.raises(ValueError, match="min_freq must be at least 1, got 0"):
        Vocab.build([["a"]], min_freq=0)
    with pytest.raises(ValueError, match="1-D"):
        vocab.decode(torch.zeros(2, 2, dtype=torch.long))
    assert repr(vocab) == "Vocab(size=5, tokens=['a'])"


def test_char_tokens_round_trip():
    assert char_tokens("30 Nov") == ["3", "0", SPACE_TOKEN, "N", "o", "v"]
    assert join_char_tokens(char_tokens("Monday, 30 November 2026")) == "Monday, 30 November 2026"


# ----------------------------------------------------------------------------------------------
# Padding, masks, batches


def test_pad_sequences_by_hand():
    ids, lengths = pad_sequences([[5, 6, 7], [8], [9, 10]])
    assert ids.dtype == torch.long and lengths.dtype == torch.long
    assert ids.tolist() == [[5, 6, 7], [8, 0, 0], [9, 10, 0]]
    assert lengths.tolist() == [3, 1, 2]
    with pytest.raises(ValueError, match="at least one sequence"):
        pad_sequences([])


def test_lengths_to_mask_by_hand():
    mask = lengths_to_mask(torch.tensor([3, 1, 2]))
    assert mask.dtype == torch.bool
    assert mask.tolist() == [[True, True, True], [True, False, False], [True, True, False]]
    assert lengths_to_mask([2], max_len=4).tolist() == [[True, True, False, False]]
    with pytest.raises(ValueError, match="max_len=2 is shorter than the longest length 3"):
        lengths_to_mask(torch.tensor([3, 1]), max_len=2)
    with pytest.raises(ValueError, match=r"lengths: expected shape \(B\), got \(2, 1\)"):
        lengths_to_mask(torch.tensor([[3], [1]]))
    with pytest.raises(ValueError, match="negative"):
        lengths_to_mask(torch.tensor([2, -1]))


def test_seq2seq_batch_by_hand():
    vocab = Vocab(["a", "b", "c"])  # a = 4, b = 5, c = 6
    batch = make_seq2seq_batch([(["a", "b", "c"], ["c", "b", "a"]), (["b"], ["b", "b"])], vocab, vocab)
    assert isinstance(batch, Seq2SeqBatch) and len(batch) == 2
    assert batch.src.tolist() == [[4, 5, 6], [5, 0, 0]]
    assert batch.src_lengths.tolist() == [3, 1]
    assert batch.src_mask.tolist() == [[True, True, True], [True, False, False]]
    assert batch.tgt_in.tolist() == [[BOS_ID, 6, 5, 4], [BOS_ID, 5, 5, PAD_ID]]
    assert batch.tgt_out.tolist() == [[6, 5, 4, EOS_ID], [5, 5, EOS_ID, PAD_ID]]
    assert batch.tgt_mask.tolist() == [[True, True, True, True], [True, True, True, False]]
    # Teacher forcing: the input at step t+1 is the answer at step t.
    both_real = batch.tgt_mask[:, 1:]
    assert torch.equal(batch.tgt_in[:, 1:][both_real], batch.tgt_out[:, :-1][both_real])


def test_seq2seq_batch_to_moves_every_field():
    vocab = Vocab(["a"])
    batch = make_seq2seq_batch([(["a"], ["a"])], vocab, vocab)
    moved = batch.to("meta")  # a device that exists everywhere, GPU or not
    assert isinstance(moved, Seq2SeqBatch)
    assert all(t.device.type == "meta" for t in vars(moved).values())
    assert batch.src.device.type == "cpu"  # the original is untouched


def test_make_seq2seq_batch_errors():
    vocab = Vocab(["a"])
    with pytest.raises(ValueError, match="at least one pair"):
        make_seq2seq_batch([], vocab, vocab)
    with pytest.raises(ValueError, match="pair 1 has an empty source"):
        make_seq2seq_batch([(["a"], ["a"]), ([], ["a"])], vocab, vocab)


def test_iterate_batches_covers_every_pair_once():
    pairs = reversal_task(23, seed=4)
    src_vocab, tgt_vocab = build_vocabs(pairs)
    batches = list(iterate_batches(pairs, src_vocab, tgt_vocab, batch_size=5, seed=1))
    assert [len(b) for b in batches] == [5, 5, 5, 5, 3]
    seen = [tuple(src_vocab.decode(row)) for b in batches for row in b.src]
    assert Counter(seen) == Counter(tuple(src) for src, _ in pairs)
    in_order = list(iterate_batches(pairs, src_vocab, tgt_vocab, batch_size=5, shuffle=False))
    assert [src_vocab.decode(row) for row in in_order[0].src] == [src for src, _ in pairs[:5]]
    again = list(iterate_batches(pairs, src_vocab, tgt_vocab, batch_size=5, seed=1))
    other = list(iterate_batches(pairs, src_vocab, tgt_vocab, batch_size=5, seed=2))
    assert torch.equal(batches[0].src, again[0].src)
    assert not all(torch.equal(a.src, b.src) for a, b in zip(batches, other) if a.src.shape == b.src.shape)
    with pytest.raises(ValueError, match="batch_size must be at least 1, got 0"):
        next(iterate_batches(pairs, src_vocab, tgt_vocab, batch_size=0))


def test_make_tagging_batch_by_hand():
    words, tags = Vocab(["i", "like", "apple"]), Vocab(["O", "FRUIT"])  # i=4 like=5 apple=6; O=4 FRUIT=5
    examples = [(["i", "like", "apple"], ["O", "O", "FRUIT"]), (["apple"], ["FRUIT"])]
    token_ids, tag_ids, lengths = make_tagging_batch(examples, words, tags)
    assert token_ids.tolist() == [[4, 5, 6], [6, 0, 0]]
    assert tag_ids.tolist() == [[4, 4, 5], [5, PAD_ID, PAD_ID]]
    assert lengths.tolist() == [3, 1]
    with pytest.raises(ValueError, match="example 0: 2 tokens but 1 tags"):
        make_tagging_batch([(["i", "like"], ["O"])], words, tags)


def test_train_test_split_keeps_test_sources_out_of_training():
    pairs = reversal_task(300, min_len=1, max_len=2, n_symbols=3, seed=0)  # few distinct sources: many repeats
    train, test = train_test_split(pairs, test_fraction=0.25, seed=0)
    assert len(train) + len(test) == len(pairs) and test and train
    assert not {tuple(s) for s, _ in train} & {tuple(s) for s, _ in test}
    assert Counter(map(repr, train + test)) == Counter(map(repr, pairs))
    assert train_test_split(pairs, 0.25, seed=0) == (train, test)
    assert train_test_split(pairs, 0.25, seed=1) != (train, test)
    with pytest.raises(ValueError, match="test_fraction must lie strictly between 0 and 1, got 1.5"):
        train_test_split(pairs, test_fraction=1.5)
    with pytest.raises(ValueError, match="at least 2 distinct sources"):
        train_test_split([(["a"], ["a"])] * 3)


# ----------------------------------------------------------------------------------------------
# Every generator: repeatable, seed-dependent, and leaves the global random state alone.

GENERATORS = [reversal_task, date_task, translation_task, right_context_task]


@pytest.mark.parametrize("generate", GENERATORS, ids=lambda f: f.__name__)
def test_generators_are_deterministic_for_a_seed(generate):
    random.seed(123)
    python_state, torch_state = random.getstate(), torch.get_rng_state()
    first = generate(40, seed=1)
    assert random.getstate() == python_state and torch.equal(torch.get_rng_state(), torch_state)
    assert generate(40, seed=1) == first
    assert generate(40, seed=2) != first
    assert len(first) == 40
    assert all(isinstance(tok, str) for src, tgt in first for tok in src + tgt)


@pytest.mark.parametrize("generate", GENERATORS, ids=lambda f: f.__name__)
def test_generators_reject_n_below_one(generate):
    with pytest.raises(ValueError, match="n \\(the number of examples\\) must be at least 1, got 0"):
        generate(0)


# ----------------------------------------------------------------------------------------------
# Reversal


def test_reversal_targets_and_lengths():
    pairs = reversal_task(500, min_len=2, max_len=6, n_symbols=4, seed=3)
    assert all(tgt == src[::-1] for src, tgt in pairs)
    assert {len(src) for src, _ in pairs} == {2, 3, 4, 5, 6}
    assert {tok for src, _ in pairs for tok in src} == {"a", "b", "c", "d"}
    copies = reversal_task(50, min_len=3, max_len=3, seed=3, reverse=False)
    assert all(tgt == src and len(src) == 3 for src, tgt in copies)


def test_reversal_bad_arguments():
    with pytest.raises(ValueError, match="need 1 <= min_len <= max_len, got min_len=5, max_len=3"):
        reversal_task(10, min_len=5, max_len=3)
    with pytest.raises(ValueError, match="min_len=0"):
        reversal_task(10, min_len=0, max_len=3)
    with pytest.raises(ValueError, match=r"n_symbols must lie in \[1, 26\], got 27"):
        reversal_task(10, n_symbols=27)


# ----------------------------------------------------------------------------------------------
# Dates: hand-checked cases


def test_every_format_of_one_date_by_hand():
    expected = {
        "day_mon_year": "30 Nov 2026",
        "day_month_year": "30 November 2026",
        "month_day_year": "November 30, 2026",
        "mon_day_year": "Nov 30, 2026",
        "lower_day_mon_year": "30 nov 2026",
        "ordinal": "the 30th of November 2026",
        "weekday_day_month_year": "Monday, 30 November 2026",
        "wkd_mon_day_year": "Mon, Nov 30, 2026",
        "dd/mm/yyyy": "30/11/2026",
        "dd.mm.yyyy": "30.11.2026",
        "yyyy.mm.dd": "2026.11.30",
        "zh": "2026年11月30日",
        "zh_weekday": "2026年11月30日 星期一",
        "zh_numerals": "二〇二六年十一月三十日",
    }
    assert set(expected) == set(DATE_FORMATS)
    for name, text in expected.items():
        assert format_date(date(2026, 11, 30), name) == text, name
    assert iso_date(date(2026, 11, 30)) == "2026-11-30"


def test_single_digit_days_and_months_by_hand():
    day = date(2003, 1, 5)  # a Sunday
    assert format_date(day, "day_mon_year") == "5 Jan 2003"
    assert format_date(day, "dd/mm/yyyy") == "05/01/2003"
    assert format_date(day, "yyyy.mm.dd") == "2003.01.05"
    assert format_date(day, "weekday_day_month_year") == "Sunday, 5 January 2003"
    assert format_date(day, "zh_weekday") == "2003年1月5日 星期日"
    assert format_date(day, "zh_numerals") == "二〇〇三年一月五日"
    assert iso_date(day) == "2003-01-05"


def test_ordinals_and_chinese_numerals_by_hand():
    ordinals = {
        1: "1st",
        2: "2nd",
        3: "3rd",
        4: "4th",
        11: "11th",
        12: "12th",
        13: "13th",
        21: "21st",
        22: "22nd",
        23: "23rd",
        31: "31st",
    }
    for day, text in ordinals.items():
        assert format_date(date(2020, 1, day), "ordinal") == f"the {text} of January 2020"
    numerals = {1: "一", 9: "九", 10: "十", 11: "十一", 19: "十九", 20: "二十", 21: "二十一", 30: "三十", 31: "三十一"}
    for value, text in numerals.items():
        assert chinese_number(value) == text
    assert chinese_year(1950) == "一九五〇" and chinese_year(2000) == "二〇〇〇"
    with pytest.raises(ValueError, match="1..99, got 0"):
        chinese_number(0)


# Around New Year the ISO week-based year (strftime's %G) differs from the calendar year; a label
# built from it would be off by a year. Each case: the date, then the texts it must produce.
WEEK_YEAR_TRAPS = [
    (date(2024, 12, 30), "2024-12-30", "Monday, 30 December 2024", "2024年12月30日 星期一"),
    (date(2024, 12, 31), "2024-12-31", "Tuesday, 31 December 2024", "2024年12月31日 星期二"),
    (date(2025, 12, 29), "2025-12-29", "Monday, 29 December 2025", "2025年12月29日 星期一"),
    (date(2021, 1, 1), "2021-01-01", "Friday, 1 January 2021", "2021年1月1日 星期五"),
    (date(2021, 1, 3), "2021-01-03", "Sunday, 3 January 2021", "2021年1月3日 星期日"),
    (date(2027, 1, 1), "2027-01-01", "Friday, 1 January 2027", "2027年1月1日 星期五"),
    (date(2027, 1, 3), "2027-01-03", "Sunday, 3 January 2027", "2027年1月3日 星期日"),
]


@pytest.mark.parametrize("day,iso,english,chinese", WEEK_YEAR_TRAPS, ids=lambda v: str(v))
def test_labels_use_the_calendar_year_not_the_week_year(day, iso, english, chinese):
    assert day.isocalendar()[0] != day.year  # the trap is real for this date
    assert iso_date(day) == iso
    assert format_date(day, "weekday_day_month_year") == english
    assert format_date(day, "zh_weekday") == chinese
    for src, tgt in date_task(60, seed=0, start=day, end=day):  # every format, through the generator
        assert join_char_tokens(tgt) == iso
        assert str(day.year) in join_char_tokens(src) or chinese_year(day.year) in join_char_tokens(src)


# ----------------------------------------------------------------------------------------------
# Dates: an independent parser recovers every generated target

EN_MONTHS = {
    "jan": 1,
    "feb": 2,
    "mar": 3,
    "apr": 4,
    "may": 5,
    "jun": 6,
    "jul": 7,
    "aug": 8,
    "sep": 9,
    "oct": 10,
    "nov": 11,
    "dec": 12,
}
EN_WEEKDAYS = {"mon": 0, "tue": 1, "wed": 2, "thu": 3, "fri": 4, "sat": 5, "sun": 6}
ZH_VALUES = {c: i for i, c in enumerate("〇一二三四五六七八九")}
ZH_WEEKDAY_VALUES = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6}


def zeller_weekday(year, month, day):
    """Day of the week by Zeller's congruence, 0 = Monday (a check independent of datetime)."""
    if month < 3:
        month, year = month + 12, year - 1
    h = (day + 13 * (month + 1) // 5 + year % 100 + (year % 100) // 4 + (year // 100) // 4 + 5 * (year // 100)) % 7
    return (h + 5) % 7  # Zeller's 0 is Saturday


def parse_zh_number(text):
    if "十" not in text:
        return ZH_VALUES[text]
    tens, _, ones = text.partition("十")
    return (ZH_VALUES[tens] if tens else 1) * 10 + (ZH_VALUES[ones] if ones else 0)


def parse_date(text):
    """(year, month, day, weekday or None) from any of the generated formats."""
    if m := re.fullmatch(r"(\d{4})年(\d{1,2})月(\d{1,2})日(?: 星期(.))?", text):
        weekday = ZH_WEEKDAY_VALUES[m[4]] if m[4] else None
        return int(m[1]), int(m[2]), int(m[3]), weekday
    if m := re.fullmatch(r"([〇一二三四五六七八九]{4})年([一二三四五六七八九十]+)月([一二三四五六七八九十]+)日", text):
        return int("".join(str(ZH_VALUES[c]) for c in m[1])), parse_zh_number(m[2]), parse_zh_number(m[3]), None
    if m := re.fullmatch(r"(\d{4})\.(\d{2})\.(\d{2})", text):
        return int(m[1]), int(m[2]), int(m[3]), None
    if m := re.fullmatch(r"(\d{2})[/.](\d{2})[/.](\d{4})", text):  # numerals are always day first
        return int(m[3]), int(m[2]), int(m[1]), None
    words = re.findall(r"[A-Za-z]+|\d+", text)
    months = [EN_MONTHS[w[:3].lower()] for w in words if w[:3].lower() in EN_MONTHS and len(w) >= 3]
    weekdays = [EN_WEEKDAYS[w[:3].lower()] for w in words if w[:3].lower() in EN_WEEKDAYS]
    numbers = [w for w in words if w.isdigit()]
    year = [int(w) for w in numbers if len(w) == 4]
    day = [int(w) for w in numbers if len(w) <= 2]
    assert len(months) == len(year) == len(day) == 1 and len(weekdays) <= 1, text
    return year[0], months[0], day[0], weekdays[0] if weekdays else None


@pytest.mark.parametrize("fmt", DATE_FORMATS)
def test_an_independent_parser_recovers_the_target(fmt):
    for src, tgt in date_task(200, seed=7, formats=[fmt]):
        year, month, day, weekday = parse_date(join_char_tokens(src))
        assert join_char_tokens(tgt) == f"{year:04d}-{month:02d}-{day:02d}"
        assert date(1950, 1, 1) <= date(year, month, day) <= date(2050, 12, 31)
        if weekday is not None:
            assert weekday == zeller_weekday(year, month, day), src


def test_date_task_mixes_formats_and_tokenises_characters():
    pairs = date_task(500, seed=0)
    assert all(len(tok) == 1 for src, tgt in pairs for tok in src + tgt)
    assert not any(" " in src for src, _ in pairs)  # spaces are SPACE_TOKEN
    assert {len(tgt) for _, tgt in pairs} == {10}
    assert any("年" in src for src, _ in pairs) and any("/" in src for src, _ in pairs)
    narrow = date_task(100, seed=0, start=date(2000, 2, 27), end=date(2000, 3, 1))
    assert {join_char_tokens(t) for _, t in narrow} == {"2000-02-27", "2000-02-28", "2000-02-29", "2000-03-01"}


def test_date_bad_arguments():
    with pytest.raises(ValueError, match="unknown date format 'mm/dd/yyyy'"):
        date_task(5, formats=["mm/dd/yyyy"])
    with pytest.raises(ValueError, match="unknown date format"):
        format_date(date(2026, 11, 30), "%G-%m-%d")
    with pytest.raises(ValueError, match="must not be after end"):
        date_task(5, start=date(2001, 1, 1), end=date(2000, 1, 1))
    with pytest.raises(ValueError, match="at least one format"):
        date_task(5, formats=[])


# ----------------------------------------------------------------------------------------------
# Translation


def test_translation_examples_by_hand():
    grammar = translation_task(translation_grammar_size(), seed=0)
    pairs = {" ".join(en): " ".join(zh) for en, zh in grammar}
    assert pairs["i am very big ."] == "我 很 大 。"
    assert pairs["are you very big ?"] == "你 很 大 吗 ？"
    assert pairs["you are big ."] == "你 很 大 。"  # 很 added when English has no adverb
    assert pairs["he is not busy ."] == "他 不 忙 。"
    assert pairs["we are busy today ."] == "我们 今天 很 忙 。"  # time moves after the subject
    assert pairs["they eat rice at home ."] == "他们 在 家 吃 饭 。"  # place moves before the verb
    assert pairs["do you eat rice at school ?"] == "你 在 学校 吃 饭 吗 ？"
    assert pairs["she drinks tea ."] == "她 喝 茶 。"
    assert pairs["he does not eat rice at home today ."] == "他 今天 不 在 家 吃 饭 。"
    assert pairs["am i tired now ?"] == "我 现在 很 累 吗 ？"


def test_translation_pairs_are_unique_up_to_the_grammar_size():
    size = translation_grammar_size()
    assert size == 4440
    everything = translation_task(size, seed=3)
    assert len({(tuple(en), tuple(zh)) for en, zh in everything}) == size
    assert len({tuple(en) for en, _ in everything}) == size  # one translation per English sentence
    more = translation_task(size + 100, seed=3)  # beyond the grammar: all of it, then repeats
    assert len(more) == size + 100
    assert {tuple(en) for en, _ in more} == {tuple(en) for en, _ in everything}


def test_translation_properties():
    for en, zh in translation_task(1500, seed=5):
        assert all(w == w.lower() and w for w in en)
        if en[-1] == "?":
            assert zh[-2:] == ["吗", "？"], (en, zh)
        else:
            assert en[-1] == "." and zh[-1] == "。" and "吗" not in zh
        times = {"today": "今天", "tomorrow": "明天", "now": "现在", "tonight": "今晚"}
        for word, zh_word in times.items():
            if word in en:  # English puts time last, Chinese right after the subject
                assert en[-2] == word and zh[1] == zh_word
        if "at" in en or "in" in en:  # place phrase → 在 + place, before the verb and after any 不
            assert "在" in zh and zh.index("在") < len(zh) - 3
        assert ("不" in zh) == ("not" in en)


# ----------------------------------------------------------------------------------------------
# Right context


def test_right_context_examples_by_hand():
    examples = {" ".join(tokens): tags for tokens, tags in right_context_task(3000, seed=0)}
    assert examples["i like apple because it is tasty"] == ["O", "O", "FRUIT", "O", "O", "O", "O"]
    assert examples["i like apple because it is more stable than android"] == ["O", "O", "COMPANY"] + ["O"] * 7
    assert examples["everyone knows python because it has clean syntax"][2] == "LANGUAGE"
    assert examples["we read about python because it can swallow a rat"][3] == "SNAKE"


def test_right_context_tag_is_decided_by_the_words_after_it():
    examples = right_context_task(3000, seed=1)
    by_right, by_left = defaultdict(set), defaultdict(Counter)
    for tokens, tags in examples:
        positions = [i for i, tag in enumerate(tags) if tag != "O"]
        assert len(positions) == 1 and len(tokens) == len(tags)
        i = positions[0]
        word, tag = tokens[i], tags[i]
        assert tag in AMBIGUOUS_WORDS[word]
        by_right[(word, tuple(tokens[i + 1 :]))].add(tag)
        by_left[tuple(tokens[: i + 1])][tag] += 1
    assert all(len(tags) == 1 for tags in by_right.values())  # the right context fixes the tag
    # Everything up to and including the word says nothing: each prefix comes with both senses, and
    # the best guess from the prefix alone (its majority sense) is right about half the time.
    assert len(by_left) == len(LEFT_CONTEXTS) * len(AMBIGUOUS_WORDS)
    assert all(len(counts) == 2 for counts in by_left.values())
    best_left_to_right = sum(max(counts.values()) for counts in by_left.values()) / len(examples)
    assert 0.5 <= best_left_to_right < 0.6


def test_right_context_senses_are_balanced_and_cues_unambiguous():
    tags = Counter((tokens[i], tag) for tokens, t in right_context_task(4000, seed=2) for i, tag in enumerate(t))
    for word, senses in AMBIGUOUS_WORDS.items():
        first, second = (tags[(word, sense)] for sense in senses)
        assert 0.4 < first / (first + second) < 0.6, word
    cues = [cue for senses in AMBIGUOUS_WORDS.values() for cue_list in senses.values() for cue in cue_list]
    assert len(cues) == len(set(cues))
    context_words = {w for text in cues + LEFT_CONTEXTS for w in text.split()}
    assert not context_words & set(AMBIGUOUS_WORDS)  # no ambiguous word hides in a context


# ----------------------------------------------------------------------------------------------
# Summarisation and the pointer-generator's extended vocabulary


def test_summarisation_is_deterministic_and_within_its_lengths():
    random.seed(7)
    python_state, torch_state = random.getstate(), torch.get_rng_state()
    pairs = summarisation_task(300, seed=1)
    assert random.getstate() == python_state and torch.equal(torch.get_rng_state(), torch_state)
    assert summarisation_task(300, seed=1) == pairs
    assert summarisation_task(300, seed=2) != pairs
    assert len(pairs) == 300
    for src, tgt in pairs:
        assert all(isinstance(tok, str) and tok == tok.lower() and " " not in tok for tok in src + tgt)
        assert 15 <= len(src) <= 35 and 5 <= len(tgt) <= 10, (src, tgt)
        assert 2 <= src.count(".") <= 3 and tgt.count(".") == 1 and tgt[-1] == "."
    with pytest.raises(ValueError, match="n \\(the number of examples\\) must be at least 1, got 0"):
        summarisation_task(0)


def test_summaries_copy_the_name_and_place_from_their_story():
    pairs = summarisation_task(500, seed=3)
    common = Counter(tok for src, tgt in pairs for tok in set(src + tgt))
    for src, tgt in pairs:
        first, last = tgt[:2]  # a summary starts with the full name
        i = src.index(first)
        assert src[i + 1] == last, (src, tgt)
        if "in" in tgt:  # "... in <place> ."
            assert tgt[-3] == "in" and tgt[-2] in src
        # every other summary word is a template word, found in many stories
        assert all(common[tok] > 20 for tok in tgt[2:] if tok != tgt[-2] or "in" not in tgt), tgt
    assert sum("in" in tgt for _, tgt in pairs) > 0.6 * len(pairs)  # the place is often there
    # the last name (a word of one story only) appears twice in many stories
    assert sum(src.count(tgt[1]) == 2 for src, tgt in pairs) > 0.2 * len(pairs)


def test_summary_names_are_mostly_out_of_vocabulary():
    pairs = summarisation_task(1000, seed=0)
    vocab = build_shared_vocab(pairs, min_freq=2)
    names = [tok for _, tgt in pairs for tok in tgt[:2]]
    oov_rate = sum(tok not in vocab for tok in names) / len(names)
    assert oov_rate > 0.9  # measured 0.998 for seeds 0-4
    # ... yet copying can write every summary: no target word is unk over the extended vocabulary
    for src, tgt in pairs:
        _, oovs = extended_source_ids(src, vocab)
        assert UNK_ID not in extended_target_ids(tgt, vocab, oovs), (src, tgt)


def summary_sentences(tgt: list[str]) -> list[tuple[str, str, str, str | None]]:
    """``(first, last, action, place or None)`` of each sentence of a multi-sentence summary."""
    found = re.findall(r"(\S+) (\S+) ((?:(?! in | \.).)+?)(?: in (\S+))? \.(?: |$)", " ".join(tgt))
    assert " ".join(" ".join(filter(None, s[:3])) + (f" in {s[3]}" if s[3] else "") + " ." for s in found) == " ".join(
        tgt
    ), tgt  # the sentences parsed are the whole summary
    return [(first, last, action, place or None) for first, last, action, place in found]


def test_multi_sentence_summarisation_is_deterministic_and_within_its_sizes():
    random.seed(7)
    python_state, torch_state = random.getstate(), torch.get_rng_state()
    pairs = multi_sentence_summarisation_task(300, seed=1)
    assert random.getstate() == python_state and torch.equal(torch.get_rng_state(), torch_state)
    assert multi_sentence_summarisation_task(300, seed=1) == pairs
    assert multi_sentence_summarisation_task(300, seed=2) != pairs
    assert len(pairs) == 300
    counts = Counter(tgt.count(".") for _, tgt in pairs)
    assert set(counts) == {2, 3} and min(counts.values()) > 100  # two or three items, both often
    for src, tgt in pairs:
        assert all(isinstance(tok, str) and tok == tok.lower() and " " not in tok for tok in src + tgt)
        assert tgt.count(".") <= src.count(".") and tgt[-1] == "." and src[-1] == "."
    assert {tgt.count(".") for _, tgt in multi_sentence_summarisation_task(200, seed=0, min_items=4, max_items=4)} == {
        4
    }
    with pytest.raises(ValueError, match="n \\(the number of examples\\) must be at least 1, got 0"):
        multi_sentence_summarisation_task(0)
    with pytest.raises(ValueError, match="max_items must lie between min_items = 3 and 8, got 2"):
        multi_sentence_summarisation_task(5, min_items=3, max_items=2)


def test_multi_sentence_summaries_follow_their_story_and_repeat_no_phrase():
    pairs = multi_sentence_summarisation_task(500, seed=3)
    for src, tgt in pairs:
        sentences = summary_sentences(tgt)
        assert len(sentences) == tgt.count(".")
        # one item per sentence, in the story's order: each full name appears in the story, later and later
        starts = [
            next(i for i in range(len(src) - 1) if src[i : i + 2] == [first, last]) for first, last, _, _ in sentences
        ]
        assert starts == sorted(starts), (src, tgt)
        for _, _, action, place in sentences:
            assert " ".join(src).count(action) == 1, (src, tgt)  # each action once in the story...
            assert place is None or place in src
        assert len({action for _, _, action, _ in sentences}) == len(sentences)  # ...and different ones
        assert len({(first, last) for first, last, _, _ in sentences}) == len(sentences)
        # the property chapter 6 measures repetition against: no three-word phrase occurs twice
        trigrams = [tuple(tgt[i : i + 3]) for i in range(len(tgt) - 2)]
        assert len(set(trigrams)) == len(trigrams), tgt
    assert sum(place is not None for _, tgt in pairs for *_, place in summary_sentences(tgt)) > 0.6 * sum(
        tgt.count(".") for _, tgt in pairs
    )  # the place is often there
    vocab = build_shared_vocab(pairs, min_freq=2)
    names = [word for _, tgt in pairs for first, last, _, _ in summary_sentences(tgt) for word in (first, last)]
    assert sum(word not in vocab for word in names) / len(names) > 0.9  # only copying can write them
    for src, tgt in pairs:
        _, oovs = extended_source_ids(src, vocab)
        assert UNK_ID not in extended_target_ids(tgt, vocab, oovs), (src, tgt)


def test_build_shared_vocab_counts_pairs_not_tokens():
    pairs = [(["kelleth", "kelleth", "said", "."], ["kelleth", "."]), (["said", "."], ["."])]
    vocab = build_shared_vocab(pairs, min_freq=2)
    assert vocab.tokens == ["<pad>", "<bos>", "<eos>", "<unk>", ".", "said"]
    assert "kelleth" in Vocab.build([src + tgt for src, tgt in pairs], min_freq=2)  # what token counts give


def test_extended_ids_by_hand():
    vocab = Vocab(["said", ".", "in"])  # said = 4, . = 5, in = 6; len(vocab) = 7
    ids, oovs = extended_source_ids(["kelleth", "said", "zorvan", "kelleth", "in", "dunmere", "."], vocab)
    assert oovs == ["kelleth", "zorvan", "dunmere"]
    assert ids == [7, 4, 8, 7, 6, 9, 5]  # kelleth twice: the same id both times
    assert extended_target_ids(["zorvan", "kelleth", "in", "paris", "."], vocab, oovs) == [8, 7, 6, UNK_ID, 5]
    assert extended_source_ids(["said", "."], vocab) == ([4, 5], [])
    assert decode_extended(ids, vocab, oovs) == ["kelleth", "said", "zorvan", "kelleth", "in", "dunmere", "."]
    with pytest.raises(ValueError, match="expects a list of tokens"):
        extended_source_ids("kelleth said", vocab)


def test_decode_extended_round_trip_and_special_tokens():
    pairs = summarisation_task(50, seed=5)
    vocab = build_shared_vocab(pairs, min_freq=2)
    for src, tgt in pairs:
        ids, oovs = extended_source_ids(src, vocab)
        assert decode_extended(ids, vocab, oovs) == src
        assert decode_extended(torch.tensor(extended_target_ids(tgt, vocab, oovs)), vocab, oovs) == tgt
    vocab = Vocab(["a"])  # a = 4; len(vocab) = 5
    ids = [BOS_ID, 5, 4, EOS_ID, 6, PAD_ID]
    assert decode_extended(ids, vocab, ["x", "y"]) == ["x", "a"]
    assert decode_extended(ids, vocab, ["x", "y"], strip_special=False) == ["<bos>", "x", "a", "<eos>", "y", "<pad>"]
    with pytest.raises(ValueError, match="id 7 is outside the extended vocabulary \\[0, 7\\)"):
        decode_extended([7], vocab, ["x", "y"])
    with pytest.raises(ValueError, match="1-D"):
        decode_extended(torch.zeros(2, 2, dtype=torch.long), vocab, [])


def test_pointer_batch_by_hand_has_per_example_oovs():
    vocab = Vocab(["said", "."])  # said = 4, . = 5; len(vocab) = 6
    pairs = [
        (["kelleth", "said", "kelleth", "."], ["kelleth", "said", "."]),
        (["zorvan", "vel", "said", "."], ["vel", "zorvan", "mira", "."]),  # mira is in neither: unk
        (["said", "."], ["said"]),
    ]
    batch = make_pointer_batch(pairs, vocab)
    assert isinstance(batch, PointerBatch) and len(batch) == 3
    assert batch.oovs == [["kelleth"], ["zorvan", "vel"], []] and batch.n_oov == 2
    # id 6 is kelleth in the first example and zorvan in the second
    assert batch.src.tolist() == [[6, 4, 6, 5], [6, 7, 4, 5], [4, 5, 0, 0]]
    assert batch.src_lengths.tolist() == [4, 4, 2]
    assert batch.src_mask.tolist() == [[True] * 4, [True] * 4, [True, True, False, False]]
    assert batch.tgt_in.tolist() == [[BOS_ID, 6, 4, 5, 0], [BOS_ID, 7, 6, UNK_ID, 5], [BOS_ID, 4, 0, 0, 0]]
    assert batch.tgt_out.tolist() == [[6, 4, 5, EOS_ID, 0], [7, 6, UNK_ID, 5, EOS_ID], [4, EOS_ID, 0, 0, 0]]
    assert batch.tgt_mask.sum(1).tolist() == [4, 5, 2]
    assert [decode_extended(row, vocab, oovs) for row, oovs in zip(batch.tgt_out, batch.oovs)] == [
        ["kelleth", "said", "."],
        ["vel", "zorvan", "<unk>", "."],
        ["said"],
    ]
    moved = batch.to("meta")
    assert isinstance(moved, PointerBatch) and moved.oovs == batch.oovs and moved.n_oov == 2
    assert all(getattr(moved, name).device.type == "meta" for name in ("src", "src_lengths", "tgt_in", "tgt_mask"))
    assert batch.src.device.type == "cpu"
    with pytest.raises(ValueError, match="at least one pair"):
        make_pointer_batch([], vocab)
    with pytest.raises(ValueError, match="pair 0 has an empty source"):
        make_pointer_batch([([], ["a"])], vocab)


def test_iterate_pointer_batches_is_a_drop_in_for_iterate_batches():
    pairs = summarisation_task(23, seed=4)
    vocab = build_shared_vocab(pairs, min_freq=2)
    batches = list(iterate_pointer_batches(pairs, vocab, vocab, batch_size=5, seed=1))
    plain = list(iterate_batches(pairs, vocab, vocab, batch_size=5, seed=1))
    assert [len(b) for b in batches] == [5, 5, 5, 5, 3]
    for pointer, seq2seq in zip(batches, plain):
        V = len(vocab)
        # the same pairs in the same order; with extended ids >= V read as unk, the Seq2SeqBatch again
        assert torch.equal(pointer.src.masked_fill(pointer.src >= V, UNK_ID), seq2seq.src)
        assert torch.equal(pointer.tgt_out.masked_fill(pointer.tgt_out >= V, UNK_ID), seq2seq.tgt_out)
        assert torch.equal(pointer.tgt_mask, seq2seq.tgt_mask) and torch.equal(pointer.src_mask, seq2seq.src_mask)
        assert pointer.n_oov == max(len(o) for o in pointer.oovs) and int(pointer.src.max()) < V + pointer.n_oov
    seen = [tuple(decode_extended(row, vocab, oovs)) for b in batches for row, oovs in zip(b.src, b.oovs)]
    assert Counter(seen) == Counter(tuple(src) for src, _ in pairs)
    with pytest.raises(ValueError, match="must be the same Vocab object"):
        next(iterate_pointer_batches(pairs, vocab, build_shared_vocab(pairs, min_freq=2), batch_size=5))
    with pytest.raises(ValueError, match="batch_size must be at least 1, got 0"):
        next(iterate_pointer_batches(pairs, vocab, vocab, batch_size=0))
