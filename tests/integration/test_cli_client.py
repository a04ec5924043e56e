"""The command-line client against a running server and a real worker: every command, with and
without --json, and the failures a user meets (server down, bad token, unknown names, quota)."""
import json
import os
import re
import socket
import stat
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from .conftest import sample_and_expected
from .stack import REPO, wait_until

pytestmark = pytest.mark.integration

PASSWORD = "cli-password-77"


def cli(stack, *args, token=None, config=None, url=True, env=None):
    """Run the client as a user would. The config file always lives in a test folder, so the
    real ~/.config/expbench is never read or written."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("EXPBENCH_")}
    clean.update({"EXPBENCH_PASSWORD": PASSWORD, "EXPBENCH_CONFIG": str(config or stack.root / "no-config.json")})
    if url:
        clean["EXPBENCH_URL"] = stack.url
    if token:
        clean["EXPBENCH_TOKEN"] = token
    clean.update(env or {})
    return subprocess.run([sys.executable, "-m", "expbench_client", *args], cwd=REPO, env=clean,
                          capture_output=True, text=True, timeout=120)


def as_json(result):
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def one_error_line(result, code):
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr, result.stderr
    return result.stderr.strip()


@pytest.fixture(scope="module")
def scored(embedded_stack, tmp_path_factory):
    """One user for the whole file (creating a user costs seconds), with two scored submissions on
    expmrc-squad: the official sample and an empty file. Tests add submissions, so they compare
    what the client prints with what the API answers rather than with fixed counts. Quota: 4 of
    the 5 daily submissions on expmrc-squad are used here; the quota test uses expmrc-race."""
    username = f"cli-user-{uuid.uuid4().hex[:6]}"
    token = embedded_stack.create_user(username, PASSWORD)
    folder = tmp_path_factory.mktemp("cli")
    content, expected = sample_and_expected()
    (folder / "sample.json").write_bytes(content)
    (folder / "empty.json").write_text("{}")
    ids = []
    for name, method in (("sample.json", "CLI sample"), ("empty.json", "CLI empty")):
        status, body = embedded_stack.upload(token, "expmrc-squad", (folder / name).read_bytes(), method_name=method)
        assert status == 201, body
        ids.append(embedded_stack.wait_for(body["id"], token)["id"])
    return {"token": token, "username": username, "ids": ids, "expected": expected}


def every_item(stack, path, token=None):
    """Every item of an API list, as the bare list ``--json`` prints it. ``stack.request`` reads
    a paged /api/v1/ list to its last page; the server's ``count`` checks that none was missed."""
    status, body = stack.request("GET", path, token=token)
    assert status == 200, body
    assert len(body["results"]) == body["count"], body
    return body["results"]


def settled_submissions(stack, token, timeout=90):
    """The user's submissions once none is still moving (scoring or diagnostics queued or
    running), so two reads of the list a moment apart see the same thing."""
    deadline = time.monotonic() + timeout
    while True:
        submissions = every_item(stack, "/api/v1/submissions/", token)
        moving = [s["id"] for s in submissions if s["status"] in ("uploaded", "queued", "running")
                  or s["diagnostics_status"] in ("queued", "running")]
        if not moving or time.monotonic() > deadline:
            assert not moving, f"still moving after {timeout} s: {moving}"
            return submissions
        time.sleep(0.5)


def test_cli_token_submit_wait_and_leaderboard(embedded_stack, scored, tmp_path):
    got = cli(embedded_stack, "token", scored["username"])
    assert got.returncode == 0, got.stderr
    token = got.stdout.strip()
    assert token == scored["token"]
    content, expected = sample_and_expected()
    predictions = tmp_path / "p.json"
    predictions.write_bytes(content)

    done = cli(embedded_stack, "submit", "expmrc-squad", str(predictions), "--method", "CLI system", "--wait",
               token=token)
    assert done.returncode == 0, done.stderr
    assert "scored" in done.stdout and f"overall_f1={expected['overall_f1']:.3f}" in done.stdout
    assert re.search(r"#\d+ scored", done.stderr)  # the progress line (not a terminal: one line per change)

    # Neither --public nor --private: the account's setting decides, private for a new account.
    submitted = re.search(r"submitted #(\d+) to expmrc-squad \(queued, private\)", done.stdout)
    assert submitted, done.stdout
    assert "CLI system" not in cli(embedded_stack, "leaderboard", "expmrc-squad").stdout
    assert cli(embedded_stack, "publish", submitted.group(1), token=token).returncode == 0
    # A worker stores the board after the change: wait for it.
    wait_until(lambda: "CLI system" in cli(embedded_stack, "leaderboard", "expmrc-squad").stdout,
               "the published entry on the board", timeout=90)

    bad = tmp_path / "bad.json"
    bad.write_text('{"x": 1}')
    rejected = cli(embedded_stack, "submit", "expmrc-squad", str(bad), "--method", "bad", token=token)
    assert rejected.returncode == 1 and rejected.stderr.startswith("rejected:")
    no_token = cli(embedded_stack, "submit", "expmrc-squad", str(bad), "--method", "bad")
    assert no_token.returncode == 2 and "EXPBENCH_TOKEN" in no_token.stderr and "login" in no_token.stderr


