"""A fake PostgreSQL server speaking the wire protocol (version 3), for tests in which the server lies.

It answers the startup with AuthenticationOk, ParameterStatus, BackendKeyData and ReadyForQuery, and each
simple query ('Q', what psycopg sends for a query without parameters) with what ``answer`` returns for its
text: rows (RowDescription, DataRow, CommandComplete), an error (ErrorResponse), a hang (nothing, until
the server stops) or a dropped connection. SSL and GSS encryption requests are refused ('N'), a cancel
request is read and its connection closed.

Two ways to run it:

- ``FakeServer(answer, ...)`` in a thread of the test process, on 127.0.0.1 or on a Unix socket in a
  directory of the test (``with FakeServer(...) as server: server.dsn()``);
- ``python fakepg.py -D DATADIR -c config_file=FILE`` as a process of its own (``serve_in_process``), so that
  it can pose as a postmaster: its command line and working directory are what /proc shows of it.

``standard_answers()`` answers every query pgvet collect sends as a small PostgreSQL 16 server would; a
test replaces the answers it wants to lie in (``answers_with``).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TEXT, INT8, INT4, BOOL, FLOAT8, NUMERIC = 25, 20, 23, 16, 701, 1700
SSL_REQUEST, GSSENC_REQUEST, CANCEL_REQUEST = 80877103, 80877104, 80877102
PROTOCOL_3_0 = 196608
PORT = 5432


@dataclass(frozen=True)
class Rows:
    """A result: columns as (name, type oid), rows of texts (None: NULL), each sent as the text it is."""

    columns: tuple[tuple[str, int], ...]
    rows: tuple[tuple[str | None, ...], ...] = ()


@dataclass(frozen=True)
class Error:
    message: str
    sqlstate: str = "42501"


@dataclass(frozen=True)
class Hang:
    """No answer at all: the connection stays open and silent."""


@dataclass(frozen=True)
class Drop:
    """The connection is closed without a word."""


Reply = Rows | Error | Hang | Drop
Answer = Callable[[str], Reply]


def one(name: str, oid: int, value: str | None) -> Rows:
    return Rows(((name, oid),), ((value,),))


SETTINGS_COLUMNS = (("name", TEXT), ("setting", TEXT), ("unit", TEXT), ("vartype", TEXT), ("context", TEXT),
                    ("source", TEXT), ("sourcefile", TEXT), ("sourceline", INT4), ("boot_val", TEXT),
                    ("reset_val", TEXT), ("pending_restart", BOOL))
FILE_SETTINGS_COLUMNS = (("sourcefile", TEXT), ("sourceline", INT4), ("seqno", INT4), ("name", TEXT),
                         ("setting", TEXT), ("applied", BOOL), ("error", TEXT))
SLOT_COLUMNS = (("slot_name", TEXT), ("slot_type", TEXT), ("active", BOOL), ("wal_status", TEXT),
                ("retained", INT8), ("safe_wal_size", INT8), ("xmin_age", INT4), ("catalog_xmin_age", INT4))
IDLE_COLUMNS = (("pid", INT4), ("usename", TEXT), ("datname", TEXT), ("state", TEXT), ("idle", FLOAT8),
                ("transaction", FLOAT8), ("xmin_age", INT4))


def setting_row(name: str, setting: str, *, vartype: str = "string", unit: str | None = None,
                context: str = "sighup", source: str = "default", sourcefile: str | None = None,
                sourceline: str | None = None) -> tuple[str | None, ...]:
    return (name, setting, unit, vartype, context, source, sourcefile, sourceline, setting, setting, "f")


def standard_settings(data_directory: str) -> list[tuple[str | None, ...]]:
    conf = f"{data_directory}/postgresql.conf"
    return [
        setting_row("application_name", "pgvet", context="user", source="client"),
        setting_row("config_file", conf, context="postmaster", source="override"),
        setting_row("data_directory", data_directory, context="postmaster", source="override"),
        setting_row("default_transaction_read_only", "on", vartype="bool", context="user", source="client"),
        setting_row("lock_timeout", "2000", vartype="integer", unit="ms", context="user", source="client"),
        setting_row("max_connections", "100", vartype="integer", context="postmaster", source="configuration file",
                    sourcefile=conf, sourceline="65"),
        setting_row("port", str(PORT), vartype="integer", context="postmaster"),
        setting_row("server_version", "16.2", context="internal"),
        setting_row("shared_buffers", "16384", vartype="integer", unit="8kB", context="postmaster",
                    source="configuration file", sourcefile=conf, sourceline="127"),
        setting_row("statement_timeout", "10000", vartype="integer", unit="ms", context="user", source="client"),
        setting_row("work_mem", "4096", vartype="integer", unit="kB", context="user"),
    ]


def standard_answers(data_directory: str = "/var/lib/postgresql/16/main",
                     settings: list[tuple[str | None, ...]] | None = None) -> dict[str, Reply]:
    """What a PostgreSQL 16 superuser session answers to each of pgvet's queries, keyed by a text that only
    that query holds."""
    conf = f"{data_directory}/postgresql.conf"
    return {
        "FROM pg_settings": Rows(SETTINGS_COLUMNS, tuple(settings or standard_settings(data_directory))),
        "SELECT version()": Rows((("version", TEXT), ("current_user", TEXT), ("rolsuper", BOOL),
                                  ("read_all_settings", BOOL), ("read_all_stats", BOOL), ("start", FLOAT8)),
                                 (("PostgreSQL 16.2 on x86_64-pc-linux-gnu", "postgres", "t", "t", "t",
                                   "1769076900.25"),)),
        "current_setting('data_directory')": one("current_setting", TEXT, data_directory),
        "current_setting('config_file')": one("current_setting", TEXT, conf),
        "FROM pg_show_all_file_settings()": Rows(FILE_SETTINGS_COLUMNS, (
            (conf, "65", "1", "max_connections", "100", "t", None),
            (conf, "127", "2", "shared_buffers", "128MB", "t", None))),
        "FROM pg_database d": Rows((("datname", TEXT), ("size", INT8), ("temp_files", INT8), ("temp_bytes", INT8),
                                    ("blks_hit", INT8), ("blks_read", INT8), ("age", INT4), ("mxid_age", INT4)),
                                   (("postgres", "7500000", "0", "0", "900", "100", "1200", "1"),)),
        "sum(temp_files)": Rows((("sum", NUMERIC), ("sum", NUMERIC), ("sum", NUMERIC), ("sum", NUMERIC)),
                                (("0", "0", "950", "120"),)),
        "FROM pg_stat_bgwriter": Rows((("checkpoints_timed", INT8), ("checkpoints_req", INT8),
                                       ("stats_reset", TEXT), ("wal_bytes", INT8)),
                                      (("40", "3", "2026-01-01 00:00:00+00", "123456789"),)),
        "state LIKE 'idle in transaction%'": Rows(IDLE_COLUMNS, ()),
        "FROM pg_stat_activity": one("count", INT8, "1"),
        "unnest(s.setconfig)": Rows((("datname", TEXT), ("rolname", TEXT), ("unnest", TEXT)), ()),
        "FROM pg_subscription": one("coalesce", TEXT, ""),
        "FROM pg_stat_replication": one("count", INT8, "0"),  # before the slots': its query names them too
        "FROM pg_replication_slots": Rows(SLOT_COLUMNS, ()),
        "FROM pg_prepared_xacts": Rows((("gid", TEXT), ("owner", TEXT), ("database", TEXT), ("age", FLOAT8),
                                        ("xid_age", INT4)), ()),
        "pg_get_wal_replay_pause_state()": one("pause_state", TEXT, ""),
        "NOT i.indisvalid": Rows((("nspname", TEXT), ("relname", TEXT), ("relname", TEXT),
                                  ("current_database", TEXT), ("indisvalid", BOOL)), ()),
    }


def answers_with(answers: Mapping[str, Reply]) -> Answer:
    """An answer function: the reply of the first key the query holds, else an error naming the query."""
    def answer(query: str) -> Reply:
        for key, reply in answers.items():
            if key in query:
                return reply
        return Error(f"fakepg has no answer to: {query}", "42601")
    return answer


# --- the protocol ----------------------------------------------------------------------------------------


def _message(kind: bytes, payload: bytes) -> bytes:
    return kind + struct.pack("!i", len(payload) + 4) + payload


def _cstring(text: str) -> bytes:
    return text.encode() + b"\0"


def _rows(reply: Rows) -> bytes:
    return _row_description(reply) + _data_rows(reply)


def _row_description(reply: Rows) -> bytes:
    return _message(b"T", struct.pack("!h", len(reply.columns)) + b"".join(
        _cstring(name) + struct.pack("!ihihih", 0, 0, oid, -1, -1, 0) for name, oid in reply.columns))


def _data_rows(reply: Rows) -> bytes:
    out = []
    for row in reply.rows:
        cells = b"".join(struct.pack("!i", -1) if value is None else struct.pack("!i", len(value.encode()))
                         + value.encode() for value in row)
        out.append(_message(b"D", struct.pack("!h", len(row)) + cells))
    out.append(_message(b"C", _cstring(f"SELECT {len(reply.rows)}")))
    return b"".join(out)


def _error(reply: Error) -> bytes:
    fields = b"SERROR\0VERROR\0C" + _cstring(reply.sqlstate) + b"M" + _cstring(reply.message) + b"\0"
    return _message(b"E", fields)


READY = _message(b"Z", b"I")


def _read_exactly(connection: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = connection.recv(size - len(data))
        if not chunk:
            raise ConnectionError("client went away")
        data += chunk
    return data


@dataclass
class FakeServer:
    """A fake server in a thread: on 127.0.0.1 (``unix_dir`` None) or on ``unix_dir``/.s.PGSQL.5432."""

    answer: Answer
    unix_dir: Path | None = None
    server_version: str = "16.2"
    refusal: str | None = None  # an error that refuses every connection at its startup, before any query
    ask_password: bool = False  # ask for the password in clear text (AuthenticationCleartextPassword) first
    passwords: list[str] = field(default_factory=list)  # every password a client sent
    queries: list[str] = field(default_factory=list)  # every query received, in order
    startups: list[dict[str, str]] = field(default_factory=list)  # every startup packet's parameters
    _listener: socket.socket | None = None
    _clients: list[socket.socket] = field(default_factory=list)
    _stopping: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)

    @property
    def port(self) -> int:
        assert self._listener is not None
        return PORT if self.unix_dir is not None else int(self._listener.getsockname()[1])

    def dsn(self, extra: str = "") -> str:
        host = str(self.unix_dir) if self.unix_dir is not None else "127.0.0.1"
        return f"host={host} port={self.port} dbname=postgres user=postgres sslmode=disable {extra}".strip()

    def __enter__(self) -> FakeServer:
        if self.unix_dir is not None:
            self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self._listener.bind(str(self.unix_dir / f".s.PGSQL.{PORT}"))
        else:
            self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(8)
        self._start(self._accept_loop)
        return self

    def __exit__(self, *_: object) -> None:
        self._stopping.set()
        assert self._listener is not None
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        for client in list(self._clients):
            with contextlib.suppress(OSError):
                client.shutdown(socket.SHUT_RDWR)
        for thread in self._threads:
            thread.join(timeout=5)
        if self.unix_dir is not None:
            with contextlib.suppress(FileNotFoundError):
                (self.unix_dir / f".s.PGSQL.{PORT}").unlink()

    def serve_forever(self) -> None:
        """Serve until killed (the process form)."""
        self.__enter__()
        while True:
            time.sleep(3600)

    def _start(self, target: Callable[..., None], *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _accept_loop(self) -> None:
        assert self._listener is not None
        while not self._stopping.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            self._clients.append(client)
            self._start(self._session, client)

    def _session(self, client: socket.socket) -> None:
        with contextlib.suppress(ConnectionError, OSError), client:
            if not self._startup(client):
                return
            # the extended protocol's query (Parse, Bind, Describe, Execute, then Sync), its reply, and whether it
            # failed: what follows up to Sync is then skipped, as a server does
            extended: Rows | None = None
            failed = False
            while not self._stopping.is_set():
                kind = _read_exactly(client, 1)
                length = struct.unpack("!i", _read_exactly(client, 4))[0]
                payload = _read_exactly(client, length - 4)
                if kind == b"X":
                    return
                if kind == b"S":
                    client.sendall(READY)
                    extended, failed = None, False
                    continue
                if failed or kind in (b"H", b"C"):
                    continue
                if kind not in (b"Q", b"P"):
                    if kind == b"B":
                        client.sendall(_message(b"2", b""))
                    elif kind == b"D" and extended is not None:
                        client.sendall(_row_description(extended))
                    elif kind == b"E" and extended is not None:
                        client.sendall(_data_rows(extended))
                    continue
                # Parse: the statement's name, then the query; a simple Query: the query alone
                query = (payload.split(b"\0", 2)[1] if kind == b"P" else payload.rstrip(b"\0")).decode()
                self.queries.append(query)
                reply = self.answer(query)
                if isinstance(reply, Hang):
                    self._stopping.wait()
                    return
                if isinstance(reply, Drop):
                    client.shutdown(socket.SHUT_RDWR)
                    return
                if kind == b"Q":
                    client.sendall((_rows(reply) if isinstance(reply, Rows) else _error(reply)) + READY)
                elif isinstance(reply, Rows):
                    extended = reply
                    client.sendall(_message(b"1", b""))
                else:
                    client.sendall(_error(reply))
                    failed = True

    def _startup(self, client: socket.socket) -> bool:
        while True:
            length = struct.unpack("!i", _read_exactly(client, 4))[0]
            payload = _read_exactly(client, length - 4)
            code = struct.unpack("!i", payload[:4])[0]
            if code in (SSL_REQUEST, GSSENC_REQUEST):
                client.sendall(b"N")
                continue
            if code == CANCEL_REQUEST:
                return False
            break
        words = payload[4:].split(b"\0")[:-2]  # name, value, …, then the empty name that ends the list
        self.startups.append({key.decode(): value.decode()
                              for key, value in zip(words[0::2], words[1::2], strict=True)})
        if self.ask_password:
            client.sendall(_message(b"R", struct.pack("!i", 3)))
            if _read_exactly(client, 1) != b"p":
                return False
            length = struct.unpack("!i", _read_exactly(client, 4))[0]
            self.passwords.append(_read_exactly(client, length - 4).rstrip(b"\0").decode())
        if self.refusal is not None:
            client.sendall(_error(Error(self.refusal, "28000")))
            return False
        if code != PROTOCOL_3_0:  # a newer minor version: say 3.0 is what is spoken
            client.sendall(_message(b"v", struct.pack("!ii", PROTOCOL_3_0, 0)))
        parameters = {"server_version": self.server_version, "server_encoding": "UTF8", "client_encoding": "UTF8",
                      "DateStyle": "ISO, MDY", "integer_datetimes": "on", "standard_conforming_strings": "on",
                      "TimeZone": "UTC", "application_name": "pgvet"}
        client.sendall(_message(b"R", struct.pack("!i", 0))
                       + b"".join(_message(b"S", _cstring(key) + _cstring(value)) for key, value in parameters.items())
                       + _message(b"K", struct.pack("!ii", os.getpid(), 42)) + READY)
        return True


# --- the process form: a fake postmaster ------------------------------------------------------------------


def _reply_from_json(value: dict[str, Any]) -> Reply:
    kind = value["kind"]
    if kind == "rows":
        return Rows(tuple((name, oid) for name, oid in value["columns"]), tuple(tuple(row) for row in value["rows"]))
    if kind == "error":
        return Error(value["message"], value.get("sqlstate", "42501"))
    return Hang() if kind == "hang" else Drop()


def _reply_to_json(reply: Reply) -> dict[str, Any]:
    if isinstance(reply, Rows):
        return {"kind": "rows", "columns": [list(column) for column in reply.columns],
                "rows": [list(row) for row in reply.rows]}
    if isinstance(reply, Error):
        return {"kind": "error", "message": reply.message, "sqlstate": reply.sqlstate}
    return {"kind": "hang" if isinstance(reply, Hang) else "drop"}


@contextlib.contextmanager
def serve_in_process(answers: Mapping[str, Reply], *, data: Path, socket_dir: Path, argv: list[str],
                     user: str | None = None) -> Iterator[subprocess.Popen[bytes]]:
    """This module as a process with ``argv`` after its name, working in ``data`` (as a postmaster works in its
    data directory), listening on ``socket_dir``/.s.PGSQL.5432, with a postmaster.pid that names it. ``user``:
    the account it runs as (we may be root)."""
    spec = socket_dir / "answers.json"
    spec.write_text(json.dumps({key: _reply_to_json(reply) for key, reply in answers.items()}))
    # Another user may not reach this interpreter (under /root, say): the system's runs this module, which
    # needs nothing but the standard library.
    python = "/usr/bin/python3" if user is not None and Path("/usr/bin/python3").exists() else sys.executable
    process = subprocess.Popen([python, __file__, *argv], cwd=data, user=user,
                               env={**os.environ, "FAKEPG_ANSWERS": str(spec), "FAKEPG_SOCKET_DIR": str(socket_dir)})
    try:
        deadline = time.monotonic() + 30
        # connectable, not only named: the socket's name appears at bind, before it listens (a client then had
        # "Connection refused" under load); the probe's session ends quietly when it closes
        while not _accepts(socket_dir / f".s.PGSQL.{PORT}"):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the fake server did not start")
            time.sleep(0.02)
        (data / "postmaster.pid").write_text(f"{process.pid}\n{data}\n1769076900\n{PORT}\n{socket_dir}\n")
        yield process
    finally:
        process.kill()
        process.wait(timeout=30)


def _accepts(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(str(path))
        except OSError:
            return False
    return True


def main() -> None:
    answers = {key: _reply_from_json(value)
               for key, value in json.loads(Path(os.environ["FAKEPG_ANSWERS"]).read_text()).items()}
    FakeServer(answers_with(answers), unix_dir=Path(os.environ["FAKEPG_SOCKET_DIR"])).serve_forever()


if __name__ == "__main__":
    main()
