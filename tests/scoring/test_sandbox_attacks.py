"""Attacks on the code-submission sandbox (docs/sandbox.md, "Attack tests and outcomes").

Each attack is a small submitted interpreter under tests/fixtures/sandbox/ that misbehaves only
on questions starting with ATTACK. Every run mixes ordinary samples before and after the attack
ones, so a per-sample failure also shows the same sandboxed child still answers; when the whole
submission fails, a following ordinary run must still work. Every test checks that the worker
(this test process) is alive, that the failure category is the readable one, and that the
run's private job directory and cgroups are gone (a cgroup can only be removed once every
process in it is dead).

Skipped only where bubblewrap is not installed, and failed instead when
EXPBENCH_REQUIRE_SANDBOX=1 (CI; the ``needs_bwrap`` marker in tests/conftest.py); where it is
installed but unusable (no user namespaces, ...) the tests fail with the probe's reason.
"""
import io
import os
import py_compile
import shutil
import socket
import tempfile
import uuid
import zipfile
from pathlib import Path

import pytest

from scoring import sandbox
from scoring.sandbox import SandboxLimits, run_interpreter, upload_check
from scoring.sandbox.cgroups import CGROUP_PARENT, CGROUP_ROOT

pytestmark = pytest.mark.needs_bwrap

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "sandbox"
SENTENCES = ["The cat sat on the mat in Paris.", "It was red.", "Then it rained on the road."]
CONTEXT = " ".join(SENTENCES)
LIMITS = SandboxLimits(per_sample_seconds=20, total_seconds=300)
CANARY = f"canary-{uuid.uuid4().hex}"


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    from tests.tiny_models import build_tiny_classifier

    return build_tiny_classifier(tmp_path_factory.mktemp("attack-model") / "cls", seed=7)


@pytest.fixture(autouse=True)
def canary_in_the_worker_environment(monkeypatch):
    """A secret in the worker's environment (like SECRET_KEY or DATABASE_URL would be)."""
    monkeypatch.setenv("EXPBENCH_SANDBOX_CANARY", CANARY)


@pytest.fixture(scope="module", autouse=True)
def sandbox_is_usable():
    available, reason = sandbox.sandbox_available("bwrap")
    assert available, f"bwrap is installed but the sandbox is unusable: {reason}"


def normal(sample_id: str) -> dict:
    return {"id": sample_id, "question": "Where did the cat sit?", "context": CONTEXT,
            "sentences": SENTENCES}


def attack(sample_id: str, parameter: str) -> dict:
    return {"id": sample_id, "question": f"ATTACK {parameter}", "context": CONTEXT,
            "sentences": SENTENCES}


def zipped(tmp_path: Path, fixture: str, **extra: str) -> Path:
    """The fixture as a zip submission with extra files next to it (e.g. target_pid.txt)."""
    path = tmp_path / f"{Path(fixture).stem}.zip"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("interpreter.py", (FIXTURES / fixture).read_bytes())
        for name, data in extra.items():
            archive.writestr(name.replace("_txt", ".txt"), data)
    path.write_bytes(buffer.getvalue())
    return path


def run(code, model_dir, attacks: dict[str, str], limits=LIMITS):
    """Ordinary sample, the attacks, ordinary sample."""
    batch = [normal("before")] + [attack(k, v) for k, v in attacks.items()] + [normal("after")]
    code = code if isinstance(code, Path) else FIXTURES / code
    result = run_interpreter(code, model_dir, "classification", batch, limits=limits)
    assert_worker_survived(result)
    return result


def assert_worker_survived(result):
    os.kill(os.getpid(), 0)  # the worker (this process) is alive and can still signal itself
    assert result.job, result
    assert not (Path(tempfile.gettempdir()) / result.job).exists(), "job directory left"
    if os.geteuid() == 0:
        for controller in ("pids", "memory"):
            parent = CGROUP_ROOT / controller / CGROUP_PARENT
            if parent.is_dir():
                left = [p.name for p in parent.iterdir() if p.name.startswith(result.job)]
                assert not left, f"cgroup left (processes survived): {left}"
    everything = result.stderr + "".join(result.failure_details.values()) + result.message
    assert CANARY not in everything


def assert_scored(result, *ids):
    for sample_id in ids:
        assert sample_id in result.scores, (sample_id, result.failures, result.message)
        assert len(result.scores[sample_id]) == len(SENTENCES)


