"""Find the inputs of one host and assemble its facts (design.md: "a snapshot is a directory").

A host is a directory; file names tell the kind of each input (see ``INPUT_NAMES``). Explicit files
(``--sysctl F --meminfo F …``) may replace or complete what the directory holds. Every fact keeps the
file and line it came from; paths are shown relative to the host directory.

Nothing outside the host directory is read without saying so: an input that resolves (after
symbolic links) outside the directory is refused and reported as a warning.
"""

from __future__ import annotations

import os
import re
import stat
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from functools import cached_property, lru_cache, partial
from pathlib import Path
from typing import TYPE_CHECKING

from pgvet.errors import InputError
from pgvet.facts import Fact, FactValue, HostFacts, Item, make_fact
from pgvet.provenance import Located, Source
from pgvet.sources import find_mark, read_file_at_most

if TYPE_CHECKING:
    from datetime import date

    from pgvet.sources.sysctl import PairedValue, SysctlSetting

# The largest input file pgvet reads; real inputs are far smaller (sysctl -a: ~100 kB).
MAX_INPUT_BYTES = 32 * 1024 * 1024
# What a host's inputs may hold together (sysctl.d may hold any number of files), and the lines of the inputs
# whose lines become items the rules judge one by one (mounts, disks, declared kernel settings): each costs a few
# kilobytes once judged (200 000 mounts took 500 MB). A container host lists a few thousand mounts. Beyond
# them the host is refused, as for a file too large: judging it without some of its lines would be wrong.
MAX_HOST_BYTES = 2 * MAX_INPUT_BYTES
MAX_ITEM_LINES = 100_000
DEFAULT_HUGEPAGE_SIZE = 2 * 1024 * 1024


# An input's path: a Path when given on the command line; discovered files of the host directory are strings,
# the directory's path and their names joined (a Path made and turned back into a string for each of a host's
# eight inputs cost 2 % of its loading).
InputPath = str | Path


@dataclass(slots=True)
class SnapshotInputs:
    """The input files of one host; any subset may be present."""

    sysctl: InputPath | None = None
    sysctl_conf: list[InputPath] = field(default_factory=list)  # in the order sysctl --system applies them
    meminfo: InputPath | None = None
    lscpu: InputPath | None = None
    mounts: InputPath | None = None
    sysfs: InputPath | None = None
    host_yaml: InputPath | None = None
    pg_version_file: InputPath | None = None
    postgresql_conf: InputPath | None = None
    postgresql_auto_conf: InputPath | None = None
    pg_settings: InputPath | None = None
    collect_manifest: InputPath | None = None  # collect.json: the host's recorded name, what was not read

    def is_empty(self) -> bool:
        return not any(map(partial(getattr, self), _INPUT_KINDS))  # once a host: no fields() and no generator

    def merged(self, explicit: SnapshotInputs) -> SnapshotInputs:
        """These inputs with every input given explicitly taking the place of the discovered one."""
        result = SnapshotInputs(**{item.name: getattr(self, item.name) for item in fields(self)})
        for item in fields(explicit):
            value = getattr(explicit, item.name)
            if value:
                setattr(result, item.name, value)
        return result


_INPUT_KINDS = tuple(item.name for item in fields(SnapshotInputs))

# File names recognised in a host directory (the layout table of design.md / README).
INPUT_NAMES: dict[str, tuple[str, ...]] = {
    "sysctl": ("sysctl.txt", "sysctl-a.txt"),
    "meminfo": ("meminfo.txt", "meminfo"),
    "lscpu": ("lscpu.txt", "lscpu.json"),  # text first: its values have line numbers
    "mounts": ("mounts.txt", "mount.txt", "findmnt.txt"),
    "sysfs": ("sysfs.txt",),
    "host_yaml": ("host.yaml", "host.yml"),
    "pg_version_file": ("PG_VERSION",),
    "postgresql_conf": ("postgresql.conf",),
    "postgresql_auto_conf": ("postgresql.auto.conf",),
    "pg_settings": ("pg_settings.json",),
    "collect_manifest": ("collect.json",),
}


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except (ValueError, OSError, RuntimeError):  # RuntimeError: symlink loop on some Pythons
        return False
    return True


