"""The check of a model bundle (docs/model_submissions.md, "The bundle"): a zip whose root
holds ``predict.py`` defining ``predict(examples)``, plus whatever the model needs (weights,
vocabularies, helper modules).

It reuses the upload check of code submissions (``upload_check.zip_members`` and
``check_sources``): the same refusals of symlinks, devices, absolute and ``..`` paths,
encrypted entries, bytecode and native code, shadowed trusted or standard-library modules, and
the same caps on the Python source parsed. What differs is size: weights travel inside the
bundle, so the members are streamed to disk (``extract_bundle``) instead of held in memory, and
what they may hold together is bounded by the bundle's own size (``unpacked_limit``): a zip
bomb is refused from the sizes its headers declare, before anything is inflated, and a member
whose data runs past its declared size is cut there by ``zipfile``'s reader and fails its CRC.

Every refusal is a ``BundleRefused`` carrying a model-run failure category: ``no_predict_py``,
``no_predict`` or ``invalid_bundle``.
"""
from __future__ import annotations

import ast
import hashlib
import os
import shutil
import struct
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from scoring.sandbox.errors import InvalidCode
from scoring.sandbox.layout import MODEL_ENTRY_FILE
from scoring.sandbox.upload_check import MAX_MODULE_BYTES, check_sources, zip_members

DEFAULT_BUNDLE_MAX_BYTES = 2 * 2**30      # a task's bundle limit when it names none
# What the members may hold together: BUNDLE_EXPANSION x the bundle's own size (weights hardly
# compress; vocabularies and code do, a few times), never less than MIN_UNPACKED_ALLOWANCE (a
# small bundle of text), never more than max_unpacked_bytes (disk of the worker's job directory).
BUNDLE_EXPANSION = 20
MIN_UNPACKED_ALLOWANCE = 16 * 2**20
DEFAULT_MAX_UNPACKED_BYTES = 4 * 2**30
COPY_CHUNK = 1 << 20  # the most one read of a member inflates


class BundleRefused(InvalidCode):
    """The bundle cannot run; ``category`` is a model-run failure category."""

    def __init__(self, category: str, message: str):
        super().__init__(message)
        self.category = category


@dataclass(frozen=True)
class BundleManifest:
    """What the check found: the members to unpack (path -> declared size), their total, and
    the sha256 of the bundle's bytes (recorded with every run)."""

    files: dict[str, int]
    unpacked_bytes: int
    sha256: str
    size: int


def bundle_sha256(path: str | os.PathLike) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(COPY_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def unpacked_limit(bundle_size: int, max_unpacked_bytes: int = DEFAULT_MAX_UNPACKED_BYTES) -> int:
    return min(max_unpacked_bytes, max(MIN_UNPACKED_ALLOWANCE, BUNDLE_EXPANSION * bundle_size))


def _check_predict_definition(tree: ast.Module, name: str) -> None:
    """``predict`` must be bound at the module's top level: a plain ``def``, an assignment
    (``predict = Model().predict``) or an import; whether it is callable is seen at run time."""
    bound: ast.stmt | None = None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "predict":
            bound = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(target, ast.Name) and target.id == "predict" for target in targets):
                bound = node
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            if any((alias.asname or alias.name) == "predict" for alias in node.names):
                bound = node
    if bound is None:
        raise BundleRefused("no_predict", f"{name}: no top-level `def predict(examples)`; "
                                          "predict.py must define predict at module level")
    if isinstance(bound, ast.AsyncFunctionDef):
        raise BundleRefused("no_predict", f"{name}, line {bound.lineno}: predict must be a plain "
                                          "function, not `async def`")
    if isinstance(bound, ast.FunctionDef):
        args = bound.args
        positional = len(args.posonlyargs) + len(args.args)
        if positional < 1 and args.vararg is None:
            raise BundleRefused("no_predict", f"{name}, line {bound.lineno}: predict takes no "
                                              "positional parameter; it is called as predict(examples)")


def check_bundle(path: str | os.PathLike, *, max_bytes: int = DEFAULT_BUNDLE_MAX_BYTES,
                 max_unpacked_bytes: int = DEFAULT_MAX_UNPACKED_BYTES) -> BundleManifest:
    """Check a stored bundle without unpacking it (the sources are read to be parsed); raises
    ``BundleRefused``."""
    return _checked(Path(path), max_bytes, max_unpacked_bytes, destination=None)


