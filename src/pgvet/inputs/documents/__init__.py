"""Configuration documents: the files where teams keep PostgreSQL configuration today — Patroni YAML, Kubernetes
operators' manifests, Helm values, Ansible variables, compose files, tuned profiles, systemd drop-ins.

Each kind is one module of this package that defines ``KIND``, a DocumentKind: how its files are recognised
(by name and content, never by name alone: a repository names its files as it likes) and its parser, a pure
function ``text, path → list[DeclaredHost]``. The modules are found here by their names (no list to keep):
adding a kind is adding its module and its tests. docs/integrations.md says what each kind gives.

What a document declares maps onto the facts every rule already reads: its PostgreSQL parameters become
``setting`` lines at their YAML line (snapshot/pgfacts.py judges them as lines of postgresql.conf, applied
after it), its resources the host.yaml keys (``ram``, ``cpus``…), its kernel settings lines of sysctl.d.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from types import MappingProxyType
from typing import Any, NamedTuple, Protocol

from pgvet.errors import ParseError
from pgvet.inputs.postgresql_conf import ConfDirective, ConfProblem, ConfSetting, parse_conf_text, quote_setting
from pgvet.inputs.registry import FactType
from pgvet.inputs.sysctl import SysctlSetting
from pgvet.pgparams import known_parameter_names
from pgvet.provenance import Located, Source
from pgvet.safeyaml import YamlError, load_yaml, load_yaml_documents


@dataclass(slots=True)
class DeclaredHost:
    """One PostgreSQL host as a document declares it: a CloudNativePG Cluster, a Patroni member, a compose service…
    (``hosting``), or what a document says of the machine of the hosts beside it (a tuned profile, a systemd
    drop-in, Ansible variables holding only kernel settings: not ``hosting``, it joins every host of its
    directory, and is a host of its own only where it is alone).

    ``settings``: PostgreSQL parameters in the order they apply, each at its line (``conf_setting`` makes one
    from a YAML value). ``host``: what host.yaml would say, by host.yaml's keys (inputs/host_yaml.py: ``ram``,
    ``cpus``, ``pg_version``, ``workload``…) plus DECLARED_HOST_FACTS' keys. ``sysctl``: kernel settings, applied
    after sysctl.d. ``problems``: what the tool that reads the document refuses or ignores (a parameter an operator
    manages itself…), each at its line: ``problem`` items (PGV407 reports the fatal ones). ``notes``: what was
    skipped and why (a line left unrendered by a template), said with the host's report. ``unknown``: the facts
    (``pg.ssl``, ``sysctl.vm.swappiness``) the document sets to a value pgvet cannot know (a template's), each at
    its line: the rules reading them are not evaluated, with why, rather than judged on a default. ``namespace``:
    a Kubernetes object's metadata.namespace, what tells it from an object of its name beside it (kubectl's
    ``namespace/name``); None where the manifest leaves it to where it is applied. ``unseen_configuration``: the
    host's postgresql.conf is a file pgvet cannot see: a host that sets nothing else is not judged on PostgreSQL's
    defaults. ``configuration_file``: the host's postgresql.conf is that file of the directory, not its own;
    ``image_configuration``: the host's postgresql.conf is its image's own, not the directory's.
    ``machine``: facts of the machine a document sets that a snapshot measures, by their names (``thp.enabled``
    from a tuned profile): the host's where its snapshot measured none.
    """

    kind: str  # the DocumentKind's name
    name: str  # the host's name: the object's (metadata.name, Patroni's name, the compose service)
    source: Source  # where the object starts
    settings: list[ConfSetting] = field(default_factory=list)
    host: dict[str, Located[Any]] = field(default_factory=dict)
    sysctl: list[SysctlSetting] = field(default_factory=list)
    problems: list[ConfProblem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    unknown: dict[str, Source] = field(default_factory=dict)
    machine: dict[str, Located[Any]] = field(default_factory=dict)
    hosting: bool = True
    namespace: str | None = None
    unseen_configuration: bool = False  # its configuration is where pgvet cannot see (a ConfigMap, a mount)
    # the file of the directory (a path relative to it) the server reads as its postgresql.conf, where the document
    # says so (a compose service's config_file mounted from ./config/postgresql.conf): the directory's own otherwise
    configuration_file: Located[str] | None = None
    # where the server reads its image's own postgresql.conf (initdb's, in the container's data directory) when
    # ``configuration_file`` is not in the directory or not given: the directory's postgresql.conf and
    # postgresql.auto.conf are then not this host's (a compose service of the postgres image mounting neither)
    image_configuration: Source | None = None
    # the kind of the host it is merged over (a Helm values override, given after the chart's values): it joins
    # only a host of that kind, and is no input where the directory has none
    laid_over: str | None = None


def any_parameter_unknown(declared: DeclaredHost, source: Source, besides: Iterable[str] = ()) -> None:
    """A parameter whose name a template or a variable writes may be any of them: every one is unknown at its line
    (not judged on its default), but ``besides`` — those set literally beside it, which it cannot name too."""
    declared.unknown.update(parameters_unknown(source, besides))


def parameters_unknown(source: Source, besides: Iterable[str] = ()) -> dict[str, Source]:
    """Every parameter's fact (``pg.work_mem``) unknown at ``source``, but ``besides``."""
    kept = {name.strip().lower() for name in besides}
    return {f"pg.{name}": source for name in known_parameter_names() if name not in kept}