def discover(directory: Path, host: HostFacts | None = None) -> SnapshotInputs:
    """The inputs present in a host directory, refusing any that resolve outside it. ``host`` receives the
    refusals (its warnings), the names the directory's listing shows as regular files (no links) and the
    listing's names, lower-cased (none when the directory cannot be listed)."""
    refused = host.warnings if host is not None else []
    inputs = SnapshotInputs()

    def usable(path: Path) -> bool:
        try:
            mode = path.lstat().st_mode
        except OSError:
            return False
        if stat.S_ISREG(mode):
            return True  # a regular file of the directory (no link) lies inside it: no need to resolve
        if not path.is_file():
            if path.exists():  # a directory or a device under an input's name: say so rather than skip it
                refused.append(f"{path.name}: refused, it is not a regular file")
            return False
        if not _inside(path, directory):
            refused.append(f"{path.name}: refused, it resolves outside the host directory ({path.resolve()})")
            return False
        return True

    def sysctl_d_usable(path: Path) -> bool:
        if not path.is_dir():
            if path.exists():
                refused.append(f"{path.name}: refused, it is not a directory")
            elif path.is_symlink():  # a link to nothing: the declared values it should hold are missing
                refused.append(f"{path.name}: refused, it links to {os.readlink(path)}, which does not exist")
            return False
        if not _inside(path, directory):  # a link to /etc/sysctl.d would lint this machine, not the snapshot
            refused.append(f"{path.name}: refused, it resolves outside the host directory ({path.resolve()})")
            return False
        return True

    entries = _entries(directory)
    present = None if entries is None else frozenset(name.lower() for name in entries)
    if host is not None:
        host.listing = present
    base = os.fspath(directory)
    for kind, names in INPUT_NAMES.items():
        for name in names:
            if present is not None and name.lower() not in present:
                continue  # not there: no need to ask the file system name by name
            if _listed_as_regular(entries, name):
                setattr(inputs, kind, _child(base, name))
                if host is not None:
                    host.regular_files.add(name)
                break
            candidate = directory / name
            if usable(candidate):
                setattr(inputs, kind, candidate)
                break
    sysctl_d = directory / "sysctl.d"
    declared: list[InputPath] = []
    if (present is None or "sysctl.d" in present) and sysctl_d_usable(sysctl_d):
        from pgvet.sources.sysctl import sysctl_d_order

        by_name = {entry.name: entry for entry in sysctl_d.iterdir()}
        declared.extend(by_name[name] for name in sysctl_d_order(by_name) if usable(by_name[name]))
    if (present is None or "sysctl.conf" in present) and usable(directory / "sysctl.conf"):
        declared.append(directory / "sysctl.conf")  # sysctl --system applies /etc/sysctl.conf last
    inputs.sysctl_conf = declared
    return inputs


def _child(base: str, name: str) -> str:
    """``str(Path(base) / name)`` for a name without '/', base being a Path's string, without making the Path."""
    if base == ".":
        return name
    return base + name if base.endswith("/") else f"{base}/{name}"


def _entries(directory: Path) -> dict[str, os.DirEntry[str]] | None:
    """The entries of a directory by name, from one listing; None when it cannot be listed (each name is
    then looked up)."""
    try:
        with os.scandir(directory) as listing:
            return {entry.name: entry for entry in listing}
    except OSError:
        return None


def _listed_as_regular(entries: dict[str, os.DirEntry[str]] | None, name: str) -> bool:
    """Whether the listing shows ``name`` as a regular file (on Linux the type comes with the names: no stat);
    False sends the caller to lstat it."""
    entry = entries.get(name) if entries is not None else None
    try:
        return entry is not None and entry.is_file(follow_symlinks=False)
    except OSError:
        return False


def read_text(path: InputPath, display: str) -> str:
    """An input file's text: UTF-8, undecodable bytes kept as escapes; a clear error otherwise."""
    name = os.fspath(path)
    try:
        status = os.stat(name)
        if status.st_size > MAX_INPUT_BYTES:
            raise InputError(f"file is {status.st_size} bytes, more than pgvet reads ({MAX_INPUT_BYTES})",
                             Source(display))
        data = read_file_at_most(name, status, MAX_INPUT_BYTES)
    except IsADirectoryError:
        raise InputError("is a directory, expected a file", Source(display)) from None
    except FileNotFoundError:
        raise InputError("no such file", Source(display)) from None
    except OSError as error:
        raise InputError(f"cannot read: {error.strerror or error}", Source(display)) from None
    if len(data) > MAX_INPUT_BYTES:  # a pipe or a /proc file, whose size stat does not know
        raise InputError(f"more than {MAX_INPUT_BYTES} bytes, more than pgvet reads", Source(display))
    if not data and stat.S_ISFIFO(status.st_mode):  # read without waiting for a writer: say so, not judge nothing
        raise InputError("a pipe that gave nothing (no program writing to it, or one that wrote nothing)",
                         Source(display))
    return data.decode("utf-8", errors="surrogateescape")


