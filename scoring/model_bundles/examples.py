"""What a model's ``predict`` receives, and how its answers are read (docs/model_submissions.md,
"Examples per format").

A test set's stored public inputs (``expmrc.public_inputs`` or ``classification.public_inputs``:
answers and evidence already removed, by whitelist) become a list of flat records, one per
question, in the test set's order:

* ``span`` (SQuAD, CMRC 2018 layout): ``{"id", "question", "context"}``;
* ``multichoice`` (RACE+, C3 layout): ``{"id", "question", "article", "options"}``, the id being
  the passage id, a hyphen and the question's position (the scorer's key);
* ``classification`` (NLI rows): ``{"id", "premise", "hypothesis", "labels"}``, ``labels`` the
  task's label set.

The predictions come back as one JSON object and are read by the task's own strict parser
(``parse_model_predictions``), with a key specification built from the same examples: the bytes
a model run returns are checked exactly as an uploaded prediction file.
"""
from __future__ import annotations

import string

from ..metrics import classification, expmrc

SPAN, MULTICHOICE, CLASSIFICATION = expmrc.SPAN, expmrc.MULTICHOICE, classification.CLASSIFICATION
FORMATS = (SPAN, MULTICHOICE, CLASSIFICATION)
OPTION_LETTERS = string.ascii_uppercase


class InvalidInputs(ValueError):
    """The public inputs are not in the layout the format expects (names the place, no text)."""


def _list(container, key: str, where: str) -> list:
    value = container.get(key) if isinstance(container, dict) else None
    if not isinstance(value, list):
        raise InvalidInputs(f"{where}.{key} must be an array")
    return value


def _text(container: dict, key: str, where: str) -> str:
    value = container.get(key)
    if not isinstance(value, str):
        raise InvalidInputs(f"{where}.{key} must be a string")
    return value


def detect_format(public_inputs) -> str:
    """``span``, ``multichoice`` or ``classification`` from the inputs' own layout (the ExpMRC
    ``version`` string, as the official scorer dispatches, or NLI rows with a label set)."""
    if not isinstance(public_inputs, dict):
        raise InvalidInputs("the inputs must be a JSON object")
    if isinstance(public_inputs.get("version"), str):
        try:
            return expmrc.task_kind(public_inputs)
        except expmrc.InvalidGold as error:
            raise InvalidInputs(str(error)) from None
    if isinstance(public_inputs.get("labels"), list) and isinstance(public_inputs.get("data"), list):
        return CLASSIFICATION
    raise InvalidInputs("cannot tell the format: neither ExpMRC inputs (a version string) nor "
                        "classification inputs (labels and data); name it with --format")


def span_examples(public_inputs: dict) -> list[dict]:
    examples = []
    for a, article in enumerate(_list(public_inputs, "data", "inputs")):
        for p, paragraph in enumerate(_list(article, "paragraphs", f"data[{a}]")):
            where = f"data[{a}].paragraphs[{p}]"
            context = _text(paragraph, "context", where)
            for q, qa in enumerate(_list(paragraph, "qas", where)):
                qa_where = f"{where}.qas[{q}]"
                examples.append({"id": _text(qa, "id", qa_where), "question": _text(qa, "question", qa_where),
                                 "context": context})
    return examples


def multichoice_examples(public_inputs: dict) -> list[dict]:
    examples = []
    for index, passage in enumerate(_list(public_inputs, "data", "inputs")):
        where = f"data[{index}]"
        passage_id, article = _text(passage, "id", where), _text(passage, "article", where)
        questions, options = _list(passage, "questions", where), _list(passage, "options", where)
        if len(options) != len(questions):
            raise InvalidInputs(f"{where}.options has {len(options)} items but {where}.questions has {len(questions)}")
        for j, (question, choices) in enumerate(zip(questions, options, strict=True)):
            if not isinstance(question, str) or not isinstance(choices, list) \
                    or not all(isinstance(choice, str) for choice in choices):
                raise InvalidInputs(f"{where} question {j}: a question must be a string and its options strings")
            examples.append({"id": f"{passage_id}-{j}", "question": question, "article": article,
                             "options": list(choices)})
    return examples


def classification_examples(public_inputs: dict) -> list[dict]:
    labels = _list(public_inputs, "labels", "inputs")
    if not all(isinstance(label, str) for label in labels):
        raise InvalidInputs("inputs.labels must be strings")
    examples = []
    for index, row in enumerate(_list(public_inputs, "data", "inputs")):
        where = f"data[{index}]"
        if not isinstance(row, dict):
            raise InvalidInputs(f"{where} must be an object")
        examples.append({"id": _text(row, "id", where), "premise": _text(row, "premise", where),
                         "hypothesis": _text(row, "hypothesis", where), "labels": list(labels)})
    return examples


EXAMPLE_BUILDERS = {SPAN: span_examples, MULTICHOICE: multichoice_examples, CLASSIFICATION: classification_examples}


def model_examples(public_inputs, prediction_format: str | None = None) -> list[dict]:
    """The examples ``predict`` receives for these inputs (format detected when not given)."""
    chosen = prediction_format or detect_format(public_inputs)
    if chosen not in EXAMPLE_BUILDERS:
        raise InvalidInputs(f"unknown format {chosen!r}; one of {', '.join(FORMATS)}")
    if not isinstance(public_inputs, dict):
        raise InvalidInputs("the inputs must be a JSON object")
    examples = EXAMPLE_BUILDERS[chosen](public_inputs)
    if not examples:
        raise InvalidInputs("the inputs hold no questions")
    ids = [example["id"] for example in examples]
    if len(set(ids)) != len(ids):
        raise InvalidInputs("the inputs repeat a question id")
    return examples


def prediction_spec(prediction_format: str, examples: list[dict]):
    """The key specification the task's parser checks predictions against, from the examples
    (the same keys, in the same order, as the stored test set's)."""
    keys = tuple(example["id"] for example in examples)
    if prediction_format == CLASSIFICATION:
        labels = examples[0]["labels"] if examples else []
        return classification.LabelSpec(keys=keys, labels=tuple(labels))
    if prediction_format == MULTICHOICE:
        widest = max((len(example["options"]) for example in examples), default=0)
        return expmrc.KeySpec(MULTICHOICE, keys, OPTION_LETTERS[:widest])
    return expmrc.KeySpec(SPAN, keys, "")


def parse_model_predictions(prediction_format: str, raw: bytes, examples: list[dict], *,
                            max_bytes: int = expmrc.DEFAULT_MAX_BYTES) -> dict:
    """The predictions as the task's parser reads an uploaded file; raises
    ``InvalidPredictions`` with the parser's own message."""
    spec = prediction_spec(prediction_format, examples)
    if prediction_format == CLASSIFICATION:
        return classification.parse_predictions(raw, spec, max_bytes=max_bytes)
    return expmrc.parse_predictions(raw, spec, max_bytes=max_bytes)
