"""Verdicts out of the student's reach: test cells run in a kernel that never runs the student's code.

Stock nbgrader runs the test cells in the kernel that ran the answer cells, so an answer cell can
decide its own verdict: rewrite the test cells with an IPython input transformer, or make
``torch.testing.assert_close`` or the course's checks no-ops. Here a notebook is graded with two kernels,
both in the sandbox:

* the **student's kernel** runs the answer cells and the student's own cells, as Jupyter did; of a test
  cell it runs only the imports and definitions (the names a later answer may use);
* the **verdict kernel** runs only the exercise's code: its locked cells (setup, data) and its test
  cells, both restored from the gradebook before grading, never a cell of the submission. There the
  names the exercise's answer cells define (``peephole_lstm_step``, ...) are :class:`Answer` proxies: calling
  one sends its arguments to the student's kernel (:func:`serve`, started there for the length of the
  test cell), runs the student's function on them, and returns what it returned.

So every assertion, every reference value, every input (the hidden ones too) and every check of the
course is computed in the verdict kernel; the student's code decides only what its own functions return
for the inputs the test gives them, which is what the test grades. What comes back is data, decoded
without pickle (:func:`decode`): tensors as raw bytes, numbers, strings, lists, tuples, dicts, and, for a
returned model, a class the course names (:data:`MODELS`) rebuilt from its arguments and weights. Gradients
flow through a call (:class:`_RemoteCall`): the backward pass runs in the student's kernel on the graph
that the forward pass built there. What the student's function prints or warns reaches the test cell's
stdout or stderr, and an exception it raises is raised in the test, as before.

Nothing of torch or seqlab is switched off while the student's code runs: each exercise asks for a variant
that neither contains (tests/test_answers_not_given.py), so an answer that hands its work to them fails.
"""

import builtins
import importlib
import io
import itertools
import json
import os
import pickle
import socket
import struct
import sys
import time
import traceback
import warnings
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import torch

__all__ = ["MODELS", "Answer", "Unsupported", "decode", "encode", "finish", "install_answers", "serve"]

LIMIT = 2**30  # the largest message (bytes) the verdict kernel accepts from the student's
CONNECT_SECONDS = 5  # how long a call waits for the student's kernel to serve (the grader waited already)
# Models a test may receive from the student's function, rebuilt in the verdict kernel from the
# arguments they were built with and their weights: the test then evaluates the course's own class.
MODELS = (
    "seqlab.models.seq2seq.Seq2Seq",
    "seqlab.models.seq2seq.AttentionSeq2Seq",
    "seqlab.models.transformer.Transformer",
)


class Unsupported:
    """What a student's function returned that the verdict kernel does not rebuild (it fails the test)."""

    def __init__(self, kind: str):
        self.kind = kind

    def __repr__(self):
        return f"<a {self.kind} from the student's kernel>"


# ---------------------------------------------------------------------------------------------------
# The wire: frames of a JSON header and raw byte blobs over a Unix socket


def _send(sock, header: dict, blobs=()) -> None:
    blobs = [bytes(b) for b in blobs]
    header = dict(header, blobs=[len(b) for b in blobs])
    head = json.dumps(header).encode()
    sock.sendall(struct.pack("!Q", len(head)) + head + b"".join(blobs))


