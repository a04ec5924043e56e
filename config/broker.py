"""The embedded broker: kombu's filesystem transport with atomic message files, hardened so
that no file in its folder can stop a worker.

kombu's filesystem transport creates a message file under its final name and then writes it.
A worker polling the folder can move such a file away while it is still empty, read nothing,
fail on the JSON and lose the message (the producer keeps writing into a file nobody reads):
seen with a few uploads at once through gunicorn. Here the message is written under a name the
readers skip and then renamed, which is atomic within one directory, so a reader sees a
message file whole or not at all.

kombu raises out of the transport on a message file it cannot read or decode, and Celery
treats that as an "Unrecoverable error": one stray file (random bytes, an empty file, JSON that
is not a kombu message, a directory named like a message) stopped the worker for good, and it
stopped again on the same file after every restart. Here such a file is moved to ``bad/`` in
the broker folder (or deleted if it cannot be moved) and logged with its name and the reason;
the worker goes on with the next message. A broker folder that is missing is created again,
one replaced by a file is waited for; both are logged, neither is fatal."""
import logging
import os
import shutil
import uuid
from queue import Empty
from time import monotonic
from typing import Any, Callable

from kombu.transport import filesystem
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps, loads

logger = logging.getLogger(__name__)

#: The folder, inside the broker folder, where unreadable message files are set aside. Readers
#: take only "<stamp>_<uuid>.<queue>.msg", so neither this folder nor its content is read again.
QUARANTINE = "bad"


class BadMessage(Exception):
    """A message file that cannot become a message; the text says why."""


def message_problem(payload: Any) -> str | None:
    """Why ``payload`` (decoded JSON) is not a message kombu can deliver, or None. These are the
    fields kombu itself reads when it delivers, rejects or restores a message: without them it
    raises KeyError or TypeError inside the worker's event loop."""
    if not isinstance(payload, dict):
        return f"JSON {type(payload).__name__}, not a kombu message object"
    properties = payload.get("properties")
    if not isinstance(properties, dict):
        return "not a kombu message: no 'properties' object"
    if "delivery_tag" not in properties:
        return "not a kombu message: no 'properties.delivery_tag'"
    delivery_info = properties.get("delivery_info")
    if not isinstance(delivery_info, dict) or not {"exchange", "routing_key"} <= delivery_info.keys():
        return "not a kombu message: no 'properties.delivery_info' with exchange and routing_key"
    if payload.get("headers") is not None and not isinstance(payload["headers"], dict):
        return "not a kombu message: 'headers' is not an object"
    return None


