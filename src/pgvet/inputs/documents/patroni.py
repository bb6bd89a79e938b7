"""Patroni's configuration file (patroni.yml, postgres0.yml): one member of a Patroni cluster.

Parameters merge as Patroni merges them (patroni/config.py, patroni/postgresql/config.py): the cluster-wide ones
of ``bootstrap.dcs.postgresql.parameters`` (written to the DCS when the cluster is bootstrapped), then the member's
``postgresql.parameters``, except the parameters Patroni passes on postgres' command line (CMDLINE_OPTIONS): it
takes those from the DCS only (a local value is dropped), checks the DCS value (one it refuses is replaced by its
default), and sets listen_addresses, port and cluster_name itself from ``postgresql.listen`` and ``scope``.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable, Mapping
from typing import Any

from pgvet.errors import ParseError
from pgvet.inputs.delimited import replaced, spans
from pgvet.inputs.documents import (
    MAX_DOCUMENT_BYTES,
    DeclaredHost,
    DocumentKind,
    RunningStep,
    SourcedValue,
    any_parameter_unknown,
    conf_setting,
    get,
    load_document,
    single_quoted,
    yaml_line,
)
from pgvet.inputs.postgresql_conf import ConfProblem, ConfSetting
from pgvet.pgparams import (
    HOT_STANDBY_MINIMUMS,
    NEWEST_MAJOR,
    SUPPORTED_MAJORS,
    known_parameter_names,
    load_param_table,
)
from pgvet.provenance import Located, Source
from pgvet.safeyaml import YamlError, load_yaml

PATRONI_DEFAULT = "<patroni default>"  # a value Patroni passes when the configuration sets none

_SIZE_UNITS = {"kB": 1, "MB": 1024, "GB": 1024 * 1024, "TB": 1024 * 1024 * 1024}


def _integer(minimum: int, unit: str | None = None) -> Callable[[object], bool]:
    """Patroni's IntValidator: an integer (with a unit when the parameter has one) at least ``minimum``."""

    def valid(value: object) -> bool:
        if isinstance(value, bool):
            return False
        match = re.fullmatch(r"(\d+)\s*(kB|MB|GB|TB)?", str(value).strip())  # stripped: \s* at both ends is quadratic
        if match is None or (match.group(2) and unit is None):
            return False
        number = int(match.group(1))
        if unit is not None and match.group(2):
            number = number * _SIZE_UNITS[match.group(2)] // _SIZE_UNITS[unit]
        return number >= minimum

    return valid


def _boolean(value: object) -> bool:
    return _bool_value(value) is not None


def _true(value: object) -> bool:
    return _bool_value(value) is True


def _bool_value(value: object) -> bool | None:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("on", "true", "yes", "1", "t", "y"):
        return True
    if text in ("off", "false", "no", "0", "f", "n"):
        return False
    return None


# Patroni's CMDLINE_OPTIONS: parameter -> (its default, the check a DCS value must pass). Patroni sets
# listen_addresses, port and cluster_name itself (no DCS value passes); wal_keep_segments/wal_keep_size default to
# 8 segments (128MB) on the version that has them.
CMDLINE_OPTIONS: dict[str, tuple[str | None, Callable[[object], bool]]] = {
    "listen_addresses": (None, lambda value: False),
    "port": (None, lambda value: False),
    "cluster_name": (None, lambda value: False),
    "wal_level": ("replica", lambda value: isinstance(value, str) and value in ("hot_standby", "replica", "logical")),
    "hot_standby": ("on", _true),
    "max_connections": ("100", _integer(25)),
    "max_wal_senders": ("10", _integer(3)),
    "wal_keep_segments": ("8", _integer(1)),
    "wal_keep_size": ("128MB", _integer(16, "MB")),
    "max_prepared_transactions": ("0", _integer(0)),
    "max_locks_per_transaction": ("64", _integer(32)),
    "track_commit_timestamp": ("off", _boolean),
    "max_replication_slots": ("10", _integer(4)),
    "max_worker_processes": ("8", _integer(2)),
    "wal_log_hints": ("on", _boolean),
}
_SET_BY_PATRONI = {"listen_addresses": "postgresql.listen", "port": "postgresql.listen", "cluster_name": "scope"}

