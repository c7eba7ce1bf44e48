"""A small CNN that turns an image into a grid of region features: the memory a captioner attends over
(chapter 7; Xu et al., 2015, "Show, Attend and Tell").

Xu et al. take the 14 × 14 feature map of a pretrained CNN as 196 "annotation vectors", one per image
region, and let the caption decoder attend over them. Here a two-layer CNN, trained with the decoder,
maps a small image to a ``grid × grid`` map (a max over each region); each region's vector also gets
a learned embedding of its position, so that what a decoder reads from a region carries where the
region is (whether the decoder uses it is another matter: in chapter 7's run the attention captioner
writes the relation, "left of" or "above", no better than always writing the more frequent one on
most seeds, while a decoder reading all regions side by side gets it right far more often).

The summary, what a decoder without attention reads, is by default the mean of the regions. Averaging
adds the nine position vectors into one constant and does not change when contents trade regions, so
the mean keeps next to nothing of where anything was (only the convolution's zero padding at the
image's edge can leave a trace); the ``"flatten"`` summary keeps every region in its place (all of
them side by side, then one linear layer down to M), a baseline without attention that still knows
positions.
"""

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from seqlab.core.checks import check_shape


class RegionCNN(nn.Module):
    """Image → region features, their mask (all real) and their summary (by default their mean): a memory encoder for
    :class:`~seqlab.models.memory_seq2seq.MemorySeq2Seq`.

    Args:
        in_channels: the image's channels (3 for RGB).
        output_size: M, the size of each region's feature vector.
        grid: the regions per side (the feature map is max-pooled to ``grid × grid``).
        summary: ``"mean"`` (the mean of the regions) or ``"flatten"`` (the regions concatenated in
            row-major order, ``(B, grid²·M)``, then a linear layer to M; it adds ``grid²·M·M + M``
            parameters).

    Shape:
        - ``images (B, C, H, W)``, ``src_lengths`` ignored (None) → memory ``(B, grid², M)``, regions in
          row-major order; mask ``(B, grid²)`` all True; summary ``(B, M)``.

    Example::

        >>> memory, mask, summary = RegionCNN(output_size=16, grid=3)(torch.randn(2, 3, 24, 24), None)
        >>> memory.shape, summary.shape
        (torch.Size([2, 9, 16]), torch.Size([2, 16]))

    Taught in chapter 7.
    """

    def __init__(self, in_channels: int = 3, output_size: int = 32, grid: int = 3, summary: str = "mean"):
        super().__init__()
        if summary not in ("mean", "flatten"):
            raise ValueError(f"summary must be 'mean' or 'flatten', got {summary!r}")
        self.in_channels, self.output_size, self.grid = in_channels, output_size, grid
        self.conv1 = nn.Conv2d(in_channels, output_size, kernel_size=3, padding=1)  # edges and colours
        self.conv2 = nn.Conv2d(output_size, output_size, kernel_size=1)  # combined per pixel
        self.position = nn.Parameter(0.1 * torch.randn(grid * grid, output_size))  # one vector per region
        self.summary = summary
        if summary == "flatten":  # made after the others, so the default draws the same weights as before
            self.flat = nn.Linear(grid * grid * output_size, output_size)

    def forward(self, images: Tensor, src_lengths=None) -> tuple:  # noqa: ARG002 (the memory encoders' signature)
        """``images (B, C, H, W)`` (H, W: height and width) → ``(memory (B, grid², M), mask, summary (B, M))``."""
        check_shape("images", images, ("B", self.in_channels, "H", "W"))
        features = F.relu(self.conv2(F.relu(self.conv1(images))))  # (B, M, H, W)
        regions = F.adaptive_max_pool2d(features, self.grid)  # (B, M, grid, grid): what each region holds
        memory = regions.flatten(2).transpose(1, 2) + self.position  # (B, grid², M), row-major regions
        mask = memory.new_ones(memory.shape[:2], dtype=torch.bool)  # (B, grid²): every region is real
        if self.summary == "flatten":
            return memory, mask, self.flat(memory.flatten(1))  # (B, S, M), (B, S), (B, grid²·M) → (B, M)
        return memory, mask, memory.mean(dim=1)  # (B, S, M), (B, S), (B, M)
