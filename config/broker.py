"""The embedded broker: kombu's filesystem transport with atomic message files.

kombu's filesystem transport creates a message file under its final name and then writes it.
A worker polling the folder can move such a file away while it is still empty, read nothing,
fail on the JSON and lose the message (the producer keeps writing into a file nobody reads):
seen with a few uploads at once through gunicorn. Here the message is written under a name the
readers skip and then renamed, which is atomic within one directory, so a reader sees a
message file whole or not at all."""
import os
import uuid
from time import monotonic

from kombu.transport import filesystem
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps


class Channel(filesystem.Channel):
    def _put(self, queue, payload, **kwargs):
        name = f"{int(round(monotonic() * 1000))}_{uuid.uuid4()}.{queue}.msg"  # kombu's naming: FIFO by time
        final = os.path.join(self.data_folder_out, name)
        # Readers take only "<stamp>_<uuid>.<queue>.msg"; ".<uuid>.partial" never matches a queue.
        partial = os.path.join(self.data_folder_out, f".{uuid.uuid4()}.partial")
        try:
            with open(partial, "wb") as handle:
                handle.write(str_to_bytes(dumps(payload)))
            os.replace(partial, final)
        except OSError as exc:
            try:
                os.unlink(partial)
            except OSError:
                pass
            raise filesystem.ChannelError(f"Cannot add file {final!r} to directory") from exc


class Transport(filesystem.Transport):
    Channel = Channel
