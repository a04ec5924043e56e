"""The embedded default's cache backend (CACHE_URL unset): Django's file cache, but counting its
files to cull them on one write in ``CULL_CHECK_EVERY`` rather than on every write. Counting lists
the whole folder, and the API's rate limits write on every request: that listing was half the
cost of a rate-limited answer. The folder may pass ``MAX_ENTRIES`` by the writes between two
counts; the next count culls it as before."""
import random

from django.core.cache.backends.filebased import FileBasedCache

CULL_CHECK_EVERY = 32


class SharedFileCache(FileBasedCache):
    def _cull(self) -> None:
        if random.random() * CULL_CHECK_EVERY < 1:  # noqa: S311  # spreading work, not security
            super()._cull()  # type: ignore[misc]  # a private method the stubs leave out
