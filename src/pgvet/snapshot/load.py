"""Assemble the facts of one host from its inputs (discovery.py finds them in its directory).

Explicit files (``--sysctl F --meminfo F …``) may replace or complete what the directory holds. Every fact
keeps the file and line it came from; paths are shown relative to the host directory.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from functools import cached_property, lru_cache
from pathlib import Path

from pgvet.errors import InputError, UsageError
from pgvet.inputs import sysctl
from pgvet.inputs.documents import MAX_DOCUMENT_BYTES, DeclaredHost, recognise
from pgvet.inputs.documents._kustomize import KUSTOMIZATION_NAMES, Listed, overlay_path, read_listed
from pgvet.inputs.host_yaml import parse_host_yaml
from pgvet.inputs.lscpu import parse_lscpu
from pgvet.inputs.meminfo import parse_meminfo
from pgvet.inputs.mounts import parse_mounts
from pgvet.inputs.pg_version import parse_pg_version_file
from pgvet.inputs.postgresql_conf import ConfResult
from pgvet.inputs.reading import MAX_INPUT_BYTES, find_mark, read_text
from pgvet.inputs.registry import host_markers
from pgvet.inputs.sysctl import PairedValue, SysctlSetting
from pgvet.inputs.sysfs import is_virtual_disk, parse_sysfs
from pgvet.paths import link_out_of_repository, repository_of
from pgvet.provenance import Located, Source
from pgvet.snapshot import pgfacts
from pgvet.snapshot.discovery import SnapshotInputs, discover
from pgvet.snapshot.facts import LIVE_SCOPES, Fact, FactValue, HostFacts, Item, make_fact
from pgvet.snapshot.storage import scope_storage

MAX_HOST_BYTES = 2 * MAX_INPUT_BYTES
MAX_ITEM_LINES = 100_000


class _Builder:
    """Collects facts for one host, keeping the first error of each input as a warning."""

    def __init__(self, name: str, root: Path, wanted: frozenset[str] | None) -> None:
        self.root = root
        self.root_name = os.fspath(root)
        self.host = HostFacts(name=name, root=str(root))
        self.wanted = wanted
        self.bytes_read = 0
        self.item_lines: dict[str, int] = {}  # lines read so far of each kind of item input
        self.inputs = SnapshotInputs()  # the host's inputs, once found

    @cached_property
    def real_root(self) -> Path:
        return self.root.resolve()

    def display(self, path: Path) -> str:
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

    def text(self, path: Path, items: str | None = None) -> tuple[str, str]:
        """An input's text and its path as shown; ``items``: what its lines are, when each becomes an item
        (the lines of all the inputs of that kind count together)."""
        display = self.display(path)
        text = read_text(path, display, self.inputs.read_beneath(path, self.root))
        self.account(text, display, items)
        return text, display

    def account(self, text: str, display: str, items: str | None = None) -> None:
        """Count an input read against the host's bounds, and note whether it may hold suppression comments."""
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
        repository, target = out
        raise InputError(f"a symbolic link that leads out of its repository {repository} (to {target}): pgvet reads "
                         "no host a repository's link chooses; give that directory itself to lint it",
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
          upgrade_to: int | None, index: int, name: str | None = None, documents: _Documents | None = None,
          ) -> tuple[HostFacts, _Documents]:
    """The host of the directory's ``index``-th declared host (the directory's own when it declares none), and
    what its documents declare (``documents``: as an earlier call read them, for the directory's other hosts)."""
    if directory is not None and not os.path.isdir(directory):
        what = "not a directory" if os.path.lexists(directory) else "no such file or directory"
        raise InputError(f"{what} (a host is a directory of inputs)", Source(str(directory)))
    if directory is not None and not os.access(directory, os.X_OK):  # not even a name in it can be looked up
        raise InputError("cannot read this directory: Permission denied", Source(str(directory)))
    if directory is not None:
        _refuse_a_link_out_of_its_repository(directory)
    root = directory if directory is not None else Path.cwd()
    builder = _Builder(name or "", root, wanted)
    if not name:
        # The resolved directory's name: its own unless it is a link (resolving a parent keeps the last name)
        own = root.name not in ("", "..") and not os.path.islink(root)
        builder.host.name = root.name if own else builder.real_root.name or str(root)
    inputs = discover(root, builder.host) if directory is not None else SnapshotInputs()
    if explicit is not None:
        inputs = inputs.merged(explicit)
    builder.inputs = inputs
    if documents is None:
        documents = _read_documents(builder, inputs)
    documents.accounted(builder)
    if inputs.is_empty() and not documents.declared:
        # what was refused, and the documents too large to be read (a note beside a host's other inputs)
        raise InputError(
            f"no inputs found{_refused([*builder.host.warnings, *documents.notes])}: expected files such as "
            "sysctl.txt, meminfo.txt, "
            "lscpu.txt, mounts.txt, sysfs.txt, "
            f"postgresql.conf, sysctl.d/, host.yaml, or configuration documents (Patroni, Kubernetes manifests…: "
            f"see the README's snapshot layout){_hosts_inside(root)}",
            Source(str(root)),
        )
    hosting = [document for document in documents.declared if document.hosting]
    # what the directory's other documents declare (a tuned profile, a kustomize patch) applies after the host's own
    declared_here = [*hosting[index:index + 1], *(document for document in documents.declared if not document.hosting)]
    builder.host.add(Fact("run.year_month", run_year_month(), Source("<run>")))
    declared = _load_declared_host(builder, inputs)
    for document in declared_here:
        declared.update(document.host)
        builder.host.notes.extend(document.notes)
    if hosting:
        declared["name"] = _host_names(hosting, builder.host.name, documents.overlay, declared.get("name"))[index]
        declared.setdefault("orchestrator", Located(hosting[index].kind, hosting[index].source))
    _load_manifest(builder, inputs)
    _load_machine(builder, inputs)
    page_size = _base_page_size(builder, declared)
    _load_kernel(builder, inputs, [setting for document in declared_here for setting in document.sysctl], page_size)
    lines = ConfResult(settings=[setting for document in declared_here for setting in document.settings],
                       problems=[problem for document in declared_here for problem in document.problems])
    # a document declaring a PostgreSQL host runs it, on its defaults where it sets nothing (unless its
    # postgresql.conf is a file pgvet cannot see: nothing is known of it then)
    runs = bool(lines.settings or lines.problems or (hosting and not hosting[index].unseen_configuration))
    _load_postgresql(builder, inputs, declared, upgrade_to, lines if runs else None)
    _derive_host(builder, declared)
    _load_storage(builder, inputs)
    running = inputs.first("sysctl")
    _unknown(builder.host, {fact: source for document in declared_here for fact, source in document.unknown.items()},
             builder.display(running) if running is not None else None)
    return builder.host, documents


