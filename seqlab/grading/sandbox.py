"""The sandbox every graded kernel runs in: bubblewrap (``bwrap``, the sandbox behind Flatpak).

A student's notebook is code from someone else, run with the grader's rights. Inside the sandbox the
kernel sees, read-only, only what it needs to run: the system's programs and libraries, the Python
environment, and the ``seqlab`` package. It does not see the course folder itself (``solutions/``, the
gradebook, ``nbgrader_config.py``, other students' submissions), the grader's home folder, or the
grader's environment variables (a gradebook password among them). It writes only to its scratch
folder, a throwaway copy of the notebook's folder mounted where that folder is (the kernel's working
folder), and to a small ``/tmp``. It has no network, and its own process namespace: when the kernel
stops, everything it started is killed with it, so nothing outlives grading. Each of its processes is
limited in memory (``RLIMIT_DATA``), in the size of a file it writes, and, where the grader runs as
root and the kernel as ``nobody``, in the number of processes.

The kernel talks to its client over Unix sockets (jupyter_client's ``ipc`` transport) in a private
runtime folder bound into the sandbox: a kernel in its own network namespace cannot reach a client on
the host's loopback.

:class:`Sandbox` holds the settings (``c.Sandbox.*`` in ``nbgrader_config.py``) and builds the command
line; :class:`SandboxedKernelManager` starts a kernel with it; :class:`KernelSession` owns the scratch
and runtime folders of one notebook's run.
"""

import fcntl
import functools
import glob
import os
import secrets
import shutil
import signal
import site
import subprocess
import sys
import sysconfig
import tempfile
import time
import weakref
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager
from traitlets import Bool, Instance, Integer, Unicode
from traitlets.config import Configurable

__all__ = ["KernelSession", "Sandbox", "SandboxedKernelManager", "unavailable_reason"]

