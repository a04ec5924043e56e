"""A QUACKIE track's board shows its built-in baseline job (submissions.baseline_runs, state in
the test set's diagnostics["baselines"]) while it is queued, runs, failed or finished, and keeps
updating itself while the job waits or runs. The job's state is written here through the job
protocol (core.jobs) and the model, as the worker writes it, without running the job."""
import re
from datetime import timedelta
from html.parser import HTMLParser

import pytest
from django.core.cache import cache
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from benchmark.models import HostedModel, InterpretationSet, Task, Track
from benchmark.quackie_tracks import BASELINES, ensure_quackie_benchmark
from core.jobs import JobStatus
from leaderboards.store import board_state

pytestmark = pytest.mark.django_db

SAMPLES = 495
FAMILIES = 8
METHODS = [f"Method{i}_{'sum' if i % 2 else 'max'}" for i in range(15)]


@pytest.fixture
def track():
    """A track whose inclusion is done and whose test set holds SAMPLES samples, built from
    models (no hosted model is loaded: the board page never loads it)."""
    from benchmark.models import TestSet  # inside: pytest would collect a Test* name at module level

    task = Task.objects.create(slug="quackie-small-tiny", benchmark=ensure_quackie_benchmark(), name="small · Tiny",
                               kind="interpretation", language="en")
    interpretation_set = InterpretationSet.objects.create(name="small", version="1", checksum="0" * 64,
                                                          n_samples=SAMPLES + 5, samples=[])
    model = HostedModel.objects.create(slug="tiny", name="Tiny", kind=HostedModel.CLASSIFICATION, path="/nowhere")
    TestSet.objects.create(task=task, split=TestSet.TEST, version="small-v1", checksum="1" * 64, n_items=SAMPLES,
                           gold={}, public_inputs={"data": []}, key_spec={"kind": "interpretation", "keys": []})
    return Track.objects.create(task=task, interpretation_set=interpretation_set, hosted_model=model,
                                status=JobStatus.DONE, done=SAMPLES + 5, total=SAMPLES + 5, n_included=SAMPLES)


def tomorrow():
    """A moment at which every heartbeat is stale (the reaper gives up on a job claimed often)."""
    return timezone.now() + timedelta(days=1)


def job_row(track):
    return track.task.current_test_set().pk


def queue(track):
    """As benchmark.quackie_tracks.schedule_baselines leaves the job for the worker."""
    BASELINES.state.schedule(job_row(track), methods=METHODS, limit=None, rows={}, family="", samples_done=0,
                             samples_total=SAMPLES, done=0, total=0, note="")


def run_to(track, families_finished, samples_done, family="LIME_10"):
    """Claimed by a worker, which reports its progress as submissions.baseline_runs does;
    returns the attempt owning the job."""
    attempt = BASELINES.state.claim(job_row(track))
    assert attempt is not None
    assert BASELINES.state.heartbeat(
        job_row(track), attempt, rows={method: 100 + i for i, method in enumerate(METHODS[:2 * families_finished])},
        family=family, samples_done=samples_done, done=SAMPLES * families_finished + samples_done,
        total=SAMPLES * FAMILIES)
    return attempt


def page(track, client=None):
    response = (client or Client()).get(f"/tasks/{track.task.slug}/")
    assert response.status_code == 200
    return response


def line(response):
    """The baselines line as text, whitespace collapsed ('' when the page has none)."""
    found = re.search(r'<p class="baselines-line" id="baselines-line">(.*?)</p>', response.content.decode(), re.S)
    return " ".join(re.sub(r"<[^>]+>", " ", found.group(1)).split()) if found else ""


def refreshes(response):
    return 'id="live-refresh" data-refresh="10"' in response.content.decode()


def test_nothing_is_shown_before_the_job_is_ever_queued(track):
    response = page(track)
    assert line(response) == "" and 'id="baselines"' not in response.content.decode()
    assert response.context["refresh"] is False and "data-refresh" not in response.content.decode()
    assert board_state(track.task.slug).baselines is None