def assert_following_run_works(model_dir):
    result = run_interpreter(FIXTURES / "good.py", model_dir, "classification",
                             [normal("next-1"), normal("next-2")], limits=LIMITS)
    assert_worker_survived(result)
    assert result.status == "ok", (result.message, result.stderr)
    assert_scored(result, "next-1", "next-2")


def detail(result, sample_id) -> str:
    return result.failure_details[sample_id]


def assert_only_this_sample_crashed(result, sample_id, how):
    """The child died on ``sample_id`` alone: that sample is a counted ``crashed`` fail saying
    ``how``, a fresh child scored the samples before and after it, and the run itself is ok."""
    assert result.status == "ok", result.message
    assert result.failures == {sample_id: "crashed"}
    assert f"{how} while scoring sample {sample_id}" in detail(result, sample_id)
    assert result.restarts == 1 and len(result.startups) == 2
    assert_scored(result, "before", "after")


# --------------------------------------------------------------------------- network

def test_no_connection_to_host_services(model_dir):
    listener = socket.create_server(("127.0.0.1", 0))
    listener.setblocking(False)
    port = listener.getsockname()[1]
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()  # reachable from here
        listener.accept()[0].close()
        result = run("net_connect.py", model_dir,
                     {"redis": "6379", "postgres": "5432", "listener": str(port)})
        with pytest.raises(BlockingIOError):
            listener.accept()  # nothing ever arrived from the sandbox
    finally:
        listener.close()
    assert result.status == "ok"
    for sample_id in ("redis", "postgres", "listener"):
        assert result.failures[sample_id] == "exception"
        text = detail(result, sample_id)
        assert text.startswith(("ConnectionRefusedError", "OSError: [Errno 101]")), text
        assert "LEAK" not in text
    assert_scored(result, "before", "after")


# --------------------------------------------------------------------------- files and /proc

@pytest.fixture
def server_data():
    """Stand-ins for what a real server keeps, where it keeps it, outside /tmp (which the
    sandbox's private tmpfs would hide anyway): a database file and a gold file in the repo's
    var/ directory (the default VAR_DIR, home of expbench.sqlite3 and secret_key) and a
    MEDIA_ROOT-like directory there holding another researcher's submission. Removed after."""
    var = REPO / "var"
    made_var = not var.exists()
    var.mkdir(exist_ok=True)
    tag = uuid.uuid4().hex[:12]
    media = var / f"attack-media-{tag}"
    paths = {"db": var / f"attack-{tag}.sqlite3", "gold": var / f"attack-{tag}-gold.json",
             "other": media / "submissions" / "7" / "interpreter.py"}
    try:
        paths["other"].parent.mkdir(parents=True)
        for path in paths.values():
            path.write_text(f"SECRET {CANARY}")
        yield {"var": var, "media": media, **paths}
    finally:
        shutil.rmtree(media, ignore_errors=True)
        for name in ("db", "gold"):
            paths[name].unlink(missing_ok=True)
        if made_var:
            shutil.rmtree(var, ignore_errors=True)


def test_database_gold_settings_and_other_submissions_are_not_there(model_dir, server_data):
    files = {"db": server_data["db"], "gold": server_data["gold"], "other": server_data["other"],
             "settings": REPO / "config" / "settings.py",
             "repo_gold": REPO / "tests" / "fixtures" / "quackie" / "gold.json",
             "passwd": Path("/etc/passwd")}
    directories = {"var": server_data["var"], "media": server_data["media"],
                   "cgroups": Path("/sys/fs/cgroup")}
    # Whatever else of the real server's is on this host: the same must hold for it.
    for name, path in {"real_db": REPO / "var" / "expbench.sqlite3",
                       "secret_key": REPO / "var" / "secret_key",
                       "root_home": Path("/root/.bashrc")}.items():
        if path.is_file():
            files[name] = path
    shared_data = REPO.parent / "shared" / "data"
    if shared_data.is_dir():
        directories["shared_data"] = shared_data
    for path in files.values():
        assert path.is_file(), f"{path} must exist on the host for this test to mean anything"
    for path in directories.values():
        assert path.is_dir(), f"{path} must exist on the host for this test to mean anything"
    targets = {name: str(path) for name, path in files.items()}
    targets.update({name: f"stat {path}" for name, path in directories.items()})
    result = run("read_file.py", model_dir, targets)
    assert result.status == "ok"
    for sample_id, target in targets.items():
        assert result.failures[sample_id] == "exception", sample_id
        text = detail(result, sample_id)
        assert text.startswith("FileNotFoundError"), (target, text)
        assert "Leak" not in text and "SECRET" not in text
    assert_scored(result, "before", "after")