def _read(sock, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise ConnectionError("the student's kernel closed the connection (did it die?)")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _receive(sock, limit: int = LIMIT) -> tuple:
    (size,) = struct.unpack("!Q", _read(sock, 8))
    if size > limit:
        raise ConnectionError(f"a message of {size} bytes from the student's kernel: more than {limit}")
    header = json.loads(_read(sock, size))
    sizes = header.pop("blobs", [])
    if not isinstance(sizes, list) or not all(isinstance(n, int) and 0 <= n for n in sizes) or sum(sizes) > limit:
        raise ConnectionError("a malformed message from the student's kernel")
    return header, [_read(sock, n) for n in sizes]


def _tensor_blob(t: torch.Tensor) -> tuple:
    meta = {"dtype": str(t.dtype).removeprefix("torch."), "shape": list(t.shape), "device": str(t.device)}
    meta["grad"] = t.requires_grad
    # A fresh dense copy: contiguous() keeps a view whose only dimension has size 1 and another stride
    # (``tgt_in[:, t]`` with one row), which view(torch.uint8) refuses.
    flat = t.detach().to("cpu").reshape(-1).clone(memory_format=torch.contiguous_format)
    return meta, flat.view(torch.uint8).numpy().tobytes()


def _tensor(meta: dict, blob: bytes) -> torch.Tensor:
    dtype = getattr(torch, str(meta.get("dtype")), None)
    shape = meta.get("shape")
    if not isinstance(dtype, torch.dtype) or not isinstance(shape, list) or not all(isinstance(n, int) for n in shape):
        raise ValueError("a malformed tensor from the student's kernel")
    if not blob:
        flat = torch.empty(0, dtype=dtype)
    else:
        flat = torch.frombuffer(bytearray(blob), dtype=torch.uint8).view(dtype)
    return flat.reshape(shape).to(torch.device(str(meta.get("device", "cpu"))))


# ---------------------------------------------------------------------------------------------------
# From the student's kernel to the verdict kernel: data only


def encode(value, tensors: list):
    """A JSON structure for ``value``; its tensors appended to ``tensors``. Runs in the student's kernel."""
    if isinstance(value, torch.Tensor):
        tensors.append(value)
        return {"tensor": len(tensors) - 1}
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else {"float": repr(value)}
    if isinstance(value, tuple | list):
        return {"tuple" if isinstance(value, tuple) else "list": [encode(v, tensors) for v in value]}
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"dict": {k: encode(v, tensors) for k, v in value.items()}}
    if isinstance(value, torch.dtype | torch.device):
        return {type(value).__name__: str(value)}
    name = f"{type(value).__module__}.{type(value).__qualname__}"
    if name in MODELS and hasattr(value, "_grading_arguments"):
        args, kwargs = value._grading_arguments
        state = {k: v.detach() for k, v in value.state_dict().items()}
        arguments = {"args": encode(tuple(args), tensors), "kwargs": encode(dict(kwargs), tensors)}
        return {"model": name, **arguments, "state": encode(state, tensors), "training": bool(value.training)}
    return {"object": name}


def decode(structure, tensors: list):
    """The value that :func:`encode` described; anything else becomes :class:`Unsupported`. Runs in the
    verdict kernel, on what the student's kernel sent: no pickle, no import but the course's models."""
    if structure is None or isinstance(structure, bool | int | float | str):
        return structure
    if not isinstance(structure, dict) or len(structure) == 0:
        return Unsupported("malformed value")
    if "tensor" in structure:
        return tensors[structure["tensor"]]
    if "float" in structure:
        return float(structure["float"]) if structure["float"] in ("nan", "inf", "-inf") else Unsupported("float")
    if "tuple" in structure or "list" in structure:
        items = [decode(v, tensors) for v in structure.get("tuple", structure.get("list", []))]
        return tuple(items) if "tuple" in structure else items
    if "dict" in structure:
        return {str(k): decode(v, tensors) for k, v in structure["dict"].items()}
    if "dtype" in structure:
        dtype = getattr(torch, str(structure["dtype"]).removeprefix("torch."), None)
        return dtype if isinstance(dtype, torch.dtype) else Unsupported("dtype")
    if "device" in structure:
        return torch.device(str(structure["device"]))
    if structure.get("model") in MODELS:
        return _rebuild(structure, tensors)
    return Unsupported(str(structure.get("object", "value")))


