"""`seqlab grade-class` on a generated class: submissions a minute with 1 and 2 Dask workers (a local
cluster), the CPU seconds each submission costs, whether every score is the one expected, and how many
gradings a second the PostgreSQL gradebook takes (what limits a cluster of many workers).

The class (48 submissions by default) is made of the course's own solutions and of the wrong, damaged and
hostile answers that the tests already generate, each with its expected score:

* from tests/test_class_cycle.py (``Exercise.submission``, whose grades per test cell follow from the
  solution's points): every exercise solved; solved but printing to stderr; the release untouched;
  answers returning an object equal to anything; a syntax error, a crash (``os._exit``), deleted or
  edited test cells in the last answer; and every kind of tests/grading_harness.py (``KINDS``: reading
  the solutions, vandalising the course, a 50 MB line, damaged metadata, a function that ends the
  kernel, an input transformer, no-op checks); the infinite loop and the
  loop that swallows its interrupt are left out (they measure ``c.Execute.timeout``, not grading);
* from tests/test_buggy_ex07.py and test_buggy_ex08.py (the first ``BUGS_PER_EXERCISE`` of each ``BUGS``):
  realistic bugs in exercises 7 and 8, which must score below full marks with the tests named there failing
  (other tests may fail too: no exact score).

Each run grades a fresh copy of the class (its own folder and PostgreSQL database, the release made by
``nbgrader generate_assignment``, not timed) with ``seqlab grade-class --jobs N``; its wall time is from
the command's start to its end (workers' start-up included). The worker counts take turns, round after
round (1, 2, 1, 2 by default), so that a change in the machine's load hits both alike; the table has the
medians. CPU seconds are those of the command and every process below it (the Dask workers, the grading
processes of the workers' self-checks, the kernels), from ``getrusage(RUSAGE_CHILDREN)``, over the
submissions graded. The gradebook's writes of a grading are counted on the server (``pg_stat_database``:
transactions and rows written per submission graded), then replayed by 4 processes at once on a copy of a
graded database (nbgrader's ``add_submission`` with every grade set, and the record of ``seqlab_graded``,
one transaction each) for ``--replay-seconds``: the gradings a second the server stores. Needs
PostgreSQL's initdb/pg_ctl (as tests/test_postgres_gradebook.py does) and bubblewrap (without it,
grading runs unsandboxed and the two attacks on the course are left out). Writes
benchmarks/results/class_grading.md and prints it.

    .venv/bin/python benchmarks/class_grading.py [--jobs 1 2] [--rounds 2] [--quick]
"""

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tests"))  # the tests' generators of answers, and their PostgreSQL server

import nbformat  # noqa: E402
import test_buggy_ex07  # noqa: E402
import test_buggy_ex08  # noqa: E402
from buggy_answers import with_bug  # noqa: E402
from grading_harness import (  # noqa: E402
    BIN,
    FIRST_EXERCISE_ONLY,
    KINDS,
    ON_THE_COURSE,
    SANDBOX_MISSING,
    autograded_score,
    gradebook_scores,
    nbgrader,
)
from postgres_server import postgres_server, query  # noqa: E402
from postgres_server import unavailable as postgres_unavailable  # noqa: E402
from test_class_cycle import EXERCISES, Exercise  # noqa: E402

# Realistic bugs of exercises 7 and 8, the first few of each file: {name: (exercise, Bug)}.
BUGS_PER_EXERCISE = 4
BUGS = {
    name: (exercise, bug)
    for exercise, module in [("ex07_attention_pooling", test_buggy_ex07), ("ex08_multihead_attention", test_buggy_ex08)]
    for name, bug in list(module.BUGS.items())[:BUGS_PER_EXERCISE]
}
ENV = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
# (what, kind): correct, partly wrong, hostile; "the late tests" are those below the last answer cell
CORRECT, PARTLY, HOSTILE = "correct", "wrong or partly wrong", "hostile or damaged"
EXPECTED = {
    "everything": "full marks",
    "nothing": "0",
    "early": "all but the late tests",
    "bug": "below full marks, the bug's tests failing",
}


