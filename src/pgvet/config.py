"""pgvet's configuration: ``.pgvet.toml`` or ``[tool.pgvet]`` in ``pyproject.toml``.

Looked up from the current directory upwards (the first file that has pgvet settings wins), or given
with ``--config``. Command-line options override the file. Example::

    [tool.pgvet]
    select = ["os", "PGV1"]          # ids, id prefixes, names or tags
    ignore = ["swappiness-too-high"]
    fail-on = "warning"
    rules = ["ops/pgvet-rules"]      # extra rule packs, relative to the file
    [tool.pgvet.params.commit-limit-too-high]
    max_ratio = 0.85
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pgvet.errors import UsageError
from pgvet.provenance import Source

SEVERITIES = ("info", "warning", "error")
KNOWN_KEYS = frozenset({"select", "ignore", "fail-on", "rules", "params", "baseline", "ignore-file"})


@dataclass(slots=True)
class Config:
    select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    fail_on: str = "warning"
    rules: list[Path] = field(default_factory=list)
    params: dict[str, dict[str, Any]] = field(default_factory=dict)
    baseline: Path | None = None
    ignore_file: Path | None = None
    path: Path | None = None  # the file it was read from


# A configuration is a few dozen lines; a pyproject.toml a few kB. More is not read (a 1 GB file was read whole).
MAX_CONFIG_BYTES = 1024 * 1024


def _read_bytes(path: Path) -> bytes:
    from pgvet.sources import read_file_at_most

    try:
        data = read_file_at_most(str(path), path.stat(), MAX_CONFIG_BYTES)
    except OSError as error:
        raise UsageError(f"cannot read configuration: {error.strerror or error}", Source(str(path))) from None
    if len(data) > MAX_CONFIG_BYTES:
        raise UsageError(f"more than {MAX_CONFIG_BYTES} bytes, more than pgvet reads", Source(str(path)))
    return data


def _read_toml(path: Path) -> dict[str, Any]:
    import tomllib

    data = _read_bytes(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise UsageError("invalid TOML: not valid UTF-8", Source(str(path), data.count(b"\n", 0, error.start) + 1),
                         ) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        line = getattr(error, "lineno", None)
        raise UsageError(f"invalid TOML: {error}", Source(str(path), line)) from None
    except RecursionError:  # tomllib recurses into nested arrays and inline tables
        raise UsageError("invalid TOML: arrays or tables nested too deep", Source(str(path))) from None


def find_config(start: Path) -> Path | None:
    for directory in (start, *start.parents):
        for name in (".pgvet.toml", "pgvet.toml"):
            if (directory / name).is_file():
                return directory / name
        pyproject = directory / "pyproject.toml"
        if pyproject.is_file() and b"[tool.pgvet" in _read_bytes(pyproject):
            return pyproject
    return None


def _table(document: dict[str, Any], path: Path) -> dict[str, Any]:
    """pgvet's table: the document of a .pgvet.toml, ``[tool.pgvet]`` of a pyproject.toml."""
    if path.name != "pyproject.toml":
        return document
    tool = document.get("tool", {})
    table = tool.get("pgvet", {}) if isinstance(tool, dict) else None
    if not isinstance(table, dict):
        raise UsageError("'tool.pgvet' must be a table: [tool.pgvet]", Source(str(path)))
    return table


def load_config(explicit: Path | None = None, start: Path | None = None) -> Config:
    path = explicit or find_config(start or Path.cwd())
    if path is None:
        return Config()
    document = _read_toml(path)
    table = _table(document, path)
    unknown = sorted(set(table) - KNOWN_KEYS)
    if unknown:
        raise UsageError(f"unknown configuration keys: {', '.join(unknown)} (known: {', '.join(sorted(KNOWN_KEYS))})",
                         Source(str(path)))
    base = path.parent

    def strings(key: str) -> list[str]:
        value = table.get(key, [])
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise UsageError(f"'{key}' must be a list of strings", Source(str(path)))
        return value

    fail_on = table.get("fail-on", "warning")
    if fail_on not in SEVERITIES:
        raise UsageError(f"'fail-on' must be one of {', '.join(SEVERITIES)}", Source(str(path)))
    params = table.get("params", {})
    if not isinstance(params, dict) or not all(isinstance(value, dict) for value in params.values()):
        raise UsageError("'params' must be a table of tables: [tool.pgvet.params.RULE]", Source(str(path)))
    baseline = table.get("baseline")
    ignore_file = table.get("ignore-file")
    for key, value in (("baseline", baseline), ("ignore-file", ignore_file)):
        if value is not None and not isinstance(value, str):
            raise UsageError(f"'{key}' must be a path (a string)", Source(str(path)))
    return Config(
        select=strings("select"),
        ignore=strings("ignore"),
        fail_on=fail_on,
        rules=[base / item for item in strings("rules")],
        params=params,
        baseline=base / baseline if isinstance(baseline, str) else None,
        ignore_file=base / ignore_file if isinstance(ignore_file, str) else None,
        path=path,
    )
