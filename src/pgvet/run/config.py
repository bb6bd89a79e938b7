"""pgvet's configuration: ``.pgvet.toml`` or ``[tool.pgvet]`` in ``pyproject.toml``.

Looked up from the current directory upwards (the first file that has pgvet settings wins), up to the
repository's root (the first directory holding ``.git``), or given with ``--config``. A file found so is not
trusted as one given is: it is ignored, and said so on stderr, when another user than you or root owns it or may
write it or its directory (a file planted in /tmp) or when it is a link out of its repository, and the paths it
names (``rules``, ``baseline``, ``ignore-file``) must stay in its repository (``rules = ["/etc/shadow"]`` in a
cloned repository is refused). Command-line options override the file. Example::

    [tool.pgvet]
    select = ["os", "PGV1"]          # ids, id prefixes, names or tags
    ignore = ["swappiness-too-high"]
    fail-on = "warning"
    rules = ["ops/pgvet-rules"]      # extra rule packs, relative to the file
    [tool.pgvet.params.commit-limit-too-high]
    max_ratio = 0.85
"""

from __future__ import annotations

import os
import sys
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pgvet.engine.evaluate import ParamOverrides, Plan, configure, plan_rules
from pgvet.engine.loader import RULE_SUFFIXES
from pgvet.engine.pack import RulePack
from pgvet.errors import UsageError
from pgvet.findings import RuleMeta
from pgvet.inputs.reading import read_input
from pgvet.paths import is_inside, repository_of
from pgvet.provenance import Source
from pgvet.report import visible
from pgvet.trust import why_untrusted

SEVERITIES = ("info", "warning", "error")
KNOWN_KEYS = frozenset({"select", "ignore", "fail-on", "rules", "params", "baseline", "ignore-file"})


@dataclass(slots=True, eq=False, repr=False)
class Config:
    select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    fail_on: str = "warning"
    rules: list[Path] = field(default_factory=list)
    params: dict[str, dict[str, Any]] = field(default_factory=dict)
    baseline: Path | None = None
    ignore_file: Path | None = None
    path: Path | None = None  # the file it was read from
    repository: Path | None = None  # a found configuration's: its rule packs are read beneath it


# A configuration is a few dozen lines; a pyproject.toml a few kB. More is not read (a 1 GB file was read whole).
MAX_CONFIG_BYTES = 1024 * 1024


def _read_bytes(path: Path) -> bytes:

    try:
        data, status = read_input(str(path), MAX_CONFIG_BYTES)
    except OSError as error:
        raise UsageError(f"cannot read configuration: {error.strerror or error}", Source(str(path))) from None
    if len(data) > MAX_CONFIG_BYTES or status.st_size > MAX_CONFIG_BYTES:
        raise UsageError(f"more than {MAX_CONFIG_BYTES} bytes, more than pgvet reads", Source(str(path)))
    return data


def _read_toml(path: Path) -> dict[str, Any]:
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


CONFIG_NAMES = (".pgvet.toml", "pgvet.toml", "pyproject.toml")


def find_config(start: Path, ignored: list[str] | None = None) -> Path | None:
    """The first configuration file from ``start`` upwards that no other user could have written, not above the
    repository's root (the first directory holding ``.git``, a directory or a worktree's file) and, in a
    repository, inside it (a link of the repository's leading out is not followed). Each file passed over is said
    in ``ignored``."""
    repository = repository_of(os.fspath(start))
    real_repository = os.path.realpath(repository) if repository is not None else None
    for directory in (start, *start.parents):
        for name in CONFIG_NAMES:
            candidate = directory / name
            if not candidate.is_file():
                continue
            real = os.path.realpath(candidate)
            if real_repository is not None and not is_inside(real, real_repository):
                # `.pgvet.toml -> /etc/shadow`: read as root, its key names and values reached the errors
                if ignored is not None:
                    ignored.append(f"{candidate} ignored: a symbolic link that leads out of its repository "
                                   f"{repository}; give it with --config to use it")
                continue
            why = _why_untrusted(candidate)
            if why is not None:
                if ignored is not None:
                    ignored.append(f"{candidate} ignored: {why}; give it with --config to use it")
                continue
            if name != "pyproject.toml" or b"[tool.pgvet" in _read_bytes(candidate):
                return candidate
        if os.path.lexists(directory / ".git"):
            return None
    return None


