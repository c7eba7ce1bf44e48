"""The course's executor for nbgrader (``c.Autograde.autograde_preprocessors`` in ``nbgrader_config.py``).

:class:`SandboxedExecute` replaces nbgrader's ``Execute``:

* every kernel runs in a bubblewrap sandbox (:mod:`seqlab.grading.sandbox`); where bubblewrap cannot
  run, grading refuses (``seqlab.grading.nbgrader_plugins.refuse_without_sandbox``) unless the instructor
  opts out with ``--Sandbox.enabled=False``;
* two kernels grade a notebook (:mod:`seqlab.grading.verdict`): the student's kernel runs the answer
  cells and the student's own cells; the verdict kernel runs the exercise's locked cells and its test
  cells, taken from the gradebook, and calls the student's functions in the other kernel; a test cell's
  outputs, and so its points, are the verdict kernel's;
* a kernel that dies (``os._exit``, a crash in compiled code) or a cell that ignores its interrupt
  (``while True: try: ... except: pass``) does not end the grading: the cell gets an error output that
  says what happened, a new kernel runs the cells above it again (their outputs are kept from the
  first run), and grading goes on below it, so the tests of correct answers keep their points;
* a cell keeps at most ``output_limit`` bytes of output and a notebook ``notebook_output_limit``
  (nbgrader's own ``LimitOutput`` counts lines, and one line can be 50 MB);
* grading stops at ``total_timeout`` seconds for the whole notebook, restarts included.
"""

import ast
import asyncio
import builtins
import contextlib
import copy
import json
import os
import time
from pathlib import Path
from queue import Empty

from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbclient.util import run_sync
from nbformat import NotebookNode
from nbgrader.api import Gradebook
from nbgrader.preprocessors import Execute
from traitlets import Bool, Integer, Unicode
from traitlets.config import Application

from seqlab.grading.repair import ExerciseCell
from seqlab.grading.sandbox import KernelSession, Sandbox, SandboxedKernelManager

__all__ = ["SandboxedExecute", "add_notes", "exercise_cells", "refuse_without_sandbox", "sandbox_settings"]

TRUNCATED = "\n[... output cut here: a cell keeps at most {limit} bytes of output]\n"
SERVE_GRACE = 3  # seconds the student's kernel gets to stop serving once a test cell is done
INTERRUPT_GRACE = 5  # and once interrupted, when it was still running the student's code


def add_notes(nb, notes: list, key: str = "notes") -> None:
    """Keep what grading repaired or met in the notebook's metadata (``seqlab.notes``), for the student's
    score table and the instructor's export."""
    nb.metadata.setdefault("seqlab", {}).setdefault(key, []).extend(notes)


def exercise_cells(gradebook, resources) -> list:
    """The exercise's :class:`ExerciseCell` list, as the gradebook recorded the release."""
    notebook = gradebook.find_notebook(resources["nbgrader"]["notebook"], resources["nbgrader"]["assignment"])
    grade = {c.name: c.max_score for c in notebook.grade_cells}
    task = {c.name: c.max_score for c in notebook.task_cells}
    solution = {c.name for c in notebook.solution_cells}
    return [
        ExerciseCell(
            name=c.name,
            cell_type=c.cell_type,
            locked=bool(c.locked),
            grade=c.name in grade,
            solution=c.name in solution,
            task=c.name in task,
            points=grade.get(c.name, task.get(c.name)),
            checksum=c.checksum,
            source=c.source,
        )
        for c in notebook.source_cells
    ]


def sandbox_settings(parent) -> tuple:
    """``(sandbox or None, note)``: the sandbox to grade in, and what to tell about it.

    Raises:
        RuntimeError: the sandbox is on but bubblewrap cannot run, and no fallback was asked for.
    """
    sandbox = Sandbox(parent=parent)
    if not sandbox.enabled:
        return None, "no sandbox (switched off with Sandbox.enabled=False): the notebook ran with the grader's rights"
    reason = sandbox.reason_unavailable()
    if reason is None:
        return sandbox, "sandboxed with bubblewrap"
    if sandbox.fallback_unsandboxed:
        return None, f"no sandbox ({reason}): the notebook ran with your rights"
    raise RuntimeError(refusal(reason))


def refusal(reason: str) -> str:
    return (
        f"seqlab: refusing to grade without a sandbox: {reason}. A student's notebook would run with your "
        "rights and could change the course, the gradebook and other submissions. Install bubblewrap, or "
        "grade unsandboxed at your own risk with --Sandbox.enabled=False"
    )