def test_login_saves_a_private_config_that_later_commands_use(embedded_stack, scored, tmp_path):
    username, token = scored["username"], scored["token"]
    config = tmp_path / "home" / "expbench" / "config.json"
    login = cli(embedded_stack, "login", username, config=config)
    assert login.returncode == 0, login.stderr
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    assert stat.S_IMODE(config.parent.stat().st_mode) == 0o700
    saved = json.loads(config.read_text())
    assert saved == {"url": embedded_stack.url, "token": token}

    # No EXPBENCH_URL, no EXPBENCH_TOKEN: everything comes from the file.
    shown = as_json(cli(embedded_stack, "config", "--json", config=config, url=False))
    assert shown["url"] == embedded_stack.url and str(config) in shown["token_source"]
    assert token not in json.dumps(shown)
    assert as_json(cli(embedded_stack, "list", "--json", config=config, url=False)) == \
        every_item(embedded_stack, "/api/v1/submissions/", token)
    assert as_json(cli(embedded_stack, "quota", "expmrc-squad", "--json", config=config, url=False)) == \
        embedded_stack.request("GET", "/api/v1/tasks/expmrc-squad/quota/", token=token)[1]

    # login --token checks the token before saving it.
    refused = cli(embedded_stack, "login", "--token", "0" * 40, config=tmp_path / "other.json")
    assert "refused" in one_error_line(refused, 4) and not (tmp_path / "other.json").exists()
    given = cli(embedded_stack, "login", "--token", token, config=tmp_path / "given.json")
    assert given.returncode == 0 and json.loads((tmp_path / "given.json").read_text())["token"] == token

    assert cli(embedded_stack, "logout", config=config, url=False).returncode == 0
    assert json.loads(config.read_text()) == {"url": embedded_stack.url}
    logged_out = cli(embedded_stack, "list", config=config, url=False)
    assert "EXPBENCH_TOKEN" in one_error_line(logged_out, 2)


