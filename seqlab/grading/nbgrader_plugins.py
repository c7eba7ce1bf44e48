"""The nbgrader plugins that the course's ``nbgrader_config.py`` switches on, besides its executor
(:mod:`seqlab.grading.executor`).

Stock nbgrader drops a whole submission (no grades, no feedback, ``autograde`` exits 1) when the cells'
nbgrader metadata is damaged. :class:`RepairCellMetadata` and :class:`OverwriteCellsKeepingWork` repair
it (:mod:`seqlab.grading.repair`) while nbgrader sanitizes a submission. :class:`ReviewSubmission` lists
the student's cells that touch the test machinery (:mod:`seqlab.grading.review`), :class:`FlagForReview`
flags their notebook in the gradebook, and :class:`ExportWithReview` adds the list, and the repairs, to
``nbgrader export``'s CSV.

nbgrader imports this module by name while it grades (only then), so importing it stays cheap for
nbgrader: it needs nbgrader and the grading machinery, nothing else of the course.
"""

import csv
import glob
import os

import nbformat
from nbgrader.api import Gradebook
from nbgrader.plugins import CsvExportPlugin
from nbgrader.preprocessors import ClearHiddenTests, NbGraderPreprocessor, OverwriteCells

from seqlab.grading.executor import add_notes, exercise_cells
from seqlab.grading.repair import canonical_metadata, missing_cells, repair_metadata
from seqlab.grading.review import findings

__all__ = ["ExportWithReview", "FlagForReview", "OverwriteCellsKeepingWork", "RepairCellMetadata", "ReviewSubmission"]


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


def _label(cell, index: int) -> str:
    grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
    return grade_id or f"#{index + 1}"


def _normal(source: str) -> str:
    return "\n".join(line.rstrip() for line in source.strip().splitlines())


def _without_hidden_tests(source: str) -> str:
    """A test cell as the release shows it: the hidden tests' region left out, between nbgrader's own
    delimiters (the gradebook keeps it)."""
    delimiters = ClearHiddenTests()
    kept, hidden = [], False
    for line in source.splitlines():
        if delimiters.begin_test_delimeter in line:
            hidden = True
        elif delimiters.end_test_delimeter in line:
            hidden = False
        elif not hidden:
            kept.append(line)
    return "\n".join(kept)


class ReviewSubmission(NbGraderPreprocessor):
    """Sanitizing step, after the repairs: the student's cells (answers and their own) that touch the test
    machinery (:func:`seqlab.grading.review.findings`), listed in the notebook's metadata
    (``seqlab.review``) for the score table, the export and the gradebook's flag."""

    def preprocess(self, nb, resources):
        # The exercise's own tests and setup, wherever they turn up (a test copied below itself, or one
        # whose grade id was deleted, is such a cell as the student's): the course's code, not theirs.
        with Gradebook(resources["nbgrader"]["db_url"]) as gradebook:
            exercise = [c for c in exercise_cells(gradebook, resources) if c.locked or c.grade]
        given = {_normal(form) for c in exercise for form in (c.source, _without_hidden_tests(c.source))}
        listed = []
        for index, cell in enumerate(nb.cells):
            meta = cell.metadata.get("nbgrader", {})
            if cell.cell_type != "code" or meta.get("locked") or meta.get("grade") or _normal(cell.source) in given:
                continue
            listed += [f"cell {_label(cell, index)}, line {line}: {what}" for line, what in findings(cell.source)]
        for item in listed:
            self.log.warning("For review: %s", item)
        nb.metadata.setdefault("seqlab", {})["review"] = listed
        return nb, resources


class FlagForReview(NbGraderPreprocessor):
    """Autograding step, after nbgrader saved the grades: a notebook with cells listed for review is
    flagged in the gradebook (the formgrader shows the flag)."""

    def preprocess(self, nb, resources):
        if nb.metadata.get("seqlab", {}).get("review"):
            info = resources["nbgrader"]
            with Gradebook(info["db_url"]) as gradebook:
                notebook = gradebook.find_submission_notebook(info["notebook"], info["assignment"], info["student"])
                notebook.flagged = True
                gradebook.db.commit()
        return nb, resources


class ExportWithReview(CsvExportPlugin):
    """nbgrader's CSV export, with two more columns from the autograded notebooks: ``review`` (the cells
    listed for review) and ``notes`` (what grading repaired or met), each joined with `` | ``."""

    def export(self, gradebook) -> None:
        super().export(gradebook)
        dest = self.to or "grades.csv"
        with open(dest, newline="") as f:
            rows = list(csv.DictReader(f))
        coursedir = getattr(self.parent, "coursedir", None)
        for row in rows:
            seqlab = {}
            if coursedir is not None:
                folder = coursedir.format_path(coursedir.autograded_directory, row["student_id"], row["assignment"])
                for path in sorted(glob.glob(os.path.join(folder, "*.ipynb"))):
                    meta = nbformat.read(path, as_version=4).metadata.get("seqlab", {})
                    for key in ("review", "notes"):
                        seqlab.setdefault(key, []).extend(meta.get(key, []))
            row["review"] = " | ".join(seqlab.get("review", []))
            row["notes"] = " | ".join(seqlab.get("notes", []))
        with open(dest, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else ["review", "notes"])
            writer.writeheader()
            writer.writerows(rows)
