"""Code submissions: upload validation, reply validation and the sandboxed runner
(docs/sandbox.md).

The attacks live in test_sandbox_attacks.py. Runs here use a tiny random model; the bwrap runs
are skipped (with the reason) only where bubblewrap is not installed, and fail instead when
EXPBENCH_REQUIRE_SANDBOX=1 (CI).
"""
import io
import json
import logging
import math
import os
import zipfile
from pathlib import Path

import pytest

from scoring import sandbox
from scoring.sandbox import (
    InvalidCode,
    RunResult,
    SandboxLimits,
    SandboxUnavailable,
    availability,
    check_submission_code,
    job_dir,
    layout,
    run_interpreter,
    validate_scores,
)
from scoring.sandbox.child_process import CappedBuffer
from scoring.sandbox.limits import public_sample

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "sandbox"
GOOD = b"def interpret(model, question, context):\n    return [1.0]\n"
SENTENCES = ["The cat sat on the mat in Paris.", "It was red.", "Then it rained on the road."]
CONTEXT = " ".join(SENTENCES)
needs_bwrap = pytest.mark.needs_bwrap  # tests/conftest.py: skipped without bwrap, failed in CI


def make_zip(files: dict[str, bytes | str], *, symlink: str | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
        if symlink:
            info = zipfile.ZipInfo(symlink)
            info.external_attr = (0o120777 << 16)
            archive.writestr(info, "/etc/passwd")
    return buffer.getvalue()


# --------------------------------------------------------------------------- upload validation

def test_a_python_file_is_the_entry_module():
    assert check_submission_code(GOOD, "my-method.py") == "interpreter"
    assert check_submission_code(GOOD.decode(), "x.PY") == "interpreter"
    star = b"def interpret(*args, **kwargs):\n    return []\n"
    assert check_submission_code(star, "star.py") == "interpreter"
    defaults = b"def interpret(model, question, context, sentences=None, *, k=3):\n  return []\n"
    assert check_submission_code(defaults, "d.py") == "interpreter"


@pytest.mark.parametrize("source, expected", [
    (b"def interpret(model, question, context)\n    return []\n", "line 1, column 40"),
    (b"import os\n\ndef interpret(model, question, context):\n  return [\n", "line 4"),
    (b"def helper(model, question, context):\n    return []\n", "no top-level `def interpret"),
    (b"class A:\n    def interpret(self, model, question, context):\n        return []\n",
     "no top-level `def interpret"),
    (b"interpret = lambda model, question, context: []\n", "no top-level `def interpret"),
    (b"def interpret(model, question):\n    return []\n", "takes 2 positional parameter"),
    (b"async def interpret(model, question, context):\n    return []\n", "not `async def`"),
    (b"def interpret(model, question, context, *, k):\n    return []\n", "keyword-only"),
    (b"x = 1\n\xff\xfe = 2\n", "not UTF-8 text (invalid byte at line 2)"),
    (b"x = '\x00'\n", "null bytes"),
    (b"", "empty"),
])
def test_invalid_python_files_are_refused_with_a_readable_reason(source, expected):
    with pytest.raises(InvalidCode) as error:
        check_submission_code(source, "method.py")
    assert expected in str(error.value)
    assert str(error.value).startswith("method.py")


def test_size_and_extension_limits():
    with pytest.raises(InvalidCode, match="1001 bytes; the limit is 1000"):
        check_submission_code(GOOD + b"#" * (1001 - len(GOOD)), "m.py", max_bytes=1000)
    with pytest.raises(InvalidCode, match=r"upload a Python file \(\.py\) or a \.zip"):
        check_submission_code(GOOD, "method.ipynb")


def test_a_zip_uses_interpreter_py_then_a_single_top_level_module():
    helper = b"def helper():\n    return 1\n"
    assert check_submission_code(make_zip({"interpreter.py": GOOD, "helper.py": helper,
                                           "pkg/__init__.py": b"", "data.txt": "x"}),
                                 "sub.zip") == "interpreter"
    assert check_submission_code(make_zip({"method.py": GOOD, "lib/helper.py": helper}),
                                 "sub.zip") == "method"
    # one wrapping folder (zipping a directory) is ignored
    assert check_submission_code(make_zip({"mine/interpreter.py": GOOD,
                                           "mine/helper.py": helper}), "s.zip") == "interpreter"
    with pytest.raises(InvalidCode) as error:
        check_submission_code(make_zip({"a.py": GOOD, "b.py": GOOD}), "sub.zip")
    assert "interpreter.py at its top level, or else exactly one top-level .py file" in \
        str(error.value)
    assert "found: a.py, b.py" in str(error.value)
    with pytest.raises(InvalidCode, match="found: none"):
        check_submission_code(make_zip({"lib/a.py": GOOD, "README": "x"}), "sub.zip")


@pytest.mark.parametrize("files, expected", [
    ({"interpreter.py": GOOD, "helper.py": b"def f(:\n"}, "helper.py: syntax error at line 1"),
    ({"interpreter.py": b"def interpret(m, q):\n  return []\n"}, "interpreter.py, line 1"),
    ({"my-method.py": GOOD}, "not a valid Python module name"),
    ({"scoring.py": GOOD}, "reserved"),
    ({"../evil.py": GOOD}, "unsafe path"),
    ({"/abs/interpreter.py": GOOD}, "unsafe path"),
])
def test_invalid_zips_are_refused(files, expected):
    with pytest.raises(InvalidCode, match=expected.replace("(", r"\(")):
        check_submission_code(make_zip(files), "sub.zip")


def test_zip_symlinks_bombs_and_garbage_are_refused():
    with pytest.raises(InvalidCode, match="not a regular file"):
        check_submission_code(make_zip({"interpreter.py": GOOD}, symlink="link.py"), "s.zip")
    bomb = make_zip({"interpreter.py": GOOD, "zeros.bin": b"\0" * 200_000})
    assert len(bomb) < 10_000
    with pytest.raises(InvalidCode, match="expands to more than 100000 bytes"):
        check_submission_code(bomb, "s.zip", max_bytes=10_000)
    with pytest.raises(InvalidCode, match="not a valid zip file"):
        check_submission_code(b"PK\x03\x04 definitely not a zip", "s.zip")


# --------------------------------------------------------------------------- replies

@pytest.mark.parametrize("value, category", [
    ([1, 2.5, -3], None),
    ([1.0, 2.0], "wrong_length"),
    ([1.0, 2.0, 3.0, 4.0], "wrong_length"),
    ([1.0, math.nan, 3.0], "not_finite"),
    ([1.0, math.inf, 3.0], "not_finite"),
    ("1 2 3", "not_a_list"),
    ({"a": 1}, "not_a_list"),
    (None, "not_a_list"),
    ([1.0, "2", 3.0], "not_a_list"),
    ([1.0, True, 3.0], "not_a_list"),
    ([1.0, [2.0], 3.0], "not_a_list"),
])
def test_reply_validation(value, category):
    scores, found, detail = validate_scores(value, 3)
    assert found == category
    if category is None:
        assert scores == [1.0, 2.5, -3.0] and all(type(s) is float for s in scores)
    else:
        assert scores is None and detail


def test_only_public_fields_reach_the_sandbox():
    message = public_sample({"id": 7, "question": "q?", "context": "A. B.",
                             "sentences": ["A.", "B."], "gt_candidates": [[1, 0]],
                             "answer": "secret"})
    assert message == {"id": "7", "question": "q?", "context": "A. B.",
                       "sentences": ["A.", "B."], "n_sentences": 2}
    with pytest.raises(ValueError, match="3 sentences but n_sentences = 2"):
        public_sample({"id": 1, "question": "q", "context": "c",
                       "sentences": ["a", "b", "c"], "n_sentences": 2})


def test_capped_stderr_keeps_head_and_tail():
    buffer = CappedBuffer(1000)
    buffer.add(b"HEAD" + b"a" * 5000)
    for _ in range(100):
        buffer.add(b"b" * 997 + b"END")
    text = buffer.text()
    assert text.startswith("HEAD") and text.endswith("END")
    assert "bytes of output dropped" in text
    assert len(text) < 1100


# --------------------------------------------------------------------------- the jail's runtime

def test_the_runtime_holds_the_child_and_the_scoring_subset_under_reserved_names(tmp_path):
    job_dir.install_runtime(tmp_path)
    top = sorted(path.name for path in tmp_path.iterdir())
    assert top == sorted([layout.CHILD_FILE, layout.RUNTIME_PACKAGE])
    assert (tmp_path / layout.CHILD_FILE).read_bytes() == job_dir.CHILD_SOURCE.read_bytes()
    for name in layout.RUNTIME_MODULES:
        copied = tmp_path / layout.RUNTIME_PACKAGE / name
        assert copied.read_bytes() == (job_dir.SCORING_ROOT / name).read_bytes(), name
    for relative in layout.RUNTIME_DATA:
        assert any(path.is_file() for path in (tmp_path / layout.RUNTIME_PACKAGE / relative).rglob("*"))
    # runtime/ comes first on the child's sys.path (the code directory last): a submission may not use its names
    assert sorted(Path(name).stem for name in top) == sorted(layout.RESERVED_MODULES)
    for name in layout.RESERVED_MODULES:
        with pytest.raises(InvalidCode, match="reserved"):
            check_submission_code(make_zip({f"{name}.py": GOOD}), "sub.zip")


@pytest.mark.parametrize("setting, value, missing", [
    ("RUNTIME_MODULES", layout.RUNTIME_MODULES + ("models/moved_away.py",), "models/moved_away.py"),
    ("RUNTIME_DATA", ("resources/no_such_data",), "resources/no_such_data/"),
    ("CHILD_SOURCE", job_dir.SANDBOX_DIR / "no_such_child.py", "no_such_child.py"),
])
def test_a_missing_runtime_file_stops_the_run_with_a_clear_error(setting, value, missing, tmp_path,
                                                                 monkeypatch):
    monkeypatch.setattr(job_dir, setting, value)
    with pytest.raises(FileNotFoundError, match="the sandbox runtime is incomplete") as error:
        job_dir.install_runtime(tmp_path / "runtime")
    assert missing in str(error.value)
    code = tmp_path / "m.py"
    code.write_bytes(GOOD)
    with pytest.raises(FileNotFoundError, match="the sandbox runtime is incomplete"):
        run_interpreter(code, tmp_path, "classification", [], mode="none")


# --------------------------------------------------------------------------- availability

@pytest.fixture
def fresh_probe():
    sandbox.sandbox_available.cache_clear()
    yield
    sandbox.sandbox_available.cache_clear()


def test_missing_bwrap_refuses_code_submissions_with_the_reason(fresh_probe, monkeypatch,
                                                                 tmp_path):
    real_tool = availability.find_tool
    monkeypatch.setattr(availability, "find_tool", lambda name: None if name == "bwrap" else
                        real_tool(name))
    available, reason = sandbox.sandbox_available()
    assert available is False
    assert "bubblewrap (bwrap) is not installed" in reason
    code = tmp_path / "m.py"
    code.write_bytes(GOOD)
    with pytest.raises(SandboxUnavailable, match="bwrap"):
        run_interpreter(code, tmp_path, "classification", [])
    assert sandbox.sandbox_available("none")[0] is True
    with pytest.raises(ValueError, match="mode"):
        sandbox.sandbox_available("docker")


@needs_bwrap
def test_bwrap_probe_reports_the_unprivileged_user(fresh_probe):
    available, reason = sandbox.sandbox_available("bwrap")
    assert available, reason
    if os.geteuid() == 0:  # a uid of the per-run pool (scoring/sandbox/uids.py), not root
        assert "per-run uids" in reason and "uid 0" not in reason


# --------------------------------------------------------------------------- runs

@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    from tests.tiny_models import build_tiny_classifier

    return build_tiny_classifier(tmp_path_factory.mktemp("sandbox-model") / "cls", seed=5)


def samples(n=3):
    return [{"id": f"q{i}", "question": f"Where did the cat sit {i}?", "context": CONTEXT,
             "n_sentences": len(SENTENCES), "sentences": SENTENCES,
             "gt_candidates": [[1, 0, 0]]} for i in range(n)]


def test_mode_none_runs_the_same_child_and_warns_loudly(model_dir, caplog):
    progress = []
    with caplog.at_level(logging.WARNING, logger="scoring.sandbox"):
        result = run_interpreter(FIXTURES / "good.py", model_dir, "classification", samples(2),
                                 mode="none", progress=lambda *a: progress.append(a))
    assert result.status == "ok", result.message
    assert set(result.scores) == {"q0", "q1"} and not result.failures
    assert progress == [(1, 2), (2, 2)]
    assert result.isolation[0] == "rlimits" and "bwrap" not in result.isolation
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert any("WITHOUT a sandbox" in r.getMessage() for r in warnings)


@needs_bwrap
def test_baselines_run_through_the_sandbox_and_match_in_process(model_dir, tmp_path):
    """Built-in baselines wrapped in tiny modules, through bwrap: a gradient method and
    the two perturbation packages (lime, shap), which need writable caches and more memory."""
    from scoring.models import interpreters
    from scoring.models.hosted_model import load_hosted_model

    model = load_hosted_model(model_dir, "classification")
    batch = samples(4)
    # SHAP_100, not SHAP_10: SHAP_10's regression over more words than rows is singular, so float
    # rounding from another batching (one torch thread here, batches side by side there) can move
    # a whole word's weight (docs/quackie_models.md §5, "Stated tolerance").
    for name in ("Random", "Gradient_sum", "LIME_10_sum", "SHAP_100_max"):
        code = sandbox.write_baseline_code(name, tmp_path, seed=3)
        assert check_submission_code(code.read_bytes(), code.name) == "interpreter"
        progress = []
        result = run_interpreter(code, model_dir, "classification", batch,
                                 progress=lambda *a, progress=progress: progress.append(a))
        assert result.status == "ok", (result.message, result.stderr)
        assert not result.failures, result.failure_details
        assert progress == [(i, 4) for i in range(1, 5)]
        assert "bwrap" in result.isolation and "rlimits" in result.isolation
        for sample in batch:
            expected = interpreters.interpret(name, model, sample["question"], CONTEXT,
                                              SENTENCES, seed=3)
            got = result.scores[sample["id"]]
            assert len(got) == 3 and all(math.isfinite(v) for v in got)
            assert got == pytest.approx(expected, rel=1e-4, abs=1e-7), name
        assert result.startup_seconds > 0 and result.model_load_seconds > 0
        assert set(result.sample_seconds) == {s["id"] for s in batch}
    json.dumps(result.to_dict())  # storable as is


@needs_bwrap
def test_a_zip_submission_gets_question_context_sentences_and_nothing_else(model_dir,
                                                                           tmp_path):
    code = tmp_path / "sub.zip"
    code.write_bytes(make_zip({
        "method/interpreter.py": "from helper import show\n\n"
                                 "def interpret(model, question, context, **extra):\n"
                                 "    raise RuntimeError(show(question, context, extra))\n",
        "method/helper.py": "def show(*args):\n    return repr(args)\n"}))
    result = run_interpreter(code, model_dir, "classification", samples(1))
    # Its only sample fails, so the run does (all_samples_failed); the detail is still kept.
    assert result.failure == "all_samples_failed" and result.failures == {"q0": "exception"}
    assert result.message == "every sample failed: 1 exception"
    detail = result.failure_details["q0"]
    assert f"RuntimeError: ('Where did the cat sit 0?', {CONTEXT!r}, " \
           f"{{'sentences': {SENTENCES!r}}})" in detail
    assert "gt_candidates" not in detail and "[1, 0, 0]" not in detail
    assert 'File "/sandbox/code/interpreter.py", line 4, in interpret' in detail

    three = tmp_path / "three.py"  # no sentences parameter: called with three arguments
    three.write_text("def interpret(model, question, context):\n"
                     "    return [float(len(context))] * 3\n")
    result = run_interpreter(three, model_dir, "classification", samples(1))
    assert result.scores == {"q0": [float(len(CONTEXT))] * 3}


@needs_bwrap
def test_result_summary_for_the_researcher(model_dir):
    result = run_interpreter(FIXTURES / "wrong_outputs.py", model_dir, "classification",
                             samples(1) + [dict(samples(1)[0], id="bad",
                                                question="ATTACK nan")],
                             limits=SandboxLimits(per_sample_seconds=20))
    assert isinstance(result, RunResult) and result.ok
    assert result.message == "1 of 2 samples scored, 1 failed"
    assert result.failures == {"bad": "not_finite"}
    assert result.done == result.total == 2


# --------------------------------------------------------------------------- model directory

def test_a_model_directory_exposing_server_data_is_refused(tmp_path):
    var = tmp_path / "var"
    media = var / "media"
    models = var / "models"
    for directory in (media, models / "tiny", tmp_path / "elsewhere" / "tiny"):
        directory.mkdir(parents=True)
    protected = [var, media]

    def refused(path, models_root=models):
        with pytest.raises(sandbox.UnsafeModelDir) as error:
            sandbox.check_model_dir(path, protected, models_root=models_root)
        return str(error.value)

    # fine: outside every protected place, or in the dedicated models directory under var/
    sandbox.check_model_dir(tmp_path / "elsewhere" / "tiny", protected, models_root=models)
    sandbox.check_model_dir(models / "tiny", protected, models_root=models)
    # the var directory itself, or a directory holding it, would put all of it in the sandbox
    assert f"would expose {var}" in refused(var)
    assert "contains it" in refused(tmp_path)
    assert "lies inside it" in refused(media)
    (media / "submissions").mkdir()
    assert "lies inside it" in refused(media / "submissions")
    # under var/ but not in the models directory (e.g. the broker's files)
    (var / "broker").mkdir()
    assert "lies inside it" in refused(var / "broker")
    # a "models directory" that itself holds server data exempts nothing
    assert "lies inside it" in refused(models / "tiny", models_root=var)
    # the copy follows symlinks: a link to the database's directory or a file in it is refused
    (var / "expbench.sqlite3").write_text("db")
    linked = tmp_path / "elsewhere" / "tiny"
    (linked / "weights.bin").symlink_to(var / "expbench.sqlite3")
    assert "its symlink" in refused(linked)
    (linked / "weights.bin").unlink()
    (linked / "cache").symlink_to(tmp_path)
    assert "contains it" in refused(linked)


def test_run_interpreter_refuses_an_unsafe_model_directory_before_running(model_dir, tmp_path):
    code = tmp_path / "m.py"
    code.write_bytes(GOOD)
    with pytest.raises(sandbox.UnsafeModelDir, match="would expose"):
        run_interpreter(code, model_dir, "classification", samples(1), mode="none",
                        protected=[model_dir / "media"])
