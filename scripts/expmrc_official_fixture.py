"""Rebuild tests/fixtures/expmrc_official/: a few dozen ExpMRC dev questions, the official
sample predictions for them, and the figures the official algorithm gives them.

    python scripts/expmrc_official_fixture.py DEV_FOLDER

``DEV_FOLDER`` holds the four ExpMRC dev sets (``expmrc-<subset>-dev.json``) and the official
sample submissions (``sample_submission/<subset>.json``) as published. From each subset it
keeps the first questions in file order (whole passages for the multiple-choice subsets, whose
prediction keys count questions within a passage), at least ``--questions`` of them, and the
sample predictions for exactly those questions. The figures are computed by
perf/expmrc_reference.py, run as its own process like the official script (the plain
restatement of the official algorithm, nltk only, no ``scoring``), so they do not come from the
scorer they check.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "expmrc_official"
SUBSETS = ("squad", "cmrc2018", "race", "c3")


def span_subset(gold: dict, wanted: int) -> tuple[dict, list[str]]:
    """The first ``wanted`` questions, in their articles and paragraphs."""
    data, keys = [], []
    for article in gold["data"]:
        paragraphs = []
        for paragraph in article["paragraphs"]:
            qas = paragraph["qas"][:wanted - len(keys)]
            if qas:
                paragraphs.append({**paragraph, "qas": qas})
                keys += [qa["id"] for qa in qas]
        if paragraphs:
            data.append({**article, "paragraphs": paragraphs})
        if len(keys) >= wanted:
            break
    return {**gold, "data": data}, keys


def multichoice_subset(gold: dict, wanted: int) -> tuple[dict, list[str]]:
    """Whole passages, from the first, until ``wanted`` questions are in."""
    data, keys = [], []
    for passage in gold["data"]:
        data.append(passage)
        keys += [f"{passage['id']}-{j}" for j in range(len(passage["questions"]))]
        if len(keys) >= wanted:
            break
    return {**gold, "data": data}, keys


def official_figures(gold_path: Path, predictions_path: Path) -> dict:
    environment = {**os.environ, "NLTK_DATA": str(ROOT / "scoring" / "resources" / "nltk_data")}
    printed = subprocess.run([sys.executable, str(ROOT / "perf" / "expmrc_reference.py"), str(gold_path),
                              str(predictions_path)], capture_output=True, text=True, check=True, env=environment)
    figures = json.loads(printed.stdout)
    return {key: figures[key] for key in ("ALL_F1", "ANS_F1", "EVI_F1", "TOTAL", "SKIP", "VERSION")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dev_folder", type=Path)
    parser.add_argument("--questions", type=int, default=12, help="questions per subset, at least")
    args = parser.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    figures = {}
    for subset in SUBSETS:
        gold = json.loads((args.dev_folder / f"expmrc-{subset}-dev.json").read_text(encoding="utf-8"))
        sample = json.loads((args.dev_folder / "sample_submission" / f"{subset}.json").read_text(encoding="utf-8"))
        cut = span_subset if subset in ("squad", "cmrc2018") else multichoice_subset
        kept, keys = cut(gold, args.questions)
        gold_path, predictions_path = OUT / f"{subset}-gold.json", OUT / f"{subset}-predictions.json"
        gold_path.write_text(json.dumps(kept, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        predictions_path.write_text(json.dumps({key: sample[key] for key in keys}, ensure_ascii=False, indent=1)
                                    + "\n", encoding="utf-8")
        figures[subset] = official_figures(gold_path, predictions_path)
    (OUT / "figures.json").write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
