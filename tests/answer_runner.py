"""Run an exercise's cells for many students in one warm Python process, a fresh namespace each.

``python tests/answer_runner.py PLAN OUT``: PLAN is a JSON file ``{"cells": [...], "students": {name: {grade_id:
source}}}``; each cell is ``{"kind": "answer" | "test" | "locked", "grade_id", "graded", "visible"}``, where
``graded`` is a test cell's source as the grader runs it (hidden tests included) and ``visible`` as the student
sees it. For each student, each of the two runs ("graded", "visible") executes every code cell in notebook order
in a new namespace: locked cells as they are, answer cells with the student's source, test cells in that run's
form. A test cell passes iff it raises nothing and writes nothing to stderr (a warning shown is written there),
within ``CELL_SECONDS`` of CPU time and ``WALL_SECONDS`` of wall clock: nbgrader scores a code cell 0 for an error
or any stderr output (nbgrader.utils.determine_grade; the course's IgnorePattern has no pattern, so it removes
none). OUT gets, per student and run, ``{test grade_id: None or "ErrorType: message"}``, and the errors of other
cells under ``"cells"``.

This is what nbgrader's autograde decides per test cell, without a sandbox and two kernels per student: the
students here are the course's own realistic answers (tests/buggy_answers.py), not submissions.

Two things make it cheap, neither changing what any run computes:

* Shared beginnings run once. The runs (student, form) form a tree: two runs whose cells have had the same
  sources so far are the same computation so far. The process runs a shared stretch once, then at the first
  cell where the runs part it forks (``os.fork``), one child per other source, so each run goes on from an
  exact copy of the state (namespace, random generators, torch's settings) that running its own cells from
  the start gives (Python's ``random``, which CPython reseeds in every forked child, is copied over). The
  graded and visible runs of a student share everything up to the first test cell with a hidden block; a bug
  in a later task shares the earlier tasks' tests with the solution. Whether to fork is decided once, before
  the first cell: not where CUDA is available (a cell may initialise it, and a forked child cannot use its
  parent's CUDA) or ``SEQLAB_RUNNER_FORK=0``; then every run is run alone from the start, each from the state
  (generators, default dtype, grad mode, warnings) the process had before the first run.
* Training is remembered. ``train_seq2seq`` (the locked cell that trains a fixed model, a hidden test that
  trains one) is a deterministic function of the model's whole state, its arguments, and the random
  generators' states; a call whose fingerprint of all of those was seen before gets the model, return value and
  generator states that call left, instead of training again: the trained values are copied into the model's
  own parameters and buffers, so what a cell took from the model before training (``enc = model.encoder``,
  a shared weight) is trained too. A call whose arguments cannot be fingerprinted (a function defined in the
  notebook, say) trains as usual.

``SEQLAB_RUNNER_CELL_SECONDS`` and ``SEQLAB_RUNNER_WALL_SECONDS`` change the limits (tests/test_answer_runner.py).
"""

import builtins
import contextlib
import copy
import functools
import hashlib
import importlib
import io
import json
import os
import pickle
import random
import signal
import sys
import tempfile
import types
import warnings

# the grader's per-cell limit (nbgrader_config.py's c.Execute.timeout), counted here in CPU seconds: only a loop
# that spins reaches it, however busy the machine
CELL_SECONDS = float(os.environ.get("SEQLAB_RUNNER_CELL_SECONDS", 60))
# A watchdog for a cell that waits rather than spins (time.sleep, a blocking read): the grader's limit on a
# whole notebook (c.SandboxedExecute.total_timeout), wall clock, which a cell that computes never nears.
WALL_SECONDS = float(os.environ.get("SEQLAB_RUNNER_WALL_SECONDS", 300))
REARM_SECONDS = 0.5  # a timed-out cell is interrupted again this often until it stops
FORMS = ("graded", "visible")
TRAINERS = ("seqlab.experiments.train",)  # where train_seq2seq lives
STDERR = "wrote to stderr (a test must stay silent)"  # seqlab/grading/autograde.py's words for it

