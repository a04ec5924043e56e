"""Upload-to-scored latency on the embedded default (SQLite + filesystem broker, gunicorn,
one Celery worker), over N sequential uploads of the official SQuAD sample submission.

Reference measured in the same run: scoring the same file in-process with the pure scorer
(what the worker itself has to do), so the ratio is the platform's overhead factor.

    .venv/bin/python perf/upload_latency.py [N]
"""
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

from scoring.metrics import expmrc  # noqa: E402
from tests.integration.stack import Stack  # noqa: E402

SHARED = REPO.parent / "shared" / "data" / "expmrc"


def main(n=20):
    gold_path, sample_path = SHARED / "expmrc-squad-dev.json", SHARED / "sample_submission" / "squad.json"
    if not sample_path.exists():
        print(f"skipped: {SHARED} not found (needs the ExpMRC dev set and sample submission)")
        return
    content = sample_path.read_bytes()
    gold = json.loads(gold_path.read_text())
    spec = expmrc.key_spec(gold)
    in_process = []
    for _ in range(5):
        expmrc.clear_token_cache()  # a fresh worker process has an empty cache: worst case
        start = time.perf_counter()
        expmrc.score_predictions(gold, expmrc.parse_predictions(content, spec))
        in_process.append(time.perf_counter() - start)

    with tempfile.TemporaryDirectory() as tmp:
        stack = Stack(tmp, env={"SUBMISSIONS_PER_DAY": "1000"}).setup()
        try:
            stack.start_web().start_workers().start_beat()
            token = stack.create_user("bench", "bench-password-1")
            latencies = []
            for i in range(n):
                start = time.perf_counter()
                status, body = stack.upload(token, "expmrc-squad", content, method_name=f"bench {i}")
                assert status == 201, body
                scored = stack.wait_for(body["id"], token)
                latencies.append(time.perf_counter() - start)
                assert scored["status"] == "scored" and f"{scored['scores']['overall_f1']:.3f}" == "71.690"
        finally:
            stack.stop()

    reference = statistics.median(in_process)
    p50 = statistics.median(latencies)
    print(f"uploads: {n} sequential, SQuAD sample submission (501 questions), embedded default")
    print(f"upload-to-scored latency: p50 {p50 * 1000:.0f} ms, max {max(latencies) * 1000:.0f} ms, "
          f"min {min(latencies) * 1000:.0f} ms")
    print(f"reference (in-process parse + score, cold token cache): median {reference * 1000:.0f} ms")
    print(f"ratio p50 / reference: {p50 / reference:.2f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
