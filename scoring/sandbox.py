"""Run submitted QUACKIE interpreter code in a bubblewrap sandbox (SPEC §7, docs/sandbox.md).

No Django here. The public surface:

* ``check_submission_code(source, filename)``: upload-time validation of a ``.py`` file or a
  ``.zip`` with one entry module; returns the entry module name or raises ``InvalidCode``.
* ``sandbox_available(mode)``: probes (once, cached) whether a sandbox can run here.
* ``run_interpreter(code_path, model_dir, model_kind, samples, limits=, mode=, progress=)``:
  starts ONE sandboxed child per submission (``scoring/sandbox_child.py``) that loads the hosted
  model once and imports the code, sends it one JSON line per sample (id, question, context,
  n_sentences and optionally the public sentence list; never any gold), validates every reply
  and returns a ``RunResult``.
* ``baseline_code(name)``: a tiny module that runs a built-in baseline through the same path.

The sandbox (``mode="bwrap"``), when the worker runs as root (this project's machines):
``bwrap`` is started by root **without** a user namespace, so it can bind the Python runtime
from wherever it lives (the venv's interpreter is under root's mode-700 home) read-only at the
same path, creating the parent directories world-traversable (``--perms 0755 --dir``); it keeps
only CAP_SETUID/CAP_SETGID for ``setpriv``, which drops to uid/gid 65534 with no groups, an
empty capability bounding set and no_new_privs before ``prlimit`` and Python start. The child
therefore is a real unprivileged uid (RLIMIT_NPROC is enforced, nothing root-owned is
readable), in new pid, net, ipc, uts and cgroup namespaces, with a read-only minimal filesystem:
``/usr`` (libraries), the Python runtime and its site-packages, the model directory, a private
copy of the code and of the ``scoring`` runtime subset, a size-capped private tmpfs ``/tmp``,
minimal ``/dev`` and a ``/proc`` of its own pid namespace. When run as root the whole sandbox
also sits in fresh cgroup v1 ``pids`` and ``memory`` groups (pids.max, memory.limit_in_bytes),
which also contain root-owned helpers and are swept with SIGKILL afterwards. The child installs
a seccomp deny-list (namespaces, mount, ptrace, bpf, keyrings, io_uring, ...) through libseccomp
before the user's code is imported. Not root: ``bwrap --unshare-user`` runs the child as the
worker's own unprivileged uid instead (no setpriv, no cgroups).

``mode="none"`` (SANDBOX=none, development only) runs the same child with rlimits only and logs
a loud warning.
"""
from __future__ import annotations

import ast
import io
import json
import logging
import math
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import zipfile
from collections import deque
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath
from typing import Callable, Iterable

logger = logging.getLogger(__name__)

MODES = ("bwrap", "none")
SANDBOX_UID = 65534  # nobody / nogroup
SANDBOX_GID = 65534
INSIDE = "/sandbox"  # code, runtime and model are bound below this, read-only
ENTRY_FILE = "interpreter.py"
ENTRY_MODULE = "interpreter"
RESERVED_MODULES = ("scoring", "sandbox_child")
CGROUP_ROOT = Path("/sys/fs/cgroup")
CGROUP_PARENT = "expbench-sandbox"
MAX_ZIP_FILES = 500
ZIP_EXPANSION = 10  # uncompressed zip content may be at most this times max_bytes

# The copy of ``scoring`` the child can import (paths below ``scoring/``): the model wrapper,
# the baselines and the NLTK set-up they tokenize with. Follows the files when they move.
RUNTIME_MODULES = ("tokenization.py", "models/__init__.py", "models/hosted_model.py", "models/interpreters.py")
RUNTIME_DATA = ("resources/nltk_data",)

SUBMISSION_FAILURES = {
    "import_error": "the code could not be imported (or defines no callable interpret)",
    "load_error": "the hosted model could not be loaded in the sandbox",
    "crashed": "the sandboxed process died while importing the code (a signal or a limit "
               "killed it, or it exited)",
    "too_many_crashes": "the sandboxed process died on too many samples (in a row, or in total)",
    "total_timeout": "the whole submission ran longer than its wall-clock limit",
    "output_flood": "a reply was larger than the output limit",
    "protocol_error": "the sandboxed process wrote something that is not a valid reply",
}
SAMPLE_FAILURES = {
    "not_a_list": "interpret did not return a sequence of numbers",
    "wrong_length": "interpret returned a number of scores different from the sentence count",
    "not_finite": "a score is NaN or infinite",
    "exception": "interpret raised an exception",
    "timeout": "interpret ran longer than the per-sample limit",
    "crashed": "the sandboxed process died on this sample (a signal, a limit or an exit)",
}
LOUD_WARNING = ("SANDBOX=none: submitted interpreter code runs WITHOUT a sandbox (no "
                "namespaces, no uid change, no filesystem or network isolation; only rlimits "
                "and the seccomp filter). "
                "Development only: never use it where gold, databases or secrets live.")


class SandboxUnavailable(RuntimeError):
    """No usable sandbox here; the message says why."""


class InvalidCode(ValueError):
    """An uploaded code submission is rejected at upload (one readable message)."""


class UnsafeModelDir(SandboxUnavailable):
    """The hosted model directory would put server data (database, media, secrets) inside
    the sandbox; the message names the directory and what it would expose."""


# =========================================================================== upload validation

def _describe_syntax_error(name: str, error: SyntaxError) -> str:
    where = f"line {error.lineno}" if error.lineno else "unknown line"
    if error.offset:
        where += f", column {error.offset}"
    return f"{name}: syntax error at {where}: {error.msg}"


def _parse_module(source: bytes, name: str) -> ast.Module:
    try:
        text = source.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = source[:error.start].count(b"\n") + 1
        raise InvalidCode(f"{name}: not UTF-8 text (invalid byte at line {line})") from None
    try:
        return ast.parse(text, filename=name)
    except SyntaxError as error:
        raise InvalidCode(_describe_syntax_error(name, error)) from None
    except ValueError as error:  # e.g. a NUL byte
        raise InvalidCode(f"{name}: {error}") from None


def _check_entry_point(tree: ast.Module, name: str) -> None:
    definition = None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "interpret":
            definition = node  # the last definition wins, as at import time
    if definition is None:
        raise InvalidCode(f"{name}: no top-level `def interpret(model, question, context)`; "
                          "the entry module must define it at module level")
    if isinstance(definition, ast.AsyncFunctionDef):
        raise InvalidCode(f"{name}, line {definition.lineno}: interpret must be a plain "
                          "function, not `async def`")
    args = definition.args
    positional = len(args.posonlyargs) + len(args.args)
    if positional < 3 and args.vararg is None:
        raise InvalidCode(f"{name}, line {definition.lineno}: interpret takes {positional} "
                          "positional parameter(s); it must accept (model, question, context)")
    required_kwonly = [arg.arg for arg, default in zip(args.kwonlyargs, args.kw_defaults)
                       if default is None]
    if required_kwonly:
        raise InvalidCode(f"{name}, line {definition.lineno}: interpret has required "
                          f"keyword-only parameter(s) {', '.join(required_kwonly)}; it is "
                          "called as interpret(model, question, context)")