def the_class(quick: bool = False) -> list:
    """``[(student, exercise, kind, category)]``: who hands in what (kind: a student of
    test_class_cycle's table, a kind of grading_harness.KINDS, or a bug of test_buggy_ex07 or ex08)."""
    if quick:
        return [
            ("perfect", EXERCISES[0], "perfect", CORRECT),
            ("untouched", EXERCISES[0], "untouched", PARTLY),
            ("transformer", EXERCISES[0], "transformer", HOSTILE),
        ]
    hands_in = [("perfect", ex, "perfect", CORRECT) for ex in EXERCISES]
    hands_in += [("stderr", ex, "stderr", CORRECT) for ex in EXERCISES[:4]]
    hands_in += [("untouched", ex, "untouched", PARTLY) for ex in EXERCISES[4:]]
    for i, kind in enumerate(["syntax", "crash", "deleted", "edited"]):
        hands_in += [(kind, EXERCISES[(2 * i + j) % len(EXERCISES)], kind, PARTLY) for j in (0, 1)]
    hands_in += [(f"bug_{name}", exercise, name, PARTLY) for name, (exercise, _) in BUGS.items()]
    hands_in += [("always_eq", ex, "always_eq", HOSTILE) for ex in EXERCISES[::2]]
    # the loop that swallows its interrupt is left out, as the infinite loop is: it runs c.Execute.timeout
    kinds = [k for k in KINDS if k != "swallows" and not (SANDBOX_MISSING and k in ON_THE_COURSE)]
    for i, kind in enumerate(kinds):
        exercise = EXERCISES[0] if kind in FIRST_EXERCISE_ONLY else EXERCISES[1 + i % (len(EXERCISES) - 1)]
        hands_in.append((kind, exercise, kind, HOSTILE))
    return hands_in


def expectation(ex: Exercise, kind: str):
    """(notebook, expected): ``{grade_id: auto score}`` for an exact score, or a bug's set of test cells
    that must fail."""
    if kind in BUGS:
        _, bug = BUGS[kind]
        return with_bug(ex.release, ex.solution, bug), bug.must_fail
    nb, expected = ex.submission(kind)
    return nb, expected | ex.written_scores(nb)  # a written answer: None for the instructor, 0 left as the stub


def outcome_of(kind: str) -> str:
    if kind in BUGS:
        return "bug"
    if kind in KINDS:
        return KINDS[kind][1]
    return {"perfect": "everything", "stderr": "everything", "untouched": "nothing", "always_eq": "nothing"}.get(
        kind, "early"
    )


def agrees(expected, graded) -> bool:
    """Whether the gradebook's ``(score, max_score, {grade_id: (auto, max)})`` is the expected one."""
    if graded is None:
        return False
    score, max_score, grades = graded
    if isinstance(expected, set):  # a bug: below full marks, its tests failing
        failing = {gid for gid, (auto, _) in grades.items() if auto == 0}
        return score < max_score and expected <= failing
    return {gid: auto for gid, (auto, _) in grades.items()} == expected and score == autograded_score(expected)


def make_course(folder: Path, db_url: str, submissions: list, exercises: dict) -> dict:
    """The class in ``folder``, its gradebook at ``db_url``; ``{(exercise, student): expected}``."""
    shutil.copy2(ROOT / "nbgrader_config.py", folder / "nbgrader_config.py")
    with open(folder / "nbgrader_config.py", "a") as f:
        f.write(f'\nc.CourseDirectory.db_url = "{db_url}"\n')
    needed = sorted({exercise for _, exercise, _, _ in submissions})
    for name in needed:
        shutil.copytree(ROOT / "solutions" / name, folder / "solutions" / name)
    nbgrader(folder, "generate_assignment", "*", "--force")
    expected = {}
    for student, exercise, kind, _ in submissions:
        nb, expected[exercise, student] = expectation(exercises[exercise], kind)
        (folder / "submitted" / student / exercise).mkdir(parents=True)
        nbformat.write(nb, folder / "submitted" / student / exercise / f"{exercise}.ipynb")
    return expected


def grade(folder: Path, jobs: int) -> dict:
    report = folder.parent / f"report-{jobs}.json"
    command = [str(BIN / "seqlab"), "grade-class", "--jobs", str(jobs), "--json", str(report)]
    command += ["--", "--Sandbox.enabled=False"] if SANDBOX_MISSING else []
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=folder, env=ENV, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    print(done.stdout[-4000:], done.stderr[-2000:], flush=True)
    if done.returncode not in (0, 1):
        raise SystemExit(f"seqlab grade-class --jobs {jobs} failed with exit status {done.returncode}")
    return json.loads(report.read_text()) | {"wall": wall, "load": load, "cpu": cpu}


def writes(server: str, database: str) -> tuple:
    """``(transactions, rows inserted, updated and deleted)`` committed in ``database`` so far."""
    ((commits, rows),) = query(
        server,
        "SELECT xact_commit, tup_inserted + tup_updated + tup_deleted FROM pg_stat_database "
        f"WHERE datname = '{database}'",
    )
    return commits, rows


def _replay(db_url: str, exercise: str, prefix: str, seconds: float) -> int:
    """Store gradings of ``exercise`` as a grading does, one after another for ``seconds``: the submission
    with every grade set (nbgrader's Gradebook), then its record (one transaction each). How many."""
    from nbgrader.api import Gradebook

    from seqlab.grading.cluster import Records

    records = Records(db_url, "seqlab")
    done, end = 0, time.perf_counter() + seconds
    with Gradebook(db_url, course_id="seqlab") as gb:
        while time.perf_counter() < end:
            student = f"{prefix}-{done}"
            gb.update_or_create_student(student)
            submission = gb.add_submission(exercise, student)
            for notebook in submission.notebooks:
                for grade in notebook.grades:
                    grade.auto_score = grade.max_score
            gb.db.commit()
            records.remember(exercise, student, ("0" * 64, "0" * 64), 1.0)
            done += 1
    records.close()
    return done