_TOP_LEVEL_KEY = re.compile(r"^(postgresql|restapi|bootstrap|scope)\s*:", re.MULTILINE)
_TEMPLATE_STATEMENTS = (("{%", "%}"), ("{#", "#}"))  # and comments
_TEMPLATE_EXPRESSIONS = (("{{", "}}"),)
_TEMPLATE_MARK = "__pgvet_template__"
_PARAMETERS_KEY = re.compile(r"^[ \t]*parameters[ \t]*:[ \t]*(?:#.*)?$")
_SCALAR_VALUE = re.compile(r"^([ \t]*[^\s#:{}\[\]-][^\s:]*[ \t]*:[ \t]+)[^\s#{\[|>&*!].*$")  # key: value
# what a renderer (envsubst, Jinja) fills in; Patroni itself expands nothing, and a bare $VAR is a shell's
# (archive_command: pgbackrest --stanza=$STANZA …)
_PLACEHOLDERS = (("${", "}"),)
_VERSION_IN_PATH = re.compile(r"/(?:postgresql/|pgsql-|postgresql-|postgres-?)(\d{2})(?:/|$)")


def _placeholder(text: str) -> bool:
    """Whether the text holds a value a renderer fills in: a ``${…}`` or a template set aside."""
    return _TEMPLATE_MARK in text or next(spans(text, _PLACEHOLDERS, across_lines=True), None) is not None


def _recognises(name: str, text: str) -> bool:
    keys = set(_TOP_LEVEL_KEY.findall(text))
    if "postgresql" not in keys or len(keys) < 2:
        return False
    try:
        document = (load_yaml(_without_templates(text), pyyaml=True) if len(text) <= MAX_DOCUMENT_BYTES
                    else None)
    except YamlError:
        return True  # Patroni's top-level keys: parse() says what is wrong with it
    return isinstance(document, dict) and isinstance(document.get("postgresql"), dict)


def parse_patroni(text: str, path: str) -> list[DeclaredHost]:
    document = _document(text, path)
    if not isinstance(document, dict) or not isinstance(document.get("postgresql"), dict):
        return []
    declared = patroni_member(DeclaredHost("patroni", _name(document, path),
                                           Source(path, yaml_line(document, "name") or 1)), document, path)
    if _templated(text):
        declared.notes.insert(0, "a template: the values left to render ({{ }}, {% %}) are skipped, never guessed")
    return [declared]


def patroni_member(declared: DeclaredHost, document: dict[str, Any], path: str) -> DeclaredHost:
    """A Patroni configuration's member (``document``: patroni.yml's mapping, or a chart's copy of one) as
    ``declared``, its settings, notes and problems at their lines of ``path``."""
    local = document["postgresql"] if isinstance(document.get("postgresql"), dict) else {}
    dcs_parameters = _parameters(get(document, "bootstrap", "dcs", "postgresql"), "bootstrap.dcs.postgresql", path)
    local_parameters = _parameters(local, "postgresql", path)
    _pg_version(declared, local, path)
    version = declared.host["pg_version"].value if "pg_version" in declared.host else None
    dcs_names = _dcs_settings(declared, dcs_parameters, version, path)
    from_dcs = list(declared.settings)
    _patroni_defaults(declared, dcs_names, version)
    _local_settings(declared, local_parameters, dcs_names, path)
    _set_by_patroni(declared, document, local, path)
    _synchronous_mode(declared, document, path)
    _misplaced(declared, local, "postgresql", path)
    _misplaced(declared, get(document, "bootstrap", "dcs", "postgresql"), "bootstrap.dcs.postgresql", path)
    _misplaced(declared, get(document, "bootstrap", "dcs"), "bootstrap.dcs", path)
    _pg_hba_unused(declared, document, local, path)
    _held_by_dcs(declared, from_dcs, document, path)
    custom_conf = local.get("custom_conf")
    if isinstance(custom_conf, str):
        declared.notes.append(f"postgresql.custom_conf: Patroni includes {custom_conf} in place of "
                              "postgresql.base.conf; pgvet does not read it from here")
    return declared


