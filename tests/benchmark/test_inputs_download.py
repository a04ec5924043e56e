"""Conditional GET on the public inputs (benchmark/views.py, the API's inputs action): a strong
ETag and Last-Modified from the test set, a 304 without reading the inputs when the client holds
the current copy, gzip as before, a new test set version a new ETag, a hidden task still a 404."""
import gzip
import json

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils.http import http_date
from rest_framework.renderers import JSONRenderer

from benchmark.models import Visibility
from tests.factories import FIXTURES, logged_in, make_task, make_user

pytestmark = pytest.mark.django_db

ROUTES = ["/api/v1/tasks/expmrc-squad/inputs/", "/api/tasks/expmrc-squad/inputs/", "/tasks/expmrc-squad/inputs.json"]


def body(response):
    """The answer's bytes: a stored file is streamed, so it is read once and kept."""
    if not hasattr(response, "read_once"):
        response.read_once = response.getvalue()
    return response.read_once


def inputs_read(queries):
    return [q["sql"] for q in queries if "public_inputs" in q["sql"].split("FROM")[0]]


@pytest.mark.parametrize("url", ROUTES)
def test_a_client_holding_the_current_inputs_gets_a_304_without_them_being_read(url):
    task = make_task("expmrc-squad")
    first = Client().get(url)
    etag = first["ETag"]
    assert first.status_code == 200 and json.loads(body(first))["data"]
    assert etag.startswith('"') and len(etag) == 34  # strong: no W/ when the answer is not compressed
    assert first["Last-Modified"] == http_date(task.current_test_set().imported_at.timestamp())
    assert "no-cache" in first["Cache-Control"] and "private" not in first["Cache-Control"]

    with CaptureQueriesContext(connection) as queries:
        again = Client().get(url, HTTP_IF_NONE_MATCH=etag)
    assert again.status_code == 304 and body(again) == b""
    assert again["ETag"] == etag and again["Last-Modified"] == first["Last-Modified"]
    assert inputs_read(queries.captured_queries) == []
    assert Client().get(url, HTTP_IF_MODIFIED_SINCE=first["Last-Modified"]).status_code == 304

    # Built once per test-set version: a later download reads the stored bytes, not the inputs.
    with CaptureQueriesContext(connection) as queries:
        other = Client().get(url, HTTP_IF_NONE_MATCH='"somebody-elses-copy"')
    assert other.status_code == 200 and body(other) == body(first)
    assert inputs_read(queries.captured_queries) == []
    zipped = Client().get(url, HTTP_ACCEPT_ENCODING="gzip")
    assert zipped["Content-Encoding"] == "gzip" and gzip.decompress(body(zipped)) == body(first)


def test_the_stored_download_has_the_bytes_the_inputs_encode_to():
    task = make_task("expmrc-squad")
    inputs = task.current_test_set().public_inputs
    for url, encoded in ((ROUTES[0], JSONRenderer().render(inputs)),
                         ("/tasks/expmrc-squad/inputs.json", json.dumps(inputs, ensure_ascii=False).encode())):
        for _ in range(2):  # built, then read back
            answer = Client().get(url)
            assert body(answer) == encoded and answer["Content-Type"] == "application/json", url
    assert "attachment" in Client().get("/tasks/expmrc-squad/inputs.json")["Content-Disposition"]
    indented = Client().get(ROUTES[0], HTTP_ACCEPT="application/json; indent=2")
    assert json.loads(body(indented)) == inputs and b"\n  " in body(indented)


@pytest.mark.parametrize("url", ROUTES)
def test_gzip_still_applies_and_its_weak_etag_is_honoured(url):
    make_task("expmrc-squad")
    plain = Client().get(url)
    zipped = Client().get(url, HTTP_ACCEPT_ENCODING="gzip")
    assert zipped["Content-Encoding"] == "gzip" and len(body(zipped)) < len(body(plain))
    assert gzip.decompress(body(zipped)) == body(plain)
    assert zipped["ETag"] == "W/" + plain["ETag"]  # GZipMiddleware: other bytes, same meaning
    again = Client().get(url, HTTP_ACCEPT_ENCODING="gzip", HTTP_IF_NONE_MATCH=zipped["ETag"])
    assert again.status_code == 304 and body(again) == b""


def test_a_new_version_is_a_new_etag_and_each_representation_has_its_own():
    make_task("expmrc-squad")
    url = "/api/v1/tasks/expmrc-squad/inputs/"
    old = Client().get(url)["ETag"]
    assert Client().get(url + "?format=api")["ETag"] != old  # the browsable page is other bytes
    assert Client().get("/tasks/expmrc-squad/inputs.json")["ETag"] != old

    make_task("expmrc-squad", version="v2", path=FIXTURES / "expmrc-squad-dev.json")
    renewed = Client().get(url, HTTP_IF_NONE_MATCH=old)
    assert renewed.status_code == 200 and renewed["ETag"] != old and json.loads(body(renewed))["data"]


def test_a_hidden_tasks_inputs_are_private_and_a_404_even_to_a_matching_etag():
    task = make_task("expmrc-squad")
    staff = make_user("maintainer")
    staff.is_staff = True
    staff.save()
    task.visibility = Visibility.HIDDEN
    task.save()
    for url in ROUTES:
        answer = logged_in(staff).get(url)
        assert answer.status_code == 200 and answer["Cache-Control"] == "private, no-cache", url
        assert logged_in(staff).get(url, HTTP_IF_NONE_MATCH=answer["ETag"])["Cache-Control"] == "private, no-cache"
        # The ETag must not confirm that the task exists.
        assert Client().get(url, HTTP_IF_NONE_MATCH=answer["ETag"]).status_code == 404, url


def test_anonymous_api_reads_of_the_inputs_skip_drf_with_drfs_answer(drf_dispatches):
    make_task("expmrc-squad")
    url = "/api/v1/tasks/expmrc-squad/inputs/"
    dispatched = drf_dispatches
    through_drf = Client().get(url, {"format": "json"})  # a format parameter: DRF answers (and stores the file)
    assert through_drf.status_code == 200 and dispatched == [url]
    stored = Client().get(url)
    assert stored.status_code == 200 and dispatched == [url]  # the stored file, without DRF
    assert body(stored) == body(through_drf)
    for header in ("Content-Type", "ETag", "Last-Modified", "Cache-Control", "Allow", "Vary"):
        assert stored[header] == through_drf[header], header
    assert Client().get(url, HTTP_IF_NONE_MATCH=stored["ETag"]).status_code == 304 and dispatched == [url]
    # What the store cannot answer is DRF's, with its error shape.
    missing = Client().get("/api/v1/tasks/no-such-task/inputs/")
    assert missing.status_code == 404 and missing["Content-Type"] == "application/problem+json"
    assert dispatched == [url, "/api/v1/tasks/no-such-task/inputs/"]
