"""The fix of a host: its target configuration (engine/planner/) minus what it has now.

``render`` shows it as a diff — each setting, its current and target values, the rules that ask for it and
why — then the steps left to do by hand, then the files: a ``sysctl.d/90-postgresql.conf``, the
postgresql.conf lines and the equivalent ALTER SYSTEM statements. Nothing is written unless asked: with
``write``, each value is changed where it takes effect — the line that sets it last, found by pgvet's own
parsers (postgresql.conf or the file it includes; the sysctl.d file read last) — or added to
postgresql.conf and sysctl.d/90-postgresql.conf; every file changed keeps a ``.bak`` copy. What cannot be
written so that it takes effect (a value of postgresql.auto.conf, a file outside the host directory) is
left, and said.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pgvet.errors import InputError, ParseError, UsageError
from pgvet.findings import HostResult, quote_sql
from pgvet.inputs.documents import document_kind, running_steps
from pgvet.inputs.postgresql_conf import ID, ConfSetting, parse_conf_text, quote_setting
from pgvet.inputs.reading import MAX_INPUT_BYTES, NotRegular, read_input
from pgvet.inputs.sysctl import PAIR_PARTNERS, SysctlSetting, boot_order, parse_sysctl_conf, sysctl_value
from pgvet.output_file import is_private, write_file
from pgvet.paths import is_inside, real_path_beneath
from pgvet.pgparams import NEWEST_MAJOR, SUPPORTED_MAJORS, load_param_table
from pgvet.provenance import Source
from pgvet.report import one_line
from pgvet.run.lint import lint
from pgvet.run.options import LintOptions
from pgvet.snapshot.facts import Fact
from pgvet.snapshot.load import chosen_host, load_hosts
from pgvet.snapshot.pgfacts import is_auto_conf
from pgvet.trust import access_acl

SYSCTL_DIRECTORY = "sysctl.d"
SYSCTL_NAME = "90-postgresql.conf"
SYSCTL_FILE = f"{SYSCTL_DIRECTORY}/{SYSCTL_NAME}"
POSTGRESQL_CONF = "postgresql.conf"
PG_SETTINGS = "pg_settings.json"


@dataclass(slots=True)
class Change:
    value: str
    rules: list[str] = field(default_factory=list)
    current: str | None = None
    why: str = ""


@dataclass(slots=True)
class ConsolidatedFix:
    host: str
    sysctl: dict[str, Change] = field(default_factory=dict)
    postgresql: dict[str, Change] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # values the host's files declare and it does not run yet, kernel keys and a live server's parameters:
    # kind → name → (running, declared)
    declared_not_applied: dict[str, dict[str, tuple[str | None, str]]] = field(default_factory=dict)
    # the other key of a ratio/bytes pair a change writes, which the kernel then zeroes: key → (running, written key)
    zeroed: dict[str, tuple[str, str]] = field(default_factory=dict)
    # the configuration document that declares the host, and its kind (its tool writes postgresql.conf), and the
    # form its parameters are written in (host.parameter_form) where the kind has several
    document: Source | None = None
    orchestrator: str | None = None
    parameter_form: str | None = None
    parameters_path: str | None = None  # where the document takes a parameters block it has not (host.parameters_path)
    # the errors the host's files bring once applied that the target leaves (a pending shared_buffers ALTER SYSTEM
    # sets past what the kernel maps): PostgreSQL restarted before they are mended does not start
    restart_blocked_by: list[str] = field(default_factory=list)
    # whether a PostgreSQL value the fix or the files bring takes effect at a restart only (else a reload applies all)
    needs_restart: bool = False
    huge_pages: str = ""  # the host's huge_pages as it is (its files', for a live server about to restart)


def fix_host(directory: Path, options: LintOptions, *, write_files: bool = False, host: str | None = None,
             ) -> tuple[ConsolidatedFix, WriteOutcome | None]:
    """``pgvet fix``: the host linted as `pgvet lint` would, its fix, and (``write_files``) the fix written.
    ``host``: which one, by name, when the directory's documents declare several (a chart's primary and its read
    replicas, Patroni members…). InputError when the host cannot be read."""

    result = lint([directory], options)
    if result.errors:
        error = result.errors[0]
        raise InputError(error.message, error.source)
    index = chosen_host(directory, [each.host_facts.name for each in result.hosts], host)
    consolidated = consolidate(result.hosts[index])
    if not write_files:
        return consolidated, None
    # every fact, not only those the rules read: where each changed value is set last
    return consolidated, write(consolidated, directory, load_hosts(directory, options.explicit)[index].facts)


def consolidate(result: HostResult) -> ConsolidatedFix:
    """The host's target less what it has: its changes, and the steps left to do by hand."""
    fix = ConsolidatedFix(result.host_facts.name)
    huge_pages = result.host_facts.facts.get("pg.huge_pages")
    fix.huge_pages = "" if huge_pages is None else str(huge_pages.value)
    declared_by = result.host_facts.facts.get("host.orchestrator")
    if declared_by is not None:
        fix.document, fix.orchestrator = declared_by.source, str(declared_by.value)
        form = result.host_facts.facts.get("host.parameter_form")
        fix.parameter_form = None if form is None else str(form.value)
        block = result.host_facts.facts.get("host.parameters_path")
        fix.parameters_path = None if block is None else str(block.value)
    target = result.target
    if target is None:
        return fix
    for change in target.changes:
        if _CONTROL.search(change.setting.name) or _CONTROL.search(change.target):  # it would start a line of its own
            fix.notes.append(f"{', '.join(change.rules)}: {change.setting} = {change.target}: not suggested, it holds "
                             "a control character")
            continue
        into = fix.sysctl if change.setting.kind == "sysctl" else fix.postgresql
        into[change.setting.name] = Change(change.target, list(change.rules), change.current, change.why)
    for name in fix.sysctl:
        partner = PAIR_PARTNERS.get(name)
        running = None if partner is None else result.host_facts.facts.get(f"sysctl.{partner}")
        if partner is not None and partner not in fix.sysctl and running is not None and running.value != 0:
            fix.zeroed[partner] = (str(running.value), name)
    fix.notes += [f"{', '.join(step.rules)}: {step.text}" if step.rules else step.text for step in target.by_hand]
    for change in target.declared_not_applied:
        fix.declared_not_applied.setdefault(change.setting.kind, {})[change.setting.name] = (change.current,
                                                                                            change.target)
    fix.restart_blocked_by = sorted({error.rule_id for error in target.found_once_booted
                                     if error.severity == "error" and (error.rule_id, error.subject) in target.firing})
    fix.needs_restart = _needs_restart(result, [*fix.postgresql, *fix.declared_not_applied.get("postgresql", {})])
    return fix


