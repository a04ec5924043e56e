"""Validation of interpreter code (docs/sandbox.md, "API"): a ``.py`` file, or a ``.zip`` with
one entry module. ``checked_files`` is the ONE check: the upload applies it (through
``check_submission_code``, which returns the entry module's name or raises ``InvalidCode``) and
the run applies it again, with the same limits, to the stored file before unpacking exactly the
files it returns (``job_dir.install_code``). Whatever would fail at run time (a name the
filesystem refuses, a file where a folder must be, bytecode, native code, a shadowed trusted
module) is therefore refused at upload with a readable message, never a run-time error.

The check runs inside a web worker, so its cost is bounded by the upload's size and the fixed
limits below, whatever the file holds (docs/sandbox.md, "Limits of the upload check"): zip
members are inflated chunk by chunk against the sizes their headers declare (a member that
holds more is refused after one chunk), the Python source parsed is capped in bytes and files,
and nesting is measured before the parser sees it."""
from __future__ import annotations

import ast
import codecs
import io
import re
import struct
import sys
import threading
import tokenize
import zipfile
import zlib
from importlib.machinery import BYTECODE_SUFFIXES, EXTENSION_SUFFIXES
from importlib.util import MAGIC_NUMBER
from pathlib import PurePosixPath
from typing import Callable, Iterable

from .errors import InvalidCode
from .layout import ENTRY_FILE, ENTRY_MODULE, MODEL_RESERVED_MODULES, RESERVED_MODULES

DEFAULT_MAX_BYTES = 1_000_000  # the upload limit when the caller names none (CODE_MAX_BYTES)
MAX_ZIP_FILES = 500
# A zip's members together may hold at most ZIP_EXPANSION x max_bytes (the upload limit), and
# never more than MAX_UNPACKED_BYTES: everything unpacked is held in memory by the check.
ZIP_EXPANSION = 10
MAX_UNPACKED_BYTES = 4 * 1024 * 1024
INFLATE_CHUNK = 64 * 1024  # the most one decompression step may produce
# Parsing costs far more than its input: ast.parse of 128 KiB of one-token statements takes
# 0.3-0.5 s of CPU and ~120 MB at peak. These caps bound the parser's work per upload (the
# largest module bounds its memory, the total its time) at a few tenths of a second, however
# many uploads arrive; honest interpreters are a few tens of KB (data belongs in other files).
MAX_MODULE_BYTES = 64 * 1024
MAX_SOURCE_BYTES = 128 * 1024
MAX_SOURCE_FILES = 100
# Brackets open at once and indentation levels, measured before parsing. CPython's own limits
# are 200 and 100; deeper expressions without brackets (a chain of 100,000 unary minus signs)
# stop the parser quickly with MemoryError or RecursionError, refused like a syntax error.
MAX_NESTING_DEPTH = 50
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
# What a loader could run from a file whatever its name: native code (ctypes loads any ELF
# file), this Python's bytecode (a SourcelessFileLoader takes any path) and zip archives
# (zipimport opens any file whose last 64 KiB + 22 bytes hold an end-of-archive record, a
# prefix of other bytes allowed, and imports the .py and .pyc files listed in it, unchecked).
# Members are judged by their first HEAD_BYTES and last ZIP_TAIL_BYTES.
HEAD_BYTES = 4096
ZIP_TAIL_BYTES = 0xFFFF + 22  # the longest zip comment plus the end-of-archive record
ZIP_START_SIGNATURES = (b"PK\x03\x04", b"PK\x05\x06", b"PK\x07\x08")
ZIP_END_SIGNATURE = b"PK\x05\x06"
ZIP_ENTRY_SIGNATURE = b"PK\x01\x02"
ZIP_MODULE_SUFFIXES = (".py", ".pyc", ".pyo", ".pyw")
MACH_O_MAGICS = (b"\xfe\xed\xfa\xce", b"\xfe\xed\xfa\xcf", b"\xce\xfa\xed\xfe", b"\xcf\xfa\xed\xfe",
                 b"\xca\xfe\xba\xbe")