# File names a tool gives whatever the file holds: a host named after one is named after nothing of its own.
_CONVENTIONAL_STEMS = frozenset({"values", "main", "compose", "docker-compose"})


def _host_names(hosting: Sequence[DeclaredHost], directory: str, overlay: str | None,
                named: Located[object] | None) -> list[Located[object]]:
    """The names of the hosts the directory's documents declare: host.yaml's ``name`` when there is only one; else
    each its object's, told apart from the objects of that name elsewhere by what comes after it in parentheses —
    host.yaml's ``name``, else the kustomize overlay that declares it (``orders (overlays/staging)``: every overlay
    of a base declares the base's objects), and its file when the directory declares another of its name
    (``pg (a.yaml)``); objects of one name in one file (a manifest of each environment's Cluster) by their
    namespace (``orders (all.yaml, namespace prod)``), else by their order among those it does not tell apart
    (``orders (all.yaml, #2)``). One named after a file whose name the tool fixes (a Helm chart's values.yaml, an
    Ansible role's defaults/main.yml) has the directory's name before it instead (host.yaml's name when it has
    one), so that the charts of a repository are not all one host called "values"."""
    if named is not None and len(hosting) == 1:
        return [named]
    counts = Counter(document.name for document in hosting)
    names = []
    for document in hosting:
        qualifier = str(named.value) if named is not None else overlay
        name = document.name
        stem = os.path.basename(document.source.path).split(".", 1)[0]
        if stem in _CONVENTIONAL_STEMS and (name == stem or name.startswith(f"{stem}-")):  # values, values-read
            name, qualifier = f"{named.value if named is not None else directory}/{name}", None
        said = [part for part in (qualifier, document.source.path if counts[document.name] > 1 else None) if part]
        names.append((name, said))
    shown = [f"{name} ({', '.join(said)})" if said else name for name, said in names]
    clashes: dict[str, list[int]] = {}
    for index, text in enumerate(shown):
        clashes.setdefault(text, []).append(index)
    for indexes in clashes.values():
        if len(indexes) == 1:
            continue
        spaces = Counter(hosting[index].namespace for index in indexes)
        seen: Counter[str | None] = Counter()
        for index in indexes:
            space = hosting[index].namespace
            said = names[index][1]
            if space is not None and len(spaces) > 1:
                said.append(f"namespace {space}")
            if spaces[space] > 1:
                seen[space] += 1
                said.append(f"#{seen[space]}")
            shown[index] = f"{names[index][0]} ({', '.join(said)})"
    return [Located(text, document.source) for text, document in zip(shown, hosting, strict=True)]


