"""The listener of "Listen, Attend and Spell" (Chan et al., 2016), and the character error rate (chapter 7).

Speech has many frames per character: about 5 in chapter 7's generated spectrograms, more in real
audio (100 frames a second). The listener is a bidirectional GRU over the frames; its
**pyramidal** layers then concatenate each pair of neighbouring states and read the result with
another bidirectional GRU, halving the length each time, so the speller attends over fewer, richer
states (Chan et al. use three such layers: 8 times fewer). Its states are the memory of
:class:`~seqlab.models.memory_seq2seq.MemorySeq2Seq`; the speller is chapter 4's attention decoder.
"""

import editdistance
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from seqlab.core import checks
from seqlab.core.checks import check_shape
from seqlab.core.padding import lengths_to_mask
from seqlab.models.encoder import last_layer_directions


class Listener(nn.Module):
    """Frames → states: a bidirectional GRU, then ``pyramid`` layers that each halve the length.

    Args:
        n_features: F, the features of each frame (frequency bins).
        output_size: M, each state's size (both directions together; even).
        pyramid: the number of pyramidal layers (0: one plain bidirectional layer).

    Shape:
        - ``frames (B, S, F)``, ``src_lengths (B,)`` → memory ``(B, S', M)`` with ``S' = ⌈S / 2^pyramid⌉``,
          mask ``(B, S')``, summary ``(B, M)``: the last layer's final states, both directions.

    Example::

        >>> memory, mask, summary = Listener(16, 32, pyramid=1)(torch.randn(2, 9, 16), torch.tensor([9, 4]))
        >>> memory.shape, mask.sum(dim=1).tolist()
        (torch.Size([2, 5, 32]), [5, 2])

    Taught in chapter 7.
    """

    def __init__(self, n_features: int, output_size: int = 64, pyramid: int = 0):
        super().__init__()
        if output_size % 2:
            raise ValueError(f"output_size must be even (each direction gets half), got {output_size}")
        self.n_features, self.output_size, self.pyramid = n_features, output_size, pyramid
        H = output_size // 2
        sizes = [n_features] + [2 * output_size] * pyramid  # a pyramidal layer reads two states at once
        self.layers = nn.ModuleList(nn.GRU(size, H, batch_first=True, bidirectional=True) for size in sizes)

    def forward(self, frames: Tensor, src_lengths: Tensor) -> tuple:
        """``frames (B, S, F)``, ``src_lengths (B,)`` → ``(memory (B, S', M), mask (B, S'), summary (B, M))``."""
        check_shape("frames", frames, ("B", "S", self.n_features))
        checks.check_lengths("src_lengths", src_lengths, frames.shape[0], frames.shape[1])
        states, lengths = frames, src_lengths.cpu()
        for i, layer in enumerate(self.layers):
            if i > 0:  # pyramidal: (B, S, M) → (B, S/2, 2M), each pair of neighbours side by side
                if states.shape[1] % 2:
                    states = nn.functional.pad(states, (0, 0, 0, 1))  # (B, S+1, M): one zero frame
                states = states.reshape(states.shape[0], states.shape[1] // 2, 2 * states.shape[2])  # (B, S/2, 2M)
                lengths = (lengths + 1) // 2
            packed = pack_padded_sequence(states, lengths, batch_first=True, enforce_sorted=False)
            packed_states, final = layer(packed)
            states, _ = pad_packed_sequence(packed_states, batch_first=True, total_length=states.shape[1])  # (B, S, M)
        mask = lengths_to_mask(lengths, states.shape[1]).to(frames.device)  # (B, S')
        return states, mask, last_layer_directions(final, 1, 2)[-1]  # (B, S', M), (B, S'), (B, M)


def character_error_rate(hypotheses: list, references: list) -> float:
    """Character edit distance (Levenshtein, from the ``editdistance`` library) summed over all pairs,
    divided by the total length of the references; 0 is perfect, and it can exceed 1.

    Example::

        >>> character_error_rate([list("cat"), list("dg")], [list("cat"), list("dog")])
        0.16666666666666666

    Taught in chapter 7.
    """
    if len(hypotheses) != len(references) or not references:
        raise ValueError(
            f"need as many hypotheses as references, and at least one: got {len(hypotheses)} and {len(references)}"
        )
    total = sum(len(reference) for reference in references)
    if total == 0:
        raise ValueError("the references hold no character")
    return sum(editdistance.eval(list(h), list(r)) for h, r in zip(hypotheses, references)) / total
