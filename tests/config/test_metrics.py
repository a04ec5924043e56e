"""/metrics (config/metrics.py) and optional error reporting (config/error_reporting.py)."""
import logging
import types
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from config import error_reporting
from submissions.models import ErrorCategory, Status, Submission
from tests.factories import logged_in, make_task, make_user
from tests.integration.stack import reachable

pytestmark = pytest.mark.django_db

TOKEN = "metrics-token-for-tests"


@pytest.fixture
def site(settings, tmp_path):
    settings.METRICS_TOKEN = TOKEN
    settings.CELERY_BROKER_URL = "filesystem://localhost/"
    settings.CELERY_BROKER_DIR = tmp_path / "broker"
    settings.CELERY_BROKER_DIR.mkdir()
    for name in ("100_a.scoring.msg", "101_b.scoring.msg", "102_c.sandbox.msg",
                 ".99_d.scoring.msg.claimed", ".e.partial"):
        (settings.CELERY_BROKER_DIR / name).write_text("{}")
    task = make_task("expmrc-squad")
    alice = make_user("alice")
    now = timezone.now()

    def entry(kind, status, seconds=None, category=""):
        queued = now - timedelta(seconds=(seconds or 0) + 5)
        return Submission.objects.create(
            user=alice, task=task, test_set=task.current_test_set(), method_name="m", kind=kind, status=status,
            error_category=category, queued_at=queued,
            finished_at=queued + timedelta(seconds=seconds) if seconds is not None else None)

    entry(Submission.PREDICTIONS, Status.SCORED, 3)
    entry(Submission.PREDICTIONS, Status.SCORED, 90.5)
    entry(Submission.PREDICTIONS, Status.REJECTED, 1, ErrorCategory.INVALID_INPUT)
    entry(Submission.PREDICTIONS, Status.FAILED, 400, ErrorCategory.WORKER_LOST)
    entry(Submission.CODE, Status.FAILED, 40, ErrorCategory.CODE_FAILED)
    entry(Submission.MODEL, Status.SCORED, 700)
    entry(Submission.MODEL, Status.FAILED, 20, ErrorCategory.SMOKE_FAILED)
    waiting = entry(Submission.PREDICTIONS, Status.QUEUED)
    Submission.objects.filter(pk=waiting.pk).update(queued_at=now - timedelta(seconds=120))
    return alice


def scrape(client=None, **headers):
    return (client or Client()).get("/metrics", **headers)


def samples(response):
    text = response.content.decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def value(found, name, **labels):
    return found[(name, tuple(sorted(labels.items())))]


