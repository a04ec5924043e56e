#!/usr/bin/env bash
# Run the whole ExpBench test suite: scorer unit tests, API/page tests, and integration tests
# that start real gunicorn + Celery processes (embedded broker; PostgreSQL + Redis on
# 127.0.0.1 when reachable) and drive headless Chromium. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/venv.sh requirements-dev.txt
export OMP_WAIT_POLICY=PASSIVE
exec python -m pytest "$@"