def extract_bundle(path: str | os.PathLike, destination: str | os.PathLike, *,
                   max_bytes: int = DEFAULT_BUNDLE_MAX_BYTES,
                   max_unpacked_bytes: int = DEFAULT_MAX_UNPACKED_BYTES) -> BundleManifest:
    """Check the bundle, then stream exactly the checked members into ``destination`` (folders
    0755, files 0644: the sandbox user reads them); raises ``BundleRefused``."""
    return _checked(Path(path), max_bytes, max_unpacked_bytes, destination=Path(destination))


def _checked(path: Path, max_bytes: int, max_unpacked_bytes: int,
             destination: Path | None) -> BundleManifest:
    name = path.name
    try:
        size = path.stat().st_size
    except OSError as error:
        raise BundleRefused("invalid_bundle", f"{name}: cannot be read ({error.strerror})") from None
    if size == 0:
        raise BundleRefused("invalid_bundle", f"{name}: the file is empty")
    if size > max_bytes:
        raise BundleRefused("invalid_bundle", f"{name}: {size} bytes; the limit is {max_bytes} bytes")
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, ValueError, EOFError, OSError, struct.error) as error:
        raise BundleRefused("invalid_bundle", f"{name}: not a valid zip file ({error})") from None
    with archive:
        limit = unpacked_limit(size, max_unpacked_bytes)
        try:
            members = zip_members(archive, max_bytes=max_bytes, unpacked_limit=limit)
        except BundleRefused:
            raise
        except InvalidCode as error:
            raise BundleRefused("invalid_bundle", str(error)) from None
        if MODEL_ENTRY_FILE not in members:
            top = sorted(p for p in members if "/" not in p and p.endswith(".py"))
            raise BundleRefused("no_predict_py", f"{name}: no {MODEL_ENTRY_FILE} at the root of the zip "
                                                 f"(top-level .py files found: {', '.join(top) or 'none'}); "
                                                 "zip the folder holding predict.py, or its contents")
        sources = {member: _read(archive, info, MAX_MODULE_BYTES)
                   for member, info in members.items() if member.endswith(".py")}
        try:
            check_sources(sources, MODEL_ENTRY_FILE, _check_predict_definition)
        except BundleRefused:
            raise
        except InvalidCode as error:
            raise BundleRefused("invalid_bundle", str(error)) from None
        if destination is not None:
            for member, info in members.items():
                _unpack(archive, info, destination / PurePosixPath(member))
    files = {member: info.file_size for member, info in members.items()}
    return BundleManifest(files=files, unpacked_bytes=sum(files.values()), sha256=bundle_sha256(path),
                          size=size)


def _read(archive: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int) -> bytes:
    """A member's bytes, at most ``limit`` (the sources' cap was applied to the declared size)."""
    chunks, total = [], 0
    try:
        with archive.open(info) as member:
            while chunk := member.read(min(COPY_CHUNK, limit + 1 - total)):
                total += len(chunk)
                chunks.append(chunk)
                if total > limit:
                    break
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError) as error:
        raise BundleRefused("invalid_bundle", f"zip entry {info.filename!r} cannot be read ({error})") from None
    data = b"".join(chunks)
    if len(data) != info.file_size:
        raise BundleRefused("invalid_bundle", f"zip entry {info.filename!r} holds {len(data)} bytes but its "
                                              f"header declares {info.file_size}; the zip is damaged or forged")
    return data


def _make_dirs(directory: Path) -> None:
    missing = []
    while not directory.exists():
        missing.append(directory)
        directory = directory.parent
    for folder in reversed(missing):
        folder.mkdir()
        folder.chmod(0o755)


def _unpack(archive: zipfile.ZipFile, info: zipfile.ZipInfo, target: Path) -> None:
    """Stream one member to ``target``: ``zipfile`` inflates at most ``COPY_CHUNK`` per read,
    stops at the declared size and checks the CRC at the end."""
    _make_dirs(target.parent)
    written = 0
    try:
        with archive.open(info) as member, open(target, "xb") as out:
            shutil.copyfileobj(member, out, COPY_CHUNK)
            written = out.tell()
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError) as error:
        raise BundleRefused("invalid_bundle", f"zip entry {info.filename!r} cannot be unpacked ({error})") from None
    if written != info.file_size:
        raise BundleRefused("invalid_bundle", f"zip entry {info.filename!r} holds {written} bytes but its "
                                              f"header declares {info.file_size}; the zip is damaged or forged")
    target.chmod(0o644)
