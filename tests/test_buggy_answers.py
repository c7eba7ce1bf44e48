"""Realistic wrong answers score below full marks, graded by nbgrader with the hidden tests.

Each bug is a small edit of an answer cell of the solution, the kind of mistake a student makes; the
notebook is otherwise solved. Every bug is one student of a temporary course, so one ``nbgrader
autograde`` run grades them all, with the solution itself as a control that must score full marks.
Each bug must lose points, and in particular fail the test cells that are there to catch it (other test
cells may fail too).

| exercise | bug | the edit | must fail |
|---|---|---|---|
| ex07 | padding attended | no mask at all: neither filled before the softmax nor applied after it | by hand, seqlab |
| ex07 | softmax over the wrong axis | ``softmax(dim=0)``: over the batch | by hand, rows, seqlab |
| ex07 | weights not summing to one | the mask applied after a softmax over every position | by hand, rows, seqlab |
| ex08 | scaling by d | scores ``/ d`` instead of ``/ math.sqrt(d)`` | the example by hand, torch |
| ex08 | heads split along the wrong axis | ``reshape(B, h, L, d)``: positions cut into heads | split_heads, torch |
| ex08 | mask inverted | True read as "ignore" (torch's convention) | masks, torch |
| ex08 | softmax over the queries | ``softmax(dim=-2)`` | the example by hand, masks, torch |
"""

import shutil

import nbformat
import pytest
from grading_harness import ROOT, cell, gradebook_scores, graded_points, nbgrader, solved


class Bug:
    def __init__(self, exercise: str, answer: str, edits: list, must_fail: set):
        self.exercise = exercise  # the exercise's name
        self.answer = answer  # grade id of the answer cell that gets the bug
        self.edits = edits  # (the solution's code, the buggy code) pairs, each found once in that cell
        self.must_fail = must_fail  # grade ids of the test cells that must catch it


EX07 = "ex07_attention_pooling"
EX08 = "ex08_multihead_attention"
EX07_FILL = "filled = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)"
BUGS = {
    "padding_attended": Bug(
        EX07,
        "masked_softmax",
        [(EX07_FILL, "filled = scores"), ("return weights * mask", "return weights")],
        {"test_masked_softmax_by_hand", "test_pool_matches_seqlab"},
    ),
    "softmax_over_the_batch": Bug(
        EX07,
        "masked_softmax",
        [("torch.softmax(filled, dim=-1)", "torch.softmax(filled, dim=0)")],
        {"test_masked_softmax_by_hand", "test_masked_softmax_rows", "test_pool_matches_seqlab"},
    ),
    "weights_not_summing_to_one": Bug(
        EX07,
        "masked_softmax",
        [(EX07_FILL, "filled = scores")],
        {"test_masked_softmax_by_hand", "test_masked_softmax_rows", "test_pool_matches_seqlab"},
    ),
    "scaling_by_d": Bug(
        EX08,
        "scaled_dot_product_attention",
        [("/ math.sqrt(d)", "/ d")],
        {"test_attention_by_hand", "test_matches_torch"},
    ),
    "heads_split_along_the_wrong_axis": Bug(
        EX08,
        "split_heads",
        [
            (".reshape(B, L, num_heads, E // num_heads).transpose(1, 2)", ".reshape(B, num_heads, L, E // num_heads)"),
            (".transpose(1, 2).reshape(B, L, num_heads * d)", ".reshape(B, L, num_heads * d)"),  # its inverse
        ],
        {"test_split_heads", "test_matches_torch"},
    ),
    "mask_inverted": Bug(
        EX08,
        "scaled_dot_product_attention",
        [("masked_fill(~allowed,", "masked_fill(allowed,"), ("weights * allowed", "weights * ~allowed")],
        {"test_attention_masks", "test_matches_torch"},
    ),
    "softmax_over_the_queries": Bug(
        EX08,
        "scaled_dot_product_attention",
        [("torch.softmax(scores, dim=-1)", "torch.softmax(scores, dim=-2)")],
        {"test_attention_by_hand", "test_attention_masks", "test_matches_torch"},
    ),
}


def with_bug(release, solution, bug: Bug):
    """The release, solved from the solution, with ``bug``'s edits in its answer cell."""
    nb = solved(release, solution)
    answer = cell(nb, bug.answer)
    for correct, wrong in bug.edits:
        assert answer.source.count(correct) == 1, f"{bug.answer} no longer holds {correct!r} once: update the bug"
        answer.source = answer.source.replace(correct, wrong)
    return nb


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """``{bug: (score, max_score, {grade_id: (auto_score, max_score)})}``, and each exercise's points."""
    course = tmp_path_factory.mktemp("buggy")
    shutil.copy2(ROOT / "nbgrader_config.py", course)
    exercises = sorted({bug.exercise for bug in BUGS.values()})
    points = {}
    for name in exercises:
        shutil.copytree(ROOT / "solutions" / name, course / "solutions" / name)
        nbgrader(course, "generate_assignment", name, "--force")
        release = nbformat.read(course / "exercises" / name / f"{name}.ipynb", as_version=4)
        solution = nbformat.read(course / "solutions" / name / f"{name}.ipynb", as_version=4)
        points[name] = graded_points(solution)
        submissions = {f"control_{name}": solved(release, solution)}
        bugs = {student: bug for student, bug in BUGS.items() if bug.exercise == name}
        submissions |= {student: with_bug(release, solution, bug) for student, bug in bugs.items()}
        for student, nb in submissions.items():
            folder = course / "submitted" / student / name
            folder.mkdir(parents=True)
            nbformat.write(nb, folder / f"{name}.ipynb")
    db_url = f"sqlite:///{course / 'gradebook.db'}"
    scores = {}
    for name in exercises:
        nbgrader(course, "autograde", name)  # every bug of the exercise in one run
        scores |= {student: result for student, result in gradebook_scores(db_url, name).items()}
    return scores, points


@pytest.mark.parametrize("name", sorted({bug.exercise for bug in BUGS.values()}))
def test_the_solution_scores_full_marks_in_the_same_run(graded, name):
    scores, points = graded
    score, max_score, grades = scores[f"control_{name}"]
    assert score == max_score == sum(points[name].values()), grades


@pytest.mark.parametrize("student", BUGS)
def test_a_buggy_answer_scores_below_full_marks(graded, student):
    scores, points = graded
    bug = BUGS[student]
    assert student in scores, f"{student}'s notebook was not graded"
    score, max_score, grades = scores[student]
    assert max_score == sum(points[bug.exercise].values())
    assert score < max_score, f"{student} scored full marks: {grades}"
    caught = {grade_id for grade_id, (auto, _) in grades.items() if auto == 0}
    assert bug.must_fail <= caught, f"{student}: {sorted(bug.must_fail - caught)} passed; grades {grades}"
    print(f"{student}: {score:g} / {max_score:g}, failing {sorted(caught)}")
