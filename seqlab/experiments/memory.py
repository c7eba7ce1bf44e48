"""The long-lag memory experiment of chapter 1: a many-to-one classifier trained on the memory task.

The task (:func:`seqlab.data.memory_task`): a sequence starts with one of ``n_symbols`` signal
tokens, followed by ``lag`` random distractor tokens; the label is the signal. To answer, a recurrent
network must carry one token across ``lag`` steps of noise, and the gradient that teaches it to do so
must travel back the same distance. A plain RNN's gradient shrinks geometrically on the way; gated
cells (LSTM, GRU) have a path along which it need not.

The experiments train torch.nn's fused layers, which hold exactly the parameters of seqlab.models.rnn's
(chapter 1 checks that both give the same outputs) but run in C++: the from-scratch layers are for
reading, the fused ones for training within seconds on a CPU.
"""

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from seqlab.core.checks import check_shape, check_token_ids
from seqlab.core.device import check_model_device, evaluating
from seqlab.data.memory import memory_task
from seqlab.experiments.train import fit
from seqlab.models.rnn import TORCH_LAYERS, hidden_state


class LastStateClassifier(nn.Module):
    """Embed tokens, run a recurrent layer, classify from the final hidden state (many-to-one).

    Args:
        kind: ``"rnn"``, ``"lstm"`` or ``"gru"``.
        vocab_size: number of token ids.
        num_classes: number of labels.
        embedding_size: size of each token's embedding.
        hidden_size: size of the recurrent state.
        gate_bias: for the LSTM, the initial bias of the forget gate; for the GRU, of the update
            gate. A positive value starts the cell in "keep the memory" mode (σ(3) ≈ 0.95), so that
            early in training the gradient reaches the first token: chapter 1 measures that gradient
            at initialisation, and its ablation (``gate_bias=0``) stays near chance at lag 45 where
            the default learns. The plain RNN has no such gate and ignores this argument.

    Shape:
        - tokens ``(B, S)`` long → logits ``(B, num_classes)``.

    Example::

        >>> LastStateClassifier("lstm", vocab_size=6, num_classes=3)(torch.tensor([[1, 2, 3], [4, 5, 0]])).shape
        torch.Size([2, 3])

    Taught in chapter 1.
    """

    def __init__(
        self,
        kind: str,
        vocab_size: int,
        num_classes: int,
        embedding_size: int = 8,
        hidden_size: int = 32,
        gate_bias: float = 3.0,
    ):
        super().__init__()
        if kind not in TORCH_LAYERS:
            raise ValueError(f"kind must be one of {sorted(TORCH_LAYERS)}, got {kind!r}")
        self.kind = kind
        self.embedding = nn.Embedding(vocab_size, embedding_size)
        self.recurrent = TORCH_LAYERS[kind](embedding_size, hidden_size, batch_first=True)
        self.output = nn.Linear(hidden_size, num_classes)
        if kind in ("lstm", "gru"):
            # The second block of rows is the forget gate (LSTM: i, f, g, o) or the update gate (GRU: r, z, n).
            H = hidden_size
            with torch.no_grad():
                self.recurrent.bias_ih_l0[H : 2 * H].fill_(gate_bias)
                self.recurrent.bias_hh_l0[H : 2 * H].zero_()

    def forward(self, tokens: Tensor) -> Tensor:
        """Logits ``(B, num_classes)`` from the top layer's final hidden state, for ``tokens (B, S)``."""
        check_shape("tokens", tokens, ("B", "S"))
        check_token_ids("tokens", tokens, self.embedding.num_embeddings)  # before the embedding looks them up
        _, final = self.recurrent(self.embedding(tokens))  # final: (1, B, H), LSTM: a pair
        return self.output(hidden_state(final)[-1])  # (B, num_classes)


@torch.no_grad()
def accuracy(model: nn.Module, tokens: Tensor, labels: Tensor) -> float:
    """Fraction of examples whose highest-scoring class is the label (evaluation mode, then the model's
    mode restored; the inputs must be on the model's device)."""
    check_model_device(model, tokens.device)
    with evaluating(model):
        return (model(tokens).argmax(dim=1) == labels).float().mean().item()


def train_on_memory_task(
    kind: str,
    lag: int,
    steps: int = 200,
    batch_size: int = 64,
    lr: float = 1e-2,
    n_symbols: int = 4,
    n_distractors: int = 4,
    seed: int = 0,
    device: torch.device | str = "cpu",
    **model_kwargs,
) -> tuple:
    """Train a :class:`LastStateClassifier` on ``steps`` fresh batches of the memory task (one pass of
    :func:`seqlab.experiments.train.fit`, gradient norm clipped at 1 so that an exploding gradient cannot wreck a
    run); test it on 1000 new examples.

    Returns:
        ``(model, test_accuracy, losses)`` where ``losses`` is the training loss of every step.

    Taught in chapter 1.
    """
    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed + 1)
    model = LastStateClassifier(kind, n_symbols + n_distractors, n_symbols, **model_kwargs).to(device)

    def batches(_epoch):  # every batch is new: the epoch number changes nothing
        for _ in range(steps):
            yield memory_task(batch_size, lag, n_symbols, n_distractors, generator)

    def loss(model, batch):
        tokens, labels = batch
        return F.cross_entropy(model(tokens), labels)

    history = fit(model, batches, loss, epochs=1, lr=lr, clip=1.0, device=device)
    tokens, labels = memory_task(1000, lag, n_symbols, n_distractors, generator)
    return model, accuracy(model, tokens.to(device), labels.to(device)), history["step_loss"]
