"""What anyone may download of a public entry (``submissions.selectors.public_downloads``):
its results, and where the task's maintainers allow it, its prediction file or its model bundle
or interpreter code.

The results are what the entry's page and the API already show: the aggregate scores with
their intervals, the declarations, the public details and the published diagnostics; never
per-question rows (those of a hidden split stay on the server). An entry that is not public is
a 404, as on its page; a public entry whose file is not offered is a 403 saying why."""
from pathlib import PurePath
from typing import Any

from django.http import FileResponse, Http404, HttpRequest, HttpResponse, JsonResponse
from django.http.response import HttpResponseBase
from django.shortcuts import get_object_or_404

from submissions import diagnostics
from submissions.models import Submission
from submissions.selectors import PublicDownloads, public_downloads
from submissions.serializers import SubmissionSerializer

#: The columns the downloads read: never the per-item rows (nor those held back by a phase).
HEAVY = ("item_scores", "held_item_scores", "test_set__gold", "test_set__public_inputs", "test_set__diagnostics")


def public_entry(pk: int) -> tuple[Submission, PublicDownloads]:
    submission = get_object_or_404(
        Submission.objects.select_related("task__benchmark", "test_set", "phase", "user__profile",
                                          "submitting_team").defer(*HEAVY), pk=pk)
    offered = public_downloads(submission)
    if not offered.results:
        raise Http404("No such entry")  # as its page: a private entry's existence is not confirmed
    return submission, offered


def results_document(submission: Submission) -> dict[str, Any]:
    """The entry's results as anyone may read them (the API's public answer, plus its diagnostics)."""
    entry = dict(SubmissionSerializer(submission, context={}).data)
    entry.pop("run_log", None)  # the owner's only; an anonymous serializer leaves it out anyway
    return {"benchmark": submission.task.benchmark.slug, **entry,
            "diagnostics": diagnostics.published(submission.diagnostics, hidden=submission.test_set.is_hidden)}


def entry_results(request: HttpRequest, pk: int) -> HttpResponse:
    submission, _ = public_entry(pk)
    response = JsonResponse(results_document(submission), json_dumps_params={"ensure_ascii": False, "indent": 1})
    response["Content-Disposition"] = f'attachment; filename="entry-{submission.pk}-results.json"'
    return response


def withheld(offered: PublicDownloads, nothing: str) -> HttpResponse:
    return JsonResponse({"error": offered.withheld or nothing}, status=403)


def entry_predictions(request: HttpRequest, pk: int) -> HttpResponseBase:
    submission, offered = public_entry(pk)
    if not offered.predictions:
        return withheld(offered, "This entry has no prediction file to download.")
    return FileResponse(submission.file.open("rb"), as_attachment=True, content_type="application/json",
                        filename=f"entry-{submission.pk}-predictions.json")


def entry_files(request: HttpRequest, pk: int) -> HttpResponseBase:
    submission, offered = public_entry(pk)
    if not offered.files:
        return withheld(offered, "This entry has no model or code to download.")
    suffix = PurePath(submission.file.name).suffix  # the stored name's, from a fixed list
    return FileResponse(submission.file.open("rb"), as_attachment=True, content_type="application/octet-stream",
                        filename=f"entry-{submission.pk}-{submission.kind}{suffix}")


