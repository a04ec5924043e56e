import copy
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from accounts.http import AuthenticatedHttpRequest
from benchmark.models import Task
from core.jobs import WAITING
from scoring.analysis.features import EXTRACTOR_METHODS

from . import intake
from .forms import PredictionUploadForm
from .models import Status, Submission


@login_required
def submit(request: AuthenticatedHttpRequest, slug: str) -> HttpResponse:
    task = get_object_or_404(Task.objects.visible_to(request.user), slug=slug)
    quota = intake.quota_status(request.user, task)
    rejected = None
    if request.method == "POST":
        form = PredictionUploadForm(request.POST, request.FILES, task=task)
        if form.is_valid():
            data = form.cleaned_data
            try:
                submission = intake.submit(
                    user=request.user, task=task, uploaded_file=data["file"], method_name=data["method_name"],
                    description=data["description"], url=data["url"], public=data["public"],
                    kind=data.get("kind") or Submission.PREDICTIONS,
                )
            except intake.SubmissionRefused as exc:
                form.add_error(None, exc.message)
            else:
                if submission.status == Status.REJECTED:
                    rejected = submission
                    form.add_error("file", submission.error_message)
                else:
                    return redirect(submission)
    else:
        form = PredictionUploadForm(task=task)
    status = 400 if request.method == "POST" else 200
    # The second call finds the test set the first one found.
    spec = (task.current_test_set().key_spec or {}) if task.current_test_set() else {}  # type: ignore[union-attr]
    return render(request, "submissions/submit.html", {
        "task": task, "form": form, "quota": quota, "rejected": rejected,
        "max_bytes": settings.SUBMISSION_MAX_BYTES,
        "letters": spec.get("option_letters", "ABCD"), "labels": spec.get("labels", []),
    }, status=status)


def visible_submission(request: HttpRequest, pk: int) -> Submission:
    submission = get_object_or_404(
        Submission.objects.select_related("task", "test_set", "user__profile").defer(
            "item_scores", "test_set__gold", "test_set__public_inputs", "test_set__diagnostics"), pk=pk)
    if submission.user_id != getattr(request.user, "id", None) and not (
        submission.public and submission.status == Status.SCORED
    ):
        raise Http404("No such submission")
    return submission


def present_diagnostics(diagnostics: dict[str, Any] | None) -> dict[str, Any]:
    """Display-ready copy of the stored diagnostics: ordered group rows for charts, readable
    cue names and label distributions. The stored JSON stays as the API returns it."""


    d = copy.deepcopy(diagnostics or {})
    for test in (d.get("question_types") or {}).get("categorical", {}).get("tests", []):
        groups = test.get("groups", {})
        test["group_rows"] = [{"label": name, **groups[name]} for name in test.get("order", groups)]
    icq = d.get("icq") or {}
    for row in icq.get("accuracy_test", []) + icq.get("distribution_test", []):
        row["cue"] = f"{row['feature']}={row['value']}"
    for row in icq.get("distribution_test", []):
        row["predicted_text"] = ", ".join(f"{k}: {v:.2f}" for k, v in row.get("predicted_dist", {}).items())
        row["reference_text"] = ", ".join(f"{k}: {v:.2f}" for k, v in row.get("reference_dist", {}).items())
    return d


def present_details(details: dict[str, Any] | None) -> dict[str, Any]:
    """Display-ready skill gaps (grouped for charts) and CheckList rates."""
    d = dict(details or {})
    gaps = [g for g in (d.get("skills") or {}).values() if g.get("gap") is not None]
    if gaps:
        labels = {"reading": "Reading", "reasoning": "Reasoning", "reasoning_with_query": "Reasoning with the query"}
        d["skill_rows"] = gaps
        d["skill_groups"] = [
            {"label": label, "rows": [{**g, "label": f"{g['skill']} {g['name']}"} for g in gaps if g["group"] == group]}
            for group, label in labels.items() if any(g["group"] == group for g in gaps)
        ]
    return d


def detail(request: HttpRequest, pk: int) -> HttpResponse:
    submission = visible_submission(request, pk)
    ahead = None
    if submission.status == Status.QUEUED:
        ahead = Submission.objects.filter(
            status__in=[Status.QUEUED, Status.RUNNING], queued_at__lt=submission.queued_at
        ).count()
    rows = []
    for key, label in submission.task.metric_columns:
        ci = submission.ci.get(key)
        rows.append({"label": label, "value": submission.scores.get(key),
                     "low": ci[0] if ci else None, "high": ci[1] if ci else None})
    steps = [Status.UPLOADED, Status.QUEUED, Status.RUNNING, Status.SCORED]
    positions: dict[str, int] = {Status.UPLOADED: 0, Status.QUEUED: 1, Status.RUNNING: 2, Status.SCORED: 3}
    reached = positions.get(submission.status, -1)
    return render(request, "submissions/detail.html", {
        "submission": submission,
        "rows": rows,
        "ahead": ahead,
        "steps": [{"name": s.label, "done": i <= reached, "current": i == reached} for i, s in enumerate(steps)],
        "is_owner": submission.user_id == getattr(request.user, "id", None),
        "refresh": not submission.is_terminal or submission.diagnostics_status in WAITING,
        "diagnostics": present_diagnostics(submission.diagnostics),
        "icq_extractor": EXTRACTOR_METHODS.get(submission.task.language, ""),
        "details": present_details(submission.details),
    })


@login_required
def my_submissions(request: AuthenticatedHttpRequest) -> HttpResponse:
    submissions = (
        Submission.objects.filter(user=request.user).select_related("task")
        .defer("item_scores").order_by("-created_at", "-id")
    )
    return render(request, "submissions/list.html", {"submissions": submissions})


def owned(request: HttpRequest, pk: int) -> Submission:
    return get_object_or_404(Submission.objects.defer("item_scores"), pk=pk, user=request.user)


@login_required
@require_POST
def cancel(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    submission = owned(request, pk)
    try:
        intake.cancel(submission)
        messages.success(request, "Submission cancelled.")
    except intake.SubmissionRefused as exc:
        messages.error(request, exc.message)
    return redirect(submission)


@login_required
@require_POST
def toggle_public(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    submission = owned(request, pk)
    submission.public = not submission.public
    submission.save(update_fields=["public"])
    messages.success(request, "Shown on the public leaderboard." if submission.public
                     else "Hidden from the leaderboard.")
    return redirect(submission)
