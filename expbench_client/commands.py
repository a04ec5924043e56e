"""The commands that talk about tasks, boards and submissions. Each returns an exit code or
raises CliError; ``cli.main`` turns a CliError (and a server that cannot be reached) into one
line on stderr."""
from __future__ import annotations

import argparse
import os
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

from . import output, reports
from .account import cmd_config, cmd_login, cmd_logout, cmd_token
from .client import BoardChanged, ListChanged, ServerUnreachable, api_path
from .context import Context, results, submission_subject, task_subject
from .errors import CliError, ExitCode, Subject, describe_body, unreachable_message
from .multipart import UploadUnreadable
from .progress import TERMINAL, ProgressLine, UploadMeter, WaitTimeout, wait_until_finished

UNSUCCESSFUL = frozenset({"failed", "rejected", "cancelled"})
CODE_SUFFIXES = (".py", ".zip")
# The model contract (docs/model_submissions.md): the zip's root holds this file.
MODEL_ENTRY = "predict.py"
# The error category of a model that failed its run on the task's public sample: that run's log
# is the owner's to read, and says why.
SMOKE_FAILED = "smoke_failed"


def cmd_tasks(ctx: Context, args: argparse.Namespace) -> int:
    tasks = ctx.get_list(api_path("tasks"), Subject("the task list"))
    ctx.show(tasks, output.tasks_table(tasks))
    return ExitCode.OK


def cmd_inputs(ctx: Context, args: argparse.Namespace) -> int:
    path = api_path("tasks", args.task, "inputs")
    meter = DownloadMeter(ctx.stderr, f"{args.task} inputs") if args.output else None
    if not args.output:
        ctx.stdout.flush()
        sink = getattr(ctx.stdout, "buffer", None)
        if sink is None:
            raise CliError(ExitCode.USAGE, "stdout takes no bytes here; use -o FILE")
        response = ctx.client.download(path, sink)
        ctx.check(response, task_subject(ctx, args.task))
        sink.flush()
        return ExitCode.OK
    target = Path(args.output)
    folder = target.parent if str(target.parent) else Path(".")
    try:
        descriptor, partial = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=folder)
    except OSError as exc:
        raise CliError(ExitCode.USAGE, f"cannot write to {folder}: {exc.strerror}") from None
    try:
        # Into a temporary file renamed at the end: a broken download never leaves a truncated FILE.
        with os.fdopen(descriptor, "wb") as sink:
            response = ctx.client.download(path, sink, on_chunk=meter.update if meter else None)
        ctx.check(response, task_subject(ctx, args.task))
        os.chmod(partial, 0o666 & ~current_umask())  # mkstemp's 0600 is for secrets; inputs are not
        os.replace(partial, target)
    except OSError as exc:
        if isinstance(exc, ServerUnreachable):
            raise
        raise CliError(ExitCode.USAGE, f"cannot write {target}: {exc.strerror or exc}") from None
    finally:
        if meter:
            meter.finish()
        Path(partial).unlink(missing_ok=True)
    ctx.say(f"saved the public inputs of {args.task} to {target} ({megabytes(response.body)})")
    return ExitCode.OK


def current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def megabytes(size: Any) -> str:
    return f"{size / 1e6:.1f} MB" if isinstance(size, int) else "-"


class DownloadMeter:
    """``downloading ...: 12.3 of 26.6 MB`` rewritten in place, on a terminal only."""

    def __init__(self, stream: TextIO, what: str) -> None:
        self.stream, self.what = stream, what
        self.tty = bool(getattr(stream, "isatty", lambda: False)())
        self.shown = False

    def update(self, received: int, expected: int | None) -> None:
        if self.tty:
            total = f" of {megabytes(expected)}" if expected else ""
            self.stream.write(f"\rdownloading {self.what}: {megabytes(received)}{total}   ")
            self.stream.flush()
            self.shown = True

    def finish(self) -> None:
        if self.shown:
            self.stream.write("\n")
            self.stream.flush()
            self.shown = False


