"""A small HTTP client for the ExpBench API, standard library only (no Django), shared by the
command-line client and the integration tests."""
import json
import urllib.error
import urllib.request
import uuid


def encode_multipart(fields, files):
    """Body and content type for multipart/form-data. files: {name: (filename, bytes)}."""
    boundary = uuid.uuid4().hex
    parts = []
    for name, value in fields.items():
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode())
    for name, (filename, content) in files.items():
        parts.append(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; filename="{filename}"\r\n'
            "Content-Type: application/json\r\n\r\n".encode() + content + b"\r\n"
        )
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


class Client:
    def __init__(self, base_url, token=None, timeout=60):
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.timeout = timeout

    def request(self, method, path, *, json_body=None, fields=None, files=None, token=None):
        """Returns (HTTP status, decoded JSON body or text). Never raises on HTTP errors."""
        headers = {"Accept": "application/json"}
        token = token or self.token
        if token:
            headers["Authorization"] = f"Token {token}"
        data = None
        if json_body is not None:
            data = json.dumps(json_body).encode()
            headers["Content-Type"] = "application/json"
        elif fields is not None or files is not None:
            data, headers["Content-Type"] = encode_multipart(fields or {}, files or {})
        req = urllib.request.Request(self.base_url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            body = error.read()
            try:
                return error.code, json.loads(body)
            except ValueError:
                return error.code, body.decode(errors="replace")

    def obtain_token(self, username, password):
        return self.request("POST", "/api/auth/token/", json_body={"username": username, "password": password})

    def submit(self, task, content, *, method_name, filename="predictions.json", description="", url="", public=True,
               kind="predictions"):
        """kind: predictions, skills (span tasks) or code (QUACKIE tracks)."""
        fields = {"method_name": method_name, "public": "true" if public else "false", "kind": kind}
        if description:
            fields["description"] = description
        if url:
            fields["url"] = url
        return self.request("POST", f"/api/tasks/{task}/submissions/", fields=fields,
                            files={"file": (filename, content)})

    def submission(self, submission_id):
        return self.request("GET", f"/api/submissions/{submission_id}/")

    def leaderboard(self, task):
        return self.request("GET", f"/api/tasks/{task}/leaderboard/")
