"""The sandbox's cgroups (scoring/sandbox/cgroups.py, docs/sandbox.md "cgroups") on a stand-in
cgroup root: which files a v2 or v1 hierarchy gets written, the CPU counter read back, the
groups removed, and the fail-closed rule (``require_cgroups`` / SANDBOX_REQUIRE_CGROUPS) in both
directions. A stand-in directory cannot run processes, so nothing here starts a sandbox; the
real hierarchy is exercised by tests/scoring/test_sandbox_attacks_more.py."""
import os
import tempfile
from pathlib import Path

import pytest

from scoring import sandbox
from scoring.sandbox import SandboxLimits, SandboxUnavailable, availability, cgroups
from scoring.sandbox.cgroups import CGROUP_PARENT, Cgroups, cgroup_version, leftover_groups

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="cgroups are made only by a root worker")

LIMITS = SandboxLimits(processes=48, memory_bytes=3 * 2**30, cpu_cores=1.5, cpu_weight=40)


def v2_root(tmp_path: Path, controllers=("cpuset", "cpu", "io", "memory", "pids")) -> Path:
    root = tmp_path / "cgroup2"
    root.mkdir()
    (root / "cgroup.controllers").write_text(" ".join(controllers) + "\n")
    (root / "cgroup.subtree_control").write_text("")
    return root


def v1_root(tmp_path: Path, controllers=("pids", "memory", "cpu", "cpuacct")) -> Path:
    root = tmp_path / "cgroup1"
    for controller in controllers:
        (root / controller).mkdir(parents=True)
        (root / controller / "cgroup.procs").write_text("")
    return root


def read(path: Path) -> str:
    return path.read_text().strip()


def test_the_hierarchy_is_recognised(tmp_path):
    assert cgroup_version(v2_root(tmp_path)) == "v2"
    assert cgroup_version(v1_root(tmp_path)) == "v1"
    assert cgroup_version(tmp_path / "nothing") is None


def test_v2_limits_are_written_and_the_group_removed(tmp_path):
    root = v2_root(tmp_path)
    groups = Cgroups("job-1", LIMITS, root=root)
    group = root / CGROUP_PARENT / "job-1"
    assert groups.version == "v2" and not groups.missing(), groups.problems
    assert set(groups.directories) == {"pids", "memory", "cpu"}
    # the controllers are delegated down to the sandbox's parent group
    assert read(root / CGROUP_PARENT / "cgroup.subtree_control") == "+cpu"  # the last one written
    assert read(group / "pids.max") == "48"
    assert read(group / "memory.max") == str(3 * 2**30)
    assert read(group / "memory.swap.max") == "0"
    assert read(group / "memory.oom.group") == "1"
    assert read(group / "cpu.max") == "150000 100000"   # 1.5 cores
    assert read(group / "cpu.weight") == "40"
    assert groups.procs_files() == [str(group / "cgroup.procs")]
    assert groups.isolation() == ["cgroup v2 pids", "cgroup v2 memory", "cgroup v2 cpu"]
    # the counter that covers every process of the sandbox, and the OOM report
    (group / "cpu.stat").write_text("usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\n")
    assert groups.cpu_seconds() == 2.5
    (group / "memory.events").write_text("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n")
    assert groups.oom_killed()
    assert leftover_groups("job-1", root=root)
    groups.remove()
    assert not group.exists() and not leftover_groups("job-1", root=root)


def test_v2_without_a_controller_is_missing_it(tmp_path):
    groups = Cgroups("job-2", LIMITS, root=v2_root(tmp_path, controllers=("cpu", "pids")))
    assert groups.missing() == ["memory"]
    assert "cgroup v2 controller memory is not available" in groups.refusal()
    assert "SANDBOX_REQUIRE_CGROUPS" in groups.refusal()
    groups.remove()


def test_v1_limits_are_written_to_each_controller(tmp_path):
    root = v1_root(tmp_path)
    groups = Cgroups("job-3", LIMITS, root=root)
    assert groups.version == "v1" and not groups.missing(), groups.problems
    assert read(root / "pids" / CGROUP_PARENT / "job-3" / "pids.max") == "48"
    assert read(root / "memory" / CGROUP_PARENT / "job-3" / "memory.limit_in_bytes") == str(3 * 2**30)
    cpu = root / "cpu" / CGROUP_PARENT / "job-3"
    assert (read(cpu / "cpu.cfs_quota_us"), read(cpu / "cpu.cfs_period_us")) == ("150000", "100000")
    assert read(cpu / "cpu.shares") == str(1024 * 40 // 100)
    (root / "cpuacct" / CGROUP_PARENT / "job-3" / "cpuacct.usage").write_text("4000000000\n")
    assert groups.cpu_seconds() == 4.0
    assert len(groups.procs_files()) == 4
    groups.remove()
    assert not leftover_groups("job-3", root=root)


def test_no_hierarchy_means_no_limits_and_a_reason(tmp_path):
    groups = Cgroups("job-4", LIMITS, root=tmp_path / "empty")
    assert groups.directories == {} and groups.procs_files() == [] and groups.cpu_seconds() is None
    assert groups.missing() == ["pids", "memory", "cpu"]
    assert "no cgroup v1 or v2 hierarchy" in groups.refusal()


@pytest.fixture
def fake_hierarchy(tmp_path, monkeypatch):
    """The module-wide cgroup root pointed at a stand-in, and the availability cache cleared."""
    def use(root: Path) -> Path:
        monkeypatch.setattr(cgroups, "CGROUP_ROOT", root)
        sandbox.sandbox_available.cache_clear()
        return root

    yield use
    sandbox.sandbox_available.cache_clear()


@pytest.mark.needs_bwrap
def test_required_cgroups_that_cannot_be_applied_refuse_the_run(tmp_path, fake_hierarchy):
    """Fail closed: with cgroups required and none to be had, no code runs (a platform-side
    SandboxUnavailable, before any job directory or child exists); not required, the same host
    is usable with rlimits only, as on a machine without cgroups."""
    fake_hierarchy(tmp_path / "no-cgroups")
    usable, reason = availability.sandbox_available("bwrap", require_cgroups=True)
    assert not usable and "requires cgroup limits (pids, memory, cpu)" in reason, reason
    code = tmp_path / "interpreter.py"
    code.write_text("def interpret(model, question, context):\n    return [1.0]\n")
    before = set(Path(tempfile.gettempdir()).glob("expbench-sandbox-*"))
    with pytest.raises(SandboxUnavailable, match="SANDBOX_REQUIRE_CGROUPS"):
        sandbox.run_interpreter(code, tmp_path, "classification", [], require_cgroups=True)
    after = set(Path(tempfile.gettempdir()).glob("expbench-sandbox-*"))
    assert after <= before  # no job directory was made
    usable, reason = availability.sandbox_available("bwrap")
    assert usable, reason


@pytest.mark.needs_bwrap
def test_required_cgroups_that_can_be_applied_let_the_probe_pass(tmp_path, fake_hierarchy):
    root = fake_hierarchy(v2_root(tmp_path))
    usable, reason = availability.sandbox_available("bwrap", require_cgroups=True)
    assert usable and "cgroup v2 limits: pids, memory, cpu" in reason, reason
    assert not leftover_groups("probe-", root=root)  # the probe group is removed at once