# Encodings a source file may declare (PEP 263): Python decodes a file by its declaration, the
# check must read the same text. Any other (utf-7 can hide a line inside a comment) is refused.
SOURCE_ENCODINGS = ("utf-8", "utf-8-sig")
# Top-level names a submission may not use: the jail's runtime (the trusted ``scoring`` copy and
# the child program) and the standard library. The child puts the submission's directory after
# every trusted path, so such a module of the submission would never be imported: refusing it
# says so at upload instead of failing (or silently importing something else) at run time.
SHADOWING_NAMES = frozenset(RESERVED_MODULES + MODEL_RESERVED_MODULES) | frozenset(sys.stdlib_module_names)


def _describe_syntax_error(name: str, error: SyntaxError) -> str:
    where = f"line {error.lineno}" if error.lineno else "unknown line"
    if error.offset:
        where += f", column {error.offset}"
    return f"{name}: syntax error at {where}: {error.msg}"


_BRACKETS = frozenset(b"()[]{}")
_OPENING_BRACKETS = frozenset(b"([{")
_ALL_BUT_BRACKETS = bytes(byte for byte in range(256) if byte not in _BRACKETS)
_CODE_LINE_INDENT = re.compile(rb"^[ \t]*(?=[^ \t\r\n\f#])", re.MULTILINE)
# Comments and string literals (triple-quoted first), matched left to right as the tokenizer
# reads them; the alternatives of each repetition consume distinct characters, so matching is
# linear in the source.
_COMMENTS_AND_STRINGS = re.compile(
    rb"#[^\r\n]*"
    rb'|"""(?:[^"\\]|\\.|"(?!""))*"""'
    rb"|'''(?:[^'\\]|\\.|'(?!''))*'''"
    rb'|"(?:[^"\\\r\n]|\\.)*"'
    rb"|'(?:[^'\\\r\n]|\\.)*'",
    re.DOTALL)


def _without_comments_and_strings(source: bytes) -> bytes:
    """``source`` with every comment and string literal emptied, its line breaks kept (so line
    numbers stay right)."""
    return _COMMENTS_AND_STRINGS.sub(lambda match: b"\n" * match.group().count(b"\n"), source)


def _line_of(source: bytes, offset: int) -> int:
    return source.count(b"\n", 0, offset) + 1


def _check_nesting(source: bytes, name: str) -> None:
    """Refuse source nested deeper than MAX_NESTING_DEPTH, in time linear in its size and
    without the parser. Comments and strings are left out; an indented continuation line
    counts as a level (an over-estimate: honest code stays far below the limit)."""
    source = _without_comments_and_strings(source)
    depth = 0
    for position, byte in enumerate(source.translate(None, _ALL_BUT_BRACKETS)):
        if byte in _OPENING_BRACKETS:
            depth += 1
            if depth > MAX_NESTING_DEPTH:
                offset = [m.start() for m in re.finditer(rb"[][(){}]", source)][position]
                raise InvalidCode(f"{name}, line {_line_of(source, offset)}: brackets nested more "
                                  f"than {MAX_NESTING_DEPTH} deep; the limit is {MAX_NESTING_DEPTH}")
        elif depth:  # a closing bracket in a string never lowers the count below zero
            depth -= 1
    widths: list[int] = []  # the indentation of each open block, innermost last
    for match in _CODE_LINE_INDENT.finditer(source):
        width = len(match.group().expandtabs(8))
        while widths and width < widths[-1]:
            widths.pop()
        if width > (widths[-1] if widths else 0):
            widths.append(width)
            if len(widths) > MAX_NESTING_DEPTH:
                raise InvalidCode(f"{name}, line {_line_of(source, match.start())}: indented more "
                                  f"than {MAX_NESTING_DEPTH} levels deep; the limit is {MAX_NESTING_DEPTH}")


