"""seqlab.experiments.memory: the long-lag task's labels and the classifier's wiring."""

import pytest
import torch

from seqlab.experiments.memory import LastStateClassifier, memory_task, train_on_memory_task


def test_memory_task_labels_are_the_first_token():
    tokens, labels = memory_task(50, lag=7, n_symbols=3, n_distractors=5, generator=torch.Generator().manual_seed(0))
    assert tokens.shape == (50, 8) and labels.shape == (50,)
    assert torch.equal(tokens[:, 0], labels)
    assert ((labels >= 0) & (labels < 3)).all()
    assert ((tokens[:, 1:] >= 3) & (tokens[:, 1:] < 8)).all()  # distractors never look like signals


def test_memory_task_is_deterministic_for_a_seed():
    a = memory_task(10, lag=4, generator=torch.Generator().manual_seed(1))
    b = memory_task(10, lag=4, generator=torch.Generator().manual_seed(1))
    c = memory_task(10, lag=4, generator=torch.Generator().manual_seed(2))
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    assert not torch.equal(a[0], c[0])


@pytest.mark.parametrize("kind,gate_rows", [("lstm", slice(8, 16)), ("gru", slice(8, 16))])
def test_gate_bias_opens_the_keep_gate_only(kind, gate_rows):
    model = LastStateClassifier(kind, vocab_size=6, num_classes=3, hidden_size=8, gate_bias=3.0)
    bias = model.recurrent.bias_ih_l0 + model.recurrent.bias_hh_l0
    assert torch.all(bias[gate_rows] == 3.0)
    others = torch.ones_like(bias, dtype=torch.bool)
    others[gate_rows] = False
    assert bias[others].abs().max() < 1.0  # untouched: torch's uniform init in [-1/√H, 1/√H] twice


def test_classifier_shapes_and_errors():
    model = LastStateClassifier("rnn", vocab_size=6, num_classes=3)
    assert model(torch.zeros(4, 9, dtype=torch.long)).shape == (4, 3)
    with pytest.raises(ValueError, match=r"tokens: expected shape \(B, S\), got \(4, 9, 1\)"):
        model(torch.zeros(4, 9, 1, dtype=torch.long))
    with pytest.raises(ValueError, match="kind must be one of"):
        LastStateClassifier("transformer", 6, 3)


def test_training_learns_a_short_lag():
    # Lag 2 is learnable by any cell; a broken loop (no step, wrong labels) stays near chance (25 %).
    _, acc, losses = train_on_memory_task("gru", lag=2, steps=60, seed=0)
    assert acc > 0.9
    assert losses[-1] < losses[0]
