"""Chapter 6's coverage experiment (section 6.7) repeated over (data seed, model seed) pairs.

The chapter trains its four summarisers once, on data seed 0 and model seed 0, within its 60 s budget.
Whether what that one run shows holds on other data and other initial weights takes more runs than the
budget allows, so this script makes them, with the chapter's code, sizes and budget, and writes what the
chapter reads: ``book/runs/coverage_seeds.json``, beside this script. For each pair, each model's ROUGE-1/2/L,
OOV recall, repeated 3-grams and parameter count, and the paired ROUGE-1 differences of the comparisons
the chapter makes (the models of one pair are scored on the same test stories: the mean of the per-story
differences and its standard error, ``seqlab.experiments.claims.paired_gap``).

    OMP_NUM_THREADS=1 .venv/bin/python book/runs/coverage_seeds.py            # 6 pairs, about 4 minutes of CPU
    .venv/bin/python book/runs/coverage_seeds.py --quick --out /tmp/x.json    # a small run, for the test

A pair's data seed makes the stories and their split, its model seed the initial weights and the order of
the batches, as in the chapter (where both are 0).
"""

import argparse
import copy
import json
import time
from pathlib import Path

import torch
from rouge_score import rouge_scorer

import seqlab
from seqlab import data
from seqlab.experiments import claims
from seqlab.models.pointer import PointerGenerator, pointer_loss
from seqlab.models.seq2seq import AttentionSeq2Seq
from seqlab.experiments.summary import summarise, summary_quality
from seqlab.experiments.train import evaluate, train_seq2seq

HERE = Path(__file__).resolve().parent
MODELS = ("baseline", "pointer-generator", "PG + coverage, last epoch", "PG + coverage, from the start")
# (a, b): the paired ROUGE-1 difference a − b is recorded.
COMPARISONS = (
    ("pointer-generator", "baseline"),
    ("PG + coverage, from the start", "pointer-generator"),
    ("PG + coverage, last epoch", "pointer-generator"),
    ("PG + coverage, from the start", "PG + coverage, last epoch"),
)


def rouge1_per_story(outputs: list, references: list) -> torch.Tensor:
    """ROUGE-1 F1 of each output against its reference (``seqlab.experiments.summary.rouge`` averages these)."""
    scorer = rouge_scorer.RougeScorer(["rouge1"], use_stemmer=False)
    return torch.tensor([scorer.score(" ".join(ref), " ".join(out))["rouge1"].fmeasure
                         for out, ref in zip(outputs, references, strict=True)])


def run_pair(data_seed: int, model_seed: int, stories: int = 1700, epochs: int = 3, max_len: int = 40) -> dict:
    """Section 6.7's four models on one (data seed, model seed) pair, as the chapter trains them."""
    device = seqlab.pick_device()
    pairs = data.multi_sentence_summarisation_task(stories, seed=data_seed)
    train_pairs, test_pairs = data.train_test_split(pairs, test_fraction=0.12, seed=data_seed)
    vocab = data.build_shared_vocab(train_pairs, min_freq=2)
    sizes = dict(embedding_size=32, hidden_size=64)
    pointer_training = dict(batch_loss=pointer_loss, make_batches=data.iterate_pointer_batches, device=device)
    references = [tgt for _, tgt in test_pairs]

    torch.manual_seed(model_seed)
    baseline = AttentionSeq2Seq(len(vocab), len(vocab), **sizes)
    train_seq2seq(baseline, train_pairs, vocab, vocab, epochs=epochs, seed=model_seed, device=device)
    outputs = {"baseline": evaluate(baseline, test_pairs, vocab, vocab, max_len=max_len)["outputs"]}

    def first_epochs(coverage_weight):
        torch.manual_seed(model_seed)
        model = PointerGenerator(len(vocab), coverage_weight=coverage_weight, **sizes)
        train_seq2seq(model, train_pairs, vocab, vocab, epochs=epochs - 1, seed=model_seed, **pointer_training)
        return model

    def last_epoch(model, coverage):
        if coverage:
            model.enable_coverage(1.0)
        train_seq2seq(model, train_pairs, vocab, vocab, epochs=1, seed=model_seed + epochs - 1, **pointer_training)
        return model

    pointer_generator = first_epochs(coverage_weight=0.0)
    see_schedule = copy.deepcopy(pointer_generator)
    models = {
        "pointer-generator": last_epoch(pointer_generator, coverage=False),
        "PG + coverage, last epoch": last_epoch(see_schedule, coverage=True),
        "PG + coverage, from the start": last_epoch(first_epochs(coverage_weight=1.0), coverage=True),
    }
    for name, model in models.items():
        outputs[name] = summarise(model, test_pairs, vocab, max_len=max_len)

    result = {"data_seed": data_seed, "model_seed": model_seed, "test_stories": len(test_pairs), "models": {}}
    per_story = {name: rouge1_per_story(outputs[name], references) for name in MODELS}
    for name in MODELS:
        quality = summary_quality(outputs[name], references, vocab, n=3)
        quality["parameters"] = claims.parameter_count(baseline if name == "baseline" else models[name])
        result["models"][name] = quality
    result["paired_rouge1"] = {
        f"{a} − {b}": dict(zip(("gap", "error"), claims.paired_gap(per_story[a], per_story[b]))) for a, b in COMPARISONS
    }
    return result


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--model-seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--quick", action="store_true", help="200 stories, 2 epochs, pair (0, 0) only")
    parser.add_argument("--out", type=Path, default=HERE / "coverage_seeds.json")
    args = parser.parse_args(argv)
    settings = dict(stories=200, epochs=2) if args.quick else dict(stories=1700, epochs=3)
    pairs = [(0, 0)] if args.quick else [(d, m) for d in args.data_seeds for m in args.model_seeds]
    runs = []
    for data_seed, model_seed in pairs:
        start = time.process_time()
        runs.append(run_pair(data_seed, model_seed, **settings))
        rouge1 = ", ".join(f"{name} {q['rouge1']:.3f}" for name, q in runs[-1]["models"].items())
        seconds = time.process_time() - start
        print(f"pair ({data_seed}, {model_seed}), {seconds:.0f} s of CPU: ROUGE-1 {rouge1}", flush=True)
    args.out.write_text(json.dumps({"settings": {**settings, "max_len": 40}, "runs": runs}, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
