#!/usr/bin/env bash
# The QUACKIE model work of scripts/run.sh (QUACKIE_MODELS=1), started in the background once
# the site is up, so that no page waits for it:
#   1. install the model stack (requirements-models.txt: torch, transformers, the baselines'
#      packages) into .venv, a line per package in the log;
#   2. train the demo answerability classifier when var/models has none (niced, at most two
#      threads; a progress line per step in the log), then run load_demo again, which adds the
#      demo track: the models worker computes its inclusion flags and built-in baselines.
# Progress: var/log/quackie-models.log (run.sh prints where each stage stands).
# Usage: bash scripts/quackie_models.sh install | train | worker COMMAND...
#   worker: wait until the model stack is installed, then exec COMMAND (the models worker).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p var/log
log=var/log/quackie-models.log
stage() { echo "$(date '+%F %T') quackie models: $*" | tee -a "$log"; }

case "${1:-}" in
  install)
    if [ -n "${USE_ACTIVE_ENV:-}" ]; then  # the operator's own environment: nothing installed here
      python -c "import torch, transformers" 2>/dev/null \
        || { stage "this Python has no torch/transformers: pip install '.[models]' first"; exit 1; }
      exit 0
    fi
    stage "installing the model stack (requirements-models.txt); progress in $log"
    started=$SECONDS
    VENV_PROGRESS=1 source scripts/venv.sh requirements-models.txt >> "$log" 2>&1 \
      || { stage "installing the model stack failed; see $log"; exit 1; }
    stage "model stack installed in $(( SECONDS - started )) s"
    ;;
  train)
    # shellcheck disable=SC1091
    [ -n "${USE_ACTIVE_ENV:-}" ] || source .venv/bin/activate
    # Where the settings put the demo classifier and the shared data (nothing else printed).
    paths=$(python -c "import django, os
os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'config.settings')
django.setup()
from django.conf import settings
from benchmark.quackie_tracks import demo_model_dir
print(demo_model_dir())
print(settings.SHARED_DATA_DIR / 'expmrc' / 'expmrc-squad-dev.json')")
    out=$(sed -n 1p <<< "$paths")
    data=$(sed -n 2p <<< "$paths")
    if [ -f "$out/config.json" ]; then
      stage "demo classifier already trained ($out)"
    elif [ ! -f "$data" ]; then
      stage "no $data: no demo classifier (train one with manage.py train_answerability_classifier)"
      exit 0
    else
      stage "training the demo classifier in the background (nice 19); progress in $log"
      started=$SECONDS
      nice -n 19 python manage.py train_answerability_classifier --data "$data" --out "$out" >> "$log" 2>&1
      stage "demo classifier trained in $(( SECONDS - started )) s"
    fi
    python manage.py load_demo >> "$log" 2>&1
    stage "demo track loaded; the models worker computes its inclusion flags and baselines"
    ;;
  worker)
    shift
    if [ -z "${USE_ACTIVE_ENV:-}" ]; then
      # The stamp venv.sh writes once requirements-models.txt is installed as it is now.
      want=$(cat requirements*.txt | sha256sum | cut -c1-16)
      until [ "$(cat .venv/.installed-requirements-models.txt 2>/dev/null)" = "$want" ]; do sleep 2; done
      # shellcheck disable=SC1091
      source .venv/bin/activate
    fi
    exec "$@"
    ;;
  *)
    echo "usage: $0 install | train | worker COMMAND..." >&2
    exit 2
    ;;
esac
