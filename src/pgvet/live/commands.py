"""What the CLI calls for live collection (pgvet.cli.live wires the options; docs/live.md documents them)."""

from __future__ import annotations

import contextlib
import math
import os
import shlex
import socket
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from pgvet import __version__
from pgvet.errors import UsageError
from pgvet.interrupt import Interrupted
from pgvet.live.host import HostFile, collect_host, utc_now
from pgvet.live.local import (
    NotCopied,
    ServerProcess,
    copy_config_files,
    locate_server,
    postmaster_command_line,
    ssl_files_missing,
    wal_filesystem,
)
from pgvet.live.redact import redact_dsn, redact_setting
from pgvet.live.server import ServerReading, read_server
from pgvet.live.session import MAX_TIMEOUT, CannotConnect, SessionGuard, connect, socket_peer
from pgvet.live.writer import SnapshotDirectory, render_manifest, render_pg_settings_json

T = TypeVar("T")


def default_output(now: datetime | None = None, hostname: str | None = None) -> Path:
    """``./pgvet-snapshot-<hostname>-<UTC date-time>``, e.g. ``pgvet-snapshot-db1-20260122T101500Z``."""
    moment = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    name = (hostname or socket.gethostname()).replace("/", "_") or "localhost"
    return Path(f"pgvet-snapshot-{name}-{moment}")


@contextmanager
def _progress() -> Iterator[Callable[[str, Callable[[], T]], T]]:
    """A step runner showing a rich status line on a terminal (standard error), silent otherwise."""
    if not sys.stderr.isatty():
        yield lambda _label, step: step()
        return
    from rich.console import Console

    console = Console(stderr=True)
    with console.status("pgvet collect") as status:
        def run(label: str, step: Callable[[], T]) -> T:
            status.update(label)
            return step()

        yield run


def _command_line(output: Path | None, dsn: str | None, host_only: bool, timeout: float) -> str:
    """The command as a user would retype it, the DSN redacted (sys.argv may hold a password)."""
    words = ["pgvet", "collect"]
    if output is not None:
        words += ["--output", str(output)]
    if dsn is not None:
        words += ["--dsn", redact_dsn(dsn)]
    if host_only:
        words.append("--host-only")
    if timeout != 10:
        words += ["--timeout", f"{timeout:g}"]
    return shlex.join(words)


def collect_command(output: Path | None, dsn: str | None, *, host_only: bool = False, timeout: float = 10,
                    server_optional: bool = False) -> Path:
    """Collect this host (and, unless ``host_only``, the server ``dsn`` points at) into a snapshot directory.

    ``output``: a new or empty directory, default ``./pgvet-snapshot-<hostname>-<UTC date-time>``; it is made
    0700 and its files 0600. ``dsn``: a libpq conninfo or URI; None uses libpq's defaults (PGHOST, PGPORT,
    PGUSER, service files, .pgpass). ``timeout``: seconds to connect and for each query; the whole reading of
    the server is bounded by ``READING_BOUND_FACTOR`` times that. Returns the snapshot directory.
    Raises InputError for what the user must fix: an output directory that is not empty, a server that cannot
    be reached, refuses the login, drops the connection or does not answer in time; UsageError for a timeout
    that is not a positive number; Interrupted on Ctrl-C. On any of them nothing is left written. Gaps (a view
    the role may not read, an answer that makes no sense, a missing lscpu, files not copied) do not fail the
    collection: collect.json and pg_settings.json record them. ``server_optional`` (pgvet check): a server that
    cannot be reached is no error either — the host is read, and collect.json says why the server was not.
    """
    # nan and inf would break libpq's whole seconds; the session's statement_timeout holds at most INT_MAX ms
    if not (math.isfinite(timeout) and 0 < timeout <= MAX_TIMEOUT):
        raise UsageError(f"--timeout must be a positive number of seconds, at most {MAX_TIMEOUT:.0f} (PostgreSQL's "
                         f"longest statement_timeout), not {timeout:g}")
    started_at = utc_now()
    snapshot = SnapshotDirectory.create(output if output is not None else default_output())
    try:
        _collect_into(snapshot, output, dsn, host_only, timeout, started_at, server_optional)
    except KeyboardInterrupt:
        snapshot.discard()
        raise Interrupted("nothing written") from None
    except BaseException:
        snapshot.discard()  # leave nothing half-written behind a failure
        raise
    finally:
        snapshot.close()
    return snapshot.path


def _collect_into(snapshot: SnapshotDirectory, output: Path | None, dsn: str | None, host_only: bool,
                  timeout: float, started_at: str, server_optional: bool) -> None:
    files: list[HostFile] = []
    failed: list[dict[str, str]] = []
    server_summary: dict[str, Any] | None = None
    with _progress() as step:
        read: tuple[ServerReading, list[HostFile], list[dict[str, str]]] | None = None
        if not host_only:
            try:
                read = step("Reading the server and its configuration files…", lambda: _read(dsn, timeout))
            except CannotConnect as error:
                if not server_optional:
                    raise
                server_summary = {"dsn": redact_dsn(dsn or ""), "error": str(error)}
        if read is not None:
            reading, copies, copy_failures = read
            collected_at = utc_now()
            files.append(HostFile("pg_settings.json", "pg_settings, pg_file_settings and statistics views",
                                  collected_at, render_pg_settings_json(reading, collected_at=collected_at,
                                                                        pgvet_version=__version__)))
            files.extend(copies)
            failed.extend(copy_failures)
            server_summary = {"dsn": reading.dsn, "connection": reading.connection,
                              "server_version_num": reading.server["server_version_num"],
                              "unavailable": reading.unavailable}
        files.extend(step("Reading the host…", collect_host))
        for each in files:
            if each.directory:
                snapshot.make_directory(each.name)
            elif each.text is not None:
                snapshot.write(each.name, each.text)
        snapshot.write("collect.json", render_manifest(
            pgvet_version=__version__, hostname=socket.gethostname(), page_size=os.sysconf("SC_PAGE_SIZE"),
            started_at=started_at, finished_at=utc_now(),
            command=_command_line(output, dsn, host_only, timeout), files=files, failed=failed,
            server=server_summary))


def _read(dsn: str | None, timeout: float) -> tuple[ServerReading, list[HostFile], list[dict[str, str]]]:
    """The server's reading, and its configuration files when the OS shows they are on this machine (read
    while the connection holds the process that serves it)."""
    connection = connect(dsn, timeout=timeout)
    with connection:
        peer = socket_peer(connection)
        try:
            process: ServerProcess | None = locate_server(peer)
            not_copied = ""
        except NotCopied as refusal:
            process, not_copied = None, str(refusal)
        try:
            with SessionGuard(connection, timeout) as guard:
                reading = read_server(connection, dsn, guard, peer)
            if process is None:
                return reading, [], [{"what": "configuration files", "error": f"not copied: {not_copied}"}]
            with contextlib.suppress(OSError):  # not read: pg_settings.json says null
                reading.command_line = {name: redact_setting(name, value) or ""
                                        for name, value in postmaster_command_line(process).items() if name != "-D"}
            wal = wal_filesystem(process)
            if wal is not None:
                reading.statistics["wal_filesystem_free_bytes"], reading.statistics["wal_filesystem_bytes"] = wal
            missing = ssl_files_missing(process, reading)
            if missing is not None:
                reading.statistics["ssl_files_missing"] = missing
            copies, failures = copy_config_files(process, reading)
            return reading, copies, failures
        finally:
            if process is not None:
                process.close()
