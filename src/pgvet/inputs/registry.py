"""Every kind of input pgvet reads, in one table: the names of its files in a snapshot, its command-line
option, the facts it gives with their types, its parser and its documentation line.

What is generated from it: the discovery of a host directory's inputs (snapshot/discovery.py), the files
that make a directory a host (HOST_MARKERS), the types of the facts rules may read (engine/factnames.py),
the files ``pgvet collect`` writes from the machine (live/host.py), the explicit input options of the CLI
(``input_options``, ``given_inputs``) and the list of inputs in docs/facts.md (``inputs_markdown``).
docs/ARCHITECTURE.md, "Adding an input kind", says what a new kind takes.

Parsers are named, not imported: this table is read at every start, and some parsers' modules (pg_settings,
alter SQL) take long to import; ``InputKind.parser()`` imports the one asked for.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType, ModuleType
from typing import Literal, NamedTuple

# The type of a fact, as rules see it (engine/factnames.py checks expressions with them).
FactType = Literal["int", "float", "number", "bytes", "seconds", "bool", "text", "any"]


class InputKind(NamedTuple):
    """One kind of input file.

    ``name`` is the kind's key everywhere (SnapshotInputs, collect.json's manifest); ``file_names`` are the
    names it has in a snapshot directory, the first present wins; ``directory``: a directory of such files
    (sysctl.d), read in the order its ``directory_order`` function gives. ``facts``: the facts it gives and
    their types — a name ending in ``.`` is an open prefix (any key under it, of type ``any``); facts the
    snapshot derives from several inputs (host.ram…) are engine/factnames.py's. ``marks_host``: its file
    makes a directory a host (a file given alone is linted with the nearest such directory above it).
    ``collected``: ``pgvet collect`` writes it from the machine under its first file name (live/host.py).
    """

    name: str
    file_names: tuple[str, ...]
    doc: str
    parser_module: str
    parser_function: str
    option: str | None = None  # read from a host directory only when None
    option_help: str = ""
    facts: Mapping[str, FactType] = MappingProxyType({})
    many: bool = False  # several files (the option may be repeated)
    directory: str | None = None
    directory_order: str = ""  # the function of parser_module that orders the directory's file names
    marks_host: bool = True
    collected: bool = False

    @property
    def file_name(self) -> str:
        """Its usual name in a snapshot (what ``pgvet collect`` writes)."""
        return self.file_names[0]

    @property
    def parameter(self) -> str:
        """The option's parameter name in Python (``--pg-settings`` → ``pg_settings``); the kind's name without one."""
        return self.name if self.option is None else self.option.removeprefix("--").replace("-", "_")

    def parser(self) -> Callable[..., object]:
        """The pure parser: text and the path to show → the typed values, each with its file and line."""
        parse: Callable[..., object] = getattr(self._module(), self.parser_function)
        return parse

    def order(self, names: Iterable[str]) -> list[str]:
        """The names of ``directory``'s files that are inputs, in the order they apply."""
        ordered: Callable[[Iterable[str]], list[str]] = getattr(self._module(), self.directory_order)
        return ordered(names)

    def _module(self) -> ModuleType:
        return importlib.import_module(f"pgvet.inputs.{self.parser_module}")


_MEMINFO_COUNTS = ("hugepages_total", "hugepages_free", "hugepages_rsvd", "hugepages_surp", "hugepages_in_use")
_MEMINFO_BYTES = (
    "mem_total", "mem_free", "mem_available", "buffers", "cached", "swap_cached", "active", "inactive",
    "active_anon", "inactive_anon", "active_file", "inactive_file", "unevictable", "mlocked",
    "swap_total", "swap_free", "zswap", "zswapped", "dirty", "writeback", "anon_pages", "mapped", "shmem",
    "k_reclaimable", "slab", "s_reclaimable", "s_unreclaim", "kernel_stack", "page_tables",
    "sec_page_tables", "nfs_unstable", "bounce", "writeback_tmp", "commit_limit", "committed_as",
    "vmalloc_total", "vmalloc_used", "vmalloc_chunk", "percpu", "hardware_corrupted", "anon_huge_pages",
    "shmem_huge_pages", "shmem_pmd_mapped", "file_huge_pages", "file_pmd_mapped", "hugepagesize",
    "hugetlb", "direct_map_4k", "direct_map_2m", "direct_map_1g", "balloon", "unaccepted", "cma_total", "cma_free",
)

