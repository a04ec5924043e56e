"""ExpBench settings: one module, everything configurable from the environment.

The embedded default (no variables set) is SQLite plus a filesystem Celery broker under
``var/``, so a laptop runs the whole product with no services. Production sets DATABASE_URL
(PostgreSQL) and CELERY_BROKER_URL (Redis or RabbitMQ).
"""
import hashlib
import ipaddress
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import unquote, urlsplit

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from config import error_reporting

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("EXPBENCH_VAR_DIR", BASE_DIR / "var"))
VAR_DIR.mkdir(parents=True, exist_ok=True)


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


DEBUG = env_bool("DEBUG", False)
# EXPBENCH_ENV=production: served over HTTPS (usually behind a proxy); see the HTTPS settings
# below and docs/operations.md#production-settings.
PRODUCTION = os.environ.get("EXPBENCH_ENV", "").strip().lower() == "production"
SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY and PRODUCTION:
    raise ImproperlyConfigured("EXPBENCH_ENV=production needs SECRET_KEY (50 or more random characters)")
if not SECRET_KEY:
    # A development-only key, stable per checkout so sessions survive restarts.
    key_file = VAR_DIR / "secret_key"
    if not key_file.exists():
        import secrets

        key_file.write_text(secrets.token_urlsafe(50))
        key_file.chmod(0o600)
    SECRET_KEY = key_file.read_text().strip()

# No default: a wildcard would let any Host header into the absolute URLs the site builds. With
# DEBUG off the web process refuses to start while this is empty (config/hosts.py); with DEBUG on
# Django itself accepts the localhost names.
ALLOWED_HOSTS = [h.strip() for h in os.environ.get("ALLOWED_HOSTS", "").split(",") if h.strip()]
CSRF_TRUSTED_ORIGINS = [
    o.strip() for o in os.environ.get("CSRF_TRUSTED_ORIGINS", "").split(",") if o.strip()
]
SITE_NAME = "ExpBench"

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "core",
    "accounts",
    "benchmark",
    "submissions",
    "leaderboards",
]

