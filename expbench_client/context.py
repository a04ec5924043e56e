"""What every command gets: the resolved settings, an HTTP client, where to print, and the
helpers that turn an answer into its JSON body or a CliError."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TextIO

from . import config, output
from .client import Client, Response
from .errors import CliError, ExitCode, Subject, error_for_status, not_json


@dataclass
class Context:
    settings: config.Settings
    client: Client
    prog: str
    json: bool
    stdout: TextIO
    stderr: TextIO
    environ: Mapping[str, str]

    def say(self, text: str) -> None:
        print(text, file=self.stdout)

    def require_token(self) -> None:
        if self.settings.token:
            return
        why = f" ({self.settings.note})" if self.settings.note else ""
        raise CliError(ExitCode.USAGE, f"no API token{why}: log in with `{self.prog} login USERNAME`, "
                                       "or pass --token or set EXPBENCH_TOKEN")

    def check(self, response: Response, subject: Subject) -> Any:
        """The JSON body of a success; a CliError for anything else."""
        if not response.ok:
            raise error_for_status(response.status, response.body, response.headers, url=self.settings.url,
                                   subject=subject, token_source=self.settings.token_source, prog=self.prog)
        if not response.is_json:
            raise not_json(response.status, self.settings.url)
        return response.body

    def get(self, path: str, subject: Subject, **query: Any) -> Any:
        return self.check(self.client.call("GET", path, query=query or None), subject)

    def get_list(self, path: str, subject: Subject) -> list[Any]:
        """Every item of a list, from every page of it (``Client.read_list``). ``--json`` prints
        this list: the answer the unversioned paths gave, before lists came in pages."""
        return results(self.check(self.client.read_list(path), subject))

    def show(self, value: Any, text: str) -> None:
        if self.json:
            output.emit_json(value, self.stdout)
        else:
            self.say(text)


def task_subject(ctx: Context, slug: str) -> Subject:
    return Subject(f"task {slug!r}", f"list the tasks with: {ctx.prog} tasks", task=slug)


def submission_subject(ctx: Context, submission_id: int) -> Subject:
    return Subject(f"submission #{submission_id}",
                   f"it does not exist, or it is neither yours nor public; list yours with: {ctx.prog} list")


def results(body: Any) -> list[Any]:
    """A list answer, or the ``results`` of a paginated one (``Client.read_list`` and
    ``Client.call`` gather the results of every page into the first)."""
    if isinstance(body, Mapping):
        return list(body.get("results") or [])
    return list(body or [])