def _needs_restart(result: HostResult, names: list[str]) -> bool:
    """Whether one of the parameters takes effect at a restart only (postmaster context, in the parameter table of
    the major that judges the host); a name the table does not know is taken as one."""
    version = result.host_facts.facts.get("pg.catalog_version")
    major = version.value if version is not None else None
    table = load_param_table(major if isinstance(major, int) and major in SUPPORTED_MAJORS else NEWEST_MAJOR)
    return any((param := table.get(name)) is None or param.context == "postmaster" for name in names)


# Characters that end a line, or mean something to a terminal, in sysctl.d, postgresql.conf or the output, and
# the bidirectional formatting ones that reorder what is shown after them
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2028\u2029\u2066-\u2069]")


def _comment(text: str) -> str:
    """Text from the inputs (a host's name, a value) for a comment, escaped as a report escapes a name (one_line), so
    that a host named ``x\nkernel.core_pattern = |/tmp/evil %p`` cannot put a live line in a sysctl.d file."""
    return one_line(text)


def _diff_lines(changes: Mapping[str, Change], zeroed: Mapping[str, tuple[str, str]] | None = None) -> list[str]:
    """Each change on a line: the setting, current → target, why (the first rule's title) and the rules; then each
    key the kernel zeroes when the other of its pair is written (``zeroed``)."""
    rows = [(name, change.current if change.current is not None else "(unset)", change.value,
             change.why + (f" ({', '.join(rule.split(' ', 1)[0] for rule in change.rules)})" if change.rules else ""))
            for name, change in changes.items()]
    rows += [(name, running, "0", f"the kernel zeroes it when {written} is written (its lines, if any, are commented "
                                  "out)") for name, (running, written) in (zeroed or {}).items()]
    width = max(len(name) for name, _, _, _ in rows)
    current_width = max(len(current) for _, current, _, _ in rows)
    target_width = max(len(target) for _, _, target, _ in rows)
    return [f"#   {name:<{width}}  {_comment(current):>{current_width}} → {target:<{target_width}}  {why}"
            for name, current, target, why in rows]