class Channel(filesystem.Channel):
    #: The broker-folder problem logged last: a lasting one is logged once, not at every poll.
    _folder_trouble: str | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._untakeable: set[str] = set()

    # kombu's two base classes name the second argument differently ("message", "payload"): no
    # signature satisfies both; this one is filesystem.Channel's.
    def _put(self, queue: Any, payload: Any, **kwargs: Any) -> None:  # type: ignore[override]
        name = f"{int(round(monotonic() * 1000))}_{uuid.uuid4()}.{queue}.msg"  # kombu's naming: FIFO by time
        final = os.path.join(self.data_folder_out, name)
        # Readers take only "<stamp>_<uuid>.<queue>.msg"; ".<uuid>.partial" never matches a queue.
        partial = os.path.join(self.data_folder_out, f".{uuid.uuid4()}.partial")
        for attempt in range(2):
            try:
                with open(partial, "wb") as handle:
                    handle.write(str_to_bytes(dumps(payload)))
                os.replace(partial, final)
                return
            except FileNotFoundError as exc:
                # The folder was removed (e.g. someone cleared var/): create it and try once more.
                if attempt == 0 and self._recreate_folder(self.data_folder_out):
                    continue
                error: OSError = exc
            except OSError as exc:
                error = exc
            try:
                os.unlink(partial)
            except OSError:
                pass
            raise filesystem.ChannelError(f"Cannot add file {final!r} to directory") from error

    # Reading -------------------------------------------------------------------------------
    def _get(self, queue: str, timeout: float | None = None) -> Any:
        """The next message file of ``queue`` that is readable JSON (its content, decoded)."""
        return self._take(queue, kombu_message=False)

    def _get_and_deliver(self, queue: str, callback: Callable[[Any, str], None]) -> None:
        # What a consuming worker calls: only a message kombu can deliver reaches the callback,
        # since kombu builds its Message (payload["properties"]...) inside the worker's event loop.
        callback(self._take(queue, kombu_message=True), queue)

    def basic_get(self, queue: str, no_ack: bool = False, **kwargs: Any) -> Any:
        try:
            message = self.Message(self._take(queue, kombu_message=True), channel=self)
        except Empty:
            return None
        if not no_ack:
            self.qos.append(message, message.delivery_tag)
        return message

    def _take(self, queue: str, kombu_message: bool) -> Any:
        wanted = f"{queue}.msg"
        folder = self.data_folder_in
        for name in sorted(self._names()):
            if name.partition(".")[2] != wanted:
                continue
            # Take the file by renaming it within the folder (atomic: of several workers exactly
            # one gets it) to a name readers skip. kombu moved it to the temporary folder instead,
            # which is a copy, not a rename, when /tmp is another file system.
            claimed = os.path.join(folder, f".{name}.claimed")
            try:
                os.rename(os.path.join(folder, name), claimed)
            except FileNotFoundError:
                continue  # another worker took it first
            except OSError as exc:
                if name not in self._untakeable:  # once per file: this is tried again at every poll
                    self._untakeable.add(name)
                    logger.error("Broker message file %s cannot be taken: %s", name, exc)
                continue
            try:
                payload = self._read(claimed, kombu_message)
            except BadMessage as exc:
                self._set_aside(claimed, name, str(exc))
                continue
            self._dispose(claimed, name)
            return payload
        raise Empty()

    def _read(self, path: str, kombu_message: bool) -> Any:
        try:
            with open(path, "rb") as handle:
                raw = handle.read()
        except IsADirectoryError:
            raise BadMessage("a directory, not a message file") from None
        except FileNotFoundError:
            raise BadMessage("the file vanished while it was being read") from None
        except OSError as exc:
            raise BadMessage(f"cannot be read ({exc})") from None
        if not raw:
            raise BadMessage("empty file")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BadMessage(f"not UTF-8 text ({exc})") from None
        try:
            payload = loads(text)
        except Exception as exc:  # kombu's decoder hooks raise more than ValueError; none may escape
            raise BadMessage(f"not JSON ({exc})") from None
        if kombu_message:
            problem = message_problem(payload)
            if problem is None:
                try:
                    # What kombu does with it at delivery (e.g. decoding a base64 body).
                    self.Message(payload, channel=self)
                except Exception as exc:
                    problem = f"not a kombu message ({exc!r})"
            if problem is not None:
                raise BadMessage(problem)
        return payload

    def _dispose(self, claimed: str, name: str) -> None:
        try:
            if self.store_processed:
                os.makedirs(self.processed_folder, exist_ok=True)
                os.replace(claimed, os.path.join(self.processed_folder, name))
            else:
                os.unlink(claimed)
        except OSError as exc:
            # The message is read; a leftover ".claimed" file is never read again.
            logger.warning("Broker message file %s was delivered but not removed: %s", name, exc)

    def _set_aside(self, claimed: str, name: str, reason: str) -> None:
        """Move an unreadable message file to the quarantine folder, or delete it; log either."""
        quarantine = os.path.join(self.data_folder_in, QUARANTINE)
        target = os.path.join(quarantine, name)
        try:
            os.makedirs(quarantine, exist_ok=True)
            if os.path.lexists(target):
                target = f"{target}.{uuid.uuid4().hex[:8]}"
            os.rename(claimed, target)
        except OSError as move_error:
            try:
                if os.path.isdir(claimed) and not os.path.islink(claimed):
                    shutil.rmtree(claimed)
                else:
                    os.unlink(claimed)
            except FileNotFoundError:
                logger.error("Broker message file %s is unreadable and gone: %s", name, reason)
            except OSError as delete_error:
                logger.error("Broker message file %s is unreadable (%s) and could be neither set aside (%s) "
                             "nor deleted (%s); it stays as %s", name, reason, move_error, delete_error, claimed)
            else:
                logger.error("Broker message file %s is unreadable (%s); deleted, since it could not be set "
                             "aside (%s)", name, reason, move_error)
            return
        logger.error("Broker message file %s is unreadable (%s); set aside as %s", name, reason, target)

    # The folder ----------------------------------------------------------------------------
    def _names(self) -> list[str]:
        """The names in the broker folder; none (and a log line) when the folder is not there."""
        folder = self.data_folder_in
        try:
            names = os.listdir(folder)
        except FileNotFoundError:
            self._report_folder(f"Broker folder {folder} is missing; creating it again")
            if self._recreate_folder(folder):
                self._folder_trouble = None
            return []
        except NotADirectoryError:
            # Not ours to remove (someone may be swapping it back): wait for a folder to be there.
            self._report_folder(f"Broker folder {folder} is not a folder; waiting for it to come back")
            return []
        except OSError as exc:
            self._report_folder(f"Broker folder {folder} cannot be listed ({exc})")
            return []
        if self._folder_trouble is not None:
            logger.warning("Broker folder %s is usable again", folder)
            self._folder_trouble = None
            self._restore_bindings()
        return names

    def _recreate_folder(self, folder: str) -> bool:
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError as exc:
            self._report_folder(f"Broker folder {folder} cannot be created ({exc})")
            return False
        logger.warning("Broker folder %s created again", folder)
        self._restore_bindings()
        return True

    def _restore_bindings(self) -> None:
        # The exchange tables live in the control folder, inside the broker folder in the
        # embedded default: a broker folder that was replaced comes back without them, and a
        # producer would then route every task to nowhere. This process knows its bindings.
        for (queue, exchange, routing_key), arguments in list(self.state.bindings.items()):
            try:
                meta = self.typeof(exchange).prepare_bind(queue, exchange, routing_key, arguments)
                self._queue_bind(exchange, *meta)
            except Exception as exc:  # a binding that cannot be written again must not stop the worker
                logger.warning("Broker binding %s -> %s not restored: %s", exchange, queue, exc)

    def _report_folder(self, trouble: str) -> None:
        if trouble != self._folder_trouble:
            logger.error("%s", trouble)
            self._folder_trouble = trouble

    def _size(self, queue: str) -> int:
        wanted = f"{queue}.msg"
        return sum(1 for name in self._names() if name.partition(".")[2] == wanted)

    def _purge(self, queue: str) -> int:
        wanted = f"{queue}.msg"
        count = 0
        for name in self._names():
            if name.partition(".")[2] != wanted:
                continue
            try:
                os.remove(os.path.join(self.data_folder_in, name))
                count += 1
            except OSError:
                pass  # taken by a worker meanwhile, or not a file (the next read sets it aside)
        return count


class Transport(filesystem.Transport):
    Channel = Channel
