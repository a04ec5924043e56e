"""Where the URL and token come from, and how the config file is written."""
import json
import stat

import pytest

from expbench_client import config
from expbench_client.cli import main


def test_config_path_follows_expbench_config_then_xdg_then_home(tmp_path):
    assert config.config_path({"EXPBENCH_CONFIG": str(tmp_path / "c.json"), "XDG_CONFIG_HOME": "/x"}) == \
        tmp_path / "c.json"
    assert config.config_path({"XDG_CONFIG_HOME": str(tmp_path)}) == tmp_path / "expbench" / "config.json"
    assert config.config_path({"HOME": str(tmp_path)}) == tmp_path / ".config" / "expbench" / "config.json"


def saved(tmp_path, **data):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    return path


def test_flags_beat_environment_beat_file_beat_default(tmp_path):
    path = saved(tmp_path, url="http://file:1", token="file-token-123")
    env = {"EXPBENCH_URL": "http://env:2", "EXPBENCH_TOKEN": "env-token-456"}

    flags = config.resolve(flag_url="http://flag:3", flag_token="flag-token-789", environ=env, path=path)
    assert (flags.url, flags.url_source, flags.token, flags.token_source) == \
        ("http://flag:3", "--url", "flag-token-789", "--token")

    from_env = config.resolve(flag_url=None, flag_token=None, environ=env, path=path)
    assert (from_env.url, from_env.token) == ("http://env:2", "env-token-456")
    assert (from_env.url_source, from_env.token_source) == ("EXPBENCH_URL", "EXPBENCH_TOKEN")

    from_file = config.resolve(flag_url=None, flag_token=None, environ={}, path=path)
    assert (from_file.url, from_file.token) == ("http://file:1", "file-token-123")
    assert str(path) in from_file.url_source and str(path) in from_file.token_source

    default = config.resolve(flag_url=None, flag_token=None, environ={}, path=tmp_path / "absent.json")
    assert (default.url, default.url_source, default.token) == (config.DEFAULT_URL, "the default", None)


def test_a_saved_token_is_never_sent_to_another_server(tmp_path):
    path = saved(tmp_path, url="http://server-a:8000", token="token-for-a-1234")
    other = config.resolve(flag_url="http://server-b:8000", flag_token=None, environ={}, path=path)
    assert other.token is None and "server-a" in other.note
    same = config.resolve(flag_url="http://server-a:8000/", flag_token=None, environ={}, path=path)
    assert same.token == "token-for-a-1234"


def test_flags_and_environment_do_not_need_a_readable_file(tmp_path):
    broken = tmp_path / "config.json"
    broken.write_text("{not json")
    settings = config.resolve(flag_url="http://u:1", flag_token="t" * 40, environ={}, path=broken)
    assert settings.token == "t" * 40
    with pytest.raises(config.ConfigError, match="not valid JSON"):
        config.resolve(flag_url=None, flag_token=None, environ={}, path=broken)


def test_wrong_shape_is_a_config_error(tmp_path):
    with pytest.raises(config.ConfigError, match="should hold"):
        config.load_config(saved(tmp_path, url=["a list"]))


def test_login_file_is_private_and_written_atomically(tmp_path):
    path = tmp_path / "fresh" / "expbench" / "config.json"
    config.store_login(path, "http://host:8000/", "abcdef0123456789")
    assert json.loads(path.read_text()) == {"url": "http://host:8000", "token": "abcdef0123456789"}
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    config.store_login(path, "http://host:8000", "second-token-0000")
    assert json.loads(path.read_text())["token"] == "second-token-0000"
    assert sorted(p.name for p in path.parent.iterdir()) == ["config.json"]  # no temporary file left


def test_an_existing_folder_keeps_its_mode(tmp_path):
    tmp_path.chmod(0o755)
    config.store_login(tmp_path / "config.json", "http://h", "token-1234567890")
    assert stat.S_IMODE(tmp_path.stat().st_mode) == 0o755


def test_logout_forgets_the_token_and_keeps_the_url(tmp_path):
    path = tmp_path / "config.json"
    config.store_login(path, "http://host:8000", "abcdef0123456789")
    assert config.forget_token(path) is True
    assert json.loads(path.read_text()) == {"url": "http://host:8000"}
    assert config.forget_token(path) is False


def test_mask_never_shows_the_whole_token():
    token = "60c50337da171e6ffdd3731f9cf94d7dad38b5c3"
    assert config.mask(token) == "60c5…" and token not in config.mask(token)
    assert config.mask("short") == "…"


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    for name in ("EXPBENCH_URL", "EXPBENCH_TOKEN", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("EXPBENCH_CONFIG", str(tmp_path / "config.json"))
    return tmp_path / "config.json"


def test_config_command_shows_sources_but_not_the_token(clean_env, capsys):
    config.store_login(clean_env, "http://saved:8000", "abcdef0123456789abcdef")
    assert main(["config", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["url"] == "http://saved:8000" and shown["token"] == "abcd…"
    assert shown["token_source"] == f"the config file {clean_env}"
    assert main(["whoami"]) == 0
    text = capsys.readouterr().out
    assert "abcdef0123456789abcdef" not in text and "from the config file" in text


def test_a_broken_config_file_is_exit_2_with_one_line(clean_env, capsys):
    clean_env.write_text("{broken")
    assert main(["tasks"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: the config file") and "delete it" in err
    # ... but config says what is wrong, and logout (or login) replaces it.
    assert main(["config"]) == 0
    assert "not valid JSON" in capsys.readouterr().out
    assert main(["logout"]) == 0 and not clean_env.exists()


def test_a_url_without_scheme_is_bad_usage(clean_env, capsys):
    assert main(["--url", "127.0.0.1:8000", "tasks"]) == 2
    assert "must start with http://" in capsys.readouterr().err