def _rebuild(structure: dict, tensors: list):
    """A course model, built by the course's own class from the student's arguments and weights."""
    module_name, _, class_name = structure["model"].rpartition(".")
    model_class = getattr(__import__(module_name, fromlist=[class_name]), class_name)
    args, kwargs = decode(structure["args"], tensors), decode(structure["kwargs"], tensors)
    state = decode(structure["state"], tensors)
    if not isinstance(args, tuple) or not isinstance(kwargs, dict) or not isinstance(state, dict):
        return Unsupported(structure["model"])
    try:
        model = model_class(*args, **kwargs)
        model.load_state_dict(state)
    except Exception:  # the arguments and weights do not make one: the test fails on the placeholder
        return Unsupported(structure["model"])
    devices = {t.device for t in state.values() if isinstance(t, torch.Tensor)}
    return model.to(devices.pop() if len(devices) == 1 else "cpu").train(bool(structure.get("training")))


# ---------------------------------------------------------------------------------------------------
# From the verdict kernel to the student's kernel: arguments, pickled (the test's own objects)


class _ArgumentPickler(pickle.Pickler):
    """Pickles a call's arguments with every tensor (module parameters too) sent apart, in order; an
    :class:`Answer` among them goes as its name (the student's function of that name)."""

    def __init__(self, file, tensors: list):
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.tensors, self.seen = tensors, {}

    def persistent_id(self, obj):
        if isinstance(obj, Answer):
            return ("answer", obj.__name__)
        if isinstance(obj, torch.Tensor):
            if id(obj) not in self.seen:
                self.seen[id(obj)] = len(self.tensors)
                self.tensors.append(obj)
            return ("tensor", self.seen[id(obj)], isinstance(obj, torch.nn.Parameter))
        return None


class _ArgumentUnpickler(pickle.Unpickler):
    def __init__(self, file, tensors: list, namespace: dict):
        super().__init__(file)
        self.tensors, self.namespace = tensors, namespace

    def persistent_load(self, pid):
        if pid[0] == "answer":
            return self.namespace[pid[1]]
        _, index, parameter = pid
        t = self.tensors[index]
        if parameter and not isinstance(t, torch.nn.Parameter):  # the graph is built on this very object
            t = self.tensors[index] = torch.nn.Parameter(t, requires_grad=t.requires_grad)
        return t


def _leaves(metas: list, blobs: list) -> list:
    """The argument tensors, rebuilt in the student's kernel as leaves (requiring grad where the test's do)."""
    tensors = []
    for meta, blob in zip(metas, blobs):
        t = _tensor(meta, blob)
        tensors.append(t.requires_grad_() if meta.get("grad") and _differentiable(meta) else t)
    return tensors


def _differentiable(meta: dict) -> bool:
    return str(meta.get("dtype")) in {"float16", "bfloat16", "float32", "float64", "complex64", "complex128"}


# ---------------------------------------------------------------------------------------------------
# The student's kernel: serve the calls of one test cell


def serve(path: str, namespace: dict) -> None:
    """Answer the verdict kernel's calls on the Unix socket ``path`` until it says ``done``.

    Runs in the student's kernel (the grader starts it there, with the user's ``globals()``).
    """
    graphs = {}  # call id -> (the call's tensors that require grad, its outputs that do), for backward
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    Path(path).unlink(missing_ok=True)
    server.bind(path)
    server.listen(4)
    restore = _record_model_arguments()
    try:
        while True:
            connection, _ = server.accept()
            with connection:
                header, blobs = _receive(connection, limit=1 << 40)
                if header.get("op") == "done":
                    return
                reply, out = _answer(header, blobs, namespace, graphs)
                _send(connection, reply, out)
    finally:
        restore()
        server.close()
        Path(path).unlink(missing_ok=True)


def _record_model_arguments():
    """While serving, every course model (:data:`MODELS`) built remembers its arguments, so that one the
    student's function returns can be rebuilt in the verdict kernel. Returns what undoes it."""
    undo = []
    for name in MODELS:
        module_name, _, class_name = name.rpartition(".")
        try:
            model_class = getattr(importlib.import_module(module_name), class_name)
        except (ImportError, AttributeError):
            continue
        original = model_class.__dict__.get("__init__")
        if original is None:
            continue

        def init(self, *args, __original=original, **kwargs):
            __original(self, *args, **kwargs)
            self._grading_arguments = (args, kwargs)

        model_class.__init__ = init
        undo.append(lambda model_class=model_class, original=original: setattr(model_class, "__init__", original))

    def restore():
        for step in reversed(undo):
            step()

    return restore


