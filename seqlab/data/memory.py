"""The long-lag memory task: remember the first token across a run of distractors (chapter 1).

A sequence starts with one of ``n_symbols`` signal tokens, followed by ``lag`` random distractor
tokens; the label is the signal. To answer, a recurrent network must carry one token across ``lag``
steps of noise, and the gradient that teaches it to do so must travel back the same distance.
"""

import torch


def memory_task(
    n: int, lag: int, n_symbols: int = 4, n_distractors: int = 4, generator: torch.Generator | None = None
) -> tuple:
    """Draw ``n`` examples of the long-lag memory task.

    Token ids ``0 .. n_symbols-1`` are signals, ``n_symbols .. n_symbols+n_distractors-1`` distractors.

    Args:
        n: number of examples.
        lag: distractors between the signal and the end of the sequence.
        n_symbols: number of signal tokens, hence of classes (chance accuracy is ``1 / n_symbols``).
        n_distractors: number of distinct distractor tokens.
        generator: a seeded ``torch.Generator`` for repeatable draws.

    Returns:
        ``tokens (n, lag + 1)`` long, and ``labels (n,)`` long: the first token of each row.

    Example::

        >>> tokens, labels = memory_task(2, lag=3, generator=torch.Generator().manual_seed(0))
        >>> tokens.shape, bool((tokens[:, 0] == labels).all())
        (torch.Size([2, 4]), True)

    Taught in chapter 1.
    """
    if lag < 0 or n < 1:
        raise ValueError(f"need n >= 1 and lag >= 0, got n={n}, lag={lag}")
    signal = torch.randint(0, n_symbols, (n,), generator=generator)  # (n,)
    distractors = torch.randint(n_symbols, n_symbols + n_distractors, (n, lag), generator=generator)  # (n, lag)
    return torch.cat([signal.unsqueeze(1), distractors], dim=1), signal  # (n, lag + 1), (n,)
