"""`make bench`: seqlab's speed where people wait, side by side with references, in one process.

Measured, each as the median of interleaved rounds (ours, theirs, ours, theirs, ...), so that a
change in the machine's load hits both sides alike:

1. seqlab.models.rnn's LSTM and GRU against torch.nn's, forward + backward, with and without ``lengths=``;
2. a training step (forward, loss, backward, Adam, clipping) of seqlab's Seq2Seq and AttentionSeq2Seq
   against d2l's chapter models (benchmarks/d2l_reference.py) at d2l's sizes, and greedy decoding;
3. the attention models' training step against the source length S (T fixed);
4. ``seqlab grade`` on one notebook and on a student's whole set of exercises (``--grading``).

Times are the process's CPU time on a CPU (with one thread, what the work costs, whatever else runs on
the machine) and the wall clock on a GPU; ``seqlab grade`` is timed on the wall clock, as a student waits.

Writes benchmarks/results/latest.md (the tables) and benchmarks/results/time_vs_length.png, and prints
the tables. Ratios are seqlab's time over the reference's: below 1 is faster.

    python benchmarks/bench.py [--device cuda] [--rounds 7] [--grading] [--quick]
"""

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
from torch import nn

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import d2l_reference as d2l  # noqa: E402  (benchmarks/ is not a package)

from seqlab.experiments.train import sequence_nll  # noqa: E402
from seqlab.models import rnn  # noqa: E402
from seqlab.models.seq2seq import AttentionSeq2Seq, Seq2Seq  # noqa: E402

ROOT = HERE.parent


def clock(device):
    """The timer: on a GPU the wall clock (the work is the device's; we wait for it), on a CPU this
    process's CPU time, which other programs on a busy machine do not inflate (wall time did, 2-4x, while
    the CPU times of the same code agreed within a few percent)."""
    return time.perf_counter if device.type == "cuda" else time.process_time


def interleaved(functions: dict, rounds: int, device) -> dict:
    """Median seconds of each function, called in turn ``rounds`` times (after one warm-up call each)."""
    times = {name: [] for name in functions}
    now = clock(device)
    for warm_up in functions.values():
        warm_up()
    for _ in range(rounds):
        for name, function in functions.items():
            if device.type == "cuda":
                torch.cuda.synchronize()
            start = now()
            function()
            if device.type == "cuda":
                torch.cuda.synchronize()
            times[name].append(now() - start)
    return {name: statistics.median(values) for name, values in times.items()}


