"""What of a submission enters grading: regular files only, read without following a link, and one notebook.

A submission's folder (``submitted/<student>/<exercise>/``) is data a student made, not files to trust:
a symbolic link in it can point at the instructor's solutions, a classmate's notebook or ``/dev/zero``;
a hard link can be a second name of a file outside it; a FIFO blocks whoever reads it; a module named
``torch.py`` beside the notebook is imported by a kernel that starts in that folder. Before anything is
hashed, copied or read, :func:`inspect` lists the folder without following a single link
(``os.lstat``): regular files with one name and a sensible size are accepted; every symbolic link,
hard link, device, FIFO and socket is refused with its reason, and the rest of the student's files are
graded. :func:`stage` copies the accepted files into a fresh folder (each opened with ``O_NOFOLLOW`` and
checked again once open), the one notebook under the exercise's own name, so that ``ex01_lstm_cell
(1).ipynb`` (a browser's download) is graded as ``ex01_lstm_cell.ipynb``; two notebooks are refused,
naming both.

``seqlab.grading.nbgrader_plugins.SafeAutograde`` is nbgrader's ``Autograde`` converter reading each
submission from its staged copy: nbgrader's own steps (its copy of the submission's files into
``autograded/``, its reading of the notebook and of ``timestamp.txt``) never see the original folder.
``nbgrader_config.py`` installs it (``nbgrader_plugins.install_safe_autograde``) for ``nbgrader
autograde``, the formgrader's autograde button and ``NbGraderAPI``; ``seqlab grade-class`` uses it
directly.
"""

import errno
import json
import os
import re
import stat
import warnings
from dataclasses import dataclass, field
from fnmatch import fnmatch
from pathlib import Path

import nbformat

__all__ = ["Intake", "SubmissionRefused", "check_folder", "check_names", "inspect", "json_depth", "read_notebook_json"]
__all__ += ["leave_out_shadowed", "read_regular", "stage", "the_notebook"]

MAX_FILE_BYTES = 64 * 2**20  # a file larger than this is refused (a notebook with its outputs is far smaller)
MAX_TOTAL_BYTES = 256 * 2**20  # all of a submission's accepted files together
MAX_ENTRIES = 2000  # files and folders in one submission
MAX_DEPTH = 16  # folders inside folders
MAX_JSON_DEPTH = 64  # a notebook's JSON nests about 6 deep; 100,000 deep makes json.loads recurse until it fails
PLACEHOLDER = '{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}'
IGNORED = (".ipynb_checkpoints", "__pycache__", "*.pyc")


class SubmissionRefused(Exception):
    """The submission as a whole cannot be graded (no notebook, two notebooks, a corrupt notebook)."""


@dataclass
class Intake:
    """What :func:`inspect` found in a submission's folder."""

    files: list = field(default_factory=list)  # relative paths of the accepted regular files
    notebooks: list = field(default_factory=list)  # the accepted notebooks at the top of the folder
    refused: list = field(default_factory=list)  # "path: why" for each entry left out

    def notes(self) -> list:
        """One line per refused entry, as the grader writes them into the notebook and the class summary."""
        return [f"not graded: {item}" for item in self.refused]


ODD_NAME = re.compile(r"[\x00-\x1f\x7f]")


def _utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
        return True
    except UnicodeEncodeError:  # a byte that is not UTF-8, kept by Python as a surrogate
        return False


def _kind(mode: int) -> str | None:
    """Why an entry of this mode is refused, or ``None`` for a regular file or a folder."""
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return "not a regular file"


def inspect(folder, ignore=IGNORED) -> Intake:
    """The submission in ``folder``, listed without following any link (see the module docstring)."""
    folder = Path(folder)
    top = os.lstat(folder)
    if not stat.S_ISDIR(top.st_mode):
        raise SubmissionRefused(f"{folder} is {_kind(top.st_mode) or 'a file'}, not a folder")
    intake, total, entries = Intake(), 0, 0

    def walk(path: Path, relative: str, depth: int) -> None:
        nonlocal total, entries
        with os.scandir(path) as listing:
            names = sorted(listing, key=lambda e: e.name)
        for entry in names:
            rel = f"{relative}{entry.name}"
            if any(fnmatch(entry.name, pattern) for pattern in ignore):
                continue
            if ODD_NAME.search(entry.name) or not _utf8(entry.name):
                entries += 1
                intake.refused.append(f"{ascii(relative + entry.name)}: a name with control characters or not UTF-8")
                continue
            entries += 1
            if entries > MAX_ENTRIES:
                intake.refused.append(f"{rel}: more than {MAX_ENTRIES} files and folders; the rest is not read")
                return
            info = entry.stat(follow_symlinks=False)
            why = _kind(info.st_mode)
            if why == "a symbolic link":
                why = f"a symbolic link (to {os.readlink(entry.path)!r}); links are never followed"
            if why is not None:
                intake.refused.append(f"{rel}: {why}")
            elif stat.S_ISDIR(info.st_mode):
                if depth >= MAX_DEPTH:
                    intake.refused.append(f"{rel}: folders nested more than {MAX_DEPTH} deep")
                else:
                    walk(Path(entry.path), rel + "/", depth + 1)
            elif info.st_nlink > 1:
                names = info.st_nlink
                intake.refused.append(f"{rel}: a hard link (the file has {names} names, maybe outside the submission)")
            elif info.st_size > MAX_FILE_BYTES:
                intake.refused.append(f"{rel}: {info.st_size:,} bytes, more than {MAX_FILE_BYTES:,}")
            elif total + info.st_size > MAX_TOTAL_BYTES:
                intake.refused.append(f"{rel}: the submission's files pass {MAX_TOTAL_BYTES:,} bytes in all here")
            else:
                total += info.st_size
                intake.files.append(rel)
                if depth == 0 and entry.name.endswith(".ipynb"):
                    intake.notebooks.append(rel)

    walk(folder, "", 0)
    return intake


