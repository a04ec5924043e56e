"""The account commands: token, login, logout, config (alias whoami)."""
from __future__ import annotations

import argparse
import getpass
import sys
from collections.abc import Mapping

from . import config
from .client import api_path
from .context import Context
from .errors import CliError, ExitCode, Subject, not_json


def password_for(ctx: Context, username: str) -> str:
    password = ctx.environ.get("EXPBENCH_PASSWORD")
    if password:
        return password
    try:
        return getpass.getpass(f"password for {username} at {ctx.settings.url}: ")
    except EOFError:
        raise CliError(ExitCode.USAGE,
                       "no password given (set EXPBENCH_PASSWORD to give it without a prompt)") from None


def obtain_token(ctx: Context, username: str) -> str:
    response = ctx.client.call("POST", api_path("auth", "token"),
                               json_body={"username": username, "password": password_for(ctx, username)})
    if response.status == 400:
        raise CliError(ExitCode.AUTH, f"the server refused the user name or password for {username!r}")
    body = ctx.check(response, Subject("the token endpoint"))
    if not isinstance(body, Mapping) or not body.get("token"):
        raise not_json(response.status, ctx.settings.url)
    return str(body["token"])


def cmd_token(ctx: Context, args: argparse.Namespace) -> int:
    ctx.say(obtain_token(ctx, args.username))
    return ExitCode.OK


def cmd_login(ctx: Context, args: argparse.Namespace) -> int:
    username = args.username
    if not username and ctx.settings.token_source in ("--token", "EXPBENCH_TOKEN"):
        token = ctx.settings.token or ""
    else:
        if not username:
            if not sys.stdin.isatty():
                raise CliError(ExitCode.USAGE, f"give a user name: {ctx.prog} login USERNAME (or --token TOKEN)")
            try:
                username = input(f"user name at {ctx.settings.url}: ").strip()
            except EOFError:
                username = ""
            if not username:
                raise CliError(ExitCode.USAGE, "no user name given")
        token = obtain_token(ctx, username)
    # Check the token before saving it, so a typo is caught now rather than at the next submit
    # (one item is enough: the answer is only checked, not shown).
    checked = ctx.client.call("GET", api_path("submissions"), token=token, query={"limit": 1})
    if checked.status in (401, 403):
        raise CliError(ExitCode.AUTH, f"the server at {ctx.settings.url} refused that token")
    ctx.check(checked, Subject("the submissions endpoint"))
    try:
        config.store_login(ctx.settings.path, ctx.settings.url, token)
    except OSError as exc:
        raise CliError(ExitCode.USAGE, f"cannot write the config file {ctx.settings.path}: {exc.strerror}") from None
    who = f" as {username}" if username else ""
    ctx.say(f"logged in to {ctx.settings.url}{who}; token saved in {ctx.settings.path}")
    return ExitCode.OK


def cmd_logout(ctx: Context, args: argparse.Namespace) -> int:
    try:
        removed = config.forget_token(ctx.settings.path)
    except OSError as exc:
        raise CliError(ExitCode.USAGE, f"cannot change the config file {ctx.settings.path}: {exc.strerror}") from None
    if removed:
        ctx.say(f"token removed from {ctx.settings.path} (it stays valid on the server until an admin revokes it)")
    else:
        ctx.say(f"no token saved in {ctx.settings.path}")
    return ExitCode.OK


def cmd_config(ctx: Context, args: argparse.Namespace) -> int:
    s = ctx.settings
    info = {"url": s.url, "url_source": s.url_source, "token": config.mask(s.token) if s.token else None,
            "token_source": s.token_source, "config_file": str(s.path), "config_file_exists": s.path.exists()}
    if s.note:
        info["note"] = s.note
    lines = [f"server  {s.url}  (from {s.url_source})", f"token   {s.describe_token()}",
             f"config  {s.path}" + ("" if s.path.exists() else "  (not created yet)")]
    if s.note:
        lines.append(f"note    {s.note}")
    ctx.show(info, "\n".join(lines))
    return ExitCode.OK
