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
from typing import NoReturn, Sequence

from scoring.strict_json import InvalidJson, loads_json

EXIT_INVALID_INPUT = 2


class CliError(Exception):
    """An input problem worth one line on stderr."""


def _read_json_file(path: str, what: str):
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise CliError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    try:
        return loads_json(raw)  # bytes: UTF-8 with or without BOM (and UTF-16/32) are detected
    except (InvalidJson, UnicodeDecodeError) as exc:
        raise CliError(f"{what} {path} is not valid JSON: {exc}") from None


def _per_question_json(score) -> str:
    """The whole score as JSON, one per-question row a line (readable, diff-friendly)."""
    summary = dataclasses.asdict(score)
    rows = summary.pop("per_question")
    lines = ",\n".join(json.dumps(row, ensure_ascii=False) for row in rows)
    return json.dumps(summary, ensure_ascii=False)[:-1] + ', "per_question": [\n' + lines + "\n]}\n"


def _run_expmrc(args: argparse.Namespace) -> int:
    # Each sub-command imports its own scorer: NLTK, jieba and lemminflect load only when needed.
    from scoring.metrics import expmrc  # noqa: PLC0415

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


def _read_jsonl(path: str, what: str) -> list[tuple[int, object]]:
    """(line number, parsed value) for every non-blank line of a JSON Lines file."""
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise CliError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CliError(f"{what} {path} is not UTF-8: {exc}") from None
    rows = []
    for number, line in enumerate(text.split("\n"), start=1):  # not splitlines(): U+2028 may sit in strings
        if not line.strip():
            continue
        try:
            rows.append((number, loads_json(line)))
        except InvalidJson as exc:
            raise CliError(f"{what} {path} line {number}: not valid JSON: {exc.reason}") from None
    if not rows:
        raise CliError(f"{what} {path} holds no rows")
    return rows


def _icq_instances(path: str, what: str, *, unique_ids: bool):
    from scoring.analysis import icq  # noqa: PLC0415  (loads the NLP lexicons: this sub-command only)

    rows = _read_jsonl(path, what)
    try:
        kind = icq.infer_kind(rows[0][1], f"{what} {path} line {rows[0][0]}")
        instances, seen = [], {}
        for number, row in rows:
            instance = icq.instance_from_row(row, kind, f"{what} {path} line {number}")
            if unique_ids and instance.id in seen:
                raise icq.InvalidICQInput(f"{what} {path} line {number}: field 'id' repeats the id of line "
                                          f"{seen[instance.id]}")
            seen.setdefault(instance.id, number)
            instances.append(instance)
    except icq.InvalidICQInput as exc:
        raise CliError(str(exc)) from None
    return kind, instances


def _icq_predictions(path: str, test, kind: str) -> dict:
    from scoring.analysis import icq  # noqa: PLC0415  (loads the NLP lexicons: this sub-command only)

    options = {instance.id: len(instance.hypotheses) for instance in test}
    predictions, seen = {}, {}
    for number, row in _read_jsonl(path, "prediction file"):
        where = f"prediction file {path} line {number}"
        if not isinstance(row, dict):
            raise CliError(f"{where}: must be a JSON object")
        for name in ("id", "label"):
            if name not in row:
                raise CliError(f"{where}: field '{name}' is missing")
        key, label = row["id"], row["label"]
        if isinstance(key, int) and not isinstance(key, bool):
            key = str(key)
        if not isinstance(key, str):
            raise CliError(f"{where}: field 'id' must be a string")
        if key not in options:
            raise CliError(f"{where}: field 'id' names no instance of the test file")
        if key in seen:
            raise CliError(f"{where}: field 'id' repeats the prediction of line {seen[key]}")
        seen[key] = number
        count = options[key]
        if kind == icq.MULTICHOICE:
            if icq.predicted_option(label, count) is None:
                raise CliError(f"{where}: field 'label' must be an option index 0..{count - 1}")
        elif icq.predicted_label(label) is None:
            raise CliError(f"{where}: field 'label' must be a string")
        predictions[key] = label
    return predictions


