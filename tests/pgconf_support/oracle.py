"""A running PostgreSQL server used as the judge of pgvet's postgresql.conf parser.

One server per major version, started once and reused: its ``postgresql.conf`` (and
``postgresql.auto.conf``) are overwritten with the files under test and ``pg_file_settings`` is
queried, which makes PostgreSQL re-read them from disk on every query (no reload, no restart).
The generated files live in the server's data directory, so relative includes resolve.
"""

from __future__ import annotations

import atexit
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import psycopg

import pgservers
from pgvet.inputs.postgresql_conf import ConfResult, load_conf

# pg_file_settings error texts (record_config_file_error) and pgvet's problem kinds.
ERROR_KINDS = {
    "syntax error": "syntax",
    "nesting depth exceeded": "depth",
    "empty configuration file name": "empty-include",
    "empty configuration directory name": "empty-include-dir",
    "configuration file recursion": "recursion",
    "input in flex scanner failed": "unreadable",
}
ERROR_PREFIXES = {
    'could not open file "': "missing-include",
    'could not open directory "': "missing-include-dir",
    'could not stat file "': "unreadable",
}
# Problem kinds that PostgreSQL records as pg_file_settings rows; the others are pgvet's own notes.
RECORDED_KINDS = frozenset({"syntax", "depth", "recursion", "empty-include", "empty-include-dir", "missing-include",
                            "missing-include-dir", "unreadable"})
# What the postmaster logs about reading the files (other LOG lines judge values, not the parser).
STARTUP_PREFIXES = ("syntax error in file", "too many syntax errors", "could not open configuration",
                    "skipping missing configuration file", "configuration file recursion", "empty configuration",
                    "input in flex scanner failed", "could not stat file")
STARTUP_KINDS = RECORDED_KINDS | {"too-many-errors", "missing-include-if-exists"}
PRESERVED = ("PG_VERSION", "base", "global", "pg_wal", "pg_xact", "pg_multixact", "pg_subtrans", "pg_tblspc",
             "pg_twophase", "pg_stat", "pg_stat_tmp", "pg_logical", "pg_replslot", "pg_snapshots", "pg_serial",
             "pg_notify", "pg_commit_ts", "pg_dynshmem", "pg_hba.conf", "pg_ident.conf", "postmaster.pid",
             "postmaster.opts", "server.log")

Row = tuple[str, str, str | None, int | None]  # (what, name-or-kind, file, line)