class _Builder:
    """Collects facts for one host, keeping the first error of each input as a warning."""

    def __init__(self, name: str, root: Path, wanted: frozenset[str] | None) -> None:
        self.root = root
        self.root_name = os.fspath(root)
        self.host = HostFacts(name=name, root=str(root))
        self.wanted = wanted
        self.bytes_read = 0
        self.item_lines: dict[str, int] = {}  # lines read so far of each kind of item input

    @cached_property
    def real_root(self) -> Path:
        return self.root.resolve()

    def display(self, path: InputPath) -> str:
        # path.parent == root, compared as the normalised strings Paths are (a Path's own operations cost
        # several times as much): a file of the directory that is no link is shown by its name, which is
        # what resolving both would give, without walking every directory of the path.
        name = os.fspath(path)
        head, tail = os.path.split(name) if name != "." else (".", "")  # Path("."): its own parent, no name
        if ((head or ".") == self.root_name and tail != ".."
                and (tail in self.host.regular_files or not os.path.islink(name))):
            return tail
        if name == self.root_name:
            return "."  # what resolving gives for the (existing) host directory itself
        # Outside the host directory too, relative to it (``../out/meminfo.txt``): reports join a source to
        # the host's directory, and a fingerprint holding this path is the same from any working directory.
        return os.path.relpath(os.path.realpath(name), self.real_root)

    def text(self, path: InputPath, items: str | None = None) -> tuple[str, str]:
        """An input's text and its path as shown; ``items``: what its lines are, when each becomes an item
        (the lines of all the inputs of that kind count together)."""
        display = self.display(path)
        text = read_text(path, display)
        self.bytes_read += len(text)
        if self.bytes_read > MAX_HOST_BYTES:
            raise InputError(f"with this file, the host's inputs hold more than {MAX_HOST_BYTES} bytes, more than "
                             "pgvet reads in one host: it does not judge them", Source(display))
        if items is not None:
            lines = self.item_lines[items] = self.item_lines.get(items, 0) + text.count("\n")
            if lines > MAX_ITEM_LINES:
                raise InputError(f"with this file, more than {MAX_ITEM_LINES} lines of {items}, more than pgvet "
                                 "judges in one host: it does not judge them", Source(display))
        if find_mark(text) is None:
            self.host.unmarked_files.add(display)
        elif "ignore[" in text:  # not every file naming pgvet (a collected pg_settings.json does) has comments
            self.host.marked_files.add(display)
        return text, display

    def put(self, name: str, located: Located[FactValue]) -> None:
        self.host.facts[name] = make_fact((name, located.value, located.source, (), None))

    def put_all(self, prefix: str, values: Mapping[str, Located[FactValue]]) -> None:
        facts = self.host.facts
        for key, located in values.items():
            name = f"{prefix}.{key}"
            facts[name] = make_fact((name, located.value, located.source, (), None))


@lru_cache(maxsize=16)
def _wanted_suffixes(wanted: frozenset[str], prefix: str) -> frozenset[str]:
    """The wanted names under ``prefix``, without it (``sysctl.`` → ``vm.swappiness``): once per run."""
    return frozenset(name[len(prefix):] for name in wanted if name.startswith(prefix))


def run_year_month() -> int:
    """The month of this run as YYYYMM (end-of-life rules compare dates; PGVET_TODAY=YYYY-MM-DD pins it)."""
    if not os.environ.get("PGVET_TODAY"):
        now = time.localtime()  # what date.today() reads, without making a date (once a host)
        return now.tm_year * 100 + now.tm_mon
    today = run_date()
    return today.year * 100 + today.month


