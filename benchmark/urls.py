from django.urls import path

from . import views

urlpatterns = [
    path("tasks/<slug:slug>/inputs.json", views.task_inputs_download, name="task-inputs"),
]
