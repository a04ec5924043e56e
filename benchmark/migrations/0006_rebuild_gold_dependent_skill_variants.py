"""Skill variants s4, s5 and s6 built before their public passages stopped depending on the
gold (s4 cut sentences into runs aligned on the answer, s5 merged the answer's sentences, s6
left the answer's sentence untranslated) narrowed down where a hidden answer is. Delete them
and queue the test set's build with no heartbeat: the reaper re-sends it on its next pass."""
from django.db import migrations

GOLD_DEPENDENT_SKILLS = ("s4", "s5", "s6")


def drop_gold_dependent_variants(apps, schema_editor):
    SkillVariant = apps.get_model("benchmark", "SkillVariant")
    TestSet = apps.get_model("benchmark", "TestSet")
    stale = SkillVariant.objects.filter(skill__in=GOLD_DEPENDENT_SKILLS, test_set__split="test", status="ok")
    for test_set_id in set(stale.values_list("test_set_id", flat=True)):
        stale.filter(test_set_id=test_set_id).delete()
        test_set = TestSet.objects.get(pk=test_set_id)
        diagnostics = dict(test_set.diagnostics or {})
        diagnostics["skills_build"] = {"status": "queued", "done": 0, "total": None, "attempts": 0,
                                       "note": "rebuilding s4-s6 after an upgrade"}
        TestSet.objects.filter(pk=test_set_id).update(diagnostics=diagnostics)


class Migration(migrations.Migration):

    dependencies = [
        ("benchmark", "0005_track_attempts"),
    ]

    operations = [
        migrations.RunPython(drop_gold_dependent_variants, migrations.RunPython.noop),
    ]
