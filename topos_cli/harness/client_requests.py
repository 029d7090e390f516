"""The client-request library: callgrind's requests (zero, dump, start and stop
instrumenting) in a shared library a counting worker loads with ctypes.

Valgrind's client requests are a magic instruction sequence its headers emit inline;
Python cannot issue one, so the grader compiles these few lines once, with the system's
C compiler and Valgrind's own headers, into a cache keyed by their text, the compiler
and the machine, and hands the path to each counting worker (`step_counter`).
"""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
from pathlib import Path

SOURCE = """\
#include <valgrind/valgrind.h>
#include <valgrind/callgrind.h>
int topos_running_on_valgrind(void) { return RUNNING_ON_VALGRIND; }
void topos_start_instrumentation(void) { CALLGRIND_START_INSTRUMENTATION; }
void topos_stop_instrumentation(void) { CALLGRIND_STOP_INSTRUMENTATION; }
void topos_zero_stats(void) { CALLGRIND_ZERO_STATS; }
void topos_dump_stats_at(const char *label) { CALLGRIND_DUMP_STATS_AT(label); }
"""


class ClientRequestsError(Exception):
    """The library cannot be built here; the message says what is missing, in one line."""


def cache_directory() -> Path:
    """Where built libraries are kept: `$XDG_CACHE_HOME/topos`, else `~/.cache/topos`."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "topos"


def compiler() -> str | None:
    """The C compiler to build with: `$CC`, else `cc`, `gcc` or `clang` on the path."""
    named = os.environ.get("CC")
    if named:
        return shutil.which(named) or named
    for candidate in ("cc", "gcc", "clang"):
        found = shutil.which(candidate)
        if found:
            return found
    return None


def client_requests_library(directory: Path | None = None) -> Path:
    """The built library's path, building it first if the cache lacks it; raises
    `ClientRequestsError` naming what is missing (a compiler, Valgrind's headers)."""
    cc = compiler()
    if cc is None:
        raise ClientRequestsError(
            "no C compiler (cc, gcc or clang) to build Valgrind's client requests with"
        )
    key = hashlib.sha256(f"{SOURCE}\0{cc}\0{platform.machine()}".encode()).hexdigest()[:16]
    directory = directory or cache_directory()
    library = directory / f"client_requests-{key}.so"
    if library.is_file():
        return library
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError:
        directory = Path(tempfile.gettempdir())
        library = directory / f"topos-client-requests-{os.getuid()}-{key}.so"
        if library.is_file():
            return library
    with tempfile.TemporaryDirectory(prefix="topos-client-requests-") as scratch:
        source = Path(scratch) / "client_requests.c"
        source.write_text(SOURCE)
        built = Path(scratch) / "client_requests.so"
        command = [cc, "-O2", "-shared", "-fPIC", str(source), "-o", str(built)]
        try:
            finished = subprocess.run(command, capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired) as error:
            message = f"{cc} could not build the client requests: {error}"
            raise ClientRequestsError(message) from None
        if finished.returncode != 0:
            if "valgrind/" in finished.stderr and "No such file" in finished.stderr:
                raise ClientRequestsError(
                    "Valgrind's headers (valgrind/callgrind.h) are missing: install Valgrind "
                    "with its headers (Debian and Ubuntu: apt-get install valgrind)"
                )
            first = next((line for line in finished.stderr.splitlines() if line.strip()), "")
            raise ClientRequestsError(f"{cc} could not build the client requests: {first}")
        # Into place in one rename, so two grades building at once never load half a file.
        partial = library.with_suffix(f".{os.getpid()}.partial")
        shutil.copyfile(built, partial)
        os.replace(partial, library)
    return library
