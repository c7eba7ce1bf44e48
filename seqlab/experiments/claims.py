"""The words a chapter uses for a result, each mapped once to a tolerance, and the checks that guard them.

A chapter's sentence is a claim, and the assertion under it must fail when the claim is false. So the
words are defined here, once, and every chapter guards a sentence with the check of its words:

============================  ==========================================  =============================
the chapter says              means                                       guarded by
============================  ==========================================  =============================
"perfectly", "every"          100 %, nothing missed                       ``assert_perfect``
"almost" (perfectly, all)     within ``ALMOST`` (2 points) of the target  ``assert_almost``
"near chance"                 within ``NEAR_CHANCE`` (5 points) of chance ``assert_near_chance``
"well above chance"           more than ``NEAR_CHANCE`` above chance      ``assert_above_chance``
"A beats B" (over seeds)      higher on every seed, paired                ``assert_beats``
"the same size"               parameter counts within ``SIZE_MATCH``      ``assert_size_matched``
"start identical"             ``torch.equal`` on every shared parameter   ``assert_same_start``
============================  ==========================================  =============================

Comparisons print what they rest on: ``seed_summary`` gives the mean, the spread and every seed;
``paired_gap`` gives the mean difference of two models scored on the same items, with the standard
error of the *paired* differences (not of two independent samples). ``tests/test_claims.py`` checks
that a chapter using one of these words calls the check that guards it.
"""

import math
from collections.abc import Sequence

import torch
from torch import nn

ALMOST = 0.02  # "almost": within 2 points (accuracies as fractions in [0, 1])
NEAR_CHANCE = 0.05  # "near chance": within 5 points of the chance level
SIZE_MATCH = 0.10  # "the same size": parameter counts differ by at most 10 %
MIN_SEEDS = 3  # a comparison runs at least three seeds

# The phrase a chapter writes -> the check that must guard it somewhere in that chapter's code.
WORDS = {
    "near chance": "assert_near_chance",
    "well above chance": "assert_above_chance",
    "almost perfectly": "assert_almost",
    "perfectly": "assert_perfect",
    "start identical": "assert_same_start",
    "size-matched": "assert_size_matched",
}


def _fraction(value: float, what: str) -> float:
    value = float(value)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{what}: expected an accuracy as a fraction in [0, 1], got {value}")
    return value


def assert_perfect(accuracy: float, what: str) -> None:
    """'perfectly': exactly 100 %."""
    if _fraction(accuracy, what) != 1.0:
        raise AssertionError(f"{what}: the text says perfectly (100 %), the run gives {accuracy:.1%}")


def assert_almost(accuracy: float, what: str, target: float = 1.0) -> None:
    """'almost' (perfectly, all): within ``ALMOST`` of ``target``, and not above it."""
    if not target - ALMOST <= _fraction(accuracy, what) <= target:
        raise AssertionError(
            f"{what}: the text says almost {target:.0%} (within {ALMOST:.0%}), the run gives {accuracy:.1%}"
        )


def assert_near_chance(accuracy: float, chance: float, what: str) -> None:
    """'near chance': within ``NEAR_CHANCE`` of the chance level, on either side."""
    if abs(_fraction(accuracy, what) - chance) > NEAR_CHANCE:
        raise AssertionError(
            f"{what}: the text says near chance ({chance:.0%} ± {NEAR_CHANCE:.0%}), the run gives {accuracy:.1%}"
        )


def assert_above_chance(accuracy: float, chance: float, what: str) -> None:
    """'well above chance': beyond the near-chance band."""
    if _fraction(accuracy, what) <= chance + NEAR_CHANCE:
        raise AssertionError(
            f"{what}: the text says well above chance ({chance:.0%} + {NEAR_CHANCE:.0%}), "
            f"the run gives {accuracy:.1%}"
        )


def _seeds(values: Sequence[float], what: str) -> list[float]:
    values = [float(v) for v in values]
    if len(values) < MIN_SEEDS:
        raise ValueError(f"{what}: a comparison needs at least {MIN_SEEDS} seeds, got {len(values)}")
    return values


def seed_summary(values: Sequence[float], what: str = "result", unit: str = "seeds") -> str:
    """``"0.912 ± 0.031 over 3 seeds (0.880, 0.915, 0.941)"``: mean, sample standard deviation, every seed.

    ``unit`` names what the values were repeated over, where that is not one seed each: with
    ``unit="(data seed, model seed) pairs"`` the line reads "over 6 (data seed, model seed) pairs".
    """
    values = _seeds(values, what)
    mean = sum(values) / len(values)
    spread = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))
    each = ", ".join(f"{v:.3f}" for v in values)
    return f"{mean:.3f} ± {spread:.3f} over {len(values)} {unit} ({each})"


def paired_gap(scores_a: torch.Tensor, scores_b: torch.Tensor) -> tuple[float, float]:
    """Mean of ``a - b`` over items both models were scored on, and the standard error of that mean.

    The items are shared, so the error is that of the per-item differences: two models that fail on
    the same hard items have a small paired error even where each one's own spread is large.
    """
    a, b = torch.as_tensor(scores_a, dtype=torch.float64), torch.as_tensor(scores_b, dtype=torch.float64)
    if a.shape != b.shape or a.dim() != 1 or a.numel() < 2:
        raise ValueError(f"paired_gap: expected two 1-d score vectors of one length ≥ 2, got {tuple(a.shape)} "
                         f"and {tuple(b.shape)}")
    diff = a - b
    return diff.mean().item(), (diff.std(unbiased=True) / math.sqrt(diff.numel())).item()


def assert_beats(scores_a: Sequence[float], scores_b: Sequence[float], what: str) -> None:
    """'A beats B': over the same seeds (paired), A is higher on every one of at least three."""
    a, b = _seeds(scores_a, what), _seeds(scores_b, what)
    if len(a) != len(b):
        raise ValueError(f"{what}: paired seeds expected, got {len(a)} and {len(b)} results")
    losses = [i for i, (x, y) in enumerate(zip(a, b)) if x <= y]
    if losses:
        raise AssertionError(f"{what}: the text says it is better on every seed; it is not on seed(s) {losses}")


def parameter_count(model: nn.Module) -> int:
    """The number of trainable parameters."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def assert_size_matched(model_a: nn.Module, model_b: nn.Module, what: str) -> None:
    """'the same size': parameter counts within ``SIZE_MATCH`` of the larger."""
    n_a, n_b = parameter_count(model_a), parameter_count(model_b)
    if abs(n_a - n_b) > SIZE_MATCH * max(n_a, n_b):
        raise AssertionError(f"{what}: {n_a:,} and {n_b:,} parameters differ by more than {SIZE_MATCH:.0%}")


def assert_same_start(model_a: nn.Module, model_b: nn.Module, what: str) -> list[str]:
    """'start identical': every parameter the two models share by name is equal (``torch.equal``).

    Returns the shared names, so the page can print how many it compared.
    """
    params_a, params_b = dict(model_a.named_parameters()), dict(model_b.named_parameters())
    shared = [name for name in params_a if name in params_b and params_a[name].shape == params_b[name].shape]
    if not shared:
        raise ValueError(f"{what}: the two models share no parameter")
    differ = [name for name in shared if not torch.equal(params_a[name], params_b[name])]
    if differ:
        raise AssertionError(f"{what}: {len(differ)} of {len(shared)} shared parameters differ: {differ[:5]}")
    return shared