def _dcs_settings(declared: DeclaredHost, parameters: dict[str, Any], version: int | None,
                  path: str) -> dict[str, int | None]:
    """The DCS's parameters as Patroni takes them; the names it took, with their lines. Patroni renames the
    values and parameters of other versions: wal_level hot_standby is replica, wal_keep_segments (before 13) counts
    16MB segments of wal_keep_size (13 on)."""
    taken: dict[str, int | None] = {}
    for key, value in parameters.items():
        line = yaml_line(parameters, key)
        name = str(key).strip().lower()
        if not _literal(declared, key, value, path, line) or _null(declared, name, value, path, line):
            continue
        value, problem = dcs_parameter(name, value, Source(path, line))
        if problem is not None:
            declared.problems.append(problem)
        if value is None:
            continue
        taken[name] = line
        if name == "wal_level" and value == "hot_standby":
            value = "replica"
        if name == "wal_keep_segments" and (version is None or version >= 13) and str(value).strip().isdigit():
            key, value = "wal_keep_size", f"{int(str(value)) * 16}MB"
        declared.settings.append(conf_setting(str(key), value, Source(path, line)))
    return taken


def _held_by_dcs(declared: DeclaredHost, from_dcs: list[ConfSetting], document: dict[str, Any], path: str) -> None:
    """host.dcs_parameters: the parameters whose value the member takes from bootstrap.dcs (none of its own
    replaces it), which a running cluster holds in its DCS rather than in this file (running_steps)."""
    last = {setting.name: setting for setting in declared.settings}
    taken = {id(setting) for setting in from_dcs}
    held = sorted(name for name, setting in last.items() if id(setting) in taken)
    if held:
        section = get(document, "bootstrap", "dcs", "postgresql")
        declared.host["dcs_parameters"] = Located(" ".join(held), Source(path, yaml_line(section, "parameters")))


def dcs_parameter(name: str, value: object, source: Source) -> tuple[object | None, ConfProblem | None]:
    """A parameter of Patroni's dynamic configuration (the DCS), as Patroni takes it, whoever wrote it there (this
    file's bootstrap.dcs, the Zalando and Crunchy operators): the value that runs (None: Patroni sets the parameter
    itself), and the problem to report when that is not the value written."""
    name = name.strip().lower()
    if name in _SET_BY_PATRONI:
        return None, _ignored(name, f"Patroni sets it from {_SET_BY_PATRONI[name]}", source.path, source.line)
    option = CMDLINE_OPTIONS.get(name)
    if option is None or option[1](value):
        return value, None
    default = _default(name)
    return default, ConfProblem(
        "patroni-replaced", f"Patroni refuses {name} = {_text(value)} from the DCS (it checks the parameters it "
        f"passes on the command line) and runs {name} = {default} instead", source, False)


# Patroni's defaults that differ from PostgreSQL's (its other CMDLINE_OPTIONS defaults are PostgreSQL's own).
def _patroni_defaults(declared: DeclaredHost, dcs_names: dict[str, int | None], version: int | None) -> None:
    wal_keep = "wal_keep_segments" if version is not None and version < 13 else "wal_keep_size"
    for name in ("wal_log_hints", wal_keep):
        if name not in dcs_names and not (name == "wal_keep_size" and "wal_keep_segments" in dcs_names):
            declared.settings.append(conf_setting(name, _default(name), Source(PATRONI_DEFAULT)))