def test_worker_environment_is_unreadable_through_proc(model_dir, tmp_path):
    code = zipped(tmp_path, "read_file.py", target_pid_txt=str(os.getpid()))
    result = run(code, model_dir, {"init": "/proc/1/environ", "parent": "ppid",
                                   "worker": "pid-file", "self": "/proc/self/environ"})
    assert result.failures["init"] == result.failures["parent"] == "exception"
    for sample_id in ("init", "parent"):  # pid 1 is the sandbox's root-owned bwrap
        assert detail(result, sample_id).startswith("PermissionError"), detail(result, sample_id)
    # the worker's pid does not exist in the sandbox's pid namespace
    assert detail(result, "worker").startswith("FileNotFoundError"), detail(result, "worker")
    # its own environment is readable and holds only what Python needs
    own = detail(result, "self")
    assert own.startswith("Leak: READ /proc/self/environ") and "HOME=/tmp" in own
    assert CANARY not in own and "EXPBENCH_SANDBOX_CANARY" not in own
    assert_scored(result, "before", "after")


# --------------------------------------------------------------------------- resources

def test_fork_bomb_is_contained(model_dir):
    result = run("fork_bomb.py", model_dir, {"bomb": ""})
    assert result.status == "ok", result.message
    assert list(result.failures) == ["bomb"]
    if result.failures["bomb"] == "exception":
        assert detail(result, "bomb").startswith("BlockingIOError"), detail(result, "bomb")
    else:  # the child itself was killed: that sample only fails, a new child goes on
        assert result.failures["bomb"] == "crashed", detail(result, "bomb")
    assert_scored(result, "before", "after")
    assert_following_run_works(model_dir)


def test_memory_bomb_is_contained(model_dir):
    result = run("memory_bomb.py", model_dir, {"bomb": ""})
    assert result.status == "ok", result.message
    # MemoryError (RLIMIT_AS) or a kill by the memory cgroup: either way "memory limit exceeded"
    assert result.failures == {"bomb": "memory"}, result.failure_details
    assert detail(result, "bomb").startswith("memory limit exceeded"), detail(result, "bomb")
    assert_scored(result, "before", "after")
    assert_following_run_works(model_dir)


def test_infinite_loop_is_a_per_sample_timeout_and_the_run_goes_on(model_dir):
    limits = SandboxLimits(per_sample_seconds=3, total_seconds=300)
    result = run("infinite_loop.py", model_dir, {"loop": ""}, limits=limits)
    assert result.status == "ok", result.message
    assert result.failures == {"loop": "timeout"}
    assert "longer than 3 s" in detail(result, "loop")
    assert 3 <= result.sample_seconds["loop"] < 10
    assert result.restarts == 1 and len(result.startups) == 2
    assert_scored(result, "before", "after")


def test_cpu_time_limit_kills_a_cpu_burner_and_only_its_sample_fails(model_dir):
    limits = SandboxLimits(cpu_seconds=15, per_sample_seconds=120, total_seconds=300)
    result = run("cpu_burn.py", model_dir, {"burn": ""}, limits=limits)
    assert_only_this_sample_crashed(result, "burn", "killed by SIGXCPU (the CPU-time limit of 15 s)")
    assert result.message == "2 of 3 samples scored, 1 failed"


def test_total_wall_clock_limit(model_dir):
    # The limit includes start-up, which takes from 3 s to 20 s depending on the machine's
    # load: measure it now, so the limit always leaves time for a few 1-second samples.
    warm = run_interpreter(FIXTURES / "good.py", model_dir, "classification", [normal("warm")],
                           limits=LIMITS)
    assert warm.status == "ok", warm.message
    limits = SandboxLimits(per_sample_seconds=5, total_seconds=2 * warm.startup_seconds + 6)
    batch = [normal(f"s{i}") for i in range(200)]  # slow.py sleeps 1 s per sample
    result = run_interpreter(FIXTURES / "slow.py", model_dir, "classification", batch,
                             limits=limits)
    assert_worker_survived(result)
    assert result.status == "failed" and result.failure == "total_timeout", result.message
    assert 0 < len(result.scores) < 200
    assert result.total_seconds < limits.total_seconds + 5
    assert_following_run_works(model_dir)


# --------------------------------------------------------------------------- output and files

