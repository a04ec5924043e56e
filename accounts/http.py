"""The request a login-required view receives, for type checkers: its ``user`` is a ``User``
(``HttpRequest.user`` may be an ``AnonymousUser``). Annotation only; nothing checks it at run time."""
from django.contrib.auth.models import User
from django.http import HttpRequest


class AuthenticatedHttpRequest(HttpRequest):
    user: User