def _local_settings(declared: DeclaredHost, parameters: dict[str, Any], dcs_names: dict[str, int | None],
                    path: str) -> None:
    for key, value in parameters.items():
        line = yaml_line(parameters, key)
        name = str(key).strip().lower()
        if not _literal(declared, key, value, path, line):
            continue
        if _null(declared, name, value, path, line):  # it replaces the DCS's value: no line at all
            declared.settings[:] = [setting for setting in declared.settings if setting.name != name]
            continue
        if name in _SET_BY_PATRONI:
            declared.problems.append(_ignored(name, f"Patroni sets it from {_SET_BY_PATRONI[name]}", path, line))
        elif name in CMDLINE_OPTIONS:
            applies = (f"the DCS's value (line {dcs_names[name]})" if name in dcs_names
                       else f"its default {_default(name)}")
            declared.problems.append(_ignored(
                name, f"Patroni takes it from the DCS only (bootstrap.dcs.postgresql.parameters, or patronictl "
                f"edit-config) and runs {applies}", path, line))
        else:
            # the member's value replaces the DCS's in the postgresql.conf Patroni writes (the DCS's still sets the
            # other members': no line of a file to remove, as a repeated line would be)
            declared.settings[:] = [setting for setting in declared.settings if setting.name != name]
            declared.settings.append(conf_setting(str(key), value, Source(path, line)))


def _set_by_patroni(declared: DeclaredHost, document: dict[str, Any], local: dict[str, Any], path: str) -> None:
    """listen_addresses and port from postgresql.listen, cluster_name from scope: on postgres' command line."""
    listen = local.get("listen")
    if isinstance(listen, (str, int)) and not _placeholder(str(listen)):
        addresses, _, port = str(listen).rpartition(":") if ":" in str(listen) else (str(listen), "", "5432")
        if addresses.startswith("[") and addresses.endswith("]"):
            addresses = addresses[1:-1]  # an IPv6 address with its port
        source = Source(path, yaml_line(local, "listen"))
        declared.settings.append(conf_setting("listen_addresses", addresses, source))
        declared.settings.append(conf_setting("port", port or "5432", source))
    scope = document.get("scope")
    if isinstance(scope, str) and not _placeholder(scope):
        declared.settings.append(conf_setting("cluster_name", scope, Source(path, yaml_line(document, "scope"))))


def _synchronous_mode(declared: DeclaredHost, document: dict[str, Any], path: str) -> None:
    """In synchronous mode Patroni writes synchronous_standby_names itself: a value set in the file never runs."""
    mode = get(document, "bootstrap", "dcs", "synchronous_mode")
    if mode is None or (_bool_value(mode) is not True and str(mode).strip().lower() != "quorum"):
        return
    for index, setting in enumerate(declared.settings):
        if setting.name == "synchronous_standby_names":
            declared.problems.append(_ignored(setting.name, "in synchronous_mode Patroni sets it to the members it "
                                              "chooses", path, setting.source.line))
            del declared.settings[index]
            return


def _misplaced(declared: DeclaredHost, section: Any, where: str, path: str) -> None:
    """A PostgreSQL parameter written beside ``parameters`` instead of in it: Patroni does not pass it on."""
    if not isinstance(section, dict):
        return
    target = f"{where}.parameters" if where.endswith("postgresql") else f"{where}.postgresql.parameters"
    for key in section:
        if str(key).strip().lower() in known_parameter_names():
            declared.problems.append(_ignored(str(key), f"a PostgreSQL parameter in {where} is no parameter to "
                                              f"Patroni; it belongs in {target}", path, yaml_line(section, key)))


def _pg_hba_unused(declared: DeclaredHost, document: dict[str, Any], local: dict[str, Any], path: str) -> None:
    """With an hba_file parameter Patroni leaves that file alone and writes no pg_hba lines."""
    if not any(setting.name == "hba_file" for setting in declared.settings):
        return
    for section in (local, get(document, "bootstrap", "dcs", "postgresql")):
        if isinstance(section, dict) and section.get("pg_hba"):
            declared.problems.append(_ignored("pg_hba", "with the hba_file parameter set, Patroni writes no "
                                              "pg_hba.conf lines", path, yaml_line(section, "pg_hba")))


def _ignored(name: str, why: str, path: str, line: int | None) -> ConfProblem:
    return ConfProblem("patroni-ignored", f"Patroni ignores {name} here: {why}", Source(path, line), False)


