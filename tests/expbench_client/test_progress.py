"""The --wait status line and its polling, with a fake clock (no server involved)."""
import _thread
import io
import itertools
import threading

import pytest

from expbench_client import commands, config
from expbench_client.client import Client
from expbench_client.commands import Context
from expbench_client.errors import CliError, ExitCode
from expbench_client.progress import (
    ProgressLine,
    WaitTimeout,
    format_elapsed,
    format_progress,
    poll_delays,
    wait_until_finished,
)


class Terminal(io.StringIO):
    def isatty(self):
        return True


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def test_progress_line_for_a_code_run_and_a_score_file():
    code_run = {"id": 12, "status": "running", "details": {"progress": {"done": 340, "total": 1000}}}
    assert format_progress(code_run, 65) == "#12 running  340/1000 samples (34%)  1 min 05 s"
    assert format_progress({"id": 3, "status": "queued", "details": {}}, 2.5) == "#3 queued  2 s"
    assert format_progress({"id": 3, "status": "queued", "details": {"progress": {"done": 0, "total": 0}}}, 0) == \
        "#3 queued  0 s"


def test_elapsed_times():
    assert [format_elapsed(s) for s in (0, 59, 60, 3599, 3600, 3725)] == \
        ["0 s", "59 s", "1 min 00 s", "59 min 59 s", "1 h 00 min", "1 h 02 min"]


def test_polling_backs_off_from_1_to_5_seconds():
    assert list(itertools.islice(poll_delays(), 7)) == [1.0, 1.5, 2.25, 3.375, 5.0, 5.0, 5.0]


def test_on_a_terminal_the_line_is_rewritten_in_place():
    stream = Terminal()
    line = ProgressLine(stream)
    line.update({"id": 1, "status": "queued"}, 0)
    line.update({"id": 1, "status": "running", "details": {"progress": {"done": 1, "total": 4}}}, 3)
    line.update({"id": 1, "status": "scored"}, 4)
    line.finish()
    assert stream.getvalue() == ("\r#1 queued  0 s"
                                 "\r#1 running  1/4 samples (25%)  3 s"
                                 "\r#1 scored  4 s" + " " * 20 + "\n")  # padded over the longer line


def test_in_a_log_a_line_is_printed_only_on_change_and_progress_at_most_every_5_s():
    stream, clock = io.StringIO(), Clock()
    line = ProgressLine(stream, clock=clock)

    def at(seconds, status, done=None):
        clock.now = seconds
        details = {"progress": {"done": done, "total": 100}} if done is not None else {}
        line.update({"id": 7, "status": status, "details": details}, seconds)

    at(0, "queued")
    at(1, "queued")  # nothing changed
    at(2, "running", 0)  # status changed: at once
    at(3, "running", 10)  # progress, but only 1 s after the last line
    at(8, "running", 20)
    at(9, "scored")  # status changed: at once
    line.finish()
    assert stream.getvalue().splitlines() == [
        "#7 queued  0 s", "#7 running  0/100 samples (0%)  2 s", "#7 running  20/100 samples (20%)  8 s",
        "#7 scored  9 s"]


def test_wait_polls_until_a_final_status():
    states = iter([{"id": 1, "status": "running"}, {"id": 1, "status": "running"}, {"id": 1, "status": "scored"}])
    clock, stream = Clock(), io.StringIO()
    final = wait_until_finished(lambda: next(states), 60, ProgressLine(stream, clock=clock), clock=clock,
                                sleep=clock.sleep, first={"id": 1, "status": "queued"})
    assert final["status"] == "scored"
    assert clock.now == 1.0 + 1.0 + 1.5  # fast again after the change to running, then backing off


def test_wait_gives_up_after_the_timeout():
    clock = Clock()
    with pytest.raises(WaitTimeout) as caught:
        wait_until_finished(lambda: {"id": 1, "status": "queued"}, 10, ProgressLine(io.StringIO(), clock=clock),
                            clock=clock, sleep=clock.sleep)
    assert caught.value.last["status"] == "queued" and 10 <= clock.now < 11


def context(stderr):
    settings = config.Settings("http://127.0.0.1:9", "the default", None, None, config.config_path())
    return Context(settings, Client(settings.url, retries=0), "expbench", False, io.StringIO(), stderr, {})


def test_timeout_message_says_how_to_look_again():
    with pytest.raises(CliError) as caught:
        commands.wait_and_report(context(io.StringIO()), 5, 0, first={"id": 5, "status": "queued"})
    assert caught.value.code == ExitCode.TIMEOUT
    assert str(caught.value) == ("error: submission #5 is still queued after 0 s; it keeps running on the server; "
                                 "check again with: expbench status 5 --wait")


def test_ctrl_c_while_waiting_says_the_submission_keeps_running():
    stderr = Terminal()
    timer = threading.Timer(0.3, _thread.interrupt_main)  # Ctrl-C during the first pause, before any request
    timer.start()
    try:
        with pytest.raises(CliError) as caught:
            commands.wait_and_report(context(stderr), 5, 60, first={"id": 5, "status": "queued"})
    finally:
        timer.cancel()
    assert caught.value.code == ExitCode.INTERRUPTED == 130
    assert str(caught.value) == ("interrupted: submission #5 keeps running on the server; "
                                 "check it with: expbench status 5 --wait")
    assert stderr.getvalue().endswith("\n")  # the rewritten line was ended before the message