def test_output_flood_fails_the_submission(model_dir):
    result = run("output_flood.py", model_dir, {"flood": ""})
    assert result.status == "failed" and result.failure == "output_flood", result.message
    assert "sample flood" in result.message
    assert_scored(result, "before")
    assert_following_run_works(model_dir)


def test_printing_floods_only_fill_a_capped_buffer(model_dir):
    result = run("print_flood.py", model_dir, {"flood": ""})
    assert result.status == "ok" and not result.failures
    assert_scored(result, "before", "flood", "after")
    assert len(result.stderr) < LIMITS.stderr_bytes + 200
    assert "bytes of output dropped" in result.stderr and "END OF FLOOD" in result.stderr


def test_huge_files_and_writes_outside_tmp_are_stopped(model_dir):
    result = run("huge_file.py", model_dir, {
        "huge": "huge", "code": "readonly /sandbox/code", "model": "readonly /sandbox/model",
        "usr": "readonly /usr/lib", "runtime": f"readonly {sys_prefix()}", "fill": "fill"})
    assert result.status == "ok"
    assert detail(result, "huge").startswith("OSError: [Errno 27] File too large")
    for sample_id in ("code", "model", "usr", "runtime"):
        assert detail(result, sample_id).startswith("OSError: [Errno 30] Read-only file system")
    assert detail(result, "fill").startswith("OSError: [Errno 28] No space left on device")
    assert all(result.failures[k] == "exception"
               for k in ("huge", "code", "model", "usr", "runtime", "fill"))
    assert_scored(result, "before", "after")


def sys_prefix() -> str:
    import sys

    return sys.prefix


# --------------------------------------------------------------------------- signals, syscalls

def test_killing_the_parent_the_worker_or_everything_fails(model_dir, tmp_path):
    code = zipped(tmp_path, "kill_parent.py", target_pid_txt=str(os.getpid()))
    result = run(code, model_dir, {"parent": "ppid", "init": "1", "worker": "pid-file",
                                   "all": "all"})
    assert result.status == "ok"
    assert detail(result, "parent").startswith("PermissionError")
    assert detail(result, "init").startswith("PermissionError")
    assert detail(result, "worker").startswith("ProcessLookupError")
    # kill(-1): in its own pid namespace the sandbox user finds nothing it may kill
    assert detail(result, "all").startswith("ProcessLookupError"), detail(result, "all")
    assert_scored(result, "before", "after")


def test_namespace_mount_and_ptrace_escapes_are_refused(model_dir):
    result = run("escape_syscalls.py", model_dir,
                 {"unshare": "unshare", "mount": "mount", "ptrace": "ptrace"})
    assert result.status == "ok"
    for sample_id in ("unshare", "mount", "ptrace"):
        assert detail(result, sample_id).startswith("PermissionError: [Errno 1]"), \
            detail(result, sample_id)
    assert "seccomp" in result.isolation
    assert_scored(result, "before", "after")


# --------------------------------------------------------------------------- wrong code

def test_wrong_length_nan_and_non_lists_are_per_sample_failures(model_dir):
    result = run("wrong_outputs.py", model_dir, {
        "long": "length", "nan": "nan", "inf": "inf", "string": "string",
        "strings": "strings", "none": "none"})
    assert result.status == "ok"
    assert result.failures == {"long": "wrong_length", "nan": "not_finite", "inf": "not_finite",
                               "string": "not_a_list", "strings": "not_a_list",
                               "none": "not_a_list"}
    assert detail(result, "long") == "4 scores for 3 sentences"
    assert detail(result, "nan") == "score 0 is nan"
    assert_scored(result, "before", "after")


def test_an_exception_in_interpret_is_reported_with_the_users_traceback(model_dir):
    result = run("raises.py", model_dir, {"boom": ""})
    assert result.status == "ok" and result.failures == {"boom": "exception"}
    text = detail(result, "boom")
    assert text.startswith("ZeroDivisionError: division by zero")
    assert 'File "/sandbox/code/interpreter.py", line 5, in _helper' in text
    assert "sandbox_child" not in text
    assert_scored(result, "before", "after")


def test_import_error_fails_the_submission_readably(model_dir):
    result = run("import_error.py", model_dir, {})
    assert result.status == "failed" and result.failure == "import_error"
    assert "ModuleNotFoundError: No module named 'definitely_not_an_installed_module'" in \
        result.message
    assert 'File "/sandbox/code/interpreter.py", line 2' in result.message
    assert result.scores == {} and result.failures == {}
    assert_following_run_works(model_dir)


