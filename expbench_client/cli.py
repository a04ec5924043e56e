"""The ``expbench`` command line (also ``python -m expbench_client``): argument parsing, and the
one place where failures become a single ``error: ...`` line and an exit code."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any, NoReturn

from . import __version__, config
from .client import DEFAULT_RETRIES, DEFAULT_TIMEOUT, Client, ListChanged, ServerUnreachable, TimedOut
from .commands import COMMANDS
from .context import Context
from .errors import EXIT_CODES_HELP, CliError, ExitCode, list_changed_message, timed_out_message, unreachable_message

STATUSES = ("uploaded", "queued", "running", "scored", "failed", "rejected", "cancelled")

CONFIG_HELP = """\
configuration (highest first):
  --url / --token flags, then EXPBENCH_URL / EXPBENCH_TOKEN, then the config
  file written by `login` ($EXPBENCH_CONFIG, else
  $XDG_CONFIG_HOME/expbench/config.json, else ~/.config/expbench/config.json),
  then the default URL http://127.0.0.1:8000. A saved token is sent only to
  the server it was saved for. EXPBENCH_PASSWORD gives login its password."""


class Parser(argparse.ArgumentParser):
    """Usage mistakes become one ``error:`` line and exit 2, like every other failure."""

    def error(self, message: str) -> NoReturn:
        raise CliError(ExitCode.USAGE, f"{message} (see: {self.prog} --help)")


def program_name(argv0: str | None = None) -> str:
    """What the user typed, so the commands the client suggests can be pasted as they are."""
    name = Path(argv0 if argv0 is not None else (sys.argv[0] if sys.argv else "")).name
    if name in ("", "__main__.py", "-c", "cli.py"):
        return "python -m expbench_client"
    return name


def common_options(json_output: bool) -> Parser:
    """Options accepted before or after the command (``expbench --url U tasks`` and ``expbench tasks
    --url U``). SUPPRESS keeps a subcommand's absent option from hiding one given before it."""
    common = Parser(add_help=False)
    common.add_argument("--url", default=argparse.SUPPRESS, help="server URL (default: see configuration below)")
    common.add_argument("--token", default=argparse.SUPPRESS, help="API token (default: see configuration below)")
    common.add_argument("--retries", type=non_negative, default=argparse.SUPPRESS, metavar="N",
                        help=f"retries of a read on connection errors, with backoff (default {DEFAULT_RETRIES}; "
                             "0 disables); uploads and changes are never retried")
    common.add_argument("--timeout", type=positive_seconds, default=argparse.SUPPRESS, metavar="SECONDS",
                        help=f"how long the server may take to answer a request (default {DEFAULT_TIMEOUT:g}); "
                             "an answer that does not come is not retried. Uploads wait at least 600")
    if json_output:
        common.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                            help="print the server's JSON instead of a table")
    return common


def non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError("must be 0 or more")
    return value


def positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if value <= 0:
        raise argparse.ArgumentTypeError("must be more than 0")
    return value


