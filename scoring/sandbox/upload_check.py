"""Validation of interpreter code (docs/sandbox.md, "API"): a ``.py`` file, or a ``.zip`` with
one entry module. ``checked_files`` is the ONE check: the upload applies it (through
``check_submission_code``, which returns the entry module's name or raises ``InvalidCode``) and
the run applies it again, with the same limits, to the stored file before unpacking exactly the
files it returns (``job_dir.install_code``). Whatever would fail at run time (a name the
filesystem refuses, a file where a folder must be, bytecode, native code, a shadowed trusted
module) is therefore refused at upload with a readable message, never a run-time error."""
from __future__ import annotations

import ast
import io
import sys
import zipfile
from importlib.machinery import BYTECODE_SUFFIXES, EXTENSION_SUFFIXES
from pathlib import PurePosixPath
from typing import Iterable

from scoring.sandbox.errors import InvalidCode
from scoring.sandbox.layout import ENTRY_FILE, ENTRY_MODULE, RESERVED_MODULES

DEFAULT_MAX_BYTES = 1_000_000  # the upload limit when the caller names none (CODE_MAX_BYTES)
MAX_ZIP_FILES = 500
ZIP_EXPANSION = 10  # uncompressed zip content may be at most this times max_bytes (the upload limit)
# Linux refuses a path component over 255 bytes (NAME_MAX) and a path over 4096 (PATH_MAX). A
# member is unpacked below the job directory (/tmp/expbench-sandbox-XXXXXXXX/code/) and seen
# inside the jail below /sandbox/code/, so its own path must leave room for those prefixes.
MAX_NAME_BYTES = 255
MAX_PATH_BYTES = 1024
# What Python would run without reading a source file: bytecode (a __pycache__ entry is loaded
# instead of the .py next to it when it claims to match, and a lone .pyc imports by itself) and
# native extension modules. The code that runs must be the source that was checked.
NOT_SOURCE_SUFFIXES = tuple(sorted({*BYTECODE_SUFFIXES, ".pyc", ".pyo", *EXTENSION_SUFFIXES,
                                    ".so", ".pyd", ".dylib", ".dll"}))
PYCACHE = "__pycache__"
# Top-level names a submission may not use: the jail's runtime (the trusted ``scoring`` copy and
# the child program) and the standard library. The child puts the submission's directory after
# every trusted path, so such a module of the submission would never be imported: refusing it
# says so at upload instead of failing (or silently importing something else) at run time.
SHADOWING_NAMES = frozenset(RESERVED_MODULES) | frozenset(sys.stdlib_module_names)


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
        _check_name_lengths(raw, path)
        _check_is_source(raw, path)
        total += info.file_size
        if total > ZIP_EXPANSION * max_bytes:
            raise InvalidCode(f"the zip expands to more than {ZIP_EXPANSION * max_bytes} bytes")
        if str(path) in paths:
            raise InvalidCode(f"zip entry {raw!r} appears twice")
        paths[str(path)] = info
    _check_file_folder_clashes(paths)
    tops = {PurePosixPath(p).parts[0] for p in paths}
    if len(tops) == 1 and all(len(PurePosixPath(p).parts) > 1 for p in paths):
        prefix = len(next(iter(tops))) + 1  # one wrapping folder: strip it
        paths = {p[prefix:]: info for p, info in paths.items()}
    _check_top_level_names(paths)
    return paths


def _check_name_lengths(raw: str, path: PurePosixPath) -> None:
    for part in path.parts:
        if len(part.encode("utf-8")) > MAX_NAME_BYTES:
            raise InvalidCode(f"zip entry {raw[:80]!r}...: a file or folder name is "
                              f"{len(part.encode('utf-8'))} bytes long; the limit is {MAX_NAME_BYTES} bytes")
    if len(str(path).encode("utf-8")) > MAX_PATH_BYTES:
        raise InvalidCode(f"zip entry {raw[:80]!r}...: its path is {len(str(path).encode('utf-8'))} bytes "
                          f"long; the limit is {MAX_PATH_BYTES} bytes")


