"""A recurrent encoder over padded batches, and the bridge from its final states to a decoder (chapter 2).

The encoder embeds token ids and runs an RNN, LSTM or GRU over them, in one or two directions. With
two directions, position ``i`` of the output holds ``h_i = [→h_i ; ←h_i]``: the forward state after
reading ``x_1..x_i`` and the backward state after reading ``x_S..x_i`` (``S`` the sequence's real length;
positions count from 1 as in the book, from 0 in code): each token sees its left *and* its right context.

Padding: every sequence is read up to its own length. The backward direction must start at the last
*real* token, not on padding; torch's packed sequences (or ``lengths=`` for seqlab.models.rnn) do exactly that.
"""

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from seqlab.core.checks import check_lengths, check_not_empty, check_shape, check_token_ids
from seqlab.models import rnn
from seqlab.models.rnn import CELLS, is_lstm_state


def per_direction(output_size: int, bidirectional: bool, name: str = "hidden_size") -> int:
    """The ``hidden_size`` of each direction of an encoder whose outputs have ``output_size`` features in all.

    ``hidden_size`` keeps torch.nn's meaning here as everywhere in seqlab (see :mod:`seqlab.models.rnn`): the
    state of one direction. A model that needs encoder outputs of a given size (a seq2seq model's are the
    size of its decoder's state, its ``hidden_size``) asks this function for the encoder's ``hidden_size``.
    ``name`` is what the caller calls ``output_size``, for the message.

    Example::

        >>> per_direction(64, bidirectional=True), per_direction(64, bidirectional=False)
        (32, 64)
    """
    D = 2 if bidirectional else 1
    if output_size % D:
        raise ValueError(
            f"{name} must be even with a bidirectional encoder (each direction gets half), got {output_size}"
        )
    return output_size // D


class Encoder(nn.Module):
    """Embedding + recurrent layer over a padded batch of token ids.

    Args:
        vocab_size: source vocabulary size V (id 0 is padding).
        embedding_size: size E of each token embedding.
        hidden_size: size H of each direction's state (torch.nn's meaning); the outputs have
            ``output_size = D * H`` features.
        cell: ``"rnn"``, ``"lstm"`` or ``"gru"``.
        num_layers: stacked recurrent layers L.
        bidirectional: read the sequence in both directions (D = 2) or left to right only (D = 1).
        dropout: dropout on the embeddings and between layers.
        from_scratch: use chapter 1's ``seqlab.models.rnn`` layers instead of torch.nn's fused ones (same
            parameters, same results: for reading and checking; the chapters train the fused ones, and
            ``make bench`` measures how the speeds compare).

    Shape:
        - src ``(B, S)`` long, src_lengths ``(B,)`` long.
        - outputs ``(B, S, D*H)``, zero at padded positions.
        - final ``h_n (L*D, B, H)``, or ``(h_n, c_n)`` for the LSTM: each direction's state at its own
          end of each sequence (forward: ``→h_S`` at the last real token, index ``length - 1``;
          backward: ``←h_1`` at the first token, index 0).

    Example::

        >>> encoder = Encoder(vocab_size=20, embedding_size=8, hidden_size=16)
        >>> outputs, h_n = encoder(torch.tensor([[5, 6, 7], [8, 9, 0]]), torch.tensor([3, 2]))
        >>> outputs.shape, h_n.shape
        (torch.Size([2, 3, 32]), torch.Size([2, 2, 16]))

    Taught in chapter 2.
    """

    def __init__(
        self,
        vocab_size: int,
        embedding_size: int,
        hidden_size: int,
        cell: str = "gru",
        num_layers: int = 1,
        bidirectional: bool = True,
        dropout: float = 0.0,
        from_scratch: bool = False,
    ):
        super().__init__()
        if cell not in CELLS:
            raise ValueError(f"cell must be one of {CELLS}, got {cell!r}")
        self.cell = cell
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.num_directions = 2 if bidirectional else 1
        self.output_size = self.num_directions * hidden_size
        self.from_scratch = from_scratch
        self.embedding = nn.Embedding(vocab_size, embedding_size, padding_idx=0)
        self.dropout = nn.Dropout(dropout)
        layer_cls = (rnn.LAYERS if from_scratch else rnn.TORCH_LAYERS)[cell]
        self.rnn = layer_cls(
            embedding_size,
            hidden_size,
            num_layers=num_layers,
            batch_first=True,
            bidirectional=bidirectional,
            dropout=dropout if num_layers > 1 else 0.0,
        )

    def forward(self, src: Tensor, src_lengths: Tensor, state=None, *, names: tuple = ("src", "src_lengths")) -> tuple:
        """Encode a padded batch: ``src (B, S)``, ``src_lengths (B,)`` → ``(outputs (B, S, D*H), final)``.

        ``state``: the initial state ``(L*D, B, H)`` (LSTM: a pair), zeros when None; chapter 7's
        conditional encoding starts reading a hypothesis where the premise's reading ended.
        ``final`` is ``h_n (L*D, B, H)``, or ``(h_n, c_n)`` for the LSTM (see the class's Shape).
        ``names``: what ``src`` and ``src_lengths`` are called in the caller's signature (``("premise",
        "premise_lengths")``), so that an error names the argument the caller passed.
        """
        src_name, lengths_name = names
        check_shape(src_name, src, ("B", "S"))
        check_not_empty(src_name, src, 0, "sequence (B)")  # torch cannot pack an empty batch
        check_lengths(lengths_name, src_lengths, src.shape[0], src.shape[1])
        check_token_ids(src_name, src, self.embedding.num_embeddings)  # before the embedding looks them up
        embedded = self.dropout(self.embedding(src))  # (B, S, E)
        if self.from_scratch:
            return self.rnn(embedded, state, lengths=src_lengths)
        # Packing tells the fused layer where each sequence ends (lengths must live on the CPU).
        packed = pack_padded_sequence(embedded, src_lengths.cpu(), batch_first=True, enforce_sorted=False)
        packed_outputs, final = self.rnn(packed, state)
        outputs, _ = pad_packed_sequence(packed_outputs, batch_first=True, total_length=src.shape[1])  # (B, S, D*H)
        return outputs, final


