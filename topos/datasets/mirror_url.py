"""The mirror URL of `fetch`: an http(s) folder URL, checked before anything is created."""

from __future__ import annotations

import urllib.parse

from topos.datasets.errors import DataError

#: The schemes a mirror may use: a download is fetched over HTTP, never read from a
#: local file (`file:`), run as a data URL or fetched over FTP.
SCHEMES = ("http", "https")


def check_mirror_url(url: str) -> str:
    """`url`, a folder URL to download from, ending in exactly one slash; a one-line
    DataError naming it when it is not an http(s) URL of a host (a bare word, a
    malformed IPv6 address, a bad port, a `file:` URL, spaces or control characters)."""
    if not url or any(character.isspace() or ord(character) < 32 for character in url):
        raise DataError(repr(url), "not a URL: it is empty or holds spaces or control characters")
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port  # parsing the port is what finds a bad one
        host = parts.hostname
    except ValueError as error:
        raise DataError(url, f"not a valid URL: {error}") from None
    if parts.scheme.lower() not in SCHEMES:
        found = f"its scheme is {parts.scheme}:" if parts.scheme else "it has no scheme"
        raise DataError(url, f"not an http(s) URL ({found}); give the folder to download from")
    if not host:
        raise DataError(url, "names no host")
    if port == 0:
        raise DataError(url, "names port 0")
    if parts.username is not None or parts.password is not None:
        raise DataError(url, "holds a user name or password; give the folder URL alone")
    if parts.query or parts.fragment:
        raise DataError(url, "has a query or a fragment; give the folder URL alone")
    return url.rstrip("/") + "/"
