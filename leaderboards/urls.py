from django.urls import path

from . import benchmark_pages, downloads, embeds, exports, views

urlpatterns = [
    path("", views.home, name="home"),
    path("benchmarks/<slug:slug>/", views.benchmark_detail, name="benchmark-detail"),
    path("benchmarks/<slug:slug>/leaderboard.csv", exports.benchmark_csv, name="benchmark-leaderboard-csv"),
    # A benchmark's own pages beside its boards (leaderboards/benchmark_pages.py).
    *[path(f"benchmarks/<slug:slug>/{name}/", benchmark_pages.benchmark_section, {"section": name},
           name=f"benchmark-{name}") for name, _label in benchmark_pages.SECTIONS],
    # What anyone may download of a public entry (leaderboards/downloads.py).
    path("entries/<int:pk>/results.json", downloads.entry_results, name="entry-results"),
    path("entries/<int:pk>/predictions.json", downloads.entry_predictions, name="entry-predictions"),
    path("entries/<int:pk>/files/", downloads.entry_files, name="entry-files"),
    path("tasks/<slug:slug>/", views.task_leaderboard, name="task-leaderboard"),
    path("tasks/<slug:slug>/skills/", views.task_skills, name="task-skills"),
    path("tasks/<slug:slug>/leaderboard.csv", exports.leaderboard_csv, name="task-leaderboard-csv"),
    path("compare/", views.compare_page, name="compare"),
    # Shown elsewhere (leaderboards/embeds.py): a board other sites may frame, Atom feeds.
    path("tasks/<slug:slug>/embed/", embeds.task_embed, name="task-embed"),
    path("tasks/<slug:slug>/results.atom", embeds.results_feed, name="task-results-feed"),
    path("results.atom", embeds.results_feed, name="results-feed"),
]
