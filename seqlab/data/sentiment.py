"""Sentiment sentences whose label one or two decisive words decide, anywhere in the sentence (chapter 7).

The rest of each sentence is neutral filler ("the film that we saw on friday ..."), so a classifier
must find the few words that matter wherever they are: what attention pooling is for.
"""

import random

from seqlab.core.checks import check_at_least_one

POSITIVE_WORDS = ("great", "wonderful", "brilliant", "moving", "superb", "love")
NEGATIVE_WORDS = ("awful", "boring", "dull", "terrible", "clumsy", "hate")
NEGATION = "not"
# Neutral words only: no sentiment, no negation.
FILLER_WORDS = (
    "the film that we saw on friday with my sister was in a small cinema near the station and it "
    "had a long story about two old friends who travel to the sea by train every summer"
).split()


def sentiment_task(
    n: int, min_fillers: int = 10, max_fillers: int = 30, negation_rate: float = 0.3, seed: int = 0
) -> list[tuple[list[str], str, list[int]]]:
    """Sentences labelled ``"positive"`` or ``"negative"`` by one sentiment word, perhaps negated.

    Each sentence is a run of neutral filler words with a sentiment word (from :data:`POSITIVE_WORDS`
    or :data:`NEGATIVE_WORDS`) inserted at a uniform position, preceded by ``"not"`` with probability
    ``negation_rate``, which flips the label: ``"... was not great ..."`` is negative. Nothing else in
    the sentence carries sentiment, and the two labels are equally likely.

    Returns:
        ``(tokens, label, decisive)`` triples: ``decisive`` lists the positions of the words that decide
        the label (the sentiment word, and ``"not"`` before it when there is one).

    Example::

        >>> tokens, label, decisive = sentiment_task(1)[0]
        >>> label in ("positive", "negative"), tokens[decisive[-1]] in POSITIVE_WORDS + NEGATIVE_WORDS
        (True, True)

    Taught in chapter 7.
    """
    check_at_least_one("n (the number of examples)", n)
    if not 0 <= min_fillers <= max_fillers:
        raise ValueError(f"need 0 <= min_fillers <= max_fillers, got {min_fillers} and {max_fillers}")
    if not 0.0 <= negation_rate <= 1.0:
        raise ValueError(f"negation_rate must lie in [0, 1], got {negation_rate}")
    rng = random.Random(seed)
    examples = []
    for _ in range(n):
        label = rng.choice(("positive", "negative"))
        negated = rng.random() < negation_rate
        # the word's own polarity is the label's unless "not" flips it
        polarity_positive = (label == "positive") != negated
        phrase = [rng.choice(POSITIVE_WORDS if polarity_positive else NEGATIVE_WORDS)]
        if negated:
            phrase = [NEGATION] + phrase
        fillers = rng.choices(FILLER_WORDS, k=rng.randint(min_fillers, max_fillers))
        at = rng.randint(0, len(fillers))
        tokens = fillers[:at] + phrase + fillers[at:]
        examples.append((tokens, label, list(range(at, at + len(phrase)))))
    return examples