def _run_icq(args: argparse.Namespace) -> int:
    if args.top_k < 1:
        raise CliError("--top-k must be at least 1")
    from scoring.analysis import icq  # noqa: PLC0415  (jieba / lemminflect load only when this runs)

    reference_kind, reference = _icq_instances(args.reference, "reference file", unique_ids=False)
    kind, test = _icq_instances(args.test, "test file", unique_ids=True)
    if reference_kind != kind:
        raise CliError(f"reference file {args.reference} holds {reference_kind} rows but test file "
                       f"{args.test} holds {kind} rows")
    predictions = _icq_predictions(args.predictions, test, kind) if args.predictions else None
    result = icq.profile(reference, test, predictions, kind=kind, language=args.language,
                         top_k=args.top_k, seed=args.seed)
    if predictions is not None and len(predictions) < len(test):
        print(f"unpredicted: {len(test) - len(predictions)}", file=sys.stderr)
    sys.stdout.buffer.write((json.dumps(result, ensure_ascii=False) + "\n").encode("utf-8"))
    sys.stdout.flush()
    return 0


class OneLineErrorParser(argparse.ArgumentParser):
    """Bad arguments end like any invalid input: one ``error: ...`` line and exit status 2,
    instead of argparse's usage block. Subcommand parsers inherit this class."""

    def error(self, message: str) -> NoReturn:
        print(f"error: {self.prog}: {' '.join(message.split())} (see {self.prog} --help)", file=sys.stderr)
        sys.exit(EXIT_INVALID_INPUT)


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineErrorParser(prog="python -m scoring", description="ExpBench scorers.")
    scorers = parser.add_subparsers(dest="scorer", required=True, metavar="SCORER")

    expmrc = scorers.add_parser("expmrc", help="ExpMRC answer + evidence F1 (official eval_expmrc.py output)")
    expmrc.add_argument("gold", metavar="GOLD.json", help="ExpMRC test set (SQuAD/CMRC 2018/RACE+/C3 layout)")
    expmrc.add_argument("predictions", metavar="PRED.json", help='{"<key>": {"answer": ..., "evidence": ...}}')
    expmrc.add_argument("--per-question", metavar="OUT.json", help="also write per-question scores here")
    expmrc.add_argument("--max-bytes", type=int, default=50 * 1024 * 1024,
                        help="largest accepted prediction file (default: 50 MiB)")
    expmrc.set_defaults(run=_run_expmrc)

    icq = scorers.add_parser("icq", help="ICQ cue profiling: cue discovery, accuracy and distribution tests")
    icq.add_argument("--reference", required=True, metavar="R.jsonl",
                     help='reference split (train/dev) rows: {"id", "premise", "hypothesis", "label"} '
                          'or {"id", "premise", "options": [...], "label": int}')
    icq.add_argument("--test", required=True, metavar="S.jsonl", help="test split rows, same layout")
    icq.add_argument("--predictions", metavar="P.jsonl", help='model predictions: {"id", "label"} per line')
    icq.add_argument("--language", choices=("en", "zh"), default="en", help="feature set (default: en)")
    icq.add_argument("--top-k", type=int, default=20, help="cues reported (default: 20)")
    icq.add_argument("--seed", type=int, default=0, help="seed of the distribution test's down-sampling")
    icq.set_defaults(run=_run_icq)

    quackie = scorers.add_parser("quackie", help="QUACKIE interpretability metrics: IoU, HPD, SNR (+ extended)")
    quackie.add_argument("gold", metavar="GOLD.json",
                         help='{"<id>": {"sentences": [...], "gt_candidates": [[0,1,0], ...]}}')
    quackie.add_argument("scores", metavar="SCORES.json", help='{"<id>": [float, ...]} one score per sentence')
    quackie.add_argument("--max-bytes", type=int, default=50 * 1024 * 1024,
                         help="largest accepted score file (default: 50 MiB)")
    quackie.set_defaults(run=_run_quackie)
    return parser


def _run_quackie(args: argparse.Namespace) -> int:
    from scoring.metrics import quackie  # noqa: PLC0415  (NLTK loads only for this sub-command)

    try:
        result = quackie.run(args.gold, args.scores, max_bytes=args.max_bytes)
    except quackie.InvalidQuackieInput as exc:
        raise CliError(str(exc)) from None
    print(quackie.summary_line(result))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except CliError as exc:
        print("error: " + " ".join(str(exc).split()), file=sys.stderr)
        return EXIT_INVALID_INPUT
