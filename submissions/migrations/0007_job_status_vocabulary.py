"""One vocabulary for background jobs (core.jobs.JobStatus): diagnostics said "pending" where
every other job says "queued"."""
from django.db import migrations, models


def forwards(apps, schema_editor):
    apps.get_model("submissions", "Submission").objects.filter(diagnostics_status="pending").update(
        diagnostics_status="queued")


def backwards(apps, schema_editor):
    apps.get_model("submissions", "Submission").objects.filter(diagnostics_status="queued").update(
        diagnostics_status="pending")


class Migration(migrations.Migration):

    dependencies = [
        ("submissions", "0006_recompute_hidden_span_diagnostics"),
    ]

    operations = [
        migrations.AlterField(
            model_name="submission",
            name="diagnostics_status",
            field=models.CharField(blank=True, choices=[("queued", "Queued"), ("running", "Running"),
                                                        ("done", "Done"), ("failed", "Failed")], max_length=12),
        ),
        migrations.RunPython(forwards, backwards),
    ]