MIDDLEWARE = [
    # First, so that every log line of a request carries its id (config/request_id.py).
    "config.request_id.RequestIdMiddleware",
    # /healthz, answered before the host check and the HTTPS redirect (config/health.py).
    "config.health.HealthCheckMiddleware",
    # Before anything reads the body (the CSRF check reads a form's fields).
    "config.body_limits.RequestBodyLimitMiddleware",
    # The Content-Security-Policy and the API's read-only CORS, on every answer, errors included.
    "config.security_headers.SecurityHeadersMiddleware",
    # Before anything that writes the body; it leaves WhiteNoise's precompressed files alone.
    # Django's gzip adds random padding per response against BREACH on pages with CSRF tokens.
    "django.middleware.gzip.GZipMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # The page's language (chooser cookie, else Accept-Language); English for the API and downloads.
    "config.locale.PageLanguageMiddleware",
    "django.middleware.common.CommonMiddleware",
    # An unknown query parameter on /api/v1/ is a 400, as the schema says (config/known_params.py).
    "config.known_params.KnownQueryParametersMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# Each process keeps its database connection for DB_CONN_MAX_AGE seconds (checked before a
# request reuses it): opening one per request (SQLite's file and pragmas, PostgreSQL's
# handshake) cost more than a stored board page takes to serve (docs/operations.md).
DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", f"sqlite:///{VAR_DIR / 'expbench.sqlite3'}"),
        conn_max_age=env_int("DB_CONN_MAX_AGE", 600),
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql" and env_bool("DB_PREPARE_STATEMENTS", True):
    # Only the fixed state query that opens each page view is prepared (core/db.py): it is
    # parsed and planned once per connection. Off (0) behind a transaction-pooling PgBouncer.
    DATABASES["default"].setdefault("OPTIONS", {})["prepare_threshold"] = 5
# A page view's state (a board's stamp, an entry's visibility) read less than this long ago by
# the same process is used again (core/brief_memo.py): a change shows within this time.
PAGE_STATE_SECONDS = float(os.environ.get("PAGE_STATE_SECONDS", 1))
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # IMMEDIATE transactions take the write lock at BEGIN, so the quota check and the
    # insert that follows it cannot interleave between web and worker processes; WAL lets
    # pages read while a worker writes.
    DATABASES["default"]["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": 30,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }



def embedded_cache_dir(var_dir: Path, shared_memory: Path = Path("/dev/shm")) -> Path:
    """Where the embedded default keeps its file cache: a private folder in shared memory when
    the machine has one, else var/cache. The API throttles write to the cache on every request,
    and on a journaling disk each write (a new file renamed over the old) waits for the data to
    reach the disk: about 2 ms on ext4, 0.01 ms in memory. The folder is named after var/, so the
    processes of one deployment share it, and must be ours and closed to others (the cache
    holds pickles): otherwise var/cache."""
    if shared_memory.is_dir():
        digest = hashlib.sha256(str(var_dir.resolve()).encode()).hexdigest()[:16]
        folder = shared_memory / f"expbench-{os.getuid()}-{digest}"
        try:
            folder.mkdir(mode=0o700, exist_ok=True)
            status = folder.lstat()
        except OSError:
            pass
        else:
            if stat.S_ISDIR(status.st_mode) and status.st_uid == os.getuid() and stat.S_IMODE(status.st_mode) == 0o700:
                return folder
    return var_dir / "cache"


def cache_from_url(url: str) -> dict:
    """CACHES["default"] from CACHE_URL. The cache holds the API throttle counters, the
    significance tiers and rendered board pages, so every process must see the same one: unset
    means a file cache that all gunicorn and Celery workers of this machine share
    (``embedded_cache_dir``); redis://... for several machines; locmem:// (one process only) for
    tests."""
    if not url:
        return {"BACKEND": "config.file_cache.SharedFileCache", "LOCATION": str(embedded_cache_dir(VAR_DIR))}
    scheme = url.split("://", 1)[0]
    if scheme in ("redis", "rediss", "unix"):
        return {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": url}
    if scheme == "file":
        return {"BACKEND": "config.file_cache.SharedFileCache", "LOCATION": url[len("file://"):]}
    if scheme == "locmem":
        return {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    raise ImproperlyConfigured(f"CACHE_URL: unknown scheme in {url!r} (redis://, file:///path or locmem://)")


CACHES = {"default": cache_from_url(os.environ.get("CACHE_URL", ""))}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "home"


def email_from_env(environ: Mapping[str, str]) -> dict:
    """Email settings (password resets, run notifications). Unset: printed to the console, the
    embedded default. ``EMAIL_URL`` = smtp://user:password@host:port (smtp+tls:// for STARTTLS,
    smtps:// for implicit TLS), or ``EMAIL_HOST`` with EMAIL_PORT, EMAIL_HOST_USER,
    EMAIL_HOST_PASSWORD and EMAIL_USE_TLS."""
    smtp = "django.core.mail.backends.smtp.EmailBackend"
    url = environ.get("EMAIL_URL", "").strip()
    if url:
        parts = urlsplit(url)
        if parts.scheme == "console":
            return {"EMAIL_BACKEND": "django.core.mail.backends.console.EmailBackend"}
        if parts.scheme not in ("smtp", "smtp+tls", "smtps") or not parts.hostname:
            raise ImproperlyConfigured(f"EMAIL_URL must look like smtp://user:password@host:587 "
                                       f"(or smtp+tls://, smtps://, console://), got scheme {parts.scheme!r}")
        return {"EMAIL_BACKEND": smtp, "EMAIL_HOST": parts.hostname,
                "EMAIL_PORT": parts.port or {"smtp": 25, "smtp+tls": 587, "smtps": 465}[parts.scheme],
                "EMAIL_HOST_USER": unquote(parts.username or ""), "EMAIL_HOST_PASSWORD": unquote(parts.password or ""),
                "EMAIL_USE_TLS": parts.scheme == "smtp+tls", "EMAIL_USE_SSL": parts.scheme == "smtps"}
    if environ.get("EMAIL_HOST", "").strip():
        return {"EMAIL_BACKEND": smtp, "EMAIL_HOST": environ["EMAIL_HOST"].strip(),
                "EMAIL_PORT": int(environ.get("EMAIL_PORT", 25)),
                "EMAIL_HOST_USER": environ.get("EMAIL_HOST_USER", ""),
                "EMAIL_HOST_PASSWORD": environ.get("EMAIL_HOST_PASSWORD", ""),
                "EMAIL_USE_TLS": environ.get("EMAIL_USE_TLS", "").strip().lower() in {"1", "true", "yes", "on"}}
    return {"EMAIL_BACKEND": "django.core.mail.backends.console.EmailBackend"}


globals().update(email_from_env(os.environ))
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "ExpBench <noreply@localhost>")
# A mail server that hangs must not hold a web request or a scoring worker for long.
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT", 10)
# Where every link in an email points (password resets, run notifications): never the request's
# Host header, which the sender of a reset request chooses. scheme://host[:port], no path.
SITE_URL = os.environ.get("SITE_URL", "http://127.0.0.1:8000").strip().rstrip("/")
_site = urlsplit(SITE_URL)
if _site.scheme not in ("http", "https") or not _site.hostname or _site.path or _site.query or _site.fragment:
    raise ImproperlyConfigured(f"SITE_URL must look like https://expbench.example.org (scheme and host, "
                               f"optionally a port, no path), not {SITE_URL!r}")

LANGUAGE_CODE = "en"
# The pages' languages (the API and the downloads stay in English: config/locale.py). Dates and
# numbers on pages follow the language's formats; scores are formatted by the score filter.
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", VAR_DIR / "staticfiles"))
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
MEDIA_ROOT = Path(os.environ.get("MEDIA_ROOT", VAR_DIR / "media"))
# Uploaded prediction files are private: they are never served under a public URL.
MEDIA_URL = None
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = True  # serve static files straight from static/ without collectstatic

# Uploads: files above the limit are refused with a clear message (checked in validation,
# before the file is parsed); Django's own request cap sits a little above it.
SUBMISSION_MAX_BYTES = env_int("SUBMISSION_MAX_BYTES", 50 * 1024 * 1024)
# A prediction file of more JSON values than this (bounded from byte counts) is not parsed by the
# web worker while its sender waits: it is stored, queued and checked first by the scoring worker,
# charged to its sender if refused there (submissions/upload_checks.py).
UPLOAD_CHECK_MAX_VALUES = env_int("UPLOAD_CHECK_MAX_VALUES", 200_000)
DATA_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
# A body larger than its address takes is refused with 413 from Content-Length, before a byte of
# it is read (config/body_limits.py): the upload addresses take the largest file plus the form,
# every other address REQUEST_BODY_MAX_BYTES.
REQUEST_BODY_MAX_BYTES = env_int("REQUEST_BODY_MAX_BYTES", 10 * 1024 * 1024)
UPLOAD_PATHS = [r"^/(api/(v1/)?)?tasks/[^/]+/submissions/$", r"^/tasks/[^/]+/submit/$", r"^/admin/"]
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
# Larger uploads are spooled here while the request runs; a web worker killed mid-upload leaves
# its file behind, which `manage.py purge_uploads` deletes after an hour (submissions.storage).
FILE_UPLOAD_TEMP_DIR = str(VAR_DIR / "upload-tmp")
Path(FILE_UPLOAD_TEMP_DIR).mkdir(parents=True, exist_ok=True)
SUBMISSIONS_PER_DAY = env_int("SUBMISSIONS_PER_DAY", 5)

# Lifecycle: a submission that has been running longer than its lease, or queued longer than
# the queue lease, is picked up by the reaper and re-queued (up to the attempt limit).
SCORING_LEASE_SECONDS = env_int("SCORING_LEASE_SECONDS", 120)
QUEUE_LEASE_SECONDS = env_int("QUEUE_LEASE_SECONDS", 300)
# Background work (per-submission diagnostics, skill sets, track inclusion) whose status has
# not moved for this long is taken to have lost its worker and is re-sent by the reaper.
BACKGROUND_LEASE_SECONDS = env_int("BACKGROUND_LEASE_SECONDS", 1800)
SCORING_MAX_ATTEMPTS = env_int("SCORING_MAX_ATTEMPTS", 3)
REAPER_INTERVAL_SECONDS = float(os.environ.get("REAPER_INTERVAL_SECONDS", 30))
BOOTSTRAP_RESAMPLES = env_int("BOOTSTRAP_RESAMPLES", 1000)
# Paired sign-flip resamples behind leaderboard tiers, and permutations of the
# question-type tests (Luo 2022 used 1,000,000; 100,000 gives p-values to about ±0.001).
TIER_RESAMPLES = env_int("TIER_RESAMPLES", 10000)
DIAGNOSTICS_PERMUTATIONS = env_int("DIAGNOSTICS_PERMUTATIONS", 100000)

# Celery. Unset CELERY_BROKER_URL = the embedded filesystem broker under var/, polled every
# 0.1 s (about 50 ms round trips on these machines).
# (The host part means nothing to this transport; naming one keeps kombu from warning
# "No hostname was supplied" on every connection.)
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "filesystem://localhost/")
CELERY_BROKER_DIR = Path(os.environ.get("CELERY_BROKER_DIR", VAR_DIR / "broker"))
if CELERY_BROKER_URL.startswith("filesystem://"):
    CELERY_BROKER_DIR.mkdir(parents=True, exist_ok=True)
    # kombu's filesystem transport, writing each message file atomically (config/broker.py).
    CELERY_BROKER_TRANSPORT = "config.broker:Transport"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(CELERY_BROKER_DIR),
        "data_folder_out": str(CELERY_BROKER_DIR),
        "store_processed": False,
        "control_folder": str(CELERY_BROKER_DIR / "control"),
        "polling_interval": float(os.environ.get("CELERY_POLLING_INTERVAL", 0.1)),
    }