def _zip_members(archive: zipfile.ZipFile, max_bytes: int) -> dict[str, zipfile.ZipInfo]:
    """Safe regular-file members by their path inside the archive (a single wrapping folder
    is stripped). Raises InvalidCode for unsafe or oversized archives."""
    infos = [info for info in archive.infolist()
             if not info.filename.startswith("__MACOSX/") and not info.is_dir()]
    if not infos:
        raise InvalidCode("the zip holds no files")
    if len(infos) > MAX_ZIP_FILES:
        raise InvalidCode(f"the zip holds {len(infos)} files; the limit is {MAX_ZIP_FILES}")
    total = 0
    paths: dict[str, zipfile.ZipInfo] = {}
    for info in infos:
        raw = info.filename
        if info.flag_bits & 0x1:
            raise InvalidCode(f"zip entry {raw!r} is encrypted")
        kind = (info.external_attr >> 16) & 0o170000
        if kind not in (0, 0o100000):
            raise InvalidCode(f"zip entry {raw!r} is not a regular file (symlinks and devices "
                              "are refused)")
        path = PurePosixPath(raw)
        if "\\" in raw or path.is_absolute() or any(part in ("..", "") for part in path.parts):
            raise InvalidCode(f"zip entry {raw!r} has an unsafe path")
        total += info.file_size
        if total > ZIP_EXPANSION * max_bytes:
            raise InvalidCode(f"the zip expands to more than {ZIP_EXPANSION * max_bytes} bytes")
        if str(path) in paths:
            raise InvalidCode(f"zip entry {raw!r} appears twice")
        paths[str(path)] = info
    tops = {PurePosixPath(p).parts[0] for p in paths}
    if len(tops) == 1 and all(len(PurePosixPath(p).parts) > 1 for p in paths):
        prefix = len(next(iter(tops))) + 1  # one wrapping folder: strip it
        paths = {p[prefix:]: info for p, info in paths.items()}
    return paths


def _zip_entry(paths: Iterable[str]) -> str:
    top_py = sorted(p for p in paths if "/" not in p and p.endswith(".py"))
    if ENTRY_FILE in top_py:
        return ENTRY_FILE
    if len(top_py) == 1:
        return top_py[0]
    found = ", ".join(top_py) if top_py else "none"
    raise InvalidCode(f"a zip needs one entry module: {ENTRY_FILE} at its top level, or else "
                      f"exactly one top-level .py file (top-level .py files found: {found})")


def _read_zip(source: bytes, max_bytes: int) -> tuple[dict[str, bytes], str]:
    try:
        archive = zipfile.ZipFile(io.BytesIO(source))
    except (zipfile.BadZipFile, ValueError) as error:
        raise InvalidCode(f"not a valid zip file ({error})") from None
    with archive:
        members = _zip_members(archive, max_bytes)
        entry = _zip_entry(members)
        files = {}
        for path, info in members.items():
            try:
                files[path] = archive.read(info)
            except (zipfile.BadZipFile, RuntimeError, OSError, ValueError) as error:
                raise InvalidCode(f"zip entry {info.filename!r} cannot be read ({error})") \
                    from None
    return files, entry


def _module_name(filename: str) -> str:
    stem = filename[:-3]
    if not stem.isidentifier():
        raise InvalidCode(f"{filename}: {stem!r} is not a valid Python module name "
                          "(letters, digits and _ only); rename the file")
    if stem in RESERVED_MODULES:
        raise InvalidCode(f"{filename}: the module name {stem!r} is reserved by the runner; "
                          "rename the file")
    return stem


def check_submission_code(source: bytes, filename: str, *, max_bytes: int = 1_000_000) -> str:
    """Validate an uploaded interpreter; return the entry module name or raise InvalidCode.

    * a ``.py`` file (UTF-8): it is the entry module, stored as ``interpreter.py`` (returns
      ``"interpreter"``);
    * a ``.zip``: the entry module is ``interpreter.py`` at the top level if present, else the
      single top-level ``.py`` file (a single wrapping folder is ignored); every ``.py`` inside
      must parse; no symlinks, absolute or ``..`` paths, encryption, or more than
      ``ZIP_EXPANSION`` x max_bytes uncompressed.

    The entry module must define ``interpret`` at its top level with ``def`` and at least three
    positional parameters (model, question, context). Syntax errors report line and column.
    """
    if isinstance(source, str):
        source = source.encode("utf-8")
    name = PurePosixPath(str(filename).replace("\\", "/")).name or "upload"
    if not source:
        raise InvalidCode(f"{name}: the file is empty")
    if len(source) > max_bytes:
        raise InvalidCode(f"{name}: {len(source)} bytes; the limit is {max_bytes} bytes")
    suffix = PurePosixPath(name).suffix.lower()
    if suffix == ".py":
        _check_entry_point(_parse_module(source, name), name)
        return ENTRY_MODULE
    if suffix == ".zip":
        files, entry = _read_zip(source, max_bytes)
        for path, data in sorted(files.items()):
            if path.endswith(".py"):
                tree = _parse_module(data, path)
                if path == entry:
                    _check_entry_point(tree, path)
        return _module_name(entry)
    raise InvalidCode(f"{name}: upload a Python file (.py) or a .zip holding one entry module")


def _install_code(code_path: Path, destination: Path) -> str:
    """Copy a stored submission into the job's code directory; return the entry module."""
    data = code_path.read_bytes()
    entry = check_submission_code(data, code_path.name, max_bytes=max(len(data), 1))
    if code_path.suffix.lower() == ".py":
        _write_file(destination / ENTRY_FILE, data)
        return entry
    files, _ = _read_zip(data, max(len(data), 1))
    for path, content in files.items():
        _write_file(destination / path, content)
    return entry


def _write_file(path: Path, data: bytes) -> None:
    parent = path.parent
    missing = []
    while not parent.exists():
        missing.append(parent)
        parent = parent.parent
    for directory in reversed(missing):
        directory.mkdir()
        directory.chmod(0o755)
    path.write_bytes(data)
    path.chmod(0o644)


# =========================================================================== results and limits

