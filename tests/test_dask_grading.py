"""``seqlab grade-class`` on a real Dask cluster: a scheduler and workers started here as programs (``dask
scheduler``, ``dask worker`` on 127.0.0.1), a PostgreSQL gradebook (tests/postgres_server.py), and a class
of 12 submissions over three exercises (a correct, a wrong, a damaged and a hostile one of each), graded

- by the cluster's two workers, and by a local cluster of one worker (``--jobs 1``): the same scores,
  one set of grade rows and one record per submission, and one self-check per exercise for the two
  workers of one environment;
- with a submission that sleeps past ``--timeout``: stopped, reported once, recorded nowhere;
- while one worker is killed (SIGKILL, the worker alone) as it grades: the run finishes, every
  submission graded once, no sandboxed kernel of the killed worker left, nothing half written;
- while the scheduler is killed: the command exits non-zero in bounded time and says what was graded;
  a re-run grades only the rest, and the gradebook then holds what an uninterrupted run wrote;
- by a scheduler with a worker that sees another course, and one whose kernels cannot import seqlab:
  both refuse, say why, and grade nothing; the good worker grades the class.

Nothing is mocked. The reference, the class graded by the cluster and the lost scheduler's class are
three copies of the course, each with its own database on the one server, made from a template that
holds the release (``nbgrader generate_assignment``, run once); the timeout, the killed worker and the
refusals grade again in the cluster's copy (``--force``, or a student of their own), whose self-checks
are done. Timeouts only bound hangs.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import pytest
from grading_harness import BIN, ROOT, SANDBOX_MISSING, attack, cell, exercise_names, gradebook_scores, solved
from postgres_server import free_port, postgres_server, query
from postgres_server import unavailable as postgres_unavailable

pytestmark = [
    pytest.mark.xdist_group("dask-grading"),
    pytest.mark.skipif(postgres_unavailable() is not None, reason=f"{postgres_unavailable()}"),
    pytest.mark.skipif(SANDBOX_MISSING is not None, reason=f"bubblewrap cannot run: {SANDBOX_MISSING}"),
]

EXERCISES = exercise_names(ROOT / "solutions")[:3]
KINDS = ["correct", "wrong", "damaged", "hostile"]
CLASS = [(ex, kind) for ex in EXERCISES for kind in KINDS]  # 12 submissions; the student is the kind
ENV = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", OMP_NUM_THREADS="1")
ENV["DASK_DISTRIBUTED__SCHEDULER__WORKER_SATURATION"] = "1.0"  # one task at a time on a worker
HANG = 900  # seconds: a bound on hangs only


def submission(course: Path, ex: str, kind: str):
    release = nbformat.read(course / "exercises" / ex / f"{ex}.ipynb", as_version=4)
    solution = nbformat.read(course / "solutions" / ex / f"{ex}.ipynb", as_version=4)
    if kind == "correct":
        return solved(release, solution)
    if kind == "wrong":  # the last answer left as the release's stub
        nb = solved(release, solution)
        last = [c for c in solution.cells if c.metadata.get("nbgrader", {}).get("solution") and c.cell_type == "code"]
        grade_id = last[-1].metadata.nbgrader.grade_id
        cell(nb, grade_id).source = cell(release, grade_id).source
        return nb
    return attack({"damaged": "copied_test", "hostile": "transformer"}[kind], ex, release, solution)


class Engine:
    """The PostgreSQL server, a course template, and the Dask processes this module starts."""

    def __init__(self, url: str, base: Path, tmp: Path):
        self.url, self.base, self.tmp = url, base, tmp
        self.processes = []  # every scheduler and worker started here, to stop at the end
        self.scheduler = None  # (process, address)
        self.workers = {}  # {name: process}
        self.temporary = {}  # {name: the worker's TMPDIR}

    # -- courses ---------------------------------------------------------------------------------------

    def course(self, name: str, kinds=None) -> tuple:
        """``(folder, db_url)``: a copy of the course with its own database (from the template) and the
        class's submissions (``kinds`` of every exercise, or all of them)."""
        query(self.url, f"CREATE DATABASE {name} TEMPLATE template_course")
        folder = self.tmp / name
        shutil.copytree(self.base, folder, symlinks=True)
        db_url = f"{self.url}/{name}"
        config = folder / "nbgrader_config.py"
        config.write_text(config.read_text().replace(f"{self.url}/template_course", db_url))
        for ex, kind in CLASS:
            if kinds is None or kind in kinds:
                target = folder / "submitted" / kind / ex
                target.mkdir(parents=True)
                nbformat.write(submission(folder, ex, kind), target / f"{ex}.ipynb")
        return folder, db_url

    # -- the cluster -----------------------------------------------------------------------------------

    def start_scheduler(self) -> str:
        port = free_port()
        command = [str(BIN / "dask"), "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"]
        process = self._start(command, self.tmp / f"scheduler-{port}.log")
        address = f"tcp://127.0.0.1:{port}"
        self.scheduler = (process, address)
        return address

    def start_worker(self, name: str, env=None, prefix=()) -> subprocess.Popen:
        """``dask worker`` without a nanny (killed, it stays dead), one thread, in the tests' folder; its
        temporary files (its kernels' sessions among them) in a short folder of its own, ``self.temporary``."""
        command = [*prefix, str(BIN / "dask"), "worker", self.scheduler[1], "--name", name, "--nthreads", "1"]
        command += ["--no-nanny", "--no-dashboard", "--local-directory", str(self.tmp / f"dask-{name}")]
        self.temporary[name] = Path(tempfile.mkdtemp(prefix=f"sq-{name}-"))  # kernel sockets need short paths
        env = (env or ENV) | {"TMPDIR": str(self.temporary[name])}
        process = self._start(command, self.tmp / f"worker-{name}.log", env)
        self.workers[name] = process
        return process

    def _start(self, command, log: Path, env=None) -> subprocess.Popen:
        with open(log, "ab") as out:
            process = subprocess.Popen(command, env=env or ENV, stdout=out, stderr=out, start_new_session=True)
        self.processes.append(process)
        return process

    def wait_for_workers(self, count: int) -> None:
        from distributed import Client

        with Client(self.scheduler[1], timeout=120) as client:
            client.wait_for_workers(count, timeout=HANG)

    def stop(self, process, sig=signal.SIGKILL) -> None:
        if process.poll() is None:
            try:
                os.killpg(process.pid, sig)
            except ProcessLookupError:
                pass
        process.wait(timeout=60)

    def close(self) -> None:
        for process in self.processes:
            self.stop(process)
        for folder in self.temporary.values():
            shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("dask")
    os.chmod(tmp, 0o755)  # the sandbox's kernels (another user when the tests run as root) read below it
    with postgres_server() as url:
        query(url, "CREATE DATABASE template_course")
        base = tmp / "base"
        base.mkdir()
        for name in ["nbgrader_config.py", *(f"{d}/{ex}" for d in ("solutions",) for ex in EXERCISES)]:
            if (ROOT / name).is_dir():
                shutil.copytree(ROOT / name, base / name)
            else:
                shutil.copy2(ROOT / name, base / name)
        with open(base / "nbgrader_config.py", "a") as f:
            f.write(f'\nc.CourseDirectory.db_url = "{url}/template_course"\n')
        done = subprocess.run(
            [str(BIN / "nbgrader"), "generate_assignment", "*", "--force"],
            cwd=base,
            env=ENV,
            capture_output=True,
            text=True,
            timeout=HANG,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        engine = Engine(url, base, tmp)
        try:
            yield engine
        finally:
            engine.close()


def grade_class(course: Path, *args, wait=True):
    """``seqlab grade-class ARGS --json`` in ``course``: its report, output and exit status (or the
    running process and its report's path, with ``wait=False``)."""
    report = course.parent / f"{course.name}-{time.monotonic_ns()}.json"
    command = [str(BIN / "seqlab"), "grade-class", *args, "--json", str(report)]
    if not wait:
        out = open(course.parent / f"{report.stem}.out", "w+")
        process = subprocess.Popen(command, cwd=course, env=ENV, stdout=out, stderr=subprocess.STDOUT, text=True)
        return process, report, out
    done = subprocess.run(command, cwd=course, env=ENV, capture_output=True, text=True, timeout=HANG)
    said = done.stdout + done.stderr
    assert report.is_file(), said
    return json.loads(report.read_text()) | {"output": said, "status": done.returncode}


def ended(process, out) -> str:
    """What a ``grade_class(..., wait=False)`` run printed, once it has ended (killed, if it had not)."""
    if process.poll() is None:
        process.kill()
        process.wait()
    out.seek(0)
    return out.read()


def by_status(report) -> dict:
    found = {}
    for s in report["submissions"]:
        found.setdefault(s["status"], set()).add((s["exercise"], s["student"]))
    return found


def scores(db_url: str) -> dict:
    return {ex: gradebook_scores(db_url, ex) for ex in EXERCISES}


def rows_per_submission(db_url: str) -> dict:
    """``{(exercise, student): (nbgrader's submissions, their notebooks' grade rows, seqlab's records)}``."""
    found = {}
    for ex, student, submissions in query(
        db_url.rsplit("/", 1)[0],
        "SELECT a.name, s.student_id, count(*) FROM submitted_assignment s JOIN assignment a "
        "ON s.assignment_id = a.id GROUP BY a.name, s.student_id",
        database=db_url.rsplit("/", 1)[1],
    ):
        found[ex, student] = [submissions]
    for ex, student, grades in query(
        db_url.rsplit("/", 1)[0],
        "SELECT a.name, s.student_id, count(g.id) FROM grade g JOIN submitted_notebook n ON g.notebook_id = n.id "
        "JOIN submitted_assignment s ON n.assignment_id = s.id JOIN assignment a ON s.assignment_id = a.id "
        "GROUP BY a.name, s.student_id",
        database=db_url.rsplit("/", 1)[1],
    ):
        found[ex, student].append(grades)
    for ex, student, records in query(
        db_url.rsplit("/", 1)[0],
        "SELECT exercise, student, count(*) FROM seqlab_graded GROUP BY exercise, student",
        database=db_url.rsplit("/", 1)[1],
    ):
        found.setdefault((ex, student), [0, 0]).append(records)
    return {key: tuple(value) for key, value in found.items()}


def grade_cells() -> dict:
    """``{exercise: number of graded cells}`` (a submission's grade rows)."""
    found = {}
    for ex in EXERCISES:
        nb = nbformat.read(ROOT / "solutions" / ex / f"{ex}.ipynb", as_version=4)
        found[ex] = sum(1 for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade"))
    return found


def descendants(pid: int) -> set:
    """Every process below ``pid`` (children, their children, ...)."""
    children = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def alive(pids) -> set:
    return {pid for pid in pids if Path(f"/proc/{pid}").exists() and "Z" not in _state(pid)}


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "Z"


@pytest.fixture(scope="module")
def reference(engine):
    """The class graded by a local cluster of one worker (``--jobs 1``): the scores every other run must give."""
    course, db_url = engine.course("reference")
    run = grade_class(course, "--jobs", "1")
    assert run["status"] == 0, run["output"]
    assert by_status(run) == {"graded": set(CLASS_KEYS)}, run["output"]
    return scores(db_url)


CLASS_KEYS = [(ex, kind) for ex, kind in CLASS]


@pytest.fixture(scope="module")
def cluster(engine):
    """A scheduler and two workers, started as programs."""
    engine.start_scheduler()
    engine.start_worker("one")
    engine.start_worker("two")
    engine.wait_for_workers(2)
    return engine


@pytest.fixture(scope="module")
def graded_class(cluster):
    """The class graded by the cluster's two workers: ``(course, db_url, report)``. The tests below grade
    in it again (``--force``, another student), where the workers' self-checks are already done."""
    course, db_url = cluster.course("two")
    return course, db_url, grade_class(course, "--scheduler", cluster.scheduler[1])


def test_two_workers_grade_as_one_local_worker_does(cluster, reference, graded_class):
    course, db_url, run = graded_class
    assert run["status"] == 0, run["output"]
    assert by_status(run) == {"graded": set(CLASS_KEYS)}, run["output"]
    assert f"with 2 workers on the Dask cluster at {cluster.scheduler[1]}" in run["output"]
    assert len({s["worker"] for s in run["submissions"]}) == 2, "one worker graded everything"
    assert scores(db_url) == reference
    cells = grade_cells()
    assert rows_per_submission(db_url) == {(ex, kind): (1, cells[ex], 1) for ex, kind in CLASS_KEYS}
    # the two workers share one environment: each exercise's self-check ran once, not once per worker
    server, database = db_url.rsplit("/", 1)
    checks = query(server, "SELECT exercise, count(*) FROM seqlab_self_checks GROUP BY exercise", database=database)
    assert dict(checks) == {ex: 1 for ex in EXERCISES}


SLEEPER = "import time\n\ntime.sleep(600)  # an experiment that runs past the run's --timeout\n\n"


def test_a_submission_past_the_timeout_fails_once_and_leaves_nothing(cluster, graded_class):
    """``--timeout``: the worker's grading process stops the grading at the limit, kernels and all; the
    submission is reported failed, tried once, recorded nowhere, and no autograded notebook is left."""
    course, db_url, _ = graded_class
    ex = EXERCISES[0]
    nb = submission(course, ex, "correct")
    first = next(c for c in nb.cells if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("solution"))
    first.source = SLEEPER + first.source
    (course / "submitted" / "sleeper" / ex).mkdir(parents=True)
    nbformat.write(nb, course / "submitted" / "sleeper" / ex / f"{ex}.ipynb")
    run = grade_class(course, "--scheduler", cluster.scheduler[1], "--timeout", "30", "--student", "sleeper")
    assert run["status"] == 1, run["output"]
    (row,) = run["submissions"]
    assert row["status"] == "failed" and row["reason"] == "took longer than 30 s and was stopped", run["output"]
    assert 30 <= row["seconds"] < 30 + 60, row["seconds"]
    assert run["seconds"] < 30 + 45, run["output"]  # tried once, not retried (each try takes 30 s)
    assert not list((course / "autograded").glob("sleeper/*/*.ipynb")), "a notebook of the stopped grading is left"
    server, database = db_url.rsplit("/", 1)
    recorded = query(server, "SELECT count(*) FROM seqlab_graded WHERE student = 'sleeper'", database=database)
    assert recorded == [(0,)], "the late grading was recorded"
    left = [p for w in cluster.workers.values() for p in alive(descendants(w.pid)) if b"bwrap" in _cmdline(p)]
    assert not left, "a sandbox of the stopped grading still runs"


def grading_in(course: Path, pids) -> bool:
    """Whether one of ``pids`` is a grading process grading a student of ``course`` (it works in the
    course folder, where a self-check works in a throwaway one) with its sandbox up."""
    working = set()
    for pid in pids:
        try:
            working.add(Path(os.readlink(f"/proc/{pid}/cwd")))
        except OSError:
            pass
    return course in working and any(b"bwrap" in _cmdline(pid) for pid in pids)


def test_a_worker_killed_while_it_grades_loses_nothing(cluster, reference, graded_class):
    course, db_url, _ = graded_class
    expected = {(ex, kind) for ex, kind in CLASS_KEYS if kind in ("correct", "wrong")}
    selected = ["--force", "--student", "correct", "--student", "wrong"]
    process, report, out = grade_class(course, "--scheduler", cluster.scheduler[1], *selected, wait=False)
    try:
        victim, kernels = None, set()
        deadline = time.monotonic() + HANG
        while victim is None and time.monotonic() < deadline and process.poll() is None:
            for name, worker in cluster.workers.items():
                below = descendants(worker.pid)
                if grading_in(course, below):
                    victim, kernels = name, below
                    break
            time.sleep(0.2)
        assert victim is not None, "no worker was seen grading"
        # SIGKILL to the worker alone, mid-grading (as the kernel's OOM killer would): its grading process,
        # and the sandboxed kernels below it, must notice and stop by themselves
        os.kill(cluster.workers[victim].pid, signal.SIGKILL)
        cluster.workers[victim].wait(timeout=60)
        process.wait(timeout=HANG)
    finally:
        output = ended(process, out)
    deadline = time.monotonic() + 20  # its grading process notices within a second, and stops its kernels
    while alive(kernels) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not alive(kernels), f"processes of the killed worker still run: {alive(kernels)}"
    # and its kernels' sessions were closed: no tmpfs of theirs is left mounted
    assert not mounted_below(cluster.temporary[victim]), "a kernel session of the killed worker is still mounted"
    run = json.loads(report.read_text())
    assert process.returncode == 0, output
    assert by_status(run) == {"graded": expected}, output
    got = scores(db_url)
    for ex in EXERCISES:  # (the timeout's sleeper aside)
        assert {k: v for k, v in got[ex].items() if k in reference[ex]} == reference[ex], ex
    cells = grade_cells()
    rows = rows_per_submission(db_url)
    assert {k: rows[k] for k in CLASS_KEYS} == {(ex, kind): (1, cells[ex], 1) for ex, kind in CLASS_KEYS}
    for ex, kind in expected:  # nothing half-written: each autograded notebook whole, one per submission
        (notebook,) = (course / "autograded" / kind / ex).glob("*.ipynb")
        nbformat.read(notebook, as_version=4)
    cluster.start_worker(f"{victim}-again")
    cluster.wait_for_workers(2)


def mounted_below(folder: Path) -> list:
    """The mount points below ``folder`` (a kernel session's tmpfs)."""
    with open("/proc/mounts") as mounts:
        return [line.split()[1] for line in mounts if line.split()[1].startswith(f"{folder}/")]


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def test_a_lost_scheduler_ends_the_run_and_a_rerun_grades_the_rest(cluster, reference):
    course, db_url = cluster.course("lost")
    process, report, out = grade_class(course, "--scheduler", cluster.scheduler[1], wait=False)
    try:
        deadline = time.monotonic() + HANG
        while time.monotonic() < deadline and process.poll() is None:
            out.seek(0)
            if "[ 2/12] graded" in out.read():
                break
            time.sleep(0.2)
        cluster.stop(cluster.scheduler[0])  # SIGKILL
        killed = time.monotonic()
        process.wait(timeout=HANG)
        stopped_after = time.monotonic() - killed
    finally:
        output = ended(process, out)
    for worker in list(cluster.workers.values()):  # the workers went with their scheduler; none grades on
        cluster.stop(worker)
    first = json.loads(report.read_text())
    assert process.returncode == 3, output
    assert stopped_after < 90, stopped_after  # 15 s without a scheduler, then the table
    assert "the Dask scheduler was lost" in output
    graded, lost = by_status(first).get("graded", set()), by_status(first).get("lost", set())
    assert graded and lost and graded | lost == set(CLASS_KEYS), output
    # a fresh cluster: the re-run grades only what was not graded
    cluster.start_scheduler()
    cluster.start_worker("three")
    cluster.start_worker("four")
    cluster.wait_for_workers(2)
    again = grade_class(course, "--scheduler", cluster.scheduler[1])
    assert again["status"] == 0, again["output"]
    assert by_status(again)["graded"] <= lost
    assert by_status(again).get("unchanged", set()) >= graded
    assert set.union(*by_status(again).values()) == set(CLASS_KEYS)
    assert scores(db_url) == reference
    cells = grade_cells()
    assert rows_per_submission(db_url) == {(ex, kind): (1, cells[ex], 1) for ex, kind in CLASS_KEYS}


BROKEN_KERNEL = (
    "import sys; sys.modules['seqlab'] = None  # an environment that cannot import seqlab\n"
    "from ipykernel import kernelapp; kernelapp.launch_new_instance()"
)


def test_workers_that_see_another_course_or_cannot_import_seqlab_grade_nothing(engine, reference, graded_class):
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("a worker that sees another course at the same path needs a mount namespace (root, unshare)")
    course, db_url, _ = graded_class
    expected = {(ex, kind) for ex, kind in CLASS_KEYS if kind in ("correct", "wrong")}
    # another release of the course, seen by one worker at the course's own path
    other = engine.tmp / "other-course"
    shutil.copytree(course, other, symlinks=True)
    release = other / "exercises" / EXERCISES[0] / f"{EXERCISES[0]}.ipynb"
    release.write_text(release.read_text().replace("YOUR CODE HERE", "YOUR CODE HERE (release 2)"))
    # a kernel spec whose kernels cannot import seqlab, for another worker
    spec = engine.tmp / "broken-jupyter" / "kernels" / "python3"
    spec.mkdir(parents=True)
    argv = [sys.executable, "-c", BROKEN_KERNEL, "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": "Python 3", "language": "python"}))

    engine.start_scheduler()
    engine.start_worker("good")
    mount = ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c"]
    mount += ['mount --bind "$1" "$2" && shift 2 && exec "$@"', "sh", str(other), str(course)]
    engine.start_worker("other-course", prefix=mount)
    engine.start_worker("broken", env=ENV | {"JUPYTER_PATH": str(engine.tmp / "broken-jupyter")})
    engine.wait_for_workers(3)
    run = grade_class(
        course, "--scheduler", engine.scheduler[1], "--force", "--student", "correct", "--student", "wrong"
    )
    assert run["status"] == 0, run["output"]
    assert by_status(run) == {"graded": expected}, run["output"]
    refused = run["refused"]
    assert len(refused) == 2, run["output"]
    reasons = " | ".join(refused.values())
    assert f"it sees another course at {course}: exercises/{EXERCISES[0]}/{EXERCISES[0]}.ipynb differs" in reasons
    assert "its environment is broken" in reasons and "seqlab" in reasons, reasons
    assert not {s["worker"] for s in run["submissions"]} & set(refused), "a refusing worker graded"
    for worker in refused:
        assert f"worker {worker} refuses to grade" in run["output"]
    got = scores(db_url)
    for ex in EXERCISES:  # (the timeout's sleeper aside)
        assert {k: v for k, v in got[ex].items() if k in reference[ex]} == reference[ex], ex
