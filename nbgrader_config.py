"""nbgrader's configuration for the seqlab course (read when nbgrader runs in the repository root).

    solutions/<assignment>/<assignment>.ipynb   instructor source: solutions and hidden tests
    exercises/<assignment>/<assignment>.ipynb   the release, made by `make release`, committed

nbgrader runs `alembic` as a program: put the environment's bin/ first on PATH (the Makefile does).
"""

import os

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
# Every cell gets at most this long: an infinite loop scores 0 for what depends on it, and grading
# goes on with the next cell (the kernel is interrupted, not restarted).
c.Execute.timeout = 60
c.Execute.interrupt_on_timeout = True
# Once the last cell has run, the kernel is stopped at once: a graceful shutdown waits for torch's
# teardown, about two seconds a notebook, and nothing the kernel does after the last cell is graded.
c.Execute.shutdown_kernel = "immediate"
# Test cells ("autograded tests") are locked: before grading, nbgrader restores an edited test cell
# (source and points) from the gradebook, and with this a deleted test cell is added back as well.
c.OverwriteCells.add_missing_cells = True
# A submission that kills the kernel (os._exit, a crash in compiled code, running out of memory) makes
# stock nbgrader drop the whole submission: no grades, no feedback, and autograde exits 1. The course's
# executor records the death in that cell and marks the cells below it as not run, so the tests above
# keep their points and the tests below score 0. Otherwise this is nbgrader 0.9's default list.
c.Autograde.autograde_preprocessors = [
    "seqlab.grading.nbgrader_plugins.ExecuteSurvivingKernelDeath",  # instead of nbgrader.preprocessors.Execute
    "nbgrader.preprocessors.IgnorePattern",
    "nbconvert.preprocessors.ClearMetadataPreprocessor",
    "nbgrader.preprocessors.LimitOutput",
    "nbgrader.preprocessors.SaveAutoGrades",
    "nbgrader.preprocessors.AssignLatePenalties",
    "nbgrader.preprocessors.CheckCellMetadata",
]