# The host's programs and libraries. A merged-/usr system has /bin, /lib... as symbolic links into /usr.
SYSTEM = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt/conda"]
# What a Python kernel reads from /etc: the dynamic linker's cache, users and groups (getpass, torch's
# cache folders), time zone, name service switch, MIME types, Debian's alternatives. Nothing secret.
ETC = ["ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "timezone", "passwd", "group", "nsswitch.conf"]
ETC += ["hosts", "mime.types", "alternatives", "fonts", "matplotlibrc"]
# Environment variables a kernel inherits; every other one (a gradebook URL with its password, tokens)
# stays outside.
KEEP_ENV = ["LANG", "LC_ALL", "LC_CTYPE", "TZ", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"]
KEEP_ENV += ["SEQLAB_PROGRESS", "CUDA_VISIBLE_DEVICES", "MPLBACKEND", "PYTHONHASHSEED", "NBGRADER_EXECUTION"]
# The sandbox's first process: it sets the limits, drops root's rights when the grader is root (to the
# kernel's user, with no capabilities left), then becomes the kernel; every process the kernel starts
# inherits the limits.
LIMITS = (
    "import os, resource, sys\n"
    "memory, file_size, processes, uid, gid = map(int, sys.argv[1:6])\n"
    "resource.setrlimit(resource.RLIMIT_DATA, (memory, memory))\n"
    "resource.setrlimit(resource.RLIMIT_FSIZE, (file_size, file_size))\n"
    "resource.setrlimit(resource.RLIMIT_CORE, (0, 0))\n"
    "if uid >= 0:\n"
    "    resource.setrlimit(resource.RLIMIT_NPROC, (processes, processes))\n"
    "    os.setgroups([])\n"
    "    os.setresgid(gid, gid, gid)\n"
    "    os.setresuid(uid, uid, uid)\n"
    "os.execv(sys.argv[6], sys.argv[6:])\n"
)


class Sandbox(Configurable):
    """Settings of the sandbox around graded kernels (``c.Sandbox.*`` in ``nbgrader_config.py``)."""

    bwrap = Unicode("bwrap", help="The bubblewrap program: a name on PATH, or a path").tag(config=True)
    enabled = Bool(
        True,
        help="Run every graded kernel in bubblewrap. False grades without a sandbox: the student's code then "
        "runs with the grader's rights and can read and change the course, the gradebook and every submission.",
    ).tag(config=True)
    fallback_unsandboxed = Bool(
        False,
        help="Where bubblewrap cannot run, grade without a sandbox (and say so) instead of refusing. "
        "`seqlab grade` sets it: a student grading their own notebook risks only their own files.",
    ).tag(config=True)
    memory_limit = Integer(4 * 2**30, help="Bytes of memory each process of the kernel may allocate").tag(config=True)
    file_size_limit = Integer(256 * 2**20, help="Largest file, in bytes, the kernel may write").tag(config=True)
    tmp_size = Integer(512 * 2**20, help="Bytes of the kernel's /tmp and of its /dev/shm (each)").tag(config=True)
    total_memory_limit = Integer(
        6 * 2**30,
        help="Bytes of memory all of one notebook's kernels and what they start may use together, where the grader "
        "runs as root and may make control groups (0: only each process's memory_limit)",
    ).tag(config=True)
    disk_limit = Integer(
        512 * 2**20,
        help="Bytes all of one notebook's kernels may write outside their /tmp, where the grader runs as root: "
        "their folders are a tmpfs of this size (0: a plain folder, capped only per file)",
    ).tag(config=True)
    process_limit = Integer(
        512,
        help="Processes and threads of one notebook's kernels, where the grader runs as root (each notebook's "
        "kernels then run as a user of their own, so the limit is theirs alone)",
    ).tag(config=True)

    def reason_unavailable(self) -> str | None:
        """Why bubblewrap cannot sandbox a kernel here, or ``None`` when it can."""
        return unavailable_reason(self.bwrap)

    def command(
        self, argv: list, *, workdir: str, scratch: str, runtime: str, shared=(), user=None, cgroup=None
    ) -> list:
        """``argv`` (a kernel's command line) wrapped in bubblewrap.

        Args:
            workdir: the kernel's working folder, as the kernel sees it (the notebook's folder).
            scratch: the host folder mounted read-write at ``workdir``.
            runtime: the host folder of the connection file and the sockets, mounted read-write where it is.
            shared: more host folders mounted read-write where they are (a socket between two kernels).
            user: ``(uid, gid)`` the kernel runs as, where the grader is root (default: :func:`kernel_user`).
            cgroup: the session's :class:`ControlGroup`, which the kernel joins before bubblewrap starts.
        """
        uid, gid = user or kernel_user() or (-1, -1)
        limits = [self.memory_limit, self.file_size_limit, self.process_limit, uid, gid]
        prefix = bwrap_prefix(
            self.bwrap, workdir=workdir, scratch=scratch, runtime=runtime, shared=shared, tmp_size=self.tmp_size
        )
        if uid >= 0:  # the kernel's user has a name inside (getpass, pwd.getpwuid): a passwd of its own
            # written beside the runtime folder, in the session's folder that no kernel can write to (a
            # kernel could leave a link in its own runtime folder for the grader, root, to write through)
            passwd, group = f"{runtime}.passwd", f"{runtime}.group"
            for path, text in [
                (passwd, f"root:x:0:0:root:/root:/bin/sh\nstudent:x:{uid}:{gid}:student:/tmp:/bin/sh\n"),
                (group, f"root:x:0:\nstudent:x:{gid}:\n"),
            ]:
                with open(path, "w") as f:
                    f.write(text)
            at = prefix.index("--remount-ro")
            prefix[at:at] = ["--ro-bind", passwd, "/etc/passwd", "--ro-bind", group, "/etc/group"]
        joined = cgroup.prefix() if cgroup is not None else []
        return joined + prefix + [sys.executable, "-I", "-S", "-c", LIMITS, *map(str, limits), *argv]


# Where the grader is root, each notebook's kernels run as a user of their own, leased from this pool of
# user ids that no account uses: the process limit (RLIMIT_NPROC) counts one user's processes, so a
# notebook that forks until the limit holds only its own slots, never a classmate's graded beside it.
USER_POOL = range(1_500_000_000, 1_500_004_096)
LEASES = "/run/seqlab-kernel-users" if os.path.isdir("/run") else os.path.join(tempfile.gettempdir(), "seqlab-users")


def kernel_user() -> tuple | None:
    """Whether kernels change user: ``(uid, gid)`` of the pool's first user when the grader is root;
    ``None`` otherwise, when a kernel keeps the grader's user id inside a user namespace of its own.
    Each session leases its own user (:class:`UserLease`)."""
    if os.geteuid() != 0:
        return None
    return USER_POOL[0], USER_POOL[0]


class UserLease:
    """A user id of :data:`USER_POOL` for one notebook's kernels, held (an ``flock`` on a file named after
    it) until :meth:`release` or the end of the process that leased it, so no two gradings on this
    machine share one, whichever processes run them."""

    def __init__(self):
        os.makedirs(LEASES, mode=0o700, exist_ok=True)
        start = secrets.randbelow(len(USER_POOL))
        for offset in range(len(USER_POOL)):
            uid = USER_POOL[(start + offset) % len(USER_POOL)]
            fd = os.open(os.path.join(LEASES, str(uid)), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            if _has_processes(uid):  # a kernel of a grading that died without stopping it (none should)
                os.close(fd)
                continue
            self.uid, self.gid, self._fd = uid, uid, fd
            return
        raise RuntimeError(f"all {len(USER_POOL)} kernel users are in use: too many gradings at once")

    @property
    def user(self) -> tuple:
        return self.uid, self.gid

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _has_processes(uid: int) -> bool:
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    return True
            except OSError:
                pass
    return False


def _readable_paths() -> list:
    """The host folders a kernel reads: the Python installation, the environment, the seqlab package and
    any folder an environment's ``.pth`` file puts on ``sys.path`` (an editable install)."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    paths |= {str(Path(sys.executable).resolve().parents[1])}
    for site_packages in {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"], *site.getsitepackages()}:
        for pth in glob.glob(os.path.join(site_packages, "*.pth")):
            for line in Path(pth).read_text(errors="replace").splitlines():
                if line.strip() and not line.startswith(("#", "import")) and os.path.isdir(line.strip()):
                    paths.add(line.strip())
    # seqlab itself, wherever it is installed from (an editable install maps it to the course's source tree)
    paths.add(str(Path(__file__).resolve().parents[1]))
    real = sorted({os.path.realpath(p) for p in paths if os.path.isdir(p)})
    # a folder inside another one is bound with it
    return [p for p in real if not any(p != q and p.startswith(q.rstrip("/") + "/") for q in real + SYSTEM)]


def _parents(paths: list) -> list:
    """The folders above ``paths``, top down: bubblewrap creates them private (mode 700) unless told."""
    parents = []
    for path in paths:
        for parent in reversed(Path(path).parents[:-1]):
            if str(parent) not in parents and str(parent) not in SYSTEM and str(parent) != "/tmp":
                parents.append(str(parent))
    return parents


def bwrap_prefix(bwrap: str, *, workdir: str, scratch: str, runtime: str, shared=(), tmp_size: int) -> list:
    """bubblewrap's command line up to the command (see the module docstring for what it allows)."""
    args = [shutil.which(bwrap) or bwrap, "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts"]
    args += ["--unshare-cgroup-try", "--die-with-parent", "--new-session", "--hostname", "sandbox"]
    if kernel_user() is None:  # a user namespace of its own, no capabilities, no further namespaces
        args += ["--unshare-user", "--disable-userns", "--cap-drop", "ALL"]
    # else bubblewrap runs as root and the sandbox's first process (LIMITS) drops to the kernel's user
    for path in SYSTEM:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for name in ETC:
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    readable = _readable_paths()
    args += ["--perms", "1777", "--size", str(tmp_size), "--tmpfs", "/tmp"]
    for parent in _parents(readable + [runtime, workdir, *shared]):
        args += ["--perms", "0755", "--dir", parent]
    for path in readable:
        args += ["--ro-bind", path, path]
    args += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--size", str(tmp_size), "--tmpfs", "/dev/shm"]
    for device in sorted(glob.glob("/dev/nvidia*")):  # a GPU, when the host has one
        args += ["--dev-bind", device, device]
    if glob.glob("/dev/nvidia*"):
        args += ["--ro-bind", "/sys", "/sys"]
    args += ["--bind", runtime, runtime, "--bind", scratch, workdir, "--chdir", workdir]
    for folder in shared:
        args += ["--bind", folder, folder]
    args += ["--remount-ro", "/dev", "--remount-ro", "/", "--clearenv"]
    environment = {name: os.environ[name] for name in KEEP_ENV if name in os.environ}
    environment |= {"HOME": "/tmp", "USER": "student", "LOGNAME": "student", "PYTHONDONTWRITEBYTECODE": "1"}
    environment |= {"PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin", "MPLCONFIGDIR": "/tmp/mpl"}
    environment |= {"IPYTHONDIR": "/tmp/ipython", "JUPYTER_RUNTIME_DIR": "/tmp/jupyter", "TMPDIR": "/tmp"}
    for name, value in sorted(environment.items()):
        args += ["--setenv", name, value]
    return args


@functools.cache
def unavailable_reason(bwrap: str = "bwrap") -> str | None:
    """Why bubblewrap cannot run a sandbox on this machine (not installed, or namespaces forbidden), or
    ``None``: a trial sandbox is started once per process, as a kernel's would be."""
    if shutil.which(bwrap) is None:
        return f"bubblewrap is not installed (no {bwrap} on PATH; on Debian and Ubuntu: apt-get install bubblewrap)"
    notebook_folder = tempfile.mkdtemp(prefix="seqlab-probe-")
    try:
        with KernelSession(notebook_folder) as session:
            runtime, scratch = session.folders("probe")
            probe = Sandbox(bwrap=bwrap, memory_limit=2**30, tmp_size=2**20).command(
                ["/bin/sh", "-c", "echo ok > ok"],
                workdir=session.workdir,
                scratch=scratch,
                runtime=runtime,
                user=session.user,
            )
            try:
                done = subprocess.run(probe, cwd=scratch, capture_output=True, text=True, timeout=60)
            except (OSError, subprocess.TimeoutExpired) as error:
                return f"bubblewrap failed to start a sandbox: {error}"
            if done.returncode != 0 or not os.path.isfile(os.path.join(scratch, "ok")):
                detail = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
                return f"bubblewrap cannot start a sandbox on this machine: {detail}"
            return None
    finally:
        shutil.rmtree(notebook_folder, ignore_errors=True)


def _mount_tmpfs(folder: str, size: int) -> bool:
    """Mount a tmpfs of ``size`` bytes on ``folder`` (root only); ``False`` where mounting is not allowed."""
    if shutil.which("mount") is None:
        return False
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700,nosuid,nodev", "seqlab-kernel", folder],
        capture_output=True,
        check=False,
    )
    return done.returncode == 0


CGROUPS = "/sys/fs/cgroup"
# The kernels' first process on the host: it joins the session's control groups, then becomes bubblewrap.
JOIN = (
    "import os, sys\n"
    "end = sys.argv.index('--')\n"
    "for procs in sys.argv[1:end]:\n"
    "    with open(procs, 'w') as f:\n"
    "        f.write(str(os.getpid()))\n"
    "os.execv(sys.argv[end + 1], sys.argv[end + 1:])\n"
)


class ControlGroup:
    """The control groups of one notebook's kernels: all their processes together get at most ``memory``
    bytes and ``processes`` processes and threads, whatever they fork (cgroup v2, or v1's ``memory`` and
    ``pids`` hierarchies). :meth:`create` returns ``None`` where the grader may not make control groups."""

    def __init__(self, folders: list):
        self.folders = folders  # one per hierarchy (v1) or one (v2)

    @classmethod
    def create(cls, name: str, memory: int, processes: int):
        if os.geteuid() != 0 or not memory:
            return None
        v2 = os.path.join(CGROUPS, "cgroup.controllers")
        try:
            if os.path.isfile(v2) and {"memory", "pids"} <= set(Path(v2).read_text().split()):
                parent = os.path.join(CGROUPS, "seqlab")
                os.makedirs(parent, exist_ok=True)
                Path(parent, "cgroup.subtree_control").write_text("+memory +pids")
                folder = os.path.join(parent, name)
                os.mkdir(folder)
                group = cls([folder])
                Path(folder, "memory.max").write_text(str(memory))
                if os.path.exists(f"{folder}/memory.swap.max"):  # no swap beyond the limit
                    Path(folder, "memory.swap.max").write_text("0")
                Path(folder, "pids.max").write_text(str(processes))
                return group
            memory_root, pids_root = os.path.join(CGROUPS, "memory"), os.path.join(CGROUPS, "pids")
            if not (os.path.isfile(f"{memory_root}/cgroup.procs") and os.path.isfile(f"{pids_root}/cgroup.procs")):
                return None
            folders = [os.path.join(memory_root, "seqlab", name), os.path.join(pids_root, "seqlab", name)]
            group = cls([])
            for folder in folders:
                os.makedirs(folder)
                group.folders.append(folder)
            Path(folders[0], "memory.limit_in_bytes").write_text(str(memory))
            if os.path.exists(f"{folders[0]}/memory.memsw.limit_in_bytes"):  # no swap beyond the limit
                Path(folders[0], "memory.memsw.limit_in_bytes").write_text(str(memory))
            Path(folders[1], "pids.max").write_text(str(processes))
            return group
        except OSError:
            if "group" in locals():
                group.remove()
            return None

    def prefix(self) -> list:
        """The command line that puts a process into these groups, then runs the rest after ``--``."""
        procs = [os.path.join(folder, "cgroup.procs") for folder in self.folders]
        return [sys.executable, "-I", "-S", "-c", JOIN, *procs, "--"]

    def remove(self) -> None:
        """Kill what is left in the groups (the kernels are stopped by now) and remove them."""
        for folder in self.folders:
            for attempt in range(50):
                try:
                    pids = Path(folder, "cgroup.procs").read_text().split()
                except OSError:
                    break
                for pid in pids:
                    try:
                        os.kill(int(pid), signal.SIGKILL)
                    except OSError:
                        pass
                try:
                    os.rmdir(folder)
                    break
                except OSError:
                    time.sleep(0.02 * (attempt + 1))


SHORT = 60  # longest path of the folder that holds a session (its sockets' paths stay under 107 bytes)


# The sessions of this process not closed yet: a grading process whose caller is killed closes them before
# it ends (a session's tmpfs stays mounted, and its control group made, past the process that made them).
_open_sessions = weakref.WeakSet()


def close_open_sessions() -> None:
    """Close every kernel session of this process: their kernels killed, their folders unmounted and removed."""
    for session in list(_open_sessions):
        session.close()


class KernelSession:
    """The folders of one notebook's kernels, removed when the session closes.

    Each kernel (:meth:`folders`) gets a runtime folder, for its connection file (its HMAC key) and
    sockets, and a scratch folder, a copy of the notebook's folder without notebooks (the files a
    submission brought with it), the only place it can write to. ``link`` is shared by the student's
    kernel and the verdict kernel (:mod:`seqlab.grading.verdict`): the socket between them. Everything
    is owned by the kernels' user.
    """

    def __init__(
        self,
        notebook_folder: str,
        parent_folder: str | None = None,
        disk_limit: int = 0,
        memory_limit: int = 0,
        process_limit: int = 512,
    ):
        self.workdir = os.path.abspath(notebook_folder)
        self.lease = UserLease() if kernel_user() is not None else None
        self.user = self.lease.user if self.lease else None  # (uid, gid) of this session's kernels
        # Unix socket paths are limited to 107 bytes: the folders must have a short path.
        base = next((f for f in (parent_folder, tempfile.gettempdir(), "/tmp") if f and len(f) <= SHORT), None)
        self.root = tempfile.mkdtemp(prefix="seqlab-kernel-", dir=base)
        # Everything the kernels can write to (scratch, runtime, link) on a tmpfs of its own: one notebook
        # cannot fill the grader's disk, and many files of the largest size add up to this at most.
        self.mounted = bool(disk_limit and self.user is not None and _mount_tmpfs(self.root, disk_limit))
        self.link = self._own(os.path.join(self.root, "link"))
        self._starts = {}  # kernel name -> how many runtime folders it was given
        # Memory and processes of all the session's kernels together, where control groups can be made.
        name = os.path.basename(self.root)
        self.cgroup = ControlGroup.create(name, memory_limit, process_limit) if self.user else None
        _open_sessions.add(self)

    def folders(self, name: str) -> tuple:
        """``(runtime, scratch)`` for a kernel ``name``: a new :meth:`runtime` and its :meth:`scratch`."""
        return self.runtime(name), self.scratch(name)

    def runtime(self, name: str) -> str:
        """A new runtime folder for one start of the kernel ``name`` (its connection file and sockets). A
        kernel can write to its runtime folder: a new one for each start means that the grader (root) never
        writes where a kernel that ran before could have left a link."""
        self._starts[name] = self._starts.get(name, 0) + 1
        return self._own(os.path.join(self.root, f"{name}-run{self._starts[name]}"))

    def scratch(self, name: str) -> str:
        """The working folder of the kernel ``name``, made on first use. Only the student's kernel's holds
        the submission's files: the verdict kernel starts in an empty folder, so nothing a student handed in
        (a ``torch.py``) is importable there."""
        scratch = os.path.join(self.root, f"{name}-work")
        if not os.path.isdir(scratch):
            if name == "verdict":
                os.mkdir(scratch)
            else:
                ignore = shutil.ignore_patterns("*.ipynb", ".ipynb_checkpoints")
                shutil.copytree(self.workdir, scratch, ignore=ignore, symlinks=True)
            for folder, dirs, files in os.walk(scratch) if self.user is not None else ():
                for path in [folder] + [os.path.join(folder, n) for n in dirs + files]:
                    os.chown(path, *self.user, follow_symlinks=False)
        return scratch

    def _own(self, folder: str) -> str:
        os.mkdir(folder, 0o700)
        if self.user is not None:
            os.chown(folder, *self.user)
        return folder

    def close(self) -> None:
        if self.cgroup is not None:
            self.cgroup.remove()
            self.cgroup = None
        if self.mounted:  # lazily: a kernel still exiting keeps the mount busy for a moment
            subprocess.run(["umount", "-l", self.root], capture_output=True, check=False)
            self.mounted = False
        shutil.rmtree(self.root, ignore_errors=True)
        if self.lease is not None:
            self.lease.release()
            self.lease = None
        _open_sessions.discard(self)  # last: a close cut short can be done again

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class SandboxedKernelManager(AsyncKernelManager):
    """jupyter_client's kernel manager, with the kernel started in a :class:`Sandbox` (or, when
    ``sandbox`` is ``None``, started plainly but still over sockets in its runtime folder).

    Interrupts go to the kernel as a message (the kernel signals itself): a signal to bubblewrap's
    process group would not reach the kernel, which runs in a session of its own.
    """

    sandbox = Instance(Sandbox, allow_none=True)
    session_folders = Instance(KernelSession)
    kernel_role = Unicode("student", help="which of the session's kernels: its folders' name")
    log_file = Unicode()
    runtime_folder = Unicode()

    def __init__(self, **kwargs):
        session, role = kwargs["session_folders"], kwargs.get("kernel_role", "student")
        runtime = session.runtime(role)  # a new one for every manager: a kernel after a lost one too
        kwargs.setdefault("transport", "ipc")
        kwargs.setdefault("connection_file", os.path.join(runtime, "kernel.json"))
        kwargs.setdefault("ip", os.path.join(runtime, "k"))
        super().__init__(**kwargs)
        self.runtime_folder = runtime
        # beside the runtime folder, in the session's folder, which no kernel can write to
        self.log_file = f"{runtime}.log"

    def format_kernel_cmd(self, extra_arguments=None) -> list:
        argv = super().format_kernel_cmd(extra_arguments)
        if self.kernel_role == "verdict" and os.path.basename(argv[0]).startswith("python"):
            argv.insert(1, "-P")  # Python's safe path: no working folder on sys.path (IPython honours it)
        if self.sandbox is None:
            return argv
        session = self.session_folders
        return self.sandbox.command(
            argv,
            workdir=session.workdir,
            scratch=session.scratch(self.kernel_role),
            runtime=self.runtime_folder,
            shared=[session.link],
            user=session.user,
            cgroup=session.cgroup,
        )

    async def _async_launch_kernel(self, kernel_cmd, **kw):
        user = self.session_folders.user
        if self.sandbox is not None and user is not None:  # written by the grader, mode 600
            os.chown(self.connection_file, *user, follow_symlinks=False)
        kw["cwd"] = self.session_folders.scratch(self.kernel_role)
        # The kernel's own stdout and stderr go to a file, never to the grader's pipes: a process the
        # kernel leaves behind cannot keep `seqlab grade` waiting for them to close.
        fd = os.open(self.log_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "ab") as log:
            kw.update(stdin=subprocess.DEVNULL, stdout=log, stderr=log)
            await super()._async_launch_kernel(kernel_cmd, **kw)

    async def _async_interrupt_kernel(self):
        if self.sandbox is None:
            return await super()._async_interrupt_kernel()
        msg = self.session.msg("interrupt_request", content={})
        self._connect_control_socket()
        self.session.send(self._control_socket, msg)

    interrupt_kernel = _async_interrupt_kernel

    def log_tail(self, lines: int = 20) -> str:
        try:
            with os.fdopen(os.open(self.log_file, os.O_RDONLY | os.O_NOFOLLOW), "rb") as log:
                return b"\n".join(log.read()[-20000:].splitlines()[-lines:]).decode(errors="replace")
        except OSError:
            return ""