def _answer(header: dict, blobs: list, namespace: dict, graphs: dict) -> tuple:
    """One call (or backward pass) of the verdict kernel, run in the student's kernel."""
    stdout, stderr = io.StringIO(), io.StringIO()
    outputs: list = []
    try:
        # the kernel's own warning filters (as in the notebook), shown on the captured stderr
        with redirect_stdout(stdout), redirect_stderr(stderr), warnings.catch_warnings():
            with torch.set_grad_enabled(bool(header.get("grad"))):
                if header["op"] == "call":
                    structure = _call(header, blobs, namespace, graphs, outputs)
                else:
                    structure = _backward(header, blobs, graphs, outputs)
        reply = {"value": structure}
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # the student's exception, raised again in the test
        text = "".join(traceback.format_exception(error)[-6:])
        reply = {"error": [type(error).__name__, str(error)[:4000], text[-8000:]]}
        outputs = []
    metas, data = zip(*[_tensor_blob(t) for t in outputs]) if outputs else ((), ())
    reply |= {"tensors": list(metas), "stdout": stdout.getvalue()[-100_000:], "stderr": stderr.getvalue()[-100_000:]}
    return reply, list(data)


def _call(header: dict, blobs: list, namespace: dict, graphs: dict, outputs: list):
    name = header["name"]
    if name not in namespace:
        raise NameError(f"name '{name}' is not defined")
    leaves = _leaves(header["tensors"], blobs[1:])
    args, kwargs = _ArgumentUnpickler(io.BytesIO(blobs[0]), leaves, namespace).load()
    value = namespace[name](*args, **kwargs)
    structure = encode(value, outputs)
    differentiable = [t for t in outputs if t.requires_grad]
    if differentiable and any(t.requires_grad for t in leaves):
        graphs[header["id"]] = ([t for t in leaves if t.requires_grad], differentiable)
    return structure


def _backward(header: dict, blobs: list, graphs: dict, outputs: list):
    inputs, produced = graphs[header["id"]]
    grads = [_tensor(meta, blob) for meta, blob in zip(header["tensors"], blobs)]
    found = torch.autograd.grad(produced, inputs, grads, retain_graph=True, allow_unused=True)
    return encode(list(found), outputs)


# ---------------------------------------------------------------------------------------------------
# The verdict kernel: the answers' names, standing for the student's functions

_calls = itertools.count(1)


class Answer:
    """Stands, in the verdict kernel, for the function of the same name in the student's kernel."""

    def __init__(self, name: str, path: str):
        self.__name__ = self.__qualname__ = name
        self.path = path

    def __repr__(self):
        return f"<the student's {self.__name__}>"

    def __call__(self, *args, **kwargs):
        tensors: list = []
        buffer = io.BytesIO()
        _ArgumentPickler(buffer, tensors).dump((args, kwargs))
        call = {"op": "call", "name": self.__name__, "id": next(_calls), "grad": torch.is_grad_enabled()}
        if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
            result: dict = {}
            flat = _RemoteCall.apply(self, call, buffer.getvalue(), result, *tensors)
            return decode(result["structure"], list(flat[:-1]))
        structure, found, grads = self.request(call, tensors, buffer.getvalue())
        return decode(structure, [t.requires_grad_(g) if g else t for t, g in zip(found, grads)])

    def _connect(self) -> socket.socket:
        """A connection to the student's kernel, which starts serving as the test cell starts."""
        deadline = time.monotonic() + CONNECT_SECONDS
        while True:
            if os.path.exists(self.path + ".absent"):  # the grader saw the kernel end its cell unserving
                raise ConnectionError("the notebook's kernel does not answer: did an answer change how it runs cells?")
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.connect(self.path)
                return sock
            except (FileNotFoundError, ConnectionRefusedError):
                sock.close()
                if time.monotonic() > deadline:
                    raise ConnectionError("the student's kernel is not answering (is it stuck in a cell?)") from None
                time.sleep(0.02)

    def request(self, header: dict, tensors: list, first: bytes | None = None) -> tuple:
        """Send one request; write what the student's code printed, raise what it raised. Returns the
        value's structure, its tensors, and which of them require grad in the student's kernel."""
        metas, blobs = zip(*[_tensor_blob(t) for t in tensors]) if tensors else ((), ())
        with self._connect() as sock:
            _send(sock, dict(header, tensors=list(metas)), ([first] if first is not None else []) + list(blobs))
            reply, data = _receive(sock)
        sys.stdout.write(str(reply.get("stdout", "")))
        sys.stderr.write(str(reply.get("stderr", "")))
        if "error" in reply:
            raise _rebuilt_error(*reply["error"])
        metas = reply.get("tensors", [])
        if not isinstance(metas, list) or len(metas) != len(data):
            raise ConnectionError("a malformed reply from the student's kernel")
        found = [_tensor(m, b) for m, b in zip(metas, data)]
        return reply.get("value"), found, [bool(m.get("grad")) and _differentiable(m) for m in metas]


