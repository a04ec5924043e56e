"""ExpBench settings: one module, everything configurable from the environment.

The embedded default (no variables set) is SQLite plus a filesystem Celery broker under
``var/``, so a laptop runs the whole product with no services. Production sets DATABASE_URL
(PostgreSQL) and CELERY_BROKER_URL (Redis or RabbitMQ).
"""
import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

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
SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    # A development-only key, stable per checkout so sessions survive restarts.
    key_file = VAR_DIR / "secret_key"
    if not key_file.exists():
        import secrets

        key_file.write_text(secrets.token_urlsafe(50))
        key_file.chmod(0o600)
    SECRET_KEY = key_file.read_text().strip()

ALLOWED_HOSTS = [h.strip() for h in os.environ.get("ALLOWED_HOSTS", "*").split(",") if h.strip()]
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
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
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

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", f"sqlite:///{VAR_DIR / 'expbench.sqlite3'}"),
        conn_max_age=env_int("DB_CONN_MAX_AGE", 0),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # IMMEDIATE transactions take the write lock at BEGIN, so the quota check and the
    # insert that follows it cannot interleave between web and worker processes; WAL lets
    # pages read while a worker writes.
    DATABASES["default"]["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": 30,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }



def cache_from_url(url: str) -> dict:
    """CACHES["default"] from CACHE_URL. The cache holds the API throttle counters and the
    significance tiers, so every process must see the same one: unset means a file cache under
    var/ that all gunicorn and Celery workers of this machine share; redis://... for several
    machines; locmem:// (one process only) for tests."""
    if not url:
        return {"BACKEND": "django.core.cache.backends.filebased.FileBasedCache", "LOCATION": str(VAR_DIR / "cache")}
    scheme = url.split("://", 1)[0]
    if scheme in ("redis", "rediss", "unix"):
        return {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": url}
    if scheme == "file":
        return {"BACKEND": "django.core.cache.backends.filebased.FileBasedCache", "LOCATION": url[len("file://"):]}
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

LANGUAGE_CODE = "en-us"
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
DATA_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
SUBMISSIONS_PER_DAY = env_int("SUBMISSIONS_PER_DAY", 5)

# Lifecycle: a submission that has been running longer than its lease, or queued longer than
# the queue lease, is picked up by the reaper and re-queued (up to the attempt limit).
SCORING_LEASE_SECONDS = env_int("SCORING_LEASE_SECONDS", 600)
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
    # Redis: a message unacked this long is redelivered; longer than any scoring lease.
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": SCORING_LEASE_SECONDS * 2}
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_BEAT_SCHEDULE_FILE = str(VAR_DIR / "celerybeat-schedule")

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticatedOrReadOnly"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_THROTTLE_CLASSES": [
        "rest_framework.throttling.AnonRateThrottle",
        "rest_framework.throttling.UserRateThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "anon": os.environ.get("API_RATE_ANON", "120/min"),
        "user": os.environ.get("API_RATE_USER", "600/min"),
    },
}
# Password guesses per client address, web login and API token endpoint together.
LOGIN_RATE = os.environ.get("LOGIN_RATE", "10/min")
SPECTACULAR_SETTINGS = {
    "TITLE": "ExpBench API",
    "DESCRIPTION": "Explainable and bias-aware leaderboards: tasks, public inputs, submissions, scores.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # The docs page's JavaScript is served from our own static files, never a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    # shap logs its internal vectors at INFO: keep worker logs readable.
    "loggers": {"django.db.backends": {"level": "WARNING"}, "shap": {"level": "WARNING"}},
}

if not DEBUG:
    SESSION_COOKIE_HTTPONLY = True
    X_FRAME_OPTIONS = "DENY"
    SECURE_CONTENT_TYPE_NOSNIFF = True

# Skill s6 (back-translation) runs only with local translation models: a JSON object
# {"en-fr": "/path/to/marian-en-fr", "fr-en": "/path/to/marian-fr-en"}; unset = "not configured".
import json as _json  # noqa: E402

TRANSLATION_MODELS = _json.loads(os.environ.get("TRANSLATION_MODELS", "{}") or "{}")

# Code submissions run in a bubblewrap sandbox. SANDBOX=none runs them unsandboxed: for
# development only, every run logs a loud warning.
SANDBOX = os.environ.get("SANDBOX", "bwrap")
if SANDBOX not in ("bwrap", "none"):
    raise ValueError(f"SANDBOX must be 'bwrap' or 'none', not {SANDBOX!r}")
CODE_MAX_BYTES = env_int("CODE_MAX_BYTES", 1_000_000)
SANDBOX_SAMPLE_SECONDS = float(os.environ.get("SANDBOX_SAMPLE_SECONDS", 30))
SANDBOX_TOTAL_SECONDS = float(os.environ.get("SANDBOX_TOTAL_SECONDS", 3600))

# Hosted models (QUACKIE) live here by default; the demo classifier is trained into
# <models>/answerability-minilm by `manage.py train_answerability_classifier`.
EXPBENCH_MODELS_DIR = Path(os.environ.get("EXPBENCH_MODELS_DIR", VAR_DIR / "models"))

# Where demo data lives (the ExpMRC dev sets play the hidden test sets).
SHARED_DATA_DIR = Path(os.environ.get("EXPBENCH_SHARED_DATA", BASE_DIR.parent / "shared" / "data"))
