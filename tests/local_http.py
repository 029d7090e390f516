"""A folder served over HTTP on 127.0.0.1, for tests of downloads; never another address."""

from __future__ import annotations

import functools
import http.server
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