_CONF_ITEMS: dict[str, FactType] = {
    "setting.name": "text", "setting.value": "text", "setting.file": "text", "setting.line": "int",
    "setting.raw": "text", "setting.known": "bool", "setting.placeholder": "bool", "setting.suggestion": "text",
    "setting.removed_in": "text", "setting.replacement": "text",
    "setting.replacement_value": "text", "setting.invalid": "bool", "setting.error": "text",
    "setting.hint": "text", "setting.context": "text", "setting.unit": "text", "setting.canonical": "any",
    "setting.bare_number": "bool", "setting.occurrences": "int", "setting.effective": "bool",
    "setting.occurrences_in_kind": "int", "setting.last_in_kind": "bool",
    "setting.applied": "bool", "setting.skipped_invalid": "text", "setting.build_option": "text",
    "setting.build_configure": "text", "setting.build_mainstream": "bool",
    "setting.overridden_by": "text", "setting.overridden_in_auto_conf": "bool", "setting.in_auto_conf": "bool",
    "problem.kind": "text", "problem.message": "text", "problem.fatal": "bool", "problem.target": "text",
}

# In the order discovery looks for them (a directory's refused files are said in this order); sysctl.d and
# sysctl.conf last.
INPUT_KINDS: tuple[InputKind, ...] = (
    InputKind(
        "sysctl", ("sysctl.txt", "sysctl-a.txt"), "running kernel values, from `sysctl -a`", "sysctl",
        "parse_sysctl_output", option="--sysctl", option_help="Output of `sysctl -a`.",
        facts={"sysctl.": "any"}, collected=True),
    InputKind(
        "meminfo", ("meminfo.txt", "meminfo"), "memory, huge pages and commit limit, from a copy of `/proc/meminfo`",
        "meminfo", "parse_meminfo", option="--meminfo", option_help="A copy of /proc/meminfo.",
        facts={**{f"meminfo.{name}": "bytes" for name in _MEMINFO_BYTES},
               **{f"meminfo.{name}": "int" for name in _MEMINFO_COUNTS}},
        collected=True),
    InputKind(
        "lscpu", ("lscpu.txt", "lscpu.json"),
        "CPUs, sockets, NUMA nodes and hypervisor, from `lscpu` or `lscpu -J` (text first: its values have lines)",
        "lscpu", "parse_lscpu", option="--lscpu", option_help="Output of `lscpu` or `lscpu -J`.",
        facts={"cpu.count": "int", "cpu.online": "text", "cpu.sockets": "int", "cpu.cores_per_socket": "int",
               "cpu.threads_per_core": "int", "cpu.numa_nodes": "int", "cpu.architecture": "text",
               "cpu.vendor": "text", "cpu.model_name": "text", "cpu.hypervisor": "text",
               "cpu.virtualization_type": "text"},
        collected=True),
    InputKind(
        "mounts", ("mounts.txt", "mount.txt", "findmnt.txt"),
        "file systems and their options, from `/proc/mounts`, `mount` or `findmnt -l`", "mounts", "parse_mounts",
        option="--mounts", option_help="`mount`, /proc/mounts or `findmnt -l`.",
        facts={"mount.device": "text", "mount.point": "text", "mount.fstype": "text", "mount.options": "text",
               "mount.holds_pgdata": "bool", "mount.holds_wal": "bool", "mount.holds_tablespace": "bool",
               "mount.is_root_of_data": "bool", "mount.scoped": "bool"},
        collected=True),
    InputKind(
        "sysfs", ("sysfs.txt",),
        "transparent huge pages, disk queues, the cgroup memory limit and the huge page pools, from `grep -H .` "
        "over sysfs files",
        "sysfs", "parse_sysfs", option="--sysfs", option_help="The `grep -H .` dump of sysfs files.",
        facts={"thp.enabled": "text", "thp.defrag": "text", "cgroup.memory_max": "bytes", "hugetlb.total": "bytes",
               "disk.name": "text", "disk.scheduler": "text", "disk.rotational": "bool", "disk.read_ahead_kb": "int",
               "disk.holds_pgdata": "bool", "disk.virtual": "bool"},
        collected=True),
    InputKind(
        "host_yaml", ("host.yaml", "host.yml"),
        "what cannot be read from the machine: version, workload, storage, RAID…", "host_yaml", "parse_host_yaml",
        option="--host-yaml", option_help="host.yaml: what cannot be read.",
        facts={"host.workload": "text", "host.storage": "text", "host.raid_level": "int", "host.raid_disks": "int",
               "host.dedicated": "bool", "host.bbu": "bool", "host.data_directory": "text",
               "host.wal_directory": "text", "host.pg_instances": "int", "host.tablespaces": "text",
               "host.swap": "bytes", "host.declared_ram": "bytes",
               "host.page_size": "bytes"}),
    InputKind(
        "pg_version_file", ("PG_VERSION",), "the major version of the data directory", "pg_version",
        "parse_pg_version_file", facts={"pg.version": "int"}),
    InputKind(
        "postgresql_conf", ("postgresql.conf",),
        "PostgreSQL's settings as the server reads them, includes followed", "postgresql_conf", "parse_conf_text",
        option="--postgresql-conf", option_help="postgresql.conf (includes followed).",
        facts={"pg.": "any", "pg_conf.": "any", **_CONF_ITEMS}),
    InputKind(
        "postgresql_auto_conf", ("postgresql.auto.conf",),
        "what ALTER SYSTEM wrote, read after postgresql.conf", "postgresql_conf", "parse_conf_text",
        option="--auto-conf", option_help="postgresql.auto.conf."),
    InputKind(
        "pg_settings", ("pg_settings.json",),
        "a running server's settings, file settings, statistics and lists, written by `pgvet collect`",
        "pg_settings", "parse_pg_settings_json",
        option="--pg-settings", option_help="pg_settings.json from `pgvet collect`.",
        facts={"live.": "any", "pg.server_version": "text", "pg.prerelease": "text"}),
    InputKind(
        "collect_manifest", ("collect.json",),
        "the host's name as `pgvet collect` recorded it, and what it could not read", "collect_json",
        "parse_collect_json", marks_host=False),
    InputKind(
        "sysctl_conf", ("sysctl.conf",),
        "declared kernel values, applied as `sysctl --system` applies them (sysctl.d/*.conf by name, then "
        "sysctl.conf)", "sysctl", "parse_sysctl_conf",
        option="--sysctl-conf", option_help="sysctl.conf / sysctl.d file (repeat).",
        facts={"sysctl_conf.": "any", "declared.key": "text", "declared.value": "text", "declared.running": "text",
               "declared.ignore_errors": "bool", "declared.written": "text", "declared.zeroed_by": "text",
               "declared.zeroed_at": "text", "declared.at_boot": "text", "declared.at_boot_at": "text"},
        many=True, directory="sysctl.d", directory_order="sysctl_d_order"),
)

