"""Bounded scoring: a CPU budget per prediction file, and prediction files too large for the web
worker to check while their sender waits, checked by the scoring worker with the same messages."""
import json
import random
import signal
import threading
import time

import pytest
from django.test import Client

from benchmark.config_file import _model_budget
from core.cpu_budget import CpuBudgetExceeded, cpu_budget
from submissions import intake, runs, upload_checks
from submissions.models import ErrorCategory, Status, Submission
from tests.factories import (
    fixture_gold,
    make_task,
    make_task_from_gold,
    make_user,
    perfect_predictions,
    synthetic_span_gold,
    upload_file,
)


def spin(seconds):
    """Compute (no waiting) for ``seconds`` of this process's CPU time."""
    start = time.process_time()
    while time.process_time() - start < seconds:
        sum(range(1000))


# ----------------------------------------------------------------- the CPU budget itself

def test_a_computing_block_stops_at_its_cpu_budget_and_the_timer_is_put_back():
    before = signal.getsignal(signal.SIGPROF)
    start = time.process_time()
    with pytest.raises(CpuBudgetExceeded) as stopped:
        with cpu_budget(0.3) as enforced:
            assert enforced
            spin(20)
    used = time.process_time() - start
    assert 0.25 <= used < 2 and stopped.value.seconds == 0.3  # the kernel counts CPU time in ticks
    assert signal.getsignal(signal.SIGPROF) is before
    assert signal.getitimer(signal.ITIMER_PROF) == (0.0, 0.0)


def test_a_block_within_its_budget_and_a_waiting_block_are_not_stopped():
    with cpu_budget(0.5):
        spin(0.05)
    with cpu_budget(0.2):
        time.sleep(0.4)  # waiting uses no CPU time: only the wall-clock limit stops a run that waits
    spin(0.3)  # the timer is off once the block is left


def test_outside_the_main_thread_the_budget_is_not_enforced_and_says_so():
    seen = []

    def work():
        with cpu_budget(0.1) as enforced:
            seen.append(enforced)

    worker = threading.Thread(target=work)
    worker.start()
    worker.join()
    assert seen == [False]
    with pytest.raises(ValueError):
        with cpu_budget(0):
            pass


def test_a_task_declares_its_scoring_budget_in_its_benchmark_file():
    assert _model_budget({"scoring_cpu_seconds": 30}) == {"scoring_cpu_seconds": 30}


# ----------------------------------------------------------------- a slow valid file

