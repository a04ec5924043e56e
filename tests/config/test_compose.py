"""docker-compose.yml and the Dockerfile, read as Docker would read them (no Docker daemon runs
here): the web front, optional demo, pinned images, health checks, and a sandbox service that
holds no SECRET_KEY and runs under a system-call filter of its own, under which bwrap itself is
started for real."""
import json
import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml
from django.conf import settings

REPO = settings.BASE_DIR
COMPOSE = yaml.safe_load((REPO / "docker-compose.yml").read_text())
SERVICES = COMPOSE["services"]
APP_SERVICES = [name for name, service in SERVICES.items() if "build" in service]
DOCKERFILE = (REPO / "Dockerfile").read_text()
PROFILE_PATH = REPO / "docker" / "sandbox-seccomp.json"
PROFILE = json.loads(PROFILE_PATH.read_text())


def test_web_serves_through_the_buffering_front_as_run_sh_does():
    run_sh = (REPO / "scripts" / "run.sh").read_text()
    for command in (SERVICES["web"]["command"], run_sh, DOCKERFILE):
        assert "config.asgi:application" in command and "asgi" in command.split("config.asgi:application")[1]
        assert "config.wsgi:application" not in command


def test_the_demo_loads_only_when_asked():
    web = SERVICES["web"]
    assert web["environment"]["LOAD_DEMO"] == "${LOAD_DEMO:-0}"
    # Compose turns $$ into $: the shell in the container reads the switch.
    assert re.search(r'if \[ \\?"\$\$LOAD_DEMO\\?" = 1 \]; then python manage.py load_demo; fi', web["command"])


@pytest.mark.parametrize("name", [name for name, service in SERVICES.items() if "image" in service])
def test_pulled_images_are_pinned_to_an_exact_release(name):
    image = SERVICES[name]["image"]
    assert "@sha256:" in image or re.fullmatch(r"[\w./-]+:\d+\.\d+(\.\d+)?(-[\w.]+)?", image), image


def test_the_base_image_is_pinned_and_the_image_has_a_health_check():
    assert re.search(r"^FROM python:\d+\.\d+\.\d+-slim-\w+$", DOCKERFILE, re.M)
    assert re.search(r"^HEALTHCHECK .*\n?.*CMD .*/healthz", DOCKERFILE, re.M)


@pytest.mark.parametrize("name", list(SERVICES))
def test_every_service_has_a_health_check(name):
    assert SERVICES[name]["healthcheck"]["test"]


def test_only_the_sandbox_goes_without_the_secret_key():
    holders = {name for name in APP_SERVICES if "SECRET_KEY" in SERVICES[name]["environment"]}
    assert holders == set(APP_SERVICES) - {"sandbox"}
    # Without the key, production mode would refuse to start; the worker serves no HTTP.
    assert SERVICES["sandbox"]["environment"]["EXPBENCH_ENV"] == ""
    # It still reaches what it records runs in.
    assert {"DATABASE_URL", "CELERY_BROKER_URL", "MEDIA_ROOT"} <= set(SERVICES["sandbox"]["environment"])


def test_the_sandbox_is_confined_as_far_as_bwrap_allows():
    sandbox = SERVICES["sandbox"]
    options = sandbox["security_opt"]
    assert "seccomp=unconfined" not in options
    assert f"seccomp=./{PROFILE_PATH.relative_to(REPO)}" in options
    assert "no-new-privileges:true" in options
    assert sandbox["cap_drop"] == ["ALL"]
    assert "privileged" not in sandbox and "cap_add" not in sandbox
    # The other services keep Docker's defaults.
    for name in set(APP_SERVICES) - {"sandbox"}:
        assert "security_opt" not in SERVICES[name], name


def test_the_filter_refuses_the_kernels_riskiest_calls_and_not_what_bwrap_needs():
    assert PROFILE["defaultAction"] == "SCMP_ACT_ALLOW"
    refused = {name for rule in PROFILE["syscalls"] if rule["action"] == "SCMP_ACT_ERRNO" for name in rule["names"]}
    assert {"bpf", "io_uring_setup", "userfaultfd", "keyctl", "perf_event_open", "kexec_load", "init_module",
            "ptrace", "open_by_handle_at"} <= refused
    assert not refused & {"clone", "clone3", "unshare", "mount", "umount2", "pivot_root", "chroot", "seccomp", "prctl"}


# Loads the profile with libseccomp, then becomes the command given: what Docker does for the
# container's first process, so bwrap and everything it starts run under the same filter.
UNDER_PROFILE = """
import ctypes, json, os, sys
lib = ctypes.CDLL("libseccomp.so.2", use_errno=True)
lib.seccomp_init.restype = ctypes.c_void_p
lib.seccomp_init.argtypes = [ctypes.c_uint32]
lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
lib.seccomp_rule_add.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint]
lib.seccomp_load.argtypes = [ctypes.c_void_p]
profile = json.load(open(sys.argv[1]))
assert profile["defaultAction"] == "SCMP_ACT_ALLOW"
ctx = lib.seccomp_init(0x7FFF0000)
for rule in profile["syscalls"]:
    for name in rule["names"]:
        number = lib.seccomp_syscall_resolve_name(name.encode())
        if number >= 0:
            assert lib.seccomp_rule_add(ctx, 0x00050000 | rule["errnoRet"], number, 0) == 0, name
assert lib.seccomp_load(ctx) == 0
os.execvp(sys.argv[2], sys.argv[2:])
"""

# Under the filter: a refused call answers EPERM.
KEYCTL_REFUSED = """
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
number = {"x86_64": 250, "aarch64": 219}[os.uname().machine]
assert libc.syscall(number, 0, 0, 0, 0, 0) == -1 and ctypes.get_errno() == errno.EPERM
print("keyctl refused")
"""


def under_profile(*argv):
    return subprocess.run([sys.executable, "-c", UNDER_PROFILE, str(PROFILE_PATH), *argv],
                          capture_output=True, text=True, timeout=60)


# The interpreter itself, not the virtual environment's link to it: a checkout under /tmp (the
# tmpfs the jail mounts there) would hide the link. The probe needs the standard library only.
STDLIB_PYTHON = os.path.realpath(sys.executable)


def test_bwrap_builds_a_sandbox_under_the_filter_and_refused_calls_fail():
    bwrap = shutil.which("bwrap")
    assert bwrap, "bubblewrap is part of the server's set-up (README.md, Dockerfile)"
    jail = under_profile(bwrap, "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "--proc", "/proc",
                         "--dev", "/dev", "--tmpfs", "/tmp", "--", STDLIB_PYTHON, "-c", KEYCTL_REFUSED)
    assert jail.returncode == 0, jail.stderr
    assert jail.stdout.strip() == "keyctl refused"
