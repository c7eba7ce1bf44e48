"""nbgrader's configuration for the seqlab course (read when nbgrader runs in the repository root).

    solutions/<assignment>/<assignment>.ipynb   instructor source: solutions and hidden tests
    exercises/<assignment>/<assignment>.ipynb   the release, made by `make release`, committed

nbgrader runs `alembic` as a program: put the environment's bin/ first on PATH (the Makefile does).
"""

import os
import sys

c = get_config()  # noqa: F821 (nbgrader provides get_config when it loads this file)

# --- where things are -------------------------------------------------------------------------
# The course root is the folder that holds this file, wherever nbgrader is started from; a command
# line `--CourseDirectory.root=...` still wins (the grading tests use a temporary course this way).
c.CourseDirectory.root = os.path.dirname(os.path.abspath(__file__))
c.CourseDirectory.course_id = "seqlab"
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "exercises"
# submitted/, autograded/, feedback/ and gradebook.db keep nbgrader's default names (git ignores them).

# --- making the release -------------------------------------------------------------------------
# What replaces the code between "### BEGIN SOLUTION" and "### END SOLUTION" (nbgrader's default,
# spelled out because the course's markdown tells students to look for it).
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.enforce_metadata = True  # solution markers outside an answer cell are an error
c.ClearHiddenTests.enforce_metadata = True  # hidden-test markers outside a test cell are an error
# Executing a solution records timestamps in each cell's metadata ("execution"); drop them with the
# outputs so that the release depends on the solution's code only, not on when it was last run.
c.ClearOutput.remove_metadata_fields = {"collapsed", "scrolled", "execution"}

# --- autograding ----------------------------------------------------------------------------------
# A submission is data, not files to trust (seqlab/grading/intake.py): autograde reads each one from a
# copy that holds its regular files only (no symbolic or hard link, device, FIFO or socket is followed,
# copied or read; each is listed in the notebook's notes), its one notebook under the exercise's name
# (a browser's "ex01_lstm_cell (1).ipynb" is graded; two notebooks are refused, naming both), a corrupt
# notebook refused as corrupt. nbgrader has no setting for its converter, so this replaces the class where
# `nbgrader autograde` and NbGraderAPI (the formgrader's autograde button) take it from.
# (When this file is read by anything but nbgrader, e.g. `seqlab grade` for its settings, nothing is done.)
if "nbgrader.apps.autogradeapp" in sys.modules:
    from seqlab.grading.nbgrader_plugins import install_safe_autograde

    install_safe_autograde()
# Every cell gets at most this long: an infinite loop scores 0 for what depends on it, and grading
# goes on with the next cell (the kernel is interrupted, not restarted).
c.Execute.timeout = 60
c.Execute.interrupt_on_timeout = True
# And the whole notebook gets this long, wall clock, restarts included, however many cells it has (10,000
# cells of 60 s each would hold a class worker for a week). A solution grades in about 5 s; 300 s leaves a
# busy machine sixty times that. `seqlab grade --timeout` and `seqlab grade-class --timeout` keep it.
c.SandboxedExecute.total_timeout = 300
# Once the last cell has run, the kernel is stopped at once: a graceful shutdown waits for torch's
# teardown, about two seconds a notebook, and nothing the kernel does after the last cell is graded.
c.Execute.shutdown_kernel = "immediate"
# Test cells ("autograded tests") are locked: before grading, nbgrader restores an edited test cell
# (source and points) from the gradebook, and with this a deleted test cell is added back as well.
c.OverwriteCells.add_missing_cells = True
# Damaged nbgrader metadata never drops a submission (stock nbgrader grades it 0): a copied test cell (two
# cells with one grade id), a test's "graded" flag switched off, a cell type or a grade id changed, an
# answer deleted with the test below it. Every cell with one of the exercise's grade ids gets the
# release's metadata back, a second copy or an unknown id runs as the student's own cell, and a missing
# test or setup cell is put back after the cells above it (seqlab/grading/repair.py); each repair is a
# note in the autograded notebook (metadata "seqlab") and in the export. Otherwise nbgrader's list.
c.Autograde.sanitize_preprocessors = [
    "nbgrader.preprocessors.ClearOutput",
    "seqlab.grading.nbgrader_plugins.RepairCellMetadata",  # added
    "nbgrader.preprocessors.DeduplicateIds",
    "nbgrader.preprocessors.OverwriteKernelspec",
    "seqlab.grading.nbgrader_plugins.OverwriteCellsKeepingWork",  # instead of nbgrader.preprocessors.OverwriteCells
    "nbgrader.preprocessors.CheckCellMetadata",
]
# Every graded kernel runs in a bubblewrap sandbox (seqlab/grading/sandbox.py): it sees the Python
# environment and the seqlab package read-only, not this folder (solutions/, the gradebook, the other
# submissions), writes only to a scratch copy of the notebook's folder, has no network, and everything
# it starts is killed with it. Without bubblewrap, `nbgrader autograde` refuses to grade; to grade
# unsandboxed anyway, at your own risk: nbgrader autograde EXERCISE --Sandbox.enabled=False
c.Sandbox.enabled = True
c.Sandbox.memory_limit = 4 * 2**30  # bytes each process of a kernel may allocate
c.Autograde.pre_convert_hook = "seqlab.grading.executor.refuse_without_sandbox"
# The course's executor (seqlab/grading/executor.py) grades with two kernels, both sandboxed: the
# student's runs the answers and the student's own cells; the verdict kernel runs the exercise's locked
# and test cells, taken from the gradebook, and calls the student's functions in the other kernel
# (seqlab/grading/verdict.py), so no answer cell can reach a test's assertions, references or inputs
# (c.SandboxedExecute.verdicts = False runs the tests in the student's kernel, as stock nbgrader does).
# It also grades what stock nbgrader drops: a kernel that dies (os._exit, a crash in compiled code) or a
# cell that ignores its interrupt gets an error in that cell, a new kernel runs the cells above again,
# and grading goes on below; and it keeps at most 64 KB of output per cell (stock nbgrader counts lines,
# and one line can be 50 MB).
# Otherwise this is nbgrader 0.9's default list.
c.Execute.iopub_timeout = 10  # seconds for a cell's last outputs after its reply (a busy machine is slow)
c.Autograde.autograde_preprocessors = [
    "seqlab.grading.executor.SandboxedExecute",  # instead of nbgrader.preprocessors.Execute
    "nbgrader.preprocessors.IgnorePattern",
    "nbconvert.preprocessors.ClearMetadataPreprocessor",
    "nbgrader.preprocessors.LimitOutput",
    "nbgrader.preprocessors.SaveAutoGrades",
    "seqlab.grading.sanitize.SanitizeMarkup",  # added: students' outputs and markdown as inert HTML (after the
    # grades are saved, so that nbgrader judges a written answer on what the student wrote)
    "nbgrader.preprocessors.AssignLatePenalties",
    "nbgrader.preprocessors.CheckCellMetadata",
]
# `nbgrader export` adds a column to nbgrader's CSV: the notes of each grading (repairs, cut outputs, ...).
c.ExportApp.plugin_class = "seqlab.grading.nbgrader_plugins.ExportWithNotes"
