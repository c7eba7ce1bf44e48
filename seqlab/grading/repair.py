"""Damaged nbgrader metadata in a submission, repaired before grading: no submission is dropped.

Jupyter and the nbgrader sidebar let a student change what nbgrader reads in a cell's metadata, and
stock nbgrader then drops the whole submission (grade 0, ``autograde`` exits with an error): a copied
test cell (Jupyter copies the metadata: two cells with one grade id), an answer cell deleted with the
test below it (nbgrader cannot place the test it puts back), a test cell's "graded" flag switched off
("Inconsistent checksums"), a grade id deleted or emptied. Here every cell that carries one of the
exercise's grade ids gets the exercise's metadata back (its type, its flags, its points, its checksum),
a cell whose id is not the exercise's, or a second copy of one, becomes one of the student's own cells
(it still runs, it is not graded), and a missing test or locked cell is put back after the cells that
come before it in the exercise. Each repair is a note for the student and the instructor.

:func:`repair_metadata` does the first part, before nbgrader reads the metadata; :func:`missing_cells`
says where the missing cells go (nbgrader's ``OverwriteCells`` puts them there, see
:mod:`seqlab.grading.nbgrader_plugins`).
"""

from dataclasses import dataclass

__all__ = ["ExerciseCell", "canonical_metadata", "missing_cells", "repair_metadata"]


@dataclass(frozen=True)
class ExerciseCell:
    """One nbgrader cell of the exercise as the gradebook records it (from the release)."""

    name: str  # the grade id
    cell_type: str
    locked: bool
    grade: bool
    solution: bool
    task: bool
    points: float | None
    checksum: str | None
    source: str = ""

    @property
    def kind(self) -> str:
        if self.grade and not self.solution:
            return "test cell"
        if self.solution:
            return "answer cell"
        return "locked cell"


def canonical_metadata(cell: ExerciseCell) -> dict:
    """The ``nbgrader`` metadata that the release gave this cell."""
    meta = {"grade": cell.grade, "grade_id": cell.name, "locked": cell.locked, "schema_version": 3}
    meta |= {"solution": cell.solution, "task": cell.task}
    if cell.grade or cell.task:
        meta["points"] = cell.points
    if cell.checksum is not None:
        meta["checksum"] = cell.checksum
    return meta


def _grade_id(cell) -> str | None:
    meta = cell.get("metadata", {}).get("nbgrader")
    if not isinstance(meta, dict):
        return None
    grade_id = meta.get("grade_id")
    return grade_id if isinstance(grade_id, str) and grade_id else None


def _changes(meta: dict, cell, exercise: ExerciseCell) -> list:
    """What differs from the release, in words (the points only where they count)."""
    changes = []
    if cell.cell_type != exercise.cell_type:
        changes.append(f"been made a {cell.cell_type} cell")
    for flag, words in [("grade", "graded"), ("solution", "answer"), ("locked", "read-only"), ("task", "task")]:
        if bool(meta.get(flag, False)) != getattr(exercise, flag):
            changes.append(f"its {words} flag switched {'on' if meta.get(flag) else 'off'}")
    if exercise.grade and meta.get("grade") and meta.get("points") != exercise.points:
        try:
            if float(meta.get("points")) == float(exercise.points):
                return changes
        except (TypeError, ValueError):
            pass
        changes.append(f"its points set to {meta.get('points')!r}")
    return changes


def _set_type(cell, cell_type: str) -> None:
    cell.cell_type = cell_type
    if cell_type == "code":
        cell.setdefault("outputs", [])
        cell.setdefault("execution_count", None)
        cell.pop("attachments", None)
    else:
        cell.pop("outputs", None)
        cell.pop("execution_count", None)


def repair_metadata(nb, exercise: list) -> list:
    """Give the exercise's metadata back to the cells of ``nb`` that carry its grade ids (in place).

    Args:
        nb: the submitted notebook.
        exercise: the exercise's :class:`ExerciseCell` list, in the release's order.

    Returns:
        Notes, one per repair, in the notebook's order.
    """
    known = {cell.name: cell for cell in exercise}
    last = {}  # grade id -> index of the cell that keeps it: the last copy
    for index, cell in enumerate(nb.cells):
        if _grade_id(cell) in known:
            last[_grade_id(cell)] = index
    notes, copies = [], {}
    for index, cell in enumerate(nb.cells):
        if "nbgrader" not in cell.get("metadata", {}):
            continue
        meta, grade_id = cell.metadata["nbgrader"], _grade_id(cell)
        if grade_id not in known:
            del cell.metadata["nbgrader"]
            if isinstance(meta, dict) and any(meta.get(flag) for flag in ("grade", "solution", "locked", "task")):
                name = f"id {grade_id!r}" if grade_id else "no id"
                notes.append(f"a cell with nbgrader settings but {name} (not one of the exercise's) ran as your own")
            continue
        if last[grade_id] != index:
            del cell.metadata["nbgrader"]
            copies[grade_id] = copies.get(grade_id, 1) + 1
            continue
        exercise_cell = known[grade_id]
        changes = _changes(meta if isinstance(meta, dict) else {}, cell, exercise_cell)
        if cell.cell_type != exercise_cell.cell_type:
            _set_type(cell, exercise_cell.cell_type)
        cell.metadata["nbgrader"] = canonical_metadata(exercise_cell)
        if changes:
            notes.append(f"the {exercise_cell.kind} {grade_id} had {', '.join(changes)}: graded as the exercise's")
    for grade_id, count in copies.items():
        kind = known[grade_id].kind
        notes.append(f"the {kind} {grade_id} was in the notebook {count} times: the last copy is graded")
    return notes


def missing_cells(nb, exercise: list) -> tuple:
    """``(position, exercise cell)`` for each test or locked cell missing from ``nb``, positions counted in
    the notebook as it grows (insert them in this order), and notes for the missing answer cells.

    A missing test goes as late as it can: just before the next cell of the exercise that the notebook
    still has (or last), so that it runs after the student's code, wherever they put it. A missing setup
    cell goes as early as it can: just after the exercise's cell above it (or first). Answer cells are not
    put back: the student's code may live in a cell of their own, which the release's stub must not
    override; their tests fail if the answer is nowhere.
    """
    positions = {}
    for index, cell in enumerate(nb.cells):
        if _grade_id(cell) is not None:
            positions[_grade_id(cell)] = index
    placed, notes = [], []
    for k, cell in enumerate(exercise):
        if cell.name in positions:
            continue
        if cell.solution and not cell.grade:
            notes.append(f"the answer cell {cell.name} is missing from the notebook")
            continue
        if cell.grade:
            below = [positions[c.name] for c in exercise[k + 1 :] if c.name in positions]
            position = min(below) if below else len(nb.cells) + len(placed)
        else:
            above = [positions[c.name] for c in exercise[:k] if c.name in positions]
            position = max(above) + 1 if above else 0
        for name in positions:
            if positions[name] >= position:
                positions[name] += 1
        positions[cell.name] = position
        placed.append((position, cell))
    return placed, notes