def _literal(declared: DeclaredHost, key: object, value: object, path: str, line: int | None) -> bool:
    """False, with a note, for a parameter a template or an environment variable fills in."""
    if _placeholder(str(key)):
        # a parameter named by a template ({% for p in postgresql_parameters %}{{ p.option }}: …, autobase's) may
        # be any of them: none is judged on its default, unless a literal key after it sets it
        declared.notes.append(f"{path}:{line}: a parameter's name is left to a template or an environment variable: "
                              "every parameter it may set is unknown, not judged on its default")
        any_parameter_unknown(declared, Source(path, line))
        return False
    if isinstance(value, str) and _placeholder(value):
        declared.notes.append(f"{path}:{line}: {key} is left to a template or an environment variable: skipped")
        declared.unknown[f"pg.{str(key).strip().lower()}"] = Source(path, line)  # not judged on a default
        return False
    declared.unknown.pop(f"pg.{str(key).strip().lower()}", None)
    return True


def _null(declared: DeclaredHost, name: str, value: object, path: str, line: int | None) -> bool:
    """True, with a problem, for a parameter without a value (``effective_cache_size:``): Patroni's validator removes
    it and writes no line for it, so PostgreSQL runs its default."""
    if value is not None:
        return False
    declared.problems.append(_ignored(name, "it has no value: Patroni writes no line for it, and PostgreSQL runs "
                                      "its default", path, line))
    return True


def _default(name: str) -> str:
    return CMDLINE_OPTIONS[name][0] or ""


def _text(value: object) -> str:
    return ("on" if value else "off") if isinstance(value, bool) else str(value)


def _name(document: dict[str, Any], path: str) -> str:
    for key in ("name", "scope"):
        value = document.get(key)
        if isinstance(value, (str, int)) and not _placeholder(str(value)):
            return str(value)
    return path.rsplit("/", 1)[-1].split(".", 1)[0]


def _pg_version(declared: DeclaredHost, local: dict[str, Any], path: str) -> None:
    """The major version in postgresql.bin_dir or data_dir (/usr/lib/postgresql/16/bin, /usr/pgsql-15/bin)."""
    for key in ("bin_dir", "data_dir"):
        value = local.get(key)
        match = _VERSION_IN_PATH.search(value) if isinstance(value, str) else None
        if match is not None and 10 <= int(match.group(1)) <= 99:
            declared.host["pg_version"] = Located(int(match.group(1)), Source(path, yaml_line(local, key)))
            return


def _parameters(section: Any, where: str, path: str) -> dict[str, Any]:
    """A section's ``parameters`` mapping (Patroni refuses one that is not a mapping)."""
    parameters = section.get("parameters") if isinstance(section, dict) else None
    if parameters is None:
        return {}
    if not isinstance(parameters, dict):
        raise ParseError(f"{where}.parameters is not a mapping (Patroni refuses it)",
                         Source(path, yaml_line(section, "parameters")))
    return parameters



