"""The command-line client against a running server and a real worker."""
import os
import subprocess
import sys

import pytest

from .conftest import sample_and_expected
from .stack import REPO

pytestmark = pytest.mark.integration


def cli(stack, *args, token=None):
    env = {**os.environ, "EXPBENCH_URL": stack.url, "EXPBENCH_PASSWORD": "cli-password-77"}
    if token:
        env["EXPBENCH_TOKEN"] = token
    return subprocess.run([sys.executable, "-m", "expbench_client", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)


def test_cli_token_submit_wait_and_leaderboard(embedded_stack, tmp_path):
    embedded_stack.create_user("cli-user", "cli-password-77")
    got = cli(embedded_stack, "token", "cli-user")
    assert got.returncode == 0, got.stderr
    token = got.stdout.strip()
    content, expected = sample_and_expected()
    predictions = tmp_path / "p.json"
    predictions.write_bytes(content)

    done = cli(embedded_stack, "submit", "expmrc-squad", str(predictions), "--method", "CLI system", "--wait",
               token=token)
    assert done.returncode == 0, done.stderr
    assert "scored" in done.stdout and f"overall_f1={expected['overall_f1']:.3f}" in done.stdout

    board = cli(embedded_stack, "leaderboard", "expmrc-squad")
    assert board.returncode == 0 and "CLI system" in board.stdout

    bad = tmp_path / "bad.json"
    bad.write_text('{"x": 1}')
    rejected = cli(embedded_stack, "submit", "expmrc-squad", str(bad), "--method", "bad", token=token)
    assert rejected.returncode == 1 and rejected.stderr.startswith("rejected:")
    no_token = cli(embedded_stack, "submit", "expmrc-squad", str(bad), "--method", "bad")
    assert no_token.returncode == 2 and "EXPBENCH_TOKEN" in no_token.stderr