def build_parser(prog: str = "expbench") -> Parser:
    parser = Parser(prog=prog, description="Command-line client of an ExpBench server: tasks, inputs, submissions,\n"
                                           "leaderboards, diagnostics. Standard library only.",
                    epilog=f"{CONFIG_HELP}\n\n{EXIT_CODES_HELP}", parents=[common_options(json_output=True)],
                    formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    reading = [common_options(json_output=True)]
    writing = [common_options(json_output=False)]

    def command(name: str, summary: str, *, reads: bool = True, aliases: tuple[str, ...] = (),
                epilog: str = "") -> Any:
        return sub.add_parser(name, help=summary, description=summary, aliases=list(aliases),
                              parents=reading if reads else writing,
                              epilog="\n\n".join(filter(None, (epilog, CONFIG_HELP, EXIT_CODES_HELP))),
                              formatter_class=argparse.RawDescriptionHelpFormatter)

    login = command("login", "get a token (or check the one given with --token) and save it in the config file",
                    reads=False)
    login.add_argument("username", nargs="?", help="password from EXPBENCH_PASSWORD or a prompt")
    command("logout", "remove the saved token", reads=False)
    command("config", "show the server URL and where the token comes from", aliases=("whoami",))
    token = command("token", "print a new API token for USERNAME (does not save it; see login)", reads=False)
    token.add_argument("username")

    command("tasks", "list the tasks")
    command("benchmarks", "list the benchmarks")
    inputs = command("inputs", "download a task's public inputs (JSON, no answers)")
    inputs.add_argument("task")
    inputs.add_argument("-o", "--output", metavar="FILE", help="write to FILE (default: stdout)")

    submit = command("submit", "upload a prediction file (or interpreter code)",
                     epilog="visibility: without --public or --private the entry follows your account's\n"
                            "setting (Settings on the website: \"Show new entries on the public\n"
                            "leaderboard\"), which is off for new accounts: the entry stays private.\n"
                            "Change it later with the publish / unpublish commands.")
    submit.add_argument("task", help="task slug (see the tasks command)")
    submit.add_argument("file", type=Path, help="the file to upload")
    submit.add_argument("--method", required=True, help="system name shown on the leaderboard")
    submit.add_argument("--kind", choices=["predictions", "skills", "code"],
                        help="predictions (default); skills: {original, s1, ...} for span tasks; "
                             "code: an interpreter .py/.zip for QUACKIE tracks (the default for .py and .zip files)")
    add_entry_options(submit)
    add_wait(submit, "wait until scored, showing progress")

    model = command("submit-model", "upload a model bundle, run on the server on the task's test inputs",
                    epilog="the bundle: a .zip whose root holds predict.py defining predict(examples)\n"
                           "(docs/model_submissions.md); up to the task's limit (2 GB unless the task\n"
                           "says less), sent from disk as it is read, with its progress on a terminal.\n"
                           "It runs first on the task's public sample: a failure there costs no quota\n"
                           "and --wait prints that run's log. Debug it locally first with:\n"
                           "  python -m scoring run-model BUNDLE.zip INPUTS.json")
    model.add_argument("task", help="task slug (see the tasks command)")
    model.add_argument("file", type=Path, metavar="bundle", help="the model bundle (.zip)")
    model.add_argument("--method", required=True, help="system name shown on the leaderboard")
    add_entry_options(model)
    add_wait(model, "wait until scored, showing progress (a model runs twice: public sample, then test set)")

    listing = command("list", "list your submissions")
    listing.add_argument("--task", help="only this task")
    listing.add_argument("--status", choices=STATUSES, help="only this status")
    status = command("status", "show one submission")
    status.add_argument("id", type=int)
    add_wait(status, "wait until it is finished, showing progress")
    for name, summary in (("cancel", "withdraw a queued submission"),
                          ("publish", "show a submission on the public leaderboard"),
                          ("unpublish", "hide a submission from the public leaderboard")):
        command(name, summary).add_argument("id", type=int)
    command("diagnostics", "a scored submission's diagnostics").add_argument("id", type=int)
    compare = command("compare", "two scored submissions side by side, with a paired significance test")
    compare.add_argument("a", type=int)
    compare.add_argument("b", type=int)
    board = command("leaderboard", "a task's ranked leaderboard (every row), or a benchmark's average board")
    board.add_argument("task", nargs="?")
    board.add_argument("--benchmark", metavar="SLUG", help="the average board of a benchmark instead")
    board.add_argument("--sort", metavar="KEY", help="order a task's board by rank (default), tier, system, ci, "
                                                     "fails (QUACKIE) or a metric; pinned rows stay first")
    board.add_argument("--order", choices=["asc", "desc"],
                       help="direction of --sort (default: the key's natural one, scores best first)")
    command("quota", "your submissions left today on a task (UTC day)").add_argument("task")
    return parser


def add_entry_options(parser: argparse.ArgumentParser) -> None:
    """What an upload says about its entry: description, link, visibility and the declarations
    shown with it on its page, the board and the exports."""
    parser.add_argument("--description", default="")
    parser.add_argument("--link", default="", help="paper or code URL")
    # Neither flag: the field is not sent and the server applies the account's setting ("Show new
    # entries on the public leaderboard", off for new accounts), as the web upload form does.
    visibility = parser.add_mutually_exclusive_group()
    visibility.add_argument("--public", dest="public", action="store_const", const=True, default=None,
                            help="show on the public leaderboard once scored")
    visibility.add_argument("--private", dest="public", action="store_const", const=False,
                            help="keep it off the public leaderboard")
    declared = parser.add_argument_group("declarations", "shown with the entry (default: nothing declared)")
    declared.add_argument("--dev-set-use", choices=["none", "part", "whole"],
                          help="was the task's dev set used to train the system (part or whole marks the row)")
    declared.add_argument("--external-data", default="", metavar="TEXT",
                          help="external human-annotated data used, named")
    declared.add_argument("--code-url", default="", metavar="URL", help="where the system's code is")
    declared.add_argument("--paper-url", default="", metavar="URL", help="the paper describing the system")


def add_wait(parser: argparse.ArgumentParser, summary: str) -> None:
    parser.add_argument("--wait", action="store_true", help=summary)
    parser.add_argument("--wait-timeout", type=positive_seconds, default=600.0, metavar="SECONDS",
                        help="give up waiting after this long (default 600); the submission keeps running")


def main(argv: list[str] | None = None) -> int:
    """Run one command; returns its exit code (see EXIT_CODES_HELP). Never raises."""
    prog = program_name()
    try:
        args = build_parser(prog).parse_args(argv)
        command = "config" if args.command == "whoami" else args.command
        settings = config.resolve(flag_url=getattr(args, "url", None), flag_token=getattr(args, "token", None),
                                  strict=command not in ("login", "logout", "config"))
        if not settings.url.startswith(("http://", "https://")):
            raise CliError(ExitCode.USAGE, f"the server URL {settings.url!r} (from {settings.url_source}) "
                                           "must start with http:// or https://")
        client = Client(settings.url, settings.token, timeout=getattr(args, "timeout", DEFAULT_TIMEOUT),
                        retries=getattr(args, "retries", DEFAULT_RETRIES))
        ctx = Context(settings, client, prog, bool(getattr(args, "json", False)), sys.stdout, sys.stderr, os.environ)
        return int(COMMANDS[command](ctx, args))
    except SystemExit as exc:  # --help and --version
        return exc.code if isinstance(exc.code, int) else ExitCode.OK
    except CliError as exc:
        return report(exc)
    except config.ConfigError as exc:
        return report(CliError(ExitCode.USAGE, str(exc)))
    except TimedOut as exc:
        return report(CliError(ExitCode.UNREACHABLE, timed_out_message(exc.url, exc.timeout)))
    except ServerUnreachable as exc:
        return report(CliError(ExitCode.UNREACHABLE, unreachable_message(exc.url, exc.reason)))
    except ListChanged as exc:  # any command reading a list, through Client.read_list or Client.call
        return report(CliError(ExitCode.SERVER, list_changed_message(exc.path)))
    except KeyboardInterrupt:
        return report(CliError(ExitCode.INTERRUPTED, "stopped by Ctrl-C", prefix="interrupted"))
    except BrokenPipeError:
        # The reader (e.g. `| head`) stopped reading: not a failure. Point stdout at /dev/null so
        # Python's own flush at exit does not complain a second time.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return ExitCode.OK
    except Exception as exc:  # a bug or an answer of an unexpected shape: still one line, no traceback
        if os.environ.get("EXPBENCH_DEBUG"):
            raise
        return report(CliError(ExitCode.SERVER, f"unexpected {type(exc).__name__}: {exc} "
                                                "(set EXPBENCH_DEBUG=1 to see where; please report it)"))


def report(error: CliError) -> int:
    try:
        sys.stdout.flush()  # what was printed before the failure comes first
    except OSError:
        pass
    print(error, file=sys.stderr)
    return int(error.code)