def test_a_crash_on_one_sample_is_that_samples_fail_and_the_run_goes_on(model_dir):
    result = run("segfault.py", model_dir, {"segv": ""})
    assert_only_this_sample_crashed(result, "segv", "killed by SIGSEGV (a segmentation fault)")
    assert result.signal is None  # the submission itself did not fail


def test_a_child_that_keeps_crashing_fails_the_submission(model_dir):
    limits = SandboxLimits(per_sample_seconds=20, total_seconds=300, max_consecutive_crashes=2)
    batch = [normal("before"), attack("segv-1", ""), attack("segv-2", ""), normal("after")]
    result = run_interpreter(FIXTURES / "segfault.py", model_dir, "classification", batch,
                             limits=limits)
    assert_worker_survived(result)
    assert result.status == "failed" and result.failure == "too_many_crashes", result.message
    assert result.message.startswith("the sandboxed process died on 2 samples in a row")
    assert "SIGSEGV" in result.message and result.signal == "SIGSEGV"
    assert result.failures == {"segv-1": "crashed", "segv-2": "crashed"}
    assert_scored(result, "before")
    assert "after" not in result.scores


def test_crashes_in_total_are_capped_too(model_dir):
    limits = SandboxLimits(per_sample_seconds=20, total_seconds=300, max_crashes=1)
    batch = [attack("segv-1", ""), normal("between"), attack("segv-2", ""), normal("after")]
    result = run_interpreter(FIXTURES / "segfault.py", model_dir, "classification", batch,
                             limits=limits)
    assert_worker_survived(result)
    assert result.status == "failed" and result.failure == "too_many_crashes", result.message
    assert "died on 2 samples (the limit is 1)" in result.message
    assert_scored(result, "between")
    assert_following_run_works(model_dir)


def test_forged_protocol_lines_fail_the_submission(model_dir):
    result = run("protocol_tamper.py", model_dir, {"forge": ""})
    assert result.status == "failed" and result.failure == "protocol_error", result.message
    assert "forged" in result.message or "not a JSON reply" in result.message
    assert "forge" not in result.scores
    assert_following_run_works(model_dir)


# --------------------------------------------------------------------------- malformed protocol lines
# protocol_forge.py writes one malformed line straight to the child's protocol pipe: during the
# import (forge.txt names it) or in interpret. Before the fix, null or 400-digit seconds, 400-digit
# scores and a line of nested brackets raised TypeError / OverflowError / RecursionError out of
# run_interpreter, which the worker refunded as scorer_error. Each is the submission's own
# protocol_error (an over-long line its output_flood), and the runner returns normally.

@pytest.mark.parametrize("forged, shown", [
    ("ready-null-seconds", "'seconds' is not a number of seconds"),
    ("ready-big-seconds", "'seconds' is not a number of seconds"),
    ("nested", "not a JSON reply"),
    ("not-json", "not a JSON reply"),
])
def test_malformed_start_up_lines_are_the_submissions_protocol_error(model_dir, tmp_path, forged, shown):
    result = run(zipped(tmp_path, "protocol_forge.py", forge_txt=forged), model_dir, {})
    assert result.status == "failed" and result.failure == "protocol_error", result.message
    assert shown in result.message and len(result.message) < 400
    assert result.scores == {} and result.import_seconds is None
    assert_following_run_works(model_dir)


@pytest.mark.parametrize("forged, failure, shown", [
    ("null-seconds", "protocol_error", "'seconds' is not a number of seconds"),
    ("big-seconds", "protocol_error", "'seconds' is not a number of seconds"),
    ("big-scores", "protocol_error", "an integer score out of range"),
    ("nested", "protocol_error", "not a JSON reply"),
    ("nested-object", "protocol_error", "not a JSON reply"),
    ("not-json", "protocol_error", "not a JSON reply: b'this is not JSON at all'"),
    ("error-not-strings", "protocol_error", "'type' is not a string"),
    ("long", "output_flood", "more than 1000000 bytes without a line end"),
])
def test_malformed_replies_are_the_submissions_own_failure(model_dir, forged, failure, shown):
    result = run("protocol_forge.py", model_dir, {"forged": forged})
    assert result.status == "failed" and result.failure == failure, result.message
    assert result.message.startswith("sample forged: ") and shown in result.message, result.message
    assert len(result.message) < 400
    assert_scored(result, "before")
    assert "forged" not in result.scores and "after" not in result.scores
    assert_following_run_works(model_dir)



