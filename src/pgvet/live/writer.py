"""Lay out a snapshot directory: pg_settings.json (format 1), copies of the server's configuration
files, the OS files, and the collect.json manifest (docs/live.md describes all of them)."""

from __future__ import annotations

import contextlib
import errno
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pgvet.errors import InputError
from pgvet.live.host import HostFile
from pgvet.live.server import ServerReading
from pgvet.paths import make_directories

PG_SETTINGS_FORMAT = 1
MANIFEST_FORMAT = 1


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _object_lines(members: dict[str, Any], indent: str) -> str:
    """A JSON object with one member per line."""
    if not members:
        return "{}"
    lines = [f"{indent}  {_compact(key)}: {_compact(value)}" for key, value in members.items()]
    return "{\n" + ",\n".join(lines) + f"\n{indent}}}"


def _array_lines(rows: Iterable[Any], indent: str) -> str:
    """A JSON array with one element per line (so a setting's provenance can be its line)."""
    lines = [f"{indent}  {_compact(row)}" for row in rows]
    return "[\n" + ",\n".join(lines) + f"\n{indent}]" if lines else "[]"


def _rows_or_null(rows: list[dict[str, Any]] | None) -> str:
    return "null" if rows is None else _array_lines(rows, "  ")


def render_pg_settings_json(reading: ServerReading, *, collected_at: str, pgvet_version: str) -> str:
    """pg_settings.json: small values first, then one settings row per line, then pg_file_settings."""
    top: list[tuple[str, str]] = [
        ("format", _compact(PG_SETTINGS_FORMAT)),
        ("pgvet_version", _compact(pgvet_version)),
        ("collected_at", _compact(collected_at)),
        ("dsn", _compact(reading.dsn)),
        ("connection", _object_lines(reading.connection, "  ")),
        ("server", _object_lines(reading.server, "  ")),
        ("statistics", _object_lines(reading.statistics, "  ")),
        ("unavailable", _array_lines(reading.unavailable, "  ")),
        ("databases", _array_lines(reading.databases, "  ")),
        ("settings", _array_lines(reading.settings, "  ")),
        ("file_settings", _rows_or_null(reading.file_settings)),
        ("role_settings", _rows_or_null(reading.role_settings)),
        ("replication_slots", _rows_or_null(reading.replication_slots)),
        ("prepared_transactions", _rows_or_null(reading.prepared_transactions)),
        ("idle_sessions", _rows_or_null(reading.idle_sessions)),
        ("invalid_indexes", _rows_or_null(reading.invalid_indexes)),
        ("command_line", "null" if reading.command_line is None else _object_lines(reading.command_line, "  ")),
    ]
    return "{\n" + ",\n".join(f"  {_compact(key)}: {value}" for key, value in top) + "\n}\n"


def copied_from(manifest: dict[str, Any]) -> dict[str, str]:
    """Each configuration file copied into a snapshot (its name there) with the server file it copies, as
    collect.json records them."""
    return {str(each["name"]): str(each["server_file"]) for each in manifest.get("files", [])
            if isinstance(each, dict) and each.get("server_file") and each.get("name")}


_DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def _parts(name: str) -> list[str]:
    parts = name.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise ValueError(f"not a name inside the snapshot: {name!r}")  # names are pgvet's own: a bug
    return parts