def _check_declared_encoding(source: bytes, name: str) -> None:
    """Refuse a coding declaration other than UTF-8: Python decodes the file as it declares,
    and the check, which reads UTF-8, would see other text than what runs."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
    except SyntaxError as error:  # an unknown encoding, or a BOM with another declaration
        raise InvalidCode(f"{name}: {error}; only UTF-8 source is accepted") from None
    if codecs.lookup(encoding).name not in SOURCE_ENCODINGS:
        raise InvalidCode(f"{name}: declares the source encoding {encoding!r} (a `# coding:` line); only "
                          "UTF-8 source is accepted, since Python would run the file decoded otherwise than "
                          "it was checked")


def _parse_module(source: bytes, name: str) -> ast.Module:
    try:
        text = source.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise InvalidCode(f"{name}: not UTF-8 text (invalid byte at line "
                          f"{_line_of(source, error.start)})") from None
    _check_declared_encoding(source, name)
    _check_nesting(source, name)
    try:
        return ast.parse(text, filename=name)
    except SyntaxError as error:
        raise InvalidCode(_describe_syntax_error(name, error)) from None
    except ValueError as error:  # e.g. a NUL byte
        raise InvalidCode(f"{name}: {error}") from None
    except (RecursionError, MemoryError):
        # CPython's parser gives up on expressions nested deeper than its stack (MemoryError:
        # "too complex to parse") or than the recursion limit while building the tree.
        raise InvalidCode(f"{name}: nested too deeply to parse (e.g. a long chain of operators, "
                          "calls or subscripts); the parser's nesting limit was reached") from None


def _on_fresh_stack(function: Callable[[], None]) -> None:
    """Call ``function`` in a new thread, which starts with an empty Python stack, and re-raise
    what it raised. CPython's limit on the depth of the tree ``ast.parse`` builds counts the
    caller's frames too, so without this the same file could pass at upload (gunicorn) and fail
    at run (Celery)."""
    failures: list[BaseException] = []

    def call() -> None:
        try:
            function()
        except BaseException as error:  # handed to the caller, which re-raises it
            failures.append(error)

    thread = threading.Thread(target=call, name="upload-check-parse", daemon=True)
    thread.start()
    thread.join()
    if failures:
        raise failures[0]


def _parse_all(sources: dict[str, bytes], entry: str,
               check_entry: Callable[[ast.Module, str], None] | None = None) -> None:
    """Parse every module (each one's tree is dropped before the next is built, so peak memory
    follows the largest) and check the entry point of ``entry`` (``check_entry``, by default
    the interpreter's ``interpret``)."""
    for path, data in sorted(sources.items()):
        tree = _parse_module(data, path)
        if path == entry:
            (check_entry or _check_entry_point)(tree, path)
        del tree


def zip_members(archive: zipfile.ZipFile, *, max_bytes: int, unpacked_limit: int) -> dict[str, zipfile.ZipInfo]:
    """The upload check of a zip's members (paths, kinds, sizes, source limits, names) with the
    caller's limit on what they hold together; used by the model-bundle check, which streams
    the members to disk instead of holding them in memory."""
    return _zip_members(archive, max_bytes, unpacked_limit)


def check_sources(sources: dict[str, bytes], entry: str, check_entry: Callable[[ast.Module, str], None]) -> None:
    """Parse every module as the upload check does (nesting and size caps, a fresh stack) and
    apply ``check_entry`` to the tree of ``entry``; raises ``InvalidCode``."""
    _on_fresh_stack(lambda: _parse_all(sources, entry, check_entry))


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
    required_kwonly = [arg.arg for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=True)
                       if default is None]
    if required_kwonly:
        raise InvalidCode(f"{name}, line {definition.lineno}: interpret has required "
                          f"keyword-only parameter(s) {', '.join(required_kwonly)}; it is "
                          "called as interpret(model, question, context)")


