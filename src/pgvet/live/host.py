"""Read the local host into the snapshot's OS files (design.md's names), verbatim but for secret kernel parameters.

Each reader returns a HostFile: the text to write, or why it could not be read. Nothing raises for
an unreadable input: a container without ``lscpu`` or a cgroup v1 host still gets a snapshot, and
the manifest (collect.json) says what is missing.

The roots (``/proc``, ``/sys``) and program lookup are parameters so tests can point them at a
prepared tree.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from pgvet.inputs.registry import KINDS
from pgvet.live.redact import redact_sysctl_text
from pgvet.trust import trusted_program

COMMAND_TIMEOUT = 30.0
# Keys procps' sysctl -a leaves out (superseded by their *_ms twins).
SYSCTL_DEPRECATED = frozenset({"base_reachable_time", "retrans_time"})
# What the snapshot's sysfs.txt holds, as design.md's `grep -H .` command lists it (globs under /sys).
SYSFS_PATTERNS = (
    "kernel/mm/transparent_hugepage/enabled",
    "kernel/mm/transparent_hugepage/defrag",
    "block/*/queue/scheduler",
    "block/*/queue/rotational",
    "block/*/queue/read_ahead_kb",
    "fs/cgroup/memory.max",
    "kernel/mm/hugepages/*/nr_hugepages",
)


@dataclass(slots=True)
class HostFile:
    """One snapshot file: ``text`` to write (None when nothing could be read), how it was read, what failed."""

    name: str
    how: str
    read_at: str
    text: str | None = None
    error: str | None = None
    warnings: list[str] = field(default_factory=list)
    server_file: str | None = None  # a copied configuration file: the server's path of it
    # an include_dir of the configuration: made in the snapshot even when it holds no file, as the server has it
    directory: bool = False


def utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _read_file(name: str, path: Path) -> HostFile:
    result = HostFile(name, f"read {path}", utc_now())
    try:
        result.text = path.read_text(encoding="utf-8", errors="backslashreplace")
    except OSError as error:
        result.error = f"{path}: {error.strerror or error}"
    return result


def read_meminfo(proc: Path = Path("/proc")) -> HostFile:
    return _read_file(KINDS["meminfo"].file_name, proc / "meminfo")


def read_mounts(proc: Path = Path("/proc")) -> HostFile:
    return _read_file(KINDS["mounts"].file_name, proc / "mounts")


def _run(name: str, argv: list[str], which: Callable[[str], str | None]) -> HostFile:
    """Run a program with LC_ALL=C; its standard output is the file. Standard error lines become warnings."""
    shown = " ".join(argv)
    result = HostFile(name, f"LC_ALL=C {shown}", utc_now())
    program = which(argv[0])
    if program is None:
        result.error = f"{argv[0]}: command not found (in a directory of PATH that only you or root may write to)"
        return result
    try:
        completed = subprocess.run([program, *argv[1:]], capture_output=True, text=True, errors="backslashreplace",
                                   timeout=COMMAND_TIMEOUT, env={**os.environ, "LC_ALL": "C"}, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        result.error = f"{shown}: {error}"
        return result
    result.warnings = [line for line in completed.stderr.splitlines() if line.strip()]
    if completed.stdout.strip():
        result.text = completed.stdout
    else:
        result.error = f"{shown} exited with {completed.returncode} and no output"
        result.warnings = result.warnings[:20]
    return result


def _sysctl_key(relative: str) -> str:
    """The key sysctl prints for a /proc/sys path: ``/`` becomes ``.``, a ``.`` in a name becomes ``/``."""
    return ".".join(part.replace(".", "/") for part in relative.split("/"))


def walk_proc_sys(proc_sys: Path) -> tuple[str, list[str], frozenset[str]]:
    """``sysctl -a``'s output made from /proc/sys: ``key = value``, one line per value line, keys in
    name order; write-only and unreadable keys skipped (named in the second element), deprecated ones
    left out as procps does; third, the keys whose file other users may not read (the kernel's own word on
    what is private). Read directly, one open and read a key: no program to start."""
    lines: list[str] = []
    skipped: list[str] = []
    private: set[str] = set()
    pending = [("", os.fspath(proc_sys))]
    while pending:
        relative, directory = pending.pop()
        with os.scandir(directory) as entries:
            for entry in entries:
                name = f"{relative}/{entry.name}" if relative else entry.name
                if entry.is_dir(follow_symlinks=False):
                    pending.append((name, entry.path))
                    continue
                if entry.name in SYSCTL_DEPRECATED:
                    continue
                key = _sysctl_key(name)
                try:
                    text, readable_by_others = _read_value(entry.path)
                except OSError as error:
                    skipped.append(f"{key}: {error.strerror or error}")
                    continue
                lines.extend(f"{key} = {value}" for value in text.splitlines())  # an empty file prints nothing
                if not readable_by_others:
                    private.add(key)
    # sorted by whole keys, as sysctl lists them (a directory's files and subdirectories interleave)
    lines.sort(key=lambda line: line.split(" = ", 1)[0])
    skipped.sort()
    return "".join(line + "\n" for line in lines), skipped, frozenset(private)


def _read_value(path: str) -> tuple[str, bool]:
    """A /proc/sys file's text, a page a read (a larger buffer costs more to allocate than the read itself;
    values are a few bytes, a few kB at most), and whether its mode lets other users read it (asked of the open
    file: a second lookup of the path costs as much as opening it)."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        readable_by_others = bool(os.fstat(descriptor).st_mode & 0o004)
        chunks = [os.read(descriptor, 4096)]
        while len(chunks[-1]) == 4096:
            chunks.append(os.read(descriptor, 4096))
    finally:
        os.close(descriptor)
    return b"".join(chunks).decode("utf-8", errors="backslashreplace"), readable_by_others