@dataclass
class SandboxLimits:
    """Resource limits of one submission run (bytes, seconds, counts)."""

    address_space: int = 3 * 2**30      # RLIMIT_AS per process (torch needs >= 2 GB)
    cpu_seconds: int = 3600             # RLIMIT_CPU soft limit (SIGXCPU); hard = soft + 5
    open_files: int = 64                # RLIMIT_NOFILE
    file_size: int = 16 * 2**20         # RLIMIT_FSIZE (EFBIG beyond it)
    processes: int = 64                 # RLIMIT_NPROC (uid 65534) and cgroup pids.max
    per_sample_seconds: float = 30      # wall clock per sample (parent-enforced)
    total_seconds: float = 1800         # wall clock per submission, start-up included
    output_bytes: int = 1_000_000       # the longest reply line accepted
    startup_seconds: float = 300        # wall clock to load the model and import the code
    memory_bytes: int = 4 * 2**30       # cgroup memory.limit_in_bytes of the whole sandbox
    tmp_bytes: int = 64 * 2**20         # size of the private tmpfs /tmp
    stderr_bytes: int = 64 * 1024       # stderr kept (head and tail), the rest is dropped
    # A death on one sample is that sample's fail and the child is restarted; a submission
    # whose child keeps dying fails instead of restarting (each restart reloads the model).
    max_consecutive_crashes: int = 3    # deaths on this many samples in a row
    max_crashes: int = 20               # more deaths than this in one run


@dataclass
class RunResult:
    """What a submission run produced. ``scores`` holds the valid samples only."""

    status: str = "ok"                                   # "ok" | "failed"
    failure: str | None = None                           # SUBMISSION_FAILURES key
    message: str = ""                                    # readable, for the researcher
    scores: dict[str, list[float]] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)          # id -> SAMPLE_FAILURES key
    failure_details: dict[str, str] = field(default_factory=dict)   # id -> readable detail
    total: int = 0
    startup_seconds: float | None = None      # first start: launch -> ready
    startups: list[float] = field(default_factory=list)             # every (re)start
    model_load_seconds: float | None = None   # reported by the child (first start)
    import_seconds: float | None = None
    sample_seconds: dict[str, float] = field(default_factory=dict)  # parent wall clock
    compute_seconds: dict[str, float] = field(default_factory=dict)  # inside interpret()
    total_seconds: float = 0.0
    restarts: int = 0
    signal: str | None = None
    exit_code: int | None = None
    stderr: str = ""
    mode: str = "bwrap"
    isolation: list[str] = field(default_factory=list)
    job: str = ""                             # private job directory / cgroup name prefix

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def done(self) -> int:
        return len(self.scores) + len(self.failures)

    def to_dict(self) -> dict:
        return asdict(self)


class _Fail(Exception):
    def __init__(self, category: str, message: str, *, signal_name: str | None = None,
                 exit_code: int | None = None):
        super().__init__(message)
        self.category = category
        self.message = message
        self.signal_name = signal_name
        self.exit_code = exit_code


class _Timeout(Exception):
    pass


class _Flood(Exception):
    pass


class _Died(Exception):
    pass


class _Protocol(Exception):
    pass


def validate_scores(value, n_sentences: int) -> tuple[list[float] | None, str | None, str]:
    """(scores, None, "") for a list of ``n_sentences`` finite numbers, else (None, category,
    detail) with category ``not_a_list``, ``wrong_length`` or ``not_finite``."""
    if not isinstance(value, list):
        return None, "not_a_list", f"expected a list of numbers, got {type(value).__name__}"
    for position, item in enumerate(value):
        if isinstance(item, bool) or not isinstance(item, (int, float)):
            shown = item if isinstance(item, str) else type(item).__name__
            return None, "not_a_list", (f"expected a list of numbers; item {position} is "
                                        f"{str(shown)[:60]}")
    if len(value) != n_sentences:
        return None, "wrong_length", f"{len(value)} scores for {n_sentences} sentences"
    scores = []
    for position, item in enumerate(value):
        number = float(item)
        if not math.isfinite(number):
            return None, "not_finite", f"score {position} is {number}"
        scores.append(number)
    return scores, None, ""


def _public_sample(sample: dict) -> dict:
    """Only the public fields of a sample ever reach the sandbox (never gold)."""
    sample_id = str(sample["id"])
    question, context = sample["question"], sample["context"]
    if not isinstance(question, str) or not isinstance(context, str):
        raise ValueError(f"sample {sample_id}: question and context must be strings")
    message = {"id": sample_id, "question": question, "context": context}
    sentences = sample.get("sentences")
    if sentences is not None:
        sentences = [str(sentence) for sentence in sentences]
        message["sentences"] = sentences
    n_sentences = sample.get("n_sentences", len(sentences) if sentences is not None else None)
    if n_sentences is None:
        raise ValueError(f"sample {sample_id}: n_sentences is missing")
    if sentences is not None and len(sentences) != int(n_sentences):
        raise ValueError(f"sample {sample_id}: {len(sentences)} sentences but n_sentences "
                         f"= {n_sentences}")
    message["n_sentences"] = int(n_sentences)
    return message


# =========================================================================== the job directory

