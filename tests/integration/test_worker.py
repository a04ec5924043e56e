"""End to end through real processes: an upload is scored by a real Celery worker and shows
on the leaderboard; a worker killed mid-scoring loses nothing; the same on PostgreSQL+Redis."""
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from .conftest import assert_official, sample_and_expected
from .stack import Stack

pytestmark = pytest.mark.integration


def upload_and_score(stack, token):
    content, expected = sample_and_expected()
    status, body = stack.upload(token, "expmrc-squad", content, method_name="Sample system")
    assert status == 201, body
    assert body["status"] == "queued"
    scored = stack.wait_for(body["id"], token)
    assert scored["status"] == "scored", scored
    assert_official(scored["scores"], expected)
    assert scored["attempts"] == 1
    low, high = scored["ci"]["overall_f1"]
    assert low <= scored["scores"]["overall_f1"] <= high
    board = stack.board("expmrc-squad", until=lambda b: any(r["submission_id"] == body["id"] for r in b["rows"]))
    entry = next(row for row in board["rows"] if row["submission_id"] == body["id"])
    assert entry["method"] == "Sample system" and not entry["reported"] and entry["rank"] >= 1
    return body["id"]


def assert_quota_holds_under_concurrent_uploads(stack, token, used):
    """With one upload left of the daily 5, eight uploads at once through gunicorn's two
    workers: exactly one is accepted, the others get 429 (never a 500, never a sixth)."""
    for i in range(4 - used):
        status, body = stack.upload(token, "expmrc-squad", b"{}", method_name=f"filler {i}")
        assert status == 201, body
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(
            lambda i: stack.upload(token, "expmrc-squad", b"{}", method_name=f"burst {i}"), range(8)))
    statuses = sorted(status for status, _ in results)
    assert statuses == [201] + [429] * 7, results
    assert all("Daily limit reached" in body["detail"] for status, body in results if status == 429)
    status, mine = stack.request("GET", "/api/v1/submissions/", token=token)  # every page
    assert status == 200
    rows = mine["results"]
    assert len(rows) == mine["count"], mine
    accepted = [row for row in rows if row["task"] == "expmrc-squad" and row["status"] != "rejected"]
    assert len(accepted) == 5, rows


def test_embedded_worker_scores_an_upload_end_to_end(embedded_stack):
    token = embedded_stack.create_user("carol", "integration-pw-1")
    submission_id = upload_and_score(embedded_stack, token)
    # The background worker computes the diagnostics after the score.
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        status, body = embedded_stack.request("GET", f"/api/v1/submissions/{submission_id}/diagnostics/", token=token)
        if body["status"] in ("done", "failed"):
            break
        time.sleep(0.2)
    assert body["status"] == "done", body
    assert {"question_types", "linguistic_bias"} <= set(body["diagnostics"])
    # An invalid file is refused at upload and never reaches the worker.
    status, body = embedded_stack.upload(token, "expmrc-squad", b'{"unknown-id": {"answer": "", "evidence": ""}}')
    assert status == 400 and "unknown-id" in body["detail"]
    assert_quota_holds_under_concurrent_uploads(embedded_stack, token, used=1)  # rejected files are free


