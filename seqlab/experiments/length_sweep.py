"""The bottleneck experiment: exact match against source length on sequence reversal (chapters 3 and 4).

A model is trained on reversal of short and medium sequences, then tested on every length up to and
beyond the training range. Chapter 3 runs it on the Seq2Seq with one context vector, chapter 4 on the
attention model beside two Seq2Seq controls, both with ``LengthSweep(epochs=6)`` (the same data and the
same budget; 6 epochs rather than the default 8, so that chapter 4's nine trainings fit its time
budget), over seeds 0, 1 and 2: the toy-scale version of the picture of Bahdanau et al. (2015),
Figure 2. Chapter 8 runs a smaller sweep.
"""

from dataclasses import dataclass

import torch
from torch import nn

from seqlab.data.reversal import reversal_task
from seqlab.data.vocab import build_vocabs
from seqlab.experiments.train import evaluate, train_seq2seq


@dataclass
class LengthSweep:
    """Data and budget of the length experiment; :meth:`run` trains a model and measures it.

    Taught in chapter 3.
    """

    train_min_len: int = 3  # shortest training source
    train_max_len: int = 12  # longest training source
    test_lengths: tuple = (4, 8, 12, 16, 20)  # every one tested; 16 and 20 are longer than any in training
    n_symbols: int = 10  # distinct symbols in the sequences
    n_train: int = 2000  # training pairs
    n_test: int = 200  # test pairs per length
    epochs: int = 8  # passes over the training pairs
    batch_size: int = 64
    lr: float = 3e-3
    seed: int = 0  # seeds the data and the training order

    def train_pairs(self) -> list:
        return reversal_task(self.n_train, self.train_min_len, self.train_max_len, self.n_symbols, seed=self.seed)

    def test_pairs(self, length: int) -> list:
        # A seed per length, far from the training seed, so test sets differ from each other and from training.
        return reversal_task(self.n_test, length, length, self.n_symbols, seed=self.seed + 1000 + length)

    def vocabs(self) -> tuple:
        """Source and target vocabularies (the symbols, the same at every length), built from this seed's
        training pairs: ids follow the symbols' frequencies there, so another seed may number them
        differently (decode a seed's model with its own sweep's vocabularies)."""
        return build_vocabs(self.train_pairs())

    def run(self, model: nn.Module, device: torch.device | str | None = None) -> dict:
        """Train ``model`` on the training pairs (on ``device``, by default where it is), then measure
        greedy exact match at every test length.

        Returns:
            ``{"exact_match": {length: fraction}, "token_accuracy": {length: fraction},
            "history": train_seq2seq's history}``.
        """
        train = self.train_pairs()
        src_vocab, tgt_vocab = build_vocabs(train)
        history = train_seq2seq(
            model, train, src_vocab, tgt_vocab, self.epochs, self.batch_size, self.lr, seed=self.seed, device=device
        )
        results = {"exact_match": {}, "token_accuracy": {}, "history": history}
        for length in self.test_lengths:
            scores = evaluate(model, self.test_pairs(length), src_vocab, tgt_vocab)
            results["exact_match"][length] = scores["exact_match"]
            results["token_accuracy"][length] = scores["token_accuracy"]
        return results