# --------------------------------------------------------------------------- what runs is what was checked

def _unchecked_pyc(tmp_path: Path) -> bytes:
    """bytecode_payload.py as an unchecked-hash .pyc: loaded without any look at a source."""
    target = tmp_path / "payload.pyc"
    py_compile.compile(str(FIXTURES / "bytecode_payload.py"), str(target), doraise=True,
                       invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
    return target.read_bytes()


def _zip_of(tmp_path: Path, name: str, files: dict[str, bytes]) -> Path:
    path = tmp_path / f"{name}.zip"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for member, data in files.items():
            archive.writestr(member, data)
    path.write_bytes(buffer.getvalue())
    return path


def test_bytecode_and_shadowed_trusted_modules_are_harmless_even_past_the_upload_check(
        model_dir, tmp_path, monkeypatch):
    """The upload (and the run's same check) refuse these zips (tests/submissions/
    test_code_submissions.py). With those two refusals switched off here, the child itself still
    never runs them: the submission's directory is added after the model loaded and after every
    trusted path, with a finder that loads .py sources only. Before, the hidden .pyc ran instead
    of interpreter.py, the lone .pyc imported, and scoring/__init__.py ran at model load."""
    monkeypatch.setattr(upload_check, "_check_is_source", lambda raw, path: None)
    monkeypatch.setattr(upload_check, "_check_content", lambda raw, data: None)  # bytecode by content
    monkeypatch.setattr(upload_check, "_check_top_level_names", lambda paths: None)
    good = (FIXTURES / "good.py").read_bytes()
    pyc = _unchecked_pyc(tmp_path)

    hidden = run(_zip_of(tmp_path, "hidden", {"interpreter.py": good,
                                              "__pycache__/interpreter.cpython-311.pyc": pyc}), model_dir, {})
    assert hidden.status == "ok" and not hidden.failures, (hidden.message, hidden.failure_details)
    assert_scored(hidden, "before", "after")

    lone = run(_zip_of(tmp_path, "lone", {"interpreter.py": b"import helper\n" + good, "helper.pyc": pyc}),
               model_dir, {})
    assert lone.failure == "import_error" and "No module named 'helper'" in lone.message, lone.message

    for shipped in ({"scoring/__init__.py": (FIXTURES / "shadow_scoring_init.py").read_bytes()},
                    {"scoring/__init__.py": b"", "scoring/models/__init__.py": b"",
                     "scoring/models/hosted_model.py": (FIXTURES / "shadow_hosted_model.py").read_bytes()}):
        shadow = run(_zip_of(tmp_path, "shadow", {"interpreter.py": good, **shipped}), model_dir, {})
        assert shadow.status == "ok" and not shadow.failures, (shadow.message, shadow.stderr[-500:])
        assert "SHADOWED" not in shadow.stderr + shadow.message
        assert_scored(shadow, "before", "after")
    assert_following_run_works(model_dir)


def test_timeouts_are_capped_like_crashes(model_dir):
    """Every sample timing out used to restart the child for each one and end "ok"."""
    limits = SandboxLimits(per_sample_seconds=2, total_seconds=300, max_consecutive_timeouts=2)
    batch = [attack(f"loop-{i}", "") for i in range(5)]
    result = run_interpreter(FIXTURES / "infinite_loop.py", model_dir, "classification", batch, limits=limits)
    assert_worker_survived(result)
    assert result.failure == "too_many_timeouts", result.message
    assert "on 2 samples in a row" in result.message and result.failures == {"loop-0": "timeout", "loop-1": "timeout"}
    limits = SandboxLimits(per_sample_seconds=2, total_seconds=300, max_timeouts=1)
    batch = [attack("loop-0", ""), normal("between"), attack("loop-1", ""), normal("after")]
    result = run_interpreter(FIXTURES / "infinite_loop.py", model_dir, "classification", batch, limits=limits)
    assert_worker_survived(result)
    assert result.failure == "too_many_timeouts" and "on 2 samples (the limit is 1)" in result.message
    assert_following_run_works(model_dir)


def test_a_run_in_which_every_sample_fails_fails(model_dir):
    batch = [attack("a", "1"), attack("b", "2")]
    result = run_interpreter(FIXTURES / "raises.py", model_dir, "classification", batch, limits=LIMITS)
    assert_worker_survived(result)
    assert result.status == "failed" and result.failure == "all_samples_failed"
    assert result.message == "every sample failed: 2 exception"
    assert_following_run_works(model_dir)
