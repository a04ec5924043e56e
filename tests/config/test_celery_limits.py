"""Every Celery task has a soft and a hard time limit, and the reapers have a queue and a
worker of their own in both ways of running the product (config/celery.py)."""
import re

import yaml
from django.conf import settings

from config.celery import REAPERS, app

OUR_TASKS = ("submissions.", "benchmark.", "leaderboards.", "accounts.", "core.")


def our_tasks():
    app.loader.import_default_modules()
    tasks = {name: task for name, task in app.tasks.items() if name.startswith(OUR_TASKS)}
    assert "submissions.tasks.score_submission" in tasks
    return tasks


def test_every_task_has_a_soft_limit_before_its_hard_limit():
    for name, task in our_tasks().items():
        assert task.time_limit and task.soft_time_limit, name
        assert 0 < task.soft_time_limit < task.time_limit, name


def test_scoring_stops_within_its_limit_and_code_runs_get_the_sandbox_budget_first():
    tasks = our_tasks()
    assert tasks["submissions.tasks.score_submission"].time_limit == settings.SCORING_TIME_LIMIT
    code = tasks["submissions.tasks.run_code_submission"]
    assert code.soft_time_limit > settings.SANDBOX_TOTAL_SECONDS
    assert all(tasks[name].time_limit <= 300 for name in REAPERS)


def test_the_reapers_go_to_their_own_queue():
    for name in REAPERS:
        assert app.amqp.router.route({}, name)["queue"].name == "reaper"
    assert app.amqp.router.route({}, "submissions.tasks.score_submission")["queue"].name == "scoring"


def test_run_sh_and_compose_start_a_worker_for_the_reaper_queue():
    run_sh = (settings.BASE_DIR / "scripts" / "run.sh").read_text()
    assert re.search(r"celery -A config worker -Q reaper\b", run_sh)
    compose = yaml.safe_load((settings.BASE_DIR / "docker-compose.yml").read_text())
    commands = [service.get("command", "") for service in compose["services"].values()]
    assert any(re.search(r"worker -Q reaper\b", command) for command in commands)
