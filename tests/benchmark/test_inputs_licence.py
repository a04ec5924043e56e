"""The inputs carry their licence (benchmark/views.py): the benchmark's, as the first member of
inputs.json and of the API's inputs, with a ``Link: rel="license"`` header; a licence stated later
is a new ETag (so no client keeps the copy without it); no licence stated, no member."""
import json

import pytest
from django.test import Client

from benchmark.config_file import read
from benchmark.models import Benchmark
from tests.factories import make_task

pytestmark = pytest.mark.django_db

ROUTES = ["/tasks/expmrc-squad/inputs.json", "/api/v1/tasks/expmrc-squad/inputs/"]
CC_BY_SA = {"name": "CC BY-SA 4.0", "url": "https://creativecommons.org/licenses/by-sa/4.0/"}


def body_of(response):
    raw = b"".join(response.streaming_content) if response.streaming else response.content
    return json.loads(raw)


@pytest.mark.parametrize("url", ROUTES)
def test_the_inputs_state_the_licence_of_their_benchmark(url):
    task = make_task("expmrc-squad")
    before = Client().get(url)
    unlicensed = body_of(before)  # a stored file is streamed: read once
    assert "license" not in unlicensed and not before.has_header("Link")
    Benchmark.objects.filter(pk=task.benchmark_id).update(license=CC_BY_SA["name"], license_url=CC_BY_SA["url"])
    after = Client().get(url, HTTP_IF_NONE_MATCH=before["ETag"])
    assert after.status_code == 200 and after["ETag"] != before["ETag"]
    body = body_of(after)
    assert next(iter(body)) == "license" and body["license"] == CC_BY_SA
    assert body["data"] == unlicensed["data"]  # the inputs themselves are unchanged
    assert after["Link"] == f'<{CC_BY_SA["url"]}>; rel="license"'
    assert Client().get(url, HTTP_IF_NONE_MATCH=after["ETag"]).status_code == 304


def test_the_demo_file_states_cc_by_sa_for_expmrc():
    benchmarks = {entry.slug: entry.fields for entry in read("benchmark_files/demo.yaml").benchmarks}
    for slug in ("expmrc", "expmrc-hidden"):
        assert (benchmarks[slug]["license"], benchmarks[slug]["license_url"]) == (CC_BY_SA["name"], CC_BY_SA["url"])


def test_the_deprecated_path_keeps_the_licence_beside_its_successor():
    task = make_task("expmrc-squad")
    Benchmark.objects.filter(pk=task.benchmark_id).update(license=CC_BY_SA["name"], license_url=CC_BY_SA["url"])
    links = Client().get("/api/tasks/expmrc-squad/inputs/")["Link"]
    assert f'<{CC_BY_SA["url"]}>; rel="license"' in links and 'rel="successor-version"' in links
