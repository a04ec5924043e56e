"""A cursor for the small state queries that open every public page view.

Each page first reads its state (a stored board's stamp, an entry's visibility, a task's inputs
file) in one raw query, and answers from what is stored. On PostgreSQL most of that query's time
is parsing and planning a statement that never changes: 0.44 ms per call for the board's,
0.16 ms once prepared, on a page that takes about 1.3 ms in all. Django binds parameters on the
client, which cannot prepare, and leaves prepared statements off (a transaction-pooling
PgBouncer cannot keep them); so ``state_cursor`` opens a server-binding cursor on Django's own
connection and prepares these statements only, when ``DATABASES["default"]["OPTIONS"]`` has a
``prepare_threshold`` (config/settings.py: ``DB_PREPARE_STATEMENTS``). Elsewhere, and on SQLite,
it is Django's cursor. The queries are logged as Django logs its own (``CaptureQueriesContext``
counts them) and raise Django's database errors.
"""
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
from django.db import connection


class _PreparedCursor:
    """What the state queries use of a cursor: ``execute`` (prepared), ``fetchone``, ``fetchall``."""

    def __init__(self, cursor: Any) -> None:
        self._cursor = cursor

    def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        started = time.monotonic()
        with connection.wrap_database_errors:
            self._cursor.execute(sql, params, prepare=True)
        if connection.queries_logged:  # as Django's debug cursor logs it (tests count queries)
            connection.queries_log.append({"sql": f"{sql} -- {list(params)!r}",
                                           "time": f"{time.monotonic() - started:.3f}"})

    def fetchone(self) -> Any:
        with connection.wrap_database_errors:
            return self._cursor.fetchone()

    def fetchall(self) -> list[Any]:
        with connection.wrap_database_errors:
            return self._cursor.fetchall()


def prepares_statements() -> bool:
    return connection.vendor == "postgresql" and \
        connection.settings_dict.get("OPTIONS", {}).get("prepare_threshold") is not None


@contextmanager
def state_cursor() -> Iterator[Any]:
    """A cursor for one of the fixed, read-only state queries of a page view (see above)."""
    if not prepares_statements():
        with connection.cursor() as cursor:
            yield cursor
        return
    connection.ensure_connection()
    with connection.wrap_database_errors:
        server_cursor = psycopg.Cursor(connection.connection)  # server-side binding, whatever the factory
    try:
        yield _PreparedCursor(server_cursor)
    finally:
        server_cursor.close()