def run_date() -> date:
    """Today, or the date PGVET_TODAY pins (YYYY-MM-DD); a PGVET_TODAY that is no date is a UsageError."""
    from datetime import date

    pinned = os.environ.get("PGVET_TODAY")
    if not pinned:
        return date.today()
    try:
        return date.fromisoformat(pinned)
    except ValueError:
        from pgvet.errors import UsageError

        raise UsageError(f"PGVET_TODAY must be a date such as 2026-11-22, not {pinned!r}") from None


def _refused(warnings: list[str]) -> str:
    """The inputs refused, when none was left: the reason there is nothing to lint."""
    return f" ({'; '.join(warnings)})" if warnings else ""


def _hosts_inside(root: Path) -> str:
    """A hint when the directory given holds hosts (a fleet's directory given instead of its hosts)."""
    from pgvet.run.paths import HOST_MARKERS

    try:
        with os.scandir(root) as entries:
            hosts = sorted(entry.name for entry in entries if entry.is_dir(follow_symlinks=False)
                           and any(os.path.lexists(os.path.join(entry.path, marker)) for marker in HOST_MARKERS))
    except OSError:
        return ""
    if not hosts:
        return ""
    shown = ", ".join(hosts[:3]) + (", …" if len(hosts) > 3 else "")
    return f"; it holds {len(hosts)} host directories ({shown}): give them, e.g. `pgvet lint {root}/*`"


def load_host(directory: Path | None, explicit: SnapshotInputs | None = None, *, name: str | None = None,
              wanted: frozenset[str] | None = None, upgrade_to: int | None = None) -> HostFacts:
    """Assemble the facts of one host from its directory and/or explicit input files.

    ``upgrade_to``: judge its PostgreSQL files as that major version reads them (pgfacts.load).

    ``wanted``: the host-wide facts the caller reads (a lint: what its rules and reports read). The bulk
    sources — the ~1 300 keys of ``sysctl -a``, the ~350 PostgreSQL defaults — then give only those;
    inputs are read and checked all the same. None: every fact (``pgvet facts``).

    Raises InputError (exit 2) when an input cannot be read or parsed; the message names file and line.
    """
    if directory is not None and not os.path.isdir(directory):
        what = "not a directory" if os.path.lexists(directory) else "no such file or directory"
        raise InputError(f"{what} (a host is a directory of inputs)", Source(str(directory)))
    if directory is not None and not os.access(directory, os.X_OK):  # not even a name in it can be looked up
        raise InputError("cannot read this directory: Permission denied", Source(str(directory)))
    root = directory if directory is not None else Path.cwd()
    builder = _Builder(name or "", root, wanted)
    if not name:
        # The resolved directory's name: its own unless it is a link (resolving a parent keeps the last name)
        own = root.name not in ("", "..") and not os.path.islink(root)
        builder.host.name = root.name if own else builder.real_root.name or str(root)
    inputs = discover(root, builder.host) if directory is not None else SnapshotInputs()
    if explicit is not None:
        inputs = inputs.merged(explicit)
    if inputs.is_empty():
        raise InputError(
            f"no inputs found{_refused(builder.host.warnings)}: expected files such as sysctl.txt, meminfo.txt, "
            "lscpu.txt, mounts.txt, sysfs.txt, "
            f"postgresql.conf, sysctl.d/, host.yaml (see the README's snapshot layout){_hosts_inside(root)}",
            Source(str(root)),
        )
    builder.host.add(Fact("run.year_month", run_year_month(), Source("<run>")))
    declared = _load_declared_host(builder, inputs)
    _load_manifest(builder, inputs)
    _load_kernel(builder, inputs)
    _load_machine(builder, inputs)
    _load_postgresql(builder, inputs, declared, upgrade_to)
    _derive_host(builder, declared)
    _load_storage(builder, inputs)
    return builder.host


def _load_declared_host(builder: _Builder, inputs: SnapshotInputs) -> dict[str, Located[object]]:
    if inputs.host_yaml is None:
        return {}
    from pgvet.sources.hostfacts import parse_host_yaml

    text, display = builder.text(inputs.host_yaml)
    declared: dict[str, Located[object]] = dict(parse_host_yaml(text, display))
    return declared


