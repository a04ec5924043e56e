"""Downloads of the catalogue: a task's public inputs (never its gold), with their licence.

The inputs are large (the CheckList items are 26.6 MB of JSON) and change only with a new test
set, so their answers carry an ETag and Last-Modified from the test set and a client that holds
the current copy gets a 304 before the inputs are even read from the database."""
import json
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404

from core.conditional import stored_file_answer, strong_etag, unchanged, weaken_for_gzip, with_validators

from .models import Task, TestSet

INPUTS_HIDDEN = ("The test inputs of {slug} are hidden: they are never served. Upload a model (kind=model), "
                 "which runs on them on the server; see docs/model_submissions.md.")


def inputs_license(task: Task) -> dict[str, str] | None:
    """The licence of the task's inputs as the download states it (its benchmark's), or None
    when the benchmark states none."""
    benchmark = task.benchmark
    return {"name": benchmark.license, "url": benchmark.license_url} if benchmark.license else None


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


def inputs_answer(request: HttpRequest, task: Task, test_set: TestSet, representation: str,
                  respond: Callable[[Any], HttpResponse], encode: Callable[[Any], bytes] | None = None,
                  content_type: str = "application/json") -> HttpResponse:
    """The 304 when the client holds the current inputs, else their answer with the validators;
    the inputs are read from the database only when there is no 304 to give. With ``encode`` the
    answer's bytes are built once per test-set version and representation, plain and gzipped, and
    kept on disk (``core.conditional.stored_file_answer``): later downloads read a file. Without
    it (a representation that depends on the request, e.g. the browsable API) ``respond(inputs)``
    answers. A hidden task's inputs are for staff: no shared cache may keep them."""
    license = inputs_license(task)
    etag, modified = inputs_etag(test_set, representation, license), inputs_modified(test_set)
    current = unchanged(request, etag, modified, private=task.is_hidden)
    if current is not None:
        return with_license_link(current, license)
    if encode is None:
        response = with_validators(respond(licensed(read_inputs(test_set), license)), etag, modified,
                                   private=task.is_hidden)
        return with_license_link(response, license)
    stem = Path(settings.MEDIA_ROOT) / "inputs" / etag.strip('"')
    response = stored_file_answer(request, stem, lambda: encode(licensed(read_inputs(test_set), license)),
                                  content_type=content_type)
    return with_license_link(weaken_for_gzip(with_validators(response, etag, modified, private=task.is_hidden)),
                             license)


def with_license_link(response: HttpResponse, license: dict[str, str] | None) -> HttpResponse:
    """``Link: <url>; rel="license"`` (RFC 4946): the licence, for a client that reads headers only."""
    if license and license["url"]:
        response["Link"] = f'<{license["url"]}>; rel="license"'
    return response


def current_inputs_version(task: Task) -> TestSet | None:
    """The task's current test set, as far as its inputs' answers need it (id, version,
    checksum, import date; an unsaved copy). A wider read of the row costs a walk past its gold
    and inputs on SQLite (45 ms for the CheckList set), on every download."""
    found = (TestSet.objects.filter(task=task, split=task.scored_split, is_current=True)
             .values_list("pk", "version", "checksum", "imported_at").first())
    if found is None:
        return None
    pk, version, checksum, imported_at = found
    return TestSet(pk=pk, task=task, split=task.scored_split, version=version, checksum=checksum,
                   imported_at=imported_at)


def read_inputs(test_set: TestSet) -> Any:
    return TestSet.objects.only("public_inputs").get(pk=test_set.pk).public_inputs


def download_bytes(inputs: Any) -> bytes:
    """The download's bytes, as ``JsonResponse`` encodes them (UTF-8, not ASCII-escaped)."""
    return json.dumps(inputs, cls=DjangoJSONEncoder, ensure_ascii=False).encode()


def task_inputs_download(request: HttpRequest, slug: str) -> HttpResponse:
    task = get_object_or_404(Task.objects.visible_to(request.user), slug=slug)
    test_set = current_inputs_version(task)  # without the inputs and the gold
    if test_set is None:
        return JsonResponse({"error": f"Task {task.slug} has no test set yet."}, status=404)
    if task.inputs_hidden:
        return JsonResponse({"error": INPUTS_HIDDEN.format(slug=task.slug)}, status=403)

    response = inputs_answer(request, task, test_set, "download", JsonResponse, download_bytes)
    if response.status_code == 200:
        response["Content-Disposition"] = f'attachment; filename="{task.slug}-{test_set.version}-inputs.json"'
    return response
