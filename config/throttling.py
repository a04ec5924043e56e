"""The API's rate limits (``API_RATE_ANON`` per client address, ``API_RATE_USER`` per account;
DRF's ``DEFAULT_THROTTLE_RATES``) as fixed windows in the shared cache (core.rate_limits): the
same limits DRF's throttles would apply, at a constant cost per request."""
from typing import TYPE_CHECKING, Any

from django.core.cache import cache
from rest_framework.settings import api_settings
from rest_framework.throttling import BaseThrottle

from core.client_address import client_key
from core.rate_limits import parse_rate, spend

if TYPE_CHECKING:  # DRF imports this module while rest_framework.views is loading
    from rest_framework.request import Request


class WindowThrottle(BaseThrottle):
    scope = ""

    def client(self, request: "Request") -> str | None:
        """Who is counted, or None when this throttle does not apply to the request."""
        raise NotImplementedError

    def get_ident(self, request: Any) -> str:
        """The client's address as every rate limit counts it (``TRUSTED_PROXIES``), not DRF's,
        which believes any X-Forwarded-For unless NUM_PROXIES is set."""
        return client_key(request)

    def allow_request(self, request: "Request", view: Any) -> bool:
        self.wait_seconds: float | None = None
        client = self.client(request)
        if client is None:
            return True
        self.wait_seconds = self.spend(client)
        return self.wait_seconds is None

    def spend(self, client: str) -> float | None:
        """Count one request of ``client``: None while within the rate, else the seconds to wait."""
        limit, period = parse_rate(str(api_settings.DEFAULT_THROTTLE_RATES[self.scope]), f"the {self.scope} API rate")
        return spend(cache, f"api-{self.scope}", client, limit, period)

    def wait(self) -> float | None:
        return self.wait_seconds


class AnonWindowThrottle(WindowThrottle):
    scope = "anon"

    def client(self, request: "Request") -> str | None:
        # get_ident: the address, behind TRUSTED_PROXIES the forwarded one.
        return None if request.user and request.user.is_authenticated else self.get_ident(request)


class UserWindowThrottle(WindowThrottle):
    scope = "user"

    def client(self, request: "Request") -> str | None:
        return str(request.user.pk) if request.user and request.user.is_authenticated else None