else:
    # Redis: a message unacked this long is redelivered. A redelivered message of a run that is
    # still renewing its lease claims nothing (submissions.lifecycle.start_run), so this only
    # needs to outlast the scoring time limit to avoid useless redeliveries.
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": env_int("SCORING_TIME_LIMIT", 600) + 60}
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
# Hard time limits in seconds (config/celery.py; the soft limit comes 10% earlier). A run past
# its soft limit fails, charged to its sender (submissions.runs); leases are renewed meanwhile.
SCORING_TIME_LIMIT = env_int("SCORING_TIME_LIMIT", 600)
# CPU seconds that parsing and scoring one prediction file may use (a task may declare its own,
# scoring_cpu_seconds); past them the run stops and fails, charged to its sender (submissions.runs).
SCORING_CPU_SECONDS = env_int("SCORING_CPU_SECONDS", 60)
BACKGROUND_TIME_LIMIT = env_int("BACKGROUND_TIME_LIMIT", 6 * 3600)
# A worker's pool process is replaced after the task during which its resident memory passed
# this (MB): the models worker's heap fragments under tensors of ever-changing shapes (2.6 GB
# after a full baseline run, docs/quackie_models.md §5); a new process starts small.
CELERY_WORKER_MAX_MEMORY_PER_CHILD = env_int("WORKER_MAX_MEMORY_MB", 1536) * 1024  # Celery counts KiB
CELERY_BEAT_SCHEDULE_FILE = str(VAR_DIR / "celerybeat-schedule")

