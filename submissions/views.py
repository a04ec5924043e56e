import copy
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.db.models import Count
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext, gettext_noop, pgettext
from django.views.decorators.http import require_POST

from accounts.http import AuthenticatedHttpRequest
from accounts.models import profile_of
from benchmark.models import Task
from core.jobs import WAITING
from scoring.analysis import reading_limits
from scoring.analysis.features import EXTRACTOR_METHODS

from . import diagnostics, intake, model_runs, phases, rescoring
from .forms import EntryEditForm, PredictionUploadForm, system_names_of
from .models import DevSetUse, PhaseSelection, Status, Submission
from .selectors import board_placement, public_downloads


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
                    kind=data.get("kind") or task.submission_kinds[0], declarations=declarations_of(data),
                )
            except intake.DeclarationRequired as exc:
                for name, why in exc.missing:
                    form.add_error(name, why)
            except intake.SubmissionRefused as exc:
                form.add_error(None, exc.message)
            else:
                if submission.status == Status.REJECTED:
                    rejected = submission
                    form.add_error("file", submission.error_message)
                else:
                    return redirect(submission)
    else:
        form = PredictionUploadForm(task=task, initial={"public": profile_of(request.user).default_public})
    status = 400 if request.method == "POST" else 200
    test_set = task.current_test_set()
    spec = (test_set.key_spec or {}) if test_set else {}
    return render(request, "submissions/submit.html", {
        "task": task, "form": form, "quota": quota, "rejected": rejected,
        "max_bytes": settings.SUBMISSION_MAX_BYTES,
        "letters": spec.get("option_letters", "ABCD"), "labels": spec.get("labels", []),
        # The interpreter contract of a QUACKIE track (docs/sandbox.md): the model and the run's limits.
        "code_max_bytes": settings.CODE_MAX_BYTES,
        # The model contract (docs/model_submissions.md): the bundle limit and the run's budget.
        "model_max_bytes": intake.model_max_bytes(task),
        "model_budget": model_runs.model_budget(task),
        "sandbox_limits": {"per_sample_seconds": f"{settings.SANDBOX_SAMPLE_SECONDS:g}",
                           "total_minutes": f"{settings.SANDBOX_TOTAL_SECONDS / 60:g}"},
        "track_model_kind": track_model_kind(task),
    }, status=status)


def phase_choice(request: HttpRequest, submission: Submission) -> dict[str, Any] | None:
    """Whether the visitor may pick this entry to count in its phase's final ranking (its team's
    or their own scored entry, before the phase is closed), and whether it is the pick."""
    phase = submission.phase
    user = request.user
    if phase is None or phase.closed_at is not None or submission.status != Status.SCORED:
        return None
    if not isinstance(user, User) or submission.entrant != phases.entrant_of(user):
        return None
    chosen = PhaseSelection.objects.filter(phase=phase, entrant=submission.entrant,
                                           submission=submission).exists()
    return {"phase": phase, "chosen": chosen}


@login_required
@require_POST
def select_for_phase(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    submission = get_object_or_404(Submission.objects.select_related("phase"), pk=pk)
    if submission.phase is None:
        raise Http404("This entry was not made in a phase.")
    try:
        phases.select_entry(request.user, submission.phase, submission)
    except phases.SelectionRefused as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, gettext("Entry #%(id)s now counts in phase %(phase)s.")
                         % {"id": submission.pk, "phase": repr(submission.phase.name)})
    return redirect(submission)


def declarations_of(data: dict[str, Any]) -> dict[str, str]:
    """The upload's declarations (``Submission.DECLARATION_FIELDS``) from a form's or serializer's data."""
    declared = {name: data.get(name) or "" for name in Submission.DECLARATION_FIELDS}
    declared["dev_set_use"] = declared["dev_set_use"] or DevSetUse.NONE  # not said: none
    return declared


