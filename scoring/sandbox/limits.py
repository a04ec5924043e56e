"""What a run may use and what it gives back: ``SandboxLimits``, ``RunResult``, the failure
categories (docs/sandbox.md, "Failure categories"), the validation of every reply
(``validate_scores``) and the only fields of a sample that cross into the sandbox
(``public_sample``)."""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

SUBMISSION_FAILURES = {
    "import_error": "the code could not be imported (or defines no callable interpret)",
    "load_error": "the hosted model could not be loaded in the sandbox",
    "crashed": "the sandboxed process died while importing the code (a signal or a limit "
               "killed it, or it exited)",
    "memory": "memory limit exceeded while importing the code (the memory cgroup killed the sandbox, or "
              "the import raised MemoryError)",
    "too_many_crashes": "the sandboxed process died on too many samples (in a row, or in total)",
    "too_many_timeouts": "interpret ran past the per-sample limit on too many samples (in a row, or in total)",
    "all_samples_failed": "every sample failed (the run produced no valid scores)",
    "invalid_code": "the stored code does not pass the upload check (stored before a check was added)",
    "total_timeout": "the whole submission ran longer than its wall-clock limit",
    "cpu_limit": "the sandbox's processes together used more CPU time than the run's budget",
    "output_flood": "a reply was larger than the output limit",
    "protocol_error": "the sandboxed process wrote something that is not a valid reply",
}
SAMPLE_FAILURES = {
    "not_a_list": "interpret did not return a sequence of numbers",
    "wrong_length": "interpret returned a number of scores different from the sentence count",
    "not_finite": "a score is NaN or infinite",
    "exception": "interpret raised an exception",
    "timeout": "interpret ran longer than the per-sample limit",
    "crashed": "the sandboxed process died on this sample (a signal, a limit or an exit)",
    "memory": "memory limit exceeded on this sample (the memory cgroup killed a process of the "
              "sandbox, or interpret raised MemoryError)",
}


@dataclass
class SandboxLimits:
    """Resource limits of one submission run (bytes, seconds, counts)."""

    address_space: int = 3 * 2**30      # RLIMIT_AS per process (torch needs >= 2 GB)
    cpu_seconds: int = 3600             # RLIMIT_CPU soft limit per process (SIGXCPU); hard = soft + 5
    # CPU time of every process of the sandbox together (children, threads and restarts
    # included), measured by the cgroup's counter (or the process tree where there is none);
    # over it the submission fails with ``cpu_limit``. RLIMIT_CPU alone is per process: 63 forked
    # spinners would each get its full hour.
    cpu_budget_seconds: float = 3600
    cpu_cores: float = 1.0              # cgroup cpu.max / cfs quota: at most this many cores at once
    cpu_weight: int = 50                # cgroup cpu.weight (ordinary processes: 100; v1 shares 512)
    nice: int = 10                      # nice level of every sandbox process (works without cgroups)
    open_files: int = 64                # RLIMIT_NOFILE
    file_size: int = 16 * 2**20         # RLIMIT_FSIZE (EFBIG beyond it)
    processes: int = 64                 # RLIMIT_NPROC (of the run's own uid) and cgroup pids.max
    per_sample_seconds: float = 30      # wall clock per sample (parent-enforced)
    total_seconds: float = 1800         # wall clock per submission, start-up included
    output_bytes: int = 1_000_000       # the longest reply line accepted
    startup_seconds: float = 300        # wall clock to load the model and import the code
    memory_bytes: int = 4 * 2**30       # cgroup memory limit of the whole sandbox (v1 limit_in_bytes, v2 memory.max)
    tmp_bytes: int = 64 * 2**20         # size of the private tmpfs /tmp
    stderr_bytes: int = 64 * 1024       # stderr kept (head and tail), the rest is dropped
    # A death on one sample is that sample's fail and the child is restarted; a submission
    # whose child keeps dying fails instead of restarting (each restart reloads the model).
    max_consecutive_crashes: int = 3    # deaths on this many samples in a row
    max_crashes: int = 20               # more deaths than this in one run
    # The same for per-sample timeouts: each one costs per_sample_seconds plus a restart, so a
    # method that hangs stops early instead of taking minutes per sample to produce nothing.
    max_consecutive_timeouts: int = 3   # timeouts on this many samples in a row
    max_timeouts: int = 10              # more timeouts than this in one run


