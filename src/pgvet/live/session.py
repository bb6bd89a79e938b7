"""The session pgvet opens on a running PostgreSQL server (server.py reads it), with psycopg 3 (imported only when
a server is contacted).

Connection: libpq conventions (a conninfo string or a URI; PG* variables, service files and .pgpass work
because libpq handles them), ``application_name=pgvet``, ``connect_timeout``, and, in the startup packet so
that they hold from the first query, ``default_transaction_read_only=on``, ``statement_timeout``,
``lock_timeout`` and ``search_path=pg_catalog, pg_temp``: a database owner's ``ALTER DATABASE … SET
search_path`` (or a role's) would otherwise put a function of theirs named ``version`` or ``age`` before the
catalog's, run with the privileges of pgvet's role (a superuser's ``COPY … TO PROGRAM``); settings sent at
connection override those. Autocommit, so that a query refused for lack of privilege spoils nothing after it.

The whole reading is bounded on the client's side too (``READING_BOUND_FACTOR`` × the timeout): a server
that never answers ignores statement_timeout and cancel requests alike, so the session's socket is shut
down from outside; Ctrl-C does the same at once, rather than psycopg's cancel and wait.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import socket
import struct
import threading
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING, Any, NamedTuple

from pgvet.errors import InputError
from pgvet.live.redact import redact_dsn, scrub

if TYPE_CHECKING:
    import psycopg

LOCK_TIMEOUT = 2.0  # seconds, or half the timeout when that is shorter (a lock's wait then says so itself)
# The whole reading of a server (its queries: connect_timeout bounds the connection) within this many timeouts.
READING_BOUND_FACTOR = 6
MAX_TIMEOUT = 2_147_483  # seconds: the session's statement_timeout holds at most INT_MAX milliseconds


class SocketPeer(NamedTuple):
    """The process at the other end of a Unix-domain socket, as the kernel names it (SO_PEERCRED: the process
    that listened), and the socket's path as the listener bound it."""

    path: str
    pid: int  # 0: a process of another PID namespace, invisible from here


def one_line(text: str) -> str:
    return "; ".join(part.strip() for part in text.strip().splitlines() if part.strip())


def _session_options(dsn: str, timeout: float) -> str:
    """libpq ``options``: the user's (from the DSN, else PGOPTIONS) followed by pgvet's, which win."""
    from psycopg.conninfo import conninfo_to_dict

    given = conninfo_to_dict(dsn).get("options") or os.environ.get("PGOPTIONS", "")
    milliseconds = max(1, round(timeout * 1000))
    ours = (f"-c default_transaction_read_only=on -c statement_timeout={milliseconds} "
            f"-c lock_timeout={max(1, min(milliseconds // 2, round(LOCK_TIMEOUT * 1000)))} "
            "-c search_path=pg_catalog,pg_temp")  # only the catalog's functions, whatever the database says
    return f"{given} {ours}".strip()


class CannotConnect(InputError):
    """No session: the server cannot be reached, refuses the login, or psycopg is not installed."""


def connect(dsn: str | None, *, timeout: float = 10) -> psycopg.Connection[Any]:
    """A read-only autocommit session bounded in time; CannotConnect (one line, no password) when the server
    cannot be reached or refuses the login."""
    try:
        import psycopg
    except ImportError as error:  # installed without its dependencies, or psycopg without a libpq to load
        raise CannotConnect(f"reading a server needs psycopg 3 and libpq, a dependency of pgvet ({error}): "
                            "pip install 'psycopg[binary]', or install the system's libpq (libpq5)") from None
    given = dsn or ""
    shown = redact_dsn(given) or "libpq defaults (PG* environment)"
    try:
        return psycopg.connect(given, application_name="pgvet", autocommit=True,
                               connect_timeout=str(max(1, math.ceil(timeout))),
                               options=_session_options(given, timeout), **_auth_requirement(given))
    except psycopg.Error as error:
        message = scrub(one_line(str(error)), given)
        if CLEARTEXT_REFUSED in message:
            message += ("; pgvet sends no password in clear text unless told to (whatever listens there would read "
                        "it): add require_auth=password to --dsn for a server that authenticates so (LDAP, PAM, "
                        "RADIUS), over TLS")
        raise CannotConnect(f"cannot connect to PostgreSQL ({shown}): {message}") from None


# What libpq says when require_auth refused the server's request for a clear-text password.
CLEARTEXT_REFUSED = "server requested a cleartext password"


