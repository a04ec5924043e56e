"""The embedded default's cache backend (CACHE_URL unset): Django's file cache with three changes
for the rate limits (core.rate_limits), which every gunicorn worker counts in the same files.

* ``incr`` changes the count in place under an exclusive lock (``fcntl.flock``). Django's file
  cache reads the value and writes a new file: two processes counting at once both wrote the same
  count, so requests went uncounted, and the new file got the default timeout (300 s), so an
  hour's window restarted its count after five quiet minutes. Here the expiry is kept.
* ``add`` creates the file atomically (a hard link fails if the name exists): two processes
  starting the same window both "added" before, and one start was lost.
* Counting the files to cull them happens on one write in ``CULL_CHECK_EVERY`` rather than on
  every write. Counting lists the whole folder, and the API's rate limits write on every request:
  that listing was half the cost of a rate-limited answer. The folder may pass ``MAX_ENTRIES`` by
  the writes between two counts; the next count culls it as before.

Every access to a counter goes through ``add`` and ``incr``, so a count is never read half
written (``get`` does not take the lock)."""
import fcntl
import os
import pickle
import random
import tempfile
import time
import zlib
from typing import Any

from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.filebased import FileBasedCache

CULL_CHECK_EVERY = 32


class SharedFileCache(FileBasedCache):
    def _cull(self) -> None:
        if random.random() * CULL_CHECK_EVERY < 1:  # noqa: S311  # spreading work, not security
            super()._cull()  # type: ignore[misc]  # a private method the stubs leave out

    def add(self, key: Any, value: Any, timeout: Any = DEFAULT_TIMEOUT, version: int | None = None) -> bool:
        if self.has_key(key, version):  # also removes an expired file
            return False
        self._createdir()  # type: ignore[attr-defined]
        self._cull()
        fname = self._key_to_file(key, version)  # type: ignore[attr-defined]
        fd, tmp_path = tempfile.mkstemp(dir=self._dir)  # type: ignore[attr-defined]
        try:
            with open(fd, "wb") as f:
                self._write_content(f, timeout, value)  # type: ignore[attr-defined]
            try:
                os.link(tmp_path, fname)  # atomic: fails if another process created it first
            except FileExistsError:
                return False
            return True
        finally:
            os.remove(tmp_path)

    def incr(self, key: Any, delta: int = 1, version: int | None = None) -> Any:
        fname = self._key_to_file(key, version)  # type: ignore[attr-defined]
        try:
            with open(fname, "r+b") as f:
                fcntl.flock(f, fcntl.LOCK_EX)  # released when the file is closed
                try:
                    expiry = pickle.load(f)
                except EOFError:
                    expiry = 0  # a file removed as expired while we waited for the lock
                if expiry is not None and expiry < time.time():
                    raise FileNotFoundError(fname)
                value = pickle.loads(zlib.decompress(f.read())) + delta
                f.seek(0)
                f.write(pickle.dumps(expiry, self.pickle_protocol))
                f.write(zlib.compress(pickle.dumps(value, self.pickle_protocol)))
                f.truncate()
                return value
        except FileNotFoundError:
            raise ValueError(f"Key '{key}' not found") from None