def test_only_the_token_or_a_staff_session_sees_the_page(site, settings):
    assert scrape().status_code == 404
    assert scrape(logged_in(site)).status_code == 404
    assert scrape(HTTP_AUTHORIZATION="Bearer wrong").status_code == 404
    assert scrape(HTTP_AUTHORIZATION=f"Token {TOKEN}").status_code == 404
    response = scrape(HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/plain; version=")
    assert response["Cache-Control"] == "no-store"
    staff = make_user("root")
    staff.is_staff = True
    staff.save()
    assert scrape(logged_in(staff)).status_code == 200
    settings.METRICS_TOKEN = ""  # no token configured: a bearer of the empty string gets nothing
    assert scrape(HTTP_AUTHORIZATION="Bearer ").status_code == 404


def test_queue_depth_submissions_failures_sandbox_runs_and_latency(site):
    found = samples(scrape(HTTP_AUTHORIZATION=f"Bearer {TOKEN}"))
    assert value(found, "expbench_queue_depth_available") == 1
    assert value(found, "expbench_queue_messages", queue="scoring") == 2
    assert value(found, "expbench_queue_messages", queue="sandbox") == 1
    assert value(found, "expbench_queue_messages", queue="maintenance") == 0
    assert value(found, "expbench_submissions", kind="predictions", status="scored") == 2
    assert value(found, "expbench_submissions", kind="predictions", status="queued") == 1
    assert 120 <= value(found, "expbench_oldest_queued_submission_seconds") < 600
    assert value(found, "expbench_submission_failures", kind="predictions", category="invalid_input") == 1
    assert value(found, "expbench_submission_failures", kind="predictions", category="worker_lost") == 1
    assert value(found, "expbench_submission_failures", kind="code", category="code_failed") == 1
    assert value(found, "expbench_sandbox_runs", kind="code", outcome="code_failed") == 1
    assert value(found, "expbench_sandbox_runs", kind="model", outcome="scored") == 1
    assert value(found, "expbench_sandbox_runs", kind="model", outcome="smoke_failed") == 1
    assert not any(name == "expbench_sandbox_runs" and dict(labels)["kind"] == "predictions"
                   for name, labels in found)
    # Predictions finished after 3 s, 90.5 s, 1 s and 400 s.
    bucket = "expbench_scoring_latency_seconds_bucket"
    assert value(found, bucket, kind="predictions", le="2.0") == 1
    assert value(found, bucket, kind="predictions", le="5.0") == 2
    assert value(found, bucket, kind="predictions", le="120.0") == 3
    assert value(found, bucket, kind="predictions", le="600.0") == 4
    assert value(found, bucket, kind="predictions", le="+Inf") == 4
    assert value(found, "expbench_scoring_latency_seconds_count", kind="predictions") == 4
    assert value(found, "expbench_scoring_latency_seconds_sum", kind="predictions") == pytest.approx(494.5)
    assert value(found, "expbench_scoring_latency_seconds_count", kind="model") == 2


def test_a_broker_that_does_not_answer_leaves_the_other_figures(site, settings, caplog):
    settings.CELERY_BROKER_URL = "redis://:hunter2-broker-secret@127.0.0.1:1/0"  # nothing listens on port 1
    settings.CELERY_BROKER_TRANSPORT_OPTIONS = {}
    response = scrape(HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    found = samples(response)
    assert value(found, "expbench_queue_depth_available") == 0
    assert not any(name == "expbench_queue_messages" for name, _ in found)
    assert value(found, "expbench_submissions", kind="predictions", status="scored") == 2
    assert "hunter2" not in response.content.decode() + caplog.text


def test_redis_queue_depth_counts_every_priority_list(site, settings):
    if not reachable("127.0.0.1", 6379):
        pytest.skip("Redis not reachable on 127.0.0.1:6379")
    import redis

    url = "redis://127.0.0.1:6379/14"
    client = redis.Redis.from_url(url)
    client.flushdb()
    try:
        client.lpush("scoring", "a", "b", "c")
        client.lpush("scoring\x06\x163", "d")  # kombu's list of priority 3
        client.lpush("models", "e")
        settings.CELERY_BROKER_URL = url
        settings.CELERY_BROKER_TRANSPORT_OPTIONS = {}
        found = samples(scrape(HTTP_AUTHORIZATION=f"Bearer {TOKEN}"))
    finally:
        client.flushdb()
    assert value(found, "expbench_queue_depth_available") == 1
    assert value(found, "expbench_queue_messages", queue="scoring") == 4
    assert value(found, "expbench_queue_messages", queue="models") == 1
    assert value(found, "expbench_queue_messages", queue="sandbox") == 0


# ------------------------------------------------------------------------- error reporting


def test_error_reporting_is_off_without_a_dsn_and_unavailable_without_the_package(monkeypatch, caplog):
    assert error_reporting.init_from_environment({}) == "off"
    monkeypatch.setattr(error_reporting, "sentry_sdk", None)
    with caplog.at_level(logging.WARNING):
        assert error_reporting.init_from_environment({"SENTRY_DSN": "https://k@sentry.example/1"}) == "unavailable"
    assert "sentry-sdk package is not installed" in caplog.text and "k@sentry" not in caplog.text


def test_error_reporting_starts_scrubbed_where_the_package_is(monkeypatch):
    calls = []
    monkeypatch.setattr(error_reporting, "sentry_sdk", types.SimpleNamespace(init=lambda **kw: calls.append(kw)))
    assert error_reporting.init_from_environment({"SENTRY_DSN": "https://k@sentry.example/1",
                                                  "EXPBENCH_ENV": "production"}) == "on"
    (options,) = calls
    assert options["dsn"] == "https://k@sentry.example/1" and options["environment"] == "production"
    assert options["send_default_pii"] is False and options["include_local_variables"] is False
    assert options["max_request_body_size"] == "never" and options["before_send"] is error_reporting.scrub_event


def test_reported_events_carry_no_messages_variables_or_request_data():
    event = {
        "exception": {"values": [{"type": "RuntimeError", "value": "mismatch on 'the gold answer'",
                                  "stacktrace": {"frames": [{"function": "score", "vars": {"gold": "the gold answer"}}]}}]},
        "threads": {"values": [{"stacktrace": {"frames": [{"function": "run", "vars": {"x": 1}}]}}]},
        "request": {"url": "https://site.example/api/v1/x/?token=abc", "method": "POST", "data": "{...}",
                    "headers": {"Authorization": "Token abc"}, "cookies": {"sessionid": "s"}},
        "extra": {"sys.argv": ["manage.py"]}, "user": {"id": 1},
    }
    scrubbed = error_reporting.scrub_event(event)
    assert scrubbed["exception"]["values"][0]["type"] == "RuntimeError"
    assert scrubbed["exception"]["values"][0]["value"] == ""
    assert scrubbed["exception"]["values"][0]["stacktrace"]["frames"] == [{"function": "score"}]
    assert scrubbed["threads"]["values"][0]["stacktrace"]["frames"] == [{"function": "run"}]
    assert scrubbed["request"] == {"url": "https://site.example/api/v1/x/", "method": "POST"}
    assert "extra" not in scrubbed and "user" not in scrubbed
