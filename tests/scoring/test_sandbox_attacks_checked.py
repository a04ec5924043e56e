"""What runs is what was checked (docs/threat_model.md, promise 7; docs/sandbox.md, "API"):
three ways a submission ran code the upload check never read, each refused at upload (and by
the run, which applies the same check), for interpreter code and model bundles alike.

* a ``# coding: utf-7`` declaration: the check read UTF-8 and saw a comment, Python decoded
  UTF-7 and ran the line hidden in it (``+AAo-`` is a line break);
* a zip inside the zip (here named ``lib.bin``, behind a prefix of other bytes) holding an
  unchecked ``.pyc``: the checked source put it on ``sys.path`` and zipimport ran the bytecode;
* an ELF shared library shipped as ``blob.bin`` and loaded with ``ctypes``.

The upload-check tests need no sandbox. The last test runs the UTF-7 file through the real
sandbox with the upload check's refusal switched off: the jail's loader refuses it again.
Code that checked source builds at run time (``exec``, ``marshal``, ``ctypes`` on bytes it
writes) is not caught by any check: the sandbox alone bounds it (the threat model says so).
"""
import importlib.util
import io
import py_compile
import zipfile
from pathlib import Path

import pytest

from scoring.sandbox import InvalidCode, run_interpreter, upload_check
from scoring.sandbox.bundle_check import BundleRefused, check_bundle, extract_bundle
from tests.scoring.model_bundle_fixtures import write_bundle
from tests.scoring.test_sandbox_attacks import (
    FIXTURES,
    LIMITS,
    assert_scored,
    assert_worker_survived,
    model_dir,  # noqa: F401  (the module's tiny hosted model)
    normal,
)

GOOD = (FIXTURES / "good.py").read_bytes()
# Python decodes this file as UTF-7: the comment ends at "+AAo-" (a line break) and the raise
# is a line of its own. Read as UTF-8 it is one comment.
UTF7_HIDDEN_LINE = b"""# coding: utf-7
def interpret(model, question, context, sentences=None):
    # only a comment +AAo-    raise RuntimeError("HIDDEN LINE RAN")
    return [float(len(s)) for s in sentences]
"""
LOADS_NESTED_ZIP = b"""import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib.bin"))
import payload  # from the zip inside the zip: zipimport runs its .pyc


def interpret(model, question, context, sentences=None):
    return payload.interpret(model, question, context, sentences)
"""
LOADS_BLOB = b"""import ctypes, os
ctypes.CDLL(os.path.join(os.path.dirname(__file__), "blob.bin"))
""" + GOOD


def shared_library() -> bytes:
    """A small real ELF shared library: one of this Python's own extension modules."""
    spec = importlib.util.find_spec("_bisect")
    assert spec and spec.origin and spec.origin.endswith(".so"), spec
    return Path(spec.origin).read_bytes()