def _within(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def check_model_dir(model_dir, protected: Iterable = (), *, models_root=None) -> None:
    """Raise ``UnsafeModelDir`` when binding or copying ``model_dir`` into the sandbox would
    expose a ``protected`` path (the server's var directory, MEDIA_ROOT, the database file's
    directory).

    Refused: a model directory that is, or contains, a protected path; and one that lies
    inside a protected path, unless it also lies inside ``models_root``, a dedicated models
    directory (like the default ``var/models``) that itself contains no protected path.
    Symlinks in the tree are resolved and checked the same way, since the copy follows them.
    """
    protected_real = [os.path.realpath(p) for p in protected if p]
    root = os.path.realpath(models_root) if models_root else None
    if root and any(_within(p, root) for p in protected_real):
        root = None  # a models directory holding server data is no exemption

    def check(path: str, shown: str) -> None:
        for place in protected_real:
            if _within(place, path):
                raise UnsafeModelDir(f"the hosted model directory {model_dir} would expose "
                                     f"{place} to submitted code ({shown} contains it); "
                                     "keep models outside the server's data directories")
            if _within(path, place) and not (root and _within(path, root)):
                raise UnsafeModelDir(f"the hosted model directory {model_dir} would expose "
                                     f"{place} to submitted code ({shown} lies inside it); "
                                     "keep models outside the server's data directories")

    top = os.path.realpath(model_dir)
    check(top, str(model_dir))
    seen = {top}
    for current, dirs, files in os.walk(top, followlinks=True):
        for name in list(dirs) + files:
            path = os.path.join(current, name)
            if os.path.islink(path):
                check(os.path.realpath(path), f"its symlink {path}")
        for name in list(dirs):  # a symlink loop is walked once
            real = os.path.realpath(os.path.join(current, name))
            if real in seen:
                dirs.remove(name)
            seen.add(real)


def _world_readable_tree(directory: Path) -> bool:
    """True when uid 65534 can read the whole tree as it is (no symlinks, o+r files, o+rx
    directories)."""
    for root, dirs, files in os.walk(directory):
        for name in [root] + [os.path.join(root, d) for d in dirs]:
            info = os.lstat(name)
            if os.path.islink(name) or info.st_mode & 0o005 != 0o005:
                return False
        for name in files:
            info = os.lstat(os.path.join(root, name))
            if os.path.islink(os.path.join(root, name)) or info.st_mode & 0o004 == 0:
                return False
    return True


def _copy_tree_readable(source: Path, destination: Path) -> None:
    """Copy the regular files of ``source`` (symlinks followed) world-readable."""
    for root, _dirs, files in os.walk(source, followlinks=True):
        for name in files:
            path = Path(root) / name
            if not path.is_file():
                continue
            target = destination / path.relative_to(source)
            _write_file(target, b"")
            shutil.copyfile(path, target)


class _Job:
    """A private directory (mode 0700, removed afterwards) holding world-readable ``code/`` and
    ``runtime/`` trees that are bound read-only into the sandbox, and ``tmp/`` (mode none)."""

    def __init__(self, code_path: Path):
        self.root = Path(tempfile.mkdtemp(prefix="expbench-sandbox-"))
        self.name = self.root.name
        try:
            self.code = self._directory("code")
            self.runtime = self._directory("runtime")
            self.tmp = self._directory("tmp", mode=0o700)
            self.entry = _install_code(code_path, self.code)
            _install_runtime(self.runtime)
        except BaseException:
            self.cleanup()
            raise

    def model_source(self, model_dir: Path) -> tuple[Path, str]:
        """The model directory to bind: itself when the sandbox user can read it as it is,
        else a world-readable private copy (transformers saves weights with mode 0600)."""
        if _world_readable_tree(model_dir):
            return model_dir, "bound"
        copy = self._directory("model")
        _copy_tree_readable(model_dir, copy)
        return copy, "copied"

    def _directory(self, name: str, mode: int = 0o755) -> Path:
        path = self.root / name
        path.mkdir()
        path.chmod(mode)
        return path

    def cleanup(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def _install_runtime(destination: Path) -> None:
    here = Path(__file__).resolve().parent
    _write_file(destination / "sandbox_child.py", (here / "sandbox_child.py").read_bytes())
    _write_file(destination / "scoring" / "__init__.py",
                b'"""The subset of scoring available inside the sandbox."""\n')
    for name in RUNTIME_MODULES:
        source = here / name
        if source.is_file():
            _write_file(destination / "scoring" / name, source.read_bytes())
    for relative in RUNTIME_DATA:
        source = here / relative
        if source.is_dir():
            for path in sorted(source.rglob("*")):
                if path.is_file():
                    _write_file(destination / "scoring" / relative / path.relative_to(source),
                                path.read_bytes())


# =========================================================================== cgroups (v1, root)

class _Cgroups:
    """Fresh cgroup v1 ``pids`` and ``memory`` groups for one sandbox (root only)."""

    def __init__(self, name: str, limits: SandboxLimits):
        self.directories: dict[str, Path] = {}
        if os.geteuid() != 0:
            return
        wanted = {"pids": {"pids.max": limits.processes},
                  "memory": {"memory.limit_in_bytes": limits.memory_bytes,
                             "memory.memsw.limit_in_bytes": limits.memory_bytes}}
        for controller, settings in wanted.items():
            base = CGROUP_ROOT / controller
            if not (base / "cgroup.procs").is_file():
                continue
            directory = base / CGROUP_PARENT / name
            try:
                directory.mkdir(parents=True)
                for key, value in settings.items():
                    if (directory / key).exists():
                        (directory / key).write_text(str(value))
            except OSError as error:
                logger.warning("sandbox: cgroup %s unavailable (%s)", controller, error)
                _remove_cgroup(directory)
                continue
            self.directories[controller] = directory

    def procs_files(self) -> list[str]:
        return [str(directory / "cgroup.procs") for directory in self.directories.values()]

    def isolation(self) -> list[str]:
        return [f"cgroup {controller}" for controller in self.directories]

    def oom_killed(self) -> bool:
        directory = self.directories.get("memory")
        if directory is None:
            return False
        try:
            for line in (directory / "memory.oom_control").read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill" and int(value) > 0:
                    return True
        except (OSError, ValueError):
            pass
        return False

    def kill_all(self) -> None:
        for directory in self.directories.values():
            for _ in range(200):
                try:
                    pids = [int(p) for p in (directory / "cgroup.procs").read_text().split()]
                except OSError:
                    break
                if not pids:
                    break
                for pid in pids:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                time.sleep(0.01)

    def remove(self) -> None:
        self.kill_all()
        for directory in self.directories.values():
            _remove_cgroup(directory)
        self.directories = {}


def _remove_cgroup(directory: Path) -> None:
    for _ in range(100):
        try:
            directory.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.02)
    logger.warning("sandbox: could not remove cgroup %s", directory)


# =========================================================================== command lines

def _runtime_roots() -> list[str]:
    """Directories holding the running interpreter, its stdlib and site-packages."""
    executable = os.path.realpath(sys.executable)
    candidates = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
                  os.path.dirname(os.path.dirname(executable))]
    roots: list[str] = []
    for candidate in candidates:
        path = os.path.normpath(os.path.abspath(candidate))
        if path == "/" or path == "/usr" or path.startswith("/usr/") or path in roots:
            continue
        roots.append(path)
    roots = [r for r in roots if not any(r != o and r.startswith(o + "/") for o in roots)]
    for root in roots:
        if os.path.exists(os.path.join(root, "manage.py")):
            raise SandboxUnavailable(f"the Python runtime directory {root} looks like a project "
                                     "checkout; use a virtualenv outside it")
    return sorted(roots)


def _top_level_links() -> list[str]:
    args: list[str] = []
    for name in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(name):
            args += ["--symlink", os.readlink(name), name]
        elif os.path.isdir(name):
            args += ["--ro-bind", name, name]
    return args


def _child_env(home: str, tmp: str) -> dict[str, str]:
    bin_dir = os.path.join(sys.prefix, "bin")
    return {
        "PATH": f"{bin_dir}:/usr/local/bin:/usr/bin:/bin",
        "HOME": home,
        "TMPDIR": tmp,
        "OMP_WAIT_POLICY": "PASSIVE",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        # cache directories of matplotlib / numba (imported by shap) into the private tmp
        "MPLCONFIGDIR": os.path.join(tmp, "matplotlib"),
        "NUMBA_CACHE_DIR": os.path.join(tmp, "numba"),
    }