def _zip_members(archive: zipfile.ZipFile, max_bytes: int,
                 unpacked_limit: int | None = None) -> dict[str, zipfile.ZipInfo]:
    """Safe regular-file members by their path inside the archive (a single wrapping folder
    is stripped). Raises InvalidCode for unsafe or oversized archives. ``unpacked_limit``: the
    most the members may hold together (default: ``ZIP_EXPANSION`` x ``max_bytes``, at most
    ``MAX_UNPACKED_BYTES``, since this check holds them in memory)."""
    infos = [info for info in archive.infolist()
             if not info.filename.startswith("__MACOSX/") and not info.is_dir()]
    if not infos:
        raise InvalidCode("the zip holds no files")
    if len(infos) > MAX_ZIP_FILES:
        raise InvalidCode(f"the zip holds {len(infos)} files; the limit is {MAX_ZIP_FILES}")
    if unpacked_limit is None:
        unpacked_limit = min(ZIP_EXPANSION * max_bytes, MAX_UNPACKED_BYTES)
    total = source_total = source_files = 0
    paths: dict[str, zipfile.ZipInfo] = {}
    for info in infos:
        raw = info.filename
        if info.flag_bits & 0x1:
            raise InvalidCode(f"zip entry {raw!r} is encrypted")
        if info.compress_type not in COMPRESSION_METHODS:
            raise InvalidCode(f"zip entry {raw!r} uses compression method {info.compress_type}; "
                              "only deflate and stored entries are accepted")
        kind = (info.external_attr >> 16) & 0o170000
        if kind not in (0, 0o100000):
            raise InvalidCode(f"zip entry {raw!r} is not a regular file (symlinks and devices "
                              "are refused)")
        path = PurePosixPath(raw)
        if "\\" in raw or path.is_absolute() or any(part in ("..", "") for part in path.parts):
            raise InvalidCode(f"zip entry {raw!r} has an unsafe path")
        _check_name_lengths(raw, path)
        _check_is_source(raw, path)
        # The declared sizes are only a first estimate: _inflate refuses a member that holds
        # more than its header declares, so these totals bound what is actually unpacked.
        total += info.file_size
        if total > unpacked_limit:
            raise InvalidCode(f"the zip expands to more than {unpacked_limit} bytes, the limit on "
                              "a zip's unpacked content")
        if raw.endswith(".py"):
            source_files += 1
            source_total += info.file_size
            _check_source_limits(raw, info.file_size, source_total, source_files)
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


def loadable_kind(head: bytes) -> str | None:
    """What a loader could run from a file beginning with ``head`` (its first HEAD_BYTES): native
    code or this Python's bytecode, whatever the file's name; None for anything else."""
    if head.startswith(b"\x7fELF"):
        return "an ELF executable or shared library (native code)"
    if head[:4] in MACH_O_MAGICS:
        return "a Mach-O binary (native code)"
    if head.startswith(b"MZ") and len(head) >= 64:
        header = int.from_bytes(head[60:64], "little")
        if head[header:header + 4] == b"PE\0\0":
            return "a Windows executable or DLL (native code)"
    if head.startswith(MAGIC_NUMBER):
        return "compiled Python bytecode"
    return None


def zip_directory_start(tail: bytes, size: int) -> int | None:
    """Where the central directory zipimport would read begins (an offset in the file), given
    the file's last ``ZIP_TAIL_BYTES`` (``tail``) and its ``size``; None when zipimport would find
    no usable end-of-archive record. Follows zipimport: the record at the very end, else the
    last one in the tail, a prefix before the archive allowed."""
    if len(tail) >= 22 and tail[-22:-18] == ZIP_END_SIGNATURE:
        position = len(tail) - 22
    else:
        position = tail.rfind(ZIP_END_SIGNATURE)
        if position < 0 or len(tail) - position < 22:
            return None
    directory_size, directory_offset = struct.unpack_from("<II", tail, position + 12)
    end = size - len(tail) + position
    if end < directory_size or end < directory_offset or end - directory_size < directory_offset:
        return None
    return end - directory_size


