import json
from pathlib import Path

import pytest
from django.conf import settings

from .stack import REPO, Stack, reachable

# Where the stacks' processes read the demo data: they inherit this environment, so the server
# takes EXPBENCH_SHARED_DATA (else ../shared/data) exactly as settings do here. A path of the
# test's own would disagree with the server's in a checkout elsewhere, and the uploads made from
# it would miss the server's test set.
SHARED_EXPMRC = Path(settings.SHARED_DATA_DIR) / "expmrc"
FIXTURE_EXPMRC = REPO / "benchmark" / "fixtures" / "expmrc"


def sample_and_expected():
    """The official SQuAD sample submission and its official figures when the shared data has
    it (the server then has the SQuAD dev set); otherwise perfect predictions for the bundled
    fixture, which the server loads instead (every score 100)."""
    sample = SHARED_EXPMRC / "sample_submission" / "squad.json"
    if sample.exists():
        return sample.read_bytes(), {"overall_f1": 71.690, "answer_f1": 92.875, "evidence_f1": 76.760}
    from tests.factories import perfect_predictions

    gold = json.loads((FIXTURE_EXPMRC / "expmrc-squad-dev.json").read_text())
    return json.dumps(perfect_predictions(gold)).encode(), {"overall_f1": 100.0, "answer_f1": 100.0, "evidence_f1": 100.0}


def assert_official(scores, expected):
    assert {k: f"{scores[k]:.3f}" for k in expected} == {k: f"{v:.3f}" for k, v in expected.items()}


@pytest.fixture(scope="session")
def embedded_stack(tmp_path_factory):
    """SQLite + the embedded filesystem broker: the default a laptop runs."""
    stack = Stack(tmp_path_factory.mktemp("embedded")).setup()
    try:
        stack.start_web().start_workers().start_beat()
        yield stack
    finally:
        stack.stop()


def require_services():
    missing = [name for name, port in (("PostgreSQL", 5432), ("Redis", 6379)) if not reachable("127.0.0.1", port)]
    if missing:
        pytest.skip(f"{' and '.join(missing)} not reachable on 127.0.0.1; the PostgreSQL+Redis integration "
                    "test runs only where both services are up")


@pytest.fixture(scope="module")
def postgres_url():
    require_services()
    import uuid

    import psycopg

    name = f"expbench_it_{uuid.uuid4().hex[:8]}"
    with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"postgres://postgres@127.0.0.1:5432/{name}"
    finally:
        with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="module")
def redis_url():
    require_services()
    import redis

    url = "redis://127.0.0.1:6379/15"  # a database of its own, emptied before use
    redis.Redis.from_url(url).flushdb()
    yield url
    redis.Redis.from_url(url).flushdb()
