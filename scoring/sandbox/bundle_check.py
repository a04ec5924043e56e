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
import struct
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Callable

from .errors import InvalidCode
from .layout import MODEL_ENTRY_FILE
from .upload_check import (
    HEAD_BYTES,
    MAX_MODULE_BYTES,
    ZIP_TAIL_BYTES,
    check_sources,
    loadable_kind,
    zip_directory_start,
    zip_members,
    zip_module_names,
)

DEFAULT_BUNDLE_MAX_BYTES = 2 * 2**30      # a task's bundle limit when it names none
# What the members may hold together: BUNDLE_EXPANSION x the bundle's own size (weights hardly
# compress; vocabularies and code do, a few times), never less than MIN_UNPACKED_ALLOWANCE (a
# small bundle of text), never more than max_unpacked_bytes (disk of the worker's job directory).
BUNDLE_EXPANSION = 20
MIN_UNPACKED_ALLOWANCE = 16 * 2**20
DEFAULT_MAX_UNPACKED_BYTES = 4 * 2**30
COPY_CHUNK = 1 << 20  # the most one read of a member inflates
# A member that is a zip archive (torch.save writes one) is read a second time only from its
# central directory on, to list what zipimport would import from it; a longer directory than
# this is refused rather than read.
MAX_NESTED_DIRECTORY_BYTES = 64 * 2**20


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
        # Every other member is read (and, at run time, unpacked) once, its first and last
        # bytes kept: nothing a loader could run may hide in a file of any name.
        for member, info in members.items():
            scan = _MemberScan()
            if destination is not None:
                _unpack(archive, info, destination / PurePosixPath(member), scan)
            elif not member.endswith(".py"):
                _stream(archive, info, scan.feed)
            if not member.endswith(".py"):
                _check_content(archive, info, scan)
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


class _MemberScan:
    """The first ``HEAD_BYTES`` and the last ``ZIP_TAIL_BYTES`` of a member, kept as it streams."""

    def __init__(self) -> None:
        self.head = b""
        self.tail = b""
        self.size = 0

    def feed(self, chunk: bytes) -> None:
        if len(self.head) < HEAD_BYTES:
            self.head += chunk[:HEAD_BYTES - len(self.head)]
        self.tail = chunk[-ZIP_TAIL_BYTES:] if len(chunk) >= ZIP_TAIL_BYTES else (self.tail + chunk)[-ZIP_TAIL_BYTES:]
        self.size += len(chunk)


def _stream(archive: zipfile.ZipFile, info: zipfile.ZipInfo, consume: Callable[[bytes], None]) -> None:
    """Inflate one member ``COPY_CHUNK`` at a time into ``consume``."""
    try:
        with archive.open(info) as member:
            while chunk := member.read(COPY_CHUNK):
                consume(chunk)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError) as error:
        raise BundleRefused("invalid_bundle", f"zip entry {info.filename!r} cannot be read ({error})") from None


def _check_content(archive: zipfile.ZipFile, info: zipfile.ZipInfo, scan: _MemberScan) -> None:
    """Refuse a member a loader could run whatever its name: native code, bytecode, or a zip
    archive listing modules zipimport would import (a zip of weights alone, as torch.save
    writes, is data)."""
    name = info.filename
    kind = loadable_kind(scan.head)
    if kind:
        raise BundleRefused("invalid_bundle", f"zip entry {name!r} is {kind}, which is refused whatever the "
                                              "file's name: the code that runs must be the source that was checked")
    start = zip_directory_start(scan.tail, scan.size)
    if start is None:
        return
    tail_start = scan.size - len(scan.tail)
    if start >= tail_start:
        directory = scan.tail[start - tail_start:]
    elif scan.size - start > MAX_NESTED_DIRECTORY_BYTES:
        raise BundleRefused("invalid_bundle", f"zip entry {name!r} is a zip archive whose directory is over "
                                              f"{MAX_NESTED_DIRECTORY_BYTES} bytes")
    else:
        kept: list[bytes] = []
        offset = 0

        def keep(chunk: bytes) -> None:
            nonlocal offset
            if offset + len(chunk) > start:
                kept.append(chunk[max(0, start - offset):])
            offset += len(chunk)

        _stream(archive, info, keep)
        directory = b"".join(kept)
    modules = zip_module_names(directory)
    if modules:
        shown = ", ".join(repr(module) for module in modules[:3]) + (", ..." if len(modules) > 3 else "")
        raise BundleRefused("invalid_bundle", f"zip entry {name!r} is a zip archive holding Python modules "
                                              f"({shown}); zipimport would import them unchecked, so archives "
                                              "of code inside the bundle are refused")


def _unpack(archive: zipfile.ZipFile, info: zipfile.ZipInfo, target: Path, scan: _MemberScan) -> None:
    """Stream one member to ``target`` (``scan`` sees every chunk): ``zipfile`` inflates at most
    ``COPY_CHUNK`` per read, stops at the declared size and checks the CRC at the end."""
    _make_dirs(target.parent)
    written = 0
    try:
        with archive.open(info) as member, open(target, "xb") as out:
            while chunk := member.read(COPY_CHUNK):
                scan.feed(chunk)
                out.write(chunk)
            written = out.tell()
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError) as error:
        raise BundleRefused("invalid_bundle", f"zip entry {info.filename!r} cannot be unpacked ({error})") from None
    if written != info.file_size:
        raise BundleRefused("invalid_bundle", f"zip entry {info.filename!r} holds {written} bytes but its "
                                              f"header declares {info.file_size}; the zip is damaged or forged")
    target.chmod(0o644)