def refuse_without_sandbox(**kwargs) -> None:  # noqa: ARG001 (nbgrader passes assignment, student, notebooks)
    """nbgrader's ``pre_convert_hook``: stop ``nbgrader autograde`` before it grades anyone when the
    sandbox is on and bubblewrap cannot run. nbgrader logs and ignores an ordinary exception raised by
    a hook, so this one exits the program."""
    if not Application.initialized():
        return
    try:
        sandbox_settings(Application.instance())
    except RuntimeError as error:
        raise SystemExit(str(error)) from None


def _error_output(ename: str, evalue: str) -> NotebookNode:
    return NotebookNode(output_type="error", ename=ename, evalue=evalue, traceback=[f"{ename}: {evalue}"])


def _label(cell, index: int) -> str:
    """How notes name a cell: its grade id, or its number and first line (a student's own cell)."""
    grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
    if grade_id:
        return grade_id
    first = next((line.strip() for line in cell.source.splitlines() if line.strip()), "")
    return f"#{index + 1} ({first[:40]}{'...' if len(first) > 40 else ''})"


def _size(output) -> int:
    """Bytes of an output as the notebook stores it."""
    if output.get("output_type") == "stream":
        return len(output.get("text", "").encode(errors="replace"))
    return len(json.dumps(output, default=str))


def defined_names(source: str) -> list:
    """The names that a cell's code defines at its top level (functions, classes, assignments)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    names = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.append(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names += [t.id for t in targets if isinstance(t, ast.Name)]
    return names


def answer_names(exercise: dict) -> list:
    """The names the test cells call that the exercise's answer cells define (``peephole_lstm_step``, ...).

    They are the names the answer cells' code defines, where the gradebook kept it, and in any case
    the names the test cells use without defining them (nor the exercise's other cells, nor Python's
    builtins): a release used as the source keeps only its answers' stubs. Never names from the
    submission, which could shadow a builtin in the verdict kernel."""
    names = {n for c in exercise.values() if c.solution for n in defined_names(c.source)}
    used, bound = set(), set(dir(builtins))
    for c in exercise.values():
        if c.cell_type != "code" or c.solution:
            continue
        try:
            tree = ast.parse(c.source)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Name):
                (used if isinstance(node.ctx, ast.Load) else bound).add(node.id)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                bound.add(node.name)
            elif isinstance(node, ast.arg):
                bound.add(node.arg)
            elif isinstance(node, ast.alias):
                bound.add(node.asname or node.name.split(".")[0])
            elif isinstance(node, ast.ExceptHandler) and node.name:
                bound.add(node.name)
    return sorted(names | (used - bound))


def definitions_only(source: str) -> str:
    """A test cell's imports and definitions (functions, classes): what the student's kernel runs of it,
    so that a later answer finds the names a test cell gives it, as in Jupyter."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return ""
    kept = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return "\n\n".join(ast.get_source_segment(source, node) or "" for node in tree.body if isinstance(node, kept))


class _OutputLimits:
    """``output_limit`` bytes a cell and ``notebook_output_limit`` a notebook, for an nbclient client."""

    def _limit(self, outs, out):
        if out is None:
            return None
        if self._replaying:  # the cells run again in a new kernel keep their first run's outputs
            outs.remove(out)
            return None
        size = _size(out)
        left = min(self.output_limit - self._cell_bytes, self.notebook_output_limit - self._notebook_bytes)
        self._cell_bytes += size
        self._notebook_bytes += min(size, max(left, 0))
        if size <= left:
            return out
        outs.remove(out)
        if out.output_type == "error":  # an error always stays: it is what fails a test
            out.evalue = out.evalue[:2000]
            out.traceback = [line[:2000] for line in out.traceback[-30:]]
            outs.append(out)
            return out
        cut = TRUNCATED.format(limit=self.output_limit)
        if out.output_type == "stream" and left > 0:
            out.text = out.text.encode()[:left].decode(errors="ignore") + cut
            outs.append(out)
        elif not self._cell_cut:
            outs.append(NotebookNode(output_type="stream", name=out.get("name", "stdout"), text=cut))
        elif out.output_type == "stream" and out.name == "stderr" and not any(o.get("name") == "stderr" for o in outs):
            outs.append(NotebookNode(output_type="stream", name="stderr", text=cut))  # stderr must stay visible
        self._cell_cut = True
        return None


