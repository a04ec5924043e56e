"""The application gunicorn serves (``gunicorn config.asgi:application -k asgi``): Django's WSGI
application behind the buffering front (``config.front``), so that slow clients wait on the
event loop, not on a thread. ``WEB_THREADS`` (4) threads per process run requests.
"""
import os

from django.conf import settings
from django.core.wsgi import get_wsgi_application

from config.front import BufferedWSGI
from config.hosts import refuse_unsafe_hosts

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
wsgi_application = get_wsgi_application()
# After the set-up, so the message names the setting rather than a half-loaded app registry.
refuse_unsafe_hosts()

# The body limits read the task table: importable only once the app registry is ready.
from config.body_limits import limits  # noqa: E402


def over_limit(path: str, size: int) -> bool:
    """Whether a body of ``size`` bytes is over what ``path`` takes (the front leaves it unread)."""
    return size > limits(path, size)[0]


application = BufferedWSGI(
    wsgi_application,
    threads=max(1, int(os.environ.get("WEB_THREADS", "4"))),
    refused=over_limit,
    spool_bytes=settings.FILE_UPLOAD_MAX_MEMORY_SIZE,
    spool_dir=settings.FILE_UPLOAD_TEMP_DIR,
)
