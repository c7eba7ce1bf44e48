"""seqlab.plot: attention heatmaps check their shapes and draw Chinese labels without missing glyphs."""

import warnings
from datetime import date

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest
import torch

from seqlab import data
from seqlab.plot import plot_attention


def test_heatmap_checks_shapes():
    with pytest.raises(ValueError, match=r"expected shape \(2, 3\) for 2 output and 3 source tokens, got \(3, 3\)"):
        plot_attention(torch.eye(3), ["a", "b", "c"], ["x", "y"])


def test_every_chinese_character_of_the_tasks_has_a_glyph():
    chinese = sorted({c for _, tgt in data.translation_task(200) for c in "".join(tgt)})
    dates = [data.format_date(date(2026, 11, 30), fmt) for fmt in ("zh", "zh_weekday", "zh_numerals")]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib warns "Glyph ... missing from font(s)"
        ax = plot_attention(torch.rand(len(chinese), 2), ["a", "b"], chinese, title=" ".join(dates))
        ax.figure.canvas.draw()
    plt.close(ax.figure)
