"""A limit on password guessing: the web login form and the API token endpoint share one budget
of attempts per client address (``LOGIN_RATE``, default 10/min), counted in the cache every
process shares (``CACHE_URL``), so more gunicorn workers never mean more guesses. Password-reset
requests spend from the same budget, so the reset form cannot be used to flood a mailbox."""
import math
import time
from typing import Any

from django.conf import settings
from django.contrib.auth.views import LoginView, PasswordResetView
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle
from rest_framework.views import APIView

PERIODS = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "hour": 3600}


def parse_rate(rate: str) -> tuple[int, int]:
    """("10/min") -> (10, 60)."""
    count, _, period = rate.partition("/")
    if not count.strip().isdigit() or period.strip() not in PERIODS:
        raise ValueError(f"LOGIN_RATE must look like 10/min, got {rate!r}")
    return int(count), PERIODS[period.strip()]


def client_address(request: HttpRequest) -> str:
    return request.META.get("REMOTE_ADDR") or "unknown"


def spend_login_attempt(request: HttpRequest) -> float | None:
    """Count one attempt for the client; None while within the budget, else the seconds until
    the current window ends (fixed windows: simple, and good enough against guessing)."""
    limit, period = parse_rate(settings.LOGIN_RATE)
    now = time.time()
    key = f"login-attempts:{client_address(request)}:{int(now // period)}"
    cache.add(key, 0, timeout=period + 1)
    try:
        attempts = cache.incr(key)
    except ValueError:  # expired between add and incr: this is the first attempt of a window
        cache.set(key, 1, timeout=period + 1)
        attempts = 1
    if attempts <= limit:
        return None
    return period - (now % period)


class LoginThrottle(BaseThrottle):
    """The budget as a DRF throttle: a 429 with Retry-After once it is spent."""

    def allow_request(self, request: Request, view: APIView) -> bool:
        self.wait_seconds = spend_login_attempt(request._request)
        return self.wait_seconds is None

    def wait(self) -> float | None:
        return self.wait_seconds


class ThrottledObtainAuthToken(ObtainAuthToken):
    throttle_classes = [LoginThrottle]


class ThrottledLoginView(LoginView):
    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        wait = spend_login_attempt(request)
        if wait is None:
            return super().post(request, *args, **kwargs)
        # An unbound form: the password is never checked, so a throttled guess learns nothing.
        form = self.get_form_class()(request=request)
        response = self.render_to_response(self.get_context_data(form=form, retry_after=math.ceil(wait)))
        response.status_code = 429
        response["Retry-After"] = str(math.ceil(wait))
        return response


class ThrottledPasswordResetView(PasswordResetView):
    # Without django.contrib.sites the email would name the host ("127.0.0.1:8000") as the site.
    extra_email_context = {"site_name": settings.SITE_NAME}

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        wait = spend_login_attempt(request)
        if wait is None:
            return super().post(request, *args, **kwargs)
        response = self.render_to_response(self.get_context_data(retry_after=math.ceil(wait)))
        response.status_code = 429
        response["Retry-After"] = str(math.ceil(wait))
        return response