class _VerdictKernel(Execute):
    """The verdict kernel's client: nbgrader's executor, driven cell by cell by :class:`SandboxedExecute`
    (its ``owner``), whose output limits count its outputs too."""

    owner = None

    def output(self, outs, msg, display_id, cell_index):
        return self.owner._limit(outs, super().output(outs, msg, display_id, cell_index))


class SandboxedExecute(_OutputLimits, Execute):
    """nbgrader's ``Execute``, with every kernel in a sandbox, the tests' verdicts out of the student's
    reach, and a grading that always finishes.

    Configured like ``Execute`` (``c.Execute.timeout`` and the other ``Execute`` options apply to it),
    plus the traits below and the sandbox's (``c.Sandbox.*``).
    """

    output_limit = Integer(64 * 1024, help="Bytes of output one cell keeps; the rest is cut").tag(config=True)
    notebook_output_limit = Integer(1024 * 1024, help="Bytes of output a notebook keeps").tag(config=True)
    max_restarts = Integer(
        3, help="New kernels after a dead or unresponsive one; after that the cells below are not run"
    ).tag(config=True)
    total_timeout = Integer(
        0, help="Seconds for the whole notebook, restarts included (0: no limit but the cells')"
    ).tag(config=True)
    session_folder = Unicode(
        "", help="Where the kernels' scratch and runtime folders go (default: the system's temporary folder)"
    ).tag(config=True)
    verdicts = Bool(
        True,
        help="Run the test cells in a kernel of their own, which never runs the student's code "
        "(seqlab.grading.verdict); False: in the student's kernel, as stock nbgrader does",
    ).tag(config=True)

    def preprocess(self, nb, resources=None, km=None):
        self._sandbox, note = sandbox_settings(self)
        self.log.info("Grading %s", note)
        nb.metadata.setdefault("seqlab", {})["sandbox"] = note
        folder = (resources or {}).get("metadata", {}).get("path") or "."
        box = self._sandbox
        self._session = KernelSession(
            folder,
            parent_folder=self.session_folder or None,
            disk_limit=box.disk_limit if box is not None else 0,
            memory_limit=box.total_memory_limit if box is not None else 0,
            process_limit=box.process_limit if box is not None else 0,
        )
        session = self._session
        if box is not None and session.user is not None and not (session.mounted and session.cgroup):
            made = [("tmpfs", session.mounted), ("control group", session.cgroup)]
            missing = [what for what, done in made if not done]
            note += f" (without the notebook's own {' and '.join(missing)}: each process is limited on its own)"
            nb.metadata["seqlab"]["sandbox"] = note
        self._ran = []  # (index, source) of the code cells run so far, to run again in a new kernel
        self._restarts = 0
        self._stopped = None  # why the cells below were not run, once they are not
        self._notebook_bytes = self._cell_bytes = 0
        self._cell_cut = self._replaying = False
        self._deadline = time.monotonic() + self.total_timeout if self.total_timeout else None
        self._exercise = self._exercise_cells(resources)
        self._verdict, self._verdict_ready = None, False
        self._verdict_setup = []  # the locked cells it ran (setup, data), to run again in a new one
        self._verdict_pending = []  # what it was sent and has not replied to yet
        self._answers_path = os.path.join(self._session.link, "answers.sock")
        try:
            if self._exercise:
                self.nb = nb
                self._launch_verdict_kernel()
            return super().preprocess(nb, resources, km)
        finally:
            self._stop_verdict_kernel()
            self._session.close()

    def _exercise_cells(self, resources) -> dict:
        """``{grade id: ExerciseCell}`` when verdicts are on and nbgrader names the exercise; else ``{}``."""
        if not self.verdicts or "nbgrader" not in (resources or {}):
            return {}
        with Gradebook(resources["nbgrader"]["db_url"]) as gradebook:
            return {c.name: c for c in exercise_cells(gradebook, resources)}

    def create_kernel_manager(self):
        if not self.kernel_name:
            self.kernel_name = self.nb.metadata.get("kernelspec", {}).get("name") or "python3"
        self.km = SandboxedKernelManager(
            kernel_name=self.kernel_name, config=self.config, sandbox=self._sandbox, session_folders=self._session
        )
        return self.km

    # --- running the cells -------------------------------------------------------------------------

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type != "code":
            return super().preprocess_cell(cell, resources, index)
        if self._stopped is None and self._deadline is not None and time.monotonic() > self._deadline:
            self._stopped = f"grading time is up ({self.total_timeout} s for the notebook)"
            add_notes(self.nb, [f"{self._stopped}: cell {_label(cell, index)} and the cells below were not run"])
        if self._stopped is not None:
            cell.outputs = [_error_output("NotRun", f"not run: {self._stopped}")]
            cell.execution_count = None
            return cell, self.resources
        exercise = self._exercise.get(cell.metadata.get("nbgrader", {}).get("grade_id"))
        if exercise is not None and exercise.grade and not exercise.solution:
            return self._test_cell(cell, index, exercise), self.resources
        if exercise is not None and exercise.locked and not exercise.solution:
            self._in_verdict_kernel(copy.deepcopy(cell), index, exercise.source)  # its setup, its data
        self._in_student_kernel(cell, index, cell.source)
        return cell, self.resources

    def _in_student_kernel(self, cell, index: int, source: str) -> None:
        """Run ``source`` as ``cell`` in the student's kernel; a lost kernel is replaced."""
        self._cell_bytes, self._cell_cut = 0, False
        label = _label(cell, index)
        timeout = self._get_timeout(cell)
        original, cell.source = cell.source, source
        try:
            super().preprocess_cell(cell, self.resources, index)
        except DeadKernelError:
            what = "the kernel died while this cell ran (os._exit, a crash in compiled code, or out of memory)"
            self.log.warning("The kernel died in cell %s", label)
            cell.outputs.append(_error_output("DeadKernelError", what))
            lost = f"the kernel died in cell {label}"
        except CellTimeoutError:
            what = f"this cell ran past its time limit ({timeout} s) and ignored the interrupt"
            self.log.warning("Cell %s ignored the interrupt after its timeout", label)
            cell.outputs.append(_error_output("CellTimeoutError", what))
            lost = f"cell {label} ran past its time limit ({timeout} s) and ignored the interrupt"
        else:
            if any(o.get("ename") == "CellTimeoutError" for o in cell.outputs):
                add_notes(self.nb, [f"cell {label} ran past its time limit ({timeout} s) and was interrupted"])
            else:
                self._ran.append((index, source))  # a cell stopped by its timeout is not run again
            if self._cell_cut:
                add_notes(self.nb, [f"the output of cell {label} was cut at {self.output_limit} bytes"])
            return
        finally:
            cell.source = original
            self.nb.cells[index] = cell
        self._lost(label, lost)

    def _lost(self, label: str, lost: str) -> None:
        self._restart(label)
        if self._stopped is None:
            add_notes(self.nb, [f"{lost}: a new kernel ran the cells above it again, and grading went on"])
        else:
            add_notes(self.nb, [f"{lost}: {self._stopped}; the cells below it were not run"])

    def _restart(self, label: str) -> None:
        """A new student's kernel that has run the cells above again (not the one that failed), or
        ``_stopped``."""
        self._cleanup_kernel()
        if self._restarts >= self.max_restarts:
            self._stopped = f"{self._restarts} new kernels were started already"
            return
        self._restarts += 1
        self._replaying = True
        try:
            self.km = self.create_kernel_manager()
            self.start_new_kernel()
            self.start_new_kernel_client()
            for index, source in self._ran:
                original = self.nb.cells[index]
                again = copy.deepcopy(original)
                again.source = source
                try:
                    self.execute_cell(again, index, store_history=True)
                finally:
                    self.nb.cells[index] = original  # execute_cell stores the copy: keep the first run's outputs
        except (DeadKernelError, CellTimeoutError, RuntimeError) as error:
            self.log.warning("A new kernel could not run the cells above %s again: %s", label, error)
            self._stopped = "a new kernel could not run the cells above it again"
            self._cleanup_kernel()
            return
        finally:
            self._replaying = False
        self.log.warning("A new kernel ran the %d code cells above %s again; grading goes on", len(self._ran), label)

    # --- test cells: the verdict kernel ------------------------------------------------------------

    def _test_cell(self, cell, index: int, exercise: ExerciseCell):
        """Run a test cell in the verdict kernel, with the student's kernel serving its calls."""
        if self.kc is None:
            cell.outputs = [_error_output("NotRun", f"not run: {self._stopped}")]
            return cell
        # The student's kernel gets the cell's imports and definitions, as if it had run it, then serves.
        definitions = definitions_only(exercise.source)
        serve = (
            f"try:\n    exec(compile({definitions!r}, '<the test cell>', 'exec'), globals())\n"
            "except Exception:\n    pass\n"
            "__import__('seqlab.grading.verdict', fromlist=['serve']).serve("
            f"{self._answers_path!r}, globals())\n"
        )
        absent = Path(self._answers_path + ".absent")  # tells the verdict kernel not to wait for it
        absent.unlink(missing_ok=True)
        Path(self._answers_path).unlink(missing_ok=True)
        serving = self.kc.execute(serve, store_history=False, stop_on_error=False)
        finished = self._until_serving(serving)
        if finished:
            self._no_answers()
        self._cell_bytes, self._cell_cut = 0, False
        verdict = copy.deepcopy(cell)
        self._in_verdict_kernel(verdict, index, exercise.source)
        cell.outputs, cell.execution_count = verdict.outputs, verdict.execution_count
        self.nb.cells[index] = cell
        if self._cell_cut:
            add_notes(self.nb, [f"the output of cell {_label(cell, index)} was cut at {self.output_limit} bytes"])
        if finished or self._stop_serving(self._answers_path, serving, _label(cell, index)):
            self._ran.append((index, definitions))
        return cell

    def _until_serving(self, msg_id: str) -> bool:
        """Wait until the student's kernel serves (its socket is there): ``False``; or until it replied
        without serving (an answer cell changed how it runs code): ``True``, and the test's calls fail.
        Stuck or dead, it is replaced once the test cell is over (:meth:`_stop_serving`)."""
        deadline = time.monotonic() + (self._get_timeout(None) or 60)
        checked = time.monotonic()
        while time.monotonic() < deadline:
            if os.path.exists(self._answers_path):
                return False
            if self._wait_for(msg_id, 0.02):
                return True
            if time.monotonic() - checked > 1:
                if not run_sync(self.km.is_alive)():
                    break
                checked = time.monotonic()
        self._no_answers()
        return False

    def _no_answers(self) -> None:
        """Tell the verdict kernel that no call will be answered (a file made with O_EXCL: never through
        a link that the student's kernel put there)."""
        with contextlib.suppress(FileExistsError):
            os.close(os.open(self._answers_path + ".absent", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))

    def _stop_serving(self, path: str, msg_id: str, label: str) -> bool:
        """End the student's kernel's serving: whether it stopped; if it does not, or died, a new kernel.

        The verdict kernel says "done" on the socket, not the grader: the student's kernel could make the
        socket's path a link to any socket of the grader's machine, but not of the verdict's sandbox."""
        finish = f"__import__('seqlab.grading.verdict', fromlist=['finish']).finish({path!r})"
        if self._verdict is not None and self._verdict.kc is not None:
            self._verdict_pending.append(self._verdict.kc.execute(finish, store_history=False))
        alive = run_sync(self.km.is_alive)
        if alive() and self._wait_for(msg_id, SERVE_GRACE):
            return True
        if alive():  # still in the student's code, after the test gave up on it
            run_sync(self.km.interrupt_kernel)()
            if self._wait_for(msg_id, INTERRUPT_GRACE):
                return True
            lost = f"the student's code called by test cell {label} ran on and ignored the interrupt"
        else:
            lost = f"the kernel died while test cell {label} called the student's code"
        self.log.warning(lost)
        self._lost(label, lost)
        return False

    def _wait_for(self, msg_id: str, seconds: float) -> bool:
        """Whether the student's kernel replied to ``msg_id`` within ``seconds`` (other replies dropped)."""
        return run_sync(self._async_wait_for)(msg_id, seconds)

    async def _async_wait_for(self, msg_id: str, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            try:
                msg = await asyncio.wait_for(self.kc.shell_channel.get_msg(timeout=left), left + 1)
            except (Empty, asyncio.TimeoutError):
                return False
            if msg["parent_header"].get("msg_id") == msg_id:
                return True
        return False

    def _in_verdict_kernel(self, cell, index: int, source: str) -> None:
        """Run the exercise's ``source`` in the verdict kernel. A locked cell (setup, data) is sent and not
        waited for: the verdict kernel runs it while the student's kernel runs the cells that follow. A
        test cell's outputs go to ``cell`` (within the output limits). A lost verdict kernel fails that
        cell; the next one runs the locked cells above again."""
        if not self._exercise:
            return
        test = self._exercise[cell.metadata.nbgrader.grade_id].grade
        try:
            if self._verdict is None or not self._verdict_ready:
                self._start_verdict_kernel()
            if not test:
                self._verdict_setup.append(source)
                self._verdict_pending.append(self._verdict.kc.execute(source, store_history=False))
                return
            for msg_id in self._verdict_pending:
                if not self._verdict_replied(msg_id):
                    raise CellTimeoutError(f"the exercise's setup did not finish in {self.timeout} s")
            self._verdict_pending = []
            if not self._verdict_listening:  # its outputs reach the client from now on
                run_sync(self._verdict.kc.wait_for_ready)(timeout=self._verdict.startup_timeout)
                self._verdict_listening = True
            cell.source = source
            self._verdict.execute_cell(cell, index, store_history=True)
        except Exception as error:  # the grader's own kernel: whatever happens, the notebook is graded on
            self.log.warning("The verdict kernel was lost in cell %s: %r", _label(cell, index), error)
            lost = f"the grader's kernel was lost in this cell: {error}"
            cell.outputs.append(_error_output(type(error).__name__, lost))
            add_notes(self.nb, [f"the grader's kernel was lost in cell {_label(cell, index)}: a new one goes on"])
            self._stop_verdict_kernel()

    def _verdict_replied(self, msg_id: str) -> bool:
        """Wait (within a cell's time limit) for the verdict kernel's reply to ``msg_id``."""
        return run_sync(self._async_replied)(self._verdict, msg_id, self._get_timeout(None) or 3600)

    @staticmethod
    async def _async_replied(client, msg_id: str, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            try:
                msg = await client.kc.shell_channel.get_msg(timeout=min(left, 1))
            except Empty:
                if not await client.km.is_alive():
                    raise DeadKernelError("the grader's kernel died") from None
                continue
            if msg["parent_header"].get("msg_id") == msg_id:
                return True
        return False

    def _launch_verdict_kernel(self) -> None:
        """Start the verdict kernel's process, so that it boots while the student's kernel does."""
        verdict = self._verdict = _VerdictKernel(config=self.config)
        verdict.owner, verdict.nb = self, copy.deepcopy(self.nb)
        verdict.km = SandboxedKernelManager(
            kernel_name=self.nb.metadata.get("kernelspec", {}).get("name") or "python3",
            config=self.config,
            sandbox=self._sandbox,
            session_folders=self._session,
            kernel_role="verdict",
        )
        verdict.reset_execution_trackers()
        verdict.start_new_kernel()
        self._verdict_ready = False

    def _start_verdict_kernel(self) -> None:
        """The verdict kernel, ready, with the answers' names bound to the student's functions, and the
        exercise's locked cells above (setup, data) sent to it."""
        if self._verdict is None:
            self._launch_verdict_kernel()
        verdict = self._verdict
        # Its client sends at once, and waits for the kernel only before the first test cell: it boots and
        # runs the exercise's setup while the student's kernel runs the cells that follow.
        verdict.kc = verdict.km.client()
        verdict.kc.start_channels()
        verdict.kc.allow_stdin = False
        self._verdict_listening = False
        names = answer_names(self._exercise)
        install = (
            "__import__('seqlab.grading.verdict', fromlist=['install_answers'])"
            f".install_answers(globals(), {names!r}, {self._answers_path!r})"
        )
        self._verdict_pending = [verdict.kc.execute(s, store_history=False) for s in [install, *self._verdict_setup]]
        self._verdict_ready = True

    def _stop_verdict_kernel(self) -> None:
        if self._verdict is not None and self._verdict.km is not None:
            self._verdict._cleanup_kernel()
        self._verdict, self._verdict_pending = None, []

    # --- the kernels' lifetime ---------------------------------------------------------------------

    async def _async_cleanup_kernel(self):
        if self.km is not None:  # None once a kernel was lost and not replaced
            await super()._async_cleanup_kernel()
            self.km = self.kc = None

    _cleanup_kernel = run_sync(_async_cleanup_kernel)

    def _get_timeout(self, cell):
        """The cell's time limit, never beyond the notebook's (``total_timeout``)."""
        timeout = super()._get_timeout(cell)
        if self._deadline is None or cell is None:
            return timeout
        left = max(1, int(self._deadline - time.monotonic()))
        return left if timeout is None else min(timeout, left)

    def output(self, outs, msg, display_id, cell_index):
        return self._limit(outs, super().output(outs, msg, display_id, cell_index))