def yaml_parameter(name: str, value: str) -> str:
    """A PostgreSQL parameter as a YAML mapping's entry, its value a single-quoted string (YAML escapes a quote in
    it as PostgreSQL does; the operators take parameters as strings)."""
    return f"{name}: {single_quoted(value)}"


def conf_parameter(name: str, value: str) -> str:
    """A PostgreSQL parameter as a line of postgresql.conf (a text of postgresql.conf a document holds, as a Helm
    chart's extendedConfiguration)."""
    return f"{name} = {quote_setting(value)}"


def single_quoted(value: str) -> str:
    """A value in YAML's single quotes, a quote in it doubled (a backslash is no escape there)."""
    return "'" + value.replace("'", "''") + "'"


class SourcedValue(Protocol):
    """A host's fact as a kind's ``running_steps`` reads it (snapshot.facts.Fact): its value and where it is set."""

    @property
    def value(self) -> object: ...

    @property
    def source(self) -> Source: ...


class RunningStep(NamedTuple):
    """A step by hand a running system needs for some parameter changes to take effect (DocumentKind.running_steps)."""

    parameters: tuple[str, ...]  # the parameters it applies
    text: str
    place: str  # where in the document these parameters are set ("postgres0.yml's postgresql.parameters")


class DocumentKind(NamedTuple):
    """One kind of configuration document.

    ``suffixes``: the file names it may have (``.yaml``, ``.yml``, ``tuned.conf``…), compared with the end of
    the lower-cased name; ``recognises(name, text)`` then tells by content (cheap: it runs on every such file of a
    repository); ``parse(text, path)`` reads it (ParseError at the line for what the tool itself would refuse).
    Recognise only what declares something: a file recognised that declares nothing is no input.
    ``parameter(name, value)``: a PostgreSQL parameter as the document writes one (what `pgvet fix` shows);
    ``parameter_forms``: how it is written instead where the host's document holds its parameters in another form
    (``host.parameter_form``: a compose command given as a list).
    ``running_steps(facts, changes)``: what a running system needs besides the document's edit for parameter changes
    (name → value) to take effect, from the host's facts: each step's text and the parameters it covers (Patroni:
    `patronictl edit-config` for the parameters its DCS holds, whose bootstrap section applies only to a new
    cluster). None: the document's edit is all (an operator applies its manifest).
    ``on_command_line``: the tool passes the parameters on postgres' command line (compose's ``-c`` options), which
    outranks postgresql.conf and ALTER SYSTEM, rather than writing postgresql.conf from them.
    """

    name: str
    doc: str  # one line for docs/integrations.md and `pgvet facts`
    suffixes: tuple[str, ...]
    recognises: Callable[[str, str], bool]
    parse: Callable[[str, str], list[DeclaredHost]]
    parameter: Callable[[str, str], str] = yaml_parameter
    parameter_forms: Mapping[str, Callable[[str, str], str]] = MappingProxyType({})
    running_steps: Callable[[Mapping[str, SourcedValue], Mapping[str, str]], list[RunningStep]] | None = None
    on_command_line: bool = False

    def writes_parameter(self, form: str | None) -> Callable[[str, str], str]:
        """How a host's document writes a parameter, by its ``host.parameter_form`` (None: the kind's one form)."""
        return self.parameter_forms.get(form or "", self.parameter)


# The host facts documents give beyond host.yaml's keys (DeclaredHost.host); the snapshot turns each into host.<key>.
DECLARED_HOST_FACTS: Mapping[str, FactType] = {
    "memory_limit": "bytes",  # a container's or pod's memory limit: the RAM of every memory formula
    "memory_request": "bytes",
    "cpu_limit": "number",
    "hugepages": "bytes",  # the huge pages a pod requests (hugepages-2Mi, hugepages-1Gi) or a unit may lock
    "hugepage_size": "bytes",
    "shm_size": "bytes",  # a container's /dev/shm (compose shm_size; 64 MiB by default in Docker)
    "instances": "int",  # the instances of a cluster (CNPG spec.instances, Zalando numberOfInstances)
    "orchestrator": "text",  # the kind of the document that declares the host (snapshot/load.py sets it)
    "parameter_form": "text",  # the form its parameters are written in, where the kind has several (a list command)
    # where a document without a parameters block takes one (spec.postgresql.parameters): what `pgvet fix` says
    "parameters_path": "text",
    # the parameters whose value a Patroni member takes from its DCS (bootstrap.dcs's, not set locally), by name
    "dcs_parameters": "text",
}


