"""core/db.py: the page views' state queries are prepared on PostgreSQL, logged as Django logs its
own queries, and raise Django's errors; elsewhere they run on Django's cursor."""
import json
import os
import socket
import subprocess
import sys

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from core.db import prepares_statements, state_cursor

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ON_POSTGRES = """
import json, django
from django.db import DatabaseError, connection
django.setup()
from django.test.utils import CaptureQueriesContext
from core.db import prepares_statements, state_cursor
answers = []
with CaptureQueriesContext(connection) as captured:
    for value in (1, 2, 3):
        with state_cursor() as cursor:
            cursor.execute("SELECT %s::int + 1, 'board:' || %s", [value, value])
            answers.append(list(cursor.fetchone()))
with connection.cursor() as cursor:
    cursor.execute("SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE '%%board:%%'")
    prepared = cursor.fetchone()[0]
try:
    with state_cursor() as cursor:
        cursor.execute("SELECT * FROM no_such_table_here")
    error = ""
except DatabaseError as exc:
    error = type(exc).__name__
print(json.dumps({"prepares": prepares_statements(), "answers": answers, "logged": len(captured.captured_queries),
                  "prepared": prepared, "error": error}))
"""


def postgres_reachable() -> bool:
    try:
        socket.create_connection(("127.0.0.1", 5432), timeout=1).close()
        return True
    except OSError:
        return False


@pytest.mark.django_db
def test_on_sqlite_the_state_cursor_is_djangos_own():
    assert connection.vendor == "sqlite" and not prepares_statements()
    with CaptureQueriesContext(connection) as captured, state_cursor() as cursor:
        cursor.execute("SELECT %s + 1", [41])
        assert cursor.fetchone() == (42,)
    assert len(captured.captured_queries) == 1


@pytest.mark.skipif(not postgres_reachable() and not os.environ.get("CI"),
                    reason="PostgreSQL is not reachable on 127.0.0.1:5432 (CI has it)")
def test_on_postgresql_state_queries_are_prepared_logged_and_raise_djangos_errors():
    env = {**os.environ, "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/postgres",
           "DJANGO_SETTINGS_MODULE": "config.settings", "PYTHONPATH": REPO}
    done = subprocess.run([sys.executable, "-c", ON_POSTGRES], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["prepares"] is True
    assert seen["answers"] == [[2, "board:1"], [3, "board:2"], [4, "board:3"]]
    assert seen["logged"] == 3  # CaptureQueriesContext counts them as it counts Django's
    assert seen["prepared"] == 1  # one statement, planned once for the three calls
    assert seen["error"] == "ProgrammingError"