# What each OS file of a snapshot gives: the namespaces of the facts and items read from it.
_FILE_NAMESPACES = {"meminfo.txt": ("meminfo",), "sysctl.txt": ("sysctl",), "lscpu.txt": ("cpu", "lscpu"),
                    "mounts.txt": ("mount",), "sysfs.txt": ("thp", "disk", "cgroup")}
NO_SERVER_HINT = ("give one with --dsn (`--dsn 'host=/var/run/postgresql user=postgres'`: a socket directory or a "
                  "host name), or with the PGHOST, PGPORT and PGUSER variables")


def _load_manifest(builder: _Builder, inputs: SnapshotInputs) -> None:
    """collect.json: the host's name as collect recorded it (host.yaml's ``name`` still wins), and what the
    collection could not read — shown as warnings, and the reason the rules reading it were not evaluated
    (``what was not read: why``, so that a report can shorten a repeated one to what comes before the colon)."""
    if inputs.collect_manifest is None:
        return
    from pgvet.sources.collect import parse_collect_json

    text, display = builder.text(inputs.collect_manifest)
    manifest = parse_collect_json(text, display)
    host = builder.host
    if manifest.hostname is not None:
        host.name = manifest.hostname.value
    for missed in manifest.not_read:
        if missed.is_file:
            said = f"{missed.what} was not read: {missed.error}"
            for namespace in _FILE_NAMESPACES.get(missed.what, ()):
                host.unread.setdefault(namespace, said)
        else:
            what = "the server's configuration files" if missed.what == "configuration files" else missed.what
            said = f"{what} {'were' if missed.what == 'configuration files' else 'was'} not copied: " \
                   f"{missed.error.removeprefix('not copied: ')}"
            if missed.what == "configuration files":
                for namespace in ("setting", "problem"):
                    host.unread.setdefault(namespace, said)
        host.warnings.append(f"{missed.source}: {said}")
    if manifest.server_error is not None:
        reason = f"the server was not read: {manifest.server_error.value}"
        host.warnings.append(f"{manifest.server_error.source}: {reason}; {NO_SERVER_HINT}")
    elif not manifest.server_read:
        reason = f"no server was read (the snapshot was collected with --host-only): {NO_SERVER_HINT}"
    else:
        return
    from pgvet.pgfacts import LIVE_SCOPES

    for namespace in ("pg", "live", *LIVE_SCOPES):
        host.unread.setdefault(namespace, reason)


def _load_kernel(builder: _Builder, inputs: SnapshotInputs) -> None:
    from pgvet.sources import sysctl

    running: dict[str, Located[int | str]] = {}
    keys = None if builder.wanted is None else _wanted_suffixes(builder.wanted, "sysctl.")
    running_text, running_display = "", ""
    if inputs.sysctl is not None:
        running_text, running_display = builder.text(inputs.sysctl)
        running = sysctl.parse_sysctl_output(running_text, running_display, keys)
        builder.put_all("sysctl", running)
        if not running_text.strip():  # a collection whose `sysctl -a` failed; the rules would only go unevaluated
            builder.host.warnings.append(f"{running_display}: the file is empty: no running kernel value was read "
                                         "(collect it again with `sysctl -a`)")
    occurrences: dict[str, list[sysctl.SysctlSetting]] = {}
    applied: list[sysctl.SysctlSetting] = []  # every line, in the order sysctl --system writes them
    for path in inputs.sysctl_conf:
        text, display = builder.text(path, items="sysctl.conf and sysctl.d")
        for setting in sysctl.parse_sysctl_conf(text, display):
            occurrences.setdefault(setting.key, []).append(setting)
            applied.append(setting)
            if setting.trailing is not None:
                builder.host.warnings.append(
                    f"{display}:{setting.source.line}: `{setting.trailing}` after {setting.key} = {setting.value} "
                    "is no comment to sysctl: it writes it too, and the kernel reads the number and ignores the "
                    f"rest (pgvet reads {setting.value}); put the comment on a line of its own")
    if keys is not None and running_text and not occurrences.keys() <= keys:
        # declared keys are compared with their running values, wanted or not
        running.update(sysctl.parse_sysctl_output(running_text, running_display, occurrences.keys() - keys))
    # The ratio/bytes pairs as the kernel holds them once the files are applied: a later write of one zeroes
    # the other, a refused write changes nothing (sources/sysctl.py, paired_values).
    paired = sysctl.paired_values(applied) if occurrences.keys() & sysctl.PAIRED_SYSCTLS else {}
    for key in [*occurrences, *(key for key in paired if key not in occurrences)]:
        settings = occurrences.get(key, [])
        places = tuple(setting.source for setting in settings)
        outcome = paired.get(key)
        if outcome is not None:
            value: int | str = outcome.value
            source = outcome.setting.source
            if outcome.setting.key != key:  # zeroed by the partner, after the key's own lines (if any)
                places = (*places, source)
        else:
            value, source = settings[-1].value, settings[-1].source
        builder.host.add(Fact(f"sysctl_conf.{key}", value, source, places))
        if key not in running:
            # A config repository holds what will run: rules about the kernel see the declared value.
            builder.host.add(Fact(f"sysctl.{key}", value, source, places))
    if occurrences and not running_text.strip():  # no sysctl.txt, or an empty one
        builder.host.notes.append("no sysctl.txt: kernel rules use the declared values of sysctl.conf / sysctl.d")
    if occurrences:
        builder.host.items["declared"] = _declared_items(occurrences, running, paired)


