"""`expbench submit` sends `public` only when the user says --public or --private; otherwise the
server applies the account's default visibility (tests/submissions/test_api.py checks that side
with the very bytes this client sends). Here the command runs against a small stand-in HTTP server
on localhost that records what arrives."""
import email
import email.policy

import pytest

from expbench_client.cli import build_parser, main
from expbench_client.client import encode_multipart, upload_fields
from tests.expbench_client.local_server import JsonHandler, serve


def form_fields(body, content_type):
    """{name: text} of the non-file parts of a multipart/form-data body."""
    message = email.message_from_bytes(f"Content-Type: {content_type}\r\n\r\n".encode() + body,
                                       policy=email.policy.HTTP)
    return {part.get_param("name", header="content-disposition"): part.get_content()
            for part in message.iter_parts() if not part.get_filename()}


class Recorder(JsonHandler):
    """Answers an upload as the server would: 201 and the entry, public as asked, else the account's
    default (private here, as for a new account). The quota read gets a 404 (the line omits it)."""
    uploads: list = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        fields = form_fields(body, self.headers["Content-Type"])
        self.uploads.append(fields)
        public = {"true": True, "false": False}.get(fields.get("public"), False)
        self.answer(201, {"id": 7, "task": "expmrc-squad", "status": "queued", "public": public})

    def do_GET(self):
        self.answer(404, {"detail": "Not found."})


@pytest.fixture
def server():
    Recorder.uploads = []
    with serve(Recorder) as url:
        yield url, Recorder.uploads


@pytest.mark.parametrize("flags, sent, shown", [
    ([], None, "private"),            # the account decides
    (["--public"], "true", "public"),
    (["--private"], "false", "private"),
])
def test_submit_sends_public_only_when_asked(server, tmp_path, monkeypatch, capsys, flags, sent, shown):
    url, uploads = server
    monkeypatch.setenv("EXPBENCH_CONFIG", str(tmp_path / "config.json"))
    predictions = tmp_path / "p.json"
    predictions.write_text("{}")
    code = main(["--url", url, "--token", "t0k", "submit", "expmrc-squad", str(predictions), "--method", "Mine",
                 *flags])
    assert code == 0, capsys.readouterr().err
    assert len(uploads) == 1
    assert uploads[0].get("public") == sent
    assert {k: uploads[0][k] for k in ("method_name", "kind")} == {"method_name": "Mine", "kind": "predictions"}
    assert f"submitted #7 to expmrc-squad (queued, {shown})" in capsys.readouterr().out


def test_public_and_private_together_are_a_usage_error(capsys):
    assert main(["submit", "t", "f.json", "--method", "m", "--public", "--private"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "not allowed with argument" in err


def test_parsing_gives_none_true_or_false():
    parse = build_parser("expbench").parse_args
    base = ["submit", "t", "f.json", "--method", "m"]
    assert [parse(base + flags).public for flags in ([], ["--public"], ["--private"])] == [None, True, False]


def test_the_help_says_what_happens_without_a_flag(capsys):
    assert main(["submit", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "--public" in text and "--private" in text
    assert "without --public or --private the entry follows your account's setting" in text
    assert "off for new accounts: the entry stays private" in text


def test_upload_fields_leave_public_out_unless_chosen():
    assert "public" not in upload_fields(method_name="m")
    assert upload_fields(method_name="m", public=True)["public"] == "true"
    assert upload_fields(method_name="m", public=False)["public"] == "false"
    body, content_type = encode_multipart(upload_fields(method_name="m"), {"file": ("p.json", b"{}")})
    assert form_fields(body, content_type) == {"method_name": "m", "kind": "predictions"}
