"""multipart/form-data bodies: built whole for a small upload (:func:`encode_multipart`), or
streamed from disk for a file of any size (:class:`UploadBody`), which the client sends piece
by piece (``client.EarlyAnswerMixin``)."""
from __future__ import annotations

import mimetypes
import os
import uuid
from collections.abc import Callable, Generator, Mapping
from contextlib import closing
from pathlib import Path
from typing import Any

# An upload streamed from disk is read and sent in pieces of this size: the client holds one
# piece at a time whatever the file's size (a model bundle may be 2 GB), and 1 MiB keeps the
# reads and sends few enough that the disk and the socket, not Python, set the pace.
UPLOAD_PIECE = 1024 * 1024


def encode_multipart(fields: Mapping[str, str], files: Mapping[str, tuple[str, bytes]]) -> tuple[bytes, str]:
    """Body and content type for multipart/form-data. files: {name: (filename, bytes)}."""
    boundary = uuid.uuid4().hex
    parts = [field_part(boundary, name, value) for name, value in fields.items()]
    for name, (filename, content) in files.items():
        parts.append(file_part_head(boundary, name, filename) + content + b"\r\n")
    parts.append(closing_boundary(boundary))
    return b"".join(parts), multipart_type(boundary)


def field_part(boundary: str, name: str, value: Any) -> bytes:
    return (f'--{boundary}\r\nContent-Disposition: form-data; name="{_quote(name)}"\r\n\r\n'.encode()
            + str(value).encode() + b"\r\n")


def file_part_head(boundary: str, name: str, filename: str) -> bytes:
    content_type = mimetypes.guess_type(filename)[0] or "application/octet-stream"
    return (f'--{boundary}\r\nContent-Disposition: form-data; name="{_quote(name)}"; filename="{_quote(filename)}"\r\n'
            f"Content-Type: {content_type}\r\n\r\n").encode()


def closing_boundary(boundary: str) -> bytes:
    return f"--{boundary}--\r\n".encode()


def multipart_type(boundary: str) -> str:
    return f"multipart/form-data; boundary={boundary}"


class UploadUnreadable(Exception):
    """The file of a streamed upload could not be read to its end, or changed size while it was
    sent (its ``Content-Length`` was already announced). Not an OSError, so that it is never
    taken for a connection problem."""


class UploadBody:
    """A multipart/form-data body whose one file part is read from disk while it is sent.

    Iterating it yields the body in pieces of at most ``piece`` bytes: the form fields with the
    file part's head, then the file, then the closing boundary. Nothing ever joins them, so a
    2 GB bundle never sits in memory. ``length`` is the body's exact size, known before the
    first byte goes out: it is the request's ``Content-Length``, from which the server refuses
    an upload too large for it without reading any of it. ``on_progress(sent, length)`` is
    called after each piece is handed on (sent to the socket, when the connection sends it).
    """

    def __init__(self, fields: Mapping[str, str], file_field: str, path: str | os.PathLike[str], *,
                 filename: str | None = None, piece: int = UPLOAD_PIECE,
                 on_progress: Callable[[int, int], None] | None = None) -> None:
        self.path = Path(path)
        self.file_size = self.path.stat().st_size  # an OSError here is the caller's (no such file)
        boundary = uuid.uuid4().hex
        self.content_type = multipart_type(boundary)
        self.head = b"".join(field_part(boundary, name, value) for name, value in fields.items()) + file_part_head(
            boundary, file_field, filename or self.path.name)
        self.tail = b"\r\n" + closing_boundary(boundary)
        self.length = len(self.head) + self.file_size + len(self.tail)
        self.piece = piece
        self.on_progress = on_progress

    def __len__(self) -> int:
        return self.length

    def __iter__(self) -> Generator[bytes, None, None]:
        return self.stream()

    def stream(self) -> Generator[bytes, None, None]:
        """The body's pieces; closing it part way closes the file."""
        sent = 0
        with closing(self.pieces()) as pieces:  # a body closed part way closes its file at once
            for piece in pieces:
                yield piece
                sent += len(piece)
                if self.on_progress is not None:
                    self.on_progress(sent, self.length)

    def pieces(self) -> Generator[bytes, None, None]:
        yield self.head
        left = self.file_size
        try:
            with open(self.path, "rb") as handle:
                while left:
                    data = handle.read(min(self.piece, left))
                    if not data:
                        raise UploadUnreadable(f"{self.path} got shorter while it was sent "
                                               f"({self.file_size - left:,} of {self.file_size:,} bytes)")
                    left -= len(data)
                    yield data
                if os.fstat(handle.fileno()).st_size != self.file_size:
                    raise UploadUnreadable(f"{self.path} changed size while it was sent")
        except OSError as exc:
            raise UploadUnreadable(f"cannot read {self.path}: {exc.strerror or exc}") from None
        yield self.tail


def _quote(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\r", " ").replace("\n", " ")
