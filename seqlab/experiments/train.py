"""Training, and measuring a sequence-to-sequence model (chapter 3; reused by every chapter).

* :func:`fit`: the course's one training loop (Adam, gradient clipping, a progress bar), which every
  model trains with: the memory classifier, the tagger, the Seq2Seq models and the pointer-generator;
* :func:`sequence_nll`: the teacher-forced loss, averaged over real target tokens only;
* :func:`train_seq2seq`: :func:`fit` over shuffled :class:`~seqlab.data.batching.Seq2SeqBatch` epochs;
* :func:`evaluate`: token accuracy (teacher-forced), exact match and BLEU (sacrebleu) of decoded outputs.

Progress bars write to stdout and are off when the environment sets ``SEQLAB_PROGRESS=0`` (the test
suite, nbval and the book build do), so they never reach nbgrader's stderr check or a stored output.
"""

import os
import sys
import time

import sacrebleu
import torch
from torch import Tensor, nn
from tqdm.auto import tqdm

from seqlab.core.checks import check_shape, check_token_ids
from seqlab.core.device import check_model_device, evaluating, model_device
from seqlab.core.padding import PAD_ID
from seqlab.data.batching import iterate_batches, make_seq2seq_batch


def progress_enabled() -> bool:
    """Progress bars are on unless ``SEQLAB_PROGRESS=0``."""
    return os.environ.get("SEQLAB_PROGRESS", "1") != "0"


def sequence_nll(log_probs: Tensor, targets: Tensor, pad_id: int = PAD_ID) -> Tensor:
    """Mean negative log-likelihood of the target tokens, ignoring padding.

    ``-(1/N) Σ_{b,t: target real} log P(y_bt)``, N the number of real target tokens: a padded
    position contributes nothing, whatever the model predicts there.

    Shape:
        - log_probs ``(B, T, V)``, targets ``(B, T)`` long → scalar.

    Taught in chapter 3.
    """
    check_shape("log_probs", log_probs, ("B", "T", "V"))
    check_shape("targets", targets, tuple(log_probs.shape[:2]))
    check_token_ids("targets", targets, log_probs.shape[2])
    mask = targets != pad_id  # (B, T)
    picked = log_probs.gather(2, targets.unsqueeze(2)).squeeze(2)  # (B, T): log P(target)
    # where, not a product: a model that masks <pad> gives -inf there, and -inf * 0 is NaN
    return -torch.where(mask, picked, 0.0).sum() / mask.sum().clamp(min=1)


def fit(
    model: nn.Module,
    batches,
    loss,
    epochs: int = 1,
    lr: float = 3e-3,
    clip: float = 1.0,
    device: torch.device | str | None = None,
) -> dict:
    """Train ``model``: Adam, gradient-norm clipping, a progress bar over epochs.

    Args:
        model: the model to train (in training mode while it trains; its mode is restored afterwards).
        batches: ``batches(epoch)`` returns the batches of that epoch (epochs count from 0), each with a
            ``.to(device)`` method or a tuple of tensors.
        loss: ``loss(model, batch)`` returns the scalar to minimise.
        epochs, lr, clip: the optimisation budget; ``clip`` bounds the gradient's norm.
        device: where to train; by default where the model already is.

    Returns:
        ``{"loss": [mean loss of each epoch], "step_loss": [loss of every step], "seconds": [wall
        time of each epoch]}``.

    Taught in chapter 1 (the memory task); every later model trains with it.
    """
    device = model_device(model) if device is None else torch.device(device)
    model.to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    history = {"loss": [], "step_loss": [], "seconds": []}
    was_training = model.training
    model.train()
    bar = tqdm(range(epochs), desc="training", file=sys.stdout, disable=not progress_enabled())
    for epoch in bar:
        start, epoch_losses = time.perf_counter(), []
        for batch in batches(epoch):
            value = loss(model, _to(batch, device))
            optimizer.zero_grad()
            value.backward()
            nn.utils.clip_grad_norm_(model.parameters(), clip)
            optimizer.step()
            epoch_losses.append(value.item())
        history["step_loss"] += epoch_losses
        history["loss"].append(sum(epoch_losses) / max(len(epoch_losses), 1))
        history["seconds"].append(time.perf_counter() - start)
        bar.set_postfix(loss=f"{history['loss'][-1]:.3f}")
    model.train(was_training)
    return history


def _to(batch, device):
    if isinstance(batch, tuple):  # a tuple of tensors; None (an image batch's lengths) stays None
        return tuple(None if t is None else t.to(device) for t in batch)
    return batch.to(device)


