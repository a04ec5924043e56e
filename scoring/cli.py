"""``python -m scoring <scorer> ...``: score files from the command line.

Each scorer is an argparse subcommand; invalid input ends with one ``error: ...`` line on
stderr and exit status 2, never a traceback.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
from pathlib import Path
from typing import NoReturn, Sequence

from . import stats
from .strict_json import InvalidJson, loads_json

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


def _expmrc_gold(path: str):
    """(gold, key spec) of an ExpMRC gold file, or one clear error line."""
    from .metrics import expmrc  # noqa: PLC0415  (NLTK loads only for the sub-commands that score)

    gold = _read_json_file(path, "gold file")
    try:
        return gold, expmrc.key_spec(gold)
    except expmrc.InvalidGold as exc:
        raise CliError(f"invalid gold file {path}: {exc}") from None


def _expmrc_predictions(path: str, spec, max_bytes: int) -> dict:
    """A validated ExpMRC prediction file, or one clear error line naming the file."""
    from .metrics import expmrc  # noqa: PLC0415  (as above)

    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise CliError(f"cannot read prediction file {path}: {exc.strerror or exc}") from None
    try:
        return expmrc.parse_predictions(raw, spec, max_bytes=max_bytes)
    except expmrc.InvalidPredictions as exc:
        raise CliError(f"invalid prediction file {path}: {exc}") from None


def _run_expmrc(args: argparse.Namespace) -> int:
    # Each sub-command imports its own scorer: NLTK, jieba and lemminflect load only when needed.
    from .metrics import expmrc  # noqa: PLC0415

    gold, spec = _expmrc_gold(args.gold)
    score = expmrc.score_predictions(gold, _expmrc_predictions(args.predictions, spec, args.max_bytes))
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
    from .analysis import icq  # noqa: PLC0415  (loads the NLP lexicons: this sub-command only)

    rows = _read_jsonl(path, what)
    try:
        kind = icq.infer_kind(rows[0][1], f"{what} {path} line {rows[0][0]}")
        instances: list[icq.Instance] = []
        seen: dict[str, int] = {}
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
    from .analysis import icq  # noqa: PLC0415  (loads the NLP lexicons: this sub-command only)

    options = {instance.id: len(instance.hypotheses) for instance in test}
    predictions: dict[str, object] = {}
    seen: dict[str, int] = {}
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
    from .analysis import icq  # noqa: PLC0415  (jieba / lemminflect load only when this runs)

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


# Optional dependencies of some sub-commands, and the extra of the ``expbench`` package that
# installs them (pyproject.toml): the base install scores ExpMRC and QUACKIE with nltk and numpy.
OPTIONAL_MODULES = {"jieba": "nlp", "lemminflect": "nlp", "vaderSentiment": "nlp", "symspellpy": "nlp"}


def program_name() -> str:
    """``expbench-score`` when run as the installed console script, else ``python -m scoring``."""
    invoked = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else ""
    return invoked if invoked.startswith("expbench-score") else f"python -m {__package__}"


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineErrorParser(prog=program_name(), description="ExpBench scorers.")
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

    linguistic = scorers.add_parser(
        "linguistic", help="linguistic bias of ExpMRC span answers: F1 per subset, corrected score, permutation p")
    linguistic.add_argument("gold", metavar="GOLD.json", help="ExpMRC span test set (SQuAD / CMRC 2018 layout)")
    linguistic.add_argument("predictions", metavar="PRED.json", help='{"<key>": {"answer": ..., "evidence": ...}}')
    linguistic.add_argument("--language", choices=("en", "zh"),
                            help="properties and tokenisation (default: zh for a CMRC 2018 set, else en)")
    linguistic.add_argument("--permutations", type=int, default=2000,
                            help="shuffles per property for the p-values (default: 2000)")
    linguistic.add_argument("--min-bin-size", type=int, default=10,
                            help="smallest subset in the corrected score and its test (default: 10)")
    linguistic.add_argument("--max-bytes", type=int, default=50 * 1024 * 1024,
                            help="largest accepted prediction file (default: 50 MiB)")
    linguistic.set_defaults(run=_run_linguistic)
    _add_skills_parser(scorers)
    _add_compare_parser(scorers)
    _add_model_parsers(scorers)
    return parser


def _add_model_parsers(scorers) -> None:
    """``run-model`` (a model bundle's predict on public inputs, as the sandbox runs it) and
    ``build-bundle`` (a reproducible bundle zip)."""
    run_model = scorers.add_parser("run-model", help="run a model bundle's predict(examples) on a task's public "
                                                     "inputs exactly as the server does; predictions JSON out")
    run_model.add_argument("bundle", metavar="BUNDLE.zip", help="a zip whose root holds predict.py")
    run_model.add_argument("inputs", metavar="INPUTS.json", help="the task's public inputs (expbench inputs TASK)")
    run_model.add_argument("--format", dest="prediction_format", choices=("span", "multichoice", "classification"),
                           help="the examples' format (default: told by the inputs)")
    run_model.add_argument("--out", metavar="PRED.json", help="write the predictions here (default: stdout)")
    run_model.add_argument("--batch-size", type=int, default=32, help="examples per predict call (default: 32)")
    run_model.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                           help="the device predict is told (EXPBENCH_DEVICE; default: cpu)")
    run_model.add_argument("--sandbox", action="store_true",
                           help="run in the bubblewrap sandbox with the default budget instead of in this process")
    run_model.add_argument("--hidden", action="store_true",
                           help="on failure print only what a run on hidden inputs shows (the category's sentence)")
    run_model.set_defaults(run=_run_model)

    bundle = scorers.add_parser("build-bundle", help="zip a folder holding predict.py into a model bundle "
                                                     "(reproducible bytes), or the reference bundle")
    bundle.add_argument("folder", metavar="DIR", nargs="?", help="the folder (its contents go to the zip's root)")
    bundle.add_argument("--reference", action="store_true", help="the reference bundle (lexical-overlap baseline)")
    bundle.add_argument("--out", required=True, metavar="BUNDLE.zip", help="where to write the zip")
    bundle.set_defaults(run=_run_build_bundle)


def _run_model(args: argparse.Namespace) -> int:
    # NLTK (the ExpMRC parser) loads only for the model sub-commands.
    from .model_bundles import command  # noqa: PLC0415

    options = command.RunOptions(bundle=args.bundle, inputs=args.inputs, prediction_format=args.prediction_format,
                                 out=args.out, batch_size=args.batch_size, device=args.device,
                                 sandbox=args.sandbox)
    try:
        status, result = command.run(options)
    except command.ModelCommandError as exc:
        raise CliError(str(exc)) from None
    if status:
        print(command.failure_text(result, hidden=args.hidden), file=sys.stderr)
    else:
        print(command.summary_text(result), file=sys.stderr)
    return status


def _run_build_bundle(args: argparse.Namespace) -> int:
    from .model_bundles import command  # noqa: PLC0415  (as above)

    try:
        print(command.build(args.folder, args.out, reference=args.reference))
    except command.ModelCommandError as exc:
        raise CliError(str(exc)) from None
    return 0


def _add_skills_parser(scorers) -> None:
    """``skills build`` / ``skills score``: InDepth-Eva-MRC skill variants, built and scored as the server does."""
    skills = scorers.add_parser("skills", help="skill variants s1-s14 (InDepth-Eva-MRC): build them, score a "
                                               "skills submission")
    commands = skills.add_subparsers(dest="skills_command", required=True, metavar="COMMAND")
    build = commands.add_parser("build", help="write each variant's public inputs and gold; summary on stdout")
    build.add_argument("gold", metavar="GOLD.json", help="ExpMRC span test set (SQuAD / CMRC 2018 layout)")
    build.add_argument("--out", required=True, metavar="DIR", help="folder for <skill>.inputs.json, <skill>.gold.json")
    score = commands.add_parser("score", help="original F1 and per-skill F1, gap, 95% CI (as the server)")
    score.add_argument("gold", metavar="GOLD.json", help="ExpMRC span test set (SQuAD / CMRC 2018 layout)")
    score.add_argument("submission", metavar="SKILLS.json", help='{"original": {...}, "s1": {...}, ...}')
    for command in (build, score):
        command.add_argument("--language", choices=("en", "zh"),
                             help="passage language (default: zh for a CMRC 2018 set, else en)")
        command.set_defaults(run=_run_skills)


def _run_skills(args: argparse.Namespace) -> int:
    # NLTK, the word lists and lemminflect load only for this sub-command.
    from .analysis.skills import command  # noqa: PLC0415

    try:
        if args.skills_command == "build":
            result = command.build(args.gold, args.out, args.language)
        else:
            result = command.score(args.gold, args.submission, args.language)
    except command.SkillsInputError as exc:
        raise CliError(str(exc)) from None
    sys.stdout.buffer.write((json.dumps(result, ensure_ascii=False) + "\n").encode("utf-8"))
    sys.stdout.flush()
    return 0


def _run_quackie(args: argparse.Namespace) -> int:
    from .metrics import quackie  # noqa: PLC0415  (NLTK loads only for this sub-command)

    try:
        result = quackie.run(args.gold, args.scores, max_bytes=args.max_bytes)
    except quackie.InvalidQuackieInput as exc:
        raise CliError(str(exc)) from None
    print(quackie.summary_line(result))
    return 0


def _run_linguistic(args: argparse.Namespace) -> int:
    """The linguistic-bias part of the server's span diagnostics (public split: no pooling of
    small subsets), on each question's answer F1 from the ExpMRC scorer."""
    # NLTK (and jieba for Chinese) load only for this sub-command.
    from .analysis import linguistic  # noqa: PLC0415
    from .metrics import expmrc  # noqa: PLC0415

    if args.permutations < 1:
        raise CliError("--permutations must be at least 1")
    if args.min_bin_size < 2:
        raise CliError("--min-bin-size must be at least 2")
    gold, spec = _expmrc_gold(args.gold)
    if spec.kind != expmrc.SPAN:
        raise CliError(f"gold file {args.gold} is a multiple-choice set: the linguistic bias needs span answers "
                       "(SQuAD or CMRC 2018 layout)")
    score = expmrc.score_predictions(gold, _expmrc_predictions(args.predictions, spec, args.max_bytes))
    language = args.language or ("zh" if "cmrc2018" in gold["version"] else "en")
    items = [{**item, "f1": question["answer"]}
             for item, question in zip(linguistic.expmrc_span_items(gold), score.per_question, strict=True)]
    result = linguistic.linguistic_bias(items, language=language, n_permutations=args.permutations,
                                        min_bin_size=args.min_bin_size)
    if score.unanswered:
        print(f"unanswered: {score.unanswered}", file=sys.stderr)
    document = {"version": score.version, "file": args.predictions, "total": score.total,
                "unanswered": score.unanswered, "answer_f1": score.answer, "linguistic_bias": result}
    sys.stdout.buffer.write((json.dumps(document, ensure_ascii=False) + "\n").encode("utf-8"))
    sys.stdout.flush()
    return 0


