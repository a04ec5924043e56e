"""Public inputs downloads against a static file of the same bytes, served by the same gunicorn
(2 sync workers, as scripts/run.sh starts it) in the same run, interleaved.

The demo is loaded into a temporary deployment (migrate + load_demo); for each task named on
the command line (default: the CheckList task, the largest inputs, and the SQuAD task) the
script downloads ``/tasks/<slug>/inputs.json`` and ``/api/v1/tasks/<slug>/inputs/`` once (the
first download builds the stored bytes: that time is printed), writes the download's plain and
gzipped bytes as a static file (WhiteNoise serves the ``.gz`` to a client that accepts gzip,
as it does the site's own static files), then loads each address with 4 concurrent clients
asking for gzip, in interleaved rounds. It prints requests/s per address and one ``ratio:``
line per task (the slower of the two inputs addresses over the static file); the last line
``ratio: X`` is the worst.

    .venv/bin/python perf/inputs_download.py                     # checklist-squad, expmrc-squad
    .venv/bin/python perf/inputs_download.py expmrc-squad --seconds 2 --rounds 2
"""
import argparse
import gzip
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from perf.web import CLIENT_HEADERS, get, load  # noqa: E402
from tests.integration.stack import BIN, Stack, free_port  # noqa: E402

CONCURRENCY = 4


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("slugs", nargs="*", default=["checklist-squad", "expmrc-squad"])
    parser.add_argument("--seconds", type=float, default=4.0, help="length of one round per address")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        stack = Stack(tmp).setup()
        print(f"migrate + load_demo: {time.perf_counter() - started:.0f} s", flush=True)
        static_root = Path(tmp) / "var" / "staticfiles"
        static_root.mkdir(parents=True, exist_ok=True)
        stack.port = free_port()
        # The static copies must exist before WhiteNoise scans STATIC_ROOT (at start-up): a first
        # server builds the downloads, a second one serves both.
        stack._spawn("build", [str(BIN / "gunicorn"), "config.wsgi:application", "--bind",
                               f"127.0.0.1:{stack.port}", "--workers", "1", "--timeout", "600"])
        stack._wait(lambda: stack._get_status("/healthz") in (200, 503), "gunicorn", "build")
        built = {}
        for slug in args.slugs:
            paths = [f"/tasks/{slug}/inputs.json", f"/api/v1/tasks/{slug}/inputs/"]
            for path in paths:
                started = time.perf_counter()
                status, _, body = get(stack.port, path, CLIENT_HEADERS)
                built[path] = time.perf_counter() - started
                assert status == 200, (path, status)
            status, _, plain = get(stack.port, paths[0])
            (static_root / f"{slug}-inputs.json").write_bytes(plain)
            (static_root / f"{slug}-inputs.json.gz").write_bytes(gzip.compress(plain, 6))
            print(f"{slug}: {len(plain):,} bytes plain, {len(body):,} gzipped; first download "
                  f"(builds the stored bytes) {built[paths[0]]:.2f} s, API {built[paths[1]]:.2f} s", flush=True)
        os.killpg(stack.procs.pop("build").pid, 15)
        time.sleep(1)
        stack.port = free_port()
        stack._spawn("web", [str(BIN / "gunicorn"), "config.wsgi:application", "--bind", f"127.0.0.1:{stack.port}",
                             "--workers", "2", "--timeout", "600"])
        stack._wait(lambda: stack._get_status("/healthz") in (200, 503), "gunicorn", "web")
        ratios = []
        try:
            for slug in args.slugs:
                addresses = {"download": f"/tasks/{slug}/inputs.json", "api": f"/api/v1/tasks/{slug}/inputs/",
                             "static": f"/static/{slug}-inputs.json"}
                for path in addresses.values():
                    status, headers, _ = get(stack.port, path, CLIENT_HEADERS)
                    assert status == 200 and headers.get("content-encoding") == "gzip", (path, status, headers)
                done = dict.fromkeys(addresses, 0)
                spent = dict.fromkeys(addresses, 0.0)
                for _ in range(args.rounds):
                    for name, path in addresses.items():
                        count, elapsed = load(stack.port, path, args.seconds, CONCURRENCY)
                        done[name] += count
                        spent[name] += elapsed
                rps = {name: done[name] / spent[name] for name in addresses}
                worst = min(rps["download"], rps["api"]) / rps["static"]
                ratios.append(worst)
                print(f"{slug}: " + ", ".join(f"{name} {rps[name]:.1f}/s ({done[name]})" for name in addresses)
                      + f"; download/static {rps['download'] / rps['static']:.3f}, "
                        f"API/static {rps['api'] / rps['static']:.3f}", flush=True)
                print(f"ratio: {worst:.3f}  ({slug})", flush=True)
        finally:
            stack.stop()
    print(f"ratio: {min(ratios):.3f}")


if __name__ == "__main__":
    main()