def random_batch(B, S, T, V, device, generator):
    src = torch.randint(4, V, (B, S), generator=generator)
    src_lengths = torch.randint(max(1, S // 2), S + 1, (B,), generator=generator)
    src_lengths[0] = S
    src = src.masked_fill(torch.arange(S)[None, :] >= src_lengths[:, None], 0)
    tgt = torch.randint(4, V, (B, T + 1), generator=generator)
    tgt[:, 0] = 1  # <bos>
    return src.to(device), src_lengths.to(device), tgt[:, :-1].to(device), tgt[:, 1:].to(device)


def training_step(model, loss_of, batch):
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

    def step():
        src, src_lengths, tgt_in, tgt_out = batch
        loss = loss_of(model(src, src_lengths, tgt_in), tgt_out)
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()

    return step


def seqlab_models(V, device):
    sizes = dict(embedding_size=256, hidden_size=256, num_layers=2, bidirectional=False, dropout=0.2)
    return {
        "attention": AttentionSeq2Seq(V, V, scorer="additive", **sizes).to(device),
        "vanilla": Seq2Seq(V, V, **sizes).to(device),
    }


def d2l_models(V, device):
    return {"attention": d2l.BahdanauSeq2Seq(V).to(device), "vanilla": d2l.VanillaSeq2Seq(V).to(device)}


def bench_rnn(device, rounds) -> list:
    B, S, I, H = 64, 50, 128, 128
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(B, S, I, generator=generator).to(device).requires_grad_()
    lengths = torch.randint(1, S + 1, (B,), generator=generator)
    lengths[0] = S
    rows = []
    for kind, ours_class, torch_class in [("LSTM", rnn.LSTM, nn.LSTM), ("GRU", rnn.GRU, nn.GRU)]:
        theirs = torch_class(I, H, batch_first=True).to(device)
        ours = ours_class(I, H).to(device)
        ours.load_state_dict(theirs.state_dict())
        for with_lengths in (False, True):

            def run_ours(ours=ours, with_lengths=with_lengths):
                out, _ = ours(x, lengths=lengths if with_lengths else None)
                out.sum().backward()

            def run_torch(theirs=theirs, with_lengths=with_lengths):
                if with_lengths:
                    packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
                    out, _ = theirs(packed)
                    out, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=S)
                else:
                    out, _ = theirs(x)
                out.sum().backward()

            t = interleaved({"ours": run_ours, "torch": run_torch}, rounds, device)
            label = f"{kind}, {'lengths= (packed in torch)' if with_lengths else 'no padding'}"
            rows.append((label, t["ours"], t["torch"]))
    return rows


def bench_models(device, rounds, V=200, B=128, S=9, T=9) -> list:
    generator = torch.Generator().manual_seed(0)
    batch = random_batch(B, S, T, V, device, generator)
    torch.manual_seed(0)
    ours, theirs = seqlab_models(V, device), d2l_models(V, device)
    rows = []
    for name in ("attention", "vanilla"):
        t = interleaved(
            {
                "ours": training_step(ours[name], sequence_nll, batch),
                "d2l": training_step(theirs[name], d2l.loss, batch),
            },
            rounds,
            device,
        )
        rows.append((f"training step, {name}", t["ours"], t["d2l"]))
    src, src_lengths = batch[0], batch[1]
    for name in ("attention", "vanilla"):
        ours[name].eval(), theirs[name].eval()
        t = interleaved(
            {
                "ours": lambda m=ours[name]: m.greedy_decode(src, src_lengths, max_len=T),
                "d2l": lambda m=theirs[name]: d2l.greedy_decode(m, src, src_lengths, max_len=T),
            },
            rounds,
            device,
        )
        rows.append((f"greedy decoding, {name} (untrained: every row runs {T} steps)", t["ours"], t["d2l"]))
    return rows


def bench_lengths(device, rounds, lengths, V=200, B=128, T=10) -> list:
    rows = []
    for S in lengths:
        generator = torch.Generator().manual_seed(S)
        batch = random_batch(B, S, T, V, device, generator)
        torch.manual_seed(0)
        ours, theirs = seqlab_models(V, device)["attention"], d2l_models(V, device)["attention"]
        t = interleaved(
            {"ours": training_step(ours, sequence_nll, batch), "d2l": training_step(theirs, d2l.loss, batch)},
            rounds,
            device,
        )
        rows.append((S, t["ours"], t["d2l"]))
    return rows


def bench_grading(rounds) -> list:
    seqlab_command = shutil.which("seqlab") or str(Path(sys.executable).parent / "seqlab")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        one = Path(tmp) / "one"
        one.mkdir()
        shutil.copy(ROOT / "solutions/ex01_lstm_cell/ex01_lstm_cell.ipynb", one)
        everything = Path(tmp) / "all"
        for notebook in sorted((ROOT / "solutions").glob("*/*.ipynb")):
            (everything / notebook.parent.name).mkdir(parents=True)
            shutil.copy(notebook, everything / notebook.parent.name)
        for label, target in [("one notebook (ex01)", one / "ex01_lstm_cell.ipynb"), ("a student's set", everything)]:
            times = []
            for _ in range(max(1, rounds // 3)):
                start = time.perf_counter()
                done = subprocess.run(
                    [seqlab_command, "grade", str(target), "--course", str(ROOT)], capture_output=True
                )
                times.append(time.perf_counter() - start)
                if done.returncode != 0:
                    print(done.stdout.decode()[-2000:], done.stderr.decode()[-2000:])
                    raise SystemExit(f"seqlab grade {target} failed with exit status {done.returncode}")
            rows.append((f"seqlab grade, {label}", statistics.median(times)))
    return rows


def markdown(title, header, rows) -> str:
    lines = [f"### {title}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f}"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds per measurement")
    parser.add_argument("--grading", action="store_true", help="also time seqlab grade (a minute or two)")
    parser.add_argument("--quick", action="store_true", help="one round, short lengths: checks the script runs")
    parser.add_argument("--out", type=Path, default=HERE / "results", help="where the tables and the plot go")
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    rounds = 1 if args.quick else args.rounds
    lengths = (9, 20) if args.quick else (9, 20, 40, 80)

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    context = (
        f"{platform.node()}, {platform.processor() or platform.machine()}, torch {torch.__version__} on {device}, "
        f"{torch.get_num_threads()} thread(s), load average at the start {load:.2f}; "
        f"medians of {rounds} interleaved rounds, "
        + ("wall time" if device.type == "cuda" else "the process's CPU time (seqlab grade: wall time)")
    )
    report = ["## seqlab benchmark", "", context, ""]
    rows = bench_rnn(device, rounds)
    report.append(
        markdown(
            "seqlab.models.rnn against torch.nn: forward + backward, B=64, S=50, I=H=128",
            ["layer", "seqlab ms", "torch.nn ms", "ratio"],
            [(label, ms(a), ms(b), f"{a / b:.2f}") for label, a, b in rows],
        )
    )
    rows = bench_models(device, rounds)
    report.append(
        markdown(
            "seqlab against d2l 1.0.3's chapter models: B=128, E=H=256, 2-layer GRU, dropout 0.2, S=T=9, V=200",
            ["what", "seqlab ms", "d2l ms", "ratio"],
            [(label, ms(a), ms(b), f"{a / b:.2f}") for label, a, b in rows],
        )
    )
    length_rows = bench_lengths(device, rounds, lengths)
    report.append(
        markdown(
            "Training step of the attention models against the source length S (T=10, B=128)",
            ["S", "seqlab ms", "d2l ms", "ratio"],
            [(S, ms(a), ms(b), f"{a / b:.2f}") for S, a, b in length_rows],
        )
    )
    if args.grading:
        rows = bench_grading(rounds)
        report.append(
            markdown(
                "seqlab grade (wall time, one process each)",
                ["what", "seconds"],
                [(label, f"{t:.1f}") for label, t in rows],
            )
        )
    text = "\n".join(report)
    print(text)
    args.out.mkdir(parents=True, exist_ok=True)
    suffix = "" if device.type == "cpu" else f"-{device.type}"
    (args.out / f"latest{suffix}.md").write_text(text)
    plot_lengths(length_rows, args.out / f"time_vs_length{suffix}.png", context)


def plot_lengths(rows, path, context) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    S = [row[0] for row in rows]
    ax.plot(S, [row[1] * 1e3 for row in rows], "o-", label="seqlab AttentionSeq2Seq")
    ax.plot(S, [row[2] * 1e3 for row in rows], "s--", label="d2l Bahdanau (reference)")
    ax.set_xlabel("source length S (T = 10)")
    ax.set_ylabel("ms per training step")
    ax.set_title("Training step against source length", fontsize=11)
    ax.legend()
    fig.text(0.01, 0.01, context, fontsize=5)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
