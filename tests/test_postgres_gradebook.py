"""The autograding cycle with the gradebook on a real PostgreSQL server, as a JupyterHub course keeps it:
nbgrader_config.py's ``c.CourseDirectory.db_url`` points at the server, and nbgrader's own commands run
unchanged (generate_assignment, db student import, autograde, export).

The server is started here (tests/postgres_server.py), in a temporary folder on a free port (initdb +
pg_ctl), as an unprivileged user when the tests run as root (PostgreSQL refuses to run as root), and
stopped afterwards. Without PostgreSQL's programs (``initdb``/``pg_ctl`` on PATH or in
/usr/lib/postgresql/*/bin) the tests are skipped; .ci/run installs them in CI. (That `seqlab grade`
never opens the class gradebook that db_url names is checked in test_grade_command.py, with a server
that does not exist.)
"""

import csv
import shutil

import nbformat
import pytest
from grading_harness import ROOT, exercise_names, graded_points, nbgrader, solved, written_points
from postgres_server import postgres_server, query, unavailable

pytestmark = pytest.mark.xdist_group("postgres")

FIRST = exercise_names(ROOT / "solutions")[0]
STUDENTS = ["perfect", "untouched"]


@pytest.fixture(scope="module")
def server():
    """``postgresql://postgres@127.0.0.1:<port>``: a PostgreSQL server that trusts local connections
    (tests/postgres_server.py)."""
    reason = unavailable()
    if reason is not None:
        pytest.skip(reason)
    with postgres_server() as url:
        yield url


@pytest.fixture(scope="module")
def course(server, tmp_path_factory):
    """A course whose gradebook is the database ``gradebook`` on the server, graded for two students."""
    query(server, "CREATE DATABASE gradebook")
    root = tmp_path_factory.mktemp("pg-course")
    shutil.copytree(ROOT / "solutions" / FIRST, root / "solutions" / FIRST)
    config = (ROOT / "nbgrader_config.py").read_text()
    (root / "nbgrader_config.py").write_text(config + f'\nc.CourseDirectory.db_url = "{server}/gradebook"\n')
    nbgrader(root, "generate_assignment", FIRST, "--force")
    (root / "students.csv").write_text("id,first_name,last_name\n" + "".join(f"{s},{s},Student\n" for s in STUDENTS))
    nbgrader(root, "db", "student", "import", "students.csv")
    release = nbformat.read(root / "exercises" / FIRST / f"{FIRST}.ipynb", as_version=4)
    solution = nbformat.read(root / "solutions" / FIRST / f"{FIRST}.ipynb", as_version=4)
    for student, nb in [("perfect", solved(release, solution)), ("untouched", release)]:
        (root / "submitted" / student / FIRST).mkdir(parents=True)
        nbformat.write(nb, root / "submitted" / student / FIRST / f"{FIRST}.ipynb")
    nbgrader(root, "autograde", FIRST)
    nbgrader(root, "export", "--to=grades.csv")
    autograded, written = sum(graded_points(solution).values()), sum(written_points(solution).values())
    return {"root": root, "url": f"{server}", "autograded": autograded, "written": written, "release": release}


def test_grades_live_in_postgres(course):
    assert not list(course["root"].glob("*.db")), "the gradebook must be on the server, not in a sqlite file"
    students = {row[0] for row in query(course["url"], "SELECT id FROM student", "gradebook")}
    assert students == set(STUDENTS)
    (grades,) = query(course["url"], "SELECT count(*) FROM grade", "gradebook")[0]
    assert grades == len(STUDENTS) * len(graded_points(course["release"]) | written_points(course["release"]))


def test_exported_scores(course):
    with open(course["root"] / "grades.csv", newline="") as f:
        scores = {row["student_id"]: (float(row["score"]), float(row["max_score"])) for row in csv.DictReader(f)}
    # the written answers wait for the instructor: out of the total, not yet in the perfect score
    total = course["autograded"] + course["written"]
    assert scores == {"perfect": (course["autograded"], total), "untouched": (0.0, total)}
