"""Error answers Django gives before any view runs (a body over DATA_UPLOAD_MAX_MEMORY_SIZE,
more fields than DATA_UPLOAD_MAX_NUMBER_FIELDS, a malformed request): the API answers them in
its own JSON shape, never with an HTML page."""
from django.conf import settings
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import defaults


def bad_request_reason(exception: Exception | None) -> str:
    if isinstance(exception, RequestDataTooBig):
        return (f"The form fields are larger than {settings.DATA_UPLOAD_MAX_MEMORY_SIZE:,} bytes "
                "(files are not counted: send large content as a file).")
    if isinstance(exception, TooManyFieldsSent):
        return f"More than {settings.DATA_UPLOAD_MAX_NUMBER_FIELDS:,} form fields."
    return "The request is malformed."


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if request.path.startswith("/api/"):
        return JsonResponse({"error": bad_request_reason(exception)}, status=400)
    return defaults.bad_request(request, exception)  # type: ignore[arg-type]  # Django accepts None here