@dataclass
class Oracle:
    major: int
    data: Path
    socket_dir: Path
    port: int
    connection: psycopg.Connection[tuple[object, ...]]

    @classmethod
    def start(cls, major: int) -> Oracle:
        data = pgservers.fresh_cluster(major)
        socket_dir = pgservers.make_tempdir("pgvet-sock-")
        port = 5432 + major  # the socket directory is private, so any port number is free
        options = f"-c listen_addresses='' -c unix_socket_directories='{socket_dir}' -p {port} -c fsync=off"
        result = pgservers.run(major, "pg_ctl", ["-D", str(data), "-o", options, "-w", "-t", "60", "-l",
                                                 str(data / "server.log"), "start"], timeout=90)
        if result.returncode != 0:
            log = (data / "server.log").read_text(errors="replace") if (data / "server.log").exists() else ""
            raise RuntimeError(f"PostgreSQL {major} did not start: {result.stderr}\n{log}")
        for _ in range(100):
            try:
                connection = psycopg.connect(host=str(socket_dir), port=port, user="postgres", dbname="postgres",
                                             autocommit=True)
                break
            except psycopg.OperationalError:
                time.sleep(0.1)
        else:
            raise RuntimeError(f"cannot connect to PostgreSQL {major}")
        return cls(major, data, socket_dir, port, connection)

    def stop(self) -> None:
        self.connection.close()
        pgservers.run(self.major, "pg_ctl", ["-D", str(self.data), "-m", "immediate", "stop"], timeout=60)
        shutil.rmtree(self.data.parent, ignore_errors=True)
        shutil.rmtree(self.socket_dir, ignore_errors=True)

    def install(self, files: dict[str, bytes]) -> None:
        """Replace the configuration tree: ``files`` maps paths relative to the data directory to bytes.

        ``postgresql.conf`` must be among them; ``postgresql.auto.conf`` is removed unless given.
        """
        for entry in self.data.iterdir():
            if entry.name in PRESERVED:
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
        for relative, content in files.items():
            target = self.data / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
        pgservers.chown_tree(self.data)

    def file_settings(self) -> tuple[list[Row], list[Row]]:
        """pg_file_settings as (settings, recorded errors), each in PostgreSQL's order.

        Names and values are read as raw bytes (textsend) and decoded as pgvet decodes them, so
        octal escapes giving invalid UTF-8 compare too.
        """
        settings: list[Row] = []
        errors: list[Row] = []
        query = ("SELECT sourcefile, sourceline, textsend(name), textsend(setting), error FROM pg_file_settings"
                 " ORDER BY seqno")
        for sourcefile, sourceline, name, setting, error in self.connection.execute(query).fetchall():
            path = self.relative(sourcefile)
            if name is not None:
                settings.append(("set", f"{_text(name).lower()}={_text(setting)}", path, sourceline))
                continue
            message = str(error)
            if message.startswith('parameter "'):  # a startup-only parameter missing: not the parser's
                continue
            errors.append(("error", error_kind(message), path, sourceline))
        return settings, errors

    def startup_messages(self) -> list[str]:
        """What the postmaster logs about the configuration files at start (``postgres -C``)."""
        result = pgservers.run(self.major, "postgres", ["-D", str(self.data), "-C", "work_mem"], timeout=60)
        messages = []
        for line in result.stderr.splitlines():
            _, marker, message = line.partition("LOG:  ")
            if marker and message.startswith(STARTUP_PREFIXES) and not _about_auto_conf(message):
                messages.append(message)
        return messages

    def relative(self, path: object) -> str | None:
        if path is None:
            return None
        text = str(path)
        base = str(self.data)
        return os.path.relpath(text, base) if text == base or text.startswith(base + os.sep) else text

    def pgvet(self) -> ConfResult:
        """pgvet's reading of the same files, as pg_file_settings sees them (PostgreSQL has no root)."""
        auto = self.data / "postgresql.auto.conf"
        return load_conf(self.data / "postgresql.conf", root=Path("/"), auto_conf=auto, display_base=self.data,
                         syntax_error_limit=1)

    def pgvet_startup_messages(self) -> list[str]:
        """pgvet's problems as the postmaster would log them (PostgreSQL's absolute paths).

        The postmaster reads the files twice: first without auto.conf (to find data_directory),
        then, unless that first pass failed, everything again with auto.conf.
        """
        main = self.data / "postgresql.conf"
        first = load_conf(main, root=Path("/"))
        passes = [first]
        if not any(problem.fatal for problem in first.problems):
            passes.append(load_conf(main, root=Path("/"), auto_conf=self.data / "postgresql.auto.conf"))
        return [problem.message for result in passes for problem in result.problems
                if problem.kind in STARTUP_KINDS and not _about_auto_conf(problem.message)]


_RUNNING: dict[int, Oracle] = {}


def shared_oracle(major: int) -> Oracle:
    """The one server of a major version for the whole test run (stopped when the run ends)."""
    if major not in _RUNNING:
        _RUNNING[major] = Oracle.start(major)
        atexit.register(_RUNNING[major].stop)
    return _RUNNING[major]


def _about_auto_conf(message: str) -> bool:
    """A missing auto.conf: where PostgreSQL looks for it depends on data_directory in the file under
    test, while pgvet is told where it is; the message is left out of the comparison."""
    return message.startswith("skipping missing") and message.endswith('/postgresql.auto.conf"')


def error_kind(message: str) -> str:
    if message in ERROR_KINDS:
        return ERROR_KINDS[message]
    for prefix, kind in ERROR_PREFIXES.items():
        if message.startswith(prefix):
            return kind
    return f"other: {message}"


def _text(raw: object) -> str:
    return bytes(raw).decode("utf-8", "backslashreplace") if isinstance(raw, bytes | memoryview) else ""


def pgvet_rows(result: ConfResult) -> tuple[list[Row], list[Row]]:
    """pgvet's result in the shape of Oracle.file_settings: (settings, errors PostgreSQL records)."""
    settings: list[Row] = [("set", f"{setting.name.lower()}={setting.value}", setting.source.path,
                            setting.source.line) for setting in result.settings]
    errors: list[Row] = [("error", problem.kind, problem.source.path if problem.source.line is not None else None,
             problem.source.line) for problem in result.problems if problem.kind in RECORDED_KINDS]
    return settings, errors
