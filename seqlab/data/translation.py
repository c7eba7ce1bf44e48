"""English → Chinese phrase translation from a small grammar whose word order differs (chapters 3 and 4)."""

import functools
import itertools
import random

from seqlab.core.checks import check_at_least_one

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
    check_at_least_one("n (the number of examples)", n)
    grammar = _translation_pairs()
    rng = random.Random(seed)
    if n <= len(grammar):
        chosen = rng.sample(grammar, n)
    else:
        chosen = rng.sample(grammar, len(grammar)) + rng.choices(grammar, k=n - len(grammar))
    return [(list(src), list(tgt)) for src, tgt in chosen]