def server_cpu(server: str) -> float:
    """CPU seconds (user + system) that the PostgreSQL server at ``server`` has used: its postmaster's own
    and its ended backends' (the children it has reaped), and those of its backends alive now."""
    port = server.rsplit(":", 1)[1]
    ticks = os.sysconf("SC_CLK_TCK")
    stats = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        stats[int(stat.parent.name)] = (int(fields[1]), [int(f) for f in fields[11:15]], cmdline)
    (postmaster,) = [
        pid for pid, (_, _, cmd) in stats.items() if cmd and cmd[0].endswith(b"postgres") and port.encode() in cmd
    ]
    user, system, children_user, children_system = stats[postmaster][1]
    total = user + system + children_user + children_system
    total += sum(t[0] + t[1] for ppid, t, _ in stats.values() if ppid == postmaster)
    return total / ticks


def gradebook_rate(server: str, database: str, exercise: str, seconds: float, processes: int = 4) -> dict:
    """``processes`` writers store gradings in a copy of ``database`` for ``seconds`` (see the docstring):
    ``{"per_second": gradings stored a second, "server_cpu": the server's CPU seconds a grading}``."""
    from concurrent.futures import ProcessPoolExecutor

    copy = f"{database}_replay"
    query(server, f"CREATE DATABASE {copy} TEMPLATE {database}")
    with ProcessPoolExecutor(processes) as pool:
        before = server_cpu(server)
        start = time.perf_counter()
        counts = list(
            pool.map(_replay, *zip(*[(f"{server}/{copy}", exercise, f"w{i}", seconds) for i in range(processes)]))
        )
        wall = time.perf_counter() - start
        cpu = server_cpu(server) - before
    stored = sum(counts)
    return {"per_second": stored / wall, "server_cpu": cpu / max(stored, 1), "writers": processes}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2], help="worker counts to compare")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds (1 worker, 2 workers, 1, 2...)")
    parser.add_argument("--quick", action="store_true", help="a class of three submissions: checks the script runs")
    parser.add_argument("--out", type=Path, default=HERE / "results", help="where class_grading.md goes")
    parser.add_argument(
        "--exercises", type=int, default=len(EXERCISES), help="the class's submissions of the first N exercises only"
    )
    parser.add_argument("--replay-seconds", type=float, default=20, help="how long the gradebook's writes are replayed")
    args = parser.parse_args(argv)
    reason = postgres_unavailable()
    if reason is not None:
        raise SystemExit(f"the benchmark grades against PostgreSQL: {reason}")
    submissions = [s for s in the_class(args.quick) if s[1] in EXERCISES[: args.exercises]]
    load = os.getloadavg()[0]
    runs = {jobs: [] for jobs in args.jobs}
    with tempfile.TemporaryDirectory(prefix="seqlab-bench-class-") as tmp, postgres_server() as server:
        template = Path(tmp) / "template"
        (template / "solutions").mkdir(parents=True)
        for name in EXERCISES:
            shutil.copytree(ROOT / "solutions" / name, template / "solutions" / name)
        shutil.copy2(ROOT / "nbgrader_config.py", template)
        nbgrader(template, "generate_assignment", "*", "--force")  # the releases, in a sqlite gradebook of its own
        exercises = {name: Exercise(template, name) for name in EXERCISES}
        for round_ in range(args.rounds):
            for jobs in args.jobs:
                database = f"class_{round_}_{jobs}"
                query(server, f"CREATE DATABASE {database}")
                folder = Path(tmp) / database / "course"
                folder.mkdir(parents=True)
                expected = make_course(folder, f"{server}/{database}", submissions, exercises)
                print(
                    f"\n--- round {round_ + 1}: {len(submissions)} submissions, grade-class --jobs {jobs}", flush=True
                )
                before = writes(server, database)
                report = grade(folder, jobs)
                after = writes(server, database)
                report["writes"] = (after[0] - before[0], after[1] - before[1])
                scores = {}
                for name in sorted({exercise for _, exercise, _, _ in submissions}):
                    for student, graded in gradebook_scores(f"{server}/{database}", name).items():
                        scores[name, student] = graded
                runs[jobs].append({"report": report, "expected": expected, "scores": scores})
        exercise = submissions[0][1]  # a grading of one exercise's notebook, replayed
        replay = gradebook_rate(server, f"class_0_{args.jobs[0]}", exercise, 2 if args.quick else args.replay_seconds)
    text = markdown(submissions, runs, load, args.quick, replay)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"class_grading{'_quick' if args.quick else ''}.md").write_text(text)
    print("\n" + text)