def _add_compare_parser(scorers) -> None:
    """``compare``: several ExpMRC prediction files ranked as a leaderboard ranks them."""
    compare = scorers.add_parser("compare", help="rank ExpMRC prediction files as a leaderboard does: scores, "
                                                 "95%% CIs, significance tiers, paired tests (one JSON document)")
    compare.add_argument("gold", metavar="GOLD.json", help="ExpMRC test set (SQuAD/CMRC 2018/RACE+/C3 layout)")
    compare.add_argument("predictions", metavar="PRED.json", nargs="+", help="two or more prediction files")
    compare.add_argument("--bootstrap-resamples", type=int, default=stats.DEFAULT_BOOTSTRAP_RESAMPLES,
                         help="resamples of the CIs (default: %(default)s, as the server)")
    compare.add_argument("--tier-resamples", type=int, default=stats.DEFAULT_TIER_RESAMPLES,
                         help="sign flips of the paired tests (default: %(default)s, as the server)")
    compare.add_argument("--max-bytes", type=int, default=50 * 1024 * 1024,
                         help="largest accepted prediction file (default: 50 MiB)")
    compare.set_defaults(run=_run_compare)


def _run_compare(args: argparse.Namespace) -> int:
    """Scores (0-100), 95% CIs (``stats.bootstrap_cis``, seed 0), rank (primary metric overall F1,
    ties share a rank: 1, 2, 2, 4), tier (``stats.significance_tiers`` on per-question overall
    F1, seed 0) and the paired p-value of every pair, as the server computes them."""
    from .metrics import expmrc  # noqa: PLC0415  (NLTK loads only for the ExpMRC sub-commands)

    if len(args.predictions) < 2:
        raise CliError("compare needs at least two prediction files")
    repeated = next((path for path in args.predictions if args.predictions.count(path) > 1), None)
    if repeated is not None:
        raise CliError(f"prediction file {repeated} is given twice")
    for option in ("bootstrap_resamples", "tier_resamples"):
        if getattr(args, option) < 1:
            raise CliError(f"--{option.replace('_', '-')} must be at least 1")
    gold, spec = _expmrc_gold(args.gold)
    scores = [expmrc.score_predictions(gold, _expmrc_predictions(path, spec, args.max_bytes))
              for path in args.predictions]
    # The server's metric keys (submissions/scorers.py): multiple choice has answer accuracy.
    columns = {"answer_acc" if spec.kind == expmrc.MULTICHOICE else "answer_f1": "answer",
               "evidence_f1": "evidence", "overall_f1": "overall"}
    order = sorted(range(len(scores)), key=lambda i: -scores[i].overall)  # stable: ties keep the given order
    systems: list[dict[str, object]] = []
    for position, i in enumerate(order, start=1):
        score = scores[i]
        tied = position > 1 and score.overall == scores[order[position - 2]].overall
        per_item = {key: [100.0 * row[field] for row in score.per_question] for key, field in columns.items()}
        intervals = stats.bootstrap_cis(per_item, n_resamples=args.bootstrap_resamples, seed=0)
        systems.append({
            "file": args.predictions[i],
            "scores": {key: getattr(score, field) for key, field in columns.items()},
            "ci": {key: list(bounds) if all(math.isfinite(b) for b in bounds) else None
                   for key, bounds in intervals.items()},
            "rank": systems[-1]["rank"] if tied else position,
            "total": score.total,
            "unanswered": score.unanswered,
        })
    overall = [[row["overall"] for row in scores[i].per_question] for i in order]
    tiers = stats.significance_tiers(overall, alpha=stats.TIER_ALPHA, n_resamples=args.tier_resamples, seed=0)
    for system, tier in zip(systems, tiers, strict=True):
        system.update(tier)
    paired = [{"a": systems[a]["file"], "b": systems[b]["file"],
               "p_value": stats.paired_test(overall[a], overall[b], n_resamples=args.tier_resamples, seed=0)}
              for a in range(len(systems)) for b in range(a + 1, len(systems))]
    document = {"systems": systems, "paired": paired, "procedure": stats.TIER_PROCEDURE}
    sys.stdout.buffer.write((json.dumps(document, ensure_ascii=False) + "\n").encode("utf-8"))
    sys.stdout.flush()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except CliError as exc:
        print("error: " + " ".join(str(exc).split()), file=sys.stderr)
        return EXIT_INVALID_INPUT
    except ModuleNotFoundError as exc:
        extra = OPTIONAL_MODULES.get((exc.name or "").partition(".")[0])
        if extra is None:
            raise
        print(f"error: {args.scorer} needs the optional package {exc.name}: "
              f"pip install 'expbench[{extra}]'", file=sys.stderr)
        return EXIT_INVALID_INPUT