def _rlimit_command(limits: SandboxLimits, prlimit: str) -> list[str]:
    cpu = max(1, int(limits.cpu_seconds))
    return [prlimit, f"--as={int(limits.address_space)}", f"--cpu={cpu}:{cpu + 5}",
            f"--nofile={int(limits.open_files)}", f"--fsize={int(limits.file_size)}",
            f"--nproc={int(limits.processes)}", "--core=0", "--"]


def _tool(name: str) -> str | None:
    return shutil.which(name, path="/usr/bin:/bin:/usr/sbin:/sbin:" + os.environ.get("PATH", ""))


def _bwrap_command(binds: list[tuple[str, str]], limits: SandboxLimits,
                   inner: list[str]) -> list[str]:
    """bwrap + (root: setpriv to 65534) + prlimit + ``inner``; ``binds``: (source, dest) ro."""
    as_root = os.geteuid() == 0
    args = [_tool("bwrap") or "bwrap", "--die-with-parent", "--new-session", "--clearenv",
            "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts",
            "--unshare-cgroup-try"]
    if not as_root:
        args += ["--unshare-user"]
    # the private tmpfs first: binds below /tmp would otherwise be hidden by it
    args += ["--size", str(int(limits.tmp_bytes)), "--perms", "1777", "--tmpfs", "/tmp"]
    args += ["--ro-bind", "/usr", "/usr"] + _top_level_links()
    made: set[str] = {"/", "/tmp", "/usr"}
    destinations = [(source, source) for source in _runtime_roots()] + binds
    for _, destination in destinations:
        parents = list(PurePosixPath(destination).parents)[::-1][1:]  # without "/"
        for parent in map(str, parents):
            if parent not in made and not parent.startswith("/usr/"):
                args += ["--perms", "0755", "--dir", parent]
                made.add(parent)
    for source, destination in destinations:
        args += ["--ro-bind", source, destination]
    args += ["--proc", "/proc", "--dev", "/dev", "--chdir", "/tmp"]
    for key, value in _child_env("/tmp", "/tmp").items():
        args += ["--setenv", key, value]
    if as_root:
        args += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--",
                 _tool("setpriv") or "/usr/bin/setpriv", f"--reuid={SANDBOX_UID}",
                 f"--regid={SANDBOX_GID}", "--clear-groups", "--inh-caps=-all",
                 "--bounding-set=-all", "--no-new-privs"]
    else:
        args += ["--"]
    return args + _rlimit_command(limits, _tool("prlimit") or "/usr/bin/prlimit") + inner


def _cgroup_wrapper(procs_files: list[str], command: list[str]) -> list[str]:
    """``sh`` joins the cgroups, then execs ``command`` (so every descendant is inside)."""
    if not procs_files:
        return command
    script = ('while [ "$1" != -- ]; do echo $$ > "$1" || exit 126; shift; done; shift; '
              'exec "$@"')
    return ["/bin/sh", "-c", script, "sh", *procs_files, "--", *command]


def _host_env() -> dict[str, str]:
    """The environment of bwrap itself: nothing of the worker's (no secrets in /proc/1)."""
    return {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}


# =========================================================================== availability

_PROBES: dict[str, tuple[bool, str]] = {}
_PROBE_LOCK = threading.Lock()


def _mode(mode: str | None) -> str:
    mode = "bwrap" if mode in (None, "") else str(mode).lower()
    if mode not in MODES:
        raise ValueError(f"sandbox mode must be one of {MODES}, not {mode!r}")
    return mode


def sandbox_available(mode: str | None = None) -> tuple[bool, str]:
    """(usable, reason). Probes once per mode (cached): runs the sandboxed interpreter."""
    mode = _mode(mode)
    with _PROBE_LOCK:
        if mode not in _PROBES:
            _PROBES[mode] = _probe(mode)
        return _PROBES[mode]


def _clear_probe_cache() -> None:
    with _PROBE_LOCK:
        _PROBES.clear()


sandbox_available.cache_clear = _clear_probe_cache  # type: ignore[attr-defined]