class SnapshotDirectory:
    """The output directory, held open: created 0700 (or an empty one of the user's, made 0700), every file in
    it new (O_EXCL) and 0600, every subdirectory 0700, nothing reached through a link; what was written can
    be taken back (``discard``). InputError for what the user must fix."""

    def __init__(self, path: Path, descriptor: int, created: bool) -> None:
        self.path = path
        self.descriptor = descriptor
        self.created = created
        self.made: list[str] = []  # files and directories written, in order

    @classmethod
    def create(cls, path: Path) -> SnapshotDirectory:
        """A new directory, or an existing empty one that belongs to this user."""
        created = False
        try:
            if not path.exists() and not path.is_symlink():
                make_directories(path.parent, 0o755)  # not 0777 under umask 000, as Path.mkdir makes parents
                path.mkdir(mode=0o700)
                created = True
        except FileExistsError:
            pass  # made meanwhile: judged below as an existing directory
        except OSError as error:
            raise InputError(f"cannot create {path}: {error.strerror or error}") from None
        snapshot = cls.open(path, created)
        if os.listdir(snapshot.descriptor):
            snapshot.close()
            raise InputError(f"output directory {path} is not empty: give a new or empty one")
        os.fchmod(snapshot.descriptor, 0o700)
        return snapshot

    @classmethod
    def open(cls, path: Path, created: bool = False) -> SnapshotDirectory:
        """An existing snapshot directory of this user's, to add files to."""
        try:
            descriptor = os.open(path, _DIRECTORY_FLAGS)
        except OSError as error:
            if path.is_symlink():
                raise InputError(f"output {path} is a symbolic link: give a directory") from None
            if error.errno == errno.ENOTDIR:
                raise InputError(f"output {path} exists and is not a directory") from None
            raise InputError(f"cannot open {path}: {error.strerror or error}") from None
        if os.fstat(descriptor).st_uid != os.geteuid():
            os.close(descriptor)
            raise InputError(f"output directory {path} belongs to another user: give a new one")
        return cls(path, descriptor, created)

    def close(self) -> None:
        os.close(self.descriptor)

    def _directory(self, parts: list[str], make: bool) -> int:
        """A descriptor of the subdirectory ``parts`` (made 0700 when ``make``); the caller closes it."""
        current = os.dup(self.descriptor)
        for index, part in enumerate(parts):
            if make:
                try:
                    os.mkdir(part, 0o700, dir_fd=current)
                    self.made.append("/".join(parts[:index + 1]))
                except FileExistsError:
                    pass
            try:
                opened = os.open(part, _DIRECTORY_FLAGS, dir_fd=current)
            finally:
                os.close(current)
            current = opened
        return current

    def make_directory(self, name: str) -> None:
        """A subdirectory ``name`` (``conf.d``), empty unless files are written in it."""
        try:
            os.close(self._directory(_parts(name), make=True))
        except OSError as error:
            raise InputError(f"cannot create {self.path / name}: {error.strerror or error}") from None

    def write(self, name: str, text: str) -> None:
        """A new file ``name`` (``conf.d/10-memory.conf``) holding ``text``."""
        parts = _parts(name)
        try:
            directory = self._directory(parts[:-1], make=True)
            try:
                descriptor = os.open(parts[-1], _NEW_FILE_FLAGS, 0o600, dir_fd=directory)
            finally:
                os.close(directory)
            self.made.append(name)
            with open(descriptor, "wb", closefd=True) as handle:
                handle.write(text.encode("utf-8", "surrogateescape"))
        except OSError as error:
            raise InputError(f"cannot write {self.path / name}: {error.strerror or error}") from None

    def discard(self) -> None:
        """Remove what was written (and the directory, when it was made here): nothing half-written is left."""
        for name in reversed(self.made):
            parts = name.split("/")
            with contextlib.suppress(OSError):
                directory = self._directory(parts[:-1], make=False)
                try:
                    try:
                        os.unlink(parts[-1], dir_fd=directory)
                    except IsADirectoryError:
                        os.rmdir(parts[-1], dir_fd=directory)
                finally:
                    os.close(directory)
        self.made.clear()
        if self.created:
            with contextlib.suppress(OSError):
                self.path.rmdir()


def write_text(directory: Path, name: str, text: str) -> None:
    """Add a new file to an existing snapshot directory (pgvet check's host.yaml)."""
    snapshot = SnapshotDirectory.open(directory)
    try:
        snapshot.write(name, text)
    finally:
        snapshot.close()


def render_manifest(*, pgvet_version: str, hostname: str, page_size: int, started_at: str, finished_at: str,
                    command: str, files: list[HostFile], failed: list[dict[str, str]],
                    server: dict[str, Any] | None) -> str:
    """collect.json: what was read, when and how, what failed and why; the kernel's base page size, which no other
    file of a snapshot shows."""
    written = [{"name": each.name, "how": each.how, "read_at": each.read_at,
                "bytes": len(each.text.encode("utf-8", "surrogateescape")),
                **({"server_file": each.server_file} if each.server_file else {}),
                **({"warnings": each.warnings} if each.warnings else {})}
               for each in files if each.text is not None and not each.directory]
    failures = [{"name": each.name, "how": each.how, "read_at": each.read_at, "error": each.error or "",
                 **({"warnings": each.warnings} if each.warnings else {})}
                for each in files if each.text is None]
    document = {
        "format": MANIFEST_FORMAT,
        "pgvet_version": pgvet_version,
        "hostname": hostname,
        "page_size": page_size,
        "command": command,
        "started_at": started_at,
        "finished_at": finished_at,
        "uid": os.geteuid(),
        "files": written,
        "failed": failures + failed,
        "server": server,
    }
    return json.dumps(document, ensure_ascii=False, indent=2) + "\n"
