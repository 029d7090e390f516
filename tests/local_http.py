"""A folder served over HTTP on 127.0.0.1, and a raw loopback server for misbehaving
responses, for tests of downloads; never another address."""

from __future__ import annotations

import functools
import http.server
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

PROXY_VARIABLES = ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY")


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    """Serves files without logging every request to stderr."""

    def log_message(self, format, *arguments):
        pass


@contextmanager
def serving(directory: Path, monkeypatch) -> Iterator[str]:
    """Serves `directory` on a free loopback port, with proxies out of the way; yields
    the base URL and shuts the server down afterwards."""
    for variable in PROXY_VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    handler = functools.partial(QuietHandler, directory=str(directory))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@contextmanager
def raw_serving(respond, monkeypatch) -> Iterator[str]:
    """A loopback TCP server that answers each connection with `respond(connection,
    stopping)`, which writes whatever bytes it likes (a broken chunked body, a short
    body, a trickle) until done or until the event `stopping` is set; yields the base
    URL and stops every responder afterwards."""
    for variable in PROXY_VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.05)
    stopping = threading.Event()
    threads: list[threading.Thread] = []

    def answer(connection: socket.socket) -> None:
        with connection:
            try:
                _read_request(connection)
                respond(connection, stopping)
            except OSError:
                pass  # the client hung up: nothing more to say

    def accept() -> None:
        while not stopping.is_set():
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            thread = threading.Thread(target=answer, args=(connection,), daemon=True)
            thread.start()
            threads.append(thread)

    acceptor = threading.Thread(target=accept, daemon=True)
    acceptor.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stopping.set()
        acceptor.join(5)
        listener.close()
        for thread in threads:
            thread.join(5)


def _read_request(connection: socket.socket) -> bytes:
    """Reads a request's head (the requests of these tests have no body)."""
    received = b""
    while b"\r\n\r\n" not in received:
        piece = connection.recv(4096)
        if not piece:
            break
        received += piece
    return received
