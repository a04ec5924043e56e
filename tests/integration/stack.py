"""A real ExpBench deployment in a temporary folder: migrate + load_demo, gunicorn, Celery
worker(s) and beat as separate processes, each configured only through the environment, just
as scripts/run.sh starts them. Used by the integration and browser tests and by benchmarks."""
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

from expbench_client.client import Client

REPO = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
BIN = Path(PYTHON).parent


def wait_until(check, what, timeout=240):
    """``check()``'s first truthy value, polled every 0.25 s; AssertionError after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.25)
    raise AssertionError(f"timed out waiting for {what}")


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def reachable(host, port, timeout=1.0):
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


class Stack:
    def __init__(self, root, *, database_url=None, broker_url=None, cache_url=None, env=None):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.logs = self.root / "logs"
        self.logs.mkdir(exist_ok=True)
        self.env = {
            **os.environ,
            "EXPBENCH_VAR_DIR": str(self.root / "var"),
            "DATABASE_URL": database_url or f"sqlite:///{self.root / 'var' / 'expbench.sqlite3'}",
            "SECRET_KEY": "integration-test-secret",
            "OMP_WAIT_POLICY": "PASSIVE",
            "PYTHONUNBUFFERED": "1",
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "API_RATE_ANON": "100000/min",
            "API_RATE_USER": "100000/min",
            "LOGIN_RATE": "100000/min",
            "LOGIN_ADDRESS_RATE": "100000/min",
            "SIGNUP_RATE": "100000/min",
            "REAPER_INTERVAL_SECONDS": "1",
            **(env or {}),
        }
        self.env.pop("CELERY_BROKER_URL", None)
        if broker_url:
            self.env["CELERY_BROKER_URL"] = broker_url
        # The suite's own processes use a per-process cache (scripts/test.sh); a stack runs with
        # the product's default, the file cache its processes share, unless told otherwise.
        self.env.pop("CACHE_URL", None)
        if cache_url:
            self.env["CACHE_URL"] = cache_url
        self.procs = {}
        self.port = None

    # processes -----------------------------------------------------------------------
    def manage(self, *args):
        return subprocess.run(
            [PYTHON, "manage.py", *args], cwd=REPO, env=self.env, capture_output=True, text=True, timeout=300
        )

    def setup(self):
        for args in (["migrate", "--noinput"], ["load_demo"]):
            result = self.manage(*args)
            if result.returncode != 0:
                raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
        return self

    def _spawn(self, name, argv, env=None):
        log = open(self.logs / f"{name}.log", "ab")
        # A session of its own, so the whole process group (prefork children too) can be killed.
        proc = subprocess.Popen(argv, cwd=REPO, env={**self.env, **(env or {})}, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
        self.procs[name] = proc
        return proc

    def log_text(self, name):
        path = self.logs / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def start_web(self, server="front"):
        """gunicorn as scripts/run.sh starts it: the buffering front (``config.asgi`` on the
        asyncio worker); ``server="sync"``: the sync workers facing clients directly, as
        ExpBench ran before the front (the reference of perf/slow_clients.py)."""
        self.port = free_port()
        app = ["config.asgi:application", "--worker-class", "asgi"] if server == "front" else ["config.wsgi:application"]
        self._spawn("web", [str(BIN / "gunicorn"), *app, "--bind", f"127.0.0.1:{self.port}",
                            "--workers", "2", "--timeout", "120"])
        self._wait(lambda: self._get_status("/api/v1/tasks/") == 200, "gunicorn", "web")
        return self

    def start_worker(self, name="worker", env=None, concurrency=2, queues="scoring"):
        start = len(self.log_text(name))
        self._spawn(name, [PYTHON, "-m", "celery", "-A", "config", "worker", "-Q", queues,
                           "--concurrency", str(concurrency), "--hostname", f"{name}-{uuid.uuid4().hex[:6]}@%h",
                           "--loglevel", "INFO"], env=env)
        self._wait(lambda: " ready." in self.log_text(name)[start:], "celery worker", name)
        return self

    def start_workers(self):
        """As scripts/run.sh: one worker for scoring, one for the reapers, one for background
        work, one for hosted-model jobs, one for untrusted code."""
        self.start_worker("worker", queues="scoring")
        self.start_worker("reaper", queues="reaper", concurrency=1)
        self.start_worker("background", queues="maintenance", concurrency=1)
        self.start_worker("models", queues="models", concurrency=1)
        return self.start_worker("sandbox", queues="sandbox", concurrency=1)

    def start_beat(self):
        self._spawn("beat", [PYTHON, "-m", "celery", "-A", "config", "beat", "--loglevel", "INFO",
                             "--schedule", str(self.root / "var" / "celerybeat-schedule")])
        return self

    def kill(self, name, sig=signal.SIGKILL):
        proc = self.procs.pop(name)
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        proc.wait(timeout=30)

    def stop(self):
        for name in list(self.procs):
            proc = self.procs[name]
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=5)  # a worker busy with background work gets killed after that
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            self.procs.pop(name, None)
        # The embedded cache lives in shared memory, outside the stack's folder: a test leaves none behind.
        if "CACHE_URL" not in self.env:
            from config.settings import embedded_cache_dir  # noqa: PLC0415  # reads the environment on import

            shutil.rmtree(embedded_cache_dir(self.root / "var"), ignore_errors=True)

    def _wait(self, ready, what, name, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if ready():
                return
            proc = self.procs.get(name)
            if proc is not None and proc.poll() is not None:
                break
            time.sleep(0.1)
        raise RuntimeError(f"{what} did not start:\n{self.log_text(name)[-3000:]}")

    # HTTP ----------------------------------------------------------------------------
    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def _get_status(self, path):
        try:
            with urllib.request.urlopen(self.url + path, timeout=5) as response:
                return response.status
        except (urllib.error.URLError, ConnectionError, OSError):
            return None

    def request(self, method, path, *, token=None, json_body=None, fields=None, files=None):
        return Client(self.url).request(method, path, token=token, json_body=json_body, fields=fields, files=files)

    def board(self, slug, until=None):
        """A task's whole board as the API serves it, one page at a time (``next``): the first
        page with the rows of every page and ``next``/``previous`` null, as the unversioned path
        answered before boards came in pages. Read with plain GETs, so that it can check
        ``Client.board``, which joins pages its own way. A worker stores a board after each
        change (a request never computes one), so this waits for a stored board (503 until the
        first) and, with ``until``, for one on which ``until(board)`` holds."""
        def read():
            board = self._board(slug)
            return board if board is not None and (until is None or until(board)) else None

        return wait_until(read, f"the board of {slug}", timeout=90)

    def _board(self, slug):
        status, first = self.request("GET", f"/api/v1/tasks/{slug}/leaderboard/")
        if status == 503:
            return None
        assert status == 200, first
        rows, link = list(first["results"]), first["next"]
        while link:
            assert link.startswith(self.url), link  # the page links name this server
            status, page = self.request("GET", link[len(self.url):])
            assert status == 200, page
            rows += page["results"]
            link = page["next"]
        assert len(rows) == first["count"], (len(rows), first["count"])
        # In the shape the client prints (and the deprecated path answers): the rows under "rows".
        first = {key: value for key, value in first.items() if key != "results"}
        return {**first, "next": None, "previous": None, "rows": rows}

    def create_user(self, username, password):
        code = (
            "from django.contrib.auth.models import User; from accounts.models import Profile;"
            f"u = User.objects.create_user({username!r}, password={password!r});"
            "Profile.objects.create(user=u, team='Integration')"
        )
        result = self.manage("shell", "-c", code)
        assert result.returncode == 0, result.stderr
        status, body = self.request("POST", "/api/v1/auth/token/", json_body={"username": username, "password": password})
        assert status == 200, body
        return body["token"]

    def upload(self, token, slug, content, method_name="Integration system", filename="predictions.json"):
        # Public, so that the tests find their entries on the boards (a new account's default is private).
        return Client(self.url, token).submit(slug, content, method_name=method_name, filename=filename, public=True)

    def wait_for(self, submission_id, token, statuses=("scored", "failed", "rejected"), timeout=60):
        deadline = time.monotonic() + timeout
        body = None
        while time.monotonic() < deadline:
            status, body = self.request("GET", f"/api/v1/submissions/{submission_id}/", token=token)
            if status == 200 and body["status"] in statuses:
                return body
            time.sleep(0.05)
        raise AssertionError(f"submission {submission_id} never reached {statuses}; last: {body}\n"
                             + "\n".join(self.log_text(n)[-2000:] for n in ("worker", "worker2", "beat")))
