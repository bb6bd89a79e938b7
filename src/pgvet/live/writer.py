"""Lay out a snapshot directory: pg_settings.json (format 1), copies of the server's configuration
files, the OS files, and the collect.json manifest (docs/live.md describes all of them)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import Any

from pgvet.errors import InputError
from pgvet.live.host import HostFile, utc_now
from pgvet.live.server import ServerReading, redact_conf_text

PG_SETTINGS_FORMAT = 1
MANIFEST_FORMAT = 1
# Configuration files outside the server's configuration directory are kept here, by absolute path.
OUTSIDE_CONFIG_DIR = "pgconf-outside"
# pg_postmaster_start_time() and the start time in postmaster.pid are taken a moment apart.
START_TIME_TOLERANCE = 5.0
RESERVED_NAMES = frozenset({"collect.json", "pg_settings.json", "meminfo.txt", "sysctl.txt", "lscpu.txt",
                            "lscpu.json", "mounts.txt", "sysfs.txt", "host.yaml"})


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
        ("file_settings", "null" if reading.file_settings is None else _array_lines(reading.file_settings, "  ")),
    ]
    return "{\n" + ",\n".join(f"  {_compact(key)}: {value}" for key, value in top) + "\n}\n"


def _postmaster_pid_matches(data_directory: str, reading: ServerReading) -> str | None:
    """Why a local data directory is this server's (postmaster.pid start time and port), or None."""
    try:
        lines = (Path(data_directory) / "postmaster.pid").read_text(encoding="utf-8").splitlines()
        started, port = float(lines[2]), int(lines[3])
    except (OSError, ValueError, IndexError):
        return None
    expected_port = next((row["setting"] for row in reading.settings if row["name"] == "port"), None)
    start = reading.postmaster_start_epoch
    if start is None or str(port) != expected_port or abs(started - start) > START_TIME_TOLERANCE:
        return None
    return f"{data_directory}/postmaster.pid matches the server's start time and port"


def server_is_local(reading: ServerReading) -> str | None:
    """Why the server's files on this machine are its own, or None when that cannot be shown."""
    data_directory = reading.server.get("data_directory")
    if data_directory:
        matched = _postmaster_pid_matches(data_directory, reading)
        if matched:
            return matched
    if reading.connection.get("unix_socket"):
        return "connected through a Unix-domain socket"
    return None


def _snapshot_name(server_path: str, config_dir: PurePosixPath, data_directory: PurePosixPath | None) -> str:
    path = PurePosixPath(server_path)
    if data_directory is not None and path == data_directory / "postgresql.auto.conf":
        return "postgresql.auto.conf"
    if path.is_relative_to(config_dir):
        relative = path.relative_to(config_dir).as_posix()
        if relative == "postgresql.auto.conf" or relative not in RESERVED_NAMES:
            return relative
    return f"{OUTSIDE_CONFIG_DIR}/{path.relative_to('/').as_posix() if path.is_absolute() else path.as_posix()}"


def copied_from(manifest: dict[str, Any], settings: dict[str, Any]) -> dict[str, str]:
    """Each configuration file copied into a snapshot (its name there) with the server file it copies:
    the layout of ``config_copies`` read backwards, from collect.json and pg_settings.json as written."""
    server = settings.get("server") or {}
    config_file, data_directory = server.get("config_file"), server.get("data_directory")
    if not config_file:
        return {}
    config_dir = PurePosixPath(config_file).parent
    copies: dict[str, str] = {}
    for each in manifest.get("files", []):
        name = str(each.get("name", ""))
        if not str(each.get("how", "")).startswith("copy "):
            continue
        if name == "postgresql.conf":
            copies[name] = config_file
        elif name == "postgresql.auto.conf" and data_directory:
            copies[name] = f"{data_directory.rstrip('/')}/postgresql.auto.conf"
        elif name.startswith(OUTSIDE_CONFIG_DIR + "/"):
            copies[name] = "/" + name.removeprefix(OUTSIDE_CONFIG_DIR + "/")
        else:
            copies[name] = (config_dir / name).as_posix()
    return copies


def config_copies(reading: ServerReading, server_files: list[str]) -> tuple[list[HostFile], list[dict[str, str]]]:
    """The server's configuration files to copy into the snapshot, and what could not be copied.

    Layout: ``config_file`` becomes ``postgresql.conf`` and files under its directory keep their place
    beside it (so relative includes resolve in the snapshot); ``postgresql.auto.conf`` sits at the top;
    other files go under ``pgconf-outside/<absolute path>``. A primary_conninfo password is replaced by
    ``***``; everything else is copied as it is.
    """
    config_file = reading.server.get("config_file")
    if not config_file:
        return [], [{"what": "configuration files", "error": "the server did not show config_file (see unavailable "
                     "in pg_settings.json)"}]
    local = server_is_local(reading)
    if local is None:
        return [], [{"what": "configuration files", "error": "not copied: cannot show that the server runs on this "
                     "machine (no Unix-socket connection, no matching postmaster.pid)"}]
    config_dir = PurePosixPath(config_file).parent
    data_directory = reading.server.get("data_directory")
    data_path = PurePosixPath(data_directory) if data_directory else None
    copies: list[HostFile] = []
    failures: list[dict[str, str]] = []
    for server_path in server_files:
        name = "postgresql.conf" if server_path == config_file else _snapshot_name(server_path, config_dir, data_path)
        copy = HostFile(name, f"copy {server_path} ({local})", utc_now())
        try:
            copy.text = redact_conf_text(Path(server_path).read_text(encoding="utf-8", errors="surrogateescape"))
        except OSError as error:
            failures.append({"what": server_path, "error": error.strerror or str(error)})
            continue
        copies.append(copy)
    return copies, failures


def prepare_directory(directory: Path) -> None:
    """Create the snapshot directory; InputError when it exists and is not empty, or cannot be made."""
    if directory.exists():
        if not directory.is_dir():
            raise InputError(f"output {directory} exists and is not a directory")
        if any(directory.iterdir()):
            raise InputError(f"output directory {directory} is not empty: give a new or empty one")
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise InputError(f"cannot create {directory}: {error.strerror or error}") from None


def write_text(directory: Path, name: str, text: str) -> None:
    target = directory / name
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "w", encoding="utf-8", errors="surrogateescape", newline="") as handle:
            handle.write(text)
    except OSError as error:
        raise InputError(f"cannot write {target}: {error.strerror or error}") from None


def render_manifest(*, pgvet_version: str, hostname: str, started_at: str, finished_at: str, command: str,
                    files: list[HostFile], failed: list[dict[str, str]], server: dict[str, Any] | None) -> str:
    """collect.json: what was read, when and how, what failed and why."""
    written = [{"name": each.name, "how": each.how, "read_at": each.read_at,
                "bytes": len(each.text.encode("utf-8", "surrogateescape")), **({"warnings": each.warnings}
                                                                              if each.warnings else {})}
               for each in files if each.text is not None]
    failures = [{"name": each.name, "how": each.how, "read_at": each.read_at, "error": each.error or "",
                 **({"warnings": each.warnings} if each.warnings else {})}
                for each in files if each.text is None]
    document = {
        "format": MANIFEST_FORMAT,
        "pgvet_version": pgvet_version,
        "hostname": hostname,
        "command": command,
        "started_at": started_at,
        "finished_at": finished_at,
        "uid": os.geteuid(),
        "files": written,
        "failed": failures + failed,
        "server": server,
    }
    return json.dumps(document, ensure_ascii=False, indent=2) + "\n"