def train_seq2seq(
    model: nn.Module,
    pairs: list,
    src_vocab,
    tgt_vocab,
    epochs: int = 10,
    batch_size: int = 64,
    lr: float = 3e-3,
    clip: float = 1.0,
    seed: int = 0,
    device: torch.device | str | None = None,
    loss_fn=sequence_nll,
    batch_loss=None,
    make_batches=iterate_batches,
) -> dict:
    """Train with teacher forcing: :func:`fit` over a fresh shuffle of ``pairs`` every epoch.

    Args:
        model: called as ``model(src, src_lengths, tgt_in) -> log_probs (B, T, V)``.
        pairs: training pairs ``(source tokens, target tokens)``.
        src_vocab, tgt_vocab: :class:`seqlab.data.Vocab` of each side.
        epochs, batch_size, lr, clip: the optimisation budget.
        seed: seeds the order of the pairs in each epoch (``seed + epoch``), so a run can be repeated.
        device: where to train; by default where the model already is.
        loss_fn: ``(log_probs, tgt_out) -> scalar``, by default :func:`sequence_nll`.
        batch_loss: ``(model, batch) -> scalar``, for a loss that needs more than the log-probabilities
            (the pointer-generator's coverage term); replaces ``loss_fn`` when given.
        make_batches: ``(pairs, src_vocab, tgt_vocab, batch_size, shuffle, seed)`` → batches; by
            default :func:`seqlab.data.iterate_batches`.

    Returns:
        :func:`fit`'s history: ``{"loss": [...], "step_loss": [...], "seconds": [...]}``.

    Taught in chapter 3.
    """
    if batch_loss is None:

        def batch_loss(model, batch):
            return loss_fn(model(batch.src, batch.src_lengths, batch.tgt_in), batch.tgt_out)

    def batches(epoch):
        return make_batches(pairs, src_vocab, tgt_vocab, batch_size, shuffle=True, seed=seed + epoch)

    return fit(model, batches, batch_loss, epochs=epochs, lr=lr, clip=clip, device=device)


@torch.no_grad()
def evaluate(
    model: nn.Module,
    pairs: list,
    src_vocab,
    tgt_vocab,
    max_len: int | None = None,
    beam_size: int = 1,
    batch_size: int = 256,
    device: torch.device | str | None = None,
) -> dict:
    """Measure a trained model on ``pairs``, on the model's own device, in evaluation mode (its mode is
    restored afterwards).

    ``device`` is accepted for notebooks written for earlier versions, which passed it: when given, it
    must be the model's device (the model is never moved).

    Returns:
        ``token_accuracy``: teacher-forced, the fraction of real target tokens (eos included) that are
        the model's most likely next token; ``exact_match``: the fraction of decoded outputs equal to
        the reference; ``bleu``: corpus BLEU (sacrebleu, 0-100) of decoded outputs on whitespace
        tokens; ``outputs``: the decoded token lists. Decoding is greedy, or beam search when
        ``beam_size > 1``.

    Taught in chapter 3.
    """
    device = check_model_device(model, device)
    if max_len is None:
        max_len = max(len(tgt) for _, tgt in pairs) + 2
    correct = total = exact = 0
    outputs = []
    with evaluating(model):
        for begin in range(0, len(pairs), batch_size):
            chunk = pairs[begin : begin + batch_size]
            batch = make_seq2seq_batch(chunk, src_vocab, tgt_vocab).to(device)
            predicted = model(batch.src, batch.src_lengths, batch.tgt_in).argmax(dim=2)  # (B, T)
            correct += ((predicted == batch.tgt_out) & batch.tgt_mask).sum().item()
            total += batch.tgt_mask.sum().item()
            if beam_size > 1:
                decoded = model.beam_search(batch.src, batch.src_lengths, max_len, beam_size=beam_size)
            else:
                decoded = model.greedy_decode(batch.src, batch.src_lengths, max_len)
            for ids, (_, reference) in zip(decoded.tolist(), chunk):
                tokens = tgt_vocab.decode(ids)  # stops at eos, drops padding
                outputs.append(tokens)
                exact += tokens == list(reference)
    hypotheses = [" ".join(t) for t in outputs]
    references = [" ".join(tgt) for _, tgt in pairs]
    # force: our text is tokenized on purpose, so sacrebleu need not warn that it "looks tokenized".
    bleu = sacrebleu.corpus_bleu(hypotheses, [references], tokenize="none", force=True).score
    return {
        "token_accuracy": correct / total,
        "exact_match": exact / len(pairs),
        "bleu": bleu,
        "outputs": outputs,
    }