def conf_setting(name: str, value: object, source: Source) -> ConfSetting:
    """A PostgreSQL parameter set in a document, as the line of postgresql.conf it stands for. YAML's booleans
    become on/off and numbers their decimal text (what Patroni and the operators write); the rest as text."""
    if isinstance(value, bool):
        text = "on" if value else "off"
    elif value is None:
        text = ""
    else:
        text = str(value)
    folded = name.strip().lower()
    return ConfSetting(folded, text, text, not isinstance(value, (bool, int, float)), source, name.strip())


def embedded_conf(declared: DeclaredHost, text: str, key_line: int, path: str, written_to: str,
                  ) -> list[ConfSetting | ConfDirective]:
    """A postgresql.conf text held in a YAML value (a ConfigMap's key, a chart's value): its settings and include
    lines, each at its line of the YAML file (a literal block keeps the lines; any other scalar is one place, its
    key's line ``key_line``); its syntax errors the declared host's problems, with PostgreSQL's message naming the
    file the text is written to (``written_to``). A line left for Helm's template rendering is not read (a note)."""
    exact = type(text).__name__ == "LiteralScalarString"  # ruamel's type for a | block scalar

    def place(line: int | None) -> Source:
        return Source(path, key_line + (line or 1) if exact else key_line)

    lines = text.split("\n")
    for index, line in enumerate(lines):
        if "{{" in line:
            lines[index] = ""
            declared.notes.append(f"{place(index + 1)}: a line left for Helm's template rendering: not read")
    # Ended by a newline: a last line's error is then at that line (a file without one counts it one line up)
    entries, problems = parse_conf_text("\n".join(lines).rstrip("\n") + "\n", written_to)
    for problem in problems:
        declared.problems.append(problem._replace(source=place(problem.source.line)))
    return [entry._replace(source=place(entry.source.line)) for entry in entries]


# A configuration document is a few kB; one of several MB is no configuration (ruamel.yaml takes seconds on it).
MAX_DOCUMENT_BYTES = 1024 * 1024
# The longest shell command line of a document pgvet splits into words (a compose command, an Ansible task's
# free-form arguments; real ones are a few hundred characters): shlex builds each word a character at a time,
# quadratic in its length (a word of 800 kB took 18 s).
MAX_SHELL_LINE = 64 * 1024


def load_document(text: str, path: str, *, every: bool = False, reading: str = "", pyyaml: bool = False) -> Any:
    """The YAML of a document (every document of a ``---`` stream with ``every``), read by pgvet.safeyaml with its
    lines; ParseError at the line of invalid YAML, and for a text larger than a document. ``reading``: how the
    text was made from the file, for the message (``once its {{ }} are set aside``). ``pyyaml``: read as the tools
    that read their files with PyYAML do (Patroni, Ansible): YAML 1.1's scalars (``1:30`` is 90, ``on`` a boolean),
    a repeated key's last value; otherwise YAML 1.2, a repeated key refused (as Kubernetes and Compose have it)."""
    if len(text) > MAX_DOCUMENT_BYTES:
        raise ParseError(f"{len(text)} characters: more than pgvet reads in a configuration document "
                         f"({MAX_DOCUMENT_BYTES})", Source(path, 1))
    try:
        return load_yaml_documents(text) if every else load_yaml(text, pyyaml=pyyaml)
    except YamlError as error:
        said = f" {reading}" if reading else ""
        raise ParseError(f"invalid YAML{said}: {error.message}", Source(path, error.line or 1)) from None


def get(node: Any, *keys: str) -> Any:
    """The value at a path of mapping keys, None where one is missing or not a mapping."""
    for key in keys:
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return node


def yaml_line(node: Any, key: str | int | None = None) -> int | None:
    """The 1-based line of a key (or list index) of a ruamel round-trip mapping or list, or of the node itself. A
    key a merge key brought (``<<: *defaults``) is at its line in the mapping merged, the first that has it (YAML's
    precedence)."""
    position = getattr(node, "lc", None)
    if position is None:
        return None
    try:
        if key is None:
            return int(position.line) + 1
        return int(position.key(key)[0]) + 1 if isinstance(key, str) else int(position.item(key)[0]) + 1
    except (KeyError, IndexError, TypeError, AttributeError):
        pass
    if isinstance(key, str):
        for merged in getattr(node, "merge", ()):  # a ruamel mapping's merged mappings
            mapping = merged[1] if isinstance(merged, tuple) else merged  # ruamel.yaml 0.18 pairs it with its place
            if isinstance(mapping, dict) and key in mapping:
                return yaml_line(mapping, key)
    return None