def zip_module_names(directory: bytes) -> list[str]:
    """The names in a zip's central directory (``directory``: its bytes from the first entry on,
    read as zipimport reads them, entry after entry) that zipimport would import: ``.py`` and
    ``.pyc`` files (``ZIP_MODULE_SUFFIXES``)."""
    names, offset = [], 0
    while directory[offset:offset + 4] == ZIP_ENTRY_SIGNATURE and offset + 46 <= len(directory):
        name_length, extra_length, comment_length = struct.unpack_from("<HHH", directory, offset + 28)
        name = directory[offset + 46:offset + 46 + name_length].decode("utf-8", "replace")
        if name.lower().endswith(ZIP_MODULE_SUFFIXES):
            names.append(name)
        offset += 46 + name_length + extra_length + comment_length
    return names


def _check_content(raw: str, data: bytes) -> None:
    """A member that is not Python source must not be anything a loader could run: native code,
    bytecode, or a zip archive (zipimport would import from it what was never checked)."""
    kind = loadable_kind(data[:HEAD_BYTES])
    if kind:
        raise InvalidCode(f"zip entry {raw!r} is {kind}, which is refused whatever the file's name: "
                          "the code that runs must be the source that was checked")
    if data.startswith(ZIP_START_SIGNATURES) or zip_directory_start(data[-ZIP_TAIL_BYTES:], len(data)) is not None:
        raise InvalidCode(f"zip entry {raw!r} is a zip archive; archives inside the zip are refused "
                          "(Python can import modules from a zip, and those were never checked)")


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
            what = ("is the sandbox runner's own" if module in RESERVED_MODULES + MODEL_RESERVED_MODULES
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


def _check_source_limits(name: str, size: int, total: int, count: int) -> None:
    """The caps on the parser's work (module size, total source, number of modules)."""
    if size > MAX_MODULE_BYTES:
        raise InvalidCode(f"{name}: {size} bytes of Python source; a module may have at most "
                          f"{MAX_MODULE_BYTES} bytes (the limit on one .py file; put data in a "
                          "file that is not .py and read it at run time)")
    if total > MAX_SOURCE_BYTES:
        raise InvalidCode(f"the .py files hold more than {MAX_SOURCE_BYTES} bytes of Python source "
                          "in total; that is the limit on a submission's source (put data in "
                          "files that are not .py)")
    if count > MAX_SOURCE_FILES:
        raise InvalidCode(f"the zip holds more than {MAX_SOURCE_FILES} .py files; that is the "
                          "limit on a submission's modules")


COMPRESSION_METHODS = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)
_LOCAL_HEADER = struct.Struct("<4s22xHH")  # signature, then the name and extra field lengths
_LOCAL_HEADER_SIGNATURE = b"PK\x03\x04"


def _inflate_deflated(stored: memoryview, declared: int, name: str) -> bytes:
    """Inflate a raw deflate stream, feeding it INFLATE_CHUNK bytes at a time and taking at most
    INFLATE_CHUNK bytes out per step; refuse it once it yields more than ``declared`` bytes."""
    inflater = zlib.decompressobj(-zlib.MAX_WBITS)
    chunks: list[bytes] = []
    size = 0

    def take(chunk: bytes) -> None:
        nonlocal size
        size += len(chunk)
        if size > declared:
            raise InvalidCode(f"zip entry {name!r} holds more than the {declared} bytes its header "
                              "declares; the zip is damaged or forged")
        chunks.append(chunk)

    try:
        for offset in range(0, len(stored), INFLATE_CHUNK):
            pending: bytes | memoryview = stored[offset:offset + INFLATE_CHUNK]
            while pending and not inflater.eof:
                take(inflater.decompress(pending, INFLATE_CHUNK))
                pending = inflater.unconsumed_tail
            if inflater.eof:
                break
        while not inflater.eof:  # output the length cap held back after the last input
            chunk = inflater.decompress(b"", INFLATE_CHUNK)
            if not chunk:
                break
            take(chunk)
    except zlib.error as error:
        raise InvalidCode(f"zip entry {name!r} cannot be read ({error})") from None
    if not inflater.eof:
        raise InvalidCode(f"zip entry {name!r} cannot be read (its compressed data is truncated)")
    return b"".join(chunks)


