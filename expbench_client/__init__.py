"""The ExpBench command-line client and its small HTTP client, standard library only:
``expbench --help`` or ``python -m expbench_client --help``; docs/client.md is the reference."""

__version__ = "1.0.0"  # the expbench package version (pyproject.toml; tests/test_packaging.py checks)
