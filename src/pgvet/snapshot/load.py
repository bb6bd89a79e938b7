"""Assemble the facts of one host from its inputs (discovery.py finds them in its directory).

Explicit files (``--sysctl F --meminfo F …``) may replace or complete what the directory holds. Every fact
keeps the file and line it came from; paths are shown relative to the host directory.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from datetime import date
from functools import lru_cache
from pathlib import Path

from pgvet.errors import InputError, UsageError
from pgvet.inputs import sysctl
from pgvet.inputs.documents import document_kind, parameters_unknown
from pgvet.inputs.host_yaml import parse_host_yaml
from pgvet.inputs.lscpu import parse_lscpu
from pgvet.inputs.meminfo import parse_meminfo
from pgvet.inputs.mounts import parse_mounts
from pgvet.inputs.pg_version import parse_pg_version_file
from pgvet.inputs.postgresql_conf import ConfResult
from pgvet.inputs.registry import host_markers
from pgvet.inputs.sysctl import PairedValue, SysctlSetting
from pgvet.inputs.sysfs import is_virtual_disk, parse_sysfs
from pgvet.paths import link_out_of_repository, real_path_within
from pgvet.provenance import Located, Source
from pgvet.snapshot import pgfacts
from pgvet.snapshot.builder import HostBuilder
from pgvet.snapshot.declared_hosts import DirectoryDocuments, host_names, read_documents
from pgvet.snapshot.discovery import SnapshotInputs, discover
from pgvet.snapshot.facts import LIVE_SCOPES, Fact, HostFacts, Item
from pgvet.snapshot.storage import scope_storage


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
    pinned = os.environ.get("PGVET_TODAY")
    if not pinned:
        return date.today()
    try:
        return date.fromisoformat(pinned)
    except ValueError:
        raise UsageError(f"PGVET_TODAY must be a date such as 2026-11-22, not {pinned!r}") from None


def _refused(warnings: list[str]) -> str:
    """The inputs refused, when none was left: the reason there is nothing to lint."""
    return f" ({'; '.join(warnings)})" if warnings else ""


def _hosts_inside(root: Path) -> str:
    """A hint when the directory given holds hosts (a fleet's directory given instead of its hosts)."""

    try:
        with os.scandir(root) as entries:
            hosts = sorted(entry.name for entry in entries if entry.is_dir(follow_symlinks=False)
                           and any(os.path.lexists(os.path.join(entry.path, marker)) for marker in host_markers()))
    except OSError:
        return ""
    if not hosts:
        return ""
    shown = ", ".join(hosts[:3]) + (", …" if len(hosts) > 3 else "")
    return f"; it holds {len(hosts)} host directories ({shown}): give them, e.g. `pgvet lint {root}/*`"


def _refuse_a_link_out_of_its_repository(directory: Path) -> None:
    """A host directory given in a repository must be reached without a link that leads out of it: a repository's
    link (``hosts/db -> /etc/postgresql/16/main``) must not choose what pgvet reads, nor what ``fix --write``
    writes as root, any more than an include that leads out does. Out of any repository, a link is the user's."""
    out = link_out_of_repository(os.fspath(directory))
    if out is not None:
        raise InputError(f"a symbolic link that leads out of its repository {out}: pgvet reads no host a "
                         "repository's link chooses; give that directory itself to lint it",
                         Source(str(directory)))


def load_hosts(directory: Path | None, explicit: SnapshotInputs | None = None, *, wanted: frozenset[str] | None = None,
               upgrade_to: int | None = None) -> list[HostFacts]:
    """Every host of a directory: one, or one for each host its configuration documents declare (a CloudNativePG
    Cluster, a Patroni member…), each with the directory's other inputs. Parameters as ``load_host``."""
    first, documents = _load(directory, explicit, wanted, upgrade_to, 0)
    count = sum(declared.hosting for declared in documents.declared)
    return [first, *(_load(directory, explicit, wanted, upgrade_to, index, documents=documents)[0]
                     for index in range(1, count))]


def chosen_host(directory: Path | None, names: Sequence[str], chosen: str | None) -> int:
    """Which of a directory's hosts (``names``, as reports name them) a command of one host works on: the only one,
    or the one ``--host`` names. UsageError, listing them, when that is none of them or left to a guess."""
    listed = ", ".join(names)
    given = "the input files" if directory is None else directory
    if chosen is None:
        if len(names) > 1:
            raise UsageError(f"{given} hold{'s' if directory is not None else ''} {len(names)} hosts ({listed}): "
                             "choose one with --host NAME")
        return 0
    if chosen not in names:
        raise UsageError(f"--host {chosen}: {given} hold{'s' if directory is not None else ''} no host of that name "
                         f"(the hosts: {listed})")
    return list(names).index(chosen)


def load_host(directory: Path | None, explicit: SnapshotInputs | None = None, *, name: str | None = None,
              wanted: frozenset[str] | None = None, upgrade_to: int | None = None) -> HostFacts:
    """Assemble the facts of one host from its directory and/or explicit input files (the first host its
    documents declare, when they declare several: ``load_hosts`` gives them all).

    ``upgrade_to``: judge its PostgreSQL files as that major version reads them (pgfacts.load).

    ``wanted``: the host-wide facts the caller reads (a lint: what its rules and reports read). The bulk
    sources — the ~1 300 keys of ``sysctl -a``, the ~350 PostgreSQL defaults — then give only those;
    inputs are read and checked all the same. None: every fact (``pgvet facts``).

    Raises InputError (exit 2) when an input cannot be read or parsed; the message names file and line.
    """
    return _load(directory, explicit, wanted, upgrade_to, 0, name)[0]


def _load(directory: Path | None, explicit: SnapshotInputs | None, wanted: frozenset[str] | None,
          upgrade_to: int | None, index: int, name: str | None = None, documents: DirectoryDocuments | None = None,
          ) -> tuple[HostFacts, DirectoryDocuments]:
    """The host of the directory's ``index``-th declared host (the directory's own when it declares none), and
    what its documents declare (``documents``: as an earlier call read them, for the directory's other hosts)."""
    if directory is not None:  # first: what is where a repository's link leads out is not told (a directory or not)
        _refuse_a_link_out_of_its_repository(directory)
    if directory is not None and not os.path.isdir(directory):
        what = "not a directory" if os.path.lexists(directory) else "no such file or directory"
        raise InputError(f"{what} (a host is a directory of inputs)", Source(str(directory)))
    if directory is not None and not os.access(directory, os.X_OK):  # not even a name in it can be looked up
        raise InputError("cannot read this directory: Permission denied", Source(str(directory)))
    root = directory if directory is not None else Path.cwd()
    builder = HostBuilder(name or "", root, wanted)
    if not name:
        # The resolved directory's name: its own unless it is a link (resolving a parent keeps the last name)
        own = root.name not in ("", "..") and not os.path.islink(root)
        builder.host.name = root.name if own else builder.real_root.name or str(root)
    inputs = discover(root, builder.host) if directory is not None else SnapshotInputs()
    if explicit is not None:
        inputs = inputs.merged(explicit)
    builder.inputs = inputs
    if documents is None:
        documents = read_documents(builder, inputs)
    documents.accounted(builder)
    if inputs.is_empty() and not documents.declared:
        # what was refused, and the documents too large to be read (a note beside a host's other inputs)
        raise InputError(
            f"no inputs found{_refused([*builder.host.warnings, *builder.host.notes])}: expected files such as "
            "sysctl.txt, meminfo.txt, "
            "lscpu.txt, mounts.txt, sysfs.txt, "
            f"postgresql.conf, sysctl.d/, host.yaml, or configuration documents (Patroni, Kubernetes manifests…: "
            f"see the README's snapshot layout){_hosts_inside(root)}",
            Source(str(root)),
        )
    hosting = [document for document in documents.declared if document.hosting]
    # what the directory's other documents declare (a tuned profile, a kustomize patch) applies after the host's own
    # (an override only over a host of its kind)
    kinds = (None, *(own.kind for own in hosting[index:index + 1]))
    declared_here = [*hosting[index:index + 1], *(document for document in documents.declared
                                                  if not document.hosting and document.laid_over in kinds)]
    builder.host.add(Fact("run.year_month", run_year_month(), Source("<run>")))
    declared = _load_declared_host(builder, inputs)
    for document in declared_here:
        declared.update(document.host)
        builder.host.notes.extend(document.notes)
    if hosting:
        declared["name"] = host_names(hosting, builder.host.name, documents.overlay, declared.get("name"))[index]
        declared.setdefault("orchestrator", Located(hosting[index].kind, hosting[index].source))
    copied = _load_manifest(builder, inputs)
    _load_machine(builder, inputs)
    for document in declared_here:  # what a document sets of the machine, where the snapshot measured nothing
        for name, located in document.machine.items():
            if name not in builder.host.facts:
                builder.put(name, located)
    page_size = _base_page_size(builder, declared)
    _load_kernel(builder, inputs, [setting for document in declared_here for setting in document.sysctl], page_size)
    lines = ConfResult(settings=[setting for document in declared_here for setting in document.settings],
                       problems=[problem for document in declared_here for problem in document.problems])
    for document in declared_here:
        # a service unit's ExecStart options outrank postgresql.conf and ALTER SYSTEM, which a fix writes: the fix
        # says to change them in the unit (as a live server's command line)
        if not document.hosting and document.settings and document_kind(document.kind).on_command_line:
            builder.host.set_outside_files.update((setting.name, setting.source) for setting in document.settings)
    unseen = bool(hosting) and hosting[index].unseen_configuration
    unread: dict[str, Source] = {}
    if hosting and (configuration := hosting[index].configuration_file) is not None:
        unseen, unread = _configuration_file(builder, configuration, lines, hosting[index].image_configuration)
    elif hosting and (image := hosting[index].image_configuration) is not None:
        _image_configuration(builder, image)
    # a document declaring a PostgreSQL host runs it, on its defaults where it sets nothing (unless its
    # postgresql.conf is a file pgvet cannot see: nothing is known of it then)
    runs = bool(lines.settings or lines.problems or (hosting and not unseen))
    templated = _load_postgresql(builder, builder.inputs, declared, upgrade_to, lines if runs else None, copied)
    _derive_host(builder, declared)
    _load_storage(builder, inputs)
    running = inputs.first("sysctl")
    unknown = {**templated, **unread,
               **{fact: source for document in declared_here for fact, source in document.unknown.items()}}
    _unknown(builder.host, unknown, builder.display(running) if running is not None else None)
    return builder.host, documents


def _configuration_file(builder: HostBuilder, configuration: Located[str], lines: ConfResult,
                        image: Source | None) -> tuple[bool, dict[str, Source]]:
    """The file of the directory a document says the server reads as its postgresql.conf (a compose service's
    mounted config_file or data directory) takes the place of the directory's own postgresql.conf, unless one was
    given by name. Returns whether the host's configuration is unseen, and the parameters then unknown: when the
    directory lacks that file, every one but those the document sets (which win over the file) — unless the server
    then reads its ``image``'s own (a data directory mounted from the directory without postgresql.conf)."""
    inputs = builder.inputs
    if any(path in inputs.given for path in inputs.every("postgresql_conf")):
        return False, {}
    path = builder.root / configuration.value
    # resolved beneath the directory: a path out of it (the repository's word) is not looked up
    given_root = os.path.abspath(builder.root)
    real = real_path_within(os.path.join(given_root, configuration.value), os.path.realpath(builder.root), given_root)
    if real is not None and os.path.isfile(real):
        builder.inputs = SnapshotInputs({**inputs.paths, "postgresql_conf": [path]}, inputs.documents, inputs.given)
        return False, {}
    if image is not None:
        _image_configuration(builder, image)
        return False, {}
    builder.host.notes.append(f"{configuration.source}: postgres reads its parameters from {configuration.value}, "
                              "which is not in the directory (or leads out of it): those the document does not set "
                              "are unknown")
    return True, parameters_unknown(configuration.source, [setting.name for setting in lines.settings])


def _image_configuration(builder: HostBuilder, image: Source) -> None:
    """The server reads no file of the directory as its postgresql.conf (its image's own, or one its document
    declares): the directory's postgresql.conf and postgresql.auto.conf are not its own (said where the directory has
    one), unless given by name."""
    inputs = builder.inputs
    if any(path in inputs.given for path in inputs.every("postgresql_conf")):
        return
    own = [*inputs.every("postgresql_conf"), *inputs.every("postgresql_auto_conf")]
    if own:
        names = " and ".join(sorted({path.name for path in own}))
        builder.host.warnings.append(
            f"{image}: the directory's {names} is mounted nowhere postgres reads it (its data directory, or a -c "
            "config_file=…): not read for this host, whose container reads another (its image's own, initdb's, or "
            "one its document mounts)")
    paths = {kind: found for kind, found in inputs.paths.items()
             if kind not in ("postgresql_conf", "postgresql_auto_conf")}
    builder.inputs = SnapshotInputs(paths, inputs.documents, inputs.given)


def _unknown(host: HostFacts, unknown: Mapping[str, Source], running: str | None) -> None:
    """Facts a document sets to a value pgvet cannot know: their rules are not evaluated, with why — unless the
    running kernel's value is known (``sysctl.txt``)."""
    for name, source in unknown.items():
        fact = host.facts.get(name)
        if fact is not None and running is not None and fact.source.path == running:
            continue
        host.facts.pop(name, None)
        # the host's note at that line says why (a template's value, one from elsewhere, a tool's recommendation)
        host.unread[name] = (f"{name.partition('.')[2]} is set at {source} to a value pgvet cannot know (a "
                             "template's, or one set elsewhere: the host's note at that line says which)")


def _load_declared_host(builder: HostBuilder, inputs: SnapshotInputs) -> dict[str, Located[object]]:
    if (path := inputs.first("host_yaml")) is None:
        return {}
    text, display = builder.text(path)
    declared: dict[str, Located[object]] = dict(parse_host_yaml(text, display))
    return declared


# What each OS file of a snapshot gives: the namespaces of the facts and items read from it.
_FILE_NAMESPACES = {"meminfo.txt": ("meminfo",), "sysctl.txt": ("sysctl",), "lscpu.txt": ("cpu", "lscpu"),
                    "mounts.txt": ("mount",), "sysfs.txt": ("thp", "disk", "cgroup")}
NO_SERVER_HINT = ("give one with --dsn (`--dsn 'host=/var/run/postgresql user=postgres'`: a socket directory or a "
                  "host name), or with the PGHOST, PGPORT and PGUSER variables; a server that does not start is "
                  "judged from its files: copy its postgresql.conf (with postgresql.auto.conf, PG_VERSION and what it "
                  "includes) into the snapshot (--snapshot DIR) and run pgvet lint DIR")


def _load_manifest(builder: HostBuilder, inputs: SnapshotInputs) -> Mapping[str, str]:
    """collect.json: the host's name as collect recorded it (host.yaml's ``name`` still wins), its base page size
    as collect measured it (before host.yaml's ``page_size``), and what the
    collection could not read — shown as warnings, and the reason the rules reading it were not evaluated
    (``what was not read: why``, so that a report can shorten a repeated one to what comes before the colon).
    Returns the configuration files it copied, by their names in the snapshot, with the server files they copy."""
    if (path := inputs.first("collect_manifest")) is None:
        return {}
    from pgvet.inputs.collect_json import parse_collect_json  # slow to import: only for a collection

    text, display = builder.text(path)
    manifest = parse_collect_json(text, display)
    host = builder.host
    if manifest.hostname is not None:
        host.name = manifest.hostname.value
    if manifest.page_size is not None:
        builder.put("host.page_size", manifest.page_size)
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
        return manifest.copied
    for namespace in ("pg", "live", *LIVE_SCOPES):
        host.unread.setdefault(namespace, reason)
    return manifest.copied


def _base_page_size(builder: HostBuilder, declared: Mapping[str, Located[object]]) -> int:
    """The kernel's base page size (derived.base_page_size; the ratio/bytes pairs are judged in it): as collect
    measured it, else host.yaml's, else 64 kB on arm64 whose default huge pages are 512 MB or 16 GB (sizes of the
    64 kB granule alone; then host.page_size, from meminfo's Hugepagesize line), else x86-64's 4 kB."""
    facts = builder.host.facts
    for given in (facts.get("host.page_size"), declared.get("page_size")):
        if given is not None and isinstance(given.value, int):
            return given.value
    architecture, hugepagesize = facts.get("cpu.architecture"), facts.get("meminfo.hugepagesize")
    if (architecture is not None and architecture.value == "aarch64" and hugepagesize is not None
            and hugepagesize.value in (512 * 1024**2, 16 * 1024**3)):
        builder.host.add(Fact("host.page_size", 64 * 1024, hugepagesize.source))
        return 64 * 1024
    return sysctl.DEFAULT_PAGE_SIZE


def _load_kernel(builder: HostBuilder, inputs: SnapshotInputs, declared: Sequence[SysctlSetting], page_size: int,
                 ) -> None:
    """``declared``: the kernel settings of configuration documents (a tuned profile…), applied after sysctl.d
    and sysctl.conf; ``page_size``: the kernel's base page size."""
    running: dict[str, Located[int | str]] = {}
    keys = None if builder.wanted is None else _wanted_suffixes(builder.wanted, "sysctl.")
    running_text, running_display = "", ""
    if (path := inputs.first("sysctl")) is not None:
        running_text, running_display = builder.text(path)
        running = sysctl.parse_sysctl_output(running_text, running_display, keys)
        builder.put_all("sysctl", running)
        if not running_text.strip():  # a collection whose `sysctl -a` failed; the rules would only go unevaluated
            builder.host.warnings.append(f"{running_display}: the file is empty: no running kernel value was read "
                                         "(collect it again with `sysctl -a`)")
    occurrences: dict[str, list[sysctl.SysctlSetting]] = {}
    applied: list[sysctl.SysctlSetting] = []  # every line, in the order sysctl --system writes them
    files = [sysctl.parse_sysctl_conf(*builder.text(path, items="sysctl.conf and sysctl.d"))
             for path in inputs.every("sysctl_conf")]
    for setting in [*(setting for settings in files for setting in settings), *declared]:
        occurrences.setdefault(setting.key, []).append(setting)
        applied.append(setting)
        if setting.trailing is not None:
            builder.host.warnings.append(
                f"{setting.source}: `{setting.trailing}` after {setting.key} = {setting.value} is no comment to "
                "sysctl: it writes it too, and the kernel reads the number and ignores the rest (pgvet reads "
                f"{setting.value}); put the comment on a line of its own")
    if keys is not None and running_text and not occurrences.keys() <= keys:
        # declared keys are compared with their running values, wanted or not
        running.update(sysctl.parse_sysctl_output(running_text, running_display, occurrences.keys() - keys))
    # The ratio/bytes pairs as the kernel holds them once `sysctl --system` applies the files over what it runs: a
    # later write of one zeroes the other (vm.dirty_ratio and vm.dirty_bytes only when it changes the value it
    # runs), a refused write changes nothing (inputs/sysctl.py, paired_values).
    paired = sysctl.paired_values(
        applied, page_size, {key: held.value for key, held in running.items()
                             if key in sysctl.PAIRED_SYSCTLS and isinstance(held.value, int)}
    ) if occurrences.keys() & sysctl.PAIRED_SYSCTLS else {}
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
        held = running.get(key)
        if held is None or held.value == value:  # the line sets what runs: a comment above it speaks for both
            builder.host.sysctl_declared_at[key] = source
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
    ``declared.zeroed_by``, at ``declared.zeroed_at`` — or the kernel refuses it), the value the boot's
    systemd-sysctl leaves (``declared.at_boot``, written at ``declared.at_boot_at``: its order puts sysctl.conf
    before sysctl.d's later names), and the running value beside them when known (compared as text, as `sysctl`
    prints both)."""
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
        at_boot = [(place, setting.source.line or 0, setting) for setting in settings
                   if (place := sysctl.boot_order(setting.source.path)) is not None]
        # a pair's outcome depends on the order of both keys' writes; a tuned profile's line, on its daemon
        if key not in sysctl.PAIRED_SYSCTLS and len(at_boot) == len(settings):
            booted = max(at_boot, key=lambda line: line[:2])[2]
            item.put("declared.at_boot", str(booted.value), booted.source)
            item.put("declared.at_boot_at", f"{booted.source.path}:{booted.source.line}", booted.source)
        items.append(item)
    return items


def _load_machine(builder: HostBuilder, inputs: SnapshotInputs) -> None:
    if (path := inputs.first("meminfo")) is not None:
        text, display = builder.text(path)
        # mem_total and hugepagesize, wanted or not: host.ram and the base page size are derived from them
        names = None if builder.wanted is None else _wanted_suffixes(builder.wanted, "meminfo.") | {
            "mem_total", "hugepagesize"}
        builder.put_all("meminfo", parse_meminfo(text, display, names))
    if (path := inputs.first("lscpu")) is not None:
        text, display = builder.text(path)
        builder.put_all("cpu", parse_lscpu(text, display))
    if (path := inputs.first("sysfs")) is not None:
        text, display = builder.text(path, items="sysfs")
        dump = parse_sysfs(text, display)
        for key, located in dump.thp.items():
            builder.put(f"thp.{key}", located)
        if dump.cgroup_memory_max is not None:
            builder.put("cgroup.memory_max", dump.cgroup_memory_max)
        if dump.hugetlb is not None:
            builder.put("hugetlb.total", dump.hugetlb)
        builder.host.items["disk"] = _disk_items(dump.disks)


def _disk_items(disks: Mapping[str, Mapping[str, Located[int | str | bool]]]) -> list[Item]:
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


def _load_postgresql(builder: HostBuilder, inputs: SnapshotInputs, declared: Mapping[str, Located[object]],
                     upgrade_to: int | None, lines: ConfResult | None, copied: Mapping[str, str]) -> dict[str, Source]:
    """``lines``: the PostgreSQL parameters configuration documents set, applied after the files (None: no
    document declares a PostgreSQL host or sets a parameter); ``copied``: the files collect.json says it copied.
    Returns the parameters a template of the files sets (pgfacts.load)."""
    version = declared.get("pg_version")
    if version is None and (path := inputs.first("pg_version_file")) is not None:
        text, display = builder.text(path)
        version = parse_pg_version_file(text, display)
    return pgfacts.load(builder.host, builder.root, inputs, version, builder.wanted, upgrade_to, lines, copied)


_LIMITS = {"cgroup.memory_max": "cgroup memory limit", "host.memory_limit": "memory limit of its container or unit"}


def _derive_host(builder: HostBuilder, declared: Mapping[str, Located[object]]) -> None:
    """host.* facts: what rules use, from measured inputs first and host.yaml second."""
    facts = builder.host.facts
    for key, located in declared.items():
        if key in ("pg_version", "ram", "cpus", "name") or (key == "page_size" and "host.page_size" in facts):
            continue  # the page size `pgvet collect` measured (collect.json) first
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
    for limit in (facts.get("cgroup.memory_max"), facts.get("host.memory_limit")):
        if ram is not None and limit is not None and isinstance(limit.value, int) and limit.value < int(ram.value):
            builder.host.notes.append(f"host.ram capped by the {_LIMITS[limit.name]} ({limit.source})")
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


def _load_storage(builder: HostBuilder, inputs: SnapshotInputs) -> None:
    if (path := inputs.first("mounts")) is None:
        return
    text, display = builder.text(path, items="mounts")
    scope_storage(builder.host, parse_mounts(text, display))
