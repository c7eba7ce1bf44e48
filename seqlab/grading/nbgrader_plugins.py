"""The nbgrader plugins that the course's ``nbgrader_config.py`` switches on, besides its executor
(:mod:`seqlab.grading.executor`).

Stock nbgrader drops a whole submission (no grades, no feedback, ``autograde`` exits 1) when the cells'
nbgrader metadata is damaged. :class:`RepairCellMetadata` and :class:`OverwriteCellsKeepingWork` repair
it (:mod:`seqlab.grading.repair`) while nbgrader sanitizes a submission, and :class:`ExportWithNotes` adds
the repairs, and what else grading met, to ``nbgrader export``'s CSV.

nbgrader imports this module by name while it grades (only then), so importing it stays cheap for
nbgrader: it needs nbgrader and the grading machinery, nothing else of the course.
"""

import csv
import glob
import os
import re
import shutil
import tempfile
from pathlib import Path

import nbformat
from nbgrader.api import Gradebook
from nbgrader.apps import api as nbgrader_api
from nbgrader.apps import autogradeapp
from nbgrader.converters import Autograde
from nbgrader.plugins import CsvExportPlugin
from nbgrader.preprocessors import NbGraderPreprocessor, OverwriteCells

from seqlab.grading.executor import add_notes, exercise_cells
from seqlab.grading.intake import PLACEHOLDER, SubmissionRefused, check_folder, check_names, stage
from seqlab.grading.repair import canonical_metadata, missing_cells, repair_metadata

__all__ = ["ExportWithNotes", "OverwriteCellsKeepingWork", "RepairCellMetadata"]
__all__ += ["SafeAutograde", "install_safe_autograde"]


class RepairCellMetadata(NbGraderPreprocessor):
    """Sanitizing step, before nbgrader reads any metadata: every cell with one of the exercise's grade
    ids gets the release's metadata back (:func:`seqlab.grading.repair.repair_metadata`)."""

    def preprocess(self, nb, resources):
        # The notebook's "seqlab" metadata is the grader's to write (notes, sandbox): whatever the
        # submission brought under that key is dropped, and the grader's notes start with what the intake
        # left out of the submission (SafeAutograde).
        nb.metadata.pop("seqlab", None)
        add_notes(nb, list(resources.get("seqlab_intake", [])))
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


class ExportWithNotes(CsvExportPlugin):
    """nbgrader's CSV export, with one more column from the autograded notebooks: ``notes`` (what grading
    repaired or met), joined with `` | ``."""

    def export(self, gradebook) -> None:
        super().export(gradebook)
        dest = self.to or "grades.csv"
        with open(dest, newline="") as f:
            rows = list(csv.DictReader(f))
        coursedir = getattr(self.parent, "coursedir", None)
        for row in rows:
            notes = []
            if coursedir is not None:
                folder = coursedir.format_path(coursedir.autograded_directory, row["student_id"], row["assignment"])
                for path in sorted(glob.glob(os.path.join(folder, "*.ipynb"))):
                    notes += nbformat.read(path, as_version=4).metadata.get("seqlab", {}).get("notes", [])
            row["notes"] = " | ".join(notes)
        with open(dest, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else ["notes"])
            writer.writeheader()
            writer.writerows({key: inert_cell(value) for key, value in row.items()} for row in rows)


FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def inert_cell(value: str) -> str:
    """A CSV field a spreadsheet shows as text: one that could start a formula (``=``, ``+``, ``-``, ``@``,
    tab, carriage return) gets a leading apostrophe, OWASP's advice; a plain number (``-1.5``) stays a number."""
    if isinstance(value, str) and value.startswith(FORMULA_START) and not NUMBER.fullmatch(value):
        return "'" + value
    return value


class SafeAutograde(Autograde):
    """nbgrader's ``Autograde``, reading every submission from a copy made by
    :func:`seqlab.grading.intake.stage` (regular files only, the one notebook under the exercise's name).

    The copies live in a temporary folder for the run; what the intake refused goes to the
    notebook's grading notes (``resources["seqlab_intake"]``, which
    :class:`seqlab.grading.nbgrader_plugins.RepairCellMetadata` writes) and to the log.
    """

    def start(self) -> None:
        self._intake_root = tempfile.mkdtemp(prefix="seqlab-intake-")
        self._intake_notes, self._intake_refused = {}, {}
        try:
            super().start()
        finally:
            shutil.rmtree(self._intake_root, ignore_errors=True)

    @property
    def _input_directory(self) -> str:
        # Sanitizing reads the submission: from its copy (os.path.join(root, an absolute path) is that path).
        # Autograding then reads what sanitizing wrote into autograded/, as nbgrader does.
        if self._sanitizing and hasattr(self, "_intake_root"):
            return self._intake_directory
        return super()._input_directory

    @property
    def _intake_directory(self) -> str:
        return os.path.join(self._intake_root, "submitted")

    def init_notebooks(self) -> None:
        coursedir = self.coursedir
        pattern = coursedir.format_path(coursedir.submitted_directory, coursedir.student_id, coursedir.assignment_id)
        step = coursedir.submitted_directory
        regexp = re.compile(coursedir.format_path(step, "(?P<student>[^/]+)", "(?P<exercise>[^/]+)", escape=True))
        for path in sorted(glob.glob(pattern)):
            match = regexp.fullmatch(path)
            if match is None:
                continue
            student, exercise = match["student"], match["exercise"]
            dest = Path(coursedir.format_path(self._intake_directory, student, exercise))
            try:
                check_names(student, exercise)
                check_folder(path)
                intake = stage(path, dest, exercise, ignore=tuple(coursedir.ignore))
            except (SubmissionRefused, OSError) as refused:
                # A placeholder lets nbgrader find the submission, and init_assignment fail it with the reason
                # (nbgrader reports the failure and grades the other submissions).
                shutil.rmtree(dest, ignore_errors=True)
                dest.mkdir(parents=True)
                (dest / f"{exercise}.ipynb").write_text(PLACEHOLDER)
                self._intake_refused[(student, exercise)] = str(refused)
                continue
            for note in intake.notes():
                self.log.warning("%s/%s: %s", student, exercise, note)
            self._intake_notes[(student, exercise)] = intake.notes()
        super().init_notebooks()

    def init_assignment(self, assignment_id: str, student_id: str) -> None:
        refused = self._intake_refused.get((student_id, assignment_id))
        if refused is not None:
            raise SubmissionRefused(refused)
        # Autograde's check for notebooks missing from the submission looks in submitted/ itself: here, in the
        # copy, where the notebook has the exercise's name whatever name the student gave it.
        step, self.coursedir.submitted_directory = self.coursedir.submitted_directory, self._intake_directory
        try:
            super().init_assignment(assignment_id, student_id)
        finally:
            self.coursedir.submitted_directory = step

    def init_single_notebook_resources(self, notebook_filename: str) -> dict:
        resources = super().init_single_notebook_resources(notebook_filename)
        info = resources["nbgrader"]
        resources["seqlab_intake"] = self._intake_notes.get((info["student"], info["assignment"]), [])
        return resources


def install_safe_autograde() -> None:
    """Make every autograde of this process use :class:`SafeAutograde`: nbgrader's command line takes the
    converter from ``nbgrader.apps.autogradeapp``, ``NbGraderAPI`` (the formgrader's autograde button, and
    ``seqlab grade``) from ``nbgrader.apps.api`` (nbgrader has no setting for it). ``nbgrader_config.py``
    calls it when nbgrader reads it."""
    autogradeapp.Autograde = SafeAutograde
    nbgrader_api.Autograde = SafeAutograde
