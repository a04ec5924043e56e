"""A hung server costs the client one ``--timeout``, with a clear message; tables use the
terminal's width and count a Chinese character as two columns."""
import socket
import threading

import pytest

from expbench_client import output
from expbench_client.cli import main
from expbench_client.client import DEFAULT_TIMEOUT, Client, TimedOut
from expbench_client.errors import ExitCode


class HungServer:
    """Accepts connections, reads the request, then sends ``first`` (nothing by default) and no
    more until the test ends. Counts the connections it accepted."""

    def __init__(self, first=b""):
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.first, self.accepted, self.done = first, 0, threading.Event()
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.listener.getsockname()[1]}"

    def serve(self):
        self.listener.settimeout(0.1)
        held = []
        while not self.done.is_set():
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            self.accepted += 1
            conn.recv(65536)
            conn.sendall(self.first)
            held.append(conn)
        for conn in held:
            conn.close()

    def close(self):
        self.done.set()
        self.thread.join(timeout=5)
        self.listener.close()


@pytest.fixture
def hung():
    servers = []

    def start(first=b""):
        servers.append(HungServer(first))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


@pytest.mark.parametrize("first", [b"", b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n[1,"],
                         ids=["no-answer", "answer-stops-midway"])
def test_a_hung_server_costs_one_timeout_and_one_clear_line(hung, first, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("EXPBENCH_CONFIG", str(tmp_path / "c.json"))
    server = hung(first)
    code = main(["--url", server.url, "--timeout", "0.5", "--retries", "3", "tasks"])
    err = capsys.readouterr().err
    assert code == ExitCode.UNREACHABLE
    assert err.count("\n") == 1 and "did not answer within 0.5 s" in err and "--timeout SECONDS" in err
    # Not retried: three retries of a hung read would have cost four time-outs.
    assert server.accepted == 1


def test_reads_time_out_after_30_seconds_unless_told_otherwise(hung):
    assert DEFAULT_TIMEOUT == 30.0
    assert Client("http://127.0.0.1:1").timeout == DEFAULT_TIMEOUT
    server = hung()
    with pytest.raises(TimedOut) as raised:
        Client(server.url, timeout=0.3).call("GET", "/api/v1/tasks/")
    assert raised.value.timeout == 0.3


def test_chinese_characters_take_two_columns():
    assert output.display_width("ExpMRC") == 6
    assert output.display_width("哈工大讯飞联合实验室") == 20
    assert output.display_width("ｆｕｌｌ") == 8  # fullwidth Latin
    assert output.display_width("e\u0301") == 1  # a combining accent takes none
    assert output.clip("哈工大讯飞联合实验室", 7) == "哈工大…"
    assert output.display_width(output.clip("哈工大讯飞联合实验室", 7)) <= 7


CMRC_BOARD = {"task": "expmrc-cmrc2018", "primary_metric": "overall_f1", "test_set_version": "v1", "rows": [
    {"rank": 1, "method": "MacBERT-large + 伪标签", "team": "哈工大讯飞联合实验室", "scores": {"overall_f1": 60.1}},
    {"rank": 2, "method": "ExpMRC authors' baseline (most similar sentence)", "team": "HFL",
     "scores": {"overall_f1": 52.3}},
    {"rank": 3, "method": "BERT-wwm", "team": "北京", "scores": {"overall_f1": 48.0}},
]}


def test_rows_with_chinese_names_line_up(monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    lines = output.leaderboard_table(CMRC_BOARD).splitlines()[1:]
    # Every score ends in the same terminal column, and the team column starts in the same one.
    ends = {output.display_width(line) for line in lines}
    assert len(ends) == 1, lines
    team_starts = {output.display_width(line[:line.index(team)]) for line, team in
                   zip(lines, ["TEAM", "哈工大讯飞联合实验室", "HFL", "北京"], strict=True)}
    assert len(team_starts) == 1, lines


def test_names_are_cut_only_when_the_terminal_is_too_narrow(monkeypatch):
    name = CMRC_BOARD["rows"][1]["method"]
    monkeypatch.setenv("COLUMNS", "160")
    assert name in output.leaderboard_table(CMRC_BOARD)
    monkeypatch.setenv("COLUMNS", "60")
    narrow = output.leaderboard_table(CMRC_BOARD).splitlines()
    assert name not in "\n".join(narrow) and "ExpMRC authors' b" in "\n".join(narrow)
    assert max(output.display_width(line) for line in narrow[1:]) <= 60