_DECLARED_HEADINGS = {
    "sysctl": ("# declared in the host's sysctl files and not running yet (`sysctl --system` applies them; the",
               "# target is worked out with them):"),
    "postgresql": ("# set in PostgreSQL's configuration files and not running yet (a restart applies them, a reload",
                   "# those that allow it; the target is worked out with them):"),
}


def _order_lines(fix: ConsolidatedFix) -> list[str]:
    """The order a target of both parts is applied in: the kernel's first (the invariants hold it against what runs
    now: CommitLimit above what is committed), then PostgreSQL restarted — with huge_pages = on it does not start
    until the pool is there, and `sysctl --system` may reserve fewer pages than asked where memory is fragmented.
    Where the files' pending values would stop PostgreSQL at a restart, said even without a kernel part."""
    pool = fix.sysctl.get("vm.nr_hugepages")
    change = fix.postgresql.get("huge_pages")
    pending = fix.declared_not_applied.get("postgresql", {}).get("huge_pages")
    # huge_pages = on already in the files (a server that did not start, linted from its files) is as fatal
    huge_pages = change.value if change is not None else pending[1] if pending is not None else fix.huge_pages
    then = ("PostgreSQL restarted" if fix.needs_restart
            else "PostgreSQL's configuration reloaded (`SELECT pg_reload_conf()`: no value needs a restart)")
    blocked = " and ".join(fix.restart_blocked_by)
    first = "the kernel part first (`sysctl --system`), then " if fix.sysctl else ""
    lines = [f"# order: {first}{then}"
             + ("" if not blocked else
                f"{' — not' if fix.needs_restart else '; no restart'} before {blocked} is mended (steps by hand): "
                "restarted with what its files set now, it does not start")]
    if pool is not None:
        lines.append(f"#   (the pool first: HugePages_Total in /proc/meminfo must reach {_comment(pool.value)} — if "
                     "fewer pages were found, reboot"
                     + (", or PostgreSQL does not start with huge_pages = on)" if huge_pages.lower() == "on" else ")"))
    return lines


