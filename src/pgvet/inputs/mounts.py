"""Mounted filesystems, from any of: ``/proc/mounts`` (or fstab-like lines), ``mount`` output,
``findmnt -l`` / ``findmnt`` (tree drawing stripped), ``/proc/self/mountinfo``. The format is detected.

``mount`` output with spaces in device or mount point names is split on the last `` type `` before the
option list; macOS ``mount`` lines (``dev on /point (fstype, options)``) are read too. AIX's ``mount``
table is refused: pgvet reads Linux hosts.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

from pgvet.errors import ParseError
from pgvet.provenance import Source


class Mount(NamedTuple):
    """One mounted file system (a named tuple, made cheaply: a host lists tens of them)."""

    device: str
    point: str
    fstype: str
    options: tuple[str, ...]
    source: Source


_OCTAL = re.compile(r"\\([0-7]{3})")
_HEX = re.compile(r"\\x([0-9a-fA-F]{2})")
_NON_BLANKS = re.compile(r"\S*")
_MACOS_STOP = re.compile(r"[,()]")
_TREE = re.compile(r"^[\s│├└─|`-]*")


def _unescape_octal(text: str) -> str:
    """/proc/mounts escapes space, tab, newline and backslash as \\040 \\011 \\012 \\134."""
    if "\\" not in text:
        return text  # nearly every name: no substitution to try
    return _OCTAL.sub(lambda match: chr(int(match.group(1), 8)), text)


def _unescape_hex(text: str) -> str:
    """findmnt escapes unprintable characters and spaces as \\x20."""
    if "\\" not in text:
        return text
    return _HEX.sub(lambda match: chr(int(match.group(1), 16)), text)


# `mount` lines are split by scans from their ends, each character looked at a bounded number of times. The
# patterns they replace (`^(.+?) on (.+) type (\S+) \((.*)\)(?: \[.*\])?$` and the macOS one) backtracked
# over every split of a long line without a match (seconds on one long line); the scans give what they matched:
# the device up to the first " on ", the mount point as long as the rest of the line allows.


def _device_and_point(line: str, point_end: int) -> tuple[str, str] | None:
    """The device (up to the first " on ") and the mount point (up to ``point_end``), neither empty."""
    on = line.find(" on ", 1)
    if on < 0 or point_end < on + 5:
        return None
    return line[:on], line[on + 4:point_end]


def _linux_mount(line: str) -> tuple[str, str, str, str] | None:
    """``dev on /point type fstype (options)``, with an optional `` [label]`` after: device, point, fstype,
    options; None when the line is not one."""
    if line.endswith(")"):
        close = len(line) - 1
    elif line.endswith("]"):
        close = line.rfind(") [")  # the last one: the options run as far as they can
        if close < 0:
            return None
    else:
        return None
    end = close
    while (start := line.rfind(" type ", 0, end)) >= 0:  # the last " type " followed by `fstype (`
        fstype_end = _NON_BLANKS.match(line, start + 6).end()  # type: ignore[union-attr]
        if fstype_end > start + 6 and line.startswith(" (", fstype_end) and fstype_end + 2 <= close:
            parts = _device_and_point(line, start)
            if parts is None:
                return None  # an earlier " type " leaves a shorter mount point: the device is no longer
            return parts[0], parts[1], line[start + 6:fstype_end], line[fstype_end + 2:close]
        end = start + 5  # an earlier one, which may share this one's first blank
    return None


def _macos_mount(line: str) -> tuple[str, str, str, str | None] | None:
    """``dev on /point (fstype, options)``: device, point, fstype, options (None without them)."""
    if not line.endswith(")"):
        return None
    close = len(line) - 1
    end = close
    while (start := line.rfind(" (", 0, end)) >= 0:  # the last " (" followed by `fstype[, options])`
        # `fstype)` or `fstype, options)`: a non-empty fstype up to the first ',' '(' or ')', that ',' before a blank
        stop = _MACOS_STOP.search(line, start + 2, close)
        if (stop is None and close > start + 2) or (
                stop is not None and stop.start() > start + 2 and line.startswith(", ", stop.start())):
            parts = _device_and_point(line, start)
            if parts is None:
                return None
            if stop is None:
                return parts[0], parts[1], line[start + 2:close], None
            return parts[0], parts[1], line[start + 2:stop.start()], line[stop.start() + 2:close]
        end = start + 1
    return None


def _options(text: str, separator: str = ",") -> tuple[str, ...]:
    return tuple(filter(None, map(str.strip, text.split(separator))))  # the non-blank ones, stripped


def _parse_findmnt(lines: list[str], path: str) -> list[Mount]:
    header = lines[0]
    columns = header.split()
    wanted = ("TARGET", "SOURCE", "FSTYPE", "OPTIONS")
    if not all(column in columns for column in wanted):
        raise ParseError("findmnt output needs the columns TARGET SOURCE FSTYPE OPTIONS (use `findmnt -l`)",
                         Source(path, 1))
    mounts: list[Mount] = []
    for number, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        fields = _TREE.sub("", line).split()
        if len(fields) != len(columns):
            raise ParseError(f"expected {len(columns)} columns, found {len(fields)}", Source(path, number))
        row = dict(zip(columns, fields, strict=True))
        mounts.append(Mount(_unescape_hex(row["SOURCE"]), _unescape_hex(row["TARGET"]), row["FSTYPE"],
                            _options(row["OPTIONS"]), Source(path, number)))
    return mounts


def _parse_mountinfo_line(fields: list[str], source: Source) -> Mount:
    # id parent major:minor root point options [optional fields…] - fstype device super-options
    try:
        dash = fields.index("-", 6)
    except ValueError:
        raise ParseError("mountinfo line without the ' - ' separator", source) from None
    if len(fields) < dash + 3:
        raise ParseError("mountinfo line is missing fstype or device", source)
    options = _options(fields[5]) + _options(fields[dash + 3]) if len(fields) > dash + 3 else _options(fields[5])
    return Mount(_unescape_octal(fields[dash + 2]), _unescape_octal(fields[4]), fields[dash + 1], options, source)


def parse_mounts(text: str, path: str) -> list[Mount]:
    lines = text.split("\n")
    first = next((line for line in lines if line.strip()), "")
    if not first:
        return []
    if first.split()[:1] == ["TARGET"] or ("TARGET" in first.split() and "FSTYPE" in first.split()):
        return _parse_findmnt([line for line in lines if line.strip()], path)
    if first.strip().startswith("node") and "mounted over" in first:
        raise ParseError("this is AIX `mount` output; pgvet reads Linux hosts (`cat /proc/mounts`)", Source(path, 1))
    mounts: list[Mount] = []
    for number, line in enumerate(lines, 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        source = Source(path, number)
        fields = line.split()
        if len(fields) >= 10 and fields[0].isdigit() and fields[1].isdigit() and ":" in fields[2]:
            mounts.append(_parse_mountinfo_line(fields, source))
        elif " on " in line and (linux := _linux_mount(line.rstrip())):  # both need " on ": /proc/mounts
            device, point, fstype, options = linux
            mounts.append(Mount(device, point, fstype, _options(options), source))
        elif " on " in line and (macos := _macos_mount(line.rstrip())):  # lines skip the two scans
            device, point, fstype, macos_options = macos
            mounts.append(Mount(device, point, fstype.strip(), _options(macos_options or ""), source))
        elif len(fields) in (4, 6) and fields[1].startswith("/"):
            mounts.append(Mount(_unescape_octal(fields[0]), _unescape_octal(fields[1]), fields[2],
                                _options(fields[3]), source))
        elif len(fields) in (4, 6) and fields[1] in ("none", "swap"):
            continue  # an fstab swap line
        else:
            raise ParseError(
                "not a mount line (expected /proc/mounts, `mount`, `findmnt -l` or mountinfo output)", source
            )
    return mounts


def _components(path: str) -> list[str]:
    return [part for part in path.split("/") if part and part != "."]


class _Directory:
    """A directory of the mount points' tree: its subdirectories by name, and the mount on it (if any)."""

    __slots__ = ("mount", "subdirectories")

    def __init__(self) -> None:
        self.subdirectories: dict[str, _Directory] = {}
        self.mount: Mount | None = None


class MountTable:
    """The mount holding a path: the longest mount point that is a prefix of it, by path components; when a
    point is mounted twice, the later mount (the one on top) wins.

    The mount points make a tree, built once; a lookup walks down it along the path, linear in the path
    whatever the number of mounts (a lookup that tried each mount made a host of 8 000 tablespaces and
    8 000 mounts take 47 s)."""

    def __init__(self, mounts: Sequence[Mount]) -> None:
        self._root = _Directory()
        for mount in mounts:
            directory = self._root
            for part in _components(mount.point):
                below = directory.subdirectories.get(part)
                if below is None:
                    below = directory.subdirectories[part] = _Directory()
                directory = below
            directory.mount = mount

    def holding(self, path: str) -> Mount | None:
        directory = self._root
        found = directory.mount
        for part in _components(path):
            below = directory.subdirectories.get(part)
            if below is None:
                break
            directory = below
            if directory.mount is not None:
                found = directory.mount
        return found
