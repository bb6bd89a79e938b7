"""Ansible variables and tasks: group_vars, host_vars, a role's defaults/ and vars/, a YAML inventory's vars, a
playbook's play vars, and ``sysctl`` tasks.

PostgreSQL parameters are the ``{option, value}`` lists of autobase (``postgresql_parameters``, the cluster-wide
ones, then ``local_postgresql_parameters``, each host's) and of geerlingguy.postgresql
(``postgresql_global_config_options``). Kernel settings are autobase's ``sysctl_conf`` (a list per inventory group)
and the usual ``sysctl_*`` lists and mappings, and the literal ``name``/``value`` of ``ansible.posix.sysctl`` tasks.
A value that is a Jinja2 template is skipped with a note: it is known only when Ansible renders it.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from typing import Any

from ruamel.yaml.comments import TaggedScalar

from pgvet.errors import ParseError
from pgvet.inputs.documents import (
    MAX_SHELL_LINE,
    DeclaredHost,
    DocumentKind,
    any_parameter_unknown,
    conf_setting,
    get,
    load_document,
    yaml_line,
)
from pgvet.inputs.pg_version import major_version
from pgvet.inputs.sysctl import SysctlSetting, declared_sysctl_value, normalise_key
from pgvet.provenance import Located, Source

# PostgreSQL parameter lists, in the order they apply (autobase writes local_postgresql_parameters into each
# member's patroni.yml, where they override the cluster-wide ones).
PARAMETER_VARIABLES = ("postgresql_parameters", "local_postgresql_parameters", "postgresql_global_config_options")
SYSCTL_VARIABLES = ("sysctl_conf", "sysctl_settings", "sysctl_config", "sysctl_list", "kernel_settings_sysctl")
# The parameters autobase's own postgresql_parameters sets (roles/common/defaults/main.yml at d10e675, and
# vars/main.yml before 2.0, which also set effective_cache_size and shared_buffers there)
AUTOBASE_PARAMETERS = (
    "archive_command", "archive_mode", "archive_timeout", "auto_explain.log_analyze", "auto_explain.log_buffers",
    "auto_explain.log_min_duration", "auto_explain.log_nested_statements", "auto_explain.log_timing",
    "auto_explain.log_triggers", "auto_explain.log_verbose", "auto_explain.sample_rate", "autovacuum",
    "autovacuum_analyze_scale_factor", "autovacuum_max_workers", "autovacuum_naptime", "autovacuum_vacuum_cost_delay",
    "autovacuum_vacuum_cost_limit", "autovacuum_vacuum_insert_scale_factor", "autovacuum_vacuum_scale_factor",
    "bgwriter_delay", "bgwriter_lru_maxpages", "checkpoint_completion_target", "checkpoint_timeout",
    "default_statistics_target", "effective_cache_size", "effective_io_concurrency", "hot_standby",
    "hot_standby_feedback", "huge_pages", "idle_in_transaction_session_timeout", "jit", "log_checkpoints",
    "log_directory", "log_filename", "log_line_prefix", "log_lock_waits", "log_rotation_age", "log_rotation_size",
    "log_temp_files", "log_truncate_on_rotation", "logging_collector", "maintenance_work_mem", "max_connections",
    "max_files_per_process", "max_locks_per_transaction", "max_parallel_maintenance_workers", "max_parallel_workers",
    "max_parallel_workers_per_gather", "max_prepared_transactions", "max_replication_slots",
    "max_standby_streaming_delay", "max_wal_senders", "max_wal_size", "max_worker_processes", "min_wal_size",
    "password_encryption", "pg_stat_statements.max", "pg_stat_statements.save", "pg_stat_statements.track",
    "pg_stat_statements.track_planning", "pg_stat_statements.track_utility", "random_page_cost", "seq_page_cost",
    "shared_buffers", "shared_preload_libraries", "ssl", "ssl_ca_file", "ssl_cert_file", "ssl_key_file",
    "ssl_min_protocol_version", "ssl_prefer_server_ciphers", "superuser_reserved_connections", "synchronous_commit",
    "tcp_keepalives_count", "tcp_keepalives_idle", "tcp_keepalives_interval", "track_activities",
    "track_activity_query_size", "track_counts", "track_functions", "track_io_timing", "wal_buffers",
    "wal_compression", "wal_keep_size", "wal_level", "wal_log_hints", "wal_receiver_status_interval", "work_mem",
)
# What autobase's role sets in each member's patroni.yml by default (local_postgresql_parameters, from the memory)
AUTOBASE_LOCAL_PARAMETERS = ("shared_buffers", "effective_cache_size")
VERSION_VARIABLES = ("postgresql_version", "postgresql_version_major")
READ_VARIABLES = PARAMETER_VARIABLES + SYSCTL_VARIABLES + VERSION_VARIABLES
# autobase's sysctl_conf is keyed by inventory group; a host applies the lists of all its groups. The database
# hosts are the postgres_cluster group; master and replica hold only some of them.
_DATABASE_GROUP = "postgres_cluster"
_MEMBER_GROUPS = ("master", "replica")
_SYSCTL_MODULES = ("sysctl", "ansible.posix.sysctl")
_TASK_LISTS = ("tasks", "pre_tasks", "post_tasks", "handlers", "block", "rescue", "always")

_NAMES = "|".join(PARAMETER_VARIABLES + SYSCTL_VARIABLES)
_TOP_LEVEL_PARAMETERS = re.compile(rf"^(?:{'|'.join(PARAMETER_VARIABLES)})[ \t]*:", re.MULTILINE)
_TOP_LEVEL_SYSCTL = re.compile(rf"^(?:{'|'.join(SYSCTL_VARIABLES)})[ \t]*:", re.MULTILINE)
_INDENTED_VARIABLE = re.compile(rf"^[ \t]+(?:{_NAMES})[ \t]*:", re.MULTILINE)
_INVENTORY_KEY = re.compile(r"^(?:[ \t]+|-[ \t]+)(?:hosts|children)[ \t]*:", re.MULTILINE)
_SYSCTL_TASK = re.compile(r"^[ \t]*(?:-[ \t]+)?(?:ansible\.posix\.)?sysctl[ \t]*:", re.MULTILINE)


def _recognises(name: str, text: str) -> bool:
    """The cheap checks first. A top-level parameter list declares a host; anything else is a document only when
    it declares something (a directory holding only YAML that mentions these variables is no host)."""
    if _TOP_LEVEL_PARAMETERS.search(text):
        return True
    # kernel settings alone are every role's: those of PostgreSQL's machines say so somewhere
    postgres = "postgres" in name.lower() or "postgres" in text.lower()
    if not ((_INDENTED_VARIABLE.search(text) and _INVENTORY_KEY.search(text))
            or (postgres and (_TOP_LEVEL_SYSCTL.search(text) or _SYSCTL_TASK.search(text)))):
        return False
    try:
        return bool(parse_ansible(text, name))
    except ParseError:
        return False


def parse_ansible(text: str, path: str) -> list[DeclaredHost]:
    document = load_document(text, path, pyyaml=True)  # Ansible reads YAML with PyYAML
    if isinstance(document, list):
        return _playbook_or_tasks(document, path)
    if not isinstance(document, dict):
        return []
    if any(key in document for key in READ_VARIABLES):
        declared = _declared(_host_name(path), path, document, {key: document for key in document})
        return [declared] if declared is not None else []
    return _inventory(document, path)


def _declared(name: str, path: str, node: Any, holders: dict[Any, Any]) -> DeclaredHost | None:
    """A host from its variables; ``holders`` maps each variable to the mapping that sets it (for its line)."""
    declared = DeclaredHost("ansible", name, Source(path, yaml_line(node) or 1))
    for variable in VERSION_VARIABLES:
        if variable in holders:
            _version(declared, variable, holders[variable], path)
    if "local_postgresql_parameters" in holders and "postgresql_parameters" not in holders:
        _role_parameters(declared, Source(path, yaml_line(holders["local_postgresql_parameters"],
                                                          "local_postgresql_parameters")))
    for variable in PARAMETER_VARIABLES:
        if variable in holders:
            _parameters(declared, variable, holders[variable], path)
    if isinstance(holders.get("postgresql_parameters", {}).get("postgresql_parameters"), list) and (
            "local_postgresql_parameters" not in holders):
        _role_local_parameters(declared, Source(path, yaml_line(holders["postgresql_parameters"],
                                                                "postgresql_parameters")))
    for variable in SYSCTL_VARIABLES:
        if variable in holders:
            _sysctl_variable(declared, variable, holders[variable], path)
    # a file setting PostgreSQL's parameters or version declares a PostgreSQL host, even when none can be read
    declared.hosting = any(variable in holders for variable in PARAMETER_VARIABLES + VERSION_VARIABLES)
    if declared.hosting:
        declared.host["orchestrator"] = Located("ansible", declared.source)
    elif not declared.sysctl and not declared.notes:
        return None
    return declared


def _role_parameters(declared: DeclaredHost, source: Source) -> None:
    """local_postgresql_parameters without postgresql_parameters: autobase writes its role's own list (defaults/
    main.yml, or the playbook's vars/main.yml before 2.0) into the DCS, under the member's — what it sets is
    unknown here, not PostgreSQL's default, but where the member's list sets it."""
    for name in AUTOBASE_PARAMETERS:
        declared.unknown[f"pg.{name}"] = source
    declared.notes.append(f"{_where(source)}: local_postgresql_parameters without postgresql_parameters: autobase "
                          "applies its role's postgresql_parameters (max_connections, checkpoint_timeout, ssl…, "
                          f"{len(AUTOBASE_PARAMETERS)} parameters), which this file does not give: unknown here, "
                          "where the member's list does not set them")


def _role_local_parameters(declared: DeclaredHost, source: Source) -> None:
    """postgresql_parameters without local_postgresql_parameters: autobase's role (2.x) gives each member its own
    shared_buffers and effective_cache_size, 25 % and 75 % of the machine's memory, over the DCS's."""
    set_here = [name for name in AUTOBASE_LOCAL_PARAMETERS if any(s.name.lower() == name for s in declared.settings)]
    for name in AUTOBASE_LOCAL_PARAMETERS:
        declared.unknown[f"pg.{name}"] = source
    declared.notes.append(f"{_where(source)}: postgresql_parameters without local_postgresql_parameters: autobase "
                          "(2.x) sets each member's shared_buffers and effective_cache_size from its memory (25 % "
                          "and 75 %), over the cluster-wide list" + (f" ({', '.join(set_here)} here has no effect)"
                                                                      if set_here else "") + ": unknown here")


def _version(declared: DeclaredHost, variable: str, holder: Any, path: str) -> None:
    source = Source(path, yaml_line(holder, variable))
    value, skipped = _literal(holder[variable])
    major = major_version(value) if skipped is None else None
    if skipped is not None:
        declared.notes.append(f"{_where(source)}: {variable} {skipped}: not read")
    elif major is not None:
        declared.host["pg_version"] = Located(major, source)
    else:
        declared.notes.append(f"{_where(source)}: {variable} {value!r} is no major version: not read")


def _parameters(declared: DeclaredHost, variable: str, holder: Any, path: str) -> None:
    items = holder[variable]
    if items is None:
        return
    if not isinstance(items, list):
        declared.notes.append(f"{_where(Source(path, yaml_line(holder, variable)))}: {variable} is no list of "
                              "{option, value}: not read")
        return
    for index, item in enumerate(items):
        source = Source(path, yaml_line(items, index))
        if not isinstance(item, dict) or "option" not in item:
            declared.notes.append(f"{_where(source)}: {variable} item is no {{option, value}}: not read")
            continue
        option, skipped = _literal(item["option"])
        if skipped is None and (not isinstance(option, str) or not option.strip()):
            skipped = "has no parameter name"
        if skipped is not None:
            declared.notes.append(f"{_where(source)}: {variable} option {skipped}: not read")
            if "template" in skipped:  # it may name any parameter: none is judged on its default
                any_parameter_unknown(declared, source)
            continue
        if "value" in item:
            source = Source(path, yaml_line(item, "value") or source.line)
        if str(item.get("state", "present")) == "absent":
            declared.notes.append(f"{_where(source)}: {option}: state absent (the line is removed): not read")
            continue
        value, skipped = _literal(item.get("value"))
        fact = f"pg.{str(option).strip().lower()}"
        if skipped is not None:
            declared.notes.append(f"{_where(source)}: {option} {skipped}: not read")
            declared.unknown[fact] = source  # set, to what only Ansible knows: not judged on its default
            continue
        declared.unknown.pop(fact, None)
        declared.settings.append(conf_setting(str(option), value, source))


def _sysctl_variable(declared: DeclaredHost, variable: str, holder: Any, path: str) -> None:
    node = holder[variable]
    source = Source(path, yaml_line(holder, variable))
    if variable == "sysctl_conf" and holder.get("sysctl_set") is False:
        declared.notes.append(f"{_where(source)}: sysctl_conf: sysctl_set is false, autobase does not apply it: "
                              "not read")
        return
    if isinstance(node, dict) and any(isinstance(value, list) for value in node.values()):
        for group in _MEMBER_GROUPS:
            if node.get(group):
                declared.notes.append(f"{_where(Source(path, yaml_line(node, group)))}: {variable}.{group}: "
                                      "applies to some members of the cluster only: not read")
        node = node.get(_DATABASE_GROUP)
    if isinstance(node, dict):
        for key, value in node.items():
            _sysctl(declared, key, value, Source(path, yaml_line(node, key)))
    elif isinstance(node, list):
        for index, item in enumerate(node):
            item_source = Source(path, yaml_line(node, index))
            key = item.get("name", item.get("option", item.get("key"))) if isinstance(item, dict) else None
            if key is None:
                declared.notes.append(f"{_where(item_source)}: {variable} item is no {{name, value}}: not read")
            elif str(item.get("state", "present")) == "absent":
                declared.notes.append(f"{_where(item_source)}: {key}: state absent: not read")
            else:
                _sysctl(declared, key, item.get("value"), Source(path, yaml_line(item, "value") or item_source.line))
    elif node is not None:
        declared.notes.append(f"{_where(source)}: {variable} is neither a list nor a mapping: not read")


def _sysctl(declared: DeclaredHost, key: object, value: object, source: Source) -> None:
    key, skipped = _literal(key)
    if skipped is not None or not isinstance(key, str) or not key.strip():
        declared.notes.append(f"{_where(source)}: a sysctl name {skipped or 'is missing or not text'}: not read")
        return
    value, skipped = _literal(value)
    if skipped is not None or value is None:
        declared.notes.append(f"{_where(source)}: sysctl {key} {skipped or 'has no value'}: not read")
        if skipped is not None:
            declared.unknown[f"sysctl.{key.strip()}"] = source
        return
    declared.unknown.pop(f"sysctl.{key.strip()}", None)
    if isinstance(value, bool):  # the sysctl module writes a YAML boolean as 1 or 0
        text = "1" if value else "0"
    else:
        text = {"true": "1", "yes": "1", "false": "0", "no": "0"}.get(str(value).strip().lower(), str(value))
    name = normalise_key(key)
    declared.sysctl.append(SysctlSetting(name, declared_sysctl_value(name, text.strip()), source))


def _literal(value: object) -> tuple[object, str | None]:
    """The value Ansible would use without rendering anything, or why it cannot be known here."""
    if isinstance(value, TaggedScalar):
        if str(value.tag.value) == "!unsafe":  # never templated: the text is the value
            return str(value.value), None
        return None, f"is tagged {value.tag.value}"
    if isinstance(value, str) and ("{{" in value or "{%" in value):
        return None, f"is a Jinja2 template ({value!r})"
    if isinstance(value, (dict, list)):
        return None, "is not a single value"
    return value, None


def _inventory(document: dict[Any, Any], path: str) -> list[DeclaredHost]:
    """A YAML inventory: each host with the variables of its groups (the deeper group, then the later name,
    winning, as Ansible merges them) and its own."""
    groups: dict[str, dict[str, tuple[int, Any]]] = {}  # host → group → (depth, vars)
    host_nodes: dict[str, tuple[Any, Any]] = {}  # host → (hosts mapping, its vars)

    def walk(group: str, node: Any, depth: int, ancestors: tuple[tuple[str, int, Any], ...]) -> None:
        if not isinstance(node, dict):
            return
        chain = (*ancestors, (group, depth, node.get("vars"))) if isinstance(node.get("vars"), dict) else ancestors
        hosts = node.get("hosts")
        if isinstance(hosts, dict):
            for host, host_vars in hosts.items():
                for name, level, variables in chain:
                    groups.setdefault(str(host), {})[name] = (level, variables)
                known = host_nodes.get(str(host))
                if isinstance(host_vars, dict) or known is None:
                    host_nodes[str(host)] = (hosts, host_vars)
        children = node.get("children")
        if isinstance(children, dict):
            for child, child_node in children.items():
                walk(str(child), child_node, depth + 1, chain)

    for group, node in document.items():
        walk(str(group), node, 0, ())
    hosts: list[DeclaredHost] = []
    for host, (hosts_node, host_vars) in host_nodes.items():
        holders: dict[Any, Any] = {}
        ordered = sorted(groups.get(host, {}).items(), key=lambda item: (item[1][0], item[0]))
        for _, (_, variables) in ordered:
            holders.update(dict.fromkeys(variables, variables))
        if isinstance(host_vars, dict):
            holders.update(dict.fromkeys(host_vars, host_vars))
        declared = _declared(host, path, hosts_node, holders)
        if declared is not None:
            declared.source = Source(path, yaml_line(hosts_node, host) or 1)
            hosts.append(declared)
    return hosts


def _playbook_or_tasks(document: list[Any], path: str) -> list[DeclaredHost]:
    """A playbook (plays with ``hosts``: their vars, set_fact tasks, their roles' parameters and sysctl tasks) or a
    tasks file (sysctl tasks only)."""
    plays = [play for play in document if isinstance(play, dict) and "hosts" in play]
    if not plays:
        tasks_file = DeclaredHost("ansible", _host_name(path), Source(path, 1), hosting=False)
        _sysctl_tasks(tasks_file, document, path)
        return [tasks_file] if tasks_file.sysctl or tasks_file.notes else []
    hosts: list[DeclaredHost] = []
    for play in plays:
        name = str(play["hosts"])
        holders: dict[Any, Any] = {}
        notes: list[str] = []
        if isinstance(play.get("vars"), dict):
            holders.update(dict.fromkeys(play["vars"], play["vars"]))
        for task in (task for key in ("pre_tasks", "tasks", "post_tasks") if isinstance(play.get(key), list)
                     for task in _tasks(play[key])):
            module = next((key for key in ("set_fact", "ansible.builtin.set_fact") if key in task), "")
            facts = task.get(module)
            if not isinstance(facts, dict) or not any(key in facts for key in READ_VARIABLES):
                continue
            if "when" in task:
                notes.append(f"{_where(Source(path, yaml_line(task, module)))}: {module} under a `when` condition: "
                             "not read")
            else:
                holders.update(dict.fromkeys(facts, facts))
        roles = play.get("roles")
        for entry in roles if isinstance(roles, list) else []:
            # a role's parameters, beside `role:` or under its `vars:`: its variables, over the play's and its facts
            for params in (entry, get(entry, "vars")):
                if isinstance(params, dict):
                    holders.update({key: params for key in params if key in READ_VARIABLES})
        declared = _declared(name, path, play, holders) or DeclaredHost(
            "ansible", name, Source(path, yaml_line(play) or 1), hosting=False)
        declared.notes[:0] = notes
        for key in _TASK_LISTS:
            if isinstance(play.get(key), list):
                _sysctl_tasks(declared, play[key], path)
        if declared.hosting or declared.sysctl or declared.notes:
            hosts.append(declared)
    return hosts


def _sysctl_tasks(declared: DeclaredHost, tasks: list[Any], path: str) -> None:
    for task in _tasks(tasks):
        module = next((key for key in _SYSCTL_MODULES if key in task), None)
        if module is None:
            continue
        source = Source(path, yaml_line(task, module))
        arguments = task[module]
        if isinstance(arguments, str):  # the old free form: `sysctl: name=vm.swappiness value=1`
            if len(arguments) > MAX_SHELL_LINE:
                declared.notes.append(f"{_where(source)}: {module} arguments of {len(arguments)} characters, more "
                                      f"than pgvet splits ({MAX_SHELL_LINE}): not read")
                continue
            try:
                arguments = dict(token.partition("=")[::2] for token in shlex.split(arguments))
            except ValueError:
                declared.notes.append(f"{_where(source)}: {module} arguments cannot be split: not read")
                continue
        if not isinstance(arguments, dict):
            continue
        if "loop" in task or any(key.startswith("with_") for key in task):
            declared.notes.append(f"{_where(source)}: {module} runs in a loop: not read")
            continue
        if str(arguments.get("state", "present")) == "absent":
            continue
        value_line = yaml_line(arguments, "value") if hasattr(arguments, "lc") else None
        _sysctl(declared, arguments.get("name"), arguments.get("value"), Source(path, value_line or source.line))


def _tasks(tasks: list[Any]) -> Iterator[dict[Any, Any]]:
    for task in tasks:
        if not isinstance(task, dict):
            continue
        yield task
        for key in ("block", "rescue", "always"):
            if isinstance(task.get(key), list):
                yield from _tasks(task[key])


def _host_name(path: str) -> str:
    """group_vars/db.yml and group_vars/db/main.yml → db; roles/postgres/defaults/main.yml → postgres."""
    parts = path.replace("\\", "/").split("/")
    stem = parts[-1].rsplit(".", 1)[0]
    parent = parts[-2] if len(parts) > 1 else ""
    grandparent = parts[-3] if len(parts) > 2 else ""
    if parent in ("group_vars", "host_vars"):
        return stem
    if grandparent in ("group_vars", "host_vars"):
        return parent
    if parent in ("defaults", "vars", "tasks") and grandparent:
        return grandparent
    return stem


def _where(source: Source) -> str:
    return str(source)




def _parameter_item(name: str, value: str) -> str:
    """A parameter as the roles' lists hold one (autobase's postgresql_parameters, geerlingguy's options)."""
    quoted = "'" + value.replace("'", "''") + "'"
    return f"- {{option: {name}, value: {quoted}}}"


KIND = DocumentKind("ansible", "Ansible variables (group_vars, host_vars, roles' defaults and vars, inventories) and "
                    "sysctl tasks: PostgreSQL parameter lists, kernel settings, the PostgreSQL version",
                    (".yml", ".yaml"), _recognises, parse_ansible, _parameter_item)
