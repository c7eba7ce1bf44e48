"""Premise/hypothesis pairs labelled entailment, contradiction or neutral by construction (chapter 7).

A small world of counted, coloured things doing something ("two red dogs run while three buses wait").
Hypotheses keep, generalise (a hypernym: dogs → animals; a colour left out), change (another colour,
another number, a negation) or add a detail the premise does not give (a specific noun where the
premise has only a hypernym, a colour where it has none). The label follows from which.
"""

import random

from seqlab.core.checks import check_at_least_one

NUMBERS = ("two", "three", "four", "five")
COLOURS = ("red", "blue", "green", "white", "black")
# hypernym → its nouns, and the verbs that go with them
HYPERNYMS = {
    "animals": (("dogs", "cats", "horses"), ("run", "sleep", "play")),
    "people": (("men", "women", "children"), ("walk", "sing", "wait")),
    "vehicles": (("cars", "buses", "bikes"), ("stop", "wait", "pass")),
}
ENTAILMENT_LABELS = ("entailment", "contradiction", "neutral")


def _phrase(number: str, colour: str | None, noun: str) -> list[str]:
    return [number] + ([colour] if colour else []) + [noun]


def entailment_task(n: int, n_clauses: int = 2, seed: int = 0) -> list[tuple[list[str], list[str], str]]:
    """Premise/hypothesis pairs, the three labels equally likely.

    The premise is ``n_clauses`` clauses joined by ``while`` (two by default, ``number [colour] noun
    verb while number [colour] noun verb``; chapter 7 uses three), about things of as many different
    hypernyms (so at most three); in each clause the colour is left out a third of the time, and the
    noun replaced by its hypernym another third. The hypothesis, ``number [colour] noun [do not]
    verb``, is about one of the clauses, drawn at random:

    * **entailment**: the same number and verb, the same colour or none, the same noun or its hypernym;
    * **contradiction**: as an entailment, then exactly one change: another colour (when the clause
      names one), another number, or ``do not`` before the verb;
    * **neutral**: as an entailment, but the hypothesis is more specific than the clause: it names a
      noun where the clause has only the hypernym, or a colour where the clause has none.

    Example::

        >>> premise, hypothesis, label = entailment_task(1)[0]
        >>> label in ENTAILMENT_LABELS, premise[0] in NUMBERS, "while" in premise
        (True, True, True)

    Taught in chapter 7.
    """
    check_at_least_one("n (the number of examples)", n)
    rng = random.Random(seed)
    examples = []
    for _ in range(n):
        label = rng.choice(ENTAILMENT_LABELS)
        clauses = []
        for hypernym in rng.sample(list(HYPERNYMS), n_clauses):
            nouns, verbs = HYPERNYMS[hypernym]
            # what the clause leaves unsaid: a colour, or the noun (only its hypernym is given)
            gap = rng.choice(("colour", "noun", None))
            clause = (rng.choice(NUMBERS), rng.choice(COLOURS), rng.choice(nouns), hypernym, rng.choice(verbs), gap)
            clauses.append(clause)
        about = rng.randrange(n_clauses)
        if label == "neutral" and clauses[about][5] is None:  # a neutral pair needs a gap to fill
            number, colour, noun, hypernym, verb, _ = clauses[about]
            clauses[about] = (number, colour, noun, hypernym, verb, rng.choice(("colour", "noun")))
        premise = []
        for number, colour, noun, hypernym, verb, gap in clauses:
            premise += (
                (["while"] if premise else [])
                + _phrase(number, None if gap == "colour" else colour, hypernym if gap == "noun" else noun)
                + [verb]
            )
        number, colour, noun, hypernym, verb, gap = clauses[about]
        if label == "neutral":
            # the gap is filled (more specific than the clause); the rest is kept or generalised
            h_colour = colour if gap == "colour" else rng.choice((colour, None))
            h_noun = noun if gap == "noun" else rng.choice((noun, hypernym))
        else:
            h_colour = None if gap == "colour" or rng.random() < 0.3 else colour
            h_noun = hypernym if gap == "noun" or rng.random() < 0.4 else noun
        h_number, negated = number, False
        if label == "contradiction":
            change = rng.choice(("number", "negation") + (("colour",) if gap != "colour" else ()))
            if change == "colour":
                h_colour = rng.choice([c for c in COLOURS if c != colour])
            elif change == "number":
                h_number = rng.choice([m for m in NUMBERS if m != number])
            else:
                negated = True
        hypothesis = _phrase(h_number, h_colour, h_noun) + (["do", "not"] if negated else []) + [verb]
        examples.append((premise, hypothesis, label))
    return examples
