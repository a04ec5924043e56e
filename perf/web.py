"""Web tier throughput as a board grows: N = 10, 100, 1,000 and 10,000 scored public entries on
the SQuAD task of the demo (expmrc-squad, 501 questions; every entry has its 501 per-question
rows of 3 metrics, as a real scored SQuAD file has), served by gunicorn with 2 sync workers as
scripts/run.sh starts it (embedded default: SQLite, the shared file cache).

Peer, measured in the same run on the same server, interleaved with the pages: a bare Django
view (``HttpResponse("ok")`` behind the same middleware) that this script adds for itself: the
server runs ``perf.web:application``, config.wsgi's application with ``/perf/bare/`` in front of
the site's own URLs, so the product never ships it. (``/healthz`` is not bare: it writes to the
cache and checks the broker folder on every call.)

Per N it prints requests/s of the task board page, its API, the home page and the bare view
(8 concurrent clients asking for gzip as browsers do, one connection per request: gunicorn's
sync workers close each one), their ratios to the bare view, and the SQL queries of a request
that finds the page rendered and of one that renders it (counted in-process with
``CaptureQueriesContext`` on the same database). The board page and its API show the first page
(100 rows) of the board. Before the load starts, every board is computed once as the worker
computes it after a change, real significance tiers included ("boards warmed in" gives that
time per N). The last line is ``ratio: <board page RPS / bare RPS at N=1,000>``.

    .venv/bin/python perf/web.py            # N = 10, 100, 1,000, 10,000 (about 20 minutes)
    .venv/bin/python perf/web.py --quick    # N = 10, 1,000, shorter rounds
"""
import argparse
import http.client
import os
import random
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

BARE_PATH = "/perf/bare/"
TASK_SLUG = "expmrc-squad"
CONCURRENCY = 8
#: What every request sends: browsers and scripting libraries (requests, httpx) ask for gzip.
CLIENT_HEADERS = {"Accept-Encoding": "gzip"}


# -- the server side: gunicorn loads perf.web:application -----------------------------------
def bare_view(request: Any) -> Any:
    from django.http import HttpResponse  # noqa: PLC0415  # Django is set up by the time a request comes

    return HttpResponse("ok", content_type="text/plain")


def __getattr__(name: str) -> Any:
    """This module is also the server's URLconf: the bare view, then the site's own URLs. Built
    on first use, once Django is set up (a module-level ``include`` would import config.urls
    before the settings are loaded)."""
    if name == "urlpatterns":
        from django.urls import path  # noqa: PLC0415

        from config import urls  # noqa: PLC0415

        return [path(BARE_PATH.strip("/") + "/", bare_view), *urls.urlpatterns]
    raise AttributeError(name)


_handler = None


def application(environ: dict, start_response: Any) -> Any:
    """config.wsgi's application, with this module as the URLconf of every request."""
    global _handler
    if _handler is None:
        from django.core.handlers.wsgi import WSGIHandler  # noqa: PLC0415

        import config.wsgi  # noqa: F401, PLC0415  # sets up Django as the product does

        class BenchHandler(WSGIHandler):
            def get_response(self, request: Any) -> Any:
                request.urlconf = __name__
                return super().get_response(request)

        _handler = BenchHandler()
    return _handler(environ, start_response)


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


def seed(task: Any, upto: int, rng: random.Random) -> None:
    """Scored public entries on ``task`` until it has ``upto``: 501 per-question rows of
    [answer F1, evidence F1, overall F1] each, the scores their means, a CI around them, from a
    pool of 50 users (a team each)."""
    import numpy as np  # noqa: PLC0415
    from django.contrib.auth.models import User  # noqa: PLC0415
    from django.utils import timezone  # noqa: PLC0415

    from accounts.models import Profile  # noqa: PLC0415
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
    # bulk_create sends no signals: tell the boards, as every write through the product does.
    from benchmark import models as benchmark_models  # noqa: PLC0415

    if hasattr(benchmark_models, "boards_changed"):  # absent in the code before stored boards
        benchmark_models.boards_changed([task.pk])


def warm_boards() -> None:
    """Compute every board once, as the worker does after a change (ranking, CIs and the real
    significance tiers), so requests find their board stored as they would in steady state."""
    from benchmark.models import Task  # noqa: PLC0415
    from leaderboards import boards  # noqa: PLC0415

    try:
        from leaderboards import store  # noqa: PLC0415
    except ImportError:
        store = None
    for task in Task.objects.all():
        boards.leaderboard_rows(task)
    if store is not None:
        store.rebuild_all()


