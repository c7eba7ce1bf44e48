"""Plots the chapters share: attention heatmaps (chapters 4 to 8)."""

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from matplotlib import font_manager

# Few machines have a Chinese font; seqlab ships the few glyphs its tasks use (see fonts/LICENSE).
_CJK_FONT = Path(__file__).resolve().parents[1] / "fonts" / "cjk-subset.ttf"
font_manager.fontManager.addfont(str(_CJK_FONT))
#: Font families for labels that may mix Latin and Chinese: DejaVu first, the Chinese subset as fallback.
LABEL_FONTS = ["DejaVu Sans", font_manager.FontProperties(fname=_CJK_FONT).get_name()]


def plot_attention(
    weights,
    src_tokens: list,
    out_tokens: list,
    ax=None,
    title: str | None = None,
    *,
    xlabel: str = "source",
    ylabel: str = "output",
    colorbar: bool = False,
    vmax: float | None = 1.0,
):
    """Draw an attention matrix: one row per output token (query), one column per source token (key).

    Args:
        weights: ``(T, S)`` array or tensor; row t is the attention while writing ``out_tokens[t]``.
        src_tokens: the S source tokens (column labels).
        out_tokens: the T output tokens (row labels).
        ax: a matplotlib axis to draw on (a new figure when None).
        title: the axis title.
        xlabel, ylabel: the axes' names, when the columns and rows are not a source and an output
            (chapter 7: the premise and the hypothesis).
        colorbar: draw a colour bar beside the axis, so a reader can read the weights off the shades.
        vmax: the weight drawn black (1.0: full attention); None scales the shades to the largest
            weight, for maps whose weights are all small.

    Returns:
        The axis. Darker is more weight; rows sum to 1.

    Taught in chapter 4.
    """
    weights = np.asarray(weights.detach().cpu() if hasattr(weights, "detach") else weights)
    if weights.shape != (len(out_tokens), len(src_tokens)):
        raise ValueError(
            f"weights: expected shape ({len(out_tokens)}, {len(src_tokens)}) for "
            f"{len(out_tokens)} output and {len(src_tokens)} source tokens, got {weights.shape}"
        )
    if ax is None:
        _, ax = plt.subplots(figsize=(0.45 * len(src_tokens) + 1.5, 0.4 * len(out_tokens) + 1))
    top = float(weights.max()) if vmax is None else vmax  # the weight drawn black
    image = ax.imshow(weights, cmap="Greys", vmin=0.0, vmax=top, aspect="auto")
    ax.set_xticks(range(len(src_tokens)), src_tokens, rotation=90, fontfamily=LABEL_FONTS)
    ax.set_yticks(range(len(out_tokens)), out_tokens, fontfamily=LABEL_FONTS)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if colorbar:
        ax.figure.colorbar(image, ax=ax, label="attention weight")
    if title:
        ax.set_title(title, fontfamily=LABEL_FONTS)
    return ax
