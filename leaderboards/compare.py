"""Two entries side by side on every diagnostic (docs/diagnostics.md): scores with the paired p-value,
skill gaps, CheckList failure rates, question-type accuracy and ICQ accuracy tests."""
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser
from django.db.models import Q
from django.utils.translation import gettext

from benchmark.models import Visibility
from submissions import diagnostics
from submissions.models import Status, Submission
from submissions.selectors import item_scores_of

from .boards import pair_p_value


class CompareError(Exception):
    pass


def visible_submission(user: AbstractBaseUser | AnonymousUser, submission_id: str | int | None) -> Submission:
    """A scored submission the user may see (their own, or public)."""
    try:
        pk = int(submission_id)  # type: ignore[arg-type]  # None raises TypeError, answered below
    except (TypeError, ValueError):
        raise CompareError(f"{submission_id!r} is not a submission id") from None
    visible = Q(public=True)
    if user.is_authenticated:
        visible |= Q(user=user)
    if not getattr(user, "is_staff", False):
        visible &= ~Q(task__visibility=Visibility.HIDDEN)
    sub = (Submission.objects.select_related("task", "test_set", "user__profile")
           .defer("item_scores", "held_item_scores", "test_set__gold", "test_set__public_inputs",
                  "test_set__diagnostics")
           .filter(visible, pk=pk, status=Status.SCORED).first())
    if sub is None:
        raise CompareError(f"no scored submission #{pk} visible to you")
    return sub


def side_by_side(rows_a: Iterable[Mapping[str, Any]], rows_b: Iterable[Mapping[str, Any]], key: str,
                 fields: Sequence[str]) -> list[dict[str, Any]]:
    """Join two lists of dicts on ``key``: [{key, "a": {...}, "b": {...}}] in a's order, then b's."""
    a = {row[key]: row for row in rows_a}
    b = {row[key]: row for row in rows_b}
    keys = list(a) + [k for k in b if k not in a]
    return [{key: k, "a": {f: a.get(k, {}).get(f) for f in fields}, "b": {f: b.get(k, {}).get(f) for f in fields}}
            for k in keys]


def summary(sub: Submission) -> dict[str, Any]:
    return {"id": sub.pk, "method": sub.method_name, "team": sub.team, "task": sub.task.slug, "kind": sub.kind,
            "test_set_version": sub.test_set.version, "scores": sub.scores, "ci": sub.ci}


def scored_items(sub: Submission) -> tuple[int, int | None]:
    """Which items an entry's rows cover: its test set, and the phase whose public part alone it
    shows before that phase ends (None: the whole test set, docs/phases.md)."""
    return sub.test_set_id, sub.phase_id if sub.held_item_scores is not None else None


def compare(a: Submission, b: Submission) -> dict[str, Any]:
    same_items = scored_items(a) == scored_items(b)
    metrics = []
    for key, label in a.task.metric_columns:
        va, vb = a.scores.get(key), b.scores.get(key)
        metrics.append({"metric": key, "label": label, "a": va, "b": vb,
                        "difference": va - vb if va is not None and vb is not None else None})
    # Words in the active language: the page's, English for the API.
    paired = {"applicable": False, "note": gettext("The two entries were scored on different test sets (or one "
                                                   "shows only the public part of its phase's test set until the "
                                                   "phase ends).")}
    if same_items:
        column = a.task.primary_index
        items = item_scores_of([a.pk, b.pk])
        # On the items both entries define (a failed QUACKIE sample is left out, as from the means):
        # the test the board ran for its tiers when it ran this pair, else run once and kept.
        p = pair_p_value(a.task, [r[column] for r in items[a.pk]], [r[column] for r in items[b.pk]])
        paired = {"applicable": True, "metric": a.task.primary_metric, "p_value": p, "significant": p < 0.05,
                  "test": gettext("paired sign-flip permutation on per-question scores (two-sided)")}

    result = {"a": summary(a), "b": summary(b), "same_test_set": same_items, "metrics": metrics, "paired": paired}
    details_a, details_b = a.details or {}, b.details or {}
    # What each entry's page may show (scoring.disclosure on hidden splits), never the raw rows.
    shown_a = diagnostics.published(a.diagnostics, hidden=a.test_set.is_hidden)
    shown_b = diagnostics.published(b.diagnostics, hidden=b.test_set.is_hidden)
    sections = (("skills", _skills, details_a, details_b), ("checklist", _checklist, details_a, details_b),
                ("question_types", _question_types, shown_a, shown_b), ("icq", _icq_cues, shown_a, shown_b))
    for name, side_by_side_of, part_a, part_b in sections:
        rows = side_by_side_of(part_a, part_b)
        if rows is not None:
            result[name] = rows
    return result


# The diagnostic sections of a comparison: each is None when neither entry has that diagnostic.

def _skills(details_a: dict[str, Any], details_b: dict[str, Any]) -> list[dict[str, Any]] | None:
    gaps_a, gaps_b = details_a.get("skills", {}), details_b.get("skills", {})
    if not (gaps_a or gaps_b):
        return None
    return side_by_side(list(gaps_a.values()), list(gaps_b.values()), "skill",
                        ["name", "gap", "ci_low", "ci_high", "variant_f1"])


def _checklist(details_a: dict[str, Any], details_b: dict[str, Any]) -> dict[str, Any] | None:
    cl_a, cl_b = details_a.get("checklist"), details_b.get("checklist")
    if not (cl_a or cl_b):
        return None
    return {
        "tests": side_by_side((cl_a or {}).get("tests", []), (cl_b or {}).get("tests", []), "name",
                              ["capability", "failure_rate", "bert_failure_rate"]),
        "capabilities": side_by_side((cl_a or {}).get("capabilities", []), (cl_b or {}).get("capabilities", []),
                                     "capability", ["failure_rate", "bert_failure_rate"]),
    }


def _question_types(shown_a: dict[str, Any], shown_b: dict[str, Any]) -> list[dict[str, Any]] | None:
    qt_a, qt_b = shown_a.get("question_types"), shown_b.get("question_types")
    if not (qt_a or qt_b):
        return None

    def per_type(qt: dict[str, Any] | None) -> list[dict[str, Any]]:
        tests = (qt or {}).get("categorical", {}).get("tests", [])
        groups: dict[str, dict[str, Any]] = next(
            (t["groups"] for t in tests if t["variable"] == "question_type"), {})
        return [{"type": name, **values} for name, values in groups.items()]

    return side_by_side(per_type(qt_a), per_type(qt_b), "type", ["n", "accuracy"])


def _icq_cues(shown_a: dict[str, Any], shown_b: dict[str, Any]) -> list[dict[str, Any]] | None:
    icq_a, icq_b = shown_a.get("icq") or {}, shown_b.get("icq") or {}
    if not (icq_a.get("accuracy_test") or icq_b.get("accuracy_test")):
        return None

    def cues(part: dict[str, Any]) -> list[dict[str, Any]]:
        return [{"cue": f"{r['feature']}={r['value']}", **r} for r in part.get("accuracy_test", [])]

    return side_by_side(cues(icq_a), cues(icq_b), "cue", ["delta", "acc_with", "acc_without"])
