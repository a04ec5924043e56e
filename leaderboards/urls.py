from django.urls import path

from . import views

urlpatterns = [
    path("", views.home, name="home"),
    path("benchmarks/<slug:slug>/", views.benchmark_detail, name="benchmark-detail"),
    path("tasks/<slug:slug>/", views.task_leaderboard, name="task-leaderboard"),
    path("tasks/<slug:slug>/skills/", views.task_skills, name="task-skills"),
    path("tasks/<slug:slug>/leaderboard.csv", views.leaderboard_csv, name="task-leaderboard-csv"),
    path("compare/", views.compare_page, name="compare"),
]