def _inflate(source: bytes, info: zipfile.ZipInfo) -> bytes:
    """The content of one member, decompressed INFLATE_CHUNK bytes at a time. It must be
    exactly the size and CRC its header declares (checked against the declared totals by
    _zip_members): a member whose data runs on is refused as soon as it passes its declared
    size, so no more than one chunk past the limits is ever inflated."""
    name = info.filename
    start = info.header_offset
    header = source[start:start + _LOCAL_HEADER.size]
    if len(header) < _LOCAL_HEADER.size or not header.startswith(_LOCAL_HEADER_SIGNATURE):
        raise InvalidCode(f"zip entry {name!r} cannot be read (its local header is missing)")
    _, name_length, extra_length = _LOCAL_HEADER.unpack(header)
    start += _LOCAL_HEADER.size + name_length + extra_length
    stored = memoryview(source)[start:start + info.compress_size]  # a view: nothing copied
    if len(stored) < info.compress_size:
        raise InvalidCode(f"zip entry {name!r} cannot be read (the zip is truncated)")
    declared = info.file_size
    if info.compress_type == zipfile.ZIP_STORED:
        data = bytes(stored)
    else:
        data = _inflate_deflated(stored, declared, name)
    if len(data) != declared:
        raise InvalidCode(f"zip entry {name!r} holds {len(data)} bytes but its header declares "
                          f"{declared}; the zip is damaged or forged")
    if zlib.crc32(data) != info.CRC:
        raise InvalidCode(f"zip entry {name!r} cannot be read (bad CRC-32: the zip is damaged)")
    return data


def read_zip(source: bytes, max_bytes: int) -> tuple[dict[str, bytes], str]:
    try:
        archive = zipfile.ZipFile(io.BytesIO(source))
    except (zipfile.BadZipFile, ValueError, EOFError, OSError, struct.error) as error:
        raise InvalidCode(f"not a valid zip file ({error})") from None
    with archive:
        members = _zip_members(archive, max_bytes)
    entry = _zip_entry(members)
    files = {path: _inflate(source, info) for path, info in members.items()}
    for path, data in sorted(files.items()):
        if not path.endswith(".py"):
            _check_content(path, data)
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
        _check_source_limits(name, len(source), len(source), 1)
        _on_fresh_stack(lambda: _parse_all({name: source}, name))
        return {ENTRY_FILE: source}, ENTRY_MODULE
    if suffix == ".zip":
        files, entry = read_zip(source, max_bytes)
        sources = {path: data for path, data in files.items() if path.endswith(".py")}
        _on_fresh_stack(lambda: _parse_all(sources, entry))
        return files, _module_name(entry)
    raise InvalidCode(f"{name}: upload a Python file (.py) or a .zip holding one entry module")


def check_submission_code(source: bytes | str, filename: str, *, max_bytes: int = DEFAULT_MAX_BYTES) -> str:
    """Validate an uploaded interpreter; return the entry module name or raise InvalidCode.

    * a ``.py`` file (UTF-8): it is the entry module, stored as ``interpreter.py`` (returns
      ``"interpreter"``);
    * a ``.zip``: the entry module is ``interpreter.py`` at the top level if present, else the
      single top-level ``.py`` file (a single wrapping folder is ignored); every ``.py`` inside
      must parse; no symlinks, absolute or ``..`` paths, encryption, or more than
      ``ZIP_EXPANSION`` x max_bytes (at most ``MAX_UNPACKED_BYTES``) uncompressed;
    * either way at most ``MAX_MODULE_BYTES`` per module, ``MAX_SOURCE_BYTES`` and
      ``MAX_SOURCE_FILES`` of Python source in all, nested at most ``MAX_NESTING_DEPTH`` deep.

    The entry module must define ``interpret`` at its top level with ``def`` and at least three
    positional parameters (model, question, context). Syntax errors report line and column.
    See ``checked_files`` for everything else refused; the run applies the same check.
    """
    return checked_files(source, filename, max_bytes=max_bytes)[1]
