"""Skill variants built before masks stopped earning credit (docs/diagnostics.md#skill-based-reconstructed-sets):
masking variants now record where their masks are (so answers are scored by position against
the original text), s3 is not applicable, s4 keeps long answers as often as short ones, s9
masks demonstrative pronouns only and s1 substitutes adjectives only. Delete every variant of
a hidden test set and queue its build with no heartbeat: the reaper re-sends it on its next
pass, and once rebuilt the skill entries scored by the older scorer are re-scored."""
from django.db import migrations


def drop_skill_variants(apps, schema_editor):
    SkillVariant = apps.get_model("benchmark", "SkillVariant")
    TestSet = apps.get_model("benchmark", "TestSet")
    built = SkillVariant.objects.filter(test_set__split="test")
    for test_set_id in set(built.values_list("test_set_id", flat=True)):
        built.filter(test_set_id=test_set_id).delete()
        test_set = TestSet.objects.get(pk=test_set_id)
        diagnostics = dict(test_set.diagnostics or {})
        diagnostics["skills_build"] = {"status": "queued", "done": 0, "total": None, "attempts": 0,
                                       "note": "rebuilding s1-s14 after an upgrade (masks scored by position)"}
        TestSet.objects.filter(pk=test_set_id).update(diagnostics=diagnostics)


class Migration(migrations.Migration):

    dependencies = [
        ("benchmark", "0007_job_status_vocabulary"),
    ]

    operations = [
        migrations.RunPython(drop_skill_variants, migrations.RunPython.noop),
    ]