def cmd_leaderboard(ctx: Context, args: argparse.Namespace) -> int:
    if bool(args.task) == bool(args.benchmark):
        raise CliError(ExitCode.USAGE, f"give a task or --benchmark SLUG: {ctx.prog} leaderboard TASK")
    if args.benchmark:
        if args.sort or args.order:
            raise CliError(ExitCode.USAGE, "--sort and --order apply to a task's board, not to --benchmark")
        subject = Subject(f"benchmark {args.benchmark!r}", f"list them with: {ctx.prog} benchmarks")
        board = ctx.get(api_path("benchmarks", args.benchmark, "leaderboard"), subject)
        if isinstance(board, dict) and "results" in board:  # shown, and printed, as before the one envelope
            board = {"tasks": board.get("tasks"), "rows": board["results"]}
        ctx.show(board, output.benchmark_table(args.benchmark, board))
        return ExitCode.OK
    try:
        response = ctx.client.board(args.task, sort=args.sort, order=args.order)
    except BoardChanged as exc:
        raise CliError(ExitCode.SERVER, f"the board of {args.task} changed while it was read, twice (new scores "
                                        "are arriving); nothing is shown rather than a mix of two versions; "
                                        "try again in a moment") from exc
    board = ctx.check(response, task_subject(ctx, args.task))
    ctx.show(board, output.leaderboard_table(board))
    return ExitCode.OK


def cmd_benchmarks(ctx: Context, args: argparse.Namespace) -> int:
    benchmarks = ctx.get_list(api_path("benchmarks"), Subject("the benchmark list"))
    rows = [[b.get("slug"), len(b.get("tasks") or []), b.get("name")] for b in benchmarks]
    ctx.show(benchmarks, output.table(["BENCHMARK", "TASKS", "NAME"], rows, right=[1], shrink=[2]))
    return ExitCode.OK


def cmd_quota(ctx: Context, args: argparse.Namespace) -> int:
    ctx.require_token()
    quota = ctx.get(api_path("tasks", args.task, "quota"), task_subject(ctx, args.task))
    ctx.show(quota, output.quota_line({"task": args.task, **quota}))
    return ExitCode.OK


# --- submissions -----------------------------------------------------------------------------
def readable_size(path: Path) -> int:
    """The size of the file to upload, checked readable before anything is sent (the upload
    itself reads it piece by piece while sending)."""
    try:
        with open(path, "rb") as handle:
            return os.fstat(handle.fileno()).st_size
    except IsADirectoryError:
        raise CliError(ExitCode.USAGE, f"{path} is a directory; give a file (zip a code folder first)") from None
    except OSError as exc:
        raise CliError(ExitCode.USAGE, f"cannot read {path}: {exc.strerror}") from None


def check_bundle(path: Path) -> None:
    """Refuse locally, before a large upload, a bundle the server would reject at once: not a
    zip, or no predict.py at its root. Only the zip's directory is read, never its members."""
    debug = f"try it locally with: python -m scoring run-model {path} INPUTS.json"
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError):
        raise CliError(ExitCode.USAGE, f"{path} is not a zip file: a model bundle is a .zip whose root holds "
                                       f"{MODEL_ENTRY} defining predict(examples)") from None
    except OSError as exc:
        raise CliError(ExitCode.USAGE, f"cannot read {path}: {exc.strerror or exc}") from None
    if MODEL_ENTRY not in names:
        nested = next((name for name in names if name.endswith("/" + MODEL_ENTRY)), None)
        where = f" (it has {nested}: zip the folder's contents, not the folder)" if nested else ""
        raise CliError(ExitCode.USAGE, f"{path} has no {MODEL_ENTRY} at its root{where}; {debug}")


def declarations(args: argparse.Namespace) -> dict[str, str]:
    """What the submitter declares with the upload; the options not given are not sent."""
    return {"dev_set_use": args.dev_set_use or "", "external_data": args.external_data,
            "code_url": args.code_url, "paper_url": args.paper_url}


def cmd_submit(ctx: Context, args: argparse.Namespace) -> int:
    ctx.require_token()
    readable_size(args.file)
    kind = args.kind or ("code" if args.file.suffix.lower() in CODE_SUFFIXES else "predictions")
    return upload(ctx, args, kind)


def cmd_submit_model(ctx: Context, args: argparse.Namespace) -> int:
    ctx.require_token()
    readable_size(args.file)
    check_bundle(args.file)
    return upload(ctx, args, "model")


