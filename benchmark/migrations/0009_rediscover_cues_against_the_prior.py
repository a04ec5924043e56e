"""ICQ cue tables stored before cueness was measured against the reference split's label prior
(docs/diagnostics.md#icq-cue-profiling): on 4-option tasks every feature looked like a cue.
Queue each test set's cue discovery again with no heartbeat: the reaper re-sends it on its next
pass, and the entries scored on it get their ICQ tests again once the new table is stored."""
from django.db import migrations


def queue_cue_discovery_again(apps, schema_editor):
    TestSet = apps.get_model("benchmark", "TestSet")
    for test_set in TestSet.objects.filter(diagnostics__icq__status__in=["done", "no_reference", "failed"]):
        diagnostics = dict(test_set.diagnostics)
        diagnostics["icq"] = {"status": "queued", "cues": [], "attempts": 0,
                              "note": "recomputing the cue table after an upgrade (cueness against the prior)"}
        TestSet.objects.filter(pk=test_set.pk).update(diagnostics=diagnostics)


class Migration(migrations.Migration):

    dependencies = [
        ("benchmark", "0008_rebuild_skill_variants_masks_scored_by_position"),
    ]

    operations = [
        migrations.RunPython(queue_cue_discovery_again, migrations.RunPython.noop),
    ]
