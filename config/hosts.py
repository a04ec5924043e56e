"""The web process's refusal to serve without an explicit list of host names.

Django builds absolute URLs (redirects, the API's page links) from the request's ``Host``
header once it has passed ``ALLOWED_HOSTS``; a wildcard hands that choice to whoever sends the
request. So with ``DEBUG`` off the WSGI application does not start until ``ALLOWED_HOSTS``
names the site's hosts, and in production (``EXPBENCH_ENV=production``) a wildcard is refused
too. Management commands and workers serve no request and are not stopped by this.
"""
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured


def unsafe_hosts_reason(*, debug: bool, production: bool, allowed_hosts: list[str]) -> str | None:
    """Why these settings must not serve requests, or None when they may."""
    if debug:
        return None
    if not allowed_hosts:
        return ("ALLOWED_HOSTS is not set: name the host names the site answers to, comma-separated "
                "(e.g. ALLOWED_HOSTS=expbench.example.org), or set DEBUG=1 on a development machine")
    if production and "*" in allowed_hosts:
        return "EXPBENCH_ENV=production refuses ALLOWED_HOSTS=*: name the host names the site answers to"
    return None


def refuse_unsafe_hosts() -> None:
    """Raise ImproperlyConfigured when the settings must not serve requests."""
    reason = unsafe_hosts_reason(debug=settings.DEBUG, production=settings.PRODUCTION,
                                 allowed_hosts=list(settings.ALLOWED_HOSTS))
    if reason:
        raise ImproperlyConfigured(reason)