def upload(ctx: Context, args: argparse.Namespace, kind: str) -> int:
    """Send ``args.file`` streamed from disk, with its progress on a terminal, then say what the
    server made of it (and wait for the score with ``--wait``)."""
    meter = UploadMeter(ctx.stderr, args.file.name, quiet=ctx.json)
    try:
        response = ctx.client.submit_file(args.task, args.file, method_name=args.method, filename=args.file.name,
                                          description=args.description, url=args.link, public=args.public,
                                          kind=kind, declarations=declarations(args), on_progress=meter.update)
    except ServerUnreachable as exc:
        meter.finish()
        message = unreachable_message(ctx.settings.url, exc.reason)
        if exc.maybe_sent:
            message += f" The upload may have arrived: check with `{ctx.prog} list` before sending it again."
        raise CliError(ExitCode.UNREACHABLE, message) from None
    except UploadUnreadable as exc:
        meter.finish()
        raise CliError(ExitCode.USAGE, f"{exc}; the upload was broken off, so the server stored nothing") from None
    meter.finish()
    body = response.body
    if response.status == 400 and isinstance(body, Mapping) and body.get("status") == "rejected":
        raise CliError(ExitCode.FAILED, f"{body.get('error')} (submission #{body.get('id')}, "
                                        f"{body.get('category') or 'invalid'})", prefix="rejected")
    created = ctx.check(response, task_subject(ctx, args.task))
    submission_id = created.get("id")
    # The visibility is said every time: without --public/--private it is the account's setting.
    state = ", ".join(filter(None, (str(created.get("status")), visibility(created))))
    if not args.wait:
        ctx.show(created, f"submitted #{submission_id} to {args.task} ({state}){quota_note(ctx, args)}"
                          f"; follow it with: {ctx.prog} status {submission_id} --wait")
        return ExitCode.OK
    if not ctx.json:
        ctx.say(f"submitted #{submission_id} to {args.task} ({state}){quota_note(ctx, args)}")
        ctx.stdout.flush()
    return wait_and_report(ctx, int(submission_id), args.wait_timeout)


def visibility(submission: Mapping) -> str:
    """``public`` or ``private`` from the server's answer; nothing from a server that does not say."""
    if "public" not in submission:
        return ""
    return "public" if submission["public"] else "private"


def quota_note(ctx: Context, args: argparse.Namespace) -> str:
    """``; 3 of 5 submissions left today``; nothing when the quota cannot be read (it is a courtesy)."""
    try:
        response = ctx.client.call("GET", api_path("tasks", args.task, "quota"))
    except ServerUnreachable:
        return ""
    quota = response.body
    if not response.ok or not isinstance(quota, Mapping) or "remaining" not in quota:
        return ""
    return f"; {quota['remaining']} of {quota.get('limit', '?')} submissions left today"


def fetch_submission(ctx: Context, submission_id: int) -> Any:
    return ctx.get(api_path("submissions", submission_id), submission_subject(ctx, submission_id))


def wait_and_report(ctx: Context, submission_id: int, timeout: float, first: Any = None) -> int:
    line = ProgressLine(ctx.stderr)
    try:
        final = wait_until_finished(lambda: fetch_submission(ctx, submission_id), timeout, line, first=first)
    except WaitTimeout as exc:
        status = (exc.last or {}).get("status", "unfinished")
        raise CliError(ExitCode.TIMEOUT, f"submission #{submission_id} is still {status} after {timeout:g} s; "
                                         f"it keeps running on the server; check again with: "
                                         f"{ctx.prog} status {submission_id} --wait") from None
    except ServerUnreachable as exc:
        line.finish()
        raise CliError(ExitCode.UNREACHABLE, f"{unreachable_message(exc.url, exc.reason)} Submission #{submission_id} "
                                             f"keeps running on the server; check it later with: "
                                             f"{ctx.prog} status {submission_id}") from None
    except KeyboardInterrupt:
        line.finish()
        raise CliError(ExitCode.INTERRUPTED, f"submission #{submission_id} keeps running on the server; "
                                             f"check it with: {ctx.prog} status {submission_id} --wait",
                       prefix="interrupted") from None
    finally:
        line.finish()
    return report_submission(ctx, final)