def test_read_commands_print_tables_and_json(embedded_stack, scored):
    token = scored["token"]
    sample_id, empty_id = scored["ids"]
    api = settled_submissions(embedded_stack, token)  # nothing of this user moves from here on

    tasks = as_json(cli(embedded_stack, "tasks", "--json"))
    assert tasks == every_item(embedded_stack, "/api/v1/tasks/")
    text = cli(embedded_stack, "tasks").stdout
    assert all(t["slug"] in text for t in tasks) and all(len(line) <= 80 for line in text.splitlines()[:5])

    board = as_json(cli(embedded_stack, "leaderboard", "expmrc-squad", "--json"))
    assert board == embedded_stack.board("expmrc-squad")  # every row, from every page
    assert "CLI sample" in cli(embedded_stack, "leaderboard", "expmrc-squad").stdout
    average = as_json(cli(embedded_stack, "leaderboard", "--benchmark", "expmrc", "--json"))
    assert average["tasks"][0] == "expmrc-squad"
    assert "AVERAGE" in cli(embedded_stack, "leaderboard", "--benchmark", "expmrc").stdout

    mine = as_json(cli(embedded_stack, "list", "--json", token=token))
    assert mine == api and set(scored["ids"]) <= {s["id"] for s in mine}
    assert as_json(cli(embedded_stack, "list", "--task", "expmrc-c3", "--json", token=token)) == []
    assert as_json(cli(embedded_stack, "list", "--status", "scored", "--task", "expmrc-squad", "--json", token=token)) \
        == [s for s in api if s["status"] == "scored" and s["task"] == "expmrc-squad"]
    listing = cli(embedded_stack, "list", token=token).stdout
    assert f"{scored['expected']['overall_f1']:.3f}" in listing and "CLI empty" in listing

    status = as_json(cli(embedded_stack, "status", str(sample_id), "--json", token=token))
    assert status["id"] == sample_id and status["status"] == "scored"
    assert "overall_f1=" in cli(embedded_stack, "status", str(sample_id), token=token).stdout

    quota = as_json(cli(embedded_stack, "quota", "expmrc-squad", "--json", token=token))
    assert quota == embedded_stack.request("GET", "/api/v1/tasks/expmrc-squad/quota/", token=token)[1]
    assert quota["used"] >= 2
    assert f"{quota['used']} of {quota['limit']} submissions used today" in cli(embedded_stack, "quota",
                                                                                 "expmrc-squad", token=token).stdout

    diagnostics = as_json(cli(embedded_stack, "diagnostics", str(sample_id), "--json", token=token))
    assert set(diagnostics) == {"id", "task", "status", "diagnostics"} and diagnostics["id"] == sample_id
    text = cli(embedded_stack, "diagnostics", str(sample_id), token=token).stdout
    assert text.startswith(f"#{sample_id} expmrc-squad diagnostics: {diagnostics['status']}")

    compared = as_json(cli(embedded_stack, "compare", str(sample_id), str(empty_id), "--json", token=token))
    assert compared["a"]["id"] == sample_id and [m["metric"] for m in compared["metrics"]][-1] == "overall_f1"
    text = cli(embedded_stack, "compare", str(sample_id), str(empty_id), token=token).stdout
    assert "overall_f1" in text and "paired test" in text


def test_inputs_to_a_file_equal_the_api(embedded_stack, tmp_path):
    for slug in ("expmrc-squad", "checklist-squad"):  # CheckList: ~27 MB, read in chunks
        target = tmp_path / f"{slug}.json"
        got = cli(embedded_stack, "inputs", slug, "-o", str(target))
        assert got.returncode == 0, got.stderr
        with urllib.request.urlopen(f"{embedded_stack.url}/api/v1/tasks/{slug}/inputs/", timeout=60) as response:
            assert target.read_bytes() == response.read()
        assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".part")] == []
    to_stdout = cli(embedded_stack, "inputs", "expmrc-squad")
    assert json.loads(to_stdout.stdout) == json.loads((tmp_path / "expmrc-squad.json").read_text())


def test_publish_unpublish_and_cancel(embedded_stack, scored, tmp_path):
    token = scored["token"]
    sample_id = scored["ids"][0]

    def public():
        return embedded_stack.request("GET", f"/api/v1/submissions/{sample_id}/", token=token)[1]["public"]

    assert cli(embedded_stack, "unpublish", str(sample_id), token=token).returncode == 0 and public() is False
    assert as_json(cli(embedded_stack, "publish", str(sample_id), "--json", token=token))["public"] is True
    assert public() is True

    finished = cli(embedded_stack, "cancel", str(sample_id), token=token)
    assert "Only queued submissions can be cancelled" in one_error_line(finished, 1)

    # A fresh submission is cancelled if the worker has not picked it up yet; either way the
    # client reports what the server answered.
    (tmp_path / "e.json").write_text("{}")
    created = as_json(cli(embedded_stack, "submit", "expmrc-squad", str(tmp_path / "e.json"), "--method", "to cancel",
                          "--json", token=token))
    cancel = cli(embedded_stack, "cancel", str(created["id"]), token=token)
    after = embedded_stack.request("GET", f"/api/v1/submissions/{created['id']}/", token=token)[1]["status"]
    if cancel.returncode == 0:
        assert after == "cancelled" and f"cancelled #{created['id']}" in cancel.stdout
    else:
        assert "cannot cancel" in one_error_line(cancel, 1) and after != "cancelled"


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_server_down_is_one_line_exit_3_after_retrying_reads(embedded_stack):
    down = f"http://127.0.0.1:{free_port()}"
    start = time.monotonic()
    got = cli(embedded_stack, "--url", down, "tasks")
    assert one_error_line(got, 3) == (f"error: cannot reach the ExpBench server at {down} (connection refused); "
                                      "is it running? Set --url or EXPBENCH_URL.")
    assert got.stdout == ""
    assert time.monotonic() - start >= 3.5  # it waited 0.5 + 1 + 2 s between its tries (a busy machine adds)


