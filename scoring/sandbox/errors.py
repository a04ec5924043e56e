"""The exceptions callers of the sandbox catch (each carries one readable message)."""


class SandboxUnavailable(RuntimeError):
    """No usable sandbox here; the message says why."""


class InvalidCode(ValueError):
    """An uploaded code submission is rejected at upload (one readable message)."""


class UnsafeModelDir(SandboxUnavailable):
    """The hosted model directory would put server data (database, media, secrets) inside
    the sandbox; the message names the directory and what it would expose."""
