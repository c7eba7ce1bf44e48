"""The nbgrader plugins that the course's ``nbgrader_config.py`` switches on.

Stock nbgrader runs a student's notebook with the grader's rights and drops a whole submission (no
grades, no feedback, ``autograde`` exits 1) when the kernel dies, when a cell ignores the interrupt
that ends its time, or when the cells' nbgrader metadata is damaged. :class:`RepairCellMetadata` and
:class:`OverwriteCellsKeepingWork` repair the metadata (:mod:`seqlab.grading.repair`) while nbgrader
sanitizes a submission, and :class:`SandboxedExecute` replaces nbgrader's executor:

* every kernel runs in a bubblewrap sandbox (:mod:`seqlab.grading.sandbox`); where bubblewrap cannot
  run, grading refuses to start (:func:`refuse_without_sandbox`, nbgrader's pre-convert hook) unless the
  instructor opts out with ``--Sandbox.enabled=False``;
* a kernel that dies (``os._exit``, a crash in compiled code) or a cell that ignores its interrupt
  (``while True: try: ... except: pass``) does not end the grading: the cell gets an error output that
  says what happened, a new kernel runs the cells above it again (their outputs are kept from the
  first run), and grading goes on below it, so the tests of correct answers keep their points;
* a cell keeps at most ``output_limit`` bytes of output and a notebook ``notebook_output_limit``
  (nbgrader's own ``LimitOutput`` counts lines, and one line can be 50 MB);
* grading stops at ``total_timeout`` seconds for the whole notebook, restarts included.

nbgrader imports this module by name while it grades (only then), so importing it stays cheap: it needs
nbgrader, nbclient and the sandbox, nothing else of the course.
"""

import copy
import json
import time

import nbformat
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbclient.util import run_sync
from nbformat import NotebookNode
from nbgrader.api import Gradebook
from nbgrader.preprocessors import Execute, NbGraderPreprocessor, OverwriteCells
from traitlets import Integer, Unicode
from traitlets.config import Application

from seqlab.grading.repair import ExerciseCell, canonical_metadata, missing_cells, repair_metadata
from seqlab.grading.sandbox import KernelSession, Sandbox, SandboxedKernelManager

__all__ = ["OverwriteCellsKeepingWork", "RepairCellMetadata", "SandboxedExecute", "refuse_without_sandbox"]

TRUNCATED = "\n[... output cut here: a cell keeps at most {limit} bytes of output]\n"


def add_notes(nb, notes: list) -> None:
    """Keep what grading repaired or met in the notebook's metadata (``seqlab.notes``), for the student's
    score table and the instructor's export."""
    nb.metadata.setdefault("seqlab", {}).setdefault("notes", []).extend(notes)


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


class RepairCellMetadata(NbGraderPreprocessor):
    """Sanitizing step, before nbgrader reads any metadata: every cell with one of the exercise's grade
    ids gets the release's metadata back (:func:`seqlab.grading.repair.repair_metadata`)."""

    def preprocess(self, nb, resources):
        with Gradebook(resources["nbgrader"]["db_url"]) as gradebook:
            notes = repair_metadata(nb, exercise_cells(gradebook, resources))
        for note in notes:
            self.log.warning("Repaired: %s", note)
        add_notes(nb, notes)
        return nb, resources


class OverwriteCellsKeepingWork(OverwriteCells):
    """nbgrader's ``OverwriteCells``, whose missing cells always find their place
    (:func:`seqlab.grading.repair.missing_cells`: a test just before the next cell of the exercise that
    the notebook has, a setup cell just after the one above it). nbgrader's own fails, and drops the
    submission, when the cell just above a missing test is missing too. Locked cells that are not tests
    (the exercise's setup) come back as well."""

    def add_missing_grade_cells(self, nb, resources):
        exercise = exercise_cells(self.gradebook, resources)
        placed, notes = missing_cells(nb, exercise)
        for position, cell in placed:
            source_cell = self.gradebook.find_source_cell(cell.name, self.notebook_id, self.assignment_id)
            restored = self.missing_cell_transform(source_cell, cell.points, is_solution=cell.solution)
            restored["metadata"]["nbgrader"] = canonical_metadata(cell)
            nb.cells.insert(position, nbformat.from_dict(restored))
            notes.append(f"the {cell.kind} {cell.name} was missing: the original was put back")
        for note in notes:
            self.log.warning("Repaired: %s", note)
        add_notes(nb, notes)
        return nb, resources


