"""More attacks on the code-submission sandbox (docs/sandbox.md, "Attack tests and outcomes";
docs/threat_model.md): kernel interfaces the seccomp filter must close (netlink, vsock and other
socket families, modify_ldt, mount_setattr), system calls through a foreign ABI (i386, x32),
what /proc shows of the host, and CPU: the nice level, the cgroup's CPU quota, and a budget on
the CPU time of all the sandbox's processes together.

Everything goes through the real path: real bwrap, real child, real cgroups where the host has
them (this project's machines: root, cgroup v1), the fixtures in tests/fixtures/sandbox/. Each
test checks that the worker is alive and that no job directory, cgroup or process is left.
Runs are few and each packs several attacks, because every sandbox start loads torch.
"""
import os
import re
import time
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from scoring import sandbox
from scoring.sandbox import SandboxLimits, cgroups, run_interpreter, runner
from scoring.sandbox.cgroups import leftover_groups
from tests.scoring.test_sandbox_attacks import (
    FIXTURES,
    LIMITS,
    assert_scored,
    assert_worker_survived,
    attack,
    canary_in_the_worker_environment,  # noqa: F401  (autouse: a secret the sandbox must not see)
    detail,
    model_dir,  # noqa: F401  (the module's tiny hosted model)
    normal,
)

pytestmark = pytest.mark.needs_bwrap


@pytest.fixture(scope="module", autouse=True)
def sandbox_is_usable():
    available, reason = sandbox.sandbox_available("bwrap")
    assert available, f"bwrap is installed but the sandbox is unusable: {reason}"


@pytest.fixture
def made_cgroups(monkeypatch):
    """The runner's real ``Cgroups`` objects, recorded so a test can look at the live groups."""
    made: list[cgroups.Cgroups] = []

    class Recorded(cgroups.Cgroups):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(runner, "Cgroups", Recorded)
    return made


def assert_nothing_left(result) -> None:
    assert_worker_survived(result)  # alive, job directory gone, no canary
    assert not leftover_groups(result.job), "a cgroup outlived the run (a process survived)"


def shown(result, path: str) -> str:
    match = re.search(rf"BEGIN {re.escape(path)}\n(.*?)\nEND {re.escape(path)}\n", result.stderr, re.S)
    assert match, f"{path} was not shown: {result.stderr[-800:]}"
    return match.group(1)


# --------------------------------------------------------------------------- kernel surface, /proc, nice

def test_sockets_syscalls_and_host_paths_are_closed(model_dir, made_cgroups):  # noqa: F811
    """Before: netlink and vsock sockets were created, modify_ldt returned 0 and mount_setattr
    reached the kernel; /proc/1/cmdline (the jail's init, a fork of bwrap) listed every bind with
    its host path, and mountinfo named the job directory. Also checks the CPU share while the
    child runs: nice 10 inside, and the live cgroup's CPU quota."""
    live_quota: list[str] = []

    def look_at_the_live_group(done, total):
        group = made_cgroups[-1] if made_cgroups else None
        if group is not None and "cpu" in group.directories:
            directory = group.directories["cpu"]
            name = "cpu.max" if group.version == "v2" else "cpu.cfs_quota_us"
            live_quota.append((directory / name).read_text().split()[0])

    attacks = {"netlink": "socket 16", "vsock": "socket 40", "alg": "socket 38", "packet": "socket 17",
               "netlink-high": "socket-high 16", "modify_ldt": "syscall modify_ldt",
               "mount_setattr": "syscall mount_setattr", "cmdline": "show /proc/1/cmdline",
               "mountinfo": "show /proc/self/mountinfo", "nice": "nice"}
    batch = [normal("before")] + [attack(k, v) for k, v in attacks.items()] + [normal("after")]
    result = run_interpreter(FIXTURES / "kernel_surface.py", model_dir, "classification", batch,
                             limits=LIMITS, progress=look_at_the_live_group)
    assert_nothing_left(result)
    assert result.status == "ok", result.message
    for sample_id in ("netlink", "vsock", "alg", "packet", "netlink-high"):
        assert detail(result, sample_id).startswith("OSError: [Errno 97] Address family not supported"), \
            (sample_id, detail(result, sample_id))
    for sample_id in ("modify_ldt", "mount_setattr"):
        assert detail(result, sample_id).startswith("PermissionError: [Errno 1] Operation not permitted"), \
            (sample_id, detail(result, sample_id))
    assert "seccomp" in result.isolation

    job_path = f"/{result.job}"  # the private job directory, e.g. /tmp/expbench-sandbox-abc123
    cmdline = shown(result, "/proc/1/cmdline")
    assert cmdline.split()[:3] == ["/usr/bin/bwrap", "--args", cmdline.split()[2]], cmdline
    assert job_path not in cmdline and "--ro-bind" not in cmdline and str(model_dir) not in cmdline
    mountinfo = shown(result, "/proc/self/mountinfo")
    assert job_path not in mountinfo.replace(f"{job_path}/model ", ""), mountinfo  # see threat model
    mounts = {line.split()[4]: line.split() for line in mountinfo.splitlines()}
    for inside in ("/sandbox/code", "/sandbox/runtime"):  # fresh read-only tmpfs, no host root
        fields = mounts[inside]
        assert fields[3] == "/" and fields[5].startswith("ro,") and "tmpfs" in fields, fields
    # /proc is the sandbox's own: its pid 1 is the jail's init, and only the jail's pids exist
    assert mounts["/proc"][3] == "/"

    assert detail(result, "nice").startswith(f"RuntimeError: nice level {min(19, os.nice(0) + 10)}")
    assert "nice 10" in result.isolation
    if os.geteuid() == 0 and any("cpu" in group.directories for group in made_cgroups):
        assert live_quota and set(live_quota) == {"100000"}, live_quota  # one core per period
        assert any(layer.endswith(" cpu") for layer in result.isolation), result.isolation
    assert result.cpu_seconds > 0
    assert_scored(result, "before", "cmdline", "mountinfo", "after")