def render(fix: ConsolidatedFix) -> str:
    count = len(fix.sysctl) + len(fix.postgresql)
    steps = len(fix.notes)
    out = [f"# pgvet fix for {_comment(fix.host)}: the host's target configuration — {count} "
           f"change{'s' if count != 1 else ''}, {steps} step{'s' if steps != 1 else ''} by hand", "#"]
    if fix.sysctl:
        out += ["# kernel (sysctl.d, applied with `sysctl --system`; the huge page pool is reserved at the next boot):",
                *_diff_lines(fix.sysctl, fix.zeroed), "#"]
    if fix.postgresql:
        where = "postgresql.conf or ALTER SYSTEM" if fix.document is None else f"the parameters of {fix.document.path}"
        out += [f"# PostgreSQL ({_comment(where)}; some take effect at the next restart):",
                *_diff_lines(fix.postgresql), "#"]
    if (fix.sysctl and (fix.postgresql or fix.declared_not_applied.get("postgresql"))) or fix.restart_blocked_by:
        out += [*_order_lines(fix), "#"]
    for kind, heading in _DECLARED_HEADINGS.items():
        declared_values = fix.declared_not_applied.get(kind)
        if declared_values:
            width = max(len(name) for name in declared_values)
            out += [*heading, *[f"#   {name:<{width}}  {_comment(running or '(unset)')} → {_comment(declared)}"
                                for name, (running, declared) in declared_values.items()], "#"]
    if fix.notes:
        out += ["# to do by hand:", *[f"#   - {_comment(note)}" for note in fix.notes], "#"]
    if not (fix.sysctl or fix.postgresql or fix.notes):
        out.append("# nothing to change in the files" if fix.declared_not_applied else "# nothing to change")
    out.append("")
    if fix.sysctl:
        out += [f"# --- {SYSCTL_FILE} (apply with: sysctl --system) ---"]
        out += [f"{key} = {change.value}" for key, change in sorted(fix.sysctl.items())]
        out.append("")
    if fix.postgresql and fix.document is not None and fix.orchestrator is not None:
        tool = document_kind(fix.orchestrator)
        parameter = tool.writes_parameter(fix.parameter_form)
        under = "" if fix.parameters_path is None else f", a block to add at {_comment(fix.parameters_path)}"
        delivery = ("passes them on postgres' command line, which outranks postgresql.conf and ALTER SYSTEM"
                    if tool.on_command_line else
                    "writes postgresql.conf from them; ALTER SYSTEM would be overwritten or refused")
        out += [f"# --- {_comment(fix.document.path)}: its PostgreSQL parameters{under} ({_comment(fix.orchestrator)} "
                f"{delivery}) ---"]
        out += [parameter(name, change.value) for name, change in sorted(fix.postgresql.items())]
        out.append("")
    elif fix.postgresql:
        out += ["# --- postgresql.conf ---"]
        out += [f"{name} = {quote_setting(change.value)}" for name, change in sorted(fix.postgresql.items())]
        out += ["", "-- --- or, on the running server (a restart may be needed"
                + ("; after the kernel part" if fix.sysctl else "") + ") ---"]
        # ALTER SYSTEM leaves the old lines in postgresql.conf, overridden (PGV406, whose RESET would bring them back)
        out += [f"ALTER SYSTEM SET {name} = {quote_sql(change.value)};"
                for name, change in sorted(fix.postgresql.items())]
        out += ["-- then remove the lines of postgresql.conf that set them: overridden, they no longer say what runs"]
        out.append("")
    return "\n".join(out)


@dataclass(slots=True)
class WriteOutcome:
    written: list[Path] = field(default_factory=list)
    left: list[str] = field(default_factory=list)  # changes not written: why, and what to do instead


@dataclass(slots=True)
class _File:
    """A file being edited: its lines split at '\n' only, as pgvet's parsers and PostgreSQL count them (a
    CRLF line keeps its '\r', a form feed stays inside its line), so that what is not changed stays as it was."""

    path: Path  # the real path, inside the host directory
    shown: str  # as findings name it
    original: str
    existed: bool
    status: os.stat_result | None = None  # what fstat said of the file read: its .bak copy takes its mode and owner
    acl: bytes | None = None  # and its access ACL
    kind: str = ""  # "postgresql" or "sysctl": the syntax of the file, known when the first change is made
    changed: list[tuple[str, str]] = field(default_factory=list)  # (name, value) set in this file
    commented: list[str] = field(default_factory=list)  # keys whose lines this file's edit comments out
    lines: list[str] = field(init=False)

    def __post_init__(self) -> None:
        self.lines = self.original.split("\n") if self.existed else []

    def append(self, line: str) -> None:
        """Add a line at the end, with the file's line ending (CRLF when its first line has one)."""
        carriage = "\r" if self.lines and self.lines[0].endswith("\r") else ""
        if self.lines and self.lines[-1] == "":  # the text ends with a line break: the '' after it moves down
            self.lines.pop()
        elif self.lines:  # the last line has no line break: it gets one
            self.lines[-1] += carriage
        self.lines += [line + carriage, ""]

    def text(self) -> str:
        return "\n".join(self.lines)


