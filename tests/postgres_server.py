"""A throwaway PostgreSQL server for the tests that keep the gradebook on one (the PostgreSQL gradebook,
the class cycle): started with initdb and pg_ctl in a temporary folder on a free port, as an unprivileged
user when the tests run as root (PostgreSQL refuses to run as root), stopped afterwards.

``unavailable()`` says why no server can start here (no initdb/pg_ctl on PATH or in
/usr/lib/postgresql/*/bin; .ci/run installs them), or ``None``. pytest puts tests/ on sys.path, so test
files import this module as ``postgres_server``.
"""

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from contextlib import contextmanager
from pathlib import Path


def postgres_programs() -> Path | None:
    """The folder that holds initdb and pg_ctl: on PATH, else the newest /usr/lib/postgresql/<version>/bin."""
    found = shutil.which("initdb")
    candidates = [Path(found).resolve().parent] if found else []
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: int("0" + p.parent.name.split(".")[0]))
    for folder in candidates + versions[::-1]:
        if (folder / "initdb").is_file() and (folder / "pg_ctl").is_file():
            return folder
    return None


def _user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


def _run_as() -> tuple:
    """``(command prefix, passwd entry)`` to run PostgreSQL's programs as; ``([], None)`` when not root."""
    if os.geteuid() != 0:
        return [], None
    name = next((n for n in ("postgres", "nobody") if _user_exists(n)), None)
    if name is None or shutil.which("runuser") is None:
        return None, None
    return ["runuser", "-u", name, "--"], pwd.getpwnam(name)


def unavailable() -> str | None:
    """Why no PostgreSQL server can be started here, or ``None``."""
    if postgres_programs() is None:
        return "PostgreSQL is not installed: no initdb/pg_ctl on PATH or in /usr/lib/postgresql/*/bin"
    if _run_as()[0] is None:
        return "running as root, and no postgres/nobody user or no runuser to start PostgreSQL as"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def postgres_server():
    """``postgresql://postgres@127.0.0.1:<port>``: a PostgreSQL server that trusts local connections."""
    reason = unavailable()
    if reason is not None:
        raise RuntimeError(reason)
    programs = postgres_programs()
    as_user, owner = _run_as()
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


def query(url: str, sql: str, database: str = "postgres") -> list:
    import psycopg  # the driver SQLAlchemy uses for a postgresql:// db_url

    # autocommit: CREATE DATABASE cannot run in a transaction
    with psycopg.connect(f"{url}/{database}", autocommit=True) as connection:
        cursor = connection.execute(sql)
        return cursor.fetchall() if cursor.description else []