@cache
def document_kinds() -> tuple[DocumentKind, ...]:
    """Every kind, from the modules of this package (in the order of their names)."""
    kinds: list[DocumentKind] = []
    for module in sorted(pkgutil.iter_modules(__path__), key=lambda found: found.name):
        if module.name.startswith("_"):
            continue
        kinds.append(importlib.import_module(f"{__name__}.{module.name}").KIND)
    return tuple(kinds)


def document_kind(name: str) -> DocumentKind:
    """The kind of that name (``host.orchestrator``'s value)."""
    return next(kind for kind in document_kinds() if kind.name == name)


def running_steps(facts: Mapping[str, SourcedValue], changes: Mapping[str, str]) -> list[RunningStep]:
    """What the running system of a host a configuration document declares needs besides the document's edit for
    these PostgreSQL changes (name → value) to take effect: its kind's running_steps (Patroni's DCS); none for a
    host of files or a kind whose edit is all."""
    declared = facts.get("host.orchestrator")
    if declared is None or not changes:
        return []
    steps = document_kind(str(declared.value)).running_steps
    return [] if steps is None else steps(facts, changes)


def recognise(name: str, text: str) -> DocumentKind | None:
    """The kind of a file, by its name and content; None when it is no configuration document pgvet reads. A byte
    order mark before the content hides nothing (YAML and systemd skip it; tuned's parser refuses it, as its kind's
    parse says)."""
    text = text.removeprefix("\ufeff")
    lowered = name.lower()
    for kind in document_kinds():
        if lowered.endswith(kind.suffixes) and kind.recognises(name, text):
            return kind
    return None


# PostgreSQL clusters of Kubernetes operators pgvet has no reader for, by their API group and kinds: a file declaring
# one is said not read by name (a warning), not left out as YAML of no PostgreSQL host.
_UNREAD_OPERATORS = (
    ("pgv2.percona.com/", "Percona's PostgreSQL operator", ("PerconaPGCluster",)),
    ("pg.percona.com/", "Percona's PostgreSQL operator (1.x)", ("PerconaPGCluster", "Pgcluster")),
    ("stackgres.io/", "StackGres", ("SGCluster", "SGShardedCluster", "SGPostgresConfig", "SGInstanceProfile")),
    ("kubegres.reactive-tech.io/", "Kubegres", ("Kubegres",)),
)
_KIND_LINE = re.compile(r"^[ \t]*(?:- )?kind:[ \t]*[\"']?([A-Za-z]+)[\"']?[ \t]*(?:#.*)?$", re.MULTILINE)
# a ConfigMap's key holding PostgreSQL's configuration file as a block scalar (`postgresql.conf: |`; a pgbouncer.conf
# sets log_connections too)
_CONF_KEY = re.compile(r"^[ \t]+[\"']?([\w.-]*postgres[\w.-]*\.conf)[\"']?[ \t]*:[ \t]*[|>]",
                       re.MULTILINE | re.IGNORECASE)
_ASSIGNMENT = re.compile(r"^[ \t]+([A-Za-z_][A-Za-z0-9_]*)[ \t]*=", re.MULTILINE)


def unread_operator(text: str) -> str | None:
    """What a file declares of a PostgreSQL operator pgvet does not read (``objects of Percona's PostgreSQL operator
    (PerconaPGCluster)``) or of a server it cannot tell (a ConfigMap holding a postgresql.conf, which the manifest of
    a server elsewhere mounts), None when it declares none."""
    kinds = set(_KIND_LINE.findall(text))
    for group, operator, declared in _UNREAD_OPERATORS:
        if group in text:
            found = [kind for kind in declared if kind in kinds]
            if found:
                return f"objects of {operator} ({', '.join(found)})"
    if "ConfigMap" in kinds and (keys := _CONF_KEY.findall(text)):
        names = known_parameter_names()
        if any(name.lower() in names for name in _ASSIGNMENT.findall(text)):
            return f"a ConfigMap's postgresql.conf ({', '.join(keys)})"
    return None


def kinds_markdown() -> str:
    """docs/integrations.md's table of the kinds, each linked to its page (docs/integrations/<kind>.md)."""
    rows = ["| kind | what pgvet reads in it | file names |", "|---|---|---|"]
    for kind in document_kinds():
        names = ", ".join(f"`*{suffix}`" for suffix in kind.suffixes)
        rows.append(f"| [{kind.name}](integrations/{kind.name}.md) | {kind.doc} | {names} |")
    return "\n".join(rows) + "\n"

