"""transfer: one HTTP download into a file, within an overall deadline, checked for size and MD5.

A per-read timeout alone never ends a download from a server that trickles a
byte every few seconds, in its headers or its body. So every socket the
download opens is kept, and when the deadline passes a watchdog shuts them
down: whatever read is waiting returns at once, and the download ends with a
one-line DataError. Only http and https are spoken, redirects included.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

from topos.datasets.errors import DataError
from topos.datasets.mirror_url import SCHEMES

# Called as the bytes arrive: (file name, bytes so far, total bytes or None).
Progress = Callable[[str, int, int | None], None]

# The most bytes asked of one read; a read returns whatever has arrived, so the
# progress moves even when the bytes trickle.
CHUNK_BYTES = 1 << 20

# Seconds one connect or read may wait (the overall deadline is shorter when less is left).
READ_TIMEOUT_SECONDS = 60.0


class _Sockets:
    """The sockets one download opened; `expire()` shuts them all, and any opened later."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self.expired = False

    def add(self, connection: socket.socket) -> None:
        with self._lock:
            self._sockets.append(connection)
            if self.expired:
                _shut(connection)

    def expire(self) -> None:
        with self._lock:
            self.expired = True
            for connection in self._sockets:
                _shut(connection)


def _shut(connection: socket.socket) -> None:
    # The plain socket's shutdown, also under TLS: the reader sees the end of the stream,
    # while the TLS object it reads through stays intact.
    with contextlib.suppress(OSError):
        socket.socket.shutdown(connection, socket.SHUT_RDWR)


class _Watching:
    """Mixed into the HTTP and HTTPS handlers: each connection registers its socket."""

    sockets: _Sockets

    def do_open(self, http_class: Any, request: Any, **options: Any) -> Any:
        sockets = self.sockets

        class Watched(http_class):
            def connect(self) -> None:
                super().connect()
                sockets.add(self.sock)

        return super().do_open(Watched, request, **options)


class _WatchedHTTPHandler(_Watching, urllib.request.HTTPHandler):
    def __init__(self, sockets: _Sockets) -> None:
        super().__init__()
        self.sockets = sockets


class _WatchedHTTPSHandler(_Watching, urllib.request.HTTPSHandler):
    def __init__(self, sockets: _Sockets) -> None:
        super().__init__()
        self.sockets = sockets


class _HTTPRedirectHandler(urllib.request.HTTPRedirectHandler):
    """Follows redirects to http(s) URLs only: a server may not send us to `file:`."""

    def redirect_request(self, request, file, code, message, headers, new_url):
        scheme = new_url.split(":", 1)[0].lower()
        if scheme not in SCHEMES:
            raise urllib.error.URLError(f"redirected to {new_url}, which is not http(s)")
        return super().redirect_request(request, file, code, message, headers, new_url)


def _opener(sockets: _Sockets) -> urllib.request.OpenerDirector:
    """An opener of http and https URLs only (proxies honoured), its sockets watched."""
    opener = urllib.request.OpenerDirector()
    for handler in (
        urllib.request.ProxyHandler(),
        urllib.request.UnknownHandler(),
        _WatchedHTTPHandler(sockets),
        _WatchedHTTPSHandler(sockets),
        urllib.request.HTTPDefaultErrorHandler(),
        _HTTPRedirectHandler(),
        urllib.request.HTTPErrorProcessor(),
    ):
        opener.add_handler(handler)
    return opener


def _of(done: int, expected: int | None) -> str:
    return f"{done} of {expected} bytes" if expected is not None else f"{done} bytes"


def transfer(
    url: str,
    destination: Path,
    md5: str,
    *,
    size: int | None,
    deadline: float,
    allowed_seconds: float,
    progress: Progress | None = None,
) -> None:
    """Downloads `url` into `destination` before `deadline` (a `time.monotonic()` instant;
    `allowed_seconds` is what the message says was allowed), then checks it.

    The body must be as long as `size` (the published size) or else the length the
    server announced, and no longer: a short body is reported as truncated, not as an
    MD5 mismatch. Every failure is a one-line DataError naming the URL, or the file
    when it is the writing that fails.
    """
    sockets = _Sockets()
    remaining = deadline - time.monotonic()
    late = f"took longer than the {allowed_seconds:g} s allowed"
    if remaining <= 0:
        raise DataError(url, f"{late}: not started")
    watchdog = threading.Timer(remaining, sockets.expire)
    watchdog.daemon = True
    watchdog.start()
    digest = hashlib.md5(usedforsecurity=False)
    done, expected = 0, size
    try:
        out = _open_for_writing(destination)
        with out:
            try:
                response = _opener(sockets).open(url, timeout=min(READ_TIMEOUT_SECONDS, remaining))
                with response:
                    announced = response.length
                    if size is not None and announced is not None and announced != size:
                        raise DataError(
                            url,
                            f"size {announced} bytes differs from the published {size}",
                        )
                    expected = size if size is not None else announced
                    if progress is not None:
                        progress(destination.name, 0, expected)
                    while chunk := response.read1(CHUNK_BYTES):
                        done += len(chunk)
                        if expected is not None and done > expected:
                            raise DataError(
                                url, f"too long: more than the {expected} bytes expected"
                            )
                        _write(out, chunk, destination)
                        digest.update(chunk)
                        if progress is not None:
                            progress(destination.name, done, expected)
            except DataError:
                raise
            except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as error:
                if sockets.expired:
                    raise DataError(url, f"{late}: got {_of(done, expected)}") from None
                raise DataError(url, f"download failed: {_reason(error)}") from None
    finally:
        watchdog.cancel()
    # A shut socket reads as the end of the stream: that is the deadline, not the body's end.
    if sockets.expired:
        raise DataError(url, f"{late}: got {_of(done, expected)}")
    if expected is not None and done < expected:
        raise DataError(url, f"truncated: got {done} of {expected} bytes")
    if progress is not None and expected is None:
        progress(destination.name, done, done)  # the size is known now: the display completes
    if digest.hexdigest() != md5:
        raise DataError(url, f"MD5 {digest.hexdigest()} differs from the published {md5}")


def _reason(error: BaseException) -> str:
    """Why a download failed, in a few words."""
    if isinstance(error, http.client.HTTPException):
        return f"malformed HTTP response ({type(error).__name__}: {error})"
    if isinstance(error, urllib.error.HTTPError):
        return str(error)
    if isinstance(error, urllib.error.URLError):
        return str(error.reason)
    return str(error) or type(error).__name__


def _open_for_writing(path: Path) -> BinaryIO:
    try:
        return open(path, "wb")  # closed by the caller's with
    except OSError as error:
        raise DataError(path, f"cannot be written: {error.strerror or error}") from None


def _write(out: BinaryIO, chunk: bytes, path: Path) -> None:
    try:
        out.write(chunk)
    except OSError as error:
        raise DataError(path, f"cannot be written: {error.strerror or error}") from None
