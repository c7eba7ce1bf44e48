"""The answer runner (tests/answer_runner.py) on tiny made-up exercises: forked and unforked runs give the same
verdicts from the same state, a remembered training trains the notebook's own objects, a test cell that writes
to stderr fails as the grader fails it, and no cell can keep the runner past its limits.

No exercise and no real training here: each plan is a few cells of a fake exercise, run by the runner as the
buggy-answer files run it (its own process), in a few seconds.
"""

import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
import answer_runner  # noqa: E402 (tests/ is on the path, as for buggy_answers.py)

RUNNER = Path(__file__).with_name("answer_runner.py")
HANG = 120  # seconds: a runner that takes this long on a plan of trivial cells has hung
STDERR = "wrote to stderr (a test must stay silent)"


def locked(source: str) -> dict:
    return {"kind": "locked", "grade_id": None, "graded": source, "visible": source}


def answer(grade_id: str, source: str) -> dict:
    return {"kind": "answer", "grade_id": grade_id, "graded": source}


def check_cell(grade_id: str, graded: str, visible: str | None = None) -> dict:
    return {"kind": "test", "grade_id": grade_id, "graded": graded, "visible": graded if visible is None else visible}


def run_plan(folder: Path, name: str, cells: list, students: dict, **env: str) -> dict:
    """The runner's verdicts on one plan, run as tests/buggy_answers.py runs it; its whole process group is
    killed if it hangs (a forked child included)."""
    plan, out = folder / f"{name}.json", folder / f"{name}-verdicts.json"
    plan.write_text(json.dumps({"cells": cells, "students": students}))
    environ = dict(os.environ, OMP_NUM_THREADS="1", SEQLAB_PROGRESS="0", **env)
    runner = subprocess.Popen(
        [sys.executable, str(RUNNER), str(plan), str(out)],
        cwd=folder,
        env=environ,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = runner.communicate(timeout=HANG)
    except subprocess.TimeoutExpired:
        os.killpg(runner.pid, signal.SIGKILL)
        runner.communicate()
        pytest.fail(f"the runner hung on {name} ({HANG} s)")
    assert runner.returncode == 0, f"the runner failed:\n{stdout}\n{stderr}"
    return json.loads(out.read_text())


# ---------------------------------------------------------------------------------------------------
# 1 and 3: forked or not, every run goes on from the state its own cells give

STATE_CELLS = [
    locked(
        "import os, random\n"
        "import numpy, torch\n"
        "torch.set_default_dtype(torch.float64)\n"
        "torch.manual_seed(0)\n"
        "random.seed(0)\n"
        "numpy.random.seed(0)\n"
        "draws = torch.rand(3)  # the generators move before the runs part"
    ),
    # Forking becomes unsafe in the middle of the run, as it does where a cell initialises CUDA: the runner
    # decided before the first cell, and must not switch to running runs alone inside this one.
    locked('os.environ["SEQLAB_RUNNER_FORK"] = "0"'),
    answer("answer", "def f(x):\n    return x + 1"),
    check_cell(
        "report",
        "state = (str(torch.get_default_dtype()), torch.is_grad_enabled(), torch.rand(2).tolist(), random.random(),"
        " float(numpy.random.rand()))\n"
        "assert f(1) == 2\n"
        "raise AssertionError(repr(state))",
        "state = (str(torch.get_default_dtype()), torch.is_grad_enabled(), torch.rand(2).tolist(), random.random(),"
        " float(numpy.random.rand()))\n"
        "assert f(1) == 2\n"
        "raise AssertionError(repr(state))  # the release's form",
    ),
]
STATE_STUDENTS = {
    "control": {},
    "stateful": {
        "answer": "torch.set_default_dtype(torch.float32)\n"
        "torch.set_grad_enabled(False)\n"
        "torch.rand(5), random.random(), numpy.random.rand()\n"
        "def f(x):\n    return x + 1"
    },
    "another": {"answer": "def f(x):\n    return 1 + x"},
}


def seeded_state() -> str:
    """What the report cell raises for an answer that leaves the state alone: computed here, not by the runner."""
    generator = torch.Generator().manual_seed(0)
    torch.rand(3, generator=generator, dtype=torch.float64)
    values = torch.rand(2, generator=generator, dtype=torch.float64).tolist()
    import numpy

    state = ("torch.float64", True, values, random.Random(0).random(), float(numpy.random.RandomState(0).rand()))
    return f"AssertionError: {state!r}"


def test_forked_and_unforked_runs_give_the_same_verdicts(tmp_path):
    forked = run_plan(tmp_path, "forked", STATE_CELLS, STATE_STUDENTS, SEQLAB_RUNNER_FORK="1")
    alone = run_plan(tmp_path, "alone", STATE_CELLS, STATE_STUDENTS, SEQLAB_RUNNER_FORK="0")
    assert forked == alone
    expected = seeded_state()
    for student in ("control", "another"):
        for form in ("graded", "visible"):
            assert forked[student][form] == {"tests": {"report": expected}, "cells": {}}, (student, form)
    stateful = forked["stateful"]["graded"]["tests"]["report"]
    assert stateful.startswith("AssertionError: ('torch.float32', False, "), stateful


RANDOM_CELLS = [
    locked("import random, torch\nrandom.seed(1)\nrandom.random()"),
    answer("answer", "def f(x):\n    return x + 1"),
    # no generator is seeded after the runs part: each run draws from the state its cells left
    check_cell(
        "draw",
        "raise AssertionError(repr((random.random(), torch.rand(1).item())))",
        "raise AssertionError(repr((random.random(), torch.rand(1).item())))  # the release's form",
    ),
]
RANDOM_STUDENTS = {"control": {}, "another": {"answer": "def f(x):\n    return 1 + x"}, "third": {"answer": "f = abs"}}


def test_unseeded_draws_after_the_split_are_the_same_forked_or_not(tmp_path):
    python = random.Random(1)
    python.random()
    expected = f"AssertionError: ({python.random()!r}, "
    for fork in ("1", "0"):
        verdicts = run_plan(tmp_path, f"random-{fork}", RANDOM_CELLS, RANDOM_STUDENTS, SEQLAB_RUNNER_FORK=fork)
        draws = {run["tests"]["draw"] for runs in verdicts.values() for run in runs.values()}
        # torch's generator is where the process started it (its seed differs from one process to the next)
        assert len(draws) == 1, (fork, draws)
        assert draws.pop().startswith(expected), fork


# ---------------------------------------------------------------------------------------------------
# 2: a remembered training trains the model's own objects

CALLS = []


def fake_train(model, steps: int, lr: float = 0.1) -> dict:
    """Trains ``model`` in place (SGD on draws of the global generator, a few steps of a 3-by-3 model) and
    leaves it in evaluation mode, as a trainer of the course is free to."""
    CALLS.append(steps)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    model.train()
    for _ in range(steps):
        optimizer.zero_grad()
        loss = model(torch.randn(4, 3)).pow(2).mean()
        loss.backward()
        optimizer.step()
    model.eval()
    return {"loss": loss.item()}


def tied_model():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.BatchNorm1d(3), torch.nn.Linear(3, 3))
    model[2].weight = model[0].weight  # a shared weight
    return model