def track_model_kind(task: Task) -> str:
    """How the submit page names a QUACKIE track's hosted model ("" for other tasks)."""
    track = getattr(task, "track", None) if task.kind_definition.has_tracks else None
    if track is None:
        return ""
    return f"{track.hosted_model.name}, {track.hosted_model.described}"


def visible_submission(request: HttpRequest, pk: int) -> Submission:
    submission = get_object_or_404(
        Submission.objects.select_related("task", "test_set", "user__profile").defer(
            "item_scores", "test_set__gold", "test_set__public_inputs", "test_set__diagnostics"), pk=pk)
    if submission.user_id != getattr(request.user, "id", None) and not (
        submission.public and submission.status == Status.SCORED
    ):
        raise Http404("No such submission")
    if submission.task.is_hidden and not request.user.is_staff:
        raise Http404("No such submission")  # a hidden task is staff only, its entries too
    return submission


def present_diagnostics(diagnostics: dict[str, Any] | None) -> dict[str, Any]:
    """Display-ready copy of the stored diagnostics: ordered group rows for charts, readable
    cue names and label distributions. The stored JSON stays as the API returns it."""


    d = copy.deepcopy(diagnostics or {})
    for test in (d.get("question_types") or {}).get("categorical", {}).get("tests", []):
        groups = test.get("groups", {})
        test["group_rows"] = [{"label": name, **groups[name]} for name in test.get("order", groups)]
        if "statistic_name" not in test:
            # Computed before the size-weighted statistic: the stored statistic and flag are Luo's.
            test.update(statistic_published=test.get("statistic"), p_value_published=test.get("p_value"),
                        statistic=None, p_value=None, p_value_se=None, decided_as_published=True)
    # What the tests can and cannot see (false-alarm rates, power), from seeded simulations.
    d["limits"] = reading_limits.FIGURES
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
        labels = {"reading": pgettext("skill group", "Reading"), "reasoning": pgettext("skill group", "Reasoning"),
                  "reasoning_with_query": pgettext("skill group", "Reasoning with the query")}
        d["skill_rows"] = gaps
        d["skill_scale"] = max(abs(g["gap"]) for g in gaps) or 1.0  # one scale for the three group charts
        d["skill_groups"] = [
            {"label": label, "rows": [{**g, "label": f"{g['skill']} {g['name']}"} for g in gaps if g["group"] == group]}
            for group, label in labels.items() if any(g["group"] == group for g in gaps)
        ]
    return d


def unranked_result(submission: Submission) -> str:
    """Why this scored result can never take a rank, whoever sees it and wherever it is listed
    ("" when it can): the page says so beside the score, as prominently as the score itself."""
    if submission.status != Status.SCORED:
        return ""
    task = submission.task
    reason = task.kind_definition.unranked_reason(submission.details or {})
    if not reason and task.primary_metric and (submission.scores or {}).get(task.primary_metric) is None:
        reason = "not ranked: its score is undefined"
    return reason.removeprefix("not ranked: ")


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
        "unranked": unranked_result(submission),
        "submission": submission,
        # What anyone may download of it (leaderboards.downloads serves them).
        "downloads": public_downloads(submission),
        "rows": rows,
        "ahead": ahead,
        "steps": [{"name": s.label, "done": i <= reached, "current": i == reached} for i, s in enumerate(steps)],
        "is_owner": submission.user_id == getattr(request.user, "id", None),
        "phase_choice": phase_choice(request, submission),
        "refresh": not submission.is_terminal or submission.diagnostics_status in WAITING,
        "diagnostics": present_diagnostics(
            diagnostics.published(submission.diagnostics, hidden=submission.test_set.is_hidden)),
        "icq_extractor": EXTRACTOR_METHODS.get(submission.task.language, ""),
        "details": present_details(submission.details),
        # Every score the entry had, newest first (test-set and scorer versions, what changed).
        "history": [{"record": record, "primary": record.scores.get(submission.task.primary_metric)}
                    for record in submission.score_history.order_by("-scored_at", "-pk")],
        "primary_label": dict(submission.task.metric_columns)[submission.task.primary_metric],
        "stale": rescoring.is_stale(submission),
        "placement": board_placement(submission),
        # The rename trail is for maintainers (it can name entries their owner since renamed).
        "name_changes": submission.name_changes.select_related("changed_by") if request.user.is_staff else None,
    })