def _without_templates(text: str) -> str:
    """The text with Jinja set aside, line for line: a statement line ({% if %}…) or a line that is one expression
    becomes empty, an expression inside a line a marker that _placeholder finds (the value is unknown, even under an
    {% if %}: not PostgreSQL's default). Of an {% if %}, the first branch is kept (the lines after its {% elif %} or
    {% else %} become empty: both branches set the same keys); under an {% if %} that tests a version
    (``{% if pg_version|int <= 15 %}``), a key's value is a marker too: the template writes it for some versions only,
    and which one it renders for is unknown."""
    lines = []
    blocks: list[str] = []  # the open {% if %} / {% for %}, innermost last
    by_version: list[bool] = []  # for each open block, whether it is an {% if %} that tests a version
    versions = 0  # how many of them are (counted: looking through them on every line grew with their number)
    skipped_from: int | None = None  # the depth of the {% if %} whose later branch is skipped
    parameters: int | None = None  # the indentation of the parameters: mapping the lines are in
    children: int | None = None  # and of its keys
    for line in text.split("\n"):
        skipping = skipped_from is not None
        statements = list(spans(line, _TEMPLATE_STATEMENTS))
        has_expression = next(spans(line, _TEMPLATE_EXPRESSIONS), None) is not None
        for start, end in statements:
            statement = line[start:end]
            keyword = statement[2:-2].strip(" -+").split(" ", 1)[0]
            if keyword in ("if", "for"):
                blocks.append(keyword)
                by_version.append(keyword == "if" and "version" in statement.lower())
                versions += by_version[-1]
            elif keyword in ("elif", "else") and blocks and blocks[-1] == "if" and skipped_from is None:
                skipped_from = len(blocks)
            elif keyword in ("endif", "endfor") and blocks:
                if skipped_from == len(blocks):
                    skipped_from = None
                blocks.pop()
                versions -= by_version.pop()
            skipping = skipping or skipped_from is not None
        stripped = replaced(replaced(line, _TEMPLATE_STATEMENTS, ""), _TEMPLATE_EXPRESSIONS, "").strip()
        if versions and not statements:
            line = _SCALAR_VALUE.sub(rf"\g<1>{_TEMPLATE_MARK}", line)
        indent = len(line) - len(line.lstrip())
        expression = not stripped and not statements and has_expression
        if expression and parameters is not None and not skipping:
            # {{ parameters | to_nice_yaml | indent(6) }} under parameters: may write any of them, a key unknown
            child = children if children is not None else indent if indent > parameters else parameters + 2
            lines.append(f"{' ' * child}{_TEMPLATE_MARK}: {_TEMPLATE_MARK}")
            continue
        if skipping or (stripped != line.strip() and not stripped):
            lines.append("")
            continue
        lines.append(replaced(replaced(line, _TEMPLATE_STATEMENTS, _TEMPLATE_MARK), _TEMPLATE_EXPRESSIONS,
                              _TEMPLATE_MARK))
        if stripped and not stripped.startswith("#"):
            if parameters is not None and indent <= parameters:
                parameters = None
            elif parameters is not None and children is None:
                children = indent
            if _PARAMETERS_KEY.match(line):
                parameters, children = indent, None
    return "\n".join(lines)


def _templated(text: str) -> bool:
    return "{{" in text or "{%" in text


def _document(text: str, path: str) -> Any:
    if _templated(text):
        return load_document(_without_templates(text), path, reading="once its {{ }} and {% %} are set aside",
                             pyyaml=True)
    return load_document(text, path, pyyaml=True)  # Patroni reads its file with PyYAML


def running_steps(facts: Mapping[str, SourcedValue], changes: Mapping[str, str]) -> list[RunningStep]:
    """How parameter changes of a member's file reach its running cluster (Patroni's docs,
    patroni_configuration.rst, yaml_configuration.rst): Patroni writes bootstrap.dcs to the DCS only when it creates
    the cluster, so a parameter the DCS holds (bootstrap.dcs's, and those Patroni takes from the DCS only) is
    changed there with `patronictl edit-config`; the member's own postgresql.parameters are read again when Patroni
    reloads its configuration (`patronictl reload`). Either way a parameter PostgreSQL reads only at start
    (context postmaster) takes effect once Patroni restarts the members it marks pending restart."""
    declared = facts.get("host.orchestrator")
    if declared is None or not changes:
        return []
    document = declared.source.path
    held_fact = facts.get("host.dcs_parameters")
    held = set(str(held_fact.value).split()) if held_fact is not None else set()
    dcs = {name: value for name, value in changes.items() if name in held or name in CMDLINE_OPTIONS}
    local = {name: value for name, value in changes.items() if name not in dcs}
    scope_fact = facts.get("pg.cluster_name")  # Patroni's scope (it sets cluster_name from it)
    scope = (f" {shlex.quote(str(scope_fact.value))}" if scope_fact is not None and scope_fact.value
             and scope_fact.source.path == document else "")
    # a template (Ansible's patroni.yml.j2) is no file patronictl can read: the one it renders, on the member
    rendered = document.removesuffix(".j2")
    ctl = f"patronictl -c {shlex.quote(os.path.basename(rendered) if rendered != document else document)}"
    on_the_member = f" (-c: the file {document} renders on the member)" if rendered != document else ""
    steps = []
    if dcs:
        arguments = " ".join(f"--pg {_patronictl_argument(name, value)}" for name, value in dcs.items())
        steps.append(RunningStep(tuple(dcs), (
            f"Patroni takes {_names(dcs)} from its DCS, where it writes bootstrap.dcs only when it creates the "
            f"cluster: set in {document}'s bootstrap.dcs.postgresql.parameters, {_it(dcs)} a new cluster's; on the "
            f"running cluster: `{ctl} edit-config{scope} {arguments} --force`{on_the_member}"
            f"{_restart(facts, dcs, ctl, scope)}."),
            f"{document}'s bootstrap.dcs.postgresql.parameters (read when the cluster is created)"))
    if local:
        restart = _restart(facts, local, ctl, scope)
        steps.append(RunningStep(tuple(local), (
            f"Patroni reads its file's postgresql.parameters again when it reloads: once the member's {document} "
            f"holds {_names(local)}, `{ctl} reload{scope}`{on_the_member}{restart}."),
            f"{document}'s postgresql.parameters"))
    return steps