_armed = False  # whether a cell is running: a timer's signal that arrives after its cell ended does nothing


class CellTimeout(BaseException):
    """Not an Exception: a cell's ``except Exception`` must not swallow it (nor a KeyboardInterrupt, nbgrader's)."""


def _timeout(signum, _frame):
    if not _armed:
        return
    if signum == signal.SIGALRM:
        raise CellTimeout(f"the cell ran for more than {WALL_SECONDS:g} s (wall clock)")
    raise CellTimeout(f"the cell ran for more than {CELL_SECONDS:g} s of CPU time")


def _arm(on: bool) -> None:
    global _armed
    _armed = on
    signal.setitimer(signal.ITIMER_PROF, CELL_SECONDS if on else 0, REARM_SECONDS if on else 0)
    signal.setitimer(signal.ITIMER_REAL, WALL_SECONDS if on else 0, REARM_SECONDS if on else 0)


def _describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"[:2000]


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def run_cell(index: int, cell: dict, source: str, namespace: dict, record: dict) -> None:
    """Execute one cell in ``namespace``; its verdict (a test cell) or its error (another cell) into ``record``."""
    stderr = io.StringIO()
    if cell["kind"] == "test":
        # The grader calls the student's functions from a test cell each inside warnings.catch_warnings()
        # (seqlab/grading/verdict.py), which starts the warnings "shown once per place" afresh: so here.
        warnings._filters_mutated()
    try:
        try:
            _arm(True)
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(stderr):
                exec(compile(source, f"<cell {index}: {cell['grade_id'] or cell['kind']}>", "exec"), namespace)
        finally:
            _arm(False)
        outcome = None
    except BaseException as error:  # a student's cell may raise anything, SystemExit too
        outcome = _describe(error)
    finally:
        _arm(False)
    if cell["kind"] == "test":
        # nbgrader: an error, or else any output on stderr, scores the cell 0 (autograde.py's _failure words it)
        if outcome is None and stderr.getvalue():
            outcome = f"{STDERR}: {_first_line(stderr.getvalue())}"[:2000]
        record["tests"][cell["grade_id"]] = outcome
    elif outcome is not None:
        record["cells"][cell["grade_id"] or f"cell {index}"] = outcome


def new_namespace() -> dict:
    return {"__name__": "__main__", "__builtins__": builtins}


def sources_of(cells: list, answers: dict, form: str) -> list:
    """The source of every cell in one run: the student's answers, the test cells in ``form``."""
    return [answers.get(c["grade_id"], c["graded"]) if c["kind"] == "answer" else c[form] for c in cells]


def process_state() -> tuple:
    """What a run's cells may change for the process's later runs, beyond their namespace: every random
    generator (CUDA's too where it is available), torch's default dtype, grad mode and threads, the warnings'
    filters and display."""
    import torch

    with contextlib.suppress(ImportError):
        importlib.import_module("numpy")  # now, not in a run's cell: its generator is seeded at import
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else []
    return (
        (torch.get_rng_state(), cuda, *_generators()[2:]),
        (torch.get_default_dtype(), torch.is_grad_enabled(), torch.get_num_threads()),
        (list(warnings.filters), warnings.showwarning),
    )


def set_process_state(state: tuple) -> None:
    """Back to ``state`` (:func:`process_state`), a run's start: the warnings shown once shown again."""
    import torch

    generators, (dtype, grad, threads), (filters, showwarning) = state
    _set_generators(generators)
    torch.set_default_dtype(dtype)
    torch.set_grad_enabled(grad)
    torch.set_num_threads(threads)
    warnings.filters[:] = filters
    warnings.showwarning = showwarning
    warnings.onceregistry.clear()
    warnings._filters_mutated()  # every module's record of the warnings it has shown is forgotten