def test_a_remembered_training_trains_the_objects_the_notebook_holds(tmp_path):
    train = answer_runner.remembered(fake_train, str(tmp_path))
    CALLS.clear()
    with torch.random.fork_rng():
        fresh = tied_model()
        torch.manual_seed(1)
        history = train(fresh, 3)
        after_fresh = torch.rand(2)

        model = tied_model()
        encoder, weight, norm, mean = model[0], model[0].weight, model[1], model[1].running_mean
        storage = weight.data_ptr()
        torch.manual_seed(1)
        assert train(model, 3) == history
        assert CALLS == [3], "the second call trained again: it was not remembered"
        assert torch.equal(torch.rand(2), after_fresh), "the generators are not where the training left them"
    assert model[0] is encoder and model[1] is norm and model[1].running_mean is mean
    assert model[0].weight is weight and model[2].weight is weight and weight.data_ptr() == storage
    trained = dict(fresh.named_parameters())
    for name, parameter in model.named_parameters():
        assert torch.equal(parameter, trained[name]), name
        assert torch.equal(parameter.grad, trained[name].grad), name
    for (name, buffer), (_, reference) in zip(model.named_buffers(), fresh.named_buffers()):
        assert torch.equal(buffer, reference), name
    assert [m.training for m in model.modules()] == [m.training for m in fresh.modules()] == [False] * 4
    x = torch.ones(2, 3)
    assert torch.equal(encoder(x), fresh[0](x)), "what the notebook took before training is not trained"