def slow_predictions(gold, characters=9_999):
    """Valid predictions whose answers and evidences are as long as allowed, all different (no
    cache helps), and split at every other character: ``a-b-c...`` calls NLTK once per letter,
    the slowest text per character there is (about 0.15 CPU-s a string)."""
    rng = random.Random(7)
    predictions = perfect_predictions(gold)
    for entry in predictions.values():
        for field in ("answer", "evidence"):
            entry[field] = "-".join(rng.choice("abcdefghij") for _ in range(characters // 2 + 1))[:characters]
    return predictions


@pytest.mark.django_db
def test_a_slow_valid_file_stops_at_the_task_budget_charged_to_its_sender(settings, tmp_path):
    settings.SCORING_CPU_SECONDS = 600  # the task's own budget below wins
    gold = synthetic_span_gold(n_questions=40)  # about 12 CPU-s of scoring
    task = make_task_from_gold(tmp_path, gold)
    task.model_budget = {"scoring_cpu_seconds": 1}
    task.save()
    user = make_user()
    submission = intake.submit_predictions(user=user, task=task, method_name="long evidence",
                                           uploaded_file=upload_file(slow_predictions(gold)))
    assert submission.status == Status.QUEUED

    start = time.process_time()
    assert runs.claim_and_score(submission.pk) == Status.FAILED
    assert time.process_time() - start < 5  # stopped at its budget, the worker free again

    failed = Submission.objects.get(pk=submission.pk)
    assert failed.error_category == ErrorCategory.SCORING_TIME
    assert "more than 1 CPU seconds, the budget of expmrc-squad" in failed.error_message
    assert intake.quota_status(user, task)["used"] == 1  # charged, not refunded
    client = Client()
    client.force_login(user)
    page = client.get(f"/submissions/{submission.pk}/").content.decode()
    assert "Scoring time limit" in page and "the budget of expmrc-squad" in page
    answer = client.get(f"/api/submissions/{submission.pk}/").json()
    assert answer["status"] == "failed" and answer["error"]["category"] == "scoring_time"
    assert "the budget of expmrc-squad" in answer["error"]["message"]


@pytest.mark.django_db
def test_the_same_file_scores_under_the_site_budget(settings):
    settings.SCORING_CPU_SECONDS = 600
    task = make_task("expmrc-squad")
    submission = intake.submit_predictions(user=make_user(), task=task, method_name="m",
                                           uploaded_file=upload_file(perfect_predictions(fixture_gold("expmrc-squad"))))
    assert runs.scoring_cpu_seconds(task) == 600
    assert runs.claim_and_score(submission.pk) == Status.SCORED


# ----------------------------------------------------------------- checks after upload

def count_values(document):
    if isinstance(document, dict):
        return 1 + sum(count_values(value) for value in document.values())
    if isinstance(document, list):
        return 1 + sum(count_values(value) for value in document)
    return 1


def test_the_byte_count_bound_is_never_below_the_number_of_values():
    rng = random.Random(3)
    atoms = [0, 1.5, True, None, "", "a,b", "{[", '"quoted, "', "\\", "日本,語"]

    def document(depth):
        if depth == 0 or rng.random() < 0.3:
            return rng.choice(atoms)
        if rng.random() < 0.5:
            return [document(depth - 1) for _ in range(rng.randrange(4))]
        return {f"k{i},{{": document(depth - 1) for i in range(rng.randrange(4))}

    for _ in range(500):
        value = document(5)
        for text in (json.dumps(value), json.dumps(value, ensure_ascii=False, separators=(",", ":"))):
            assert upload_checks.json_values_at_most(text.encode()) >= count_values(value)
    many = json.dumps({f"q{i}": {"answer": "a", "evidence": "b"} for i in range(1000)}).encode()
    assert upload_checks.json_values_at_most(many) == 3001  # exact without commas in strings


@pytest.mark.django_db
def test_a_file_over_the_inline_check_is_queued_then_refused_by_the_worker_and_charged(settings):
    settings.UPLOAD_CHECK_MAX_VALUES = 100
    task = make_task("expmrc-squad")
    user = make_user()
    predictions = perfect_predictions(fixture_gold("expmrc-squad"))
    predictions.update({f"junk-{i}": {"answer": "x", "evidence": "y"} for i in range(200)})
    submission = intake.submit_predictions(user=user, task=task, uploaded_file=upload_file(predictions),
                                           method_name="too many keys")
    assert submission.status == Status.QUEUED  # not parsed while its sender waited
    assert intake.quota_status(user, task)["used"] == 1

    assert runs.claim_and_score(submission.pk) == Status.FAILED
    failed = Submission.objects.get(pk=submission.pk)
    assert failed.error_category == ErrorCategory.INVALID_INPUT
    assert "checked after upload" in failed.error_message and "counts against your quota" in failed.error_message
    assert 'keys not in the test set: ' in failed.error_message and '"junk-0"' in failed.error_message
    assert intake.quota_status(user, task)["used"] == 1  # no free retry
    assert failed.file and failed.file.size == failed.size  # the bytes are kept


@pytest.mark.django_db
def test_the_same_refusal_comes_at_once_below_the_inline_check(settings):
    settings.UPLOAD_CHECK_MAX_VALUES = 1_000_000
    task = make_task("expmrc-squad")
    user = make_user()
    predictions = perfect_predictions(fixture_gold("expmrc-squad"))
    predictions.update({f"junk-{i}": {"answer": "x", "evidence": "y"} for i in range(200)})
    submission = intake.submit_predictions(user=user, task=task, uploaded_file=upload_file(predictions),
                                           method_name="too many keys")
    assert submission.status == Status.REJECTED and '"junk-0"' in submission.error_message
    assert intake.quota_status(user, task)["used"] == 0


@pytest.mark.django_db
def test_a_valid_file_over_the_inline_check_is_scored(settings):
    settings.UPLOAD_CHECK_MAX_VALUES = 10
    task = make_task("expmrc-squad")
    submission = intake.submit_predictions(user=make_user(), task=task, method_name="m",
                                           uploaded_file=upload_file(perfect_predictions(fixture_gold("expmrc-squad"))))
    assert runs.claim_and_score(submission.pk) == Status.SCORED
    assert Submission.objects.get(pk=submission.pk).scores["overall_f1"] == pytest.approx(100)
