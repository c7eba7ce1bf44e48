"""Right-context tagging: an ambiguous word whose sense only the words after it decide (chapter 2)."""

import random

from seqlab.core.checks import check_at_least_one

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
    check_at_least_one("n (the number of examples)", n)
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