class _Files:
    """The host directory's files that the fix changes, each read once, none outside the directory."""

    def __init__(self, host_dir: Path, outcome: WriteOutcome) -> None:
        self.host_dir = host_dir
        self.real_root = os.path.realpath(host_dir)
        self.outcome = outcome
        self.files: dict[Path, _File] = {}

    def open(self, shown: str, *, create: bool = False) -> _File | str:
        """The file ``shown`` (relative to the host directory), or why it cannot be written."""
        if os.path.isabs(shown):
            return f"{shown} is not in the host directory"
        # resolved beneath the directory, as it is read: where a link out leads is not looked up
        beneath = real_path_beneath(self.real_root, shown, os.path.abspath(self.host_dir))
        if beneath is None or not is_inside(beneath, self.real_root):
            return f"{shown} leads out of the host directory (a symbolic link)"
        real = Path(beneath)
        if real in self.files:
            return self.files[real]
        try:  # beneath the host directory: a file swapped for a link out since the check above is neither read nor
            # copied into the edit or its .bak
            data, status = read_input(os.path.join(self.host_dir, shown), MAX_INPUT_BYTES, os.fspath(self.host_dir))
        except FileNotFoundError:
            if not create:
                return f"{shown} does not exist"
            edited = _File(real, shown, "", existed=False)
        except (IsADirectoryError, NotRegular):
            return f"{shown} is not a regular file"
        except OSError as error:
            return f"{shown} cannot be read: {error.strerror}"
        else:
            if status.st_size > MAX_INPUT_BYTES or len(data) > MAX_INPUT_BYTES:
                return f"{shown} is larger than pgvet reads ({MAX_INPUT_BYTES} bytes)"
            acl = access_acl(os.fspath(real))
            if not _same_file(real, status):  # swapped since it was read: whose ACL is unknown
                return f"{shown} changed while pgvet read it"
            edited = _File(real, shown, data.decode("utf-8", errors="surrogateescape"), existed=True, status=status,
                           acl=acl)
        self.files[real] = edited
        return edited

    def save(self) -> None:
        private = is_private(os.fspath(self.host_dir))  # a new file of a private host is 0600
        for edited in self.files.values():
            if not (edited.changed or edited.commented):
                continue
            if edited.existed and edited.text() == edited.original:
                continue  # it says it already (the kernel runs another value until it reboots): nothing to write
            try:
                _replace(edited, private, self.real_root)
            except UsageError as error:  # a read-only tree, a full disk, a link: said, as the other changes left
                self.outcome.left.extend(f"{name} = {value}: not written ({error.message})"
                                         for name, value in edited.changed)
                self.outcome.left.extend(f"{key}: not commented out ({error.message})" for key in edited.commented)
            else:
                self.outcome.written.append(edited.path)


def _same_file(path: Path, status: os.stat_result) -> bool:
    try:
        now = os.stat(path)
    except OSError:
        return False
    return (now.st_dev, now.st_ino) == (status.st_dev, status.st_ino)


def _replace(edited: _File, private: bool, root: str) -> None:
    """Keep a ``.bak`` copy (with the original's mode, owner and group), then put the new text in place; each is
    written whole or not at all, beneath the host directory ``root`` (a real path), and a link at either name is
    refused, not followed."""
    if edited.existed:
        write_file(edited.path.with_name(edited.path.name + ".bak"),
                   edited.original.encode("utf-8", errors="surrogateescape"), like=edited.status, acl=edited.acl,
                   shown=f"{edited.shown}.bak", beneath=root)
    # a file replaced keeps its mode as it is (it holds what it held); a new one of a private host is 0600
    write_file(edited.path, edited.text().encode("utf-8", errors="surrogateescape"),
               private=private and not edited.existed, shown=edited.shown, beneath=root)


