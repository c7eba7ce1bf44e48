"""Render the book as `make book` does, but from the notebooks' stored outputs (no execution, so it
takes seconds), into a temporary folder: the tests never read a stale _build/, and CI runs them too.

Shared by tests/test_course_integrity.py (no solution in any edition of the rendered book) and
tests/test_browser.py (the book as readers see it, in Chromium): :func:`shared_book` renders the book and
its Chinese editions once per test session, whichever pytest-xdist worker asks first, and both read it.
pytest puts tests/ on sys.path (the folder has no __init__.py), so test files import this module as
``rendered_book``.
"""

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml
from filelock import FileLock

ROOT = Path(__file__).resolve().parents[1]
JUPYTER_BOOK = Path(sys.executable).parent / "jupyter-book"


def _load_editions_tool():
    spec = importlib.util.spec_from_file_location("book_editions", ROOT / "tools" / "book_editions.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


editions = _load_editions_tool()


def shared_book(tmp_path_factory) -> Path:
    """The English book with its Chinese editions in ``zh_CN/`` and ``zh_TW/``, rendered once per test session
    and shared by every test that asks (read it, never write into it): the first pytest-xdist worker builds
    it under a file lock, the others wait and use it. A failed build leaves no "done" mark, so the next
    caller builds again and reports its own failure."""
    base = tmp_path_factory.getbasetemp()
    # Under xdist each worker's base is a folder of the session's own; its parent is the session's.
    folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "shared-rendered-book"
    done = folder / "done"
    with FileLock(str(folder) + ".lock"):
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)  # what a failed build may have left half written
            html_dir = render_book(folder)
            for language in editions.TRANSLATED:
                editions.build_edition(language, html_dir / language)
            done.write_text("rendered\n")
    return folder / "_build" / "html"


def render_book(out_dir: Path) -> Path:
    """Build the book from its stored outputs into ``out_dir/_build/html`` and return that folder.

    Uses the repository's _config.yml, which `make book` uses, and builds with `make book`'s flags: a
    warning (a broken reference, an unknown glossary term or citation) fails it.
    """
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    assert config["execute"]["execute_notebooks"] == "off", "make book must build from the stored outputs"
    # jupyter-book finds local extensions relative to the configuration file: point at the repository's.
    local = config.get("sphinx", {}).get("local_extensions") or {}
    for name, path in local.items():
        local[name] = str((ROOT / path).resolve())
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "_config.yml").write_text(yaml.safe_dump(config, allow_unicode=True, sort_keys=False), encoding="utf-8")
    build = subprocess.run(
        [
            str(JUPYTER_BOOK),
            "build",
            str(ROOT),
            "--config",
            str(out_dir / "_config.yml"),
            "--path-output",
            str(out_dir),
            "--warningiserror",
            "--keep-going",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    log = build.stdout + build.stderr
    warnings = [line for line in log.splitlines() if "WARNING" in line or "ERROR" in line]
    assert build.returncode == 0, "jupyter-book build failed:\n" + "\n".join(warnings[:30] or [log[-3000:]])
    return out_dir / "_build" / "html"