def _unknown(host: HostFacts, unknown: Mapping[str, Source], running: str | None) -> None:
    """Facts a document sets to a value pgvet cannot know: their rules are not evaluated, with why — unless the
    running kernel's value is known (``sysctl.txt``)."""
    for name, source in unknown.items():
        fact = host.facts.get(name)
        if fact is not None and running is not None and fact.source.path == running:
            continue
        host.facts.pop(name, None)
        host.unread[name] = (f"{name.partition('.')[2]} is set at {source} to a value pgvet cannot know (a template "
                             "it does not render)")


# Hosts the documents of one directory may declare: a repository's directory holds a cluster's members, a
# manifest a few clusters; many more are a mistake or a hostile file (each host is read with the directory).
MAX_DECLARED_HOSTS = 200


@dataclass(slots=True)
class _Documents:
    """What a directory's configuration documents declare, read once for all its hosts: the texts read (counted
    against each host's bounds), the declared hosts and machine settings, what could not be read."""

    texts: list[tuple[str, str]] = field(default_factory=list)  # (the file as shown, its text)
    declared: list[DeclaredHost] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    overlay: str | None = None  # the directory as its hosts' names say it, when it is a kustomize overlay

    def accounted(self, builder: _Builder) -> None:
        """The documents counted as inputs of the host being built, and what was said of them."""
        for display, text in self.texts:
            builder.account(text, display)
        builder.host.warnings.extend(self.warnings)
        builder.host.notes.extend(self.notes)


_KUSTOMIZATION_NAMES = frozenset(name.lower() for name in KUSTOMIZATION_NAMES)


def _read_documents(builder: _Builder, inputs: SnapshotInputs) -> _Documents:
    """The hosts and machine settings the directory's configuration documents declare, in the order of their
    files, then those its kustomization lists in its subdirectories and its components (_kustomize.read_listed); a
    file that is no document pgvet reads is no input (their hosts' names: _host_names). InputError for a kustomize
    Component: its documents are read with the kustomizations that list it, never a host of their own."""
    documents = _Documents()
    declared = documents.declared
    listing = builder.host.listing  # lower-cased: kustomize's Kustomization is no name a document has
    listed = read_listed(builder.root) if listing and not listing.isdisjoint(_KUSTOMIZATION_NAMES) else None
    if listed is not None and listed.component:
        raise InputError("a kustomize Component (kind: Component): its documents change the resources of the "
                         "kustomizations that list it under components:, and are read with them, not as hosts of "
                         "their own: lint those", Source(listed.shown))
    candidates = [(path, builder.root) for path in inputs.documents]
    if listed is not None:
        documents.warnings.extend(listed.warnings)
        candidates += [(Path(path), Path(beneath)) for path, beneath in listed.files]
    read = 0
    seen: set[str] = set()
    for path, beneath in candidates:
        display = builder.display(path)
        if display in seen:  # listed twice (a resource patched by itself, two components' one file)
            continue
        seen.add(display)
        try:
            size = os.stat(path).st_size
            text = read_text(path, display, beneath) if size <= MAX_DOCUMENT_BYTES else ""
        except (OSError, InputError) as error:  # perhaps no document at all: the host is read without it
            reason = error.message if isinstance(error, InputError) else error.strerror or str(error)
            documents.warnings.append(f"{display}: not read as a configuration document: {reason}")
            continue
        if size > MAX_DOCUMENT_BYTES:
            documents.notes.append(f"{display}: not read as a configuration document: {size} bytes, more than "
                                   f"one holds ({MAX_DOCUMENT_BYTES})")
            continue
        kind = recognise(display, text)
        if kind is None:
            continue
        documents.texts.append((display, text))
        # the host's bound on what it reads, before parsing: a directory of many documents is refused at the one
        # that crosses it, not after parsing them all (YAML is slow to parse)
        read += len(text)
        if read > MAX_HOST_BYTES:
            raise InputError(f"with this file, the directory's documents hold more than {MAX_HOST_BYTES} bytes, more "
                             "than pgvet reads in one host: it does not judge them", Source(display))
        declared.extend(kind.parse(text, display))
        if sum(document.hosting for document in declared) > MAX_DECLARED_HOSTS:
            raise InputError(f"with this file, the directory's documents declare more than {MAX_DECLARED_HOSTS} "
                             "hosts, more than pgvet reads in one directory: give each cluster a directory of its "
                             "own", Source(display))
    if declared and listed is not None:
        _kustomize_overlay(builder, listed, documents)
    return documents


