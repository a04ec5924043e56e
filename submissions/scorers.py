"""Which pure scorer a submission uses, behind one small interface.

``parse(raw, test_set, max_bytes=..., stored=False)`` validates an upload (InvalidPredictions with a
precise, gold-free message; ``stored=True`` reads a file accepted before, ignoring predictions for
withdrawn questions, ``parse_stored`` returns their keys too); ``score(task, test_set, predictions)``
returns a ScoredRun whose per-item rows follow the task's metric columns (0-1 scale), so CIs, tiers
and diagnostics work the same for every kind.
"""
from typing import Any, Protocol

from benchmark.kinds import CODE, MODEL, PREDICTIONS, SKILLS, ScoredRun, TaskKind
from benchmark.models import SkillVariant, Task, TestSet
from scoring.analysis import skills
from scoring.metrics import expmrc
from scoring.strict_json import InvalidPredictions, show

__all__ = ["InvalidPredictions", "ScoredRun", "scorer_for"]


class Scorer(Protocol):
    """What every scorer offers: its version label, ``parse`` and ``score``."""

    version: str

    def parse(self, raw: bytes, test_set: TestSet, *, max_bytes: int, stored: bool = False) -> Any: ...

    def parse_stored(self, raw: bytes, test_set: TestSet, *, max_bytes: int) -> tuple[Any, list[str]]: ...

    def score(self, task: Task, test_set: TestSet, predictions: Any) -> ScoredRun: ...


class KindScorer:
    """A task kind's own scorer (``benchmark.kinds``) behind the interface above."""

    def __init__(self, kind: TaskKind) -> None:
        self.kind = kind
        self.version = kind.scorer_version

    def parse(self, raw: bytes, test_set: TestSet, *, max_bytes: int, stored: bool = False) -> Any:
        """``stored``: a file accepted before, read again (re-scoring, diagnostics): predictions for
        questions the test set no longer holds are ignored. A new upload is parsed strictly."""
        if stored:
            return self.parse_stored(raw, test_set, max_bytes=max_bytes)[0]
        return self.kind.parse_predictions(raw, test_set, max_bytes=max_bytes)

    def parse_stored(self, raw: bytes, test_set: TestSet, *, max_bytes: int) -> tuple[Any, list[str]]:
        """A stored file and the keys of its predictions for withdrawn questions (ignored)."""
        return self.kind.parse_stored_predictions(raw, test_set, max_bytes=max_bytes)

    def score(self, task: Task, test_set: TestSet, predictions: Any) -> ScoredRun:
        return self.kind.score(test_set, predictions)


