"""Reconstructed test sets (seed 000 skills s1–s14) of a hidden span test set: built by a
worker after import (or `manage.py build_skill_sets`), progress kept on the TestSet."""
import time

from django.conf import settings
from django.db import transaction

from .models import SkillVariant, Task, TestSet


def set_progress(test_set, **progress):
    """Record build progress in the test set's diagnostics (read by pages and the API); its
    ``updated_at`` is the build's heartbeat: the reaper re-sends a build whose worker died."""
    TestSet.update_diagnostics_part(test_set.pk, "skills_build", **progress)


def build(test_set, log=None):
    """Build and store every skill variant of ``test_set``; returns {skill: status}."""
    from scoring.analysis import skills

    from scoring.metrics import expmrc
    if test_set.task.kind != Task.SPAN:
        raise ValueError(f"{test_set.task.slug}: skill sets are built for span-extraction tasks only")
    gold = TestSet.objects.only("gold").get(pk=test_set.pk).gold
    started = time.perf_counter()
    stored = TestSet.objects.filter(pk=test_set.pk).values_list("diagnostics", flat=True).first() or {}
    attempts = (stored.get("skills_build") or {}).get("attempts", 0)
    set_progress(test_set, status="running", done=0, total=len(skills.SKILLS), seconds=None, attempts=attempts + 1)

    def progress(done, total):
        set_progress(test_set, done=done, total=total)
        if log:
            log(f"  {done}/{total} skills built")

    results = skills.build_all(gold, language=test_set.task.language, seed=0,
                               translation_models=settings.TRANSLATION_MODELS or None, progress=progress)
    with transaction.atomic():
        for skill, result in results.items():
            variant_gold = result.get("gold")
            public = result.get("public")
            SkillVariant.objects.update_or_create(
                test_set=test_set, skill=skill,
                defaults={
                    "status": result["status"],
                    "note": result.get("note", ""),
                    "n_items": result.get("n_items", 0),
                    "n_changed": result.get("n_changed", 0),
                    "n_dropped": result.get("n_dropped", 0),
                    "gold": variant_gold,
                    # Every original question is public and may be predicted; only the variant
                    # gold's questions are scored (see scoring.analysis.skills.build_variant).
                    "key_spec": public_key_spec(public) if variant_gold else {},
                    "public_inputs": skills.public_inputs(public) if variant_gold else {},
                },
            )
    seconds = round(time.perf_counter() - started, 2)
    set_progress(test_set, status="done", done=len(results), total=len(results), seconds=seconds)
    return {skill: result["status"] for skill, result in results.items()}


def public_key_spec(public):
    from scoring.metrics import expmrc

    keys = tuple(qa["id"] for article in public["data"] for p in article["paragraphs"] for qa in p["qas"])
    return expmrc.KeySpec(kind=expmrc.SPAN, keys=keys, option_letters="").to_dict()


def schedule(test_set):
    """After commit, ask a worker to build the skill sets of a span test set."""
    if test_set.task.kind != Task.SPAN or test_set.split != TestSet.TEST:
        return
    set_progress(test_set, status="queued", done=0, total=None, attempts=0, note="")
    send(test_set)


def send(test_set):
    def enqueue():
        from .tasks import build_skill_sets

        try:
            build_skill_sets.apply_async(args=[test_set.pk])
        except Exception:
            import logging

            logging.getLogger(__name__).exception("could not enqueue skill sets of %s", test_set)

    transaction.on_commit(enqueue)
