"""The long-lag memory task, and the classifier that chapter 1 trains on it.

The task: a sequence starts with one of ``n_symbols`` signal tokens, followed by ``lag`` random
distractor tokens; the label is the signal. To answer, a recurrent network must carry one token
across ``lag`` steps of noise, and the gradient that teaches it to do so must travel back the same
distance. A plain RNN's gradient shrinks geometrically on the way; gated cells (LSTM, GRU) have a
path along which it need not.

The experiments train torch.nn's fused layers, which hold exactly the parameters of seqlab.rnn's
(chapter 1 checks that both give the same outputs) but run in C++: the from-scratch layers are for
reading, the fused ones for training within seconds on a CPU.
"""

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from seqlab.checks import check_shape
from seqlab.rnn import TORCH_LAYERS


def memory_task(
    n: int, lag: int, n_symbols: int = 4, n_distractors: int = 4, generator: torch.Generator | None = None
) -> tuple:
    """Draw ``n`` examples of the long-lag memory task.

    Token ids ``0 .. n_symbols-1`` are signals, ``n_symbols .. n_symbols+n_distractors-1`` distractors.

    Args:
        n: number of examples.
        lag: distractors between the signal and the end of the sequence.
        n_symbols: number of signal tokens, hence of classes (chance accuracy is ``1 / n_symbols``).
        n_distractors: number of distinct distractor tokens.
        generator: a seeded ``torch.Generator`` for repeatable draws.

    Returns:
        ``tokens (n, lag + 1)`` long, and ``labels (n,)`` long: the first token of each row.

    Example::

        >>> tokens, labels = memory_task(2, lag=3, generator=torch.Generator().manual_seed(0))
        >>> tokens.shape, bool((tokens[:, 0] == labels).all())
        (torch.Size([2, 4]), True)

    Taught in chapter 1.
    """
    if lag < 0 or n < 1:
        raise ValueError(f"need n >= 1 and lag >= 0, got n={n}, lag={lag}")
    signal = torch.randint(0, n_symbols, (n,), generator=generator)  # (n,)
    distractors = torch.randint(n_symbols, n_symbols + n_distractors, (n, lag), generator=generator)  # (n, lag)
    return torch.cat([signal.unsqueeze(1), distractors], dim=1), signal  # (n, lag + 1), (n,)


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
            early in training the gradient reaches the first token. The plain RNN has no such gate.

    Shape:
        - tokens ``(B, S)`` long → logits ``(B, num_classes)``.

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
        check_shape("tokens", tokens, ("B", "S"))
        _, final = self.recurrent(self.embedding(tokens))  # final: (1, B, H), LSTM: a pair
        h_n = final[0] if self.kind == "lstm" else final
        return self.output(h_n[-1])  # (B, num_classes)


def accuracy(model: nn.Module, tokens: Tensor, labels: Tensor) -> float:
    """Fraction of examples whose highest-scoring class is the label."""
    model.eval()
    with torch.no_grad():
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
    """Train a :class:`LastStateClassifier` on fresh batches of the memory task; test on 1000 new ones.

    Adam with gradient-norm clipping at 1 (so that an exploding gradient cannot wreck a run).

    Returns:
        ``(model, test_accuracy, losses)`` where ``losses`` is the training loss of every step.

    Taught in chapter 1.
    """
    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed + 1)
    model = LastStateClassifier(kind, n_symbols + n_distractors, n_symbols, **model_kwargs).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    model.train()
    for _ in range(steps):
        tokens, labels = memory_task(batch_size, lag, n_symbols, n_distractors, generator)
        loss = F.cross_entropy(model(tokens.to(device)), labels.to(device))
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(loss.item())
    tokens, labels = memory_task(1000, lag, n_symbols, n_distractors, generator)
    return model, accuracy(model, tokens.to(device), labels.to(device)), losses