def test_a_queued_job_waits_for_a_worker_and_the_page_refreshes(track):
    queue(track)
    response = page(track)
    assert line(response) == "Built-in baselines queued Waiting for a worker to compute 15 rows on 495 samples."
    assert "<progress" not in response.content.decode()  # nothing to measure yet
    assert response.context["refresh"] is True and refreshes(response)


def test_a_running_job_shows_its_family_samples_and_whole_run(track):
    queue(track)
    run_to(track, families_finished=3, samples_done=120)
    response = page(track)
    assert line(response) == ("Built-in baselines running LIME_10 (family 4 of 8): 120 of 495 samples. "
                              "6 of 15 rows on the board so far.")
    body = response.content.decode()
    done, total = 3 * SAMPLES + 120, FAMILIES * SAMPLES
    assert f'<progress max="{total}" value="{done}" aria-labelledby="baselines-line baselines-percent">' in body
    assert f"{100 * done // total}% of the whole run" in body
    assert response.context["refresh"] is True and refreshes(response)


def test_a_job_queued_again_between_slices_says_where_it_goes_on(track):
    queue(track)
    attempt = run_to(track, families_finished=1, samples_done=40, family="Gradient")
    assert BASELINES.state.finish(job_row(track), attempt, JobStatus.QUEUED, attempts=0)  # the slice is over
    response = page(track)
    assert line(response) == ("Built-in baselines queued Waiting for a worker to go on from Gradient (family 2 of 8): "
                              "40 of 495 samples. 2 of 15 rows on the board so far.")
    assert f'value="{SAMPLES + 40}"' in response.content.decode() and response.context["refresh"] is True


def test_a_failed_job_gives_a_general_reason_and_no_details(track):
    queue(track)
    attempt = run_to(track, families_finished=3, samples_done=120)
    secret = "RuntimeError: gold sentence 'The answer is 42' in /srv/expbench/media/gold.json"
    assert BASELINES.state.finish(job_row(track), attempt, JobStatus.FAILED, note=secret)
    response = page(track)
    assert line(response) == ("Built-in baselines failed Stopped on an error at LIME_10 (family 4 of 8): "
                              "120 of 495 samples. 6 of 15 rows on the board. The maintainers have the details.")
    body = response.content.decode()
    assert "RuntimeError" not in body and "answer is 42" not in body and "/srv/" not in body
    assert "<progress" in body  # how far it got
    assert response.context["refresh"] is False and "data-refresh" not in body


def test_a_job_the_reaper_gave_up_on_says_it_kept_losing_its_worker(track):
    queue(track)
    run_to(track, families_finished=0, samples_done=0, family="Random")
    job = next(iter(BASELINES.state.stale(tomorrow())))
    assert BASELINES.state.give_up(job, tomorrow(), BASELINES.give_up_note(job.attempts))
    text = line(page(track))
    assert text.startswith("Built-in baselines failed Stopped after losing its worker too many times at Random "
                           "(family 1 of 8): 0 of 495 samples.")
    assert "load_demo" not in text and "manage.py" not in text  # the note's advice is for maintainers


@pytest.mark.parametrize("limit, said", [(None, "all 495 samples"), (50, "50 of the 495 samples")])
def test_a_finished_job_says_so_and_the_page_stops_refreshing(track, limit, said):
    queue(track)
    if limit is not None:
        BASELINES.state.write(job_row(track), limit=limit, samples_total=limit)
    n = limit or SAMPLES
    attempt = run_to(track, families_finished=8, samples_done=n)
    rows = {method: 100 + i for i, method in enumerate(METHODS)}
    assert BASELINES.state.finish(job_row(track), attempt, JobStatus.DONE, rows=rows, family="",
                                  done=n * FAMILIES, total=n * FAMILIES)
    response = page(track)
    assert line(response) == f"Built-in baselines finished 15 of 15 rows on {said}."
    body = response.content.decode()
    assert "<progress" not in body
    assert response.context["refresh"] is False and "data-refresh" not in body


