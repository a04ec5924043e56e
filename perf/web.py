"""Every public page of a big board against a static file of the same bytes, served by the
same server in the same run, interleaved: gunicorn with 2 workers behind the buffering front, as
scripts/run.sh and compose start it (``--server sync``: the plain sync workers of before).

A temporary deployment (migrate + load_demo) on PostgreSQL (127.0.0.1:5432, trust auth: the
script creates its own database and drops it at the end) or, with ``--sqlite``, the embedded
default (SQLite, the shared file cache). The SQuAD task of the demo (expmrc-squad, 501
questions) gets ``--entries`` scored public entries (default 10,000), each with its 501
per-question rows of 3 metrics as a real scored SQuAD file has; every board is then computed
once as the worker computes it after a change (ranking, CIs, significance tiers; the tiers'
paired tests with ``--warm-resamples``, 1,000 by default, to keep the set-up short: serving a
stored board does not depend on it, and the server runs with its own ``TIER_RESAMPLES``, 10,000,
so a compare page whose pair the board did not test runs the full test).

Pages (anonymous visitors asking for gzip, as browsers and scripting libraries do): the task
board (first page of 100 rows), its API answer, the home page, the benchmark's average board,
an entry's page, the compare page of the two best entries, the task board's CSV, the
benchmark's average CSV and the task's public inputs download. Each page is fetched once
through a first server; its plain bytes and their gzip are written as a static file that
WhiteNoise serves (as it serves the site's own static files, the ``.gz`` to a client that
accepts gzip). A second server then serves both: per page, ``concurrency`` clients load the
page and its static copy in interleaved rounds (one connection per request, as gunicorn's sync
workers close each one).

It prints one line per page: requests/s of the page and of its static copy, their ratio, the
bytes sent; the last line is ``ratio: X``, the worst page's ratio.

    .venv/bin/python perf/web.py                        # PostgreSQL, 10,000 entries (about 5 minutes)
    .venv/bin/python perf/web.py --sqlite --entries 1000 --seconds 2 --rounds 2
"""
import argparse
import gzip
import http.client
import os
import random
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

TASK_SLUG = "expmrc-squad"
BENCHMARK_SLUG = "expmrc"
CONCURRENCY = 8
#: What every request sends: browsers and scripting libraries (requests, httpx) ask for gzip.
CLIENT_HEADERS = {"Accept-Encoding": "gzip"}
POSTGRES = "postgres://postgres@127.0.0.1:5432/"


# -- the client side ------------------------------------------------------------------------
def load(port: int, path: str, seconds: float, concurrency: int = CONCURRENCY) -> tuple[int, float]:
    """(completed requests, elapsed seconds): ``concurrency`` threads send GETs for ``seconds``;
    each finishes the request it has in flight. Any answer but 200 stops the run."""
    deadline = time.perf_counter() + seconds
    counts = [0] * concurrency
    errors: list[str] = []

    def worker(slot: int) -> None:
        while time.perf_counter() < deadline and not errors:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
            try:
                connection.request("GET", path, headers=CLIENT_HEADERS)
                response = connection.getresponse()
                response.read()
                if response.status != 200:
                    errors.append(f"{path}: HTTP {response.status}")
                    return
                counts[slot] += 1
            finally:
                connection.close()

    start = time.perf_counter()
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise RuntimeError(errors[0])
    return sum(counts), time.perf_counter() - start


