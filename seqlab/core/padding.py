"""The conventions that the data and the models share: special tokens, and which positions are real.

Every vocabulary starts with the same four special tokens, so that a model can know their ids without
knowing the vocabulary: ``<pad>`` = 0 (padding), ``<bos>`` = 1 (the decoder's first input), ``<eos>``
= 2 (end of sequence), ``<unk>`` = 3 (a word the vocabulary does not hold). Batches are padded on the
right with ``PAD_ID``, and a mask is True at the real positions.

Models import this small module, never the data generators.
"""

import torch
from torch import Tensor

from seqlab.core.checks import check_shape, check_whole_numbers

PAD, BOS, EOS, UNK = "<pad>", "<bos>", "<eos>", "<unk>"
PAD_ID, BOS_ID, EOS_ID, UNK_ID = 0, 1, 2, 3
SPECIAL_TOKENS = (PAD, BOS, EOS, UNK)  # ids 0..3 in every vocabulary


def lengths_to_mask(lengths, max_len: int | None = None) -> Tensor:
    """A bool mask, True at the real (non-padding) positions of each row.

    Args:
        lengths: ``(B,)`` real length of each row.
        max_len: width ``S`` of the mask; the longest length when None.

    Shape:
        - returns ``(B, S)`` bool, ``mask[b, s] = s < lengths[b]``.

    Example::

        >>> lengths_to_mask(torch.tensor([3, 1]), max_len=4).int().tolist()
        [[1, 1, 1, 0], [1, 0, 0, 0]]

    Taught in chapter 2.
    """
    lengths = torch.as_tensor(lengths)
    check_shape("lengths", lengths, ("B",))
    check_whole_numbers("lengths", lengths)  # a long dtype alone would round 2.5 down in silence
    lengths = lengths.long()
    longest = int(lengths.max()) if lengths.numel() else 0
    if lengths.numel() and int(lengths.min()) < 0:
        raise ValueError(f"lengths must not be negative, got {lengths.tolist()}")
    S = longest if max_len is None else max_len
    if S < longest:
        raise ValueError(f"max_len={max_len} is shorter than the longest length {longest}")
    return torch.arange(S, device=lengths.device).unsqueeze(0) < lengths.unsqueeze(1)  # (B, S)
