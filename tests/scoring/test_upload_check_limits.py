"""The upload check's cost is bounded by the upload's size and small fixed limits, whatever the
file holds (docs/sandbox.md, "Limits of the upload check"). Each attack used to cost the web
worker seconds of CPU or gigabytes of memory, or answered 500: a 15 KB zip holding 10 MB of
source (31 s of parsing), a 1 MB zip whose size fields lie (950 MB inflated at once), source
nested deeply enough to exhaust the parser (MemoryError / RecursionError). Each test asserts
the refusal names the limit and that the check's peak memory (tracemalloc) stays bounded;
time is left to the benchmarks."""
import io
import struct
import sys
import tracemalloc
import zipfile
import zlib

import pytest

from scoring.sandbox import job_dir, upload_check
from scoring.sandbox.errors import InvalidCode
from scoring.sandbox.upload_check import checked_files

GOOD = b"def interpret(model, question, context):\n    return []\n"
MB = 1_000_000


def zip_of(files, compression=zipfile.ZIP_DEFLATED):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=compression) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def flat_source(size):
    """A valid module of ``size`` bytes made of the cheapest statements to write and the
    dearest to parse (one name per line: two tokens and two tree nodes per two bytes)."""
    return GOOD + b"x\n" * ((size - len(GOOD)) // 2)


def deflate_bomb(megabytes):
    """A raw deflate stream inflating to ``megabytes`` MB of '#', built from one compressed block
    repeated (a full flush makes each block independent), so a 950 MB bomb costs milliseconds."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    block = compressor.compress(b"#" * MB) + compressor.flush(zlib.Z_FULL_FLUSH)
    return block * megabytes + compressor.flush()


def _central_headers(raw):
    """Offsets of the central directory records, found by walking the directory."""
    end = raw.rindex(b"PK\x05\x06")
    count, _, start = struct.unpack("<HII", raw[end + 10:end + 20])
    offsets = []
    for _ in range(count):
        offsets.append(start)
        name_length, extra_length, comment_length = struct.unpack("<HHH", raw[start + 28:start + 34])
        start += 46 + name_length + extra_length + comment_length
    return offsets


def forged_zip(name, stream, *, method=zipfile.ZIP_DEFLATED, crc, declared_size):
    """A zip holding GOOD as interpreter.py and ``name`` whose bytes are ``stream`` while both
    of its headers claim ``method``, ``crc`` and ``declared_size``."""
    raw = bytearray(zip_of({"interpreter.py": GOOD, name: stream}, compression=zipfile.ZIP_STORED))
    local = zipfile.ZipFile(io.BytesIO(bytes(raw))).getinfo(name).header_offset
    central = _central_headers(raw)[1]
    for method_at, sizes_at in ((local + 8, local + 14), (central + 10, central + 16)):
        raw[method_at:method_at + 2] = struct.pack("<H", method)
        raw[sizes_at:sizes_at + 12] = struct.pack("<III", crc, len(stream), declared_size)
    return bytes(raw)


def refusal_and_peak(data, filename="method.zip"):
    """The InvalidCode message and the peak of memory the check allocated, in bytes."""
    tracemalloc.start()
    try:
        with pytest.raises(InvalidCode) as refusal:
            checked_files(data, filename)
        return str(refusal.value), tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# --------------------------------------------------------------------------- zip content

def test_ten_megabytes_of_source_in_a_small_zip_is_refused_without_inflating_it():
    bomb = zip_of({"interpreter.py": flat_source(10 * MB)})
    assert len(bomb) < 30_000
    message, peak = refusal_and_peak(bomb)
    assert f"expands to more than {upload_check.MAX_UNPACKED_BYTES} bytes" in message
    assert peak < 2 * MB  # the old check parsed all 10 MB (a tree of several GB)


def test_source_within_the_unpacked_limit_but_over_the_parse_caps_is_refused_unparsed():
    module = flat_source(upload_check.MAX_MODULE_BYTES + 1)
    message, peak = refusal_and_peak(zip_of({"interpreter.py": module}))
    assert f"a module may have at most {upload_check.MAX_MODULE_BYTES} bytes" in message
    assert peak < 2 * MB
    half = flat_source(upload_check.MAX_MODULE_BYTES)
    spread = {"interpreter.py": GOOD, "a.py": half, "b.py": half, "c.py": half}
    message, peak = refusal_and_peak(zip_of(spread))
    assert f"more than {upload_check.MAX_SOURCE_BYTES} bytes of Python source in total" in message
    assert peak < 2 * MB
    many = {"interpreter.py": GOOD, **{f"lib/m{i}.py": b"x = 1\n" for i in range(upload_check.MAX_SOURCE_FILES)}}
    message, _ = refusal_and_peak(zip_of(many))
    assert f"more than {upload_check.MAX_SOURCE_FILES} .py files" in message


@pytest.mark.parametrize("member", ["helper.py", "words.txt"])
def test_a_zip_whose_size_fields_lie_is_refused_after_one_chunk(member):
    """950 MB of deflate in a 0.9 MB zip whose headers declare 100 bytes, with the CRC of the
    first 100 bytes: zipfile inflated all of it in one call (2 GB at peak per request), and the
    CRC matched, so the upload was accepted and the sandbox worker inflated it again."""
    stream = deflate_bomb(950)
    data = forged_zip(member, stream, crc=zlib.crc32(b"#" * 100), declared_size=100)
    assert len(data) < upload_check.DEFAULT_MAX_BYTES
    message, peak = refusal_and_peak(data)
    assert f"'{member}' holds more than the 100 bytes its header declares" in message
    assert peak < 4 * upload_check.INFLATE_CHUNK + len(data)


def test_a_member_holding_less_than_declared_or_a_wrong_crc_is_refused():
    stream = zlib.compress(b"tiny", 9)[2:-4]  # raw deflate
    message, _ = refusal_and_peak(forged_zip("words.txt", stream, crc=zlib.crc32(b"tiny"), declared_size=4_000))
    assert "holds 4 bytes but its header declares 4000" in message
    message, _ = refusal_and_peak(forged_zip("words.txt", stream, crc=12345, declared_size=4))
    assert "bad CRC-32" in message


@pytest.mark.parametrize("method, label", [(zipfile.ZIP_BZIP2, "12"), (zipfile.ZIP_LZMA, "14")])
def test_compression_methods_that_cannot_be_inflated_in_bounded_steps_are_refused(method, label):
    """bz2 and lzma decompressors in zipfile take no output limit: one read can inflate ~100 MB."""
    message, _ = refusal_and_peak(zip_of({"interpreter.py": GOOD}, compression=method))
    assert f"compression method {label}; only deflate and stored entries are accepted" in message


def test_the_run_applies_the_same_limits_to_the_stored_file(tmp_path):
    """One check: the run's unpacking refuses what the upload refuses, with the same message."""
    data = forged_zip("helper.py", deflate_bomb(50), crc=zlib.crc32(b"#" * 100), declared_size=100)
    stored = tmp_path / "stored.zip"
    stored.write_bytes(data)
    with pytest.raises(InvalidCode) as at_upload:
        checked_files(data, "method.zip")
    with pytest.raises(InvalidCode) as at_run:
        job_dir.install_code(stored, tmp_path / "code")
    assert str(at_run.value) == str(at_upload.value)


# --------------------------------------------------------------------------- parsing

CHAIN = 60_000
NESTED = {
    "brackets": (GOOD + b"x = " + b"(" * 60 + b"1" + b")" * 60 + b"\n", "brackets nested more than 50 deep"),
    "brackets past the tokenizer": (GOOD + b"x = " + b"[" * 250 + b"]" * 250 + b"\n", "brackets nested more than 50"),
    "indentation": (GOOD + b"".join(b" " * i + b"if x:\n" for i in range(60)) + b" " * 60 + b"pass\n",
                    "indented more than 50 levels deep"),
    "unary minus": (GOOD + b"x = " + b"-" * CHAIN + b"1\n", "nested too deeply to parse"),
    "not": (GOOD + b"x = " + b"not " * (CHAIN // 4) + b"1\n", "nested too deeply to parse"),
    "lambda": (GOOD + b"x = " + b"lambda:" * (CHAIN // 7) + b"1\n", "nested too deeply to parse"),
    "power": (GOOD + b"x = " + b"2**" * (CHAIN // 3) + b"1\n", "nested too deeply to parse"),
    "additions": (GOOD + b"x = " + b"1+" * (CHAIN // 2) + b"1\n", "nested too deeply to parse"),
    "calls": (GOOD + b"x = f" + b"()" * (CHAIN // 2) + b"\n", "nested too deeply to parse"),
    "subscripts": (GOOD + b"x = a" + b"[0]" * (CHAIN // 3) + b"\n", "nested too deeply to parse"),
    "attributes": (GOOD + b"x = a" + b".b" * (CHAIN // 2) + b"\n", "nested too deeply to parse"),
}


@pytest.mark.parametrize("name", NESTED)
def test_deeply_nested_source_is_a_clear_refusal_not_a_crash(name):
    source, expected = NESTED[name]
    assert len(source) <= upload_check.MAX_MODULE_BYTES
    message, peak = refusal_and_peak(source, "method.py")
    assert expected in message
    assert peak < 48 * MB
    message, _ = refusal_and_peak(zip_of({"interpreter.py": GOOD, "lib/deep.py": source}))
    assert message.startswith("lib/deep.py") and expected in message


def test_brackets_and_indentation_inside_strings_and_comments_do_not_count():
    """The depth scan skips comments and string literals (regular expressions, ASCII art and
    smileys are full of unbalanced brackets), so honest code is not refused by it."""
    source = (GOOD + b'SAD = ":(" * 3\n'
              + b"".join(b'PATTERN = r"\\"' + b"(" * 60 + b'"  # ' + b"[" * 60 + b"\n" for _ in range(3))
              + b"TREE = '''\n" + b"".join(b" " * i + b"{\n" for i in range(80)) + b"'''\n")
    assert checked_files(source, "method.py")[1] == "interpreter"


def test_the_largest_source_the_limits_allow_is_parsed_one_module_at_a_time():
    """Two modules at the per-module cap (the total cap), of the dearest source to parse. One
    such module peaks at ~60 MB; the tree of each is dropped before the next is built, so the
    peak follows the largest module (~120 MB if both trees were alive at once)."""
    module = flat_source(upload_check.MAX_MODULE_BYTES)
    files = {"interpreter.py": GOOD, "a.py": module, "b.py": module[:-len(GOOD) - 2] + b"\n"}
    assert sum(map(len, files.values())) <= upload_check.MAX_SOURCE_BYTES
    tracemalloc.start()
    try:
        assert checked_files(zip_of(files), "method.zip")[1] == "interpreter"
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert 20 * MB < peak < 90 * MB


def test_the_parser_depth_limit_does_not_depend_on_the_callers_stack():
    """CPython counts the caller's frames against the depth of the tree ast.parse builds: a
    chain that parsed at upload (a shallow gunicorn stack) could fail at run (a deeper Celery
    stack), or the reverse. The check parses on a fresh stack, so both agree."""
    source = GOOD + b"x = " + b"1+" * 2_000 + b"1\n"
    assert checked_files(source, "method.py")[1] == "interpreter"

    def deep(levels):
        return deep(levels - 1) if levels else checked_files(source, "method.py")[1]

    assert deep(sys.getrecursionlimit() - 150) == "interpreter"
