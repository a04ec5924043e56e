from django.urls import path

from . import embeds, exports, views

urlpatterns = [
    path("", views.home, name="home"),
    path("benchmarks/<slug:slug>/", views.benchmark_detail, name="benchmark-detail"),
    path("benchmarks/<slug:slug>/leaderboard.csv", exports.benchmark_csv, name="benchmark-leaderboard-csv"),
    path("tasks/<slug:slug>/", views.task_leaderboard, name="task-leaderboard"),
    path("tasks/<slug:slug>/skills/", views.task_skills, name="task-skills"),
    path("tasks/<slug:slug>/leaderboard.csv", exports.leaderboard_csv, name="task-leaderboard-csv"),
    path("compare/", views.compare_page, name="compare"),
    # Shown elsewhere (leaderboards/embeds.py): a board other sites may frame, Atom feeds.
    path("tasks/<slug:slug>/embed/", embeds.task_embed, name="task-embed"),
    path("tasks/<slug:slug>/results.atom", embeds.results_feed, name="task-results-feed"),
    path("results.atom", embeds.results_feed, name="results-feed"),
]
