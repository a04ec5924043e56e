#!/usr/bin/env bash
# Start ExpBench on the embedded default: SQLite + a filesystem Celery broker under var/,
# gunicorn behind its buffering front + Celery workers (scoring; reaper; maintenance; sandbox; models with QUACKIE_MODELS=1)
# + Celery beat, demo data loaded.
# A Celery process that exits is started again (see supervise below); Ctrl-C stops everything.
# Environment: PORT (8000), HOST (127.0.0.1), DATABASE_URL, CELERY_BROKER_URL, SECRET_KEY, ...
# USE_ACTIVE_ENV=1 runs with the active Python environment instead of creating .venv.
# The default start installs requirements.txt only: the boards, prediction-file and model-bundle
# submissions, diagnostics; no torch. QUACKIE_MODELS=1 also enables the QUACKIE model work: once
# the site is up, the model stack (requirements-models.txt) installs in the background, then the
# models worker starts and the demo classifier trains (niced), progress in
# var/log/quackie-models.log (scripts/quackie_models.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${USE_ACTIVE_ENV:-}" ]; then
  # The Python environment already active (e.g. one with `pip install ".[server]"`): no .venv.
  python -c "import django, celery" 2>/dev/null || { echo "USE_ACTIVE_ENV: this Python has no Django/Celery; pip install '.[server]' first" >&2; exit 2; }
else
  source scripts/venv.sh requirements.txt
fi

export OMP_WAIT_POLICY=PASSIVE
HOST=${HOST:-127.0.0.1}
PORT=${PORT:-8000}
# The web process refuses to start without explicit host names (config/hosts.py); e-mailed links
# point to SITE_URL. Serving other names (HOST=0.0.0.0 behind a domain): set both.
export ALLOWED_HOSTS=${ALLOWED_HOSTS:-localhost,127.0.0.1,[::1],$HOST}
export SITE_URL=${SITE_URL:-http://$HOST:$PORT}
mkdir -p var/log

python manage.py migrate --noinput
python manage.py load_demo

pids=()
background=()  # one-shot jobs (the QUACKIE model set-up): stopped with the rest, never waited for
stop() {
  trap - INT TERM EXIT
  echo "stopping ExpBench..."
  kill -TERM "${pids[@]}" "${background[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
}
trap stop INT TERM EXIT

# supervise NAME COMMAND...: run COMMAND in the background and start it again whenever it exits,
# so that one Celery process that dies (a crash, the OOM killer, kill -9) does not take the
# whole product down. The pause grows from 1 s to 30 s while it keeps dying within 30 s of its
# start, so a process that cannot start does not spin. SIGTERM (what stop() sends) stops the
# command and the loop.
supervise() {
  local name=$1
  shift
  (
    trap - EXIT
    child="" sleeper="" stopping="" delay=1
    # shellcheck disable=SC2086  # empty pids vanish unquoted
    trap 'stopping=1; kill -TERM $child $sleeper 2>/dev/null || true' TERM
    while [ -z "$stopping" ]; do
      started=$SECONDS
      "$@" &
      child=$!
      status=0
      wait "$child" || status=$?
      # A trapped SIGTERM ends `wait` early: wait again until the command has really stopped.
      while kill -0 "$child" 2>/dev/null; do wait "$child" || status=$?; done
      child=""
      [ -z "$stopping" ] || break
      if (( SECONDS - started >= 30 )); then delay=1; fi
      # Pause first: on Ctrl-C the terminal interrupts the command itself, and stop() comes
      # within this pause; only an exit nobody asked for is logged and restarted.
      sleep "$delay" &
      sleeper=$!
      wait "$sleeper" || true
      kill "$sleeper" 2>/dev/null || true
      sleeper=""
      [ -z "$stopping" ] || break
      echo "$(date '+%F %T') run.sh: $name exited with status $status; started again after ${delay}s" >&2
      delay=$(( delay * 2 > 30 ? 30 : delay * 2 ))
    done
  ) &
  pids+=($!)
}

# The buffering front (config/front.py): gunicorn's asyncio worker reads each request, headers and
# body, on its event loop, and only a complete request takes one of WEB_THREADS (4) threads, so
# clients that send a byte at a time keep nobody waiting (docs/operations.md#the-web-front).
gunicorn config.asgi:application --worker-class asgi --bind "$HOST:$PORT" --workers "${WEB_CONCURRENCY:-2}" \
  --access-logfile var/log/access.log --error-logfile - &
pids+=($!)
# Separate workers: scores never wait behind background work such as cue discovery, skill sets
# or diagnostics, and the reapers never wait behind scoring runs (config/celery.py).
supervise "scoring worker" celery -A config worker -Q scoring --concurrency "${WORKER_CONCURRENCY:-2}" \
  --hostname "scoring@%h" --loglevel INFO
supervise "reaper worker" celery -A config worker -Q reaper --concurrency 1 \
  --hostname "reaper@%h" --loglevel INFO
supervise "maintenance worker" celery -A config worker -Q maintenance --concurrency 1 \
  --hostname "maintenance@%h" --loglevel INFO
# Untrusted interpreter code gets a worker of its own: an hour-long code run never delays
# cue discovery, skill builds or diagnostics.
supervise "sandbox worker" celery -A config worker -Q sandbox --concurrency 1 \
  --hostname "sandbox@%h" --loglevel INFO
supervise beat celery -A config beat --schedule var/celerybeat-schedule --loglevel INFO
if [ "${QUACKIE_MODELS:-0}" = 1 ]; then
  # Hosted-model jobs (inclusion flags, built-in baselines) hold their worker for minutes at a
  # time: on a worker of their own, diagnostics, board rebuilds and housekeeping never wait
  # behind them. It starts once the model stack is installed (quackie_models.sh waits for it).
  supervise "models worker" bash scripts/quackie_models.sh worker celery -A config worker -Q models \
    --concurrency 1 --hostname "models@%h" --loglevel INFO
  # Install the model stack, then train the demo classifier: in the background, niced.
  ( trap - EXIT; bash scripts/quackie_models.sh install && nice -n 19 bash scripts/quackie_models.sh train ) &
  background+=($!)
fi

echo
echo "ExpBench is running at http://$HOST:$PORT/  (API docs: http://$HOST:$PORT/api/docs/)"
echo "Admin: python manage.py createsuperuser, then http://$HOST:$PORT/admin/   Stop with Ctrl-C."
if [ "${QUACKIE_MODELS:-0}" = 1 ]; then
  echo "QUACKIE models: installing and training in the background; progress: tail -f var/log/quackie-models.log"
else
  echo "QUACKIE models are off (no torch installed): QUACKIE_MODELS=1 bash scripts/run.sh enables them;"
  echo "until then hosted-model jobs wait in the models queue."
fi
echo
# The Celery processes are started again when they exit (supervise); gunicorn restarts its own
# workers, and if gunicorn itself exits (e.g. the port is taken) there is no site: stop everything.
wait -n "${pids[@]}"
