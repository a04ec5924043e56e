"""Diagnostics stored before small groups were pooled (HIDDEN_MIN_GROUP_SIZE) could show the
outcome of a one-question group of a hidden split. Forget them and mark them pending with no
timestamp: the reaper re-sends such diagnostics on its next pass, and the new run pools."""
from django.db import migrations


def forget_unpooled_diagnostics(apps, schema_editor):
    Submission = apps.get_model("submissions", "Submission")
    Submission.objects.filter(
        status="scored", task__kind="span", test_set__split="test", diagnostics_status__in=("done", "failed"),
    ).update(diagnostics={}, diagnostics_status="pending", diagnostics_updated_at=None, diagnostics_attempts=0)


class Migration(migrations.Migration):

    dependencies = [
        ("submissions", "0005_diagnostics_lease"),
        ("benchmark", "0005_track_attempts"),
    ]

    operations = [
        migrations.RunPython(forget_unpooled_diagnostics, migrations.RunPython.noop),
    ]
