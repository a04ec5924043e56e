"""Limits on password guessing, counted in the cache every process shares (``CACHE_URL``), so
more gunicorn workers never mean more guesses. Every limit counts the client's address as
``core.client_address`` finds it (``TRUSTED_PROXIES``), never a header the client chose.

Two budgets are spent by every attempt (the web login, the admin login and the API token
endpoint together):

* ``LOGIN_RATE`` (10/min) per address and account: the lockout. An attacker who spends it locks
  out only their own address's attempts at that account; someone else behind the same proxy or
  NAT still logs in to theirs.
* ``LOGIN_ADDRESS_RATE`` (60/min) per address over all accounts: one address cannot try many
  accounts quickly either.

Password-reset requests spend the same two budgets per e-mail address, so the reset form cannot
be used to flood a mailbox, and sign-ups have a budget per address (``SIGNUP_RATE``).
"""
import hashlib
import math
from typing import Any

from django.conf import settings
from django.contrib import admin, messages
from django.contrib.auth.views import LoginView, PasswordResetView
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse
from django.utils.decorators import method_decorator
from django.views.decorators.cache import never_cache
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle
from rest_framework.views import APIView

from core.client_address import client_key
from core.parsers import DepthLimitedJSONParser
from core.rate_limits import parse_rate, spend


def account_key(name: Any) -> str:
    """An account as the budgets count it: the name as typed, case-folded (so Alice and alice
    share one budget), hashed to a key of fixed length whatever was sent."""
    return hashlib.sha256(str(name or "").strip().casefold().encode()).hexdigest()[:32]


def spend_login_attempt(request: HttpRequest, account: Any, *, kind: str = "login") -> float | None:
    """Count one attempt at ``account`` (a username, or an e-mail address for a reset); None while
    both budgets last, else the seconds until the later of the spent windows ends (fixed
    windows: simple, and good enough against guessing)."""
    address = client_key(request)
    limit, period = parse_rate(settings.LOGIN_RATE, "LOGIN_RATE")
    per_account = spend(cache, f"{kind}-attempts", f"{address}:{account_key(account)}", limit, period)
    limit, period = parse_rate(settings.LOGIN_ADDRESS_RATE, "LOGIN_ADDRESS_RATE")
    per_address = spend(cache, "login-address", address, limit, period)
    waits = [wait for wait in (per_account, per_address) if wait is not None]
    return max(waits) if waits else None


def spend_signup(request: HttpRequest) -> float | None:
    limit, period = parse_rate(settings.SIGNUP_RATE, "SIGNUP_RATE")
    return spend(cache, "signups", client_key(request), limit, period)


def too_many(response: HttpResponse, wait: float) -> HttpResponse:
    response.status_code = 429
    response["Retry-After"] = str(math.ceil(wait))
    return response


class LoginThrottle(BaseThrottle):
    """The budgets as a DRF throttle: a 429 with Retry-After once one is spent."""

    def allow_request(self, request: Request, view: APIView) -> bool:
        data = request.data
        username = data.get("username", "") if hasattr(data, "get") else ""
        self.wait_seconds = spend_login_attempt(request._request, username)
        return self.wait_seconds is None

    def wait(self) -> float | None:
        return self.wait_seconds


# The answer is a token: no cache may keep a copy.
@method_decorator(never_cache, name="dispatch")
class ThrottledObtainAuthToken(ObtainAuthToken):
    throttle_classes = [LoginThrottle]
    # ObtainAuthToken names its own parsers; this one is open to anyone, so it gets the
    # nesting limit of every other JSON endpoint.
    parser_classes = (FormParser, MultiPartParser, DepthLimitedJSONParser)


class ThrottledLoginView(LoginView):
    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        wait = spend_login_attempt(request, request.POST.get("username", ""))
        if wait is None:
            return super().post(request, *args, **kwargs)
        # An unbound form: the password is never checked, so a throttled guess learns nothing.
        form = self.get_form_class()(request=request)
        return too_many(self.render_to_response(self.get_context_data(form=form, retry_after=math.ceil(wait))), wait)


def admin_login(request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
    """The admin's login page with the site login's budgets (config/urls.py routes
    ``/admin/login/`` here before the admin's own URLs)."""
    if request.method == "POST":
        wait = spend_login_attempt(request, request.POST.get("username", ""))
        if wait is not None:
            messages.error(request, f"Too many login attempts from your address. Try again in {math.ceil(wait)} s.")
            # The page with an unbound form: the password is never checked.
            request.method = "GET"
            return too_many(admin.site.login(request, extra_context), wait)
    return admin.site.login(request, extra_context)


class ThrottledPasswordResetView(PasswordResetView):
    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        wait = spend_login_attempt(request, request.POST.get("email", ""), kind="reset")
        if wait is None:
            return super().post(request, *args, **kwargs)
        return too_many(self.render_to_response(self.get_context_data(retry_after=math.ceil(wait))), wait)
