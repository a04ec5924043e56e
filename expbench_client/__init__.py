"""The ExpBench command-line client and its small HTTP client (standard library only):
``python -m expbench_client --help``."""
