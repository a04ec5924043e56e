"""One vocabulary for background jobs (core.jobs.JobStatus): a track's inclusion run said
"pending" and "ready" where every other job says "queued" and "done"."""
from django.db import migrations, models

RENAMES = {"pending": "queued", "ready": "done"}


def forwards(apps, schema_editor):
    Track = apps.get_model("benchmark", "Track")
    for old, new in RENAMES.items():
        Track.objects.filter(status=old).update(status=new)


def backwards(apps, schema_editor):
    Track = apps.get_model("benchmark", "Track")
    for old, new in RENAMES.items():
        Track.objects.filter(status=new).update(status=old)


class Migration(migrations.Migration):

    dependencies = [
        ("benchmark", "0006_rebuild_gold_dependent_skill_variants"),
    ]

    operations = [
        migrations.AlterField(
            model_name="track",
            name="status",
            field=models.CharField(choices=[("queued", "Queued"), ("running", "Running"), ("done", "Done"),
                                            ("failed", "Failed")], default="queued", max_length=10),
        ),
        migrations.RunPython(forwards, backwards),
    ]