@login_required
def my_submissions(request: AuthenticatedHttpRequest) -> HttpResponse:
    submissions = (
        Submission.objects.filter(user=request.user, task__in=Task.objects.visible_to(request.user))
        .select_related("task")
        .defer("item_scores").order_by("-created_at", "-id")
    )
    counts = dict(submissions.order_by().values_list("status").annotate(n=Count("id")))
    # Rejected uploads (a file that failed validation, nothing ran) are left out unless asked for:
    # a researcher fixing a file a few times would otherwise see mostly refusals.
    chosen = request.GET.get("status", "")
    if chosen not in LIST_FILTERS:
        chosen = ""
    statuses = LIST_FILTERS[chosen][1]
    shown = submissions.filter(status__in=statuses) if statuses else submissions.exclude(status=Status.REJECTED)
    rows = [{"submission": sub, "metric_label": dict(sub.task.metric_columns)[sub.task.primary_metric],
             "score": (sub.scores or {}).get(sub.task.primary_metric), "decimals": sub.task.metric_decimals}
            for sub in shown]
    filters = [{"key": key, "label": gettext(label), "active": key == chosen,
                "count": sum(n for status, n in counts.items()
                             if (status in wanted if wanted else status != Status.REJECTED))}
               for key, (label, wanted) in LIST_FILTERS.items()]
    return render(request, "submissions/list.html", {
        "rows": rows, "filters": filters, "any_submission": bool(counts),
        "hidden_rejected": counts.get(Status.REJECTED, 0) if not chosen else 0,
    })


# ?status= of "My submissions": (label, statuses shown); the default leaves rejected uploads out.
LIST_FILTERS: dict[str, tuple[str, list[str]]] = {
    "": (gettext_noop("All but rejected"), []),
    "scored": (gettext_noop("Scored"), [Status.SCORED]),
    "waiting": (gettext_noop("Queued or running"), [Status.UPLOADED, Status.QUEUED, Status.RUNNING]),
    "failed": (gettext_noop("Failed or cancelled"), [Status.FAILED, Status.CANCELLED]),
    "rejected": (gettext_noop("Rejected"), [Status.REJECTED]),
    "all": (gettext_noop("All"), list(Status)),
}


def owned(request: HttpRequest, pk: int) -> Submission:
    return get_object_or_404(Submission.objects.defer("item_scores"), pk=pk, user=request.user,
                             task__in=Task.objects.visible_to(request.user))


@login_required
def edit(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    submission = owned(request, pk)
    form = EntryEditForm(request.POST or None, instance=submission, editor=request.user)
    if request.method == "POST" and form.is_valid():
        form.save()
        messages.success(request, gettext("Entry saved."))
        return redirect(submission)
    return render(request, "submissions/edit.html", {
        "submission": submission, "form": form, "system_names": system_names_of(request.user),
    }, status=400 if form.errors else 200)


@login_required
@require_POST
def cancel(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    submission = owned(request, pk)
    try:
        intake.cancel(submission)
        messages.success(request, gettext("Submission cancelled."))
    except intake.SubmissionRefused as exc:
        messages.error(request, exc.message)
    return redirect(submission)


@login_required
@require_POST
def toggle_public(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    submission = owned(request, pk)
    submission.public = not submission.public
    submission.save(update_fields=["public"])
    # Public is a wish: the page says whether the board shows the entry now (and why not).
    messages.success(request, board_placement(submission).text if submission.public
                     else gettext("Hidden from the leaderboard."))
    return redirect(submission)
