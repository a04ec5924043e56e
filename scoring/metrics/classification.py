"""Classification tasks (NLI style: premise, hypothesis, label): gold checking, upload
validation and accuracy. Pure functions over plain data, no Django."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from ..strict_json import (  # noqa: F401  (InvalidPredictions is part of this module's API)
    InvalidJson,
    InvalidPredictions,
    Problems,
    json_type,
    load_json_object,
    loads_json,
    show,
)

CLASSIFICATION = "classification"


class InvalidClassificationData(ValueError):
    """A gold/reference file is malformed (message names line and field, never gold text)."""


def read_jsonl_rows(raw: bytes | str, *, what: str = "file") -> list[dict]:
    """Rows of a JSON Lines file (a JSON array of objects is accepted too)."""
    text = raw.decode("utf-8-sig") if isinstance(raw, bytes) else raw
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            rows = loads_json(stripped)
        except InvalidJson as exc:
            raise InvalidClassificationData(f"{what}: not JSON: {exc}") from None
        numbered = list(enumerate(rows, start=1))
    else:
        numbered = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                numbered.append((number, loads_json(line)))
            except InvalidJson as exc:
                raise InvalidClassificationData(f"{what} line {number}: not JSON: {exc.reason}") from None
    for number, row in numbered:
        if not isinstance(row, dict):
            raise InvalidClassificationData(f"{what} line {number}: expected an object, found {json_type(row)}")
    return [dict(row, _line=number) for number, row in numbered]


def check_gold_rows(rows: list[dict], *, what: str = "file") -> list[dict]:
    """Validate {"id", "premise", "hypothesis", "label"} rows; labels become strings."""
    if not rows:
        raise InvalidClassificationData(f"{what}: no rows")
    seen = set()
    clean = []
    for row in rows:
        where = f"{what} line {row.get('_line', '?')}"
        for name in ("id", "premise", "hypothesis"):
            if not isinstance(row.get(name), str) or (name == "id" and not row[name]):
                raise InvalidClassificationData(f'{where}: field "{name}" must be a non-empty string' if name == "id"
                                                else f'{where}: field "{name}" must be a string')
        if not isinstance(row.get("label"), (str, int)) or isinstance(row.get("label"), bool):
            raise InvalidClassificationData(f'{where}: field "label" must be a string or an integer')
        if row["id"] in seen:
            raise InvalidClassificationData(f"{where}: duplicated id {show(row['id'])}")
        seen.add(row["id"])
        clean.append({"id": row["id"], "premise": row["premise"], "hypothesis": row["hypothesis"],
                      "label": str(row["label"])})
    return clean


@dataclass(frozen=True)
class LabelSpec:
    keys: tuple[str, ...]
    labels: tuple[str, ...]

    def to_dict(self) -> dict:
        return {"kind": CLASSIFICATION, "keys": list(self.keys), "labels": list(self.labels)}

    @classmethod
    def from_dict(cls, data: dict) -> "LabelSpec":
        return cls(keys=tuple(data["keys"]), labels=tuple(data["labels"]))


def label_spec(rows: list[dict]) -> LabelSpec:
    return LabelSpec(keys=tuple(r["id"] for r in rows), labels=tuple(sorted({r["label"] for r in rows})))


def public_inputs(rows: list[dict]) -> dict:
    return {"labels": sorted({r["label"] for r in rows}),
            "data": [{"id": r["id"], "premise": r["premise"], "hypothesis": r["hypothesis"]} for r in rows]}


def parse_predictions(raw: bytes | str, spec: LabelSpec, *, max_bytes: int) -> dict[str, str]:
    """A JSON object {"<id>": "<label>"}; labels must be among the task's labels (integers
    are accepted for integer-like labels). Missing ids score 0; unknown ids are refused."""
    text, document = load_json_object(raw, max_bytes=max_bytes, expected='{"<id>": "<label>"}')
    allowed = set(spec.labels)
    problems = Problems(text)
    seen: dict[str, int] = {}
    predictions: dict[str, str] = {}
    for index, (key, value) in enumerate(document):
        if key in seen:
            problems.add(index, f"{show(key)} appears twice")
            continue
        seen[key] = index
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            problems.add(index, f"{show(key)}: label is {json_type(value)}, expected a string")
        elif str(value) not in allowed:
            problems.add(index, f"{show(key)}: label {show(str(value), 20)} is not one of {', '.join(spec.labels)}")
        else:
            predictions[key] = str(value)
    problems.raise_if_any("invalid entries")
    known = set(spec.keys)
    unknown = [index for index, (key, _) in enumerate(document) if key not in known]
    if unknown:
        problems = Problems(text)
        for index in unknown:
            problems.add(index, "" if problems.full else show(document[index][0]))
        problems.raise_if_any("ids not in the test set")
    return predictions


@dataclass
class AccuracyScore:
    accuracy: float  # 0-100
    total: int
    unanswered: int
    per_item: list[float]  # 1.0 / 0.0 per gold row, in file order


def score_predictions(rows: Iterable[dict], predictions: dict[str, str]) -> AccuracyScore:
    per_item = []
    unanswered = 0
    for row in rows:
        if row["id"] not in predictions:
            unanswered += 1
        per_item.append(1.0 if predictions.get(row["id"]) == row["label"] else 0.0)
    total = len(per_item)
    correct = 0.0
    for value in per_item:  # summed in file order, like the other scorers
        correct += value
    return AccuracyScore(accuracy=100.0 * correct / total if total else 0.0, total=total,
                         unanswered=unanswered, per_item=per_item)

