"""Every queue the routing table sends work to is consumed where the product is started
(scripts/run.sh, docker-compose.yml) and where it is documented (README.md,
docs/operations.md); housekeeping is on beat's schedule and runs. An operator who follows any
of them starts nothing that leaves a queue unread (a `reaper` queue nobody consumed once left
runs whose worker died running for good)."""
import os
import re
import time
from pathlib import Path

import pytest
import yaml

from config.celery import QUEUES, app

REPO = Path(__file__).resolve().parents[2]
WORKER = re.compile(r"celery -A config worker -Q ([a-z,]+)")


def consumed(text: str) -> set[str]:
    return {queue for match in WORKER.findall(text) for queue in match.split(",")}


def routed() -> set[str]:
    return {route["queue"] for route in app.conf.task_routes.values()} | {app.conf.task_default_queue}


def test_every_route_names_a_declared_queue():
    assert routed() <= set(QUEUES)
    assert set(QUEUES) <= routed()  # no declared queue that nothing is sent to


@pytest.mark.parametrize("path", ["scripts/run.sh", "README.md", "docs/operations.md"])
def test_each_start_and_each_page_consumes_every_routed_queue(path):
    assert consumed((REPO / path).read_text()) >= routed(), path


def test_compose_consumes_every_routed_queue_and_runs_beat():
    services = yaml.safe_load((REPO / "docker-compose.yml").read_text())["services"]
    commands = [service.get("command", "") for service in services.values()]
    assert consumed("\n".join(commands)) >= routed()
    assert any(command.startswith("celery -A config beat") for command in commands)


def test_model_jobs_have_a_worker_of_their_own():
    """An hour-long model job never holds the worker that diagnostics and board rebuilds wait for."""
    for path in ("scripts/run.sh", "docker-compose.yml"):
        workers = [set(match.split(",")) for match in WORKER.findall((REPO / path).read_text())]
        assert {"models"} in workers and not any("models" in queues and len(queues) > 1 for queues in workers), path


def test_beat_schedules_the_reapers_and_housekeeping():
    tasks = {entry["task"] for entry in app.conf.beat_schedule.values()}
    assert {"submissions.tasks.reap_stuck_submissions", "benchmark.tasks.reap_stuck_jobs",
            "submissions.tasks.purge_uploads"} <= tasks
    assert app.amqp.router.route({}, "submissions.tasks.purge_uploads")["queue"].name == "maintenance"


@pytest.mark.django_db
def test_the_housekeeping_task_purges_old_temporary_uploads(settings, tmp_path):
    from submissions.tasks import purge_uploads

    settings.FILE_UPLOAD_TEMP_DIR = str(tmp_path)
    old, fresh = tmp_path / "tmpold.upload.json", tmp_path / "tmpnew.upload.json"
    old.write_bytes(b"x" * 1000)
    fresh.write_bytes(b"y")
    two_hours_ago = time.time() - 7200
    os.utime(old, (two_hours_ago, two_hours_ago))
    purge_uploads()
    assert not old.exists() and fresh.exists()  # an upload still running keeps its file