def write(fix: ConsolidatedFix, host_dir: Path, facts: Mapping[str, Fact]) -> WriteOutcome:
    """Change each value where it takes effect (``facts``: the host's, which say where each value is set last);
    the files written, and the changes left with why."""
    outcome = WriteOutcome()
    files = _Files(host_dir, outcome)
    for key, change in sorted(fix.sysctl.items()):
        _write_sysctl(files, key, change, facts.get(f"sysctl_conf.{key}"))
        partner = PAIR_PARTNERS.get(key)
        if partner is not None and partner not in fix.sysctl:
            _comment_out(files, partner, facts.get(f"sysctl_conf.{partner}"), f"{key} = {change.value}")
    if fix.sysctl:
        _label_new_sysctl_file(files, fix)
    orchestrator = facts.get("host.orchestrator")
    # what the running system needs besides the document's edit (Patroni's DCS), said among the steps by hand
    running = {name: step.place for step in running_steps(facts, {name: change.value
                                                                   for name, change in fix.postgresql.items()})
               for name in step.parameters}
    for name, change in sorted(fix.postgresql.items()):
        if orchestrator is not None:  # its tool writes postgresql.conf: its document is where a value goes
            set_at = facts.get(f"pg.{name}")
            where = (f"at {set_at.source}" if set_at is not None and set_at.source.path == orchestrator.source.path
                     else f"in {running[name]}" if name in running
                     else f"among the parameters of {orchestrator.source.path}" + (
                         "" if fix.parameters_path is None else f" (a block to add at {fix.parameters_path})"))
            then = "; the running system needs its step by hand too" if name in running else ""
            delivery = ("passes its parameters on postgres' command line"
                        if document_kind(str(orchestrator.value)).on_command_line
                        else "writes postgresql.conf from its document")
            outcome.left.append(f"{name} = {quote_setting(change.value)}: not written — {orchestrator.value} "
                                f"{delivery}: set it {where}{then}")
            continue
        # with a live server's pg_settings.json, pg.* are the running values and pg_conf.* the files' own
        _write_setting(files, name, change, facts.get(f"pg_conf.{name}") or facts.get(f"pg.{name}"))
    _verify_written_files(files)
    files.save()
    return outcome


# --- postgresql.conf -------------------------------------------------------------------------------------


def _write_setting(files: _Files, name: str, change: Change, fact: Fact | None) -> None:
    value = quote_setting(change.value)
    source = fact.source if fact is not None else None
    instead = f"ALTER SYSTEM SET {name} = {quote_sql(change.value)};"
    if source is not None and is_auto_conf(source.path):  # the snapshot's, or a live server's
        files.outcome.left.append(f"{name} = {value}: not written — it is set by ALTER SYSTEM ({source}), which "
                                  f"overrides postgresql.conf; on the server: {instead}")
        return
    # Set nowhere in the snapshot's files (a default; with pg_settings.json, a value of the server, whose
    # files are named by absolute paths): a line is added.
    if source is None or source.line is None or source.path.startswith("<") or os.path.isabs(source.path) or (
            os.path.basename(source.path) == PG_SETTINGS):
        target = files.open(POSTGRESQL_CONF)
        if isinstance(target, str):
            files.outcome.left.append(f"{name} = {value}: not written ({target}); on the server: {instead}")
            return
        target.append(f"{name} = {value}    # pgvet fix: {', '.join(change.rules)}")
        target.kind = "postgresql"
        target.changed.append((name, change.value))
        return
    target = files.open(source.path)
    why = target if isinstance(target, str) else _set_value(target, name, change.value, source)
    if why is not None:
        files.outcome.left.append(f"{name} = {value}: not written ({why}); on the server: {instead}")


