"""Downloads of the catalogue: a task's public inputs (never its gold), with their licence.

The inputs are large (the CheckList items are 26.6 MB of JSON) and change only with a new test
set, so their answers carry an ETag and Last-Modified from the test set and a client that holds
the current copy gets a 304 before the inputs are even read from the database."""
import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.http.response import HttpResponseBase
from django.utils import timezone

from core.brief_memo import briefly_remembered
from core.conditional import (
    AnyResponse,
    stored_file_answer,
    strong_etag,
    unchanged,
    weaken_for_gzip,
    with_validators,
)
from core.db import state_cursor

from .models import Benchmark, Task, TestSet, Visibility

INPUTS_HIDDEN = ("The test inputs of {slug} are hidden: they are never served. Upload a model (kind=model), "
                 "which runs on them on the server; see docs/model_submissions.md.")


@dataclass(frozen=True)
class InputsSource:
    """What an answer of a task's inputs needs before it reads anything large (``inputs_source``)."""

    task: Task  # an unsaved copy: id, slug, kind, visibility, inputs access
    test_set: TestSet | None  # the identity of its current scored test set; None before the first import
    license: dict[str, str] | None  # its benchmark's, as the download states it; None when none is stated


@functools.cache
def _inputs_sql() -> str:
    tables = {"task": Task._meta.db_table, "benchmark": Benchmark._meta.db_table, "test_set": TestSet._meta.db_table}
    return f"""
        SELECT t.id, t.kind, t.visibility, t.inputs, b.license, b.license_url,
               ts.id, ts.split, ts.version, ts.checksum, ts.imported_at
        FROM {tables["task"]} t JOIN {tables["benchmark"]} b ON b.id = t.benchmark_id
        LEFT JOIN {tables["test_set"]} ts ON ts.task_id = t.id AND ts.is_current
        WHERE t.slug = %s"""


@briefly_remembered
def inputs_source(slug: str) -> InputsSource | None:
    """The task ``slug``'s inputs source (None if there is no such task), whoever may see it: one
    raw query, never past the gold or the inputs. Three ORM queries (the task, its test set, its
    benchmark) cost more to compile than the stored file takes to serve. Read again after
    ``PAGE_STATE_SECONDS`` (core/brief_memo.py); the unsaved copies it holds are shared, not to be changed."""
    with state_cursor() as cursor:
        cursor.execute(_inputs_sql(), [slug])
        rows = cursor.fetchall()
    if not rows:
        return None
    pk, kind, visibility, inputs, license_name, license_url = rows[0][:6]
    task = Task(pk=pk, slug=slug, kind=kind, visibility=visibility, inputs=inputs)
    test_set = None
    for *_, set_id, split, version, checksum, imported_at in rows:
        if set_id is not None and split == task.scored_split:
            if isinstance(imported_at, str):  # SQLite hands raw SQL its text
                imported_at = datetime.fromisoformat(imported_at)
            if timezone.is_naive(imported_at):
                imported_at = timezone.make_aware(imported_at, UTC)
            test_set = TestSet(pk=set_id, task=task, split=split, version=version, checksum=checksum,
                               imported_at=imported_at)
    return InputsSource(task, test_set, {"name": license_name, "url": license_url} if license_name else None)


def licensed(inputs: Any, license: dict[str, str] | None) -> Any:
    """The inputs with their licence as the first member (``license``), unless the dataset's own
    layout already has one or is not an object."""
    if license is None or not isinstance(inputs, dict) or "license" in inputs:
        return inputs
    return {"license": license, **inputs}


def inputs_etag(test_set: TestSet, representation: str, license: dict[str, str] | None = None) -> str:
    """Strong: the inputs of a test set row are written once, with the version and the checksum
    of the file they come from (a different file needs a new version, benchmark.importers); the
    row's id tells a re-import apart. ``representation``: how they are encoded (the download's
    JSON, or the API's renderer), since a strong ETag names the bytes; so does the licence they
    carry, which a maintainer may state later."""
    return strong_etag("inputs", test_set.pk, test_set.version, test_set.checksum, representation,
                       *(license or {}).values())


def inputs_modified(test_set: TestSet) -> datetime:
    return test_set.imported_at


def inputs_answer(request: HttpRequest, source: InputsSource, representation: str,
                  respond: Callable[[Any], HttpResponse], encode: Callable[[Any], bytes] | None = None,
                  content_type: str = "application/json", *, streamed: bool = False) -> HttpResponseBase:
    """The 304 when the client holds the current inputs, else their answer with the validators;
    the inputs are read from the database only when there is no 304 to give. With ``encode`` the
    answer's bytes are built once per test-set version and representation, plain and gzipped, and
    kept on disk (``core.conditional.stored_file_answer``): later downloads read a file, or with
    ``streamed`` hand it to the server as a static file is. Without it (a representation that
    depends on the request, e.g. the browsable API) ``respond(inputs)`` answers. A hidden task's
    inputs are for staff: no shared cache may keep them."""
    task, test_set, license = source.task, source.test_set, source.license
    assert test_set is not None  # for the type checker: the views answer 404 without one
    etag, modified = inputs_etag(test_set, representation, license), inputs_modified(test_set)
    current = unchanged(request, etag, modified, private=task.is_hidden)
    if current is not None:
        return with_license_link(current, license)
    if encode is None:
        response = with_validators(respond(licensed(read_inputs(test_set), license)), etag, modified,
                                   private=task.is_hidden)
        return with_license_link(response, license)
    stem = Path(settings.MEDIA_ROOT) / "inputs" / etag.strip('"')
    stored = stored_file_answer(request, stem, lambda: encode(licensed(read_inputs(test_set), license)),
                                content_type=content_type, streamed=streamed)
    return with_license_link(weaken_for_gzip(with_validators(stored, etag, modified, private=task.is_hidden)),
                             license)


def with_license_link(response: AnyResponse, license: dict[str, str] | None) -> AnyResponse:
    """``Link: <url>; rel="license"`` (RFC 4946): the licence, for a client that reads headers only."""
    if license and license["url"]:
        response["Link"] = f'<{license["url"]}>; rel="license"'
    return response


def read_inputs(test_set: TestSet) -> Any:
    return TestSet.objects.only("public_inputs").get(pk=test_set.pk).public_inputs


def download_bytes(inputs: Any) -> bytes:
    """The download's bytes, as ``JsonResponse`` encodes them (UTF-8, not ASCII-escaped)."""
    return json.dumps(inputs, cls=DjangoJSONEncoder, ensure_ascii=False).encode()


def task_inputs_download(request: HttpRequest, slug: str) -> HttpResponseBase:
    # The hot path: one query decides between a 304 and the stored file, streamed.
    source = inputs_source(slug)
    if source is None or source.task.visibility not in Visibility.reachable_by(request.user):
        raise Http404("No Task matches the given query.")
    test_set = source.test_set
    if test_set is None:
        return JsonResponse({"error": f"Task {slug} has no test set yet."}, status=404)
    if source.task.inputs_hidden:
        return JsonResponse({"error": INPUTS_HIDDEN.format(slug=slug)}, status=403)

    response = inputs_answer(request, source, "download", JsonResponse, download_bytes, streamed=True)
    if response.status_code == 200:
        response["Content-Disposition"] = f'attachment; filename="{slug}-{test_set.version}-inputs.json"'
    return response