KINDS: Mapping[str, InputKind] = MappingProxyType({kind.name: kind for kind in INPUT_KINDS})

# The order of the options in a command's help.
_OPTION_ORDER = ("sysctl", "sysctl_conf", "meminfo", "lscpu", "mounts", "sysfs", "host_yaml", "postgresql_conf",
                 "postgresql_auto_conf", "pg_settings")


def input_options() -> tuple[InputKind, ...]:
    """The kinds a command may be given one by one (``--meminfo F``…), in the order of its help."""
    with_option = [kind for kind in INPUT_KINDS if kind.option is not None]
    return tuple(sorted(with_option, key=lambda kind: (*_OPTION_ORDER, kind.name).index(kind.name)))


# The descriptions of a host come first among its markers: a message quotes the first four.
_MARKERS_FIRST = ("host_yaml", "postgresql_conf", "postgresql_auto_conf")


def host_markers() -> tuple[str, ...]:
    """The names that make a directory a host: every file name and directory of the kinds that mark one."""
    names: list[str] = []
    for kind in sorted(INPUT_KINDS, key=lambda kind: kind.name not in _MARKERS_FIRST):
        if kind.marks_host:
            names.extend(kind.file_names)
            if kind.directory is not None:
                names.append(kind.directory)
    return tuple(names)


def input_fact_types() -> dict[str, FactType]:
    """The facts the inputs give, with their types (open prefixes, ending in '.', left out)."""
    return {name: fact_type for kind in INPUT_KINDS for name, fact_type in kind.facts.items()
            if not name.endswith(".")}


def open_prefixes() -> tuple[str, ...]:
    """The namespaces whose keys are open (any sysctl key, a live server's statistics)."""
    return tuple(name for kind in INPUT_KINDS for name in kind.facts if name.endswith(".") and name not in
                 ("pg.", "pg_conf."))  # PostgreSQL parameters are typed by the parameter tables


def collected_file_names() -> tuple[str, ...]:
    """The OS files ``pgvet collect`` writes from the machine, by their snapshot names."""
    return tuple(kind.file_name for kind in INPUT_KINDS if kind.collected)


def inputs_markdown() -> str:
    """docs/facts.md's table of inputs."""
    rows = ["| input | file names in a snapshot | option | what it gives |", "|---|---|---|---|"]
    for kind in INPUT_KINDS:
        names = [*(f"`{name}`" for name in kind.file_names), *([f"`{kind.directory}/*.conf`"] if kind.directory
                                                              else [])]
        option = f"`{kind.option}`" if kind.option is not None else "—"
        rows.append(f"| {kind.name} | {', '.join(names)} | {option} | {kind.doc} |")
    return "\n".join(rows) + "\n"
