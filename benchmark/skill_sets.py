"""Skill-based reconstructed test sets s1–s14 (docs/diagnostics.md#skill-based-reconstructed-sets)
of a hidden span test set: built by the background job ``SKILL_BUILD`` after import (or by
``manage.py build_skill_sets``), its progress kept on the TestSet."""
import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import transaction

from core.jobs import Job, JobStatus, JsonPartState
from scoring.analysis import skills
from scoring.metrics import expmrc

from .models import SkillVariant, TestSet
from .signals import skill_sets_built

SKILL_BUILD = Job(key="skill_builds", task_name="benchmark.tasks.build_skill_sets",
                  state=JsonPartState(TestSet, "skills_build"), what="The build",
                  advice="run `manage.py build_skill_sets` to see why")


def set_progress(test_set: TestSet, **progress: Any) -> None:
    """Record build progress by hand (tests, upgrades); a worker's run uses its claim."""
    SKILL_BUILD.state.write(test_set.pk, **progress)


def build(test_set: TestSet, log: Callable[[str], None] | None = None, attempt: int | None = None) -> dict:
    """Build and store every skill variant of ``test_set``; returns {skill: status}.

    A worker passes the ``attempt`` it claimed; by hand the build claims the job whatever its
    state. Progress is the build's heartbeat: the reaper re-sends a build whose worker died."""
    if not test_set.task.kind_definition.builds_skill_sets:
        raise ValueError(f"{test_set.task.slug}: skill sets are built for span-extraction tasks only")
    state = SKILL_BUILD.state
    if attempt is None:
        attempt = state.take(test_set.pk)
    state.heartbeat(test_set.pk, attempt, done=0, total=len(skills.SKILLS), seconds=None)
    gold = TestSet.objects.only("gold").get(pk=test_set.pk).gold
    started = time.perf_counter()

    def progress(done: int, total: int) -> None:
        state.heartbeat(test_set.pk, attempt, done=done, total=total)
        if log:
            log(f"  {done}/{total} skills built")

    results = skills.build_all(gold, language=test_set.task.language, seed=0,
                               translation_models=settings.TRANSLATION_MODELS or None, progress=progress)
    with transaction.atomic():
        for skill, result in results.items():
            variant_gold = result.get("gold")
            public = result["public"]  # every result has it (None without a variant)
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
    if state.finish(test_set.pk, attempt, JobStatus.DONE, done=len(results), total=len(results), seconds=seconds):
        skill_sets_built.send(sender=TestSet, test_set_id=test_set.pk)
    return {skill: result["status"] for skill, result in results.items()}


def fail(test_set: TestSet, attempt: int) -> None:
    SKILL_BUILD.state.finish(test_set.pk, attempt, JobStatus.FAILED)


def public_key_spec(public: dict) -> dict:
    keys = tuple(qa["id"] for article in public["data"] for p in article["paragraphs"] for qa in p["qas"])
    return expmrc.KeySpec(kind=expmrc.SPAN, keys=keys, option_letters="").to_dict()


def schedule(test_set: TestSet) -> None:
    """After commit, ask a worker to build the skill sets of a span test set."""
    if not test_set.task.kind_definition.builds_skill_sets or test_set.split != TestSet.TEST:
        return
    SKILL_BUILD.state.schedule(test_set.pk, done=0, total=None, note="")
    SKILL_BUILD.send(test_set.pk)
