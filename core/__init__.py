"""Shared plumbing of the Django apps, below all of them: the background-job protocol
(``core.jobs``) and the template filters (``core.templatetags``). No models."""
