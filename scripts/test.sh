#!/usr/bin/env bash
# Run the whole ExpBench test suite. First the guard rails of the layout (docs/architecture.md):
# ruff (including PLC0415, no import outside the top level), the import-linter contracts of
# the layers, the import graph (no cycle, imports inside functions included) and mypy on the
# product packages. Then the tests: scorer unit tests, API/page tests, and integration tests that start
# real gunicorn + Celery processes (embedded broker; PostgreSQL + Redis on 127.0.0.1 when
# reachable) and drive headless Chromium. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/venv.sh requirements-dev.txt
export OMP_WAIT_POLICY=PASSIVE
# The tests' own process keeps its cache in memory (each test clears it); the integration
# stacks run with the product's default shared cache (tests/integration/stack.py).
export CACHE_URL="${CACHE_URL:-locmem://}"
echo "== ruff"; ruff check .
echo "== import contracts"; lint-imports --no-cache
echo "== import graph"; python scripts/import_graph.py
echo "== mypy"; mypy scoring core accounts benchmark submissions leaderboards config expbench_client
exec python -m pytest "$@"