def read_sysctl(proc: Path = Path("/proc")) -> HostFile:
    """What ``sysctl -a`` prints, read from /proc/sys (the values of private and secret keys redacted)."""
    result = HostFile(KINDS["sysctl"].file_name, f"walk {proc / 'sys'} (what sysctl -a prints)", utc_now())
    try:
        text, result.warnings, private = walk_proc_sys(proc / "sys")
    except OSError as error:
        result.error = f"{proc / 'sys'}: {error.strerror or error}"
        return result
    result.text = redact_sysctl_text(text, private)
    return result


def read_lscpu(which: Callable[[str], str | None] = trusted_program) -> HostFile:
    """``lscpu`` in the C locale: its text, whose values have line numbers (once: ``lscpu -J`` says the same)."""
    return _run(KINDS["lscpu"].file_name, ["lscpu"], which)


def _sysfs_paths(sys_root: Path) -> Iterable[tuple[str, Path]]:
    """Each path design.md's grep reads, as shown (under /sys) and as found under ``sys_root``."""
    for pattern in SYSFS_PATTERNS:
        if "*" in pattern:
            for found in sorted(sys_root.glob(pattern)):
                yield "/sys/" + found.relative_to(sys_root).as_posix(), found
        else:
            yield "/sys/" + pattern, sys_root / pattern


def read_sysfs(sys_root: Path = Path("/sys")) -> HostFile:
    """``grep -H . FILES``: ``path:line`` for every non-empty line; missing files are warnings, as grep's errors."""
    command = "grep -H . " + " ".join("/sys/" + pattern for pattern in SYSFS_PATTERNS)
    result = HostFile(KINDS["sysfs"].file_name, command, utc_now())
    lines: list[str] = []
    for shown, path in _sysfs_paths(sys_root):
        try:
            text = path.read_text(encoding="utf-8", errors="backslashreplace")
        except OSError as error:
            result.warnings.append(f"{shown}: {error.strerror or error}")
            continue
        lines.extend(f"{shown}:{line}" for line in text.splitlines() if line)
    if lines:
        result.text = "".join(line + "\n" for line in lines)
    else:
        result.error = "none of the sysfs files could be read"
    return result


def collect_host(proc: Path = Path("/proc"), sys_root: Path = Path("/sys"),
                 which: Callable[[str], str | None] = trusted_program) -> list[HostFile]:
    """Every OS file of a snapshot, read from this machine (the kinds inputs/registry.py marks collected)."""
    return [read_meminfo(proc), read_sysctl(proc), read_lscpu(which), read_mounts(proc), read_sysfs(sys_root)]
