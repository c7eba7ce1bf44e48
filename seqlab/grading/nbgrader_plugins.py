"""An nbgrader preprocessor that the course's ``nbgrader_config.py`` switches on for autograding.

Stock nbgrader gives up on a whole submission when the kernel dies under it (``os._exit``, a crash in
compiled code, running out of memory): the student gets no grades and no feedback, and ``nbgrader
autograde`` exits 1 after the rest of the class. :class:`ExecuteSurvivingKernelDeath` instead records
the death in the cell that caused it, marks every code cell below it as not run, and lets nbgrader
grade the notebook as it stands: the tests above the crash keep their points, the tests below score 0.

nbgrader imports this module by name while it autogrades (only then), so importing it must stay cheap
for nbgrader: it needs nbgrader and nbclient, nothing else of the course.
"""

from nbclient.exceptions import DeadKernelError
from nbformat import NotebookNode
from nbgrader.preprocessors import Execute

__all__ = ["ExecuteSurvivingKernelDeath"]

DIED = (
    "the kernel died while this cell ran (os._exit, a crash in compiled code, or out of memory); "
    "the cells below it were not run"
)


def _error(ename: str, evalue: str) -> NotebookNode:
    return NotebookNode(output_type="error", ename=ename, evalue=evalue, traceback=[f"{ename}: {evalue}"])


class ExecuteSurvivingKernelDeath(Execute):
    """nbgrader's ``Execute``, except that a dead kernel ends the run, not the grading.

    Configured like ``Execute`` (``c.Execute.timeout`` and the other ``Execute`` options apply to it).
    The cell that killed the kernel gets a ``DeadKernelError`` output, and every code cell after it a
    ``NotRun`` error output, so nbgrader scores the test cells among them 0.
    """

    def preprocess(self, nb, resources=None, km=None):
        self._died_in = None  # the label of the cell where the kernel died, once it has
        return super().preprocess(nb, resources, km)

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type != "code":
            return super().preprocess_cell(cell, resources, index)
        if self._died_in is not None:
            cell.outputs = [_error("NotRun", f"not run: the kernel died in cell {self._died_in} above")]
            cell.execution_count = None
            return cell, self.resources
        try:
            return super().preprocess_cell(cell, resources, index)
        except DeadKernelError:
            self._died_in = cell.metadata.get("nbgrader", {}).get("grade_id") or f"#{index + 1}"
            self.log.warning("The kernel died in cell %s; the cells below it are not run", self._died_in)
            cell.outputs.append(_error("DeadKernelError", DIED))
            return cell, self.resources
