"""Sequence tagging with a recurrent encoder: one label per token (chapter 2).

The tagger is the encoder of :mod:`seqlab.encoder` with a linear layer on each position's output,
a many-to-many model. With one direction, the label of token ``s`` can depend only on tokens
``1..s``; with two, on the whole sentence. Chapter 2 uses it on :func:`seqlab.data.right_context_task`.
"""

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from seqlab.data import PAD_ID, make_tagging_batch
from seqlab.encoder import Encoder


class Tagger(nn.Module):
    """Encoder + a linear layer on every position: ``(B, S)`` token ids → ``(B, S, num_tags)`` scores.

    Args:
        vocab_size: word vocabulary size (id 0 is padding).
        num_tags: tag vocabulary size (id 0 is the padding tag).
        embedding_size, hidden_size, cell: as for :class:`~seqlab.encoder.Encoder`.
        bidirectional: read left to right only (False) or in both directions (True).

    Shape:
        - tokens ``(B, S)``, lengths ``(B,)`` → scores ``(B, S, num_tags)``.

    Taught in chapter 2.
    """

    def __init__(
        self,
        vocab_size: int,
        num_tags: int,
        embedding_size: int = 16,
        hidden_size: int = 32,
        cell: str = "gru",
        bidirectional: bool = True,
    ):
        super().__init__()
        self.encoder = Encoder(vocab_size, embedding_size, hidden_size, cell, bidirectional=bidirectional)
        self.output = nn.Linear(self.encoder.output_size, num_tags)

    def forward(self, tokens: Tensor, lengths: Tensor) -> Tensor:
        outputs, _ = self.encoder(tokens, lengths)  # (B, S, D*H)
        return self.output(outputs)  # (B, S, num_tags)


def train_tagger(
    model: Tagger,
    examples: list,
    word_vocab,
    tag_vocab,
    epochs: int = 5,
    batch_size: int = 32,
    lr: float = 1e-2,
    seed: int = 0,
    device: torch.device | str = "cpu",
) -> list:
    """Train with cross-entropy over real tokens (padding ignored); return the loss of every step.

    Taught in chapter 2.
    """
    model.to(device).train()
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    generator = torch.Generator().manual_seed(seed)
    losses = []
    for _ in range(epochs):
        order = torch.randperm(len(examples), generator=generator).tolist()
        for begin in range(0, len(order), batch_size):
            chunk = [examples[i] for i in order[begin : begin + batch_size]]
            tokens, tags, lengths = (t.to(device) for t in make_tagging_batch(chunk, word_vocab, tag_vocab))
            scores = model(tokens, lengths)  # (B, S, num_tags)
            loss = F.cross_entropy(scores.flatten(0, 1), tags.flatten(), ignore_index=PAD_ID)
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            losses.append(loss.item())
    return losses


@torch.no_grad()
def tag_accuracy(
    model: Tagger, examples: list, word_vocab, tag_vocab, skip_tag: str | None = None, device="cpu"
) -> float:
    """Fraction of real tokens tagged right; with ``skip_tag="O"``, only the tokens whose tag is not "O".

    Taught in chapter 2.
    """
    model.to(device).eval()
    tokens, tags, lengths = (t.to(device) for t in make_tagging_batch(examples, word_vocab, tag_vocab))
    predicted = model(tokens, lengths).argmax(dim=2)  # (B, S)
    counted = tags != PAD_ID  # (B, S)
    if skip_tag is not None:
        counted &= tags != tag_vocab.token_to_id(skip_tag)
    return ((predicted == tags) & counted).sum().item() / counted.sum().item()