def test_the_etag_follows_progress_not_heartbeats(track):
    client = Client()
    queue(track)
    queued = page(track, client)["ETag"]
    attempt = run_to(track, families_finished=3, samples_done=120)
    running = page(track, client)
    assert running["ETag"] != queued

    def revalidate():
        with CaptureQueriesContext(connection) as captured:
            response = client.get(f"/tasks/{track.task.slug}/", HTTP_IF_NONE_MATCH=running["ETag"])
        return response, len(captured.captured_queries)

    # A heartbeat that moves nothing the page shows (a row stored, the time renewed): still 304,
    # answered with the one state query.
    assert BASELINES.state.heartbeat(job_row(track), attempt, rows={"Random_sum": 1})
    response, n_queries = revalidate()
    assert response.status_code == 304 and n_queries == 1
    # A checkpoint: samples done moves, and so does the ETag.
    assert BASELINES.state.heartbeat(job_row(track), attempt, samples_done=121, done=3 * SAMPLES + 121)
    response, _ = revalidate()
    assert response.status_code == 200 and response["ETag"] != running["ETag"]
    assert "121 of 495 samples" in line(response)


def test_a_second_failure_at_the_same_point_gets_a_new_etag(track):
    client = Client()
    queue(track)
    attempt = run_to(track, families_finished=3, samples_done=120)
    assert BASELINES.state.finish(job_row(track), attempt, JobStatus.FAILED, note="ValueError: x")
    first = page(track, client)["ETag"]
    assert page(track, client)["ETag"] == first  # nothing moved
    # Queued again and given up by the reaper before any progress: same numbers, another reason.
    assert BASELINES.state.write(job_row(track), status=JobStatus.RUNNING)
    job = next(iter(BASELINES.state.stale(tomorrow())))
    assert BASELINES.state.give_up(job, tomorrow(), BASELINES.give_up_note(job.attempts))
    response = page(track, client)
    assert response["ETag"] != first and "losing its worker" in line(response)


def test_the_baselines_cost_the_board_page_no_query(track):
    client = Client()

    def queries():
        client.get(path)  # brings the stored board up to date
        cache.clear()  # the page rendered above is forgotten: rendered again
        with CaptureQueriesContext(connection) as captured:
            rendered = client.get(path)
        with CaptureQueriesContext(connection) as again:
            served = client.get(path)  # from the shared cache, as rendered
        assert rendered.status_code == served.status_code == 200 and served.content == rendered.content
        return len(captured.captured_queries), len(again.captured_queries)

    path = f"/tasks/{track.task.slug}/"
    never_queued = queries()
    queue(track)
    run_to(track, families_finished=3, samples_done=120)
    running = queries()
    assert running == never_queued and running[1] == 1, (never_queued, running)


class BlockInParagraph(HTMLParser):
    """Records each <div> opened while a <p> is open: a browser closes the <p> there, so the
    page's text would not be laid out as written."""

    def __init__(self):
        super().__init__()
        self.open_paragraphs, self.misplaced = 0, []

    def handle_starttag(self, tag, attrs):
        if tag == "p":
            self.open_paragraphs += 1
        elif tag == "div" and self.open_paragraphs:
            self.misplaced.append(dict(attrs).get("class", ""))

    def handle_endtag(self, tag):
        if tag == "p" and self.open_paragraphs:
            self.open_paragraphs -= 1


def test_a_track_computing_its_inclusion_shows_its_bar_outside_the_paragraph(track):
    Track.objects.filter(pk=track.pk).update(status=JobStatus.RUNNING, done=100, total=SAMPLES + 5)
    cache.clear()
    html = page(track).content.decode()
    assert "Computing the inclusion flags with the hosted model: 100 / 500 samples" in html
    # A native bar: no inline style, which the Content-Security-Policy refuses.
    assert '<progress class="progress-meter" value="100" max="500">20%</progress>' in html
    parser = BlockInParagraph()
    parser.feed(html)
    assert parser.misplaced == []


def test_the_device_the_model_ran_on_is_shown(track):
    queue(track)
    attempt = run_to(track, families_finished=3, samples_done=120)
    assert "Model run on" not in line(page(track))  # not said before the run said it
    # as submissions.baseline_runs reports it once the model is loaded on a GPU worker
    assert BASELINES.state.heartbeat(job_row(track), attempt, device="cuda:0, NVIDIA H200", batch_size=128)
    assert line(page(track)).endswith("6 of 15 rows on the board so far. Model run on: cuda:0, NVIDIA H200.")