JSON_MAX_DEPTH = env_int("JSON_MAX_DEPTH", 32)
# API lists come in pages of API_PAGE_SIZE unless ?limit= asks otherwise, never above the max.
API_PAGE_SIZE = env_int("API_PAGE_SIZE", 100)
API_MAX_PAGE_SIZE = env_int("API_MAX_PAGE_SIZE", 1000)
REST_FRAMEWORK = {
    "EXCEPTION_HANDLER": "config.errors.problem_exception_handler",
    "DEFAULT_PAGINATION_CLASS": "config.pagination.ApiPagination",
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticatedOrReadOnly"],
    "DEFAULT_SCHEMA_CLASS": "config.openapi.ProblemAutoSchema",
    # JSON nested deeper than JSON_MAX_DEPTH is refused with a 400 (core/parsers.py).
    "DEFAULT_PARSER_CLASSES": [
        "core.parsers.DepthLimitedJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_THROTTLE_CLASSES": [
        "config.throttling.AnonWindowThrottle",
        "config.throttling.UserWindowThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "anon": os.environ.get("API_RATE_ANON", "120/min"),
        "user": os.environ.get("API_RATE_USER", "600/min"),
    },
}
# The proxies whose X-Forwarded-For is believed (addresses or networks, comma-separated; none by
# default): every rate limit counts the client's address (core/client_address.py).
TRUSTED_PROXIES = [p.strip() for p in os.environ.get("TRUSTED_PROXIES", "").split(",") if p.strip()]
for _proxy in TRUSTED_PROXIES:
    try:
        ipaddress.ip_network(_proxy, strict=False)
    except ValueError:
        raise ImproperlyConfigured(f"TRUSTED_PROXIES: {_proxy!r} is not an IP address or network "
                                   f"(e.g. 10.0.0.5 or 172.16.0.0/12)") from None
# Password guesses per client address and account (web login, admin login, API token endpoint
# together; password resets per address and e-mail address), and per client address over all
# accounts: one address cannot lock out the accounts of others who share it, and still cannot
# try many accounts fast.
LOGIN_RATE = os.environ.get("LOGIN_RATE", "10/min")
LOGIN_ADDRESS_RATE = os.environ.get("LOGIN_ADDRESS_RATE", "60/min")
# Accounts created per client address.
SIGNUP_RATE = os.environ.get("SIGNUP_RATE", "10/hour")
SPECTACULAR_SETTINGS = {
    "TITLE": "ExpBench API",
    "DESCRIPTION": "Explainable and bias-aware leaderboards: tasks, public inputs, submissions, scores.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Only /api/v1/: the unversioned /api/ aliases are deprecated (docs/client.md#versions).
    "PREPROCESSING_HOOKS": ["config.openapi.versioned_paths_only"],
    # The docs page's JavaScript is served from our own static files, never a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# LOG_FORMAT=json: one JSON object per line (for a log collector); every line carries the
# request id of the request it belongs to, "-" outside requests (config/request_id.py).
LOG_FORMAT = os.environ.get("LOG_FORMAT", "plain").strip().lower()
if LOG_FORMAT not in ("plain", "json"):
    raise ImproperlyConfigured(f"LOG_FORMAT must be 'plain' or 'json', not {LOG_FORMAT!r}")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_id": {"()": "config.request_id.RequestIdFilter"}},
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s]: %(message)s"},
                   "json": {"()": "config.request_id.JsonFormatter"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT, "filters": ["request_id"]}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    # shap logs its internal vectors at INFO: keep worker logs readable.
    "loggers": {"django.db.backends": {"level": "WARNING"}, "shap": {"level": "WARNING"}},
}

