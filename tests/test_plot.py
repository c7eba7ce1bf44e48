"""seqlab.experiments.plot: attention heatmaps check their shapes and draw Chinese labels without missing glyphs."""

import warnings
from datetime import date

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest
import torch

from seqlab import data
from seqlab.experiments.plot import plot_attention


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


def test_heatmap_labels_colour_bar_and_scale_are_optional():
    weights = torch.tensor([[0.1, 0.3], [0.2, 0.2]])
    ax = plot_attention(weights, ["a", "b"], ["x", "y"])  # the defaults other chapters rely on
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("source", "output")
    assert len(ax.figure.axes) == 1 and ax.images[0].get_clim() == (0.0, 1.0)
    plt.close(ax.figure)
    ax = plot_attention(
        weights, ["a", "b"], ["x", "y"], xlabel="premise", ylabel="hypothesis", colorbar=True, vmax=None
    )
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("premise", "hypothesis")
    assert len(ax.figure.axes) == 2  # the colour bar's own axis
    assert ax.images[0].get_clim() == pytest.approx((0.0, 0.3))  # scaled to the largest weight
    plt.close(ax.figure)