def _declared_items(occurrences: Mapping[str, list[SysctlSetting]], running: Mapping[str, Located[int | str]],
                    paired: Mapping[str, PairedValue]) -> list[Item]:
    """One item per declared kernel key: the value the kernel will hold (``declared.value``), the value last
    written (``declared.written``, different when a partner of its ratio/bytes pair zeroed it afterwards —
    ``declared.zeroed_by``, at ``declared.zeroed_at`` — or the kernel refuses it), and the running value
    beside them when known (compared as text, as `sysctl` prints both)."""
    items: list[Item] = []
    for key, settings in occurrences.items():
        last = settings[-1]
        outcome = paired.get(key)
        value = last.value if outcome is None else outcome.value
        item = Item((("declared.key", key), ("declared.value", str(value)), ("declared.written", str(last.value)),
                     ("declared.ignore_errors", last.ignore_errors)), last.source)
        if outcome is not None and outcome.zeroed_by is not None:
            zeroing = outcome.zeroed_by
            item.put("declared.zeroed_by", f"{zeroing.key} = {zeroing.value}", zeroing.source)
            item.put("declared.zeroed_at", f"{zeroing.source.path}:{zeroing.source.line}", zeroing.source)
        if key in running:
            item.put("declared.running", str(running[key].value), running[key].source)
        items.append(item)
    return items


def _load_machine(builder: _Builder, inputs: SnapshotInputs) -> None:
    if inputs.meminfo is not None:
        from pgvet.sources.meminfo import parse_meminfo

        text, display = builder.text(inputs.meminfo)
        # mem_total, wanted or not: host.ram is derived from it
        names = None if builder.wanted is None else _wanted_suffixes(builder.wanted, "meminfo.") | {"mem_total"}
        builder.put_all("meminfo", parse_meminfo(text, display, names))
    if inputs.lscpu is not None:
        from pgvet.sources.lscpu import parse_lscpu

        text, display = builder.text(inputs.lscpu)
        builder.put_all("cpu", parse_lscpu(text, display))
    if inputs.sysfs is not None:
        from pgvet.sources.sysfs import parse_sysfs

        text, display = builder.text(inputs.sysfs, items="sysfs")
        dump = parse_sysfs(text, display)
        for key, located in dump.thp.items():
            builder.put(f"thp.{key}", located)
        if dump.cgroup_memory_max is not None:
            builder.put("cgroup.memory_max", dump.cgroup_memory_max)
        builder.host.items["disk"] = _disk_items(dump.disks)


def _disk_items(disks: Mapping[str, Mapping[str, Located[int | str | bool]]]) -> list[Item]:
    from pgvet.sources.sysfs import is_virtual_disk

    items: list[Item] = []
    for disk_name in sorted(disks):
        attributes = disks[disk_name]
        first = next(iter(attributes.values()), None)
        source = first.source if first is not None else Source("sysfs.txt")
        item = Item((("disk.name", disk_name), ("disk.virtual", is_virtual_disk(disk_name))), source)
        for key, located in attributes.items():
            item.put(f"disk.{key}", located.value, located.source)  # each attribute on its own line
        items.append(item)
    return items