def queries_per_request(paths: dict[str, str]) -> dict[str, str]:
    """Per page, the SQL queries of a request that renders it (the first after the board changed)
    and of one that finds it rendered (every later one), as "served/rendered"."""
    from django.db import connection  # noqa: PLC0415
    from django.test import Client  # noqa: PLC0415
    from django.test.utils import CaptureQueriesContext  # noqa: PLC0415

    client = Client()
    counts = {}
    for name, path in paths.items():
        found = []
        for _ in range(2):
            with CaptureQueriesContext(connection) as captured:
                response = client.get(path)
            assert response.status_code == 200, (path, response.status_code)
            found.append(len(captured.captured_queries))
        counts[name] = f"{found[1]}/{found[0]}"
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="N = 10 and 1,000 only, shorter rounds")
    args = parser.parse_args()
    sizes = [10, 1000] if args.quick else [10, 100, 1000, 10000]
    rounds, seconds = (2, 2.0) if args.quick else (3, 4.0)

    from tests.integration.stack import BIN, Stack, free_port  # noqa: PLC0415

    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        stack = Stack(tmp).setup()
        print(f"migrate + load_demo: {time.perf_counter() - started:.0f} s", flush=True)
        # This process works on the same database and shared cache as the server.
        os.environ.clear()
        os.environ.update(stack.env)
        import django  # noqa: PLC0415

        django.setup()
        from benchmark.models import Task  # noqa: PLC0415

        task = Task.objects.get(slug=TASK_SLUG)
        paths = {"board": f"/tasks/{TASK_SLUG}/", "api": f"/api/v1/tasks/{TASK_SLUG}/leaderboard/", "home": "/",
                 "bare": BARE_PATH}
        stack.port = free_port()
        stack._spawn("web", [str(BIN / "gunicorn"), "perf.web:application", "--bind", f"127.0.0.1:{stack.port}",
                             "--workers", "2", "--timeout", "600"])
        stack._wait(lambda: stack._get_status(BARE_PATH) == 200, "gunicorn", "web")
        rng = random.Random(0)
        table = []
        try:
            for n in sizes:
                started = time.perf_counter()
                seed(task, n, rng)
                seeded = time.perf_counter() - started
                started = time.perf_counter()
                warm_boards()
                warmed = time.perf_counter() - started
                queries = queries_per_request({k: v for k, v in paths.items() if k != "bare"})
                sizes = {name: (len(get(stack.port, path, {})[2]), len(get(stack.port, path, CLIENT_HEADERS)[2]))
                         for name, path in paths.items() if name != "bare"}
                for path in paths.values():  # each worker's first request of each page: not counted
                    for _ in range(4):
                        get(stack.port, path)
                done = {name: 0 for name in paths}
                spent = {name: 0.0 for name in paths}
                for _ in range(rounds):
                    for name, path in paths.items():
                        count, elapsed = load(stack.port, path, seconds)
                        done[name] += count
                        spent[name] += elapsed
                rps = {name: done[name] / spent[name] for name in paths}
                table.append((n, rps, queries, sizes))
                print(f"N={n}: seeded in {seeded:.0f} s, boards warmed in {warmed:.0f} s; "
                      + ", ".join(f"{name} {rps[name]:.1f}/s ({done[name]} requests)" for name in paths),
                      flush=True)
        finally:
            stack.stop()

    print()
    print(f"requests/s, gunicorn 2 sync workers, {CONCURRENCY} concurrent clients, {rounds} interleaved rounds "
          f"of {seconds:.0f} s per page; SQL queries per request in parentheses (served as rendered before / "
          f"rendering)")
    print(f"{'N':>6} {'board':>16} {'API':>16} {'home':>16} {'bare':>8} {'board/bare':>11} {'API/bare':>9} "
          f"{'home/bare':>10}")
    for n, rps, queries, _ in table:
        print(f"{n:>6} {rps['board']:>8.1f} ({queries['board']:>5}) {rps['api']:>8.1f} ({queries['api']:>5}) "
              f"{rps['home']:>8.1f} ({queries['home']:>5}) {rps['bare']:>8.1f} {rps['board'] / rps['bare']:>11.3f} "
              f"{rps['api'] / rps['bare']:>9.3f} {rps['home'] / rps['bare']:>10.3f}")
    print()
    print("bytes per answer, plain -> gzip:")
    for n, _, _, sizes in table:
        print(f"{n:>6} " + "  ".join(f"{name} {plain:,} -> {packed:,}" for name, (plain, packed) in sizes.items()))
    at_1000 = next(rps for n, rps, _, _ in table if n == 1000)
    print(f"ratio: {at_1000['board'] / at_1000['bare']:.3f}")


if __name__ == "__main__":
    main()