def unchecked_pyc(tmp_path: Path) -> bytes:
    target = tmp_path / "payload.pyc"
    py_compile.compile(str(FIXTURES / "bytecode_payload.py"), cfile=str(target), doraise=True,
                       invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
    return target.read_bytes()


def zip_bytes(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def nested_zip(tmp_path: Path) -> bytes:
    """A zip of one .pyc behind 100 bytes of something else: zipimport still opens it."""
    return b"\x00" * 100 + zip_bytes({"payload.pyc": unchecked_pyc(tmp_path)})


def refusal(files: dict[str, bytes]) -> str:
    with pytest.raises(InvalidCode) as refused:
        upload_check.checked_files(zip_bytes(files), "method.zip")
    return str(refused.value)


def test_a_source_encoding_other_than_utf8_is_refused():
    for name, source in (("method.py", UTF7_HIDDEN_LINE),
                         ("method.py", b"# -*- coding: latin-1 -*-\n" + GOOD),
                         ("method.py", b"#!/usr/bin/env python\n# vim: set fileencoding=utf-7 :\n" + GOOD)):
        with pytest.raises(InvalidCode, match="only UTF-8 source is accepted"):
            upload_check.checked_files(source, name)
    assert "helper.py: declares the source encoding 'utf-7'" in refusal(
        {"interpreter.py": GOOD, "helper.py": UTF7_HIDDEN_LINE})
    # UTF-8, declared or not, with or without a BOM, is accepted
    for source in (b"# -*- coding: utf-8 -*-\n" + GOOD, b"# coding: utf8\n" + GOOD, b"\xef\xbb\xbf" + GOOD):
        assert upload_check.check_submission_code(source, "method.py") == "interpreter"


def test_archives_native_code_and_bytecode_are_refused_whatever_their_name(tmp_path):
    pyc = unchecked_pyc(tmp_path)
    nested = nested_zip(tmp_path)
    cases = {
        "a zip behind a prefix": ({"interpreter.py": LOADS_NESTED_ZIP, "lib.bin": nested}, "is a zip archive"),
        "a plain zip": ({"interpreter.py": GOOD, "data/lib.dat": zip_bytes({"x.txt": b"x"})}, "is a zip archive"),
        "an ELF library": ({"interpreter.py": LOADS_BLOB, "blob.bin": shared_library()},
                           "is an ELF executable or shared library"),
        "bytecode renamed": ({"interpreter.py": GOOD, "weights.bin": pyc}, "is compiled Python bytecode"),
        "a Mach-O binary": ({"interpreter.py": GOOD, "x.dat": b"\xcf\xfa\xed\xfe" + bytes(60)}, "Mach-O"),
        "a PE executable": ({"interpreter.py": GOOD, "x.dat": b"MZ" + bytes(58) + b"\x40\0\0\0PE\0\0" + bytes(8)},
                            "Windows executable"),
    }
    for what, (files, expected) in cases.items():
        assert expected in refusal(files), what
    # Data is data: text, JSON, random bytes, a gzip file, the word "PK" inside a text file.
    data = {"interpreter.py": GOOD, "vocab.txt": b"the bytes PK\x05\x06 are just text here\n" * 3,
            "table.json": b'{"a": 1}', "noise.bin": bytes(range(256)) * 300,
            "x.gz": b"\x1f\x8b\x08\x00" + bytes(40), "MZ.txt": b"MZ is a postcode area\n"}
    files, entry = upload_check.checked_files(zip_bytes(data), "method.zip")
    assert entry == "interpreter" and set(files) == set(data)


def test_model_bundles_refuse_the_same_but_keep_zips_of_weights(tmp_path):
    predict = b"def predict(examples):\n    return {e['id']: 'x' for e in examples}\n"
    pyc = unchecked_pyc(tmp_path)
    refused = {
        "lib.bin": nested_zip(tmp_path),
        "blob.bin": shared_library(),
        "weights.bin": pyc,
        "code.zip": zip_bytes({"pkg/__init__.py": b"", "pkg/run.py": b"x = 1\n"}),
    }
    for name, data in refused.items():
        bundle = write_bundle(tmp_path, {"predict.py": predict, name: data}, name=f"{name}.zip")
        with pytest.raises(BundleRefused) as check:
            check_bundle(bundle)
        assert check.value.category == "invalid_bundle" and repr(name) in str(check.value), str(check.value)
        with pytest.raises(BundleRefused):
            extract_bundle(bundle, tmp_path / f"out-{name}")
    # torch.save writes a zip of pickled data and tensors: no module zipimport could import
    weights = zip_bytes({"archive/data.pkl": b"\x80\x02}q\x00.", "archive/data/0": bytes(4096),
                         "archive/version": b"3\n"})
    big_directory = zip_bytes({f"archive/data/{i}": b"" for i in range(3000)})  # directory > 64 KiB
    bundle = write_bundle(tmp_path, {"predict.py": predict, "pytorch_model.bin": weights,
                                     "shards.bin": b"\x00" * 2**20 + big_directory}, name="weights.zip")
    manifest = check_bundle(bundle)
    assert set(manifest.files) == {"predict.py", "pytorch_model.bin", "shards.bin"}
    extract_bundle(bundle, tmp_path / "out-weights")
    assert (tmp_path / "out-weights" / "pytorch_model.bin").read_bytes() == weights
    code_behind_weights = b"\x00" * 2**20 + zip_bytes({**{f"archive/data/{i}": b"" for i in range(3000)},
                                                        "zz/evil.py": b"x = 1\n"})
    bundle = write_bundle(tmp_path, {"predict.py": predict, "shards.bin": code_behind_weights}, name="evil.zip")
    with pytest.raises(BundleRefused, match="'zz/evil.py'"):
        check_bundle(bundle)


@pytest.mark.needs_bwrap
def test_a_utf7_file_past_the_upload_check_is_not_run_by_the_jail(model_dir, tmp_path, monkeypatch):  # noqa: F811
    """With the upload check's refusal switched off (as for code stored before the check), the
    jail's loader reads UTF-8 only and refuses the declaration: import_error, no hidden line."""
    monkeypatch.setattr(upload_check, "_check_declared_encoding", lambda source, name: None)
    code = tmp_path / "interpreter.zip"
    code.write_bytes(zip_bytes({"interpreter.py": b"import helper\n" + GOOD, "helper.py": UTF7_HIDDEN_LINE}))
    result = run_interpreter(code, model_dir, "classification", [normal("a")], limits=LIMITS)
    assert_worker_survived(result)
    assert result.failure == "import_error", (result.message, result.failure_details)
    assert "declares the source encoding 'utf-7'" in result.message and "HIDDEN LINE RAN" not in result.message
    honest = tmp_path / "honest.zip"
    honest.write_bytes(zip_bytes({"interpreter.py": b"# coding: utf-8\n" + GOOD}))
    result = run_interpreter(honest, model_dir, "classification", [normal("b")], limits=LIMITS)
    assert result.status == "ok", result.message
    assert_scored(result, "b")


@pytest.mark.needs_bwrap
def test_past_the_upload_check_a_nested_zip_does_run_so_the_check_is_what_refuses_it(
        model_dir, tmp_path, monkeypatch):  # noqa: F811
    """The content check is the barrier for shipped archives, not the jail: switched off, the
    checked source puts the zip on sys.path and its bytecode runs (inside the sandbox, which
    bounds what it can do). The threat model says which promise covers what."""
    monkeypatch.setattr(upload_check, "_check_content", lambda raw, data: None)
    code = tmp_path / "nested.zip"
    code.write_bytes(zip_bytes({"interpreter.py": LOADS_NESTED_ZIP, "lib.bin": nested_zip(tmp_path)}))
    result = run_interpreter(code, model_dir, "classification", [normal("a")], limits=LIMITS)
    assert_worker_survived(result)
    assert "BYTECODE RAN" in result.failure_details.get("a", ""), (result.message, result.failure_details)