def _probe(mode: str) -> tuple[bool, str]:
    if mode == "none":
        return True, "SANDBOX=none: no sandbox (development only; rlimits only)"
    if not sys.platform.startswith("linux"):
        return False, "the bubblewrap sandbox needs Linux"
    if not _tool("bwrap"):
        return False, "bubblewrap (bwrap) is not installed (Debian: apt-get install bubblewrap)"
    if not _tool("prlimit"):
        return False, "prlimit (util-linux) is not installed"
    if os.geteuid() == 0 and not _tool("setpriv"):
        return False, "setpriv (util-linux) is not installed"
    limits = SandboxLimits()
    probe = "import os, sys; print(os.getuid(), os.getgid(), sys.version_info[0])"
    try:
        command = _bwrap_command([], limits, [sys.executable, "-B", "-s", "-c", probe])
    except SandboxUnavailable as error:
        return False, str(error)
    try:
        completed = subprocess.run(command, env=_host_env(), capture_output=True, timeout=120,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
    except (OSError, subprocess.TimeoutExpired) as error:
        return False, f"bwrap could not run: {error}"
    stderr = completed.stderr.decode("utf-8", "replace").strip()
    if completed.returncode != 0:
        lowered = stderr.lower()
        if "namespace" in lowered or "operation not permitted" in lowered:
            return False, f"user/pid/net namespaces are not available here (bwrap: {stderr[-300:]})"
        if "permission denied" in lowered or "can't find source path" in lowered \
                or "no such file" in lowered:
            return False, (f"the sandbox user cannot run the interpreter {sys.executable} "
                           f"(bwrap: {stderr[-300:]})")
        return False, f"bwrap failed with exit code {completed.returncode}: {stderr[-300:]}"
    words = completed.stdout.decode("utf-8", "replace").split()
    expected_uid = SANDBOX_UID if os.geteuid() == 0 else os.getuid()
    if len(words) != 3 or words[0] != str(expected_uid):
        return False, f"the sandbox probe answered {completed.stdout[:100]!r}"
    who = f"uid {words[0]}" + (" (nobody)" if words[0] == str(SANDBOX_UID) else "")
    return True, f"bubblewrap sandbox usable ({who}, interpreter {sys.executable})"


# =========================================================================== the child process

class _CappedBuffer:
    """Keeps the first 3/4 and the last 1/4 of ``limit`` bytes; counts what it drops."""

    def __init__(self, limit: int):
        self.head_limit = max(0, limit * 3 // 4)
        self.tail_limit = max(0, limit - self.head_limit)
        self.head = bytearray()
        self.tail: deque[bytes] = deque()
        self.tail_size = 0
        self.dropped = 0

    def add(self, data: bytes) -> None:
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if not data:
            return
        self.tail.append(data)
        self.tail_size += len(data)
        while self.tail and self.tail_size - len(self.tail[0]) >= self.tail_limit:
            self.tail_size -= len(self.tail[0])
            self.dropped += len(self.tail.popleft())
        if self.tail_size > self.tail_limit and self.tail:
            excess = self.tail_size - self.tail_limit
            self.tail[0] = self.tail[0][excess:]
            self.tail_size -= excess
            self.dropped += excess

    def text(self) -> str:
        tail = b"".join(self.tail)
        middle = f"\n[... {self.dropped} bytes of output dropped ...]\n".encode() \
            if self.dropped else b""
        return (bytes(self.head) + middle + tail).decode("utf-8", "replace")


class _Child:
    """One sandboxed child process and its pipes (non-blocking, multiplexed with selectors)."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: str, limits: SandboxLimits,
                 stderr: _CappedBuffer, cgroups: _Cgroups | None, wraps_signals: bool):
        self.limits = limits
        self.stderr = stderr
        self.cgroups = cgroups
        self.wraps_signals = wraps_signals  # bwrap reports a signal N as exit code 128 + N
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env, cwd=cwd,
                                     start_new_session=True, close_fds=True)
        self.out = bytearray()
        self.selector = selectors.DefaultSelector()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            os.set_blocking(stream.fileno(), False)
        self.selector.register(self.proc.stdout, selectors.EVENT_READ, "out")
        self.selector.register(self.proc.stderr, selectors.EVENT_READ, "err")
        self.stdout_open = True
        self.stdin_open = True
        self.closed = False
        self.closed_pipes = False

    # ------------------------------------------------------------------ I/O

    def _take_line(self) -> bytes | None:
        end = self.out.find(b"\n")
        if end < 0:
            if len(self.out) > self.limits.output_bytes:
                raise _Flood(f"more than {self.limits.output_bytes} bytes without a line end")
            return None
        if end > self.limits.output_bytes:
            raise _Flood(f"a reply of {end} bytes (limit {self.limits.output_bytes})")
        line = bytes(self.out[:end])
        del self.out[:end + 1]
        return line

    def _pump(self, timeout: float) -> None:
        for key, _events in self.selector.select(timeout):
            if key.data == "in":
                continue  # handled by the writer loop
            try:
                data = os.read(key.fileobj.fileno(), 1 << 16)
            except BlockingIOError:
                continue
            if key.data == "out":
                if data:
                    self.out += data
                else:
                    self.selector.unregister(key.fileobj)
                    self.stdout_open = False
            else:
                if data:
                    self.stderr.add(data)
                else:
                    self.selector.unregister(key.fileobj)

    def exchange(self, message: dict | None, deadline: float) -> dict:
        """Send ``message`` (if any), then return the next reply line as a dict."""
        pending = memoryview(json.dumps(message).encode() + b"\n") if message is not None \
            else memoryview(b"")
        registered = bool(pending) and self.stdin_open
        if registered:
            self.selector.register(self.proc.stdin, selectors.EVENT_WRITE, "in")
        try:
            while pending and self.stdin_open:
                try:
                    written = os.write(self.proc.stdin.fileno(), pending)
                    pending = pending[written:]
                    continue
                except BlockingIOError:
                    pass
                except (BrokenPipeError, OSError):
                    self.stdin_open = False
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise _Timeout()
                self._pump(min(remaining, 1.0))
        finally:
            if registered:
                self.selector.unregister(self.proc.stdin)
        while True:
            line = self._take_line()
            if line is not None:
                try:
                    reply = json.loads(line)
                except ValueError:
                    raise _Protocol(f"not a JSON reply: {line[:120]!r}") from None
                if not isinstance(reply, dict):
                    raise _Protocol(f"a reply must be a JSON object: {line[:120]!r}")
                return reply
            if not self.stdout_open:
                raise _Died()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise _Timeout()
            self._pump(min(remaining, 1.0))

    # ------------------------------------------------------------------ ending

    def _drain_stderr(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while not self.closed_pipes and any(key.data == "err" for key in self.selector.get_map().values()):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            self._pump(min(remaining, 0.2))

    def _close_pipes(self) -> None:
        self.closed_pipes = True
        self.selector.close()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                stream.close()
            except OSError:
                pass

    def kill(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if self.cgroups is not None:
            self.cgroups.kill_all()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._drain_stderr(0.2)
        self._close_pipes()

    def finish(self, *, graceful: bool) -> None:
        """End the child: close stdin and let it exit (graceful), else kill it."""
        if graceful and not self.closed:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            self.stdin_open = False
            deadline = time.monotonic() + 5
            while self.proc.poll() is None and time.monotonic() < deadline:
                self._pump(0.05)
        self.kill()

    def death(self) -> tuple[str | None, int | None]:
        """After stdout closed: (signal name, exit code) of the child."""
        self._drain_stderr(1.0)
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()
            code = self.proc.returncode
        number = None
        if code is not None and code < 0:
            number = -code
        elif code is not None and self.wraps_signals and code > 128:
            number = code - 128
        if number is not None:
            try:
                return signal.Signals(number).name, code
            except ValueError:
                return f"signal {number}", code
        return None, code


# =========================================================================== the runner

def _crash_message(signal_name: str | None, exit_code: int | None, when: str,
                   limits: SandboxLimits, oom: bool) -> str:
    if oom:
        return (f"the sandbox was killed {when}: it exceeded the memory limit of "
                f"{limits.memory_bytes} bytes")
    if signal_name:
        hint = {"SIGXCPU": f" (the CPU-time limit of {limits.cpu_seconds} s)",
                "SIGKILL": " (killed: memory, CPU hard limit or a kill)",
                "SIGSEGV": " (a segmentation fault)",
                "SIGXFSZ": f" (the file-size limit of {limits.file_size} bytes)"}.get(
                    signal_name, "")
        return f"the sandboxed process was killed by {signal_name}{hint} {when}"
    return f"the sandboxed process exited (exit code {exit_code}) {when}"


class _Runner:
    def __init__(self, job: _Job, model_dir: Path, model_kind: str, limits: SandboxLimits,
                 mode: str, result: RunResult):
        self.job = job
        self.model_dir = model_dir
        self.model_kind = model_kind
        self.limits = limits
        self.mode = mode
        self.result = result
        self.stderr = _CappedBuffer(limits.stderr_bytes)
        self.cgroups: _Cgroups | None = None
        self.model_bind: Path | None = None

    def _command(self) -> tuple[list[str], dict[str, str], str]:
        if self.mode == "none":
            config = {"model_dir": str(self.model_dir), "model_kind": self.model_kind,
                      "code_dir": str(self.job.code), "runtime_dir": str(self.job.runtime),
                      "entry": self.job.entry, "seccomp": True}
            inner = [sys.executable, "-B", "-s", str(self.job.runtime / "sandbox_child.py"),
                     json.dumps(config)]
            prlimit = _tool("prlimit")
            command = (_rlimit_command(self.limits, prlimit) if prlimit else []) + inner
            tmp = str(self.job.tmp)
            return command, _child_env(tmp, tmp), tmp
        config = {"model_dir": f"{INSIDE}/model", "model_kind": self.model_kind,
                  "code_dir": f"{INSIDE}/code", "runtime_dir": f"{INSIDE}/runtime",
                  "entry": self.job.entry, "seccomp": True}
        inner = [sys.executable, "-B", "-s", f"{INSIDE}/runtime/sandbox_child.py",
                 json.dumps(config)]
        if self.model_bind is None:
            started = time.monotonic()
            self.model_bind, how = self.job.model_source(self.model_dir)
            if how == "copied":
                logger.info("sandbox: %s is not world-readable; copied it for the sandbox user "
                            "in %.2f s (chmod -R o+rX it to bind it directly)", self.model_dir,
                            time.monotonic() - started)
        binds = [(str(self.job.code), f"{INSIDE}/code"),
                 (str(self.job.runtime), f"{INSIDE}/runtime"),
                 (str(self.model_bind), f"{INSIDE}/model")]
        self.cgroups = _Cgroups(f"{self.job.name}-{uuid.uuid4().hex[:8]}", self.limits)
        command = _cgroup_wrapper(self.cgroups.procs_files(),
                                  _bwrap_command(binds, self.limits, inner))
        return command, _host_env(), str(self.job.root)

    def _release_cgroups(self) -> bool:
        oom = False
        if self.cgroups is not None:
            oom = self.cgroups.oom_killed()
            self.cgroups.remove()
            self.cgroups = None
        return oom

    def start(self, total_deadline: float) -> _Child:
        """Launch a child and wait for "ready"; raise _Fail on a submission-level failure."""
        command, env, cwd = self._command()
        if not self.result.isolation:
            self.result.isolation = self._isolation()
        started = time.monotonic()
        try:
            child = _Child(command, env, cwd, self.limits, self.stderr, self.cgroups,
                           wraps_signals=self.mode == "bwrap")
        except OSError as error:
            self._release_cgroups()
            raise _Fail("load_error", f"the sandbox could not be started: {error}") from None
        deadline = min(started + self.limits.startup_seconds, total_deadline)
        phase = "model"
        try:
            reply = child.exchange(None, deadline)
            event = reply.get("event")
            if event == "load_error":
                raise _Fail("load_error", f"the model could not be loaded: {reply.get('type')}: "
                                          f"{reply.get('message')}")
            if event != "loaded":
                raise _Protocol(f"unexpected start-up message {str(reply)[:120]}")
            if self.result.model_load_seconds is None:
                self.result.model_load_seconds = float(reply.get("seconds", 0.0))
            if reply.get("seccomp"):
                if "seccomp" not in self.result.isolation:
                    self.result.isolation.append("seccomp")
            elif self.mode == "bwrap":
                logger.info("sandbox: seccomp not installed (%s)", reply.get("seccomp_problem"))
            phase = "import"
            reply = child.exchange(None, deadline)
            event = reply.get("event")
            if event == "import_error":
                summary = f"{reply.get('type')}: {reply.get('message')}"
                trace = str(reply.get("traceback") or "").rstrip()
                raise _Fail("import_error", f"importing the code failed: {summary}"
                            + (f"\n{trace}" if trace and trace != summary else ""))
            if event != "ready":
                raise _Protocol(f"unexpected start-up message {str(reply)[:120]}")
            if self.result.import_seconds is None:
                self.result.import_seconds = float(reply.get("seconds", 0.0))
        except _Timeout:
            child.kill()
            self._release_cgroups()
            if time.monotonic() >= total_deadline:
                raise _Fail("total_timeout", f"the submission exceeded its total limit of "
                                             f"{self.limits.total_seconds} s while starting")
            if phase == "model":
                raise _Fail("load_error", f"loading the model took more than "
                                          f"{self.limits.startup_seconds} s") from None
            raise _Fail("import_error", f"importing the code took more than "
                                        f"{self.limits.startup_seconds} s") from None
        except _Died:
            signal_name, code = child.death()
            child.kill()
            oom = self._release_cgroups()
            if phase == "model":
                raise _Fail("load_error", "the sandboxed process ended while loading the model "
                            f"(exit code {code}, {signal_name or 'no signal'}): "
                            f"{self.stderr.text()[-600:]}", signal_name=signal_name,
                            exit_code=code) from None
            raise _Fail("crashed", _crash_message(signal_name, code, "while importing the code",
                                                  self.limits, oom),
                        signal_name=signal_name, exit_code=code) from None
        except _Flood as error:
            child.kill()
            self._release_cgroups()
            raise _Fail("output_flood", f"output flood during start-up: {error}") from None
        except _Protocol as error:
            child.kill()
            self._release_cgroups()
            raise _Fail("protocol_error", str(error)) from None
        except _Fail:
            child.finish(graceful=False)
            self._release_cgroups()
            raise
        except BaseException:
            child.kill()
            self._release_cgroups()
            raise
        seconds = time.monotonic() - started
        self.result.startups.append(seconds)
        if self.result.startup_seconds is None:
            self.result.startup_seconds = seconds
        return child

    def _isolation(self) -> list[str]:
        if self.mode == "none":
            return ["rlimits"]
        layers = ["bwrap", "pid/net/ipc/uts/cgroup namespaces", "read-only minimal filesystem"]
        layers.append(f"uid {SANDBOX_UID}" if os.geteuid() == 0 else
                      f"user namespace (uid {os.getuid()})")
        layers.append("rlimits")
        if self.cgroups is not None:
            layers += self.cgroups.isolation()
        return layers

    def stop(self, child: _Child | None, *, graceful: bool) -> None:
        if child is not None:
            child.finish(graceful=graceful)
        self._release_cgroups()


def run_interpreter(code_path, model_dir, model_kind: str, samples: Iterable[dict], *,
                    limits: SandboxLimits | None = None, mode: str | None = "bwrap",
                    progress: Callable[[int, int], None] | None = None,
                    protected: Iterable = (), models_root=None) -> RunResult:
    """Run a submitted interpreter on ``samples`` inside the sandbox; see the module docstring.

    ``samples``: dicts with ``id``, ``question``, ``context``, ``n_sentences`` and optionally
    the public ``sentences`` list (passed to ``interpret`` as ``sentences=`` when it accepts
    that keyword); any other key is dropped. ``progress(done, total)`` is called after every
    sample; an exception it raises stops the run (the sandbox is cleaned up) and propagates.
    A per-sample timeout or a death of the child during a sample is that sample's fail
    (``timeout`` / ``crashed``) and a fresh child is started for the next sample; a child that
    keeps dying fails the submission (``too_many_crashes``). ``protected``/``models_root``:
    see ``check_model_dir``, applied before anything is bound (``UnsafeModelDir``).
    """
    limits = limits or SandboxLimits()
    mode = _mode(mode)
    available, reason = sandbox_available(mode)
    if not available:
        raise SandboxUnavailable(reason)
    if mode == "none":
        logger.warning(LOUD_WARNING)
    code_path, model_dir = Path(code_path), Path(model_dir)
    if not model_dir.is_dir():
        raise FileNotFoundError(f"model directory {model_dir} does not exist")
    check_model_dir(model_dir, protected, models_root=models_root)
    public = [_public_sample(sample) for sample in samples]
    ids = [sample["id"] for sample in public]
    if len(set(ids)) != len(ids):
        raise ValueError("sample ids must be unique")

    result = RunResult(total=len(public), mode=mode)
    began = time.monotonic()
    total_deadline = began + limits.total_seconds
    job = _Job(code_path)
    result.job = job.name
    runner = _Runner(job, model_dir, model_kind, limits, mode, result)
    child: _Child | None = None
    graceful = False
    crashes = consecutive_crashes = 0
    try:
        index = 0
        while index < len(public):
            if child is None:
                child = runner.start(total_deadline)
            sample = public[index]
            sample_id = sample["id"]
            sent = time.monotonic()
            deadline = min(sent + limits.per_sample_seconds, total_deadline)
            try:
                reply = child.exchange(sample, deadline)
            except _Timeout:
                runner.stop(child, graceful=False)
                child = None
                if time.monotonic() >= total_deadline:
                    raise _Fail("total_timeout", f"the submission exceeded its total limit of "
                                                 f"{limits.total_seconds} s") from None
                result.failures[sample_id] = "timeout"
                result.failure_details[sample_id] = (f"interpret ran longer than "
                                                     f"{limits.per_sample_seconds} s")
            except _Died:
                # Like a timeout: this sample fails (QUACKIE counts it), a fresh child goes on.
                signal_name, code = child.death()
                child.kill()
                child = None
                oom = runner._release_cgroups()
                message = _crash_message(signal_name, code, f"while scoring sample {sample_id}",
                                         limits, oom)
                result.failures[sample_id] = "crashed"
                result.failure_details[sample_id] = message
                crashes += 1
                consecutive_crashes += 1
                if consecutive_crashes >= limits.max_consecutive_crashes \
                        or crashes > limits.max_crashes:
                    how = (f"on {consecutive_crashes} samples in a row"
                           if consecutive_crashes >= limits.max_consecutive_crashes
                           else f"on {crashes} samples (the limit is {limits.max_crashes})")
                    raise _Fail("too_many_crashes", f"the sandboxed process died {how}; the "
                                f"last time: {message}", signal_name=signal_name,
                                exit_code=code) from None
            except _Flood as error:
                raise _Fail("output_flood", f"sample {sample_id}: {error}") from None
            except _Protocol as error:
                raise _Fail("protocol_error", f"sample {sample_id}: {error}") from None
            else:
                consecutive_crashes = 0
                result.sample_seconds[sample_id] = time.monotonic() - sent
                _record(result, sample, reply)
            if child is None:  # killed by a timeout or dead: the next sample gets a new one
                result.sample_seconds[sample_id] = time.monotonic() - sent
                if index + 1 < len(public):
                    result.restarts += 1
            index += 1
            if progress:
                progress(result.done, result.total)
        graceful = True
    except _Fail as failure:
        result.status = "failed"
        result.failure = failure.category
        result.message = failure.message
        result.signal = failure.signal_name
        result.exit_code = failure.exit_code
    finally:
        runner.stop(child, graceful=graceful)
        job.cleanup()
        result.total_seconds = time.monotonic() - began
        result.stderr = runner.stderr.text()
    if result.status == "ok":
        fails = len(result.failures)
        result.message = (f"{len(result.scores)} of {result.total} samples scored"
                          + (f", {fails} failed" if fails else ""))
    return result


def _record(result: RunResult, sample: dict, reply: dict) -> None:
    sample_id = sample["id"]
    if reply.get("id") != sample_id:
        raise _Fail("protocol_error", f"a reply for {str(reply.get('id'))[:60]!r} arrived "
                                      f"while sample {sample_id} was expected")
    if isinstance(reply.get("seconds"), (int, float)):
        result.compute_seconds[sample_id] = float(reply["seconds"])
    if "error" in reply:
        error = reply["error"] if isinstance(reply["error"], dict) else {}
        result.failures[sample_id] = "exception"
        detail = f"{error.get('type', 'Exception')}: {error.get('message', '')}"
        trace = error.get("traceback")
        # The trace ends with the exception line itself: without user frames it adds nothing.
        useful = trace and trace.strip() != detail
        result.failure_details[sample_id] = f"{detail}\n{trace}".strip() if useful else detail
        return
    if "not_a_list" in reply:
        result.failures[sample_id] = "not_a_list"
        result.failure_details[sample_id] = (f"interpret returned "
                                             f"{str(reply['not_a_list'])[:60]}, not a sequence")
        return
    if "scores" not in reply:
        raise _Fail("protocol_error", f"the reply for sample {sample_id} has no scores")
    scores, category, detail = validate_scores(reply["scores"], sample["n_sentences"])
    if category:
        result.failures[sample_id] = category
        result.failure_details[sample_id] = detail
    else:
        result.scores[sample_id] = scores


# =========================================================================== baselines

def baseline_code(name: str, *, seed: int = 0) -> str:
    """Source of a tiny interpreter module running the built-in baseline ``name`` (item 5:
    baselines through the same sandboxed runner). It uses the sample's public sentence list
    when the runner passes one, else NLTK Punkt (the vendored English model)."""
    from scoring.models.interpreters import canonical_name

    canonical = canonical_name(name)
    return (f'"""Built-in QUACKIE baseline {canonical} (generated by '
            f'scoring.sandbox.baseline_code)."""\n'
            "import nltk\n\n"
            "from scoring.models import interpreters\n\n"
            f"NAME = {canonical!r}\n"
            f"SEED = {int(seed)!r}\n\n\n"
            "def interpret(model, question, context, sentences=None):\n"
            "    if sentences is None:\n"
            "        sentences = nltk.sent_tokenize(context)\n"
            "    return interpreters.interpret(NAME, model, question, context, sentences, "
            "seed=SEED)\n")


def write_baseline_code(name: str, directory, *, seed: int = 0) -> Path:
    """Write ``baseline_code(name)`` to ``directory/<name>.py`` and return the path."""
    from scoring.models.interpreters import canonical_name

    path = Path(directory) / f"{canonical_name(name)}.py"
    path.write_text(baseline_code(name, seed=seed), encoding="utf-8")
    return path
