"""Read the local host into the snapshot's OS files (design.md's names), verbatim but for secret kernel parameters.

Each reader returns a HostFile: the text to write, or why it could not be read. Nothing raises for
an unreadable input: a container without ``lscpu`` or a cgroup v1 host still gets a snapshot, and
the manifest (collect.json) says what is missing.

The roots (``/proc``, ``/sys``) and program lookup are parameters so tests can point them at a
prepared tree.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from pgvet.live.redact import private_sysctl_keys, redact_sysctl_text

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
    return _read_file("meminfo.txt", proc / "meminfo")


def read_mounts(proc: Path = Path("/proc")) -> HostFile:
    return _read_file("mounts.txt", proc / "mounts")


def _run(name: str, argv: list[str], which: Callable[[str], str | None]) -> HostFile:
    """Run a program with LC_ALL=C; its standard output is the file. Standard error lines become warnings."""
    shown = " ".join(argv)
    result = HostFile(name, f"LC_ALL=C {shown}", utc_now())
    program = which(argv[0])
    if program is None:
        result.error = f"{argv[0]}: command not found"
        return result
    try:
        completed = subprocess.run([program, *argv[1:]], capture_output=True, text=True, errors="backslashreplace",
                                   timeout=COMMAND_TIMEOUT, env={**os.environ, "LC_ALL": "C"}, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        result.error = f"{shown}: {error}"
        return result
    result.warnings = [line for line in completed.stderr.splitlines() if line.strip()]
    if completed.stdout.strip():
        result.text = completed.stdout  # sysctl -a exits non-zero for keys it may not read, output still good
    else:
        result.error = f"{shown} exited with {completed.returncode} and no output"
        result.warnings = result.warnings[:20]
    return result


def _sysctl_key(relative: Path) -> str:
    """The key sysctl prints for a /proc/sys path: ``/`` becomes ``.``, a ``.`` in a name becomes ``/``."""
    return ".".join(part.replace(".", "/") for part in relative.parts)


def walk_proc_sys(proc_sys: Path) -> tuple[str, list[str]]:
    """``sysctl -a``'s output made from /proc/sys: ``key = value``, one line per value line, keys in
    name order; write-only and unreadable keys skipped (named in the second element), deprecated ones
    left out as procps does."""
    lines: list[str] = []
    skipped: list[str] = []
    for directory, subdirectories, files in os.walk(proc_sys):
        subdirectories.sort()
        for name in sorted(files):
            if name in SYSCTL_DEPRECATED:
                continue
            path = Path(directory) / name
            key = _sysctl_key(path.relative_to(proc_sys))
            try:
                text = path.read_text(encoding="utf-8", errors="backslashreplace")
            except OSError as error:
                skipped.append(f"{key}: {error.strerror or error}")
                continue
            lines.extend(f"{key} = {value}" for value in text.splitlines())  # empty files print nothing, as in procps
    # os.walk yields a directory's files before its subdirectories: sort whole keys as sysctl lists them.
    lines.sort(key=lambda line: line.split(" = ", 1)[0])
    return "".join(line + "\n" for line in lines), skipped


def read_sysctl(proc: Path = Path("/proc"), which: Callable[[str], str | None] = shutil.which) -> HostFile:
    """``sysctl -a`` (or its walk of /proc/sys), the values of private and secret keys redacted."""
    if which("sysctl") is not None:
        result = _run("sysctl.txt", ["sysctl", "-a"], which)
    elif not (proc / "sys").is_dir():
        result = HostFile("sysctl.txt", f"walk {proc / 'sys'} (no sysctl program)", utc_now(),
                          error=f"{proc / 'sys'} is not a directory")
    else:
        result = HostFile("sysctl.txt", f"walk {proc / 'sys'} (no sysctl program)", utc_now())
        result.text, result.warnings = walk_proc_sys(proc / "sys")
    if result.text is not None:
        result.text = redact_sysctl_text(result.text, private_sysctl_keys(str(proc / "sys")))
    return result


def read_lscpu(which: Callable[[str], str | None] = shutil.which) -> list[HostFile]:
    """``lscpu`` in the C locale, and ``lscpu -J`` (util-linux 2.30 and later)."""
    files = [_run("lscpu.txt", ["lscpu"], which)]
    if files[0].text is not None:
        files.append(_run("lscpu.json", ["lscpu", "-J"], which))
    return files


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
    result = HostFile("sysfs.txt", "grep -H . " + " ".join("/sys/" + pattern for pattern in SYSFS_PATTERNS),
                      utc_now())
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
                 which: Callable[[str], str | None] = shutil.which) -> list[HostFile]:
    """Every OS file of a snapshot, read from this machine."""
    return [read_meminfo(proc), read_sysctl(proc, which), *read_lscpu(which), read_mounts(proc), read_sysfs(sys_root)]