def report_submission(ctx: Context, submission: Mapping[str, Any]) -> int:
    ctx.show(submission, output.submission_details(submission))
    status = submission.get("status")
    if status in UNSUCCESSFUL:
        error = submission.get("error") or {}
        log = submission.get("run_log")
        if not ctx.json and isinstance(error, Mapping) and error.get("category") == SMOKE_FAILED and log:
            # The run on the public sample: its whole log is shown to the owner (a run on the
            # hidden inputs never shows one). With --json it is the answer's run_log.
            ctx.say(output.run_log_block(str(log)))
        reason = f": {error.get('message')}" if isinstance(error, Mapping) and error.get("message") else ""
        raise CliError(ExitCode.FAILED, f"submission #{submission.get('id')} {status}{reason}")
    return ExitCode.OK


def cmd_status(ctx: Context, args: argparse.Namespace) -> int:
    submission = fetch_submission(ctx, args.id)
    if args.wait and submission.get("status") not in TERMINAL:
        return wait_and_report(ctx, args.id, args.wait_timeout, first=submission)
    return report_submission(ctx, submission)


def cmd_list(ctx: Context, args: argparse.Namespace) -> int:
    ctx.require_token()
    mine = ctx.get_list(api_path("submissions"), Subject("your submission list"))
    chosen = [s for s in mine if (not args.task or s.get("task") == args.task)
              and (not args.status or s.get("status") == args.status)]
    if ctx.json:
        output.emit_json(chosen, ctx.stdout)
        return ExitCode.OK
    if not chosen:
        ctx.say("no submissions" + (" match" if args.task or args.status else " yet"))
        return ExitCode.OK
    ctx.say(output.submissions_table(chosen, primary_metrics(ctx)))
    return ExitCode.OK


def primary_metrics(ctx: Context) -> dict[str, str]:
    """task slug -> primary metric, for the SCORE column; {} when the task list is unavailable."""
    try:
        response = ctx.client.read_list(api_path("tasks"))
    except (ServerUnreachable, ListChanged):
        return {}
    if not response.ok:
        return {}
    return {str(t.get("slug")): str(t["primary_metric"]) for t in results(response.body)
            if isinstance(t, Mapping) and t.get("primary_metric")}


def cmd_cancel(ctx: Context, args: argparse.Namespace) -> int:
    ctx.require_token()
    response = ctx.client.call("POST", api_path("submissions", args.id, "cancel"))
    if response.status in (400, 409):
        raise CliError(ExitCode.FAILED, f"cannot cancel #{args.id}: {describe_body(response.body) or response.status}")
    submission = ctx.check(response, submission_subject(ctx, args.id))
    ctx.show(submission, f"cancelled #{args.id}")
    return ExitCode.OK


def cmd_publish(ctx: Context, args: argparse.Namespace) -> int:
    ctx.require_token()
    public = args.command == "publish"
    response = ctx.client.call("PATCH", api_path("submissions", args.id), json_body={"public": public})
    submission = ctx.check(response, submission_subject(ctx, args.id))
    if public:
        where = "on the leaderboard" if submission.get("status") == "scored" else "on the leaderboard once scored"
        text = f"#{args.id} is now public: it shows {where} of {submission.get('task')}"
    else:
        text = f"#{args.id} is now private: hidden from the leaderboard of {submission.get('task')}"
    ctx.show(submission, text)
    return ExitCode.OK


def cmd_diagnostics(ctx: Context, args: argparse.Namespace) -> int:
    answer = ctx.get(api_path("submissions", args.id, "diagnostics"), submission_subject(ctx, args.id))
    ctx.show(answer, reports.diagnostics_report(answer))
    return ExitCode.OK


def cmd_compare(ctx: Context, args: argparse.Namespace) -> int:
    result = ctx.get(api_path("compare"), Subject("the comparison"), a=args.a, b=args.b)
    ctx.show(result, reports.compare_report(result))
    return ExitCode.OK


COMMANDS = {
    "token": cmd_token, "login": cmd_login, "logout": cmd_logout, "config": cmd_config, "whoami": cmd_config,
    "tasks": cmd_tasks, "benchmarks": cmd_benchmarks, "inputs": cmd_inputs, "submit": cmd_submit,
    "submit-model": cmd_submit_model,
    "list": cmd_list, "status": cmd_status, "cancel": cmd_cancel, "publish": cmd_publish, "unpublish": cmd_publish,
    "diagnostics": cmd_diagnostics, "compare": cmd_compare, "leaderboard": cmd_leaderboard, "quota": cmd_quota,
}
