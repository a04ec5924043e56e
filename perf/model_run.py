"""What running a model bundle in the sandbox costs against running the same predict in process.

Run: .venv/bin/python perf/model_run.py [--questions 500] [--runs 5] [--batch-size 32]
     [--mode bwrap|none]

Bundle: the reference bundle (scoring/model_bundles/reference/predict.py, a lexical-overlap
baseline, standard library only), zipped by build_reference_bundle. Inputs: the first N SQuAD
dev questions (../shared/data/expmrc/expmrc-squad-dev.json, public inputs only); a built-in
passage repeated when that file is missing (the output says which).

The same bundle, examples and batches run
  - in process: scoring.model_bundles.in_process.run_in_process (bundle check and unpacking,
    import, predict per batch, the reply checks, the merge), in this already started Python;
  - sandboxed as a worker runs it (keep_warm, the default of the sandbox workers): the
    previous run left a sandbox started ahead (job directory, cgroups, uid, bwrap, Python,
    seccomp: everything but the bundle), so the run pays the bundle check and unpacking, the
    bundle's import, the batches over the pipe with the parent's checks, and the teardown;
  - sandboxed cold: the same, starting its own sandbox (a worker's first run, or a run whose
    budget differs from its predecessor's), for the fixed cost of a start.
One warm-up run of each first (the sandbox probe is cached in a worker; the page cache warm),
then --runs alternating runs; medians of the whole-run wall clock. Before each measured run the
sandbox started ahead is waited for, so its boot (~0.05 s of CPU, spent between runs in a
worker) does not overlap the other side's measurement. All runs' predictions are compared byte
for byte. The last line is `ratio: <in-process time / sandboxed time>` (whole runs, as a worker
runs them); the cold ratio is printed above it.
"""
from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SQUAD_DEV = REPO.parent / "shared" / "data" / "expmrc" / "expmrc-squad-dev.json"
sys.path.insert(0, str(REPO))

from scoring.metrics import expmrc  # noqa: E402
from scoring.model_bundles.build import build_reference_bundle  # noqa: E402
from scoring.model_bundles.examples import span_examples  # noqa: E402
from scoring.model_bundles.in_process import run_in_process  # noqa: E402
from scoring.sandbox import sandbox_available  # noqa: E402
from scoring.sandbox.model_contract import ModelBudget  # noqa: E402
from scoring.sandbox.model_runner import ahead_ready, discard_ahead, run_model_bundle  # noqa: E402

FALLBACK_CONTEXT = ("The Normans were the people who in the 10th and 11th centuries gave their name to "
                    "Normandy, a region in France. They were descended from Norse raiders. Their identity "
                    "emerged in the first half of the 10th century. The duchy fought in many wars.")
FALLBACK_QUESTIONS = ("In what country is Normandy located?", "When were the Normans in Normandy?",
                      "From which people were the Normans descended?", "When did their identity emerge?")