def test_worker_killed_mid_scoring_loses_nothing(tmp_path):
    # The hard time limit of 12 s puts the soft one at 7 s (config.celery.soft_limit).
    stack = Stack(tmp_path, env={"SCORING_LEASE_SECONDS": "3", "QUEUE_LEASE_SECONDS": "30",
                                 "SCORING_TIME_LIMIT": "12"}).setup()
    try:
        stack.start_web()
        # This worker holds every run open for 30 s, so it is surely killed mid-scoring.
        stack.start_worker("worker", env={"EXPBENCH_TEST_SCORING_DELAY": "30"})
        stack.start_worker("background", queues="maintenance,models", concurrency=1)
        token = stack.create_user("dave", "integration-pw-2")
        content, expected = sample_and_expected()
        status, body = stack.upload(token, "expmrc-squad", content)
        assert status == 201
        running = stack.wait_for(body["id"], token, statuses=("running",), timeout=30)
        assert running["attempts"] == 1
        time.sleep(4)  # past the 3 s lease: only the worker's renewals keep the run its own
        status, live = stack.request("GET", f"/api/v1/submissions/{body['id']}/", token=token)
        assert live["status"] == "running" and live["attempts"] == 1 and live["stalled"] is False, live
        stack.kill("worker")  # SIGKILL to the worker and its pool: no clean shutdown
        deadline = time.monotonic() + 10  # nobody renews the run now: its status says so
        while time.monotonic() < deadline:
            status, seen = stack.request("GET", f"/api/v1/submissions/{body['id']}/", token=token)
            if seen["stalled"]:
                break
            time.sleep(0.2)
        assert seen["stalled"] is True and seen["status"] == "running", seen
        # A new worker and the reaper (beat) take over once the 3 s lease has expired.
        stack.start_worker("worker2", queues="scoring,reaper").start_beat()
        scored = stack.wait_for(body["id"], token, timeout=60)
        assert scored["status"] == "scored", scored
        assert scored["attempts"] == 2
        assert_official(scored["scores"], expected)
        board = stack.board("expmrc-squad",
                            until=lambda b: any(r["submission_id"] == body["id"] for r in b["rows"]))
        assert [row["submission_id"] for row in board["rows"]].count(body["id"]) == 1

        # A file that scores past the time limit fails at the soft limit, charged to its sender,
        # and the worker goes on.
        stack.kill("worker2")
        stack.start_worker("slow", env={"EXPBENCH_TEST_SCORING_DELAY": "30"})
        status, quota = stack.request("GET", "/api/v1/tasks/expmrc-squad/quota/", token=token)
        status, slow = stack.upload(token, "expmrc-squad", content, method_name="Slow")
        assert status == 201, slow
        failed = stack.wait_for(slow["id"], token, timeout=30)
        assert failed["status"] == "failed" and failed["error"]["category"] == "scoring_time", failed
        assert "longer than 12 s" in failed["error"]["message"]
        status, after = stack.request("GET", "/api/v1/tasks/expmrc-squad/quota/", token=token)
        assert after["used"] == quota["used"] + 1  # charged, not refunded as the platform's fault
        assert stack.procs["slow"].poll() is None  # the worker lives on
    finally:
        stack.stop()


def test_postgres_and_redis_end_to_end(tmp_path, postgres_url, redis_url):
    stack = Stack(tmp_path, database_url=postgres_url, broker_url=redis_url, cache_url=redis_url).setup()
    try:
        stack.start_web().start_workers().start_beat()
        assert "redis://" in stack.log_text("worker")
        token = stack.create_user("erin", "integration-pw-3")
        upload_and_score(stack, token)
        assert_quota_holds_under_concurrent_uploads(stack, token, used=1)
    finally:
        stack.stop()


def pool_processes(main):
    """The worker's pool processes: children of any of its threads (a replacement is forked by
    the pool's supervising thread, not the main one)."""
    return sorted(pid for task in Path(f"/proc/{main}/task").iterdir()
                  for pid in (task / "children").read_text().split())


def test_a_worker_process_past_its_memory_limit_is_replaced_after_its_task(tmp_path):
    """WORKER_MAX_MEMORY_MB: the task finishes, then the pool process is replaced by a new one
    (here every process is past a 1 MB limit, so each task gets a fresh one)."""
    stack = Stack(tmp_path).setup()
    try:
        stack.start_web().start_worker("worker", env={"WORKER_MAX_MEMORY_MB": "1"}, concurrency=1)
        token = stack.create_user("rita", "integration-pw-9")
        main = stack.procs["worker"].pid
        seen = [pool_processes(main)]
        assert len(seen[0]) == 1, seen
        for round_ in range(2):
            content, expected = sample_and_expected()
            status, body = stack.upload(token, "expmrc-squad", content, method_name=f"Round {round_}")
            assert status == 201, body
            scored = stack.wait_for(body["id"], token)
            assert scored["status"] == "scored", scored
            assert_official(scored["scores"], expected)
            # The status is written before the task returns: the process leaves a moment later.
            deadline = time.monotonic() + 30
            while pool_processes(main) in (seen[-1], []) and time.monotonic() < deadline:
                time.sleep(0.1)
            seen.append(pool_processes(main))
        assert len({tuple(pids) for pids in seen}) == 3 and all(len(pids) == 1 for pids in seen), seen
        assert "WorkerLostError" not in stack.log_text("worker")
    finally:
        stack.stop()