# ---------------------------------------------------------------------------------------------------
# 4: stderr fails a test cell, as in the grader; a cell cannot outlast its limits

CHATTY = 'import warnings\n\n\ndef speak():\n    warnings.warn("chatty speaks")  # shown once per place: here\n'
WARNING_STUDENTS = {
    "control": {},
    "warner": {"answer": 'import warnings\ndef f():\n    warnings.warn("careful")\n    return 1'},
    # the warning is shown from a module that every run imports once: its record of it outlives a run
    "chatty": {"answer": "import chatty\ndef f():\n    chatty.speak()\n    return 1"},
    # shown in its own cell first; the grader calls f from the test with the warnings shown afresh
    "warns_in_its_own_cell": {
        "answer": 'import warnings\ndef f():\n    warnings.warn("mind the step")\n    return 1\nf()'
    },
    "prints_to_stderr": {"answer": 'import sys\ndef f():\n    print("debug", file=sys.stderr)\n    return 1'},
    # the default filters hide it, in the grader's kernel too: nothing written, nothing lost
    "pending": {
        "answer": 'import warnings\ndef f():\n    warnings.warn("later", PendingDeprecationWarning)\n    return 1'
    },
}


def warning_cells(folder: Path) -> list:
    return [
        locked(
            f"import sys, warnings\nsys.path.insert(0, {str(folder)!r})\n"
            'warnings.filterwarnings("once", message="careful")  # each run shows it once'
        ),
        answer("answer", "def f():\n    return 1"),
        check_cell("test_f", "assert f() == 1", "assert f() == 1  # the release's form"),
    ]


@pytest.mark.parametrize("fork", ["1", "0"])
def test_a_test_cell_that_writes_to_stderr_fails(tmp_path, fork):
    (tmp_path / "chatty.py").write_text(CHATTY)
    verdicts = run_plan(tmp_path, "warnings", warning_cells(tmp_path), WARNING_STUDENTS, SEQLAB_RUNNER_FORK=fork)
    first_lines = {
        "warner": "UserWarning: careful",
        "chatty": "UserWarning: chatty speaks",
        "warns_in_its_own_cell": "UserWarning: mind the step",
        "prints_to_stderr": f"{STDERR}: debug",
    }
    for student, runs in verdicts.items():
        for form, run in runs.items():
            assert run["cells"] == {}, (student, form)
            verdict = run["tests"]["test_f"]
            if student in first_lines:
                assert verdict is not None and verdict.startswith(STDERR), (student, form, verdict)
                assert first_lines[student] in verdict, (student, form, verdict)
            else:
                assert verdict is None, (student, form, verdict)


TIMEOUT_CELLS = [answer("answer", "def f():\n    return 1"), check_cell("test_f", "assert f() == 1")]
TIMEOUT_STUDENTS = {
    "control": {},
    "spins_through_except_exception": {
        "answer": "def f():\n    while True:\n        try:\n            pass\n"
        "        except Exception:\n            pass"
    },
    # swallows its first three interrupts, whatever they are, then spins: it is interrupted again and again
    "swallows_interrupts": {
        "answer": "def f():\n    for _ in range(3):\n        try:\n            while True:\n                pass\n"
        "        except BaseException:\n            pass\n    while True:\n        pass"
    },
    "sleeps": {"answer": "import time\ndef f():\n    time.sleep(3600)\n    return 1"},
}


def test_no_cell_outlasts_its_limits(tmp_path):
    limits = {"SEQLAB_RUNNER_CELL_SECONDS": "1", "SEQLAB_RUNNER_WALL_SECONDS": "5"}
    verdicts = run_plan(tmp_path, "timeouts", TIMEOUT_CELLS, TIMEOUT_STUDENTS, **limits)
    for form in ("graded", "visible"):
        assert verdicts["control"][form]["tests"]["test_f"] is None
        # a spinning cell meets the CPU limit first, or the watchdog where the machine is very busy
        for student in ("spins_through_except_exception", "swallows_interrupts"):
            verdict = verdicts[student][form]["tests"]["test_f"]
            assert verdict and verdict.startswith("CellTimeout: the cell ran for more than "), (student, verdict)
        assert verdicts["sleeps"][form]["tests"]["test_f"] == "CellTimeout: the cell ran for more than 5 s (wall clock)"