def _restart(facts: Mapping[str, SourcedValue], changes: Mapping[str, str], ctl: str, scope: str) -> str:
    """The restart a change of a postmaster-context parameter needs (Patroni marks the members pending restart): the
    replicas first, which a change of the DCS needs and which does no harm otherwise."""
    version = facts.get("pg.catalog_version")  # the major whose parameter table judges the host
    major = version.value if version is not None else None
    table = load_param_table(major if isinstance(major, int) and major in SUPPORTED_MAJORS else NEWEST_MAJOR)
    at_start = [name for name in changes if (param := table.get(name)) is not None and param.context == "postmaster"]
    if not at_start:
        return ""
    said = f"; then, as {_names(at_start)} take{'s' if len(at_start) == 1 else ''} effect at a restart"
    why = (" (a standby with a lower " + _names([name for name in at_start if name in HOT_STANDBY_MINIMUMS]) +
           " than its primary does not start)") if HOT_STANDBY_MINIMUMS.intersection(at_start) else ""
    return (f"{said}, restart the members Patroni marks pending restart, the replicas first{why}: `{ctl} "
            f"restart{scope} --role replica --pending`, then `{ctl} restart{scope} --pending`")


def _it(names: Mapping[str, str]) -> str:
    return "it is" if len(names) == 1 else "they are"


def _names(names: Mapping[str, str] | list[str]) -> str:
    listed = list(names)
    return listed[0] if len(listed) == 1 else ", ".join(listed[:-1]) + " and " + listed[-1]


# A value patronictl's --pg passes as written: PyYAML reads it back as that text (or that integer), and a shell
# leaves it as it is.
_SHELL_SAFE = re.compile(r"[A-Za-z0-9_.,:/@%+=-]+")


def _patronictl_argument(name: str, value: str) -> str:
    """``name=value`` for `patronictl edit-config --pg`, which reads the value as YAML (PyYAML: ``on`` is a boolean,
    ``1:30`` is 90): quoted as YAML where that would change it, and for the shell where it holds what a shell reads."""
    try:
        read = load_yaml(f"value: {value}", pyyaml=True)
    except YamlError:
        read = None
    as_written = isinstance(read, dict) and (read.get("value") == value or (
        type(read.get("value")) is int and str(read.get("value")) == value))
    argument = f"{name}={value if as_written else single_quoted(value)}"
    if _SHELL_SAFE.fullmatch(argument):
        return argument
    return f'"{argument}"' if not set(argument) & set(r'"$`\!') else shlex.quote(argument)


KIND = DocumentKind("patroni", "a Patroni member's configuration (patroni.yml): its and the cluster's parameters",
                    (".yml", ".yaml", ".yml.j2", ".yaml.j2"), _recognises, parse_patroni,
                    running_steps=running_steps)
