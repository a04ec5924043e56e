"""`expbench leaderboard`: every board prints its header, and a row without a score (an entry
whose IoU is undefined, a board that has no entry yet) prints "-" instead of crashing."""
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import pytest

from expbench_client import output
from expbench_client.cli import main

ROW = {"rank": 1, "method": "Longest sentence", "team": "Lab", "reported": False,
       "scores": {"iou": 40.0, "hpd": 60.0, "snr": 100.0}}


@pytest.mark.parametrize("scores", [{"iou": None, "hpd": None, "snr": None}, {}, None, {"iou": ""}, []],
                         ids=["nulls", "empty", "null", "empty-string", "a-list"])
def test_a_row_without_scores_prints_dashes(scores):
    failed = {"rank": None, "method": "Failed run", "team": "Lab", "reported": False, "scores": scores}
    text = output.leaderboard_table({"task": "quackie-x", "primary_metric": "iou", "test_set_version": "v1",
                                     "rows": [ROW, failed]})
    lines = text.splitlines()
    assert lines[0] == "quackie-x  (primary metric iou, test set v1)"
    assert lines[1].split() == ["RANK", "METHOD", "TEAM", "iou", "hpd", "snr"]
    assert lines[2].split() == ["1", "Longest", "sentence", "Lab", "40.000", "60.000", "100.000"]
    assert lines[3].split() == ["-", "Failed", "run", "Lab", "-", "-", "-"]


def test_an_empty_board_still_prints_its_header():
    text = output.leaderboard_table({"task": "quackie-x", "primary_metric": "iou", "test_set_version": None,
                                     "rows": []})
    assert text.splitlines() == ["quackie-x  (primary metric iou, test set -)", "RANK  METHOD  TEAM  iou",
                                 "no entries yet"]


def test_an_empty_benchmark_board_prints_its_header():
    text = output.benchmark_table("expmrc", {"tasks": ["expmrc-squad", "expmrc-c3"], "rows": []})
    lines = text.splitlines()
    assert lines[1].split() == ["RANK", "METHOD", "TEAM", "AVERAGE", "squad", "c3"]
    assert lines[-1] == "no system has a public score on every task yet"


class Board(BaseHTTPRequestHandler):
    board: dict = {}

    def do_GET(self):  # noqa: N802 (the http.server name)
        wanted = urlsplit(self.path).path == "/api/v1/tasks/quackie-x/leaderboard/"
        body = json.dumps(self.board).encode() if wanted else b"{}"
        self.send_response(200 if body != b"{}" else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def server_url():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Board)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_the_command_prints_a_board_with_an_unscored_row(server_url, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    Board.board = {"task": "quackie-x", "primary_metric": "iou", "test_set_version": "v1",
                   "rows": [ROW, {"rank": None, "method": "Failed run", "team": "Lab", "reported": False,
                                  "scores": {"iou": None, "hpd": None, "snr": None}, "unranked_reason": "x"}]}
    assert main(["--url", server_url, "leaderboard", "quackie-x"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].split() == ["RANK", "METHOD", "TEAM", "iou", "hpd", "snr"]
    assert out[3].split()[-3:] == ["-", "-", "-"]
