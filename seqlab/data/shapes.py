"""Small images of two coloured shapes on a grid, and a caption for each (chapter 7).

An image is a ``grid × grid`` board of ``cell × cell`` pixel cells; two shapes sit in two cells of
the same row or the same column, and the caption names them in reading order and says how they lie:
``red circle left of blue square``, ``green cross above red triangle``. Every image and caption is
drawn here, with noise.
"""

import random

import torch
from torch import Tensor

from seqlab.core.checks import check_at_least_one

SHAPE_COLOURS = {"red": (1.0, 0.1, 0.1), "green": (0.1, 0.8, 0.1), "blue": (0.2, 0.3, 1.0)}
SHAPES = ("square", "circle", "triangle", "cross")
RELATIONS = {"left": ("left", "of"), "above": ("above",)}


def shape_mask(shape: str, cell: int) -> Tensor:
    """A ``(cell, cell)`` bool stencil of ``shape``, one pixel of margin around it."""
    y, x = torch.meshgrid(torch.arange(cell), torch.arange(cell), indexing="ij")  # (cell, cell) each
    c, r = (cell - 1) / 2, cell / 2 - 1  # centre and radius
    inside = (y >= 1) & (y <= cell - 2) & (x >= 1) & (x <= cell - 2)
    if shape == "square":
        return inside
    if shape == "circle":
        return (y - c) ** 2 + (x - c) ** 2 <= r**2
    if shape == "triangle":  # apex up: the row from the top decides the half-width
        return inside & ((x - c).abs() <= (y - 1) / 2 + 0.5)
    if shape == "cross":
        return inside & (((x - c).abs() < 1) | ((y - c).abs() < 1))
    raise ValueError(f"shape must be one of {SHAPES}, got {shape!r}")


def shapes_task(n: int, grid: int = 3, cell: int = 8, noise: float = 0.1, seed: int = 0) -> tuple:
    """``n`` images of two shapes and their captions.

    The two shapes have different (colour, shape) pairs and sit in different cells of one row
    (``left of``) or one column (``above``); the caption names the first in reading order (left to
    right, top to bottom), the relation, then the second: ``["red", "circle", "left", "of", "blue",
    "square"]``: which shape comes first, and the relation, say where the two are. Pixels get
    Gaussian noise of std ``noise``.

    Returns:
        ``images (n, 3, grid*cell, grid*cell)`` float in RGB, and the ``n`` captions (token lists).

    Example::

        >>> images, captions = shapes_task(2)
        >>> images.shape, captions[0][2] in ("left", "above")
        (torch.Size([2, 3, 24, 24]), True)

    Taught in chapter 7.
    """
    check_at_least_one("n (the number of examples)", n)
    check_at_least_one("cell", cell)
    if grid < 2:
        raise ValueError(f"grid must be at least 2 (two shapes in two cells), got {grid}")
    rng = random.Random(seed)
    generator = torch.Generator().manual_seed(seed)
    stencils = {shape: shape_mask(shape, cell) for shape in SHAPES}
    images = torch.zeros(n, 3, grid * cell, grid * cell)  # (n, 3, H, W)
    captions = []
    kinds = [(colour, shape) for colour in SHAPE_COLOURS for shape in SHAPES]
    for i in range(n):
        first, second = rng.sample(kinds, 2)
        line, a, b = rng.randrange(grid), *rng.sample(range(grid), 2)  # a row or column, two places in it
        a, b = min(a, b), max(a, b)  # the first shape named is the first in reading order
        if rng.random() < 0.5:  # the same row: a, b are columns
            (r1, c1), (r2, c2), relation = (line, a), (line, b), "left"
        else:  # the same column: a, b are rows
            (r1, c1), (r2, c2), relation = (a, line), (b, line), "above"
        for (colour, shape), (row, col) in ((first, (r1, c1)), (second, (r2, c2))):
            rgb = torch.tensor(SHAPE_COLOURS[colour]).view(3, 1, 1)  # (3, 1, 1)
            patch = images[i, :, row * cell : (row + 1) * cell, col * cell : (col + 1) * cell]  # (3, cell, cell)
            patch[:] = torch.where(stencils[shape], rgb, patch)
        captions.append([*first, *RELATIONS[relation], *second])
    images += noise * torch.randn(images.shape, generator=generator)
    return images, captions
