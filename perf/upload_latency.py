"""Upload-to-scored latency on the embedded default (SQLite + filesystem broker, gunicorn, the
Celery workers of scripts/run.sh), over N sequential uploads of N different prediction files,
and what one upload at the size limit costs the web tier.

    .venv/bin/python perf/upload_latency.py [--uploads 20] [--seed 0]

Files: N new SQuAD submissions derived from the official sample submission as
perf/expmrc_scorer.py derives them (its docstring says how: every answer and evidence that is not
a gold string moves to another window of its passage), so no upload repeats another's prediction
strings and the scoring worker's token cache helps only with gold strings, as for real systems.
Each server score is checked against the in-process score of the same file.

Reference, measured in the same run: parsing and scoring the same N files in this process with
the pure scorer, its token cache first filled by scoring the sample submission once (untimed), as
a long-lived scoring worker's cache holds the gold strings after its first file: what the worker
itself has to do, without the platform. The last line, ``ratio: X``, is that reference's median
over the median upload-to-scored latency (1 would mean the platform adds nothing; higher is
better). The same scoring with a cold cache before every file is printed beside it.

Size limit: one upload of a file at ``SUBMISSION_MAX_BYTES`` holding a million keys. Its cost to
the web tier is the CPU time of the gunicorn workers (from /proc) while the upload request is
answered; beside it, validating those bytes in process with the task's parser, which is what
the web worker did before such files were left to the scoring worker. Goal: at most 1 CPU-s.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from expmrc_scorer import new_submissions  # noqa: E402  (perf/ is sys.path[0] when run as a script)

from scoring.metrics import expmrc  # noqa: E402
from tests.integration.stack import Stack  # noqa: E402

SHARED = REPO.parent / "shared" / "data" / "expmrc"
SIZE_LIMIT = 50 * 1024 * 1024  # SUBMISSION_MAX_BYTES's default
TICKS = os.sysconf("SC_CLK_TCK")


def million_keys_at_the_size_limit() -> bytes:
    """A prediction file of exactly SIZE_LIMIT bytes with a million entries (keys the test set
    does not have: the file is refused, by whichever process parses it)."""
    count = 1_000_000
    skeleton = len(b"{}") + count * len(b'"q0000000":{"answer":"","evidence":"e"}') + (count - 1)
    pad, extra = divmod(SIZE_LIMIT - skeleton, count)
    entries = [f'"q{i:07d}":{{"answer":"{"a" * (pad + (i < extra))}","evidence":"e"}}' for i in range(count)]
    raw = ("{" + ",".join(entries) + "}").encode()
    assert len(raw) == SIZE_LIMIT, len(raw)
    return raw


def web_cpu_seconds(stack: Stack) -> float:
    """User + system CPU time of gunicorn's worker processes so far."""
    master = stack.procs["web"].pid
    children = [pid for task in Path(f"/proc/{master}/task").iterdir()
                for pid in (task / "children").read_text().split()]
    total = 0
    for pid in children:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue  # a worker that was replaced meanwhile
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
    return total / TICKS


def in_process_seconds(gold: dict, spec, raw: bytes, *, cold: bool) -> tuple[float, dict]:
    if cold:
        expmrc.clear_token_cache()  # a fresh worker process has an empty cache
    start = time.perf_counter()
    score = expmrc.score_predictions(gold, expmrc.parse_predictions(raw, spec))
    return time.perf_counter() - start, score.official_dict("")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--uploads", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    gold_path, sample_path = SHARED / "expmrc-squad-dev.json", SHARED / "sample_submission" / "squad.json"
    if not sample_path.exists():
        print(f"skipped: {SHARED} not found (needs the ExpMRC dev set and sample submission)")
        print("ratio: n/a")
        return 0
    gold = json.loads(gold_path.read_text())
    spec = expmrc.key_spec(gold)
    files = [json.dumps(s).encode() for s in new_submissions(gold, json.loads(sample_path.read_text()),
                                                              args.uploads, args.seed)]
    assert len(set(files)) == len(files)
    cold = [in_process_seconds(gold, spec, raw, cold=True)[0] for raw in files]
    expmrc.clear_token_cache()
    in_process_seconds(gold, spec, sample_path.read_bytes(), cold=False)  # the worker's first file
    reference, expected = [], []
    for raw in files:
        seconds, official = in_process_seconds(gold, spec, raw, cold=False)
        reference.append(seconds)
        expected.append(official["ALL_F1"])
    huge = million_keys_at_the_size_limit()
    start = time.process_time()
    try:
        expmrc.parse_predictions(huge, spec, max_bytes=SIZE_LIMIT)
    except expmrc.InvalidPredictions:
        pass
    full_validation = time.process_time() - start

    with tempfile.TemporaryDirectory() as tmp:
        stack = Stack(tmp, env={"SUBMISSIONS_PER_DAY": "1000"}).setup()
        try:
            stack.start_web().start_workers().start_beat()
            token = stack.create_user("bench", "bench-password-1")
            latencies, web_cpu = [], []
            for i, raw in enumerate(files):
                start, cpu = time.perf_counter(), web_cpu_seconds(stack)
                status, body = stack.upload(token, "expmrc-squad", raw, method_name=f"bench {i}")
                web_cpu.append(web_cpu_seconds(stack) - cpu)
                assert status == 201, body
                scored = stack.wait_for(body["id"], token)
                latencies.append(time.perf_counter() - start)
                assert scored["status"] == "scored" and f"{scored['scores']['overall_f1']:.3f}" == expected[i], scored

            start, cpu = time.perf_counter(), web_cpu_seconds(stack)
            status, body = stack.upload(token, "expmrc-squad", huge, method_name="a million keys")
            huge_web_cpu, huge_answer = web_cpu_seconds(stack) - cpu, time.perf_counter() - start
            assert status in (201, 400), body
            refused = body if status == 400 else stack.wait_for(body["id"], token, timeout=300)
            huge_refused = time.perf_counter() - start
            message = (refused.get("error") or {}).get("message") or refused.get("detail", "")
            assert "keys not in the test set" in message, refused
        finally:
            stack.stop()

    p50 = statistics.median(latencies)
    median_reference = statistics.median(reference)
    print(f"uploads: {len(files)} sequential, each a different file derived from the SQuAD sample submission "
          "(501 questions), embedded default")
    print(f"upload-to-scored latency: p50 {p50 * 1000:.0f} ms, max {max(latencies) * 1000:.0f} ms, "
          f"min {min(latencies) * 1000:.0f} ms; web-tier CPU per upload: median "
          f"{statistics.median(web_cpu) * 1000:.0f} ms")
    print(f"reference (in-process parse + score of the same files, gold strings cached): median "
          f"{median_reference * 1000:.0f} ms; with a cold cache before each file: median "
          f"{statistics.median(cold) * 1000:.0f} ms")
    print(f"size limit ({SIZE_LIMIT:,} bytes, 1,000,000 keys): web-tier CPU {huge_web_cpu:.2f} s "
          f"(goal <= 1), answered in {huge_answer:.1f} s ({status}), refused after {huge_refused:.1f} s; "
          f"validating it in process (the web worker's work before): {full_validation:.2f} CPU-s")
    print(f"ratio: {median_reference / p50:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
