"""The autograding cycle with the gradebook on a real PostgreSQL server, as a JupyterHub course keeps it:
nbgrader_config.py's ``c.CourseDirectory.db_url`` points at the server, and nbgrader's own commands run
unchanged (generate_assignment, db student import, autograde, export).

The server is started here, in a temporary folder on a free port (initdb + pg_ctl), as an unprivileged
user when the tests run as root (PostgreSQL refuses to run as root), and stopped afterwards. Without
PostgreSQL's programs (``initdb``/``pg_ctl`` on PATH or in /usr/lib/postgresql/*/bin) the tests are
skipped; .ci/run installs them in CI. (That `seqlab grade` never opens the class gradebook that db_url
names is checked in test_grade_command.py, with a server that does not exist.)
"""

import csv
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import nbformat
import pytest
from grading_harness import ROOT, exercise_names, graded_points, nbgrader, solved

pytestmark = pytest.mark.xdist_group("postgres")

FIRST = exercise_names(ROOT / "solutions")[0]
STUDENTS = ["perfect", "untouched"]


def postgres_programs() -> Path | None:
    """The folder that holds initdb and pg_ctl: on PATH, else the newest /usr/lib/postgresql/<version>/bin."""
    found = shutil.which("initdb")
    candidates = [Path(found).resolve().parent] if found else []
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: int("0" + p.parent.name.split(".")[0]))
    for folder in candidates + versions[::-1]:
        if (folder / "initdb").is_file() and (folder / "pg_ctl").is_file():
            return folder
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    """``postgresql://postgres@127.0.0.1:<port>``: a PostgreSQL server that trusts local connections."""
    programs = postgres_programs()
    if programs is None:
        pytest.skip("PostgreSQL is not installed: no initdb/pg_ctl on PATH or in /usr/lib/postgresql/*/bin")
    as_user, owner = [], None
    if os.geteuid() == 0:  # initdb and postgres refuse root: run them as the postgres user, or nobody
        name = next((n for n in ("postgres", "nobody") if _user_exists(n)), None)
        if name is None or shutil.which("runuser") is None:
            pytest.skip("running as root, and no postgres/nobody user or no runuser to start PostgreSQL as")
        as_user, owner = ["runuser", "-u", name, "--"], pwd.getpwnam(name)
    base = Path(tempfile.mkdtemp(prefix="seqlab-pg-"))  # not under pytest's tmp: that is private to root
    if owner is not None:
        os.chown(base, owner.pw_uid, owner.pw_gid)
    data, port = base / "data", free_port()

    def run(*command):
        result = subprocess.run(as_user + list(command), capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, f"{command[0]} failed:\n{result.stdout}\n{result.stderr}"

    try:
        run(str(programs / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync")
        options = f"-p {port} -k {base} -c listen_addresses=127.0.0.1 -c fsync=off"
        run(str(programs / "pg_ctl"), "-D", str(data), "-l", str(base / "log"), "-o", options, "-w", "start")
        yield f"postgresql://postgres@127.0.0.1:{port}"
    finally:
        if (data / "postmaster.pid").exists():
            subprocess.run(as_user + [str(programs / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"])
        shutil.rmtree(base, ignore_errors=True)


def _user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


def query(url: str, sql: str, database: str = "postgres") -> list:
    import psycopg  # the driver SQLAlchemy uses for a postgresql:// db_url

    # autocommit: CREATE DATABASE cannot run in a transaction
    with psycopg.connect(f"{url}/{database}", autocommit=True) as connection:
        cursor = connection.execute(sql)
        return cursor.fetchall() if cursor.description else []


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
    return {"root": root, "url": f"{server}", "total": sum(graded_points(solution).values()), "release": release}


def test_grades_live_in_postgres(course):
    assert not list(course["root"].glob("*.db")), "the gradebook must be on the server, not in a sqlite file"
    students = {row[0] for row in query(course["url"], "SELECT id FROM student", "gradebook")}
    assert students == set(STUDENTS)
    (grades,) = query(course["url"], "SELECT count(*) FROM grade", "gradebook")[0]
    assert grades == len(STUDENTS) * len(graded_points(course["release"]))


def test_exported_scores(course):
    with open(course["root"] / "grades.csv", newline="") as f:
        scores = {row["student_id"]: (float(row["score"]), float(row["max_score"])) for row in csv.DictReader(f)}
    total = course["total"]
    assert scores == {"perfect": (total, total), "untouched": (0.0, total)}