# --------------------------------------------------------------------------- foreign ABIs

def test_foreign_abi_system_calls_kill_the_whole_process_at_once(model_dir):  # noqa: F811
    """Before: libseccomp's default for a system call of another ABI killed only the calling
    thread; the interpreter (or the thread it joined) never returned and the sample hung to its
    timeout. After: SIGSYS for the whole process, that sample is a counted ``crashed`` fail,
    and a fresh child scores the next."""
    limits = SandboxLimits(per_sample_seconds=60, total_seconds=600)
    # The last sample's crash needs no restart: two starts cover both ABIs and both threads.
    batch = [normal("before"), attack("i386", "i386"), attack("x32-thread", "x32-thread")]
    started = time.monotonic()
    result = run_interpreter(FIXTURES / "foreign_abi.py", model_dir, "classification", batch,
                             limits=limits)
    assert_nothing_left(result)
    assert result.status == "ok", result.message
    assert result.failures == {"i386": "crashed", "x32-thread": "crashed"}, result.failure_details
    for sample_id in ("i386", "x32-thread"):
        assert "killed by SIGSYS (a forbidden system call" in detail(result, sample_id)
        assert result.sample_seconds[sample_id] < 15, result.sample_seconds  # not the 60 s limit
    assert result.restarts == 1 and len(result.startups) == 2
    assert_scored(result, "before")
    assert time.monotonic() - started < sum(result.startups) + 60


# --------------------------------------------------------------------------- CPU, through the worker

SPINNERS = b"""import os, time
def interpret(model, question, context, sentences):
    for _ in range(4):
        if os.fork() == 0:
            while True:
                pass
    time.sleep(3600)
"""
HARMLESS = b"def interpret(model, question, context, sentences):\n    return [float(len(s)) for s in sentences]\n"


@pytest.mark.django_db
def test_background_spinners_exhaust_the_cpu_budget_as_code_failed(tmp_path, settings, monkeypatch):
    """Before: four processes spinning in the background of a sleeping interpreter took a whole
    core for the run (each forked process had its own hour of RLIMIT_CPU). After: the CPU time of
    all the sandbox's processes together is counted (the cgroup's counter, else the process
    tree), and past the budget the run stops at once as the submission's own ``cpu_limit``:
    ``code_failed``, charged to the sender's quota; no process or cgroup is left."""
    from submissions import intake
    from submissions.models import ErrorCategory, Status, Submission
    from submissions.tasks import run_code_submission
    from tests.factories import make_tiny_track, make_user, token_for, upload_file

    track = make_tiny_track(tmp_path)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token_for(make_user())}")
    results: list = []
    real = sandbox.run_interpreter

    def observed(*args, **kwargs):
        results.append(real(*args, **kwargs))
        return results[-1]

    monkeypatch.setattr(sandbox, "run_interpreter", observed)

    def submit(code: bytes) -> Submission:
        response = api.post(f"/api/tasks/{track.task.slug}/submissions/",
                            {"file": upload_file(code, name="interpreter.py"), "method_name": "Mine",
                             "kind": "code"}, format="multipart")
        assert response.status_code == 201, response.content
        run_code_submission(response.json()["id"])
        return Submission.objects.get(pk=response.json()["id"])

    honest = submit(HARMLESS)  # also measures what start-up costs in CPU time here
    assert honest.status == Status.SCORED, honest.error_message
    startup_cpu = honest.details["sandbox"]["cpu_seconds"]
    assert startup_cpu > 0
    settings.SANDBOX_CPU_BUDGET_SECONDS = round(1.1 * startup_cpu + 2.5, 1)
    settings.SANDBOX_SAMPLE_SECONDS = 600  # without the budget, the first sample alone takes this
    counted = intake.submissions_counted_today(honest.user, honest.task)
    children = _children_of_this_process()
    started = time.monotonic()
    spun = submit(SPINNERS)
    elapsed = time.monotonic() - started
    assert spun.status == Status.FAILED and spun.error_category == ErrorCategory.CODE_FAILED, spun.error_message
    assert spun.error_message.startswith("cpu_limit: the sandbox's processes used "), spun.error_message
    assert f"over the run's budget of {settings.SANDBOX_CPU_BUDGET_SECONDS:g} s" in spun.error_message
    assert intake.submissions_counted_today(spun.user, spun.task) == counted + 1  # the sender's own
    assert elapsed < settings.SANDBOX_SAMPLE_SECONDS, elapsed  # the budget, not the sample's limit
    result = results[-1]
    assert result.cpu_seconds > settings.SANDBOX_CPU_BUDGET_SECONDS
    assert_nothing_left(result)
    assert not _children_of_this_process() - children, "a sandbox process outlived the run"


def _children_of_this_process() -> set[int]:
    children: set[int] = set()
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        children |= {int(pid) for pid in (task / "children").read_text().split()}
    return children

