"""The OpenAPI schema (drf-spectacular): every operation lists the errors it can answer, typed
as problem details (config/errors.py), and only the versioned paths are described."""
from typing import Any

from drf_spectacular.openapi import AutoSchema

from core.api_paths import CURRENT_API_PREFIX
from submissions.serializers import ProblemSerializer

from .errors import PROBLEM_CONTENT_TYPE

UNSAFE_METHODS = ("POST", "PUT", "PATCH", "DELETE")


class ProblemAutoSchema(AutoSchema):
    def get_operation(self, path: str, path_regex: str, path_prefix: str, method: str,
                      registry: Any) -> dict[str, Any] | None:
        operation = super().get_operation(path, path_regex, path_prefix, method, registry)
        if operation is None:
            return None
        responses = operation.setdefault("responses", {})
        for code, description in self.possible_errors(operation).items():
            responses.setdefault(code, {"description": description})
        for code, response in responses.items():
            if int(code) >= 400:
                self.type_as_problem(code, response)
        operation["responses"] = dict(sorted(responses.items()))
        return operation

    def possible_errors(self, operation: dict[str, Any]) -> dict[str, str]:
        """The error statuses this operation can answer whatever its view does."""
        errors = {}
        takes_query = any(p.get("in") == "query" for p in operation.get("parameters", []))
        if self.method in UNSAFE_METHODS or takes_query:
            errors["400"] = "Invalid request: `errors` names each invalid field or query parameter."
        # TokenAuthentication refuses an unknown or revoked token on every endpoint, and an
        # endpoint that needs a user refuses a request without one.
        errors["401"] = "Not authenticated: no token where one is needed, or a token the server does not know."
        if self.method in UNSAFE_METHODS:
            errors["403"] = "Not allowed (e.g. a session-authenticated request without its CSRF token)."
        if "{" in self.path:
            errors["404"] = "Not found, or not visible to you."
        errors["429"] = "Too many requests: the API's rate limit. Retry-After gives the seconds to wait."
        return errors

    def type_as_problem(self, code: str, response: dict[str, Any]) -> None:
        content = response.get("content")
        if content:
            # A view's own schema for its error (e.g. the quota's members), served as a problem.
            response["content"] = {PROBLEM_CONTENT_TYPE: next(iter(content.values()))}
        else:
            typed = self._get_response_for_code(ProblemSerializer, code, [PROBLEM_CONTENT_TYPE])
            response["content"] = typed["content"]


def versioned_paths_only(endpoints: list[tuple], **kwargs: Any) -> list[tuple]:
    """PREPROCESSING_HOOK: the unversioned /api/ aliases are deprecated and not described."""
    return [endpoint for endpoint in endpoints if endpoint[0].startswith(CURRENT_API_PREFIX)]