class _RemoteCall(torch.autograd.Function):
    """A call to the student's function as one node of the test's autograd graph: the backward pass runs
    in the student's kernel, on the graph its forward pass built there."""

    @staticmethod
    def forward(ctx, answer, call, arguments, result, *tensors):
        structure, found, grads = answer.request(call, list(tensors), arguments)
        result["structure"] = structure
        ctx.answer, ctx.call_id, ctx.differentiable = answer, call["id"], grads
        marker = torch.empty(0)  # so that a call that returns no tensor is a node all the same
        ctx.mark_non_differentiable(marker, *[t for t, g in zip(found, grads) if not g])
        return (*found, marker)

    @staticmethod
    def backward(ctx, *grads):
        sent = [g for g, wanted in zip(grads, ctx.differentiable) if wanted]
        structure, found, _ = ctx.answer.request({"op": "backward", "id": ctx.call_id, "grad": False}, sent)
        found = decode(structure, found)
        found = iter(found if isinstance(found, list) else [])
        needs = ctx.needs_input_grad[4:]
        return (None, None, None, None, *[next(found, None) if need else None for need in needs])


def _rebuilt_error(name: str, message: str, text: str) -> BaseException:
    """The student's exception, as the test sees it: a builtin of that name, or a RuntimeError."""
    builtin = getattr(builtins, str(name), None)
    if isinstance(builtin, type) and issubclass(builtin, Exception):
        try:
            return builtin(message)
        except Exception:
            pass
    return RuntimeError(f"{name}: {message}\n{text}")


def finish(path: str) -> None:
    """Tell the student's kernel that the test cell is over (it stops serving). Runs in the verdict
    kernel, whose sandbox sees only its own files: the socket's path cannot lead the grader elsewhere."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(5)
            sock.connect(path)
            _send(sock, {"op": "done"})
    except OSError:
        pass  # not serving, or busy in the student's code: the grader interrupts it


def install_answers(namespace: dict, names: list, path: str) -> None:
    """Bind each answer's name in the verdict kernel's namespace to an :class:`Answer`."""
    _compare_plain_tensors_only()
    for name in names:
        namespace[name] = Answer(name, path)


def _compare_plain_tensors_only() -> None:
    """Spare the verdict kernel the DTensor check of ``torch.testing.assert_close``.

    Since torch 2.13, the first ``assert_close`` imports ``torch.distributed.tensor`` (and sympy with it)
    to unwrap DTensors: 0.48 s of CPU, a tenth of what grading one notebook costs. Every tensor here is a
    plain one, the tests' own or an answer's rebuilt from its bytes, so the check can never apply; a torch
    without the flag is left as it is."""
    comparison = sys.modules.get("torch.testing._comparison")
    if getattr(comparison, "_HAS_DTENSOR", False):
        comparison._HAS_DTENSOR = False
