"""Where the client finds its server URL and API token, and the config file ``expbench login`` writes.

Precedence, highest first: the ``--url``/``--token`` flags, the ``EXPBENCH_URL``/``EXPBENCH_TOKEN``
environment variables, the config file, then the default URL. The file is ``$EXPBENCH_CONFIG``,
else ``$XDG_CONFIG_HOME/expbench/config.json``, else ``~/.config/expbench/config.json``; it holds
``{"url", "token"}`` and is written atomically, readable by its owner only.
"""
from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_URL = "http://127.0.0.1:8000"


class ConfigError(Exception):
    """The config file exists but cannot be used (unreadable, not JSON, wrong shape)."""


def config_path(environ: Mapping[str, str] | None = None) -> Path:
    environ = os.environ if environ is None else environ
    if environ.get("EXPBENCH_CONFIG"):
        return Path(environ["EXPBENCH_CONFIG"]).expanduser()
    base = Path(environ["XDG_CONFIG_HOME"]).expanduser() if environ.get("XDG_CONFIG_HOME") else None
    if base is None:
        base = Path(environ.get("HOME") or Path.home()) / ".config"
    return base / "expbench" / "config.json"


def load_config(path: Path) -> dict[str, Any]:
    """The saved settings; {} when there is no file."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"cannot read the config file {path}: {exc.strerror}") from None
    try:
        data = json.loads(text)
    except ValueError:
        raise ConfigError(f"the config file {path} is not valid JSON; fix it or delete it") from None
    if not isinstance(data, dict) or not all(isinstance(data.get(k, ""), str) for k in ("url", "token")):
        raise ConfigError(f'the config file {path} should hold {{"url": "...", "token": "..."}}; fix it or delete it')
    return data


def save_config(path: Path, data: Mapping[str, Any]) -> None:
    """Write atomically (a temporary file renamed over the old one), mode 0600; a directory this
    creates gets 0700. The token is a password: nobody else on the machine may read it."""
    folder = path.parent
    if not folder.exists():
        folder.mkdir(parents=True, mode=0o700)
        folder.chmod(0o700)  # mkdir's mode is filtered by the umask
    descriptor, temporary = tempfile.mkstemp(prefix=".config-", suffix=".tmp", dir=folder)  # created 0600
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            json.dump(dict(data), handle, indent=2)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, 0o600)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def same_server(a: str, b: str) -> bool:
    return a.rstrip("/").lower() == b.rstrip("/").lower()


@dataclass
class Settings:
    url: str
    url_source: str  # "--url", "EXPBENCH_URL", "the config file ...", "the default"
    token: str | None
    token_source: str | None
    path: Path
    note: str = ""  # why a saved token was not used

    def describe_token(self) -> str:
        if not self.token:
            return "none"
        return f"{mask(self.token)} (from {self.token_source})"


def mask(token: str) -> str:
    """Enough of a token to tell two apart, never enough to use it."""
    return f"{token[:4]}…" if len(token) > 8 else "…"


def resolve(*, flag_url: str | None, flag_token: str | None, environ: Mapping[str, str] | None = None,
            path: Path | None = None, strict: bool = True) -> Settings:
    """The URL and token in effect, and where each came from. The file is read only when a flag
    or variable does not already decide, so a broken file does not block an explicit command.
    ``strict=False`` (login, logout, config) reads a broken file as empty, so it can be replaced."""
    environ = os.environ if environ is None else environ
    path = path or config_path(environ)
    saved: dict[str, Any] | None = None
    problem = ""

    def from_file() -> dict[str, Any]:
        nonlocal saved, problem
        if saved is None:
            try:
                saved = load_config(path)
            except ConfigError as exc:
                if strict:
                    raise
                saved, problem = {}, str(exc)
        return saved

    if flag_url:
        url, url_source = flag_url, "--url"
    elif environ.get("EXPBENCH_URL"):
        url, url_source = environ["EXPBENCH_URL"], "EXPBENCH_URL"
    elif from_file().get("url"):
        url, url_source = from_file()["url"], f"the config file {path}"
    else:
        url, url_source = DEFAULT_URL, "the default"
    url = url.rstrip("/")

    note = ""
    token: str | None = None
    token_source: str | None = None
    if flag_token:
        token, token_source = flag_token, "--token"
    elif environ.get("EXPBENCH_TOKEN"):
        token, token_source = environ["EXPBENCH_TOKEN"], "EXPBENCH_TOKEN"
    elif from_file().get("token"):
        saved_url = from_file().get("url") or DEFAULT_URL
        # A token belongs to one server: never send it to another one the user switched to.
        if same_server(saved_url, url):
            token, token_source = from_file()["token"], f"the config file {path}"
        else:
            note = f"the token saved in {path} is for {saved_url}, not {url}"
    return Settings(url, url_source, token, token_source, path, note or problem)


def store_login(path: Path, url: str, token: str) -> None:
    save_config(path, {**_existing(path), "url": url.rstrip("/"), "token": token})


def forget_token(path: Path) -> bool:
    """Remove the saved token (the URL stays); True when there was one. A broken file is deleted."""
    try:
        data = load_config(path)
    except ConfigError:
        path.unlink(missing_ok=True)
        return True
    if "token" not in data:
        return False
    del data["token"]
    save_config(path, data)
    return True


def _existing(path: Path) -> dict[str, Any]:
    try:
        return load_config(path)
    except ConfigError:
        return {}  # login replaces a broken file rather than refusing to
