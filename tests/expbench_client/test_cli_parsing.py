"""Argument parsing, usage errors and the text tables (no server involved)."""
import pytest

from expbench_client import output, reports
from expbench_client.cli import build_parser, main, program_name
from expbench_client.commands import readable_size
from expbench_client.errors import CliError, ExitCode


def parse(*argv):
    return build_parser("expbench").parse_args(list(argv))


def test_common_options_go_before_or_after_the_command():
    assert parse("--url", "http://a", "--json", "tasks").url == "http://a"
    after = parse("tasks", "--url", "http://b", "--json", "--retries", "0")
    assert (after.url, after.json, after.retries) == ("http://b", True, 0)
    # An option given before the command is not hidden by the subcommand's absent one.
    before = parse("--token", "t", "--json", "list")
    assert before.token == "t" and before.json is True
    assert not hasattr(parse("tasks"), "json")


def test_submit_arguments():
    args = parse("submit", "expmrc-squad", "p.json", "--method", "Mine", "--private", "--wait", "--wait-timeout", "30")
    assert (args.task, str(args.file), args.method, args.public, args.wait, args.wait_timeout, args.kind) == \
        ("expmrc-squad", "p.json", "Mine", False, True, 30.0, None)


def test_the_answer_timeout_goes_before_or_after_any_command():
    assert parse("--timeout", "5", "tasks").timeout == 5.0
    waiting = parse("status", "1", "--wait", "--timeout", "7", "--wait-timeout", "900")
    assert (waiting.timeout, waiting.wait_timeout) == (7.0, 900.0)
    assert not hasattr(parse("tasks"), "timeout")


@pytest.mark.parametrize("argv, fragment", [
    ([], "required: COMMAND"),
    (["status", "abc"], "invalid int value"),
    (["submit", "t", "f.json"], "--method"),
    (["list", "--status", "done"], "invalid choice"),
    (["--retries", "-1", "tasks"], "must be 0 or more"),
    (["status", "1", "--wait-timeout", "0"], "must be more than 0"),
    (["tasks", "--timeout", "0"], "must be more than 0"),
    (["login", "--json"], "unrecognized arguments"),
])
def test_usage_errors_are_one_line_and_exit_2(argv, fragment, capsys):
    assert main(argv) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and fragment in err


def test_help_documents_the_exit_codes(capsys):
    assert main(["--help"]) == 0
    text = capsys.readouterr().out
    assert "exit codes:" in text and "130" in text and "EXPBENCH_TOKEN" in text


def test_leaderboard_needs_a_task_or_a_benchmark(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("EXPBENCH_CONFIG", str(tmp_path / "c.json"))
    assert main(["leaderboard"]) == 2
    assert "give a task or --benchmark" in capsys.readouterr().err


def test_commands_that_need_a_token_say_how_to_get_one(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("EXPBENCH_CONFIG", str(tmp_path / "c.json"))
    monkeypatch.delenv("EXPBENCH_TOKEN", raising=False)
    for argv in (["list"], ["quota", "t"], ["cancel", "1"], ["publish", "1"], ["submit", "t", "f", "--method", "m"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "EXPBENCH_TOKEN" in err and "login" in err


def test_an_unreadable_file_is_exit_2(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("EXPBENCH_CONFIG", str(tmp_path / "c.json"))
    assert main(["--token", "t" * 40, "submit", "t", str(tmp_path / "missing.json"), "--method", "m"]) == 2
    assert capsys.readouterr().err == f"error: cannot read {tmp_path / 'missing.json'}: No such file or directory\n"
    with pytest.raises(CliError, match="is a directory"):
        readable_size(tmp_path)


def test_program_name_is_what_the_user_typed():
    assert program_name("/usr/bin/expbench") == "expbench"
    assert program_name("/repo/expbench_client/__main__.py") == "python -m expbench_client"


# --- text output -------------------------------------------------------------------------------
def test_tables_align_and_fit_80_columns():
    rows = [[1, "expmrc-squad", "A very long method name " * 4, "scored", True, "71.690", "2026-11-24"]]
    text = output.table(["ID", "TASK", "METHOD", "STATUS", "PUBLIC", "SCORE", "CREATED"], rows, right=[0, 5],
                        shrink=[2])
    lines = text.splitlines()
    assert all(len(line) <= 80 for line in lines)
    assert "…" in lines[1] and lines[1].startswith(" 1  expmrc-squad  A very long")
    assert lines[0].index("SCORE") + len("SCORE") == lines[1].index("71.690") + len("71.690")  # right-aligned


def test_scores_have_3_decimals_and_absent_values_a_dash():
    assert output.score(71.68986066769718) == "71.690"
    assert output.score(None) == output.cell(None) == output.cell("") == "-"
    assert output.p_value(0.004269) == "p=0.0043" and output.p_value(1e-5) == "p<0.0001"


def test_leaderboard_table():
    board = {"task": "expmrc-squad", "primary_metric": "overall_f1", "test_set_version": "v1", "rows": [
        {"rank": None, "method": "Human Performance", "team": "Authors", "scores": {"overall_f1": 83.6},
         "reported": True},
        {"rank": 1, "method": "CLI system", "team": "Us", "scores": {"overall_f1": 71.68986}, "reported": False},
        {"rank": 2, "method": "No score", "team": "Us", "scores": {}, "reported": False},
    ]}
    lines = output.leaderboard_table(board).splitlines()
    assert lines[1].split() == ["RANK", "METHOD", "TEAM", "overall_f1"]
    assert lines[2].split() == ["-", "*", "Human", "Performance", "Authors", "83.600"]
    assert lines[3].split() == ["1", "CLI", "system", "Us", "71.690"]
    assert lines[4].split() == ["2", "No", "score", "Us", "-"]
    assert lines[-1].startswith("* reported")


def test_benchmark_columns_drop_the_shared_prefix():
    tasks = ["expmrc-squad", "expmrc-cmrc2018"]
    assert [output.short_task(t, tasks) for t in tasks] == ["squad", "cmrc2018"]
    assert output.short_task("expmrc-squad", ["expmrc-squad"]) == "expmrc-squad"


def test_submission_line_keeps_its_format():
    sub = {"id": 3, "task": "expmrc-squad", "method_name": "CLI", "status": "scored", "scores": {"overall_f1": 71.6899}}
    assert output.submission_line(sub) == "#3 expmrc-squad 'CLI': scored  overall_f1=71.690"


def test_diagnostics_summary_lists_every_test_with_its_p_value():
    answer = {"id": 1, "task": "t", "status": "done", "diagnostics": {"question_types": {
        "n_items": 501, "accuracy": 0.846, "seed": 0,
        "categorical": {"tests": [{"variable": "question_type", "p_value": 0.00427, "statistic": 0.338}]}}}}
    text = reports.diagnostics_report(answer)
    assert "question types: n items 501, accuracy 0.846" in text and "seed" not in text
    assert "question_type  p=0.0043  statistic 0.338" in text
    assert reports.diagnostics_report({"id": 2, "task": "t", "status": "queued", "diagnostics": None}) == \
        "#2 t diagnostics: queued (not started yet)"
