"""Small public inputs and bundles shared by the model-bundle tests (self-made, no test data)."""
import io
import zipfile
from pathlib import Path

SECRET = "CANARY-7f3a-hidden-input-text"

SPAN_INPUTS = {"version": "expmrc-squad-test", "data": [{"title": "Paris", "paragraphs": [{
    "context": "Paris is the capital of France. The Seine flows through the city. "
               "The Eiffel Tower was built in 1889 for a fair.",
    "qas": [{"id": "q1", "question": "What is the capital of France?"},
            {"id": "q2", "question": "When was the Eiffel Tower built?"},
            {"id": "q3", "question": "Which river flows through the city?"}]}]}]}
MULTICHOICE_INPUTS = {"version": "expmrc-race-test", "data": [{
    "id": "p-1", "article": "Tom likes apples. He eats one every morning. His sister prefers pears.",
    "questions": ["What does Tom eat every morning?", "What does his sister prefer?"],
    "options": [["an apple", "a pear", "bread", "rice"], ["apples", "pears", "milk"]]}]}
CLASSIFICATION_INPUTS = {"labels": ["contradiction", "entailment", "neutral"], "data": [
    {"id": "n1", "premise": "A man is playing a guitar on stage.", "hypothesis": "A man is playing a guitar."},
    {"id": "n2", "premise": "A dog runs in the park.", "hypothesis": "The dog is not running."}]}

GOOD = """
def predict(examples):
    return {e["id"]: {"answer": e["question"].split()[0], "evidence": e["context"][:20]} for e in examples}
"""

# name -> (files of the zip, expected category); predict is called on SPAN_INPUTS' examples.
BAD_BUNDLES = {
    "no predict.py": ({"model.py": GOOD}, "no_predict_py"),
    "no predict": ({"predict.py": "def other(examples):\n    return {}\n"}, "no_predict"),
    "predict not callable": ({"predict.py": "predict = 3\n"}, "no_predict"),
    "import error": ({"predict.py": "import not_an_installed_module_xyz\n" + GOOD}, "import_error"),
    "exception": ({"predict.py": "def predict(examples):\n    raise ValueError('boom')\n"}, "exception"),
    "list returned": ({"predict.py": "def predict(examples):\n    return [1, 2]\n"}, "wrong_return_type"),
    "integer keys": ({"predict.py": "def predict(examples):\n    return {i: {} for i, e in enumerate(examples)}\n"},
                     "wrong_return_type"),
    "missing ids": ({"predict.py": GOOD.replace("for e in examples}", "for e in examples[1:]}")}, "missing_ids"),
    "extra ids": ({"predict.py": GOOD + "\n_p = predict\n\ndef predict(examples):\n    out = _p(examples)\n"
                                        "    out['not-a-question'] = out[examples[0]['id']]\n    return out\n"},
                  "extra_ids"),
    "duplicate ids": ({"predict.py": "from collections.abc import Mapping\n\n"
                                     "class Twice(Mapping):\n"
                                     "    def __init__(self, ids):\n        self.ids = ids\n"
                                     "    def __getitem__(self, key):\n        return {'answer': 'a', 'evidence': 'b'}\n"
                                     "    def __iter__(self):\n        return iter(self.ids + self.ids[:1])\n"
                                     "    def __len__(self):\n        return len(self.ids) + 1\n\n"
                                     "def predict(examples):\n    return Twice([e['id'] for e in examples])\n"},
                      "duplicate_ids"),
    "wrong shape": ({"predict.py": "def predict(examples):\n    return {e['id']: 'Paris' for e in examples}\n"},
                    "bad_prediction"),
    "NaN": ({"predict.py": "def predict(examples):\n"
                           "    return {e['id']: {'answer': float('nan'), 'evidence': ''} for e in examples}\n"},
            "non_json"),
    "a set": ({"predict.py": "def predict(examples):\n"
                             "    return {e['id']: {'answer': {1}, 'evidence': ''} for e in examples}\n"},
              "non_json"),
    "path traversal": ({"predict.py": GOOD, "../escape.txt": "x"}, "invalid_bundle"),
    "syntax error": ({"predict.py": "def predict(examples)\n    return {}\n"}, "invalid_bundle"),
}


def make_zip(files: dict[str, bytes | str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def write_bundle(directory: Path, files: dict[str, bytes | str], name: str = "bundle.zip") -> Path:
    path = directory / name
    path.write_bytes(make_zip(files))
    return path
