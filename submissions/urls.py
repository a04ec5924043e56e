from django.urls import path

from . import views

urlpatterns = [
    path("", views.my_submissions, name="my-submissions"),
    path("<int:pk>/", views.detail, name="submission-detail"),
    path("<int:pk>/edit/", views.edit, name="submission-edit"),
    path("<int:pk>/cancel/", views.cancel, name="submission-cancel"),
    path("<int:pk>/public/", views.toggle_public, name="submission-toggle-public"),
    path("<int:pk>/phase-choice/", views.select_for_phase, name="submission-phase-choice"),
]