def read_regular(folder, rel: str, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of the regular file ``rel`` under ``folder``: every folder on the way and the file itself
    opened relative to the one before, none of them through a link (a folder swapped for a link between
    :func:`inspect` and this read is refused, not followed), and the file checked once open."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(folder, flags | os.O_DIRECTORY)
        try:
            for part in rel.split("/")[:-1]:
                inner = os.open(part, flags | os.O_DIRECTORY, dir_fd=fd)
                os.close(fd)
                fd = inner
            file = os.open(rel.split("/")[-1], flags | os.O_NONBLOCK, dir_fd=fd)
        finally:
            os.close(fd)
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.ENOTDIR):
            raise SubmissionRefused(f"{rel} changed into a link or a file while it was read") from None
        raise
    with os.fdopen(file, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_nlink > 1:
            raise SubmissionRefused(f"{rel} is no longer a regular file with one name")
        data = f.read(limit + 1)
    if len(data) > limit:
        raise SubmissionRefused(f"{rel} has more than {limit:,} bytes")
    return data


SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}")


def check_names(student: str, exercise: str) -> None:
    """Student ids and exercise names become paths, gradebook rows and text in the formgrader's pages (which
    nbgrader does not escape everywhere): letters, digits and ``. _ @ + -``, not starting with a sign."""
    for what, name in (("student id", student), ("exercise name", exercise)):
        if not SAFE_NAME.fullmatch(name):
            raise SubmissionRefused(f"the {what} {ascii(name)} is not letters, digits and . _ @ + - only")


def check_folder(folder) -> None:
    """The submission's folder and its student's folder are real folders, not links to elsewhere."""
    for path in (Path(folder), Path(folder).parent):
        mode = os.lstat(path).st_mode
        if not stat.S_ISDIR(mode):
            raise SubmissionRefused(f"{path.name} is {_kind(mode) or 'a file'}, not a folder; links are never followed")


def json_depth(text: str) -> int:
    """How deep the JSON text's brackets nest (strings skipped), without parsing it."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def read_notebook_json(data: bytes, name: str) -> dict:
    """The notebook's JSON, or :class:`SubmissionRefused` saying how it is corrupt (encoding, nesting, syntax)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise SubmissionRefused(f"corrupt notebook {name}: it is not UTF-8 text") from None
    if json_depth(text) > MAX_JSON_DEPTH:
        raise SubmissionRefused(f"corrupt notebook {name}: its JSON nests more than {MAX_JSON_DEPTH} deep")
    try:
        nb = json.loads(text)
    except (ValueError, RecursionError) as error:
        raise SubmissionRefused(f"corrupt notebook {name}: not valid JSON ({str(error)[:120]})") from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise SubmissionRefused(f"corrupt notebook {name}: it has no list of cells")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # nbformat warns about cells without ids, which it then adds
            nbformat.validate(nbformat.reads(text, as_version=4, capture_validation_error={}))
    except Exception as error:  # nbformat raises several kinds (ValidationError, NBFormatError, KeyError, ...)
        first = (str(error).strip().splitlines() or [type(error).__name__])[0][:120]
        raise SubmissionRefused(f"corrupt notebook {name}: it does not follow the notebook format ({first})") from None
    return nb


def the_notebook(intake: Intake, exercise: str) -> str:
    """The one notebook of the submission, whatever its name; :class:`SubmissionRefused` for none or two."""
    if not intake.notebooks:
        refused = [r for r in intake.refused if r.split(":")[0].endswith(".ipynb")]
        detail = f" ({'; '.join(refused)})" if refused else ""
        raise SubmissionRefused(f"no notebook in the submission of {exercise}{detail}")
    if len(intake.notebooks) > 1:
        raise SubmissionRefused(
            f"{len(intake.notebooks)} notebooks in the submission of {exercise} "
            f"({', '.join(intake.notebooks)}): hand in exactly one"
        )
    return intake.notebooks[0]


def leave_out_shadowed(intake: Intake, target: str, notebook: str) -> list:
    """The files in a folder named as the notebook will be (``ex01_lstm_cell.ipynb/``): refused, since the
    notebook takes that name; returns them."""
    shadowed = [rel for rel in intake.files if rel != notebook and rel.split("/")[0] == target]
    intake.files = [rel for rel in intake.files if rel not in shadowed]
    intake.refused += [f"{rel}: in a folder named as the notebook ({target})" for rel in shadowed]
    return shadowed


def stage(folder, dest, exercise: str, notebook_name: str | None = None, ignore=IGNORED) -> Intake:
    """Copy the accepted files of the submission in ``folder`` into the new folder ``dest``; its one
    notebook becomes ``<notebook_name or exercise>.ipynb``. Returns what was found (refusals included)."""
    folder, dest = Path(folder), Path(dest)
    intake = inspect(folder, ignore)
    notebook = the_notebook(intake, exercise)
    dest.mkdir(parents=True)
    target = f"{notebook_name or exercise}.ipynb"
    shadowed = leave_out_shadowed(intake, target, notebook)
    for rel in intake.files:
        if rel in shadowed:
            continue
        data = read_regular(folder, rel)
        if rel == notebook:
            read_notebook_json(data, rel)
            rel = target
        elif rel.endswith(".ipynb") and "/" not in rel:
            continue  # only the notebook is a notebook
        copy = dest / rel
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_bytes(data)
    return intake
