"""The skill sets of a task as the API and the skills page show them."""
from typing import Any

from django.http import HttpRequest
from django.urls import reverse
from rest_framework.request import Request

from scoring.analysis.skills import SKILLS

from .models import SkillVariant, Task


def skill_listing(task: Task, request: HttpRequest | Request | None = None) -> dict[str, Any]:
    test_set = task.current_test_set()
    if test_set is None or not task.kind_definition.builds_skill_sets:
        return {"task": task.slug, "test_set_version": None, "build": None, "skills": [],
                "note": "Skill sets exist for span-extraction tasks with a hidden test set."}
    variants = {v.skill: v for v in SkillVariant.objects.filter(test_set=test_set).defer("gold", "public_inputs")}
    rows = []
    for skill, meta in SKILLS.items():
        variant = variants.get(skill)
        url = None
        # A task whose inputs are hidden never serves them, nor their reconstructed versions.
        if variant is not None and variant.status == "ok" and not task.inputs_hidden:
            url = reverse("api-task-skill-inputs", kwargs={"slug": task.slug, "skill": skill})
            url = request.build_absolute_uri(url) if request else url
        rows.append({
            "skill": skill,
            "name": meta["name"],
            "group": meta["group"],
            "reading": meta["reading"],
            "status": variant.status if variant else "not built",
            "note": variant.note if variant else "",
            "n_items": variant.n_items if variant else 0,
            "n_changed": variant.n_changed if variant else 0,
            "n_dropped": variant.n_dropped if variant else 0,
            "inputs_url": url,
        })
    return {"task": task.slug, "test_set_version": test_set.version,
            "build": (test_set.diagnostics or {}).get("skills_build"), "skills": rows}
