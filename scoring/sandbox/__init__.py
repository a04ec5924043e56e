"""Running submitted QUACKIE interpreter code in a bubblewrap sandbox (docs/sandbox.md).

A code submission runs in a jail: its own pid, net, ipc, uts and cgroup namespaces, the
unprivileged uid of its own (when the worker is root), a read-only minimal filesystem, rlimits,
cgroups and a seccomp filter. The worker keeps the gold; only the public fields of each sample
cross into the jail. No Django here. The modules, each importing only those listed before it:

* ``errors``: ``SandboxUnavailable``, ``UnsafeModelDir`` and ``InvalidCode``;
* ``layout``: what the jail holds and where, and the module names that reserves;
* ``limits``: ``SandboxLimits``, ``RunResult``, the failure categories, reply validation;
* ``upload_check``: ``check_submission_code``, upload-time validation of a ``.py`` or ``.zip``;
* ``job_dir``: the private job directory, the code and runtime copied into it, and
  ``check_model_dir``;
* ``cgroups``: cgroup v1 ``pids`` and ``memory`` groups (root only);
* ``uids``: the pool of uids, one per sandboxed child (root only);
* ``command``: the bwrap / setpriv / prlimit command line and the child's environment;
* ``availability``: ``sandbox_available``, the cached probe;
* ``protocol``: the parent's bounded reading and checking of every line the child writes;
* ``child_process``: the parent's side of one child process (pipes, deadlines, killing it);
* ``runner``: ``run_interpreter``;
* ``baselines``: the built-in baselines as interpreter code;
* ``child``: the program that runs inside the jail (stdlib only; copied there, never imported
  by the modules above).

Callers use the names below (``from scoring import sandbox; sandbox.run_interpreter(...)``).
"""
from .availability import MODES, sandbox_available
from .baselines import baseline_code, write_baseline_code
from .errors import InvalidCode, SandboxUnavailable, UnsafeModelDir
from .job_dir import check_model_dir
from .limits import SAMPLE_FAILURES, SUBMISSION_FAILURES, RunResult, SandboxLimits, validate_scores
from .protocol import storable
from .runner import run_interpreter
from .upload_check import check_submission_code

__all__ = [
    "MODES", "SAMPLE_FAILURES", "SUBMISSION_FAILURES", "InvalidCode", "RunResult",
    "SandboxLimits", "SandboxUnavailable", "UnsafeModelDir", "baseline_code", "check_model_dir",
    "check_submission_code", "run_interpreter", "sandbox_available", "storable", "validate_scores",
    "write_baseline_code",
]