def get(port: int, path: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    try:
        connection.request("GET", path, headers=headers or {})
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


# -- the data -------------------------------------------------------------------------------
def seed(task: Any, upto: int, rng: random.Random) -> None:
    """Scored public entries on ``task`` until it has ``upto``: 501 per-question rows of
    [answer F1, evidence F1, overall F1] each, the scores their means, a CI around them, from a
    pool of 50 users (a team each)."""
    import numpy as np  # noqa: PLC0415
    from django.contrib.auth.models import User  # noqa: PLC0415
    from django.utils import timezone  # noqa: PLC0415

    from accounts.models import Profile  # noqa: PLC0415
    from benchmark.models import boards_changed  # noqa: PLC0415
    from submissions.models import Status, Submission  # noqa: PLC0415
    from submissions.scorers import current_scorer_version  # noqa: PLC0415

    users = list(User.objects.filter(username__startswith="perf-user-").order_by("pk"))
    if not users:
        users = [User.objects.create_user(f"perf-user-{i}") for i in range(50)]
        Profile.objects.bulk_create([Profile(user=u, team=f"Team {i}") for i, u in enumerate(users)])
    test_set = task.current_test_set()
    have = Submission.objects.filter(task=task).count()
    version = current_scorer_version(task, Submission.PREDICTIONS)
    generator = np.random.default_rng(rng.randrange(2 ** 32))
    now = timezone.now()
    batch = []
    for i in range(have, upto):
        skill = generator.uniform(0.3, 0.9)
        answer = np.round(np.clip(generator.normal(skill, 0.3, test_set.n_items), 0, 1), 4)
        evidence = np.round(np.clip(generator.normal(skill - 0.1, 0.3, test_set.n_items), 0, 1), 4)
        overall = np.round(answer * evidence, 4)
        rows = np.stack([answer, evidence, overall], axis=1).tolist()
        scores = {"answer_f1": float(answer.mean() * 100), "evidence_f1": float(evidence.mean() * 100),
                  "overall_f1": float(overall.mean() * 100)}
        ci = {key: [value - 2.0, value + 2.0] for key, value in scores.items()}
        batch.append(Submission(
            user=users[i % len(users)], task=task, test_set=test_set, kind=Submission.PREDICTIONS,
            method_name=f"System {i}", status=Status.SCORED, public=True, scores=scores, ci=ci,
            item_scores=rows, total=test_set.n_items, scorer_version=version,
            queued_at=now, started_at=now, finished_at=now, original_filename="predictions.json"))
        if len(batch) == 500:
            Submission.objects.bulk_create(batch)
            batch = []
    if batch:
        Submission.objects.bulk_create(batch)
    boards_changed([task.pk])  # bulk_create sends no signals: tell the boards, as every write does


def pages(task: Any) -> dict[str, str]:
    """The public pages, by name: the entry page and the compare page show the two best entries."""
    from submissions.models import Submission  # noqa: PLC0415

    primary = task.primary_metric
    scored = sorted(Submission.objects.filter(task=task, public=True).values_list("pk", "scores"),
                    key=lambda pair: -(pair[1].get(primary) or 0))
    best, second = scored[0][0], scored[1][0]
    return {"board": f"/tasks/{TASK_SLUG}/", "api": f"/api/v1/tasks/{TASK_SLUG}/leaderboard/", "home": "/",
            "average": f"/benchmarks/{BENCHMARK_SLUG}/", "entry": f"/submissions/{best}/",
            "compare": f"/compare/?a={best}&b={second}", "csv": f"/tasks/{TASK_SLUG}/leaderboard.csv",
            "average_csv": f"/benchmarks/{BENCHMARK_SLUG}/leaderboard.csv",
            "inputs": f"/tasks/{TASK_SLUG}/inputs.json"}


def create_database() -> str:
    import psycopg  # noqa: PLC0415

    name = f"expbench_perf_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(POSTGRES + "postgres", autocommit=True) as connection:
        connection.execute(f"CREATE DATABASE {name}")
    return name


def drop_database(name: str) -> None:
    import psycopg  # noqa: PLC0415

    with psycopg.connect(POSTGRES + "postgres", autocommit=True) as connection:
        connection.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


SERVERS = {"front": ["config.asgi:application", "--worker-class", "asgi"],  # scripts/run.sh's
           "sync": ["config.wsgi:application"]}


def serve(stack: Any, name: str, server: str = "front") -> None:
    from tests.integration.stack import BIN, free_port  # noqa: PLC0415

    stack.port = free_port()
    stack._spawn(name, [str(BIN / "gunicorn"), *SERVERS[server], "--bind", f"127.0.0.1:{stack.port}",
                        "--workers", "2", "--timeout", "600"])
    stack._wait(lambda: stack._get_status("/healthz") in (200, 503), "gunicorn", name, timeout=120)


def measure(stack: Any, args: argparse.Namespace) -> list[tuple[str, float]]:
    """Seed, warm, write the static copies, load every page and its copy; (page, ratio) rows."""
    import django  # noqa: PLC0415

    os.environ.clear()
    os.environ.update(stack.env)  # this process works on the same database and cache as the server
    django.setup()
    from benchmark.models import Task  # noqa: PLC0415
    from leaderboards import store  # noqa: PLC0415

    task = Task.objects.get(slug=TASK_SLUG)
    started = time.perf_counter()
    seed(task, args.entries, random.Random(0))
    seeded = time.perf_counter() - started
    started = time.perf_counter()
    from django.test import override_settings  # noqa: PLC0415

    with override_settings(TIER_RESAMPLES=args.warm_resamples):
        store.rebuild_all()  # as the worker does after a change: ranking, CIs, significance tiers
    print(f"{TASK_SLUG}: {task.current_test_set().n_items} questions; {args.entries:,} entries seeded in "
          f"{seeded:.0f} s, boards computed in {time.perf_counter() - started:.0f} s "
          f"(tiers with {args.warm_resamples:,} resamples)", flush=True)
    addresses = pages(task)
    static_root = Path(stack.env["EXPBENCH_VAR_DIR"]) / "staticfiles"
    static_root.mkdir(parents=True, exist_ok=True)
    # WhiteNoise finds static files when it starts: a first server gives the pages' bytes.
    serve(stack, "build")
    sizes = {}
    for name, path in addresses.items():
        started = time.perf_counter()
        status, _, plain = get(stack.port, path)
        first = time.perf_counter() - started
        assert status == 200, (path, status)
        packed = get(stack.port, path, CLIENT_HEADERS)[2]
        (static_root / f"perf-{name}.html").write_bytes(plain)
        (static_root / f"perf-{name}.html.gz").write_bytes(gzip.compress(plain, 6))
        sizes[name] = (len(plain), len(packed), first)
    stack.kill("build")
    serve(stack, "web", args.server)
    for name, path in addresses.items():  # each worker's first request of each address: not counted
        for address in (path, f"/static/perf-{name}.html"):
            for _ in range(4):
                assert get(stack.port, address, CLIENT_HEADERS)[0] == 200, address
    ratios = []
    print(f"requests/s, gunicorn 2 workers ({args.server}), {args.concurrency} concurrent clients, "
          f"{args.rounds} interleaved rounds of {args.seconds:g} s per address; static: the page's own bytes "
          "as a static file", flush=True)
    for name, path in addresses.items():
        done, spent = {"page": 0, "static": 0}, {"page": 0.0, "static": 0.0}
        for _ in range(args.rounds):
            for which, address in (("page", path), ("static", f"/static/perf-{name}.html")):
                count, elapsed = load(stack.port, address, args.seconds, args.concurrency)
                done[which] += count
                spent[which] += elapsed
        page, static = done["page"] / spent["page"], done["static"] / spent["static"]
        plain, packed, first = sizes[name]
        ratios.append((name, page / static))
        print(f"{name:>12}: {page:8.1f}/s  static {static:8.1f}/s  ratio {page / static:.3f}  "
              f"({plain:,} bytes, {packed:,} gzipped; first answer {first:.2f} s)  {path}", flush=True)
    return ratios


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sqlite", action="store_true", help="the embedded default (SQLite) instead of PostgreSQL")
    parser.add_argument("--entries", type=int, default=10000, help="scored public entries on the task (10,000)")
    parser.add_argument("--seconds", type=float, default=3.0, help="length of one round per address")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=CONCURRENCY)
    parser.add_argument("--server", choices=sorted(SERVERS), default="front",
                        help="front: the buffering front scripts/run.sh starts (default); sync: plain sync workers")
    parser.add_argument("--warm-resamples", type=int, default=1000,
                        help="resamples of the tiers' paired tests when the boards are first computed")
    args = parser.parse_args()

    from tests.integration.stack import Stack  # noqa: PLC0415

    database = None if args.sqlite else create_database()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            started = time.perf_counter()
            stack = Stack(tmp, database_url=POSTGRES + database if database else None)
            stack.setup()
            print(f"{'PostgreSQL' if database else 'SQLite'}: migrate + load_demo "
                  f"{time.perf_counter() - started:.0f} s", flush=True)
            try:
                ratios = measure(stack, args)
            finally:
                stack.stop()
    finally:
        if database:
            from django.db import connections  # noqa: PLC0415

            connections.close_all()
            drop_database(database)
    worst = min(ratios, key=lambda pair: pair[1])
    print(f"worst: {worst[0]}")
    print(f"ratio: {worst[1]:.3f}")


if __name__ == "__main__":
    main()