class SkillsScorer:
    """A skill submission: {"original": {...}, "s1": {...}, ...}, each an ExpMRC prediction
    object for the original hidden set or one reconstructed variant (InDepth-Eva-MRC, Wu et al., 2022). A variant
    that is absent is "not submitted", not zero. The score is the original's; the per-skill
    F1 gaps with paired bootstrap CIs go to ``details``."""

    # skills-3: each gap's original side against the references its variant kept.
    version = "skills-3/expmrc-1"

    def variants(self, test_set: TestSet) -> dict[str, SkillVariant]:
        return {v.skill: v for v in test_set.skill_variants.filter(status="ok")}

    def parse(self, raw: bytes, test_set: TestSet, *, max_bytes: int,
              stored: bool = False) -> dict[str, dict[str, dict] | None]:
        """The sections as prediction objects. A section of a skill that has no variant here for
        good (not applicable to the task, like s3 or an English-only skill on a Chinese task, or
        not configured on this server) is accepted and ignored (``None``; the score's details say
        so): files that send every section keep working. Unknown sections and skills not built
        yet are refused, unless the file is a stored one read again."""
        document = skills.read_sections(raw, max_bytes=max_bytes)
        variants = self.variants(test_set)
        names = [name for name, _ in document]
        unscored = {name for name in names if name != "original" and name not in variants}
        statuses = dict(test_set.skill_variants.values_list("skill", "status")) if unscored else {}
        refused = [name for name in names if name in unscored and not ignored_reason(name, test_set, statuses)]
        if refused and not stored:
            raise InvalidPredictions(self.refusal(refused, test_set, variants))
        if "original" not in names:
            raise InvalidPredictions(skills.MISSING_ORIGINAL)
        parsed: dict[str, Any] = {}
        for name, section in document:
            if name in unscored:
                # Ignored (reported by ``score``): a skill without a variant here for good, or, in
                # a stored file read again, one whose variant is no longer built.
                parsed[name] = None
                continue
            spec = test_set.key_spec if name == "original" else variants[name].key_spec
            parsed[name] = skills.parse_section(name, section, expmrc.KeySpec.from_dict(spec), max_bytes=max_bytes)
        return parsed

    def parse_stored(self, raw: bytes, test_set: TestSet, *, max_bytes: int) -> tuple[Any, list[str]]:
        """Skill files are re-scored on the test set their variants were built from: nothing is withdrawn."""
        return self.parse(raw, test_set, max_bytes=max_bytes, stored=True), []

    def refusal(self, refused: list[str], test_set: TestSet, variants: dict[str, SkillVariant]) -> str:
        """Why sections cannot be scored: a skill not defined for the task's language, not
        configured (s6) or without a variant is named as such, anything else is unknown."""
        task = test_set.task
        languages = dict(type(task).LANGUAGE_CHOICES)
        stored = dict(test_set.skill_variants.values_list("skill", "status"))
        reasons = []
        for name in refused[:5]:
            if name not in skills.SKILLS:
                reasons.append(f"{show(name)} is not a skill section")
            elif task.language not in skills.SKILLS[name]["languages"]:
                defined_for = " and ".join(languages.get(code, code)
                                           for code in sorted(skills.SKILLS[name]["languages"]))
                reasons.append(f"{show(name)} is not applicable to this task's language "
                               f"({task.get_language_display()}): {name} is defined for {defined_for} passages only")
            elif stored.get(name) == skills.NOT_CONFIGURED:
                reasons.append(f"{show(name)} is not configured on this server, so it has no variant to score")
            elif name in stored:
                reasons.append(f"{show(name)} has no scorable variant for this test set ({stored[name]})")
            else:
                reasons.append(f"{show(name)} has not been built yet for this test set")
        allowed = ", ".join(["original", *sorted(variants, key=_skill_order)])
        return f"section {'; section '.join(reasons)}; sections this task accepts: {allowed}"

    def score(self, task: Task, test_set: TestSet, predictions: dict[str, dict[str, dict] | None]) -> ScoredRun:
        original_predictions = predictions["original"]
        assert original_predictions is not None  # parse requires the original section
        original = expmrc.score_predictions(test_set.gold, original_predictions)
        variants = self.variants(test_set)
        variant_f1 = {}
        ignored = []
        for name, preds in predictions.items():
            if name == "original":
                continue
            if name not in variants or preds is None:
                # A section without a variant here (s3, not applicable; s6 not configured; or a
                # stored file's section whose variant is no longer built): reported, not scored.
                ignored.append(name)
                continue
            # Masks never earn credit: answers are compared by position against the original
            # text (docs/diagnostics.md#skill-based-reconstructed-sets). An "ok" variant has its gold.
            result = skills.score_variant(variants[name].gold, preds)  # type: ignore[arg-type]
            variant_f1[name] = {q["key"]: q["answer"] for q in result.per_question}
        # Each skill's original side is scored against the references its variant kept, so an
        # answer that did not change shows no gap (docs/diagnostics.md#skill-based-reconstructed-sets).
        on_kept = skills.original_item_f1_on_kept(
            test_set.gold, original_predictions, {name: variants[name].gold for name in variant_f1})  # type: ignore[misc]
        gaps = skills.skill_gaps({q["key"]: q["answer"] for q in original.per_question}, variant_f1, seed=0,
                                 original_by_skill=on_kept)
        not_submitted = sorted(set(variants) - set(variant_f1), key=_skill_order)
        statuses = dict(test_set.skill_variants.values_list("skill", "status")) if ignored else {}
        ignored = sorted(ignored, key=_skill_order)
        return ScoredRun(
            scores={task.answer_metric: original.answer, "evidence_f1": original.evidence,
                    "overall_f1": original.overall},
            item_rows=[[q["answer"], q["evidence"], q["overall"]] for q in original.per_question],
            total=original.total,
            unanswered=original.unanswered,
            details={"skills": gaps, "not_submitted": not_submitted, "not_scored": ignored,
                     "ignored_sections": [{"skill": name, "reason": ignored_reason(name, test_set, statuses)
                                           or "its variant is no longer built for this test set"}
                                          for name in ignored]},
        )


def ignored_reason(name: str, test_set: TestSet, statuses: dict[str, str]) -> str:
    """Why a skill section is accepted but not scored ("" when it is refused instead): the skill
    has no variant for this task for good (not applicable to it, or not configured here)."""
    definition = skills.SKILLS.get(name)
    if definition is None:
        return ""
    task = test_set.task
    if task.language not in definition["languages"]:
        languages = dict(type(task).LANGUAGE_CHOICES)
        defined_for = " and ".join(languages.get(code, code) for code in sorted(definition["languages"]))
        return f"not applicable: {name} is defined for {defined_for} passages only"
    if statuses.get(name) == skills.NOT_APPLICABLE:
        return "not applicable to this task (no variant is built)"
    if statuses.get(name) == skills.NOT_CONFIGURED:
        return "not configured on this server (no variant is built)"
    return ""


def _skill_order(name):
    digits = "".join(ch for ch in name if ch.isdigit())
    return (int(digits) if digits else 0, name)


_SKILLS = SkillsScorer()


def scorer_for(task: Task, kind: str = PREDICTIONS) -> Scorer:
    """The scorer of a ``kind`` upload (prediction file, skill file, code's score file) to ``task``."""
    definition = task.kind_definition
    if kind == SKILLS:
        if not definition.accepts(SKILLS):
            raise LookupError(f"skill submissions are not accepted by {definition.label.lower()} tasks")
        return _SKILLS
    return KindScorer(definition)


# Interpreter code and models: the sandbox runner's protocol version, then the file's scorer.
CODE_RUNNER_VERSION = "sandbox-1"
MODEL_RUNNER_VERSION = "model-1"


def current_scorer_version(task: Task, kind: str = PREDICTIONS) -> str:
    """The version label a score computed now would carry. An entry scored under another label
    is stale until re-scored (``submissions.rescoring``)."""
    if kind == CODE:
        return f"{CODE_RUNNER_VERSION}/{scorer_for(task).version}"
    if kind == MODEL:
        return f"{MODEL_RUNNER_VERSION}/{scorer_for(task).version}"
    return scorer_for(task, kind).version