def _load_postgresql(builder: _Builder, inputs: SnapshotInputs, declared: Mapping[str, Located[object]],
                     upgrade_to: int | None) -> None:
    from pgvet import pgfacts

    version = declared.get("pg_version")
    if version is None and inputs.pg_version_file is not None:
        text, display = builder.text(inputs.pg_version_file)
        version = pgfacts.parse_pg_version_file(text, display)
    pgfacts.load(builder.host, builder.root, inputs, version, builder.wanted, upgrade_to)


def _derive_host(builder: _Builder, declared: Mapping[str, Located[object]]) -> None:
    """host.* facts: what rules use, from measured inputs first and host.yaml second."""
    facts = builder.host.facts
    for key, located in declared.items():
        if key in ("pg_version", "ram", "cpus", "name"):
            continue
        value = located.value
        if isinstance(value, list):
            value = ",".join(str(part) for part in value)
        builder.host.add(Fact(f"host.{key}", value, located.source))  # type: ignore[arg-type]
    if "name" in declared:
        builder.host.name = str(declared["name"].value)
    if "ram" in declared:
        builder.host.add(Fact("host.declared_ram", declared["ram"].value, declared["ram"].source))  # type: ignore[arg-type]
    builder.host.add(Fact("host.name", builder.host.name, Source(builder.display(builder.root))))

    ram: Fact | None = None
    if "meminfo.mem_total" in facts:
        measured = facts["meminfo.mem_total"]
        ram = Fact("host.ram", measured.value, measured.source)
    elif "ram" in declared:
        ram = Fact("host.ram", declared["ram"].value, declared["ram"].source)  # type: ignore[arg-type]
    limit = facts.get("cgroup.memory_max")
    if ram is not None and limit is not None and isinstance(limit.value, int) and limit.value < int(ram.value):
        builder.host.notes.append(f"host.ram capped by the cgroup memory limit ({limit.source})")
        ram = Fact("host.ram", limit.value, limit.source)
    if ram is not None:
        builder.host.add(ram)
    if "cpu.count" in facts:
        builder.host.add(Fact("host.cpus", facts["cpu.count"].value, facts["cpu.count"].source))
    elif "cpus" in declared:
        builder.host.add(Fact("host.cpus", declared["cpus"].value, declared["cpus"].source))  # type: ignore[arg-type]
    if "host.data_directory" not in facts and "pg.data_directory" in facts:
        data = facts["pg.data_directory"]
        if data.source.path != "<default>" and data.value:
            builder.host.add(Fact("host.data_directory", data.value, data.source))


# Filesystems that never hold a database: kernel interfaces, not storage.
PSEUDO_FILESYSTEMS = frozenset({
    "proc", "sysfs", "devtmpfs", "devpts", "securityfs", "cgroup", "cgroup2", "pstore", "bpf", "debugfs",
    "tracefs", "configfs", "fusectl", "mqueue", "hugetlbfs", "autofs", "binfmt_misc", "rpc_pipefs", "nsfs",
    "efivarfs", "selinuxfs", "squashfs", "overlay", "fuse.gvfsd-fuse", "fuse.portal", "ramfs_sys", "iso9660",
})


