"""Start-up cost: ``django.setup()`` of a web or Celery worker, and ``expbench-score`` as a whole process.

Run: .venv/bin/python perf/startup.py [--repeats 5]

Two figures, each in fresh interpreters, best of ``--repeats`` runs per side, sides alternated so
a busy machine disturbs both alike. Times are CPU seconds of the child process (user + system),
memory is its peak resident set (ru_maxrss of the child, from os.wait4).

  (s) ``django.setup()`` with ``config.settings``: what every gunicorn and Celery worker pays at
      boot. Goal: at most 1.5 CPU-s. Beside it, the same set-up after ``import nltk`` (the whole of
      NLTK, with scipy.stats, scikit-learn and pandas, which django.setup() loaded before the
      scorers imported NLTK's tokenizers only); its ratio line is informative.
  (p) ``expbench-score expmrc GOLD PRED`` on the official SQuAD sample submission
      (shared/data/expmrc/sample_submission/squad.json against expmrc-squad-dev.json), as the
      console script runs it (``from scoring.cli import main``), against the official script's
      process: perf/expmrc_reference.py, the official algorithm restated with nltk and the
      standard library only, run with NLTK_DATA on the vendored Punkt model (it imports the whole
      of NLTK, as the official eval_expmrc.py does). Both print the same figures (checked).
      Goal: the official process takes at least 2x ours.

The last line, ``ratio: X``, is (p): the official script's CPU time over ours (above 1: ours is
faster).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "expmrc"
GOLD = DATA / "expmrc-squad-dev.json"
SAMPLE = DATA / "sample_submission" / "squad.json"
VENDORED_NLTK_DATA = REPO / "scoring" / "resources" / "nltk_data"
HEAVY = ("scipy", "sklearn", "pandas")

SETUP = ("import django, json, sys; django.setup(); "
         f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))")
SETUP_AFTER_WHOLE_NLTK = "import nltk; " + SETUP
# What the generated ``expbench-score`` console script does (pyproject.toml: scoring.cli:main).
CONSOLE_SCRIPT = "import sys; from scoring.cli import main; sys.exit(main())"


def measure(argv: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """(CPU seconds, peak RSS in MiB, stdout) of one child process run to its end."""
    # Files, not pipes: a child never blocks on a full pipe while we wait for it.
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        child = subprocess.Popen(argv, cwd=REPO, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode != 0:
            err.seek(0)
            raise SystemExit(f"{' '.join(argv)} failed ({child.returncode}):\n{err.read().decode()}")
        out.seek(0)
        return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, out.read().decode()


def best_of(sides: dict[str, tuple[list[str], dict[str, str]]], repeats: int) -> dict[str, tuple[float, float, str]]:
    """Each side run ``repeats`` times, alternated; the run with the least CPU time per side."""
    best: dict[str, tuple[float, float, str]] = {}
    for _ in range(repeats):
        for name, (argv, env) in sides.items():
            figures = measure(argv, env)
            if name not in best or figures[0] < best[name][0]:
                best[name] = figures
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    for path in (GOLD, SAMPLE):
        if not path.is_file():
            raise SystemExit(f"missing {path} (the ExpMRC data of the shared folder)")

    base = {**os.environ, "PYTHONPATH": str(REPO), "OMP_WAIT_POLICY": "PASSIVE"}
    django_env = {**base, "DJANGO_SETTINGS_MODULE": "config.settings", "CACHE_URL": base.get("CACHE_URL", "locmem://")}
    setup = best_of({"ours": ([sys.executable, "-c", SETUP], django_env),
                     "whole nltk": ([sys.executable, "-c", SETUP_AFTER_WHOLE_NLTK], django_env)}, args.repeats)
    cpu, rss, out = setup["ours"]
    print(f"(s) django.setup():                       {cpu:6.2f} CPU-s {rss:6.0f} MiB  "
          f"heavy modules loaded: {json.loads(out) or 'none'}  (goal <= 1.5 CPU-s)")
    cpu_w, rss_w, _ = setup["whole nltk"]
    print(f"    after `import nltk` (whole NLTK):     {cpu_w:6.2f} CPU-s {rss_w:6.0f} MiB")
    print(f"    setup ratio (whole NLTK / ours): {cpu_w / cpu:.2f} CPU, {rss_w / rss:.2f} memory")

    score = best_of({
        "ours": ([sys.executable, "-c", CONSOLE_SCRIPT, "expmrc", str(GOLD), str(SAMPLE)], base),
        "official": ([sys.executable, str(REPO / "perf" / "expmrc_reference.py"), str(GOLD), str(SAMPLE)],
                     {**base, "NLTK_DATA": str(VENDORED_NLTK_DATA)}),
    }, args.repeats)
    ours, official = json.loads(score["ours"][2]), json.loads(score["official"][2])
    if ours != official:
        raise SystemExit(f"different figures:\n  ours     {ours}\n  official {official}")
    print(f"(p) expbench-score expmrc (SQuAD sample): {score['ours'][0]:6.2f} CPU-s {score['ours'][1]:6.0f} MiB")
    print(f"    official script process:              {score['official'][0]:6.2f} CPU-s "
          f"{score['official'][1]:6.0f} MiB  (same figures: ALL_F1 {ours['ALL_F1']})")
    print(f"ratio: {score['official'][0] / score['ours'][0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
