"""Downloads of the catalogue: a task's public inputs (never its gold)."""
from django.http import HttpRequest, JsonResponse
from django.shortcuts import get_object_or_404

from .models import Task


def task_inputs_download(request: HttpRequest, slug: str) -> JsonResponse:
    task = get_object_or_404(Task.objects.visible_to(request.user), slug=slug)
    test_set = task.current_test_set()
    if test_set is None:
        return JsonResponse({"error": f"Task {task.slug} has no test set yet."}, status=404)
    test_set = type(test_set).objects.only("public_inputs", "version").get(pk=test_set.pk)
    response = JsonResponse(test_set.public_inputs, json_dumps_params={"ensure_ascii": False})
    response["Content-Disposition"] = f'attachment; filename="{task.slug}-{test_set.version}-inputs.json"'
    return response
