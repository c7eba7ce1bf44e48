"""Sequence reversal (and copying): the task on which the bottleneck shows (chapters 3 and 4)."""

import random

from seqlab.core.checks import check_at_least_one


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
    check_at_least_one("n (the number of examples)", n)
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
