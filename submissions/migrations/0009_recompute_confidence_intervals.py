"""Confidence intervals stored before the BCa bootstrap (docs/diagnostics.md#bootstrap-confidence-intervals)
were percentile intervals, which under-cover at small n. Recompute every scored entry's CI from
its stored per-item scores with the current method; the scores themselves are not touched.

The metric columns are frozen here as they were when these rows were stored (``Task.metric_columns``),
since a migration must not depend on today's models."""
from django.conf import settings
from django.db import migrations

from scoring import stats

COLUMNS_BY_KIND = {
    "span": ["answer_f1", "evidence_f1", "overall_f1"],
    "multichoice": ["answer_acc", "evidence_f1", "overall_f1"],
    "classification": ["accuracy"],
    "checklist": ["pass_rate"],
    "interpretation": ["iou", "hpd", "snr", "hpd_rank", "snr_raw"],
}


def recompute_confidence_intervals(apps, schema_editor):
    Submission = apps.get_model("submissions", "Submission")
    scored = Submission.objects.filter(status="scored").exclude(item_scores=[]).select_related("task")
    for submission in scored.only("pk", "item_scores", "ci", "task__kind").iterator(chunk_size=200):
        keys = COLUMNS_BY_KIND.get(submission.task.kind)
        rows = submission.item_scores
        if not keys or not isinstance(rows, list) or any(len(row) != len(keys) for row in rows):
            continue  # a shape this upgrade does not know: leave the stored interval as it is
        ci = stats.column_cis(keys, rows, n_resamples=getattr(settings, "BOOTSTRAP_RESAMPLES", 1000), seed=0)
        if ci != submission.ci:
            Submission.objects.filter(pk=submission.pk).update(ci=ci)


class Migration(migrations.Migration):

    dependencies = [
        ("submissions", "0008_recompute_diagnostics_with_nulls"),
    ]

    operations = [
        migrations.RunPython(recompute_confidence_intervals, migrations.RunPython.noop),
    ]