def run_alone(cells: list, sources: list, start: tuple) -> dict:
    """One run from the start, in this process, in a new namespace, from the process state ``start``."""
    set_process_state(start)
    namespace, record = new_namespace(), {"tests": {}, "cells": {}}
    for index, (cell, source) in enumerate(zip(cells, sources)):
        run_cell(index, cell, source, namespace, record)
    return record


def can_fork() -> bool:
    """Decided once, before the first cell: a cell may initialise CUDA, and a child forked after that cannot
    use it (so where CUDA is available, nothing is forked)."""
    if os.environ.get("SEQLAB_RUNNER_FORK", "1") == "0" or not hasattr(os, "fork"):
        return False
    import torch

    return not torch.cuda.is_available()


def in_child(work) -> dict:
    """``work()`` (a dict of JSON values) in a forked copy of this process; its result."""
    read, write = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    python_random = random.getstate()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        random.setstate(python_random)  # CPython reseeds it in a forked child (random.py, os.register_at_fork)
        os.close(read)
        status = 1
        try:
            data = json.dumps(work()).encode()
            status = 0
        except BaseException as error:
            data = json.dumps({"runner error": _describe(error)}).encode()
        with os.fdopen(write, "wb") as f:
            f.write(data)
        os._exit(status)
    os.close(write)
    with os.fdopen(read, "rb") as f:
        data = f.read()
    _, status = os.waitpid(pid, 0)
    result = json.loads(data) if data else {}
    if status != 0 or "runner error" in result:
        raise RuntimeError(f"a forked run failed (status {status}): {result.get('runner error', 'no output')}")
    return result


def explore(cells: list, sources: dict, members: list, start: int, namespace: dict, record: dict) -> dict:
    """Go on with the runs ``members`` (keys of ``sources``), whose cells before ``start`` were run here, in
    ``namespace``, with their verdicts so far in ``record``: ``{run key: record}`` at the end of each. Each
    group of runs that parts from the rest goes on in a forked child (only where :func:`can_fork`)."""
    results = {}
    for index in range(start, len(cells)):
        groups = {}
        for member in members:
            groups.setdefault(sources[member][index], []).append(member)
        if len(groups) > 1:
            *others, members = groups.values()
            for group in others:
                results |= in_child(
                    lambda group=group, index=index: explore(
                        cells, sources, group, index, namespace, copy.deepcopy(record)
                    )
                )
        run_cell(index, cells[index], sources[members[0]][index], namespace, record)
    return results | {member: record for member in members}


def run_all(cells: list, students: dict) -> dict:
    """``{student: {form: record}}`` for every student of the plan and both forms."""
    sources = {
        f"{form}\t{student}": sources_of(cells, answers, form)
        for student, answers in students.items()
        for form in FORMS
    }
    start = process_state()
    if not can_fork():
        done = {key: run_alone(cells, run, start) for key, run in sources.items()}
    else:
        set_process_state(start)
        done = explore(cells, sources, list(sources), 0, new_namespace(), {"tests": {}, "cells": {}})
    return {student: {form: done[f"{form}\t{student}"] for form in FORMS} for student in students}


def _tensor_id(value):
    import torch

    if isinstance(value, torch.Tensor):
        data = value.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
        return (
            type(value).__name__,
            str(value.dtype),
            tuple(value.shape),
            str(value.device),
            value.requires_grad,
            data,
        )
    if isinstance(value, types.ModuleType):
        return ("module", value.__name__)
    return None


class _Fingerprinter(pickle.Pickler):
    def persistent_id(self, obj):
        return _tensor_id(obj)


def _generators() -> tuple:
    """The states of every random generator a training run may draw from."""
    import torch

    numpy = sys.modules.get("numpy")
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else []
    return (torch.get_rng_state(), cuda, random.getstate(), numpy.random.get_state() if numpy else None)


def _set_generators(states: tuple) -> None:
    import torch

    torch_state, cuda, python_state, numpy_state = states
    torch.set_rng_state(torch_state)
    if cuda:
        torch.cuda.set_rng_state_all(cuda)
    random.setstate(python_state)
    if numpy_state is not None:
        sys.modules["numpy"].random.set_state(numpy_state)