@dataclass
class RunResult:
    """What a submission run produced. ``scores`` holds the valid samples only."""

    status: str = "ok"                                   # "ok" | "failed"
    failure: str | None = None                           # SUBMISSION_FAILURES key
    message: str = ""                                    # readable, for the researcher
    scores: dict[str, list[float]] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)          # id -> SAMPLE_FAILURES key
    failure_details: dict[str, str] = field(default_factory=dict)   # id -> readable detail
    total: int = 0
    startup_seconds: float | None = None      # first start: launch -> ready
    startups: list[float] = field(default_factory=list)             # every (re)start
    model_load_seconds: float | None = None   # reported by the child (first start)
    import_seconds: float | None = None
    sample_seconds: dict[str, float] = field(default_factory=dict)  # parent wall clock
    compute_seconds: dict[str, float] = field(default_factory=dict)  # inside interpret()
    total_seconds: float = 0.0
    cpu_seconds: float = 0.0                  # CPU time of all the sandbox's processes, restarts included
    restarts: int = 0
    signal: str | None = None
    exit_code: int | None = None
    stderr: str = ""
    mode: str = "bwrap"
    isolation: list[str] = field(default_factory=list)
    job: str = ""                             # private job directory / cgroup name prefix

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def done(self) -> int:
        return len(self.scores) + len(self.failures)

    def to_dict(self) -> dict:
        return asdict(self)


def validate_scores(value, n_sentences: int) -> tuple[list[float] | None, str | None, str]:
    """(scores, None, "") for a list of ``n_sentences`` finite numbers, else (None, category,
    detail) with category ``not_a_list``, ``wrong_length`` or ``not_finite``."""
    if not isinstance(value, list):
        return None, "not_a_list", f"expected a list of numbers, got {type(value).__name__}"
    for position, item in enumerate(value):
        if isinstance(item, bool) or not isinstance(item, (int, float)):
            shown = item if isinstance(item, str) else type(item).__name__
            return None, "not_a_list", (f"expected a list of numbers; item {position} is "
                                        f"{str(shown)[:60]}")
    if len(value) != n_sentences:
        return None, "wrong_length", f"{len(value)} scores for {n_sentences} sentences"
    scores = []
    for position, item in enumerate(value):
        try:
            number = float(item)
        except OverflowError:  # an integer beyond the float range (a forged reply)
            return None, "not_finite", f"score {position} is too large to be a float"
        if not math.isfinite(number):
            return None, "not_finite", f"score {position} is {number}"
        scores.append(number)
    return scores, None, ""


def public_sample(sample: dict) -> dict:
    """Only the public fields of a sample ever reach the sandbox (never gold)."""
    sample_id = str(sample["id"])
    question, context = sample["question"], sample["context"]
    if not isinstance(question, str) or not isinstance(context, str):
        raise ValueError(f"sample {sample_id}: question and context must be strings")
    message: dict[str, Any] = {"id": sample_id, "question": question, "context": context}
    sentences = sample.get("sentences")
    if sentences is not None:
        sentences = [str(sentence) for sentence in sentences]
        message["sentences"] = sentences
    n_sentences = sample.get("n_sentences", len(sentences) if sentences is not None else None)
    if n_sentences is None:
        raise ValueError(f"sample {sample_id}: n_sentences is missing")
    if sentences is not None and len(sentences) != int(n_sentences):
        raise ValueError(f"sample {sample_id}: {len(sentences)} sentences but n_sentences "
                         f"= {n_sentences}")
    message["n_sentences"] = int(n_sentences)
    return message
