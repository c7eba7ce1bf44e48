"""Templated summarisation: short news stories whose names no vocabulary holds (chapter 6)."""

import functools
import random

from seqlab.core.checks import check_at_least_one
from seqlab.data.dates import WEEKDAYS

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
    check_at_least_one("n (the number of examples)", n)
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


# Multi-sentence summarisation: a digest of several news items, one summary sentence per item
#
# A story strings together two or three items, each a lead (who did what, usually where and when) and
# often a detail, with a distractor now and then between them; the summary has one sentence per item,
# in the story's order:
#   "on monday , zorvan kelleth opened a bridge in dunmere . the bridge cost 40 million dollars .
#    prices at the market rose by 3 percent . mira tolk won the race in holmby on friday ."
#   → "zorvan kelleth opened a bridge in dunmere . mira tolk won the race in holmby ."
# The items of one story have different actions, people and places, so a reference summary repeats no
# three-word phrase: a summary that does repeat one has gone back to an item it already wrote.


def multi_sentence_summarisation_task(
    n: int, seed: int = 0, min_items: int = 2, max_items: int = 3
) -> list[tuple[list[str], list[str]]]:
    """News digests of several items and their multi-sentence summaries, one sentence per item.

    Each story has ``min_items`` to ``max_items`` items, each written as in :func:`summarisation_task`:
    a lead sentence (who did what, usually where and when) followed, most of the time, by a detail with
    a number; a distractor sentence sometimes stands between two items or at the end. The summary is
    each item's "who did what where" in the story's order::

        "zorvan kelleth opened a bridge in dunmere . mira tolk won the race in holmby ."

    The items of one story have different actions, people and places, so no three-word phrase occurs
    twice in a summary: a decoder that writes one twice has gone back to an item it already summarised,
    the repetition that coverage (chapter 6) is meant to cure. Names and places are made from random
    syllables, so with :func:`build_shared_vocab` and ``min_freq=2`` they are out of vocabulary.

    Example::

        >>> src, tgt = multi_sentence_summarisation_task(1)[0]
        >>> tgt.count(".") >= 2 and all(word in src for word in tgt[:2])
        True

    Taught in chapter 6.
    """
    check_at_least_one("n (the number of examples)", n)
    check_at_least_one("min_items", min_items)
    if max_items < min_items or max_items > len(_ACTIONS):
        raise ValueError(f"max_items must lie between min_items = {min_items} and {len(_ACTIONS)}, got {max_items}")
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        n_items = rng.randint(min_items, max_items)
        actions = rng.sample(list(_ACTIONS), n_items)  # different actions: no phrase of the summary repeats
        names, places = set(), set()
        sentences, summary = [], []
        for action in actions:
            while (name := _person_name(rng)) in names or name[0] == name[1]:
                pass
            names.add(name)
            while (place := _place_name(rng)) in places:
                pass
            places.add(place)
            first, last = name
            has_place = rng.random() < 0.8
            slots = {
                "first": first,
                "last": last,
                "action": action,
                "place": place,
                "day": rng.choice(_WEEKDAY_WORDS),
                "role": rng.choice(_ROLES),
                "number": str(rng.randint(2, 99)),
            }
            item = [rng.choice(_LEADS_WITH_PLACE if has_place else _LEADS_WITHOUT_PLACE)]
            if rng.random() < 0.7:
                item.append(rng.choice(_ACTIONS[action]))
            sentences += [sentence.format(**slots) for sentence in item]
            if rng.random() < 0.3:  # a distractor between two items, or after the last
                distractor = rng.choice(_DISTRACTORS)
                sentences.append(distractor.format(count=rng.randint(2, 99), other_place=_place_name(rng)))
            summary.append(f"{first} {last} {action}{' in ' + place if has_place else ''} .")
        pairs.append((" ".join(sentences).split(), " ".join(summary).split()))
    return pairs