# Scripts, styles, images and fonts from the site only, no inline code, no plugins, no framing;
# forms post to the site only (config/security_headers.py). Empty: no header.
CONTENT_SECURITY_POLICY = os.environ.get(
    "CONTENT_SECURITY_POLICY",
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
).strip()

if not DEBUG:
    SESSION_COOKIE_HTTPONLY = True
    X_FRAME_OPTIONS = "DENY"
    SECURE_CONTENT_TYPE_NOSNIFF = True

# HTTPS: on by default in production, each setting overridable from the environment, so that
# `manage.py check --deploy` is clean there (tests/config/test_deploy.py).
# SECURE_PROXY_SSL_HEADER="X-Forwarded-Proto: https": the proxy's header that says the client
# used HTTPS; set it only behind a proxy that always sets (or strips) that header.
_proxy_header = os.environ.get("SECURE_PROXY_SSL_HEADER", "X-Forwarded-Proto: https" if PRODUCTION else "")
if _proxy_header.strip():
    _name, _, _value = _proxy_header.partition(":")
    if not _name.strip() or not _value.strip():
        raise ImproperlyConfigured(f"SECURE_PROXY_SSL_HEADER must look like 'X-Forwarded-Proto: https', "
                                   f"not {_proxy_header!r}")
    SECURE_PROXY_SSL_HEADER = ("HTTP_" + _name.strip().upper().replace("-", "_"), _value.strip())
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", PRODUCTION)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 365 * 24 * 3600 if PRODUCTION else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", PRODUCTION)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", PRODUCTION)
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", PRODUCTION)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", PRODUCTION)

# Skill s6 (back-translation) runs only with local translation models: a JSON object
# {"en-fr": "/path/to/marian-en-fr", "fr-en": "/path/to/marian-fr-en"}; unset = "not configured".
import json as _json  # noqa: E402

TRANSLATION_MODELS = _json.loads(os.environ.get("TRANSLATION_MODELS", "{}") or "{}")