def _set_value(target: _File, name: str, value: str, source: Source) -> str | None:
    """Set ``name`` to ``value`` on the line that sets it at ``source`` (a line that already says so is left
    as it is); why not, when it is not that line."""
    index = source.line - 1 if source.line is not None else -1
    entries, _ = parse_conf_text(target.text(), target.shown)
    setting = next((entry for entry in entries if isinstance(entry, ConfSetting) and entry.name == name
                    and entry.source.line == source.line), None)
    if setting is None or not 0 <= index < len(target.lines):
        return f"{source} does not set {name} as the snapshot said"
    if setting.value == value:
        return None
    line = target.lines[index]
    # The line is `name [=] value [# comment]` (its parse says so): the value token follows the name and the
    # optional '='; the name ends where a name's characters do (autovacuum is not autovacuum_max_workers).
    head = _SETTING_HEAD.match(line)
    if head is None or head.group("name").lower() != name or not line.startswith(setting.raw, head.end()):
        return f"{source} is not a plain `{name} = value` line"
    target.lines[index] = line[:head.end()] + quote_setting(value) + line[head.end() + len(setting.raw):]
    target.kind = "postgresql"
    target.changed.append((name, value))
    return None


# PostgreSQL's lexer (guc-file.l): SPACE [ \t\r\f]; QUALIFIED_ID {ID}.{ID}.
_SETTING_HEAD = re.compile(rf"[ \t\r\f]*(?P<name>{ID}(?:\.{ID})?)[ \t\r\f]*=?[ \t\r\f]*")


def _verify_written_files(files: _Files) -> None:
    """Read every edited file again with the parser of its syntax: no new syntax error, and each value set where
    it was put. A file that fails is not written (the check guards against pgvet's own mistakes)."""
    for edited in files.files.values():
        if (edited.changed or edited.commented) and not _reads_as_meant(edited):
            shown = quote_setting if edited.kind == "postgresql" else str
            files.outcome.left.extend(
                f"{name} = {shown(value)}: not written (pgvet could not edit {edited.shown} safely)"
                for name, value in edited.changed)
            files.outcome.left.extend(f"{key}: not commented out (pgvet could not edit {edited.shown} safely)"
                                      for key in edited.commented)
            edited.changed.clear()
            edited.commented.clear()


def _reads_as_meant(edited: _File) -> bool:
    if edited.kind == "postgresql":
        before = len(parse_conf_text(edited.original, edited.shown)[1])
        entries, problems = parse_conf_text(edited.text(), edited.shown)
        last = {entry.name: entry.value for entry in entries if isinstance(entry, ConfSetting)}
        return len(problems) <= before and all(last.get(name) == value for name, value in edited.changed)
    try:
        declared = {setting.key: setting.value for setting in parse_sysctl_conf(edited.text(), edited.shown)}
    except ParseError:
        return False
    return (all(declared.get(key) == sysctl_value(value) for key, value in edited.changed)
            and not declared.keys() & set(edited.commented))


# --- sysctl.d ----------------------------------------------------------------------------------------------


def _read_after_ours(source: Source) -> bool:
    """Whether ``sysctl --system`` reads the file of ``source`` after sysctl.d/90-postgresql.conf: a later
    file of sysctl.d (by name), or /etc/sysctl.conf (read last)."""
    directory, name = os.path.split(source.path)
    if directory == "" and name == "sysctl.conf":
        return True
    return directory == SYSCTL_DIRECTORY and name > SYSCTL_NAME


def _applied_order(source: Source) -> tuple[int, str, int]:
    """Where ``sysctl --system`` writes the line of ``source``: sysctl.d's files by name, then sysctl.conf."""
    directory, name = os.path.split(source.path)
    return (1 if directory == "" and name == "sysctl.conf" else 0, name, source.line or 0)


def _own_lines(files: _Files, key: str, declared: Fact | None) -> list[tuple[_File, SysctlSetting]]:
    """The lines that set ``key`` itself, in the order `sysctl --system` writes them (a key of a ratio/bytes pair
    zeroed by its counterpart names the counterpart's line too: not one of these)."""
    if declared is None:
        return []
    lines: list[tuple[_File, SysctlSetting]] = []
    for path in dict.fromkeys(place.path for place in (*declared.occurrences, declared.source)):
        target = files.open(path)
        if isinstance(target, str):
            continue
        try:
            lines.extend((target, setting) for setting in parse_sysctl_conf(target.text(), target.shown)
                         if setting.key == key)
        except ParseError:
            continue
    return sorted(lines, key=lambda line: _applied_order(line[1].source))


