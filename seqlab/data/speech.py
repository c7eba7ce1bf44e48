"""Speech-like recognition: generated "spectrograms" of spelled words (chapter 7).

Each character is a burst of its own frequency pattern (a few bins of the spectrum light up), held for
a random number of frames with a random loudness, with a short silence between characters and noise
everywhere. A source is many frames per character: a recogniser must find where each character is.
"""

import random

import torch

from seqlab.core.checks import check_at_least_one

SPEECH_ALPHABET = "abcdefghij"


def character_patterns(alphabet: str = SPEECH_ALPHABET, n_bins: int = 16, bins_per_char: int = 3) -> dict:
    """Each character's frequency pattern: ``{char: (n_bins,) float}`` with ``bins_per_char`` ones.

    Fixed for the alphabet and sizes (drawn with seed 0): the same character always sounds the same.
    """
    rng = random.Random(0)
    patterns, seen = {}, set()
    for char in alphabet:
        while True:
            bins = tuple(sorted(rng.sample(range(n_bins), bins_per_char)))
            if bins not in seen:  # no two characters share a pattern
                break
        seen.add(bins)
        pattern = torch.zeros(n_bins)
        pattern[list(bins)] = 1.0
        patterns[char] = pattern
    return patterns


def speech_task(
    n: int,
    min_chars: int = 3,
    max_chars: int = 6,
    min_frames: int = 2,
    max_frames: int = 5,
    max_silence: int = 2,
    n_bins: int = 16,
    noise: float = 0.3,
    alphabet: str = SPEECH_ALPHABET,
    seed: int = 0,
) -> list[tuple]:
    """``n`` (frames, characters, spans) triples.

    A word of ``min_chars`` to ``max_chars`` random characters is "spoken": each character is its
    pattern (:func:`character_patterns`) times a loudness in [0.7, 1.3], for ``min_frames`` to
    ``max_frames`` frames; 1 to ``max_silence`` silent frames come before each character and after the
    last one (so a repeated character is two bursts, never one long one); Gaussian noise of std
    ``noise`` lies on every frame.

    Returns:
        ``(frames (S, n_bins) float, characters (list of str), spans)``, ``spans[i] = (start, end)``
        the frames ``start .. end - 1`` of character ``i``.

    Example::

        >>> frames, chars, spans = speech_task(1)[0]
        >>> frames.shape[1], len(chars) == len(spans), spans[-1][1] < frames.shape[0]
        (16, True, True)

    Taught in chapter 7.
    """
    check_at_least_one("n (the number of examples)", n)
    if not 1 <= min_chars <= max_chars or not 1 <= min_frames <= max_frames or max_silence < 1:
        raise ValueError(
            "need 1 <= min_chars <= max_chars, 1 <= min_frames <= max_frames and max_silence >= 1, got "
            f"{min_chars}, {max_chars}, {min_frames}, {max_frames}, {max_silence}"
        )
    rng = random.Random(seed)
    generator = torch.Generator().manual_seed(seed)
    patterns = character_patterns(alphabet, n_bins)
    examples = []
    for _ in range(n):
        chars = rng.choices(alphabet, k=rng.randint(min_chars, max_chars))
        rows, spans, at = [], [], 0
        for char in chars:
            silence = rng.randint(1, max_silence)
            duration = rng.randint(min_frames, max_frames)
            loudness = rng.uniform(0.7, 1.3)
            rows += [torch.zeros(n_bins)] * silence + [loudness * patterns[char]] * duration
            spans.append((at + silence, at + silence + duration))
            at += silence + duration
        rows += [torch.zeros(n_bins)] * rng.randint(1, max_silence)
        frames = torch.stack(rows)  # (S, n_bins)
        frames = frames + noise * torch.randn(frames.shape, generator=generator)
        examples.append((frames, chars, spans))
    return examples