def _load_storage(builder: _Builder, inputs: SnapshotInputs) -> None:
    """mount.* items, scoped to the mounts holding PGDATA / WAL / tablespaces when they are known."""
    if inputs.mounts is None:
        return
    from pgvet.sources.mounts import MountTable, parse_mounts

    text, display = builder.text(inputs.mounts, items="mounts")
    mounts = parse_mounts(text, display)
    facts = builder.host.facts
    data_directory = _text_fact(facts.get("host.data_directory"))
    wal_directory = _text_fact(facts.get("host.wal_directory"))
    if wal_directory is None and data_directory is not None:
        wal_directory = data_directory.rstrip("/") + "/pg_wal"
    tablespaces = [part for part in (_text_fact(facts.get("host.tablespaces")) or "").split(",") if part]

    table = MountTable(mounts)
    data_mount = table.holding(data_directory) if data_directory else None
    wal_mount = table.holding(wal_directory) if wal_directory else None
    tablespace_mounts = {id(found) for found in map(table.holding, tablespaces) if found is not None}
    known = data_mount is not None
    if known:
        builder.host.notes.append(
            f"storage rules scoped to the mounts holding PGDATA ({data_directory}), WAL and tablespaces"
        )
    else:
        builder.host.notes.append(
            "data directory unknown (set data_directory in host.yaml): storage rules apply to every "
            "disk-backed or network mount"
        )
    items: list[Item] = []
    root_points = {os.path.normpath(path) for path in (data_directory, wal_directory, *tablespaces) if path}
    for mount in mounts:
        holds_pgdata = mount is data_mount
        holds_wal = mount is wal_mount
        holds_tablespace = id(mount) in tablespace_mounts
        if known and not (holds_pgdata or holds_wal or holds_tablespace):
            continue
        if not known and (mount.fstype in PSEUDO_FILESYSTEMS or mount.fstype in ("tmpfs", "ramfs")):
            continue
        items.append(Item((
            ("mount.device", mount.device), ("mount.point", mount.point), ("mount.fstype", mount.fstype),
            ("mount.options", ",".join(mount.options)), ("mount.holds_pgdata", holds_pgdata),
            ("mount.holds_wal", holds_wal), ("mount.holds_tablespace", holds_tablespace), ("mount.scoped", known),
            ("mount.is_root_of_data", os.path.normpath(mount.point) in root_points)), mount.source))
    builder.host.items["mount"] = items
    if data_mount is not None:  # for host rules that depend on it (full_page_writes on ZFS)
        builder.host.add(Fact("host.data_fstype", data_mount.fstype, data_mount.source))
    _mark_data_disks(builder, data_mount.device if data_mount else None)


def _mark_data_disks(builder: _Builder, data_device: str | None) -> None:
    """disk.holds_pgdata: the disk under PGDATA's mount, when its device names one (sda1 → sda)."""
    disks = builder.host.items.get("disk", [])
    if not disks:
        return
    disk_name = _disk_of_device(data_device) if data_device else None
    names = {str(item["disk.name"]) for item in disks}
    for item in disks:
        holds = disk_name == str(item["disk.name"]) if disk_name in names else None
        if holds is not None:
            item["disk.holds_pgdata"] = holds  # read where the disk's name was, the item's source
    if disk_name in names:
        builder.host.items["disk"] = [item for item in disks if item["disk.name"] == disk_name]
        builder.host.notes.append(f"disk rules scoped to {disk_name}, which holds PGDATA")
        rotational = builder.host.items["disk"][0].fact("disk.rotational")
        if rotational is not None:  # for host rules (random_page_cost …) when host.yaml declares no storage
            builder.host.add(Fact("host.data_disk_rotational", rotational.value, rotational.source))
    else:
        builder.host.items["disk"] = [item for item in disks if item["disk.virtual"] is False]
        builder.host.notes.append("disk rules apply to every non-virtual disk (the disk under PGDATA is not known)")


# Linux block device names (block/partitions/core.c): a disk whose name ends in a digit numbers its
# partitions after a "p" (nvme0n1p2, md0p1); one ending in a letter numbers them directly (sda1).
_DISK_OF_DEVICE_NAME = re.compile(
    r"(?P<disk>(?:nvme\d+n\d+|mmcblk\d+|loop\d+|md\d+|nbd\d+|rbd\d+|zd\d+))(?:p\d+)?"
    r"|(?P<mapped>dm-\d+)"  # device-mapper targets have no partitions of their own
    r"|(?P<lettered>(?:sd|vd|xvd|hd)[a-z]+)\d*"  # sda1, vdb, xvda1, hdc
)


def _disk_of_device(device: str) -> str | None:
    """The disk under a device path: /dev/sda1 → sda, /dev/nvme0n1p2 → nvme0n1, /dev/md0 → md0; another name
    (drbd0, pmem0, zram0, sr0) as it is — a whole device, or a partition the sysfs dump does not list, which
    leaves the disk not known; None for links and for what is not a device."""
    if not device.startswith("/dev/"):
        return None
    name = device.removeprefix("/dev/")
    # /dev/mapper/…, /dev/disk/by-uuid/…, /dev/md/NAME are links to a dm-N, sdX… that a snapshot does not record
    if "/" in name:
        return None
    match = _DISK_OF_DEVICE_NAME.fullmatch(name)
    if match is None:
        return name or None
    return match["disk"] or match["mapped"] or match["lettered"]


def _text_fact(fact: Fact | None) -> str | None:
    return str(fact.value) if fact is not None and fact.value not in ("", None) else None