def _auth_requirement(dsn: str) -> dict[str, Any]:
    """libpq's ``require_auth``: no clear-text password (the password of the DSN, PGPASSWORD or .pgpass), which
    anything that answers at the server's address or socket could ask for and read, unless the user chose the
    methods (in the DSN, PGREQUIREAUTH, or the connection service the DSN or PGSERVICE names: a keyword given to
    libpq overrides the service file's). A libpq older than 16 knows no such option: nothing is required. (Any:
    spread into psycopg.connect's keywords, as its conninfo.)"""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict

    given = conninfo_to_dict(dsn)
    service = given.get("service") or os.environ.get("PGSERVICE")
    if (psycopg.pq.version() < 160000 or os.environ.get("PGREQUIREAUTH") or "require_auth" in given
            or (service and "require_auth" in service_keywords(str(service)))):
        return {}
    return {"require_auth": "!password"}


# Where libpq looks for a connection service's definition, in its order: the user's file, then the system's (its
# directory is PGSYSCONFDIR, else where libpq was built to look: the distributions' usual places are tried).
_SYSTEM_SERVICE_FILES = ("/etc/postgresql-common/pg_service.conf", "/etc/pg_service.conf",
                         "/usr/local/pgsql/etc/pg_service.conf")


def service_keywords(service: str) -> set[str]:
    """The keywords the definition of a connection service sets, from the first service file that defines it (as
    libpq reads it: ``[name]`` sections of ``keyword=value`` lines, ``#`` comments); none when no file that pgvet
    knows of does."""
    user_file = os.environ.get("PGSERVICEFILE") or os.path.join(os.path.expanduser("~"), ".pg_service.conf")
    system = os.environ.get("PGSYSCONFDIR")
    candidates = [user_file, *([os.path.join(system, "pg_service.conf")] if system else _SYSTEM_SERVICE_FILES)]
    for path in candidates:
        try:
            with open(path, encoding="utf-8", errors="replace") as lines:
                text = lines.read(1024 * 1024)
        except OSError:
            continue
        section: str | None = None
        keywords: set[str] = set()
        for line in text.splitlines():
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith("["):
                if section == service:
                    return keywords
                section = line[1:].split("]", 1)[0]
            elif section == service and "=" in line:
                keywords.add(line.split("=", 1)[0].strip())
        if section == service:
            return keywords
    return set()


def socket_peer(connection: psycopg.Connection[Any]) -> SocketPeer | None:
    """Who listens at the other end of the connection, when it is a Unix-domain socket (None over TCP)."""
    with socket.socket(fileno=os.dup(connection.pgconn.socket)) as own:
        if own.family != socket.AF_UNIX:
            return None
        credentials = own.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        pid = struct.unpack("3i", credentials)[0]  # pid, uid, gid: /proc tells the ids the kernel checks now
        path = own.getpeername()
    return SocketPeer(path if isinstance(path, str) else os.fsdecode(path), pid)


class SessionGuard:
    """Ends the session from outside: once the reading has taken ``READING_BOUND_FACTOR`` × ``timeout`` seconds,
    or on Ctrl-C. Shutting the socket down wakes psycopg's wait with a closed connection whatever the server
    does; ``ended`` says why. Leaving the guard after a Ctrl-C raises KeyboardInterrupt."""

    def __init__(self, connection: psycopg.Connection[Any], timeout: float) -> None:
        self.bound = READING_BOUND_FACTOR * timeout
        self.ended: str | None = None  # "bound" or "interrupt"
        self._lock = threading.Lock()
        self._socket: socket.socket | None = socket.socket(fileno=os.dup(connection.pgconn.socket))
        self._timer = threading.Timer(self.bound, self._end, ("bound",))
        self._timer.daemon = True
        self._installed = False
        self._previous: Callable[[int, FrameType | None], Any] | int | None = None

    def _end(self, why: str) -> None:
        with self._lock:
            if self._socket is not None and self.ended is None:
                self.ended = why
                with contextlib.suppress(OSError):  # already closed by the server
                    self._socket.shutdown(socket.SHUT_RDWR)

    def _interrupt(self, _signum: int, _frame: FrameType | None) -> None:
        self._end("interrupt")

    def __enter__(self) -> SessionGuard:
        self._timer.start()
        if threading.current_thread() is threading.main_thread():  # signals can only be handled there
            self._previous = signal.signal(signal.SIGINT, self._interrupt)
            self._installed = True
        return self

    def __exit__(self, *_: object) -> None:
        self._timer.cancel()
        if self._installed:
            signal.signal(signal.SIGINT, self._previous)
        with self._lock:
            if self._socket is not None:
                self._socket.close()
                self._socket = None
        if self.ended == "interrupt":
            raise KeyboardInterrupt