def _kustomize_overlay(builder: _Builder, listed: Listed, documents: _Documents) -> None:
    """A warning for a directory that is a kustomize overlay: its documents are judged as written, without the
    bases and patches ``kustomize build`` would merge (pgvet does not build overlays); and, when it takes bases
    or components from elsewhere, how its hosts' names say it (``documents.overlay``)."""
    _objects_of_the_kustomization(builder, listed, documents)
    what = listed.overlay
    if what is None:
        return
    documents.warnings.append(
        f"{listed.shown}: a kustomize overlay ({what.said()}): pgvet judges the directory's documents as written, "
        "not what `kustomize build` renders (bases not merged, patches not applied); lint the rendered manifests")
    if what.bases or what.components:
        real = os.fspath(builder.real_root)
        documents.overlay = overlay_path(real, what.bases + what.components, repository_of(real))


def _objects_of_the_kustomization(builder: _Builder, listed: Listed, documents: _Documents) -> None:
    """One host for each object of a kustomization, as kustomize applies its patches and its components' to its
    resources. A patch of an object a resource declares (the directory's, a component's) is no host of its own:
    read whole, a partial manifest would be judged on the defaults its reader fills in (one instance, no memory
    limit), and laid over the object those defaults would replace its values. Nor is a component's document of an
    object the kustomization declares itself, or an earlier component. They are left out, with a note (the
    overlay's warning says its patches are not applied). A patch of an object from a base elsewhere stays a host,
    judged as written: the directory's own, else the first component's."""
    real_root = os.fspath(builder.real_root)
    hosting = [(document, os.path.realpath(os.path.join(real_root, document.source.path)))
               for document in documents.declared if document.hosting]
    resources: dict[tuple[str, str], str] = {}
    for document, path in hosting:
        if path in listed.resources:
            resources.setdefault((document.kind, document.name), document.source.path)
    kept: dict[tuple[str, str], str] = {}
    for document, path in hosting:
        key = (document.kind, document.name)
        if path in listed.patches and path not in listed.resources and key in resources:  # not one patching itself
            documents.declared.remove(document)
            documents.notes.append(f"{document.source.path}: a kustomize patch of {document.name}, which "
                                   f"{resources[key]} declares: not a host of its own, and not applied")
        elif path not in listed.components:
            kept.setdefault(key, document.source.path)
    for document, path in hosting:
        key = (document.kind, document.name)
        if path not in listed.components or document not in documents.declared:
            continue
        if key in kept:
            documents.declared.remove(document)
            documents.notes.append(f"{document.source.path}: {document.name} of the kustomize component "
                                   f"{listed.components[path]}, which {kept[key]} declares too: not a host of its "
                                   "own, and not applied")
        else:
            kept[key] = document.source.path


def _load_declared_host(builder: _Builder, inputs: SnapshotInputs) -> dict[str, Located[object]]:
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


def _load_manifest(builder: _Builder, inputs: SnapshotInputs) -> None:
    """collect.json: the host's name as collect recorded it (host.yaml's ``name`` still wins), its base page size
    as collect measured it (before host.yaml's ``page_size``), and what the
    collection could not read — shown as warnings, and the reason the rules reading it were not evaluated
    (``what was not read: why``, so that a report can shorten a repeated one to what comes before the colon)."""
    if (path := inputs.first("collect_manifest")) is None:
        return
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
        return
    for namespace in ("pg", "live", *LIVE_SCOPES):
        host.unread.setdefault(namespace, reason)


def _base_page_size(builder: _Builder, declared: Mapping[str, Located[object]]) -> int:
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


def _load_kernel(builder: _Builder, inputs: SnapshotInputs, declared: Sequence[SysctlSetting], page_size: int,
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


def _load_machine(builder: _Builder, inputs: SnapshotInputs) -> None:
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


def _load_postgresql(builder: _Builder, inputs: SnapshotInputs, declared: Mapping[str, Located[object]],
                     upgrade_to: int | None, lines: ConfResult | None) -> None:
    """``lines``: the PostgreSQL parameters configuration documents set, applied after the files (None: no
    document declares a PostgreSQL host or sets a parameter)."""
    version = declared.get("pg_version")
    if version is None and (path := inputs.first("pg_version_file")) is not None:
        text, display = builder.text(path)
        version = parse_pg_version_file(text, display)
    pgfacts.load(builder.host, builder.root, inputs, version, builder.wanted, upgrade_to, lines)


_LIMITS = {"cgroup.memory_max": "cgroup memory limit", "host.memory_limit": "memory limit of its container or unit"}


def _derive_host(builder: _Builder, declared: Mapping[str, Located[object]]) -> None:
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


def _load_storage(builder: _Builder, inputs: SnapshotInputs) -> None:
    if (path := inputs.first("mounts")) is None:
        return
    text, display = builder.text(path, items="mounts")
    scope_storage(builder.host, parse_mounts(text, display))