def fingerprint(function, args: tuple, kwargs: dict):
    """A digest of everything a training call reads, or None when some of it cannot be pickled."""
    import torch

    settings = (torch.get_default_dtype(), torch.is_grad_enabled(), torch.get_num_threads())
    everything = (function.__module__, function.__qualname__, args, sorted(kwargs.items()), _generators(), settings)
    buffer = io.BytesIO()
    try:
        _Fingerprinter(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(everything)
    except Exception:  # a class or function of the notebook's own, a lambda: not remembered
        return None
    return hashlib.sha256(buffer.getvalue()).hexdigest()


def _grads(model) -> dict:
    return {name: parameter.grad for name, parameter in model.named_parameters()}


def _restore_in_place(model, trained) -> bool:
    """Give ``model`` the trained state of ``trained`` (its pickled copy after training), keeping every
    module, parameter and buffer object and their storage, as training in place does: parameters' values and
    grads, buffers, each module's training flag. False, and nothing changed, unless both have the same
    modules, parameters and buffers (names, shapes, dtypes, devices)."""
    import torch

    def layout(m):
        return (
            [name for name, _ in m.named_modules()],
            [(name, p.shape, p.dtype, p.device) for name, p in m.named_parameters()],
            [(name, b.shape, b.dtype, b.device) for name, b in m.named_buffers()],
        )

    if layout(model) != layout(trained):
        return False
    with torch.no_grad():
        for (_, p), (_, q) in zip(model.named_parameters(), trained.named_parameters()):
            p.copy_(q)
            p.requires_grad_(q.requires_grad)
        for (_, b), (_, c) in zip(model.named_buffers(), trained.named_buffers()):
            b.copy_(c)
    for (_, m), (_, n) in zip(model.named_modules(), trained.named_modules()):
        m.training = n.training
    return True


def remembered(function, folder: str):
    """``function(model, ...)``, which trains ``model`` in place, remembered by :func:`fingerprint` in files
    under ``folder`` (so that forked runs share them): the model, return value and generators' states it left."""

    @functools.wraps(function)
    def train(model, *args, **kwargs):
        key = fingerprint(function, (model, *args), kwargs)
        if key is None:
            return function(model, *args, **kwargs)
        path = os.path.join(folder, key)
        if not os.path.exists(path):
            result = function(model, *args, **kwargs)
            try:
                data = pickle.dumps((model, _grads(model), result, _generators()))
            except Exception:  # something the training left cannot be pickled: not remembered
                return result
            with open(path + ".part", "wb") as f:
                f.write(data)
            os.replace(path + ".part", path)
            return result
        with open(path, "rb") as f:
            trained, grads, result, states = pickle.load(f)
        if not _restore_in_place(model, trained):  # the training changed the model's layout: train again
            return function(model, *args, **kwargs)
        for name, parameter in model.named_parameters():
            parameter.grad = grads[name]  # what the last step left (pickling a parameter drops it)
        _set_generators(states)
        return result

    train.remembered = folder
    return train


def remember_training(folder: str) -> None:
    for name in TRAINERS:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        function = getattr(module, "train_seq2seq", None)
        if function is not None and not hasattr(function, "remembered"):
            module.train_seq2seq = remembered(function, folder)


def main(plan_path: str, out_path: str) -> None:
    signal.signal(signal.SIGPROF, _timeout)
    signal.signal(signal.SIGALRM, _timeout)
    with open(plan_path) as f:
        plan = json.load(f)
    remember_training(tempfile.mkdtemp(prefix="trained-", dir=os.path.dirname(os.path.abspath(out_path))))
    results = run_all(plan["cells"], plan["students"])
    with open(out_path, "w") as f:
        json.dump(results, f)


if __name__ == "__main__":
    main(*sys.argv[1:])
