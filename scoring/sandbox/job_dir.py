"""The job directory of one run, and what goes into the jail from the host.

``Job`` is a private directory (mode 0700, removed afterwards) holding the world-readable
``code/`` and ``runtime/`` trees that are bound read-only into the sandbox (see ``layout``):
``install_code`` applies the upload's own check (``upload_check.checked_files``, same limits)
to the stored submission and unpacks exactly the files it returns, ``install_runtime`` copies
the child program and the ``scoring`` subset it imports. ``check_model_dir`` refuses a hosted
model directory that would expose server data; ``Job.model_source`` binds the model directory
as it is or, when the sandbox user cannot read it, a world-readable copy.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterable

from .errors import UnsafeModelDir
from .layout import CHILD_FILE, RUNTIME_DATA, RUNTIME_MODULES, RUNTIME_PACKAGE
from .upload_check import DEFAULT_MAX_BYTES, checked_files

SANDBOX_DIR = Path(__file__).resolve().parent    # scoring/sandbox/
SCORING_ROOT = SANDBOX_DIR.parent                # scoring/: RUNTIME_MODULES and RUNTIME_DATA
CHILD_SOURCE = SANDBOX_DIR / "child.py"          # installed as runtime/CHILD_FILE


def write_file(path: Path, data: bytes) -> None:
    """Write ``data`` world-readable, creating missing parent directories with mode 0755."""
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


def install_code(code_path: Path, destination: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> str:
    """Unpack a stored submission into the job's code directory; return the entry module.

    The stored file passes the very check its upload passed, with the upload's limit
    (``max_bytes``: CODE_MAX_BYTES), so an upload that was accepted unpacks; one stored before
    a check was added raises ``InvalidCode`` (the submission's own failure), never an OSError."""
    files, entry = checked_files(code_path.read_bytes(), code_path.name, max_bytes=max_bytes)
    for path, content in files.items():
        write_file(destination / path, content)
    return entry


def install_runtime(destination: Path) -> None:
    """Copy the child program (as ``CHILD_FILE``) and the ``scoring`` subset it imports
    (``RUNTIME_MODULES``, ``RUNTIME_DATA``) into ``destination``. Raises
    ``FileNotFoundError`` when one of them is missing: the child cannot run without it."""
    modules = [SCORING_ROOT / name for name in RUNTIME_MODULES]
    data = {relative: sorted(path for path in (SCORING_ROOT / relative).rglob("*") if path.is_file())
            for relative in RUNTIME_DATA}
    missing = [str(path) for path in [CHILD_SOURCE, *modules] if not path.is_file()]
    missing += [f"{SCORING_ROOT / relative}/ (or it holds no files)"
                for relative, files in data.items() if not files]
    if missing:
        raise FileNotFoundError("the sandbox runtime is incomplete (scoring/sandbox/layout.py "
                                f"lists what the child needs); missing: {', '.join(missing)}")
    write_file(destination / CHILD_FILE, CHILD_SOURCE.read_bytes())
    write_file(destination / RUNTIME_PACKAGE / "__init__.py",
               b'"""The subset of scoring available inside the sandbox."""\n')
    for name, source in zip(RUNTIME_MODULES, modules, strict=True):
        write_file(destination / RUNTIME_PACKAGE / name, source.read_bytes())
    for relative, files in data.items():
        for path in files:
            target = destination / RUNTIME_PACKAGE / relative / path.relative_to(SCORING_ROOT / relative)
            write_file(target, path.read_bytes())


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
            write_file(target, b"")
            shutil.copyfile(path, target)


class Job:
    """A private directory (mode 0700, removed afterwards) holding world-readable ``code/`` and
    ``runtime/`` trees that are bound read-only into the sandbox, and ``tmp/`` (mode none)."""

    def __init__(self, code_path: Path, max_bytes: int = DEFAULT_MAX_BYTES):
        self.root = Path(tempfile.mkdtemp(prefix="expbench-sandbox-"))
        self.name = self.root.name
        try:
            self.code = self._directory("code")
            self.runtime = self._directory("runtime")
            self.tmp = self._directory("tmp", mode=0o700)
            self.entry = install_code(code_path, self.code, max_bytes)
            install_runtime(self.runtime)
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