def _why_untrusted(path: Path) -> str | None:
    """Why another user than you or root could have written ``path`` (its real file) or put it where it is (its
    real directory), None when no one could."""
    real = os.path.realpath(path)
    try:
        why = why_untrusted(os.stat(real), real, root_trusted=True)
        if why is None:
            directory = os.path.dirname(real)
            why = why_untrusted(os.stat(directory), directory, root_trusted=True)
            return None if why is None else f"its directory {directory} is {why}"
    except OSError as error:
        return f"cannot be examined: {error.strerror}"
    return why


def repository_root(directory: Path) -> Path:
    """The first directory from ``directory`` upwards that holds ``.git``, else ``directory`` itself."""
    found = repository_of(os.fspath(directory))
    return Path(found) if found is not None else directory


def _inside(path: Path, root: str) -> bool:
    real = os.path.realpath(path)
    return real == root or is_inside(real, root)


def _refuse_outside(key: str, named: str, path: Path, root: Path, config: Path) -> None:
    """A path a found configuration names must be in its repository, a rule pack's files included: else it
    could make pgvet read (and an error quote) any file of the machine it runs on."""
    real_root = os.path.realpath(root)
    outside = not _inside(path, real_root)
    if not outside and key == "rules" and path.is_dir():
        try:
            entries = list(path.iterdir())
        except OSError:  # the loader says why it cannot be read
            entries = []
        outside = any(entry.suffix in RULE_SUFFIXES and not _inside(entry, real_root) for entry in entries)
    if outside:
        raise UsageError(f"'{key}' names {named}, which is outside the repository {root} (a configuration found "
                         "by itself may name only its repository's files; give it with --config to trust it)",
                         Source(str(config)))
    if _in_git_directory(path, real_root):
        raise UsageError(f"'{key}' names {named}, which is in a git directory (.git): its files are git's, not the "
                         "repository's (a hook among them runs code); give it with --config to trust it",
                         Source(str(config)))


def _in_git_directory(path: Path, real_root: str) -> bool:
    """Whether ``path``, links resolved, lies in a ``.git`` of the repository (its own or a repository's within):
    a clone brings no file there (git refuses the name in a tree), so a configuration naming one names the user's
    hooks and git's configuration, and a baseline written over an installed hook ran as a shell script."""
    relative = os.path.relpath(os.path.realpath(path), real_root)
    return any(part.casefold() == ".git" for part in relative.split(os.sep))


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
    """The configuration given (trusted as it is), else the one found from ``start`` (the current directory)."""
    ignored: list[str] = []
    path = explicit or find_config((start or Path.cwd()).absolute(), ignored)
    if ignored:
        for notice in ignored:
            print(visible(f"pgvet: notice: {notice}"), file=sys.stderr)
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
    named = [("rules", item) for item in strings("rules")]
    named += [(key, value) for key, value in (("baseline", baseline), ("ignore-file", ignore_file))
              if isinstance(value, str)]
    root = None
    if explicit is None:
        root = repository_root(base)
        for key, item in named:
            _refuse_outside(key, item, base / item, root, path)
    return Config(
        select=strings("select"),
        ignore=strings("ignore"),
        fail_on=fail_on,
        rules=[base / item for key, item in named if key == "rules"],
        params=params,
        baseline=base / baseline if isinstance(baseline, str) else None,
        ignore_file=base / ignore_file if isinstance(ignore_file, str) else None,
        path=path,
        repository=root,
    )


def configured_rules(pack: RulePack, params: ParamOverrides, path: Path | None,
                     selected: Callable[[RuleMeta], bool] | None = None) -> tuple[RulePack, Plan]:
    """The pack with the configuration's parameters of derived values, and its rules to evaluate with theirs (those
    ``selected``); a parameter that is wrong is an error naming the configuration file ``path`` they came from."""
    try:
        configured = configure(pack, params)
        return configured, plan_rules(configured, params, selected)
    except UsageError as error:
        raise UsageError(error.message, error.source or (Source(str(path)) if path is not None else None)) from None