def _check_is_source(raw: str, path: PurePosixPath) -> None:
    if PYCACHE in path.parts[:-1]:
        raise InvalidCode(f"zip entry {raw!r}: __pycache__ folders are refused (compiled bytecode "
                          "would run instead of the checked source); zip the .py files only")
    name = path.name.lower()
    suffix = next((s for s in NOT_SOURCE_SUFFIXES if name.endswith(s)), None)
    if suffix in (*BYTECODE_SUFFIXES, ".pyc", ".pyo"):
        raise InvalidCode(f"zip entry {raw!r}: compiled Python bytecode ({suffix}) is refused; "
                          "submit the .py source only")
    if suffix:
        raise InvalidCode(f"zip entry {raw!r}: native code ({suffix}) is refused; submit Python "
                          "source only (the installed packages are available)")


def _check_file_folder_clashes(paths: dict[str, zipfile.ZipInfo]) -> None:
    """A file whose path is also a folder of another entry cannot be unpacked (nor a folder
    named like a file): refuse it here rather than when the run unpacks it."""
    folders = {str(parent) for p in paths for parent in PurePosixPath(p).parents if str(parent) != "."}
    for path in sorted(paths):
        if path in folders:
            raise InvalidCode(f"zip entry {path!r} is a file, but other entries use it as a folder "
                              f"(e.g. {next(p for p in sorted(paths) if p.startswith(path + '/'))!r})")


def _check_top_level_names(paths: Iterable[str]) -> None:
    for path in sorted(paths):
        parts = PurePosixPath(path).parts
        if not path.endswith(".py"):
            continue  # data files and folders without Python are never imported
        module = parts[0][:-3] if len(parts) == 1 else parts[0]
        if module in SHADOWING_NAMES:
            what = ("is the sandbox runner's own" if module in RESERVED_MODULES
                    else "is a standard-library module")
            raise InvalidCode(f"zip entry {path!r}: the top-level module name {module!r} {what} and "
                              "is reserved by the runner (the trusted module is always the one "
                              "imported); rename it")


def _zip_entry(paths: Iterable[str]) -> str:
    top_py = sorted(p for p in paths if "/" not in p and p.endswith(".py"))
    if ENTRY_FILE in top_py:
        return ENTRY_FILE
    if len(top_py) == 1:
        return top_py[0]
    found = ", ".join(top_py) if top_py else "none"
    raise InvalidCode(f"a zip needs one entry module: {ENTRY_FILE} at its top level, or else "
                      f"exactly one top-level .py file (top-level .py files found: {found})")


def read_zip(source: bytes, max_bytes: int) -> tuple[dict[str, bytes], str]:
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


def checked_files(source: bytes | str, filename: str, *,
                  max_bytes: int = DEFAULT_MAX_BYTES) -> tuple[dict[str, bytes], str]:
    """The one check of a submission (upload and run): ``(files, entry module)`` where
    ``files`` maps each path to unpack below the code directory to its bytes; raises
    ``InvalidCode``. ``max_bytes`` is the upload limit, at upload and at run time alike."""
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
        return {ENTRY_FILE: source}, ENTRY_MODULE
    if suffix == ".zip":
        files, entry = read_zip(source, max_bytes)
        for path, data in sorted(files.items()):
            if path.endswith(".py"):
                tree = _parse_module(data, path)
                if path == entry:
                    _check_entry_point(tree, path)
        return files, _module_name(entry)
    raise InvalidCode(f"{name}: upload a Python file (.py) or a .zip holding one entry module")


def check_submission_code(source: bytes | str, filename: str, *, max_bytes: int = DEFAULT_MAX_BYTES) -> str:
    """Validate an uploaded interpreter; return the entry module name or raise InvalidCode.

    * a ``.py`` file (UTF-8): it is the entry module, stored as ``interpreter.py`` (returns
      ``"interpreter"``);
    * a ``.zip``: the entry module is ``interpreter.py`` at the top level if present, else the
      single top-level ``.py`` file (a single wrapping folder is ignored); every ``.py`` inside
      must parse; no symlinks, absolute or ``..`` paths, encryption, or more than
      ``ZIP_EXPANSION`` x max_bytes uncompressed.

    The entry module must define ``interpret`` at its top level with ``def`` and at least three
    positional parameters (model, question, context). Syntax errors report line and column.
    See ``checked_files`` for everything else refused; the run applies the same check.
    """
    return checked_files(source, filename, max_bytes=max_bytes)[1]
