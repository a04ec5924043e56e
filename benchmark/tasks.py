import logging

from celery import shared_task

log = logging.getLogger(__name__)


@shared_task(name="benchmark.tasks.discover_cues", acks_late=True)
def discover_cues(test_set_id):
    from . import cues
    from .models import TestSet

    test_set = TestSet.objects.select_related("task").filter(pk=test_set_id).first()
    if test_set is None:
        return "gone"
    try:
        part = cues.discover(test_set)
    except Exception as exc:
        log.error("cue discovery for test set %s failed: %s", test_set_id, type(exc).__name__)
        TestSet.objects.filter(pk=test_set_id).update(
            diagnostics={**(test_set.diagnostics or {}), "icq": {"status": "failed", "cues": [],
                                                                 "note": "Cue discovery failed."}})
        return "failed"
    return f"{len(part['cues'])} cues"


@shared_task(name="benchmark.tasks.build_skill_sets", acks_late=True)
def build_skill_sets(test_set_id):
    from . import skill_sets
    from .models import TestSet

    test_set = TestSet.objects.select_related("task").defer("gold", "public_inputs").filter(pk=test_set_id).first()
    if test_set is None:
        return "gone"
    try:
        statuses = skill_sets.build(test_set)
    except Exception as exc:
        log.error("skill sets of test set %s failed: %s", test_set_id, type(exc).__name__)
        skill_sets.set_progress(test_set, status="failed")
        return "failed"
    return statuses