def load_examples(count: int) -> tuple[list[dict], str]:
    if SQUAD_DEV.is_file():
        gold = json.loads(SQUAD_DEV.read_text(encoding="utf-8"))
        examples = span_examples(expmrc.public_inputs(gold))
        while len(examples) < count:  # the dev set has 501; more repeats it under new ids
            examples += [dict(example, id=f"{example['id']}-{len(examples)}") for example in examples]
        return examples[:count], f"the first {count} questions of {SQUAD_DEV.name}"
    examples = [{"id": f"q{i}", "question": FALLBACK_QUESTIONS[i % len(FALLBACK_QUESTIONS)],
                 "context": FALLBACK_CONTEXT} for i in range(count)]
    return examples, f"{count} questions on a built-in passage ({SQUAD_DEV} is missing)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=500)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--mode", choices=("bwrap", "none"), default="bwrap")
    args = parser.parse_args()
    usable, reason = sandbox_available(args.mode)
    if not usable:
        sys.exit(f"no sandbox: {reason}")
    examples, source = load_examples(args.questions)
    budget = ModelBudget(cpu_seconds=600, memory_bytes=2 * 2**30, wall_seconds=600)
    with tempfile.TemporaryDirectory() as folder:
        bundle = build_reference_bundle(Path(folder) / "reference.zip")
        print(f"inputs: {source}; batches of {args.batch_size}; mode {args.mode}; {reason}")

        def sandboxed():
            ahead_ready()  # the previous run's sandbox has booted: nothing runs beside the measurement
            return run_model_bundle(bundle, examples, budget=budget, batch_size=args.batch_size, mode=args.mode,
                                    keep_warm=True)

        def cold():  # starts one ahead at its end too, for the next sandboxed run
            discard_ahead()
            return run_model_bundle(bundle, examples, budget=budget, batch_size=args.batch_size, mode=args.mode,
                                    keep_warm=True)

        def in_process():
            ahead_ready()
            return run_in_process(bundle, examples, batch_size=args.batch_size)

        first_runs = (cold(), sandboxed(), in_process())
        for result in first_runs:
            if not result.ok:
                sys.exit(f"the reference bundle failed ({result.mode}): {result.failure}: {result.message}")
        sandbox_runs, local_runs, cold_runs = [], [], []
        for _ in range(args.runs):
            cold_runs.append(cold())
            sandbox_runs.append(sandboxed())
            local_runs.append(in_process())
        discard_ahead()
        every = list(first_runs) + sandbox_runs + local_runs + cold_runs
        identical = all(run.predictions_json == every[-1].predictions_json for run in every)
        ahead = sum(run.started_ahead for run in sandbox_runs)
    sandbox_total = statistics.median(run.total_seconds for run in sandbox_runs)
    cold_total = statistics.median(run.total_seconds for run in cold_runs)
    cold_startup = statistics.median(run.startup_seconds for run in cold_runs)
    local_total = statistics.median(run.total_seconds for run in local_runs)
    startup = statistics.median(run.startup_seconds for run in sandbox_runs)
    sandbox_batches = statistics.median(sum(run.batch_seconds) for run in sandbox_runs)
    sandbox_predict = statistics.median(run.predict_seconds for run in sandbox_runs)
    local_batches = statistics.median(sum(run.batch_seconds) for run in local_runs)
    local_predict = statistics.median(run.predict_seconds for run in local_runs)
    rest = sandbox_total - startup - sandbox_batches
    print(f"predictions identical (every run, sandboxed and in process): {identical}; examples {len(examples)}, "
          f"batches {sandbox_runs[0].batches}; sandboxed runs that found a sandbox started ahead: "
          f"{ahead} of {len(sandbox_runs)}")
    print(f"in process (median of {args.runs}): {local_total:.3f} s = batches {local_batches:.3f} s "
          f"(inside predict {local_predict:.3f} s) + bundle check, unpacking and import "
          f"{local_total - local_batches:.3f} s")
    print(f"sandboxed, cold (median of {args.runs}): {cold_total:.3f} s, of which start-up {cold_startup:.3f} s "
          f"(cgroups, bwrap, Python, seccomp, import); ratio cold: {local_total / cold_total:.3f}")
    print(f"sandboxed  (median of {args.runs}): {sandbox_total:.3f} s = start-up {startup:.3f} s (the bundle's "
          f"import, in a sandbox started ahead) + batches {sandbox_batches:.3f} s "
          f"(inside predict {sandbox_predict:.3f} s) "
          f"+ job set-up and teardown {rest:.3f} s; CPU of the sandbox {sandbox_runs[-1].cpu_seconds:.3f} s")
    print(f"fixed cost of a sandboxed run started ahead: "
          f"{sandbox_total - sandbox_batches - (local_total - local_batches):.3f} s; "
          f"per batch: {1000 * (sandbox_batches - local_batches) / sandbox_runs[0].batches:+.2f} ms "
          f"(steady-state ratio, batches only: {local_batches / sandbox_batches:.3f})")
    print(f"ratio: {local_total / sandbox_total:.3f}")


if __name__ == "__main__":
    main()
