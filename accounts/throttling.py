"""A limit on password guessing: the web login form and the API token endpoint share one budget
of attempts per client address (``LOGIN_RATE``, default 10/min), counted in the cache every
process shares (``CACHE_URL``), so more gunicorn workers never mean more guesses. Password-reset
requests spend from the same budget, so the reset form cannot be used to flood a mailbox."""
import math
from typing import Any

from django.conf import settings
from django.contrib.auth.views import LoginView, PasswordResetView
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle
from rest_framework.views import APIView

from core.rate_limits import parse_rate, spend


def client_address(request: HttpRequest) -> str:
    return request.META.get("REMOTE_ADDR") or "unknown"


def spend_login_attempt(request: HttpRequest) -> float | None:
    """Count one attempt for the client; None while within the budget, else the seconds until
    the current window ends (fixed windows: simple, and good enough against guessing)."""
    limit, period = parse_rate(settings.LOGIN_RATE, "LOGIN_RATE")
    return spend(cache, "login-attempts", client_address(request), limit, period)


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
