"""``python -m scoring <scorer> ...``: score files from the command line.

Each scorer is an argparse subcommand; invalid input ends with one ``error: ...`` line on
stderr and exit status 2, never a traceback.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Sequence

EXIT_INVALID_INPUT = 2


class CliError(Exception):
    """An input problem worth one line on stderr."""


def _read_json_file(path: str, what: str):
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise CliError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    try:
        return json.loads(raw)  # bytes: UTF-8 with or without BOM (and UTF-16/32) are detected
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CliError(f"{what} {path} is not valid JSON: {exc}") from None


def _per_question_json(score) -> str:
    """The whole score as JSON, one per-question row a line (readable, diff-friendly)."""
    summary = dataclasses.asdict(score)
    rows = summary.pop("per_question")
    lines = ",\n".join(json.dumps(row, ensure_ascii=False) for row in rows)
    return json.dumps(summary, ensure_ascii=False)[:-1] + ', "per_question": [\n' + lines + "\n]}\n"


def _run_expmrc(args: argparse.Namespace) -> int:
    from scoring import expmrc  # imported here: NLTK loads only when this scorer runs

    gold = _read_json_file(args.gold, "gold file")
    try:
        spec = expmrc.key_spec(gold)
    except expmrc.InvalidGold as exc:
        raise CliError(f"invalid gold file {args.gold}: {exc}") from None
    try:
        raw = Path(args.predictions).read_bytes()
    except OSError as exc:
        raise CliError(f"cannot read prediction file {args.predictions}: {exc.strerror or exc}") from None
    try:
        predictions = expmrc.parse_predictions(raw, spec, max_bytes=args.max_bytes)
    except expmrc.InvalidPredictions as exc:
        raise CliError(f"invalid prediction file {args.predictions}: {exc}") from None
    score = expmrc.score_predictions(gold, predictions)
    if args.per_question:
        try:
            Path(args.per_question).write_text(_per_question_json(score), encoding="utf-8")
        except OSError as exc:
            raise CliError(f"cannot write {args.per_question}: {exc.strerror or exc}") from None
    if score.unanswered:
        print(f"unanswered: {score.unanswered}", file=sys.stderr)
    print(json.dumps(score.official_dict(args.predictions)))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m scoring", description="ExpBench scorers.")
    scorers = parser.add_subparsers(dest="scorer", required=True, metavar="SCORER")

    expmrc = scorers.add_parser("expmrc", help="ExpMRC answer + evidence F1 (official eval_expmrc.py output)")
    expmrc.add_argument("gold", metavar="GOLD.json", help="ExpMRC test set (SQuAD/CMRC 2018/RACE+/C3 layout)")
    expmrc.add_argument("predictions", metavar="PRED.json", help='{"<key>": {"answer": ..., "evidence": ...}}')
    expmrc.add_argument("--per-question", metavar="OUT.json", help="also write per-question scores here")
    expmrc.add_argument("--max-bytes", type=int, default=50 * 1024 * 1024,
                        help="largest accepted prediction file (default: 50 MiB)")
    expmrc.set_defaults(run=_run_expmrc)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except CliError as exc:
        print("error: " + " ".join(str(exc).split()), file=sys.stderr)
        return EXIT_INVALID_INPUT
