#!/usr/bin/env bash
# Start ExpBench on the embedded default: SQLite + a filesystem Celery broker under var/,
# gunicorn + three Celery workers (scoring; maintenance and models; sandbox) + Celery beat, demo data loaded.
# Environment: PORT (8000), HOST (127.0.0.1), DATABASE_URL, CELERY_BROKER_URL, SECRET_KEY, ...
# USE_ACTIVE_ENV=1 runs with the active Python environment instead of creating .venv.
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
mkdir -p var/log

python manage.py migrate --noinput
python manage.py load_demo

pids=()
stop() {
  trap - INT TERM EXIT
  echo "stopping ExpBench..."
  kill -TERM "${pids[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
}
trap stop INT TERM EXIT

gunicorn config.wsgi:application --bind "$HOST:$PORT" --workers "${WEB_CONCURRENCY:-2}" \
  --access-logfile var/log/access.log --error-logfile - &
pids+=($!)
# Separate workers: scores (and the reaper) never wait behind background work such as cue
# discovery, skill sets or diagnostics.
celery -A config worker -Q scoring --concurrency "${WORKER_CONCURRENCY:-2}" \
  --hostname "scoring@%h" --loglevel INFO &
pids+=($!)
celery -A config worker -Q maintenance,models --concurrency 1 \
  --hostname "background@%h" --loglevel INFO &
pids+=($!)
# Untrusted interpreter code gets a worker of its own: an hour-long code run never delays
# cue discovery, skill builds or diagnostics.
celery -A config worker -Q sandbox --concurrency 1 \
  --hostname "sandbox@%h" --loglevel INFO &
pids+=($!)
celery -A config beat --schedule var/celerybeat-schedule --loglevel INFO &
pids+=($!)

echo
echo "ExpBench is running at http://$HOST:$PORT/  (API docs: http://$HOST:$PORT/api/docs/)"
echo "Admin: python manage.py createsuperuser, then http://$HOST:$PORT/admin/   Stop with Ctrl-C."
echo
# Stop everything as soon as one of them exits.
wait -n "${pids[@]}"
