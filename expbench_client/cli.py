"""Command-line client: python -m expbench_client {token,submit,status,leaderboard} ...

Server and token come from --url/--token or EXPBENCH_URL/EXPBENCH_TOKEN. Exit codes: 0 ok,
1 the submission was rejected or failed, 2 bad usage or an HTTP error.
"""
import argparse
import getpass
import os
import sys
import time
from pathlib import Path

from .client import Client

TERMINAL = {"scored", "failed", "rejected", "cancelled"}


def fail(message, code=2):
    print(f"error: {message}", file=sys.stderr)
    sys.exit(code)


def show_submission(body):
    line = f"#{body['id']} {body['task']} {body['method_name']!r}: {body['status']}"
    if body.get("scores"):
        line += "  " + "  ".join(f"{k}={v:.3f}" for k, v in body["scores"].items())
    print(line)
    if body.get("error"):
        print(f"  {body['error']['category']}: {body['error']['message']}")


def wait(client, submission_id, timeout):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        status, body = client.submission(submission_id)
        if status != 200:
            fail(f"HTTP {status}: {body}")
        if body["status"] != last:
            print(f"  … {body['status']}", file=sys.stderr)
            last = body["status"]
        if body["status"] in TERMINAL:
            return body
        time.sleep(1)
    fail(f"still {last} after {timeout} s; check again with: status {submission_id}")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m expbench_client", description="ExpBench API client")
    parser.add_argument("--url", default=os.environ.get("EXPBENCH_URL", "http://127.0.0.1:8000"))
    parser.add_argument("--token", default=os.environ.get("EXPBENCH_TOKEN"))
    sub = parser.add_subparsers(dest="command", required=True)
    token = sub.add_parser("token", help="get your API token")
    token.add_argument("username")
    submit = sub.add_parser("submit", help="upload a prediction file")
    submit.add_argument("task")
    submit.add_argument("file", type=Path)
    submit.add_argument("--method", required=True, help="system name shown on the leaderboard")
    submit.add_argument("--kind", choices=["predictions", "skills", "code"], default="predictions",
                        help="predictions (default); skills: {original, s1, ...} for span tasks; "
                             "code: an interpreter .py/.zip for QUACKIE tracks")
    submit.add_argument("--description", default="")
    submit.add_argument("--link", default="", help="paper or code URL")
    submit.add_argument("--private", action="store_true", help="do not show on the public leaderboard")
    submit.add_argument("--wait", action="store_true", help="wait until scored")
    submit.add_argument("--timeout", type=int, default=600)
    status = sub.add_parser("status", help="show a submission")
    status.add_argument("id", type=int)
    status.add_argument("--wait", action="store_true")
    status.add_argument("--timeout", type=int, default=600)
    board = sub.add_parser("leaderboard", help="print a task's leaderboard")
    board.add_argument("task")
    args = parser.parse_args(argv)
    client = Client(args.url, args.token)

    if args.command == "token":
        password = os.environ.get("EXPBENCH_PASSWORD") or getpass.getpass()
        code, body = client.obtain_token(args.username, password)
        if code != 200:
            fail(f"HTTP {code}: {body}")
        print(body["token"])
        return 0
    if args.command in ("submit", "status") and not args.token:
        fail("no token: pass --token or set EXPBENCH_TOKEN (get one with: token USERNAME)")
    if args.command == "submit":
        try:
            content = args.file.read_bytes()
        except OSError as exc:
            fail(f"cannot read {args.file}: {exc.strerror}")
        code, body = client.submit(args.task, content, method_name=args.method, filename=args.file.name,
                                   description=args.description, url=args.link, public=not args.private,
                                   kind=args.kind)
        if code == 400 and isinstance(body, dict) and "status" in body:
            print(f"rejected: {body['error']}", file=sys.stderr)
            return 1
        if code != 201:
            fail(f"HTTP {code}: {body}")
        print(f"submitted #{body['id']} ({body['status']})")
        if args.wait:
            final = wait(client, body["id"], args.timeout)
            show_submission(final)
            return 0 if final["status"] == "scored" else 1
        return 0
    if args.command == "status":
        if args.wait:
            final = wait(client, args.id, args.timeout)
        else:
            code, final = client.submission(args.id)
            if code != 200:
                fail(f"HTTP {code}: {final}")
        show_submission(final)
        return 0 if final["status"] not in ("failed", "rejected") else 1
    code, body = client.leaderboard(args.task)
    if code != 200:
        fail(f"HTTP {code}: {body}")
    for row in body["rows"]:
        scores = "  ".join(f"{v:7.3f}" for v in row["scores"].values())
        tag = " (reported)" if row["reported"] else ""
        print(f"{row['rank'] or '-':>4}  {scores}  {row['method']}{tag} — {row['team']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
