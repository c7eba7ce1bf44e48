"""Sequence tagging with a recurrent encoder: one label per token (chapter 2).

The tagger is the encoder of :mod:`seqlab.models.encoder` with a linear layer on each position's output,
a many-to-many model. With one direction, the label of token ``i`` can depend only on tokens
``1..i``; with two, on the whole sentence. Chapter 2 uses it on :func:`seqlab.data.right_context_task`.
"""

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from seqlab.core.device import check_model_device, evaluating
from seqlab.core.padding import PAD_ID
from seqlab.data.batching import make_tagging_batch
from seqlab.experiments.train import fit
from seqlab.models.encoder import Encoder, per_direction


class Tagger(nn.Module):
    """Encoder + a linear layer on every position: ``(B, S)`` token ids → ``(B, S, num_tags)`` scores.

    Args:
        vocab_size: word vocabulary size (id 0 is padding).
        num_tags: tag vocabulary size (id 0 is the padding tag).
        embedding_size: size of the word embeddings.
        encoding_size: size of each position's encoding, the tag layer's input: the encoder's
            ``output_size``. A bidirectional encoder gives each direction ``encoding_size // 2`` units, its
            ``hidden_size`` (which keeps torch.nn's meaning, one direction's state: see :mod:`seqlab.models.rnn`).
        cell: ``"rnn"``, ``"lstm"`` or ``"gru"``.
        bidirectional: read left to right only (False) or in both directions (True).

    Shape:
        - tokens ``(B, S)``, lengths ``(B,)`` → scores ``(B, S, num_tags)``.

    Example::

        >>> tagger = Tagger(vocab_size=10, num_tags=4, encoding_size=8, bidirectional=True)
        >>> tagger.encoder.hidden_size, tagger(torch.tensor([[3, 4, 5], [6, 7, 0]]), torch.tensor([3, 2])).shape
        (4, torch.Size([2, 3, 4]))

    Taught in chapter 2.
    """

    def __init__(
        self,
        vocab_size: int,
        num_tags: int,
        embedding_size: int = 16,
        encoding_size: int = 64,
        cell: str = "gru",
        bidirectional: bool = True,
    ):
        super().__init__()
        H = per_direction(encoding_size, bidirectional, name="encoding_size")
        self.encoder = Encoder(vocab_size, embedding_size, H, cell, bidirectional=bidirectional)
        self.output = nn.Linear(encoding_size, num_tags)

    def forward(self, tokens: Tensor, lengths: Tensor) -> Tensor:
        """Tag scores of every position: ``tokens (B, S)``, ``lengths (B,)`` → ``(B, S, num_tags)``."""
        outputs, _ = self.encoder(tokens, lengths, names=("tokens", "lengths"))  # (B, S, D*H); errors say tokens
        return self.output(outputs)  # (B, S, num_tags)


def tagging_loss(model: Tagger, batch: tuple) -> Tensor:
    """Cross-entropy of the tags at real tokens (padded positions carry the tag ``PAD_ID``, ignored)."""
    tokens, tags, lengths = batch
    scores = model(tokens, lengths)  # (B, S, num_tags)
    return F.cross_entropy(scores.flatten(0, 1), tags.flatten(), ignore_index=PAD_ID)


def train_tagger(
    model: Tagger,
    examples: list,
    word_vocab,
    tag_vocab,
    epochs: int = 5,
    batch_size: int = 32,
    lr: float = 1e-2,
    seed: int = 0,
    device: torch.device | str | None = None,
) -> list:
    """Train with :func:`tagging_loss` (:func:`seqlab.experiments.train.fit`, a new order of the examples every
    epoch); return the loss of every step.

    Taught in chapter 2.
    """
    generator = torch.Generator().manual_seed(seed)

    def batches(_epoch):  # the generator gives every epoch a new order
        order = torch.randperm(len(examples), generator=generator).tolist()
        for begin in range(0, len(order), batch_size):
            chunk = [examples[i] for i in order[begin : begin + batch_size]]
            yield make_tagging_batch(chunk, word_vocab, tag_vocab)

    return fit(model, batches, tagging_loss, epochs=epochs, lr=lr, device=device)["step_loss"]


@torch.no_grad()
def tag_accuracy(model: Tagger, examples: list, word_vocab, tag_vocab, skip_tag: str | None = None) -> float:
    """Fraction of real tokens tagged right; with ``skip_tag="O"``, only the tokens whose tag is not "O".

    Runs on the model's own device, in evaluation mode (the model's mode is restored afterwards).

    Taught in chapter 2.
    """
    device = check_model_device(model, None)
    tokens, tags, lengths = (t.to(device) for t in make_tagging_batch(examples, word_vocab, tag_vocab))
    with evaluating(model):
        predicted = model(tokens, lengths).argmax(dim=2)  # (B, S)
    counted = tags != PAD_ID  # (B, S)
    if skip_tag is not None:
        counted &= tags != tag_vocab.token_to_id(skip_tag)
    return ((predicted == tags) & counted).sum().item() / counted.sum().item()