def last_layer_directions(h_n: Tensor, num_layers: int, num_directions: int) -> Tensor:
    """Concatenate the directions of each layer's final state.

    Shape:
        - h_n ``(L*D, B, H)``, indexed ``layer * D + direction`` as torch.nn does → ``(L, B, D*H)``.

    Example::

        >>> h_n = torch.arange(4.0).view(4, 1, 1)  # L = 2 layers, D = 2 directions, B = H = 1
        >>> last_layer_directions(h_n, num_layers=2, num_directions=2).tolist()
        [[[0.0, 1.0]], [[2.0, 3.0]]]
    """
    LD, B, H = h_n.shape
    per_layer = h_n.view(num_layers, num_directions, B, H)  # (L, D, B, H)
    return per_layer.permute(0, 2, 1, 3).reshape(num_layers, B, num_directions * H)  # (L, B, D*H)


class Bridge(nn.Module):
    """Turn the encoder's final states into the decoder's initial state: concatenate, project.

    For every layer, the final states of both directions are concatenated and mapped by a linear
    layer and ``tanh`` to the decoder's hidden size (the LSTM's cell memory gets its own projection).

    Args:
        encoder_hidden_size: H of each encoder direction.
        num_directions: D of the encoder.
        decoder_hidden_size: hidden size of the decoder.
        num_layers: layers L, the same in encoder and decoder.
        cell: the encoder's and decoder's cell (``"lstm"`` carries a pair of states).

    Shape:
        - final ``(L*D, B, H_enc)`` (LSTM: a pair) → ``(L, B, H_dec)`` (LSTM: a pair).

    Example::

        >>> bridge = Bridge(encoder_hidden_size=16, num_directions=2, decoder_hidden_size=24, num_layers=1, cell="gru")
        >>> bridge(torch.randn(2, 3, 16)).shape
        torch.Size([1, 3, 24])

    Taught in chapter 2.
    """

    def __init__(
        self, encoder_hidden_size: int, num_directions: int, decoder_hidden_size: int, num_layers: int, cell: str
    ):
        super().__init__()
        self.num_layers = num_layers
        self.num_directions = num_directions
        self.cell = cell
        self.project_h = nn.Linear(num_directions * encoder_hidden_size, decoder_hidden_size)
        self.project_c = (
            nn.Linear(num_directions * encoder_hidden_size, decoder_hidden_size) if cell == "lstm" else None
        )

    def forward(self, final):
        """The encoder's final state ``(L*D, B, H_enc)`` (LSTM: a pair) → the decoder's first, ``(L, B, H_dec)``."""
        if is_lstm_state(final):  # an LSTM's (h_n, c_n): the cell memory gets its own projection
            if self.project_c is None:
                raise ValueError(f"an LSTM's (h_n, c_n) reached a Bridge built for cell={self.cell!r}")
            h_n, c_n = final
            return self._project(self.project_h, h_n), self._project(self.project_c, c_n)
        return self._project(self.project_h, final)

    def _project(self, linear: nn.Linear, states: Tensor) -> Tensor:
        concatenated = last_layer_directions(states, self.num_layers, self.num_directions)  # (L, B, D*H_enc)
        return torch.tanh(linear(concatenated))  # (L, B, H_dec)
