"""Diagnostics stored before the statistics had their nulls (docs/diagnostics.md): the
linguistic-bias score was the raw variance of subset F1 (not zero without bias), and the ICQ
tests measured cues against 1/2 instead of the label prior. Forget them and queue them with no
heartbeat: the reaper re-sends them on its next pass. The scores themselves are not touched."""
from django.db import migrations


def forget_diagnostics_without_nulls(apps, schema_editor):
    Submission = apps.get_model("submissions", "Submission")
    Submission.objects.filter(
        status="scored", task__kind__in=("span", "multichoice", "classification"),
        diagnostics_status__in=("done", "failed"),
    ).update(diagnostics={}, diagnostics_status="queued", diagnostics_updated_at=None, diagnostics_attempts=0)


class Migration(migrations.Migration):

    dependencies = [
        ("submissions", "0007_job_status_vocabulary"),
        ("benchmark", "0008_rebuild_skill_variants_masks_scored_by_position"),
    ]

    operations = [
        migrations.RunPython(forget_diagnostics_without_nulls, migrations.RunPython.noop),
    ]
