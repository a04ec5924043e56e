"""The error category "test_set_gone" goes: only the first release ever set it. A submission that
still has it becomes "scorer_error", the platform fault it was (refunded, like before)."""
from django.db import migrations, models


def test_set_gone_to_scorer_error(apps, schema_editor):
    Submission = apps.get_model("submissions", "Submission")
    Submission.objects.filter(error_category="test_set_gone").update(error_category="scorer_error")


class Migration(migrations.Migration):

    dependencies = [
        ('submissions', '0014_teams_selections'),
    ]

    operations = [
        migrations.RunPython(test_set_gone_to_scorer_error, migrations.RunPython.noop),
        migrations.AlterField(
            model_name='submission',
            name='error_category',
            field=models.CharField(blank=True, choices=[('invalid_input', 'Invalid file'), ('worker_lost', 'Scoring worker lost'), ('scorer_error', 'Internal scoring error'), ('code_failed', 'Interpreter code failed'), ('scoring_time', 'Scoring time limit'), ('smoke_failed', 'Model failed on the public sample'), ('model_failed', 'Model failed on the hidden inputs')], max_length=20),
        ),
    ]