def _write_sysctl(files: _Files, key: str, change: Change, declared: Fact | None) -> None:
    lines = _own_lines(files, key, declared)
    last = lines[-1][1].source if lines else None
    # the last file sysctl --system reads wins: a value declared in a file read after ours is changed there
    shown = last.path if last is not None and last.line is not None and _read_after_ours(last) else SYSCTL_FILE
    target = files.open(shown, create=shown == SYSCTL_FILE)
    if isinstance(target, str):
        files.outcome.left.append(f"{key} = {change.value}: not written ({target})")
        return
    declared_here = [setting for edited, setting in lines if edited is target]
    if declared_here:
        _set_sysctl_line(target, declared_here[-1], change.value)
    else:
        target.append(f"{key} = {change.value}")
        target.kind = "sysctl"
        target.changed.append((key, change.value))
    # The boot's systemd-sysctl reads sysctl.conf where sysctl.d/99-sysctl.conf sorts, before sysctl.d's later
    # names (hugepages.conf, k8s.conf): a line of those would put its own value back at the next boot.
    for edited, setting in lines:
        if (boot_order(setting.source.path) or "") > (boot_order(target.shown) or ""):
            _set_sysctl_line(edited, setting, change.value)


def _set_sysctl_line(target: _File, setting: SysctlSetting, value: str) -> None:
    """The value of the line ``setting`` was read from made ``value``, its own words after a number kept."""
    index = setting.source.line - 1  # type: ignore[operator]  # parse_sysctl_conf numbers its lines
    line = target.lines[index]
    before, equals, after = line.partition("=")
    blank = after[:len(after) - len(after.lstrip(" \t"))]
    carriage = "\r" if line.endswith("\r") else ""
    trailing = f" {setting.trailing}" if setting.trailing else ""  # `# …` after a number: the user's words, kept
    target.lines[index] = f"{before}{equals}{blank}{value}{trailing}{carriage}"
    target.kind = "sysctl"
    if (setting.key, value) not in target.changed:
        target.changed.append((setting.key, value))


def _comment_out(files: _Files, partner: str, declared: Fact | None, replacement: str) -> None:
    """Comment out every line that sets ``partner``, the other key of a ratio/bytes pair whose key the fix sets:
    writing one zeroes the other, so a line of the other read later would undo the fix (and read earlier, it
    would be undone: sysctl-declared-value-undone)."""
    if declared is None:
        return
    for path in dict.fromkeys(place.path for place in (*declared.occurrences, declared.source)):
        target = files.open(path)
        if isinstance(target, str):
            files.outcome.left.append(f"{partner}: its lines in {path} not commented out ({target}); they would "
                                      f"undo {replacement}")
            continue
        try:
            lines = [setting.source.line for setting in parse_sysctl_conf(target.text(), target.shown)
                     if setting.key == partner]
        except ParseError as error:
            files.outcome.left.append(f"{partner}: not commented out ({error})")
            continue
        for line in lines:
            if line is not None:
                target.lines[line - 1] = f"# {target.lines[line - 1]}    # pgvet fix: replaced by {replacement}"
                target.kind = "sysctl"
                target.commented.append(partner)


def _label_new_sysctl_file(files: _Files, fix: ConsolidatedFix) -> None:
    """A sysctl.d/90-postgresql.conf that pgvet creates (the only file it creates) starts by saying so."""
    for created in files.files.values():
        if not created.existed:
            rules = sorted({rule for change in fix.sysctl.values() for rule in change.rules})
            created.lines[:0] = [f"# Written by pgvet fix: {', '.join(rules)}"]
