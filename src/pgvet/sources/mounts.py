"""Mounted filesystems, from any of: ``/proc/mounts`` (or fstab-like lines), ``mount`` output,
``findmnt -l`` / ``findmnt`` (tree drawing stripped), ``/proc/self/mountinfo``. The format is detected.

``mount`` output with spaces in device or mount point names is split on the last `` type `` before the
option list; macOS ``mount`` lines (``dev on /point (fstype, options)``) are read too. AIX's ``mount``
table is refused: pgvet reads Linux hosts.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
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
_MOUNT_LINUX = re.compile(r"^(?P<device>.+?) on (?P<point>.+) type (?P<fstype>\S+) \((?P<options>.*)\)(?: \[.*\])?$")
_MOUNT_MACOS = re.compile(r"^(?P<device>.+?) on (?P<point>.+) \((?P<fstype>[^,()]+)(?:, (?P<options>.*))?\)$")
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
        elif " on " in line and (match := _MOUNT_LINUX.match(line.rstrip())):  # both need " on ": /proc/mounts
            mounts.append(Mount(match["device"], match["point"], match["fstype"], _options(match["options"]), source))
        elif " on " in line and (match := _MOUNT_MACOS.match(line.rstrip())):  # lines skip the two patterns
            mounts.append(Mount(match["device"], match["point"], match["fstype"].strip(),
                                _options(match["options"] or ""), source))
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


@lru_cache(maxsize=1024)  # the same mount points and data directories on every host
def _components(path: str) -> tuple[str, ...]:
    return tuple(part for part in path.split("/") if part and part != ".")


def find_mount(mounts: Sequence[Mount], path: str) -> Mount | None:
    """The mount holding a path: the longest mount point that is a prefix of it, by path components.

    When a point is mounted twice, the later mount (the one on top) wins.
    """
    wanted = _components(path)
    best: Mount | None = None
    best_length = -1
    for mount in mounts:
        point = _components(mount.point)
        if len(point) >= best_length and wanted[: len(point)] == point:
            best, best_length = mount, len(point)
    return best