class Unavailable(BaseHTTPRequestHandler):
    """Answers every request 503 and records its method: what the client tried, counted rather
    than timed, so the check holds however busy the machine is."""

    def do_GET(self):  # noqa: N802  # the name http.server calls
        self.refuse()

    def do_POST(self):  # noqa: N802
        self.refuse()

    def refuse(self):
        self.server.methods.append(self.command)
        self.send_response(503)
        self.send_header("Content-Length", "0")
        self.send_header("Connection", "close")
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def unavailable():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Unavailable)
    server.methods = []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def test_reads_are_retried_as_configured_and_an_upload_never(embedded_stack, unavailable, tmp_path):
    url = f"http://127.0.0.1:{unavailable.server_address[1]}"
    assert one_error_line(cli(embedded_stack, "--url", url, "tasks"), 7)
    assert unavailable.methods == ["GET"] * 4  # the first try and 3 retries
    unavailable.methods.clear()
    assert one_error_line(cli(embedded_stack, "--url", url, "--retries", "0", "leaderboard", "x"), 7)
    assert unavailable.methods == ["GET"]

    # An upload is never retried: a submission must not be sent twice.
    unavailable.methods.clear()
    (tmp_path / "e.json").write_text("{}")
    upload = cli(embedded_stack, "--url", url, "submit", "expmrc-squad", str(tmp_path / "e.json"), "--method", "m",
                 token="0" * 40)
    assert upload.returncode != 0 and upload.stdout == ""
    assert unavailable.methods == ["POST"]


def test_quota_reached_is_exit_6_and_says_when_to_retry(embedded_stack, scored, tmp_path):
    token = scored["token"]  # nothing else in this file submits to expmrc-race
    empty = tmp_path / "empty.json"
    empty.write_text("{}")  # a valid file that scores 0: it counts against the quota
    quota = embedded_stack.request("GET", "/api/v1/tasks/expmrc-race/quota/", token=token)[1]
    limit = quota["limit"]
    assert quota["used"] == 0, "another test used this user's expmrc-race quota"
    for number in range(limit):
        ok = cli(embedded_stack, "submit", "expmrc-race", str(empty), "--method", f"q{number}", token=token)
        assert ok.returncode == 0, ok.stderr
        assert f"{limit - number - 1} of {limit} submissions left today" in ok.stdout
    refused = cli(embedded_stack, "submit", "expmrc-race", str(empty), "--method", "one too many", token=token)
    line = one_error_line(refused, 6)
    assert re.fullmatch(rf"error: daily quota reached for expmrc-race \({limit} of {limit} used\); "
                        r"retry after (\d+ h( \d+ min)?|\d+ min|\d+ s) \(at \d{4}-\d\d-\d\d 00:00 UTC\)", line), line
    assert as_json(cli(embedded_stack, "quota", "expmrc-race", "--json", token=token))["remaining"] == 0


def test_bad_token_is_exit_4_and_unknown_names_exit_5(embedded_stack, scored):
    bad = cli(embedded_stack, "list", token="0" * 40)
    assert "login" in one_error_line(bad, 4) and "EXPBENCH_TOKEN" in bad.stderr
    assert "not authenticated" in one_error_line(cli(embedded_stack, "--token", "bad", "tasks"), 4)

    unknown_task = cli(embedded_stack, "leaderboard", "no-such-task")
    assert "task 'no-such-task' not found" in one_error_line(unknown_task, 5)
    assert "no-such-task" in one_error_line(cli(embedded_stack, "inputs", "no-such-task"), 5)
    assert "no-such-task" in one_error_line(cli(embedded_stack, "quota", "no-such-task", token=scored["token"]), 5)
    unknown_id = cli(embedded_stack, "status", "999999", token=scored["token"])
    assert "submission #999999 not found" in one_error_line(unknown_id, 5)
    assert one_error_line(cli(embedded_stack, "publish", "999999", token=scored["token"]), 5)
    assert one_error_line(cli(embedded_stack, "leaderboard", "--benchmark", "no-such-benchmark"), 5)
