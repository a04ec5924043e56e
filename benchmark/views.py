"""Downloads of the catalogue: a task's public inputs (never its gold).

The inputs are large (the CheckList items are 26.6 MB of JSON) and change only with a new test
set, so their answers carry an ETag and Last-Modified from the test set and a client that holds
the current copy gets a 304 before the inputs are even read from the database."""
from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404

from core.conditional import strong_etag, unchanged, with_validators

from .models import Task, TestSet

INPUTS_HIDDEN = ("The test inputs of {slug} are hidden: they are never served. Upload a model (kind=model), "
                 "which runs on them on the server; see docs/model_submissions.md.")


def inputs_etag(test_set: TestSet, representation: str) -> str:
    """Strong: the inputs of a test set row are written once, with the version and the checksum
    of the file they come from (a different file needs a new version, benchmark.importers); the
    row's id tells a re-import apart. ``representation``: how they are encoded (the download's
    JSON, or the API's renderer), since a strong ETag names the bytes."""
    return strong_etag("inputs", test_set.pk, test_set.version, test_set.checksum, representation)


def inputs_modified(test_set: TestSet) -> datetime:
    return test_set.imported_at


def inputs_answer(request: HttpRequest, task: Task, test_set: TestSet, representation: str,
                  respond: Callable[[Any], HttpResponse]) -> HttpResponse:
    """The 304 when the client holds the current inputs, else ``respond(inputs)`` with the
    validators; the inputs are read from the database only in that case. A hidden task's inputs
    are for staff: no shared cache may keep them."""
    etag, modified = inputs_etag(test_set, representation), inputs_modified(test_set)
    current = unchanged(request, etag, modified, private=task.is_hidden)
    if current is not None:
        return current
    inputs = TestSet.objects.only("public_inputs").get(pk=test_set.pk).public_inputs
    return with_validators(respond(inputs), etag, modified, private=task.is_hidden)


def task_inputs_download(request: HttpRequest, slug: str) -> HttpResponse:
    task = get_object_or_404(Task.objects.visible_to(request.user), slug=slug)
    test_set = task.current_test_set()  # without the inputs and the gold
    if test_set is None:
        return JsonResponse({"error": f"Task {task.slug} has no test set yet."}, status=404)
    if task.inputs_hidden:
        return JsonResponse({"error": INPUTS_HIDDEN.format(slug=task.slug)}, status=403)

    def download(inputs: Any) -> HttpResponse:
        response = JsonResponse(inputs, json_dumps_params={"ensure_ascii": False})
        response["Content-Disposition"] = f'attachment; filename="{task.slug}-{test_set.version}-inputs.json"'
        return response

    return inputs_answer(request, task, test_set, "download", download)