def _error(ename: str, evalue: str) -> NotebookNode:
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


class SandboxedExecute(Execute):
    """nbgrader's ``Execute``, with every kernel in a sandbox and a grading that always finishes.

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

    def preprocess(self, nb, resources=None, km=None):
        self._sandbox, note = sandbox_settings(self)
        self.log.info("Grading %s", note)
        nb.metadata.setdefault("seqlab", {})["sandbox"] = note
        folder = (resources or {}).get("metadata", {}).get("path") or "."
        self._session = KernelSession(folder, parent_folder=self.session_folder or None)
        self._ran = []  # indices of the code cells run so far, to run again in a new kernel
        self._restarts = 0
        self._stopped = None  # why the cells below were not run, once they are not
        self._notebook_bytes = 0
        self._replaying = False
        self._deadline = time.monotonic() + self.total_timeout if self.total_timeout else None
        try:
            return super().preprocess(nb, resources, km)
        finally:
            self._session.close()

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
            cell.outputs = [_error("NotRun", f"not run: {self._stopped}")]
            cell.execution_count = None
            return cell, self.resources
        self._cell_bytes, self._cell_cut = 0, False
        label = _label(cell, index)
        timeout = self._get_timeout(cell)
        try:
            cell, resources = super().preprocess_cell(cell, resources, index)
        except DeadKernelError:
            what = "the kernel died while this cell ran (os._exit, a crash in compiled code, or out of memory)"
            self.log.warning("The kernel died in cell %s", label)
            cell.outputs.append(_error("DeadKernelError", what))
            lost = f"the kernel died in cell {label}"
        except CellTimeoutError:
            what = f"this cell ran past its time limit ({timeout} s) and ignored the interrupt"
            self.log.warning("Cell %s ignored the interrupt after its timeout", label)
            cell.outputs.append(_error("CellTimeoutError", what))
            lost = f"cell {label} ran past its time limit ({timeout} s) and ignored the interrupt"
        else:
            if any(o.get("ename") == "CellTimeoutError" for o in cell.outputs):
                add_notes(self.nb, [f"cell {label} ran past its time limit ({timeout} s) and was interrupted"])
            else:
                self._ran.append(index)  # a cell stopped by its timeout is not run again in a new kernel
            if self._cell_cut:
                add_notes(self.nb, [f"the output of cell {label} was cut at {self.output_limit} bytes"])
            return cell, resources
        self.nb.cells[index] = cell
        self._restart(label)
        if self._stopped is None:
            add_notes(self.nb, [f"{lost}: a new kernel ran the cells above it again, and grading went on"])
        else:
            add_notes(self.nb, [f"{lost}: {self._stopped}; the cells below it were not run"])
        return cell, self.resources

    def _restart(self, label: str) -> None:
        """A new kernel that has run the cells above again (not the one that failed), or ``_stopped``."""
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
            for index in self._ran:
                original = self.nb.cells[index]
                try:
                    self.execute_cell(copy.deepcopy(original), index, store_history=True)
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

    # --- output limits -------------------------------------------------------------------------------

    def output(self, outs, msg, display_id, cell_index):
        out = super().output(outs, msg, display_id, cell_index)
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
            name = out.get("name", "stdout")
            outs.append(NotebookNode(output_type="stream", name=name, text=cut))
        elif out.output_type == "stream" and out.name == "stderr" and not any(o.get("name") == "stderr" for o in outs):
            outs.append(NotebookNode(output_type="stream", name="stderr", text=cut))  # stderr must stay visible
        self._cell_cut = True
        return None
