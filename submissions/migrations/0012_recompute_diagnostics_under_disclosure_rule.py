"""Diagnostics of hidden splits computed before the disclosure rule (scoring.disclosure,
docs/diagnostics.md) could show a group whose members were all right or all wrong. Mark them
queued with no timestamp: the reaper sends them again on its next pass and the new run applies
the rule. Until then pages and the API filter the stored rows (submissions.diagnostics.published)."""
from django.db import migrations


def recompute_hidden_diagnostics(apps, schema_editor):
    Submission = apps.get_model("submissions", "Submission")
    Submission.objects.filter(
        status="scored", test_set__split="test", diagnostics_status__in=("done", "failed"),
    ).update(diagnostics_status="queued", diagnostics_updated_at=None, diagnostics_attempts=0)


class Migration(migrations.Migration):

    dependencies = [
        ("submissions", "0011_scoring_time_limit_category"),
    ]

    operations = [
        migrations.RunPython(recompute_hidden_diagnostics, migrations.RunPython.noop),
    ]