def markdown(submissions: list, runs: dict, load: float, quick: bool, replay: dict) -> str:
    """``runs``: ``{workers: [run of each round]}``."""
    sandbox = "unsandboxed (no bubblewrap here)" if SANDBOX_MISSING else "every kernel in bubblewrap"
    threads = os.environ.get("OMP_NUM_THREADS") or "unset (grade-class gives each worker cores / workers)"
    rounds = len(next(iter(runs.values())))
    lines = [
        "## seqlab grade-class on a generated class" + (" (--quick)" if quick else ""),
        "",
        f"{platform.node()}, {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"OMP_NUM_THREADS {threads}, {sandbox}, gradebook on PostgreSQL; load average at the start {load:.2f}. "
        f"{len(submissions)} submissions of {len({s for s, *_ in submissions})} students over "
        f"{len({e for _, e, _, _ in submissions})} exercises, graded in {rounds} interleaved round(s) per worker "
        "count, each on a fresh course and database; wall time from the command's start to its end (workers' "
        "start included), the median of the rounds.",
        "",
        "| Dask workers | graded per run | failed | wall seconds (each round) | submissions a minute | speed-up "
        "| CPU seconds a submission | load average at each start | scores as expected |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    first = None
    for jobs, each in runs.items():
        walls, loads = [run["report"]["wall"] for run in each], [run["report"]["load"] for run in each]
        graded = [run["report"]["counts"].get("graded", 0) for run in each]
        failed = sum(run["report"]["counts"].get("failed", 0) for run in each)
        rate = statistics.median(g / w * 60 for g, w in zip(graded, walls))
        first = first or rate
        agreed = sum(agrees(run["expected"][k], run["scores"].get(k)) for run in each for k in run["expected"])
        cpu = statistics.median(run["report"]["cpu"] / max(g, 1) for run, g in zip(each, graded))
        lines.append(
            f"| {jobs} | {'; '.join(map(str, sorted(set(graded))))} | {failed} | {statistics.median(walls):.0f} "
            f"({', '.join(f'{w:.0f}' for w in walls)}) | {rate:.2f} | {rate / first:.2f} | {cpu:.1f} | "
            f"{', '.join(f'{load:.2f}' for load in loads)} | "
            f"{agreed} of {sum(len(run['expected']) for run in each)} |"
        )
    every = [run for each in runs.values() for run in each]
    graded = sum(run["report"]["counts"].get("graded", 0) for run in every)
    commits = sum(run["report"]["writes"][0] for run in every) / max(graded, 1)
    rows = sum(run["report"]["writes"][1] for run in every) / max(graded, 1)
    lines += [
        "",
        f"The gradebook (PostgreSQL on this machine, fsync off as in the tests): a grading committed {commits:.0f} "
        f"transactions and wrote {rows:.0f} rows (pg_stat_database, the class's runs over the submissions they "
        f"graded). Replaying a grading's writes (the submission with every grade set, then its record), "
        f"{replay['writers']} processes at once, it stored {replay['per_second']:.1f} gradings a second, the server "
        f"spending {replay['server_cpu'] * 1000:.1f} ms of CPU on each (its processes' user and system time): "
        f"one core of this server stores at most {1 / max(replay['server_cpu'], 1e-9):.0f} gradings a second.",
    ]
    lines += ["", "By kind of submission: scores as expected (all rounds):", ""]
    header = "| kind | category | submissions | expected | " + " | ".join(f"{j} worker(s)" for j in runs) + " |"
    lines += [header, "|---|---|---|---|" + "---|" * len(runs)]
    kinds = {}
    for student, exercise, kind, category in submissions:
        kinds.setdefault((category, kind), []).append((exercise, student))
    for (category, kind), keys in sorted(kinds.items()):
        cells = []
        for each in runs.values():
            agreed = sum(agrees(run["expected"][k], run["scores"].get(k)) for run in each for k in keys)
            cells.append(f"{agreed} of {len(keys) * len(each)}")
        lines.append(
            f"| {kind} | {category} | {len(keys)} | {EXPECTED[outcome_of(kind)]} | " + " | ".join(cells) + " |"
        )
    same = all(every[0]["scores"].get(k) == run["scores"].get(k) for run in every[1:] for k in every[0]["expected"])
    lines += ["", f"Every grade cell the same in every run: {'yes' if same else 'no'}."]
    failed = [
        f"- {s['student']} {s['exercise']} ({jobs} worker(s)): {s['reason']}"
        for jobs, each in runs.items()
        for run in each
        for s in run["report"]["submissions"]
        if s["status"] == "failed"
    ]
    if failed:
        lines += ["", "Failed to grade:", "", *failed]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
