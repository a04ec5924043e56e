"""Shared plumbing of the Django apps, below all of them: the background-job protocol
(``core.jobs``), conditional GET and stored answers (``core.conditional``), rate limits
(``core.rate_limits``), query parameters (``core.query_params``) and the template filters
(``core.templatetags``). No models."""