# Code submissions run in a bubblewrap sandbox. SANDBOX=none runs them unsandboxed: for
# development only, every run logs a loud warning.
SANDBOX = os.environ.get("SANDBOX", "bwrap")
if SANDBOX not in ("bwrap", "none"):
    raise ValueError(f"SANDBOX must be 'bwrap' or 'none', not {SANDBOX!r}")
# The code upload limit. The upload check's other limits are fixed, the same at upload and run
# (scoring/sandbox/upload_check.py; docs/sandbox.md, "Limits of the upload check"): a zip
# unpacks to at most 4 MiB, Python source is at most 64 KiB per module and 128 KiB (100
# modules) in all, nested at most 50 deep.
CODE_MAX_BYTES = env_int("CODE_MAX_BYTES", 1_000_000)
SANDBOX_SAMPLE_SECONDS = float(os.environ.get("SANDBOX_SAMPLE_SECONDS", 30))
SANDBOX_TOTAL_SECONDS = float(os.environ.get("SANDBOX_TOTAL_SECONDS", 3600))
# CPU time of all a run's sandboxed processes together (docs/sandbox.md, "Limits").
SANDBOX_CPU_BUDGET_SECONDS = float(os.environ.get("SANDBOX_CPU_BUDGET_SECONDS", 3600))
# Fail closed: refuse to run code when the cgroup limits (pids, memory, cpu) cannot be applied,
# instead of falling back to rlimits only. Off for the embedded development stack; on in
# docker-compose.yml (docs/threat_model.md).
SANDBOX_REQUIRE_CGROUPS = env_bool("SANDBOX_REQUIRE_CGROUPS", False)

# Hosted models (QUACKIE) live here by default; the demo classifier is trained into
# <models>/answerability-minilm by `manage.py train_answerability_classifier`.
EXPBENCH_MODELS_DIR = Path(os.environ.get("EXPBENCH_MODELS_DIR", VAR_DIR / "models"))

# Where demo data lives (the ExpMRC dev sets play the hidden test sets).
SHARED_DATA_DIR = Path(os.environ.get("EXPBENCH_SHARED_DATA", BASE_DIR.parent / "shared" / "data"))

# Model submissions (docs/model_submissions.md): the largest bundle a task accepts when it names
# none (streamed to storage, never held in memory), and what one run may use when the task's
# ``model_budget`` leaves a key out. A model submission runs twice: a smoke run on the task's
# public sample (dev split), then the run on the hidden inputs.
MODEL_MAX_BYTES = env_int("MODEL_MAX_BYTES", 2 * 2**30)
MODEL_CPU_SECONDS = env_int("MODEL_CPU_SECONDS", 3600)
MODEL_MEMORY_MB = env_int("MODEL_MEMORY_MB", 4096)
MODEL_WALL_SECONDS = env_int("MODEL_WALL_SECONDS", 1800)
# No task's budget may ask for more wall-clock time per run (the worker's time limit follows it).
MODEL_MAX_WALL_SECONDS = env_int("MODEL_MAX_WALL_SECONDS", 4 * 3600)
# A sandbox worker on a machine with a GPU: its device nodes are passed into the sandbox and
# predict is told to use it (EXPBENCH_DEVICE=cuda). Off: everything runs on the CPU.
SANDBOX_GPU = env_bool("SANDBOX_GPU", False)
# After each model run a worker starts the sandbox of its next run (interpreter up, seccomp
# filter installed, no bundle yet), so the smoke run's successor (the hidden run) and the next
# submission skip the ~0.06 s start (docs/model_submissions.md, "Sandboxes started ahead").
MODEL_SANDBOX_START_AHEAD = env_bool("MODEL_SANDBOX_START_AHEAD", True)

# /metrics (config/metrics.py, docs/operations.md#metrics): answered to a request carrying
# "Authorization: Bearer <METRICS_TOKEN>" or from a staff member's session, 404 to anyone else.
METRICS_TOKEN = os.environ.get("METRICS_TOKEN", "").strip()

# Error reporting by configuration only (config/error_reporting.py): SENTRY_DSN is honoured where
# the sentry-sdk package is installed; ExpBench does not require it.
ERROR_REPORTING = error_reporting.init_from_environment(os.environ)
