"""The fix as a file: every finding's fix of a host consolidated into one change.

A `sysctl.d/90-postgresql.conf` with the computed kernel values, the postgresql.conf lines and the
equivalent ALTER SYSTEM statements. When two rules suggest different values for one key, the fix of the
more severe finding wins and the other is shown as a comment. Nothing is written unless asked: with
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

from pgvet.errors import UsageError
from pgvet.facts import Fact
from pgvet.findings import HostResult, quote_setting
from pgvet.paths import is_inside, real_path_in
from pgvet.provenance import Source

SYSCTL_DIRECTORY = "sysctl.d"
SYSCTL_NAME = "90-postgresql.conf"
SYSCTL_FILE = f"{SYSCTL_DIRECTORY}/{SYSCTL_NAME}"
POSTGRESQL_CONF = "postgresql.conf"
AUTO_CONF = "postgresql.auto.conf"
PG_SETTINGS = "pg_settings.json"


@dataclass(slots=True)
class Change:
    value: str
    rules: list[str] = field(default_factory=list)
    overruled: list[str] = field(default_factory=list)  # "value (RULE)" suggestions that lost


@dataclass(slots=True)
class ConsolidatedFix:
    host: str
    sysctl: dict[str, Change] = field(default_factory=dict)
    postgresql: dict[str, Change] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def consolidate(result: HostResult) -> ConsolidatedFix:
    fix = ConsolidatedFix(result.host.name)
    for finding in sorted(result.findings, key=lambda item: -item.rank):
        if finding.suppressed is not None or finding.baseline:
            continue
        label = f"{finding.rule_id} {finding.rule_name}"
        for target, suggestions in ((fix.sysctl, finding.fix.sysctl), (fix.postgresql, finding.fix.postgresql)):
            for key, value in suggestions.items():
                if _CONTROL.search(key) or _CONTROL.search(value):  # a line break would start a line of its own
                    fix.notes.append(f"{label}: {key} = {value}: not suggested, it holds a control character")
                    continue
                change = target.get(key)
                if change is None:
                    target[key] = Change(value, [label])
                elif change.value == value:
                    change.rules.append(label)
                else:
                    change.overruled.append(f"{value} ({label})")
        if finding.fix.text and not (finding.fix.sysctl or finding.fix.postgresql):
            fix.notes.append(f"{label}: {' '.join(finding.fix.text.split())}")
    # Setting vm.dirty_bytes zeroes vm.dirty_ratio and the other way round: the byte values, more precise
    # on large hosts, win, or the file would undo itself.
    pairs = (("vm.dirty_ratio", "vm.dirty_bytes"), ("vm.dirty_background_ratio", "vm.dirty_background_bytes"))
    for ratio, size in pairs:
        if ratio in fix.sysctl and size in fix.sysctl:
            dropped = fix.sysctl.pop(ratio)
            fix.sysctl[size].overruled.append(f"{ratio} = {dropped.value} ({', '.join(dropped.rules)})")
    return fix


# Characters that end a line, or mean something to a terminal, in sysctl.d, postgresql.conf or the output
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _comment(text: str) -> str:
    """Text from the inputs (a host's name, a value) for a comment: its control characters escaped, so that a host
    named ``x\nkernel.core_pattern = |/tmp/evil %p`` cannot put a live line in a sysctl.d file."""
    return _CONTROL.sub(lambda match: match.group().encode("unicode_escape").decode("ascii"), text)


def render(fix: ConsolidatedFix) -> str:
    out = [f"# pgvet fix for {_comment(fix.host)}", ""]
    if fix.sysctl:
        out += [f"# --- {SYSCTL_FILE} (apply with: sysctl --system) ---"]
        for key, change in sorted(fix.sysctl.items()):
            out.append(f"# {', '.join(change.rules)}" + (f"; also suggested: {_comment(', '.join(change.overruled))}"
                                                          if change.overruled else ""))
            out.append(f"{key} = {change.value}")
        out.append("")
    if fix.postgresql:
        out += ["# --- postgresql.conf ---"]
        for name, change in sorted(fix.postgresql.items()):
            also = f"; also suggested: {_comment(', '.join(change.overruled))}" if change.overruled else ""
            out.append(f"{name} = {quote_setting(change.value)}    # {', '.join(change.rules)}{also}")
        out += ["", "-- --- or, on the running server (a restart may be needed) ---"]
        out += [f"ALTER SYSTEM SET {name} = {quote_setting(change.value)};"
                for name, change in sorted(fix.postgresql.items())]
        out.append("")
    if fix.notes:
        out += ["# --- to do by hand ---", *[f"# {_comment(note)}" for note in fix.notes], ""]
    if not (fix.sysctl or fix.postgresql or fix.notes):
        out.append("# nothing to change")
    return "\n".join(out) + "\n"


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
    kind: str = ""  # "postgresql" or "sysctl": the syntax of the file, known when the first change is made
    changed: list[tuple[str, str]] = field(default_factory=list)  # (name, value) set in this file
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
        real = Path(real_path_in(self.real_root, shown))
        if not is_inside(str(real), self.real_root):
            return f"{shown} resolves to {real}, outside the host directory"
        if real in self.files:
            return self.files[real]
        if real.exists():
            if not real.is_file():
                return f"{shown} is not a regular file"
            try:
                text = real.read_bytes().decode("utf-8", errors="surrogateescape")
            except OSError as error:
                return f"{shown} cannot be read: {error.strerror}"
            edited = _File(real, shown, text, existed=True)
        elif create:
            edited = _File(real, shown, "", existed=False)
        else:
            return f"{shown} does not exist"
        self.files[real] = edited
        return edited

    def save(self) -> None:
        from pgvet.output_file import is_private

        private = is_private(os.fspath(self.host_dir))  # a new file of a private host is 0600
        for edited in self.files.values():
            if not edited.changed:
                continue
            try:
                _replace(edited, private)
            except UsageError as error:  # a read-only tree, a full disk, a link: said, as the other changes left
                self.outcome.left.extend(f"{name} = {value}: not written ({error.message})"
                                         for name, value in edited.changed)
            else:
                self.outcome.written.append(edited.path)


def _replace(edited: _File, private: bool) -> None:
    """Keep a ``.bak`` copy (with the original's mode, owner and group), then put the new text in place; each is
    written whole or not at all, and a link at either name is refused, not followed."""
    from pgvet.output_file import write_file

    try:
        edited.path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UsageError(f"cannot write {edited.shown}: {error.strerror}") from None
    if edited.existed:
        write_file(edited.path.with_name(edited.path.name + ".bak"),
                   edited.original.encode("utf-8", errors="surrogateescape"), like=edited.path,
                   shown=f"{edited.shown}.bak")
    # a file replaced keeps its mode as it is (it holds what it held); a new one of a private host is 0600
    write_file(edited.path, edited.text().encode("utf-8", errors="surrogateescape"),
               private=private and not edited.existed, shown=edited.shown)


def write(fix: ConsolidatedFix, host_dir: Path, facts: Mapping[str, Fact]) -> WriteOutcome:
    """Change each value where it takes effect (``facts``: the host's, which say where each value is set last);
    the files written, and the changes left with why."""
    from pgvet.sources.sysctl import PAIR_PARTNERS

    outcome = WriteOutcome()
    files = _Files(host_dir, outcome)
    for key, change in sorted(fix.sysctl.items()):
        partner = PAIR_PARTNERS.get(key)
        _write_sysctl(files, key, change, facts.get(f"sysctl_conf.{key}"),
                      facts.get(f"sysctl_conf.{partner}") if partner is not None else None)
    if fix.sysctl:
        _label_new_sysctl_file(files, fix)
    for name, change in sorted(fix.postgresql.items()):
        # with a live server's pg_settings.json, pg.* are the running values and pg_conf.* the files' own
        _write_setting(files, name, change, facts.get(f"pg_conf.{name}") or facts.get(f"pg.{name}"))
    _check_written_files(files)
    files.save()
    return outcome


# --- postgresql.conf -------------------------------------------------------------------------------------


def _write_setting(files: _Files, name: str, change: Change, fact: Fact | None) -> None:
    value = quote_setting(change.value)
    source = fact.source if fact is not None else None
    instead = f"ALTER SYSTEM SET {name} = {value};"
    if source is not None and os.path.basename(source.path) == AUTO_CONF:  # the snapshot's, or a live server's
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
    from pgvet.sources.pgconf import ConfSetting, parse_conf_text

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


# PostgreSQL's lexer (guc-file.l): SPACE [ \t\r\f]; ID {LETTER}{LETTER_OR_DIGIT}*, QUALIFIED_ID {ID}.{ID}.
_ID = r"[A-Za-z_\x80-\U0010ffff][A-Za-z0-9_\x80-\U0010ffff]*"
_SETTING_HEAD = re.compile(rf"[ \t\r\f]*(?P<name>{_ID}(?:\.{_ID})?)[ \t\r\f]*=?[ \t\r\f]*")


def _check_written_files(files: _Files) -> None:
    """Read every edited file again with the parser of its syntax: no new syntax error, and each value set where
    it was put. A file that fails is not written (the check guards against pgvet's own mistakes)."""
    for edited in files.files.values():
        if edited.changed and not _reads_as_meant(edited):
            shown = quote_setting if edited.kind == "postgresql" else str
            files.outcome.left.extend(
                f"{name} = {shown(value)}: not written (pgvet could not edit {edited.shown} safely)"
                for name, value in edited.changed)
            edited.changed.clear()


def _reads_as_meant(edited: _File) -> bool:
    from pgvet.errors import ParseError
    from pgvet.sources.pgconf import ConfSetting, parse_conf_text
    from pgvet.sources.sysctl import parse_sysctl_conf, sysctl_value

    if edited.kind == "postgresql":
        before = len(parse_conf_text(edited.original, edited.shown)[1])
        entries, problems = parse_conf_text(edited.text(), edited.shown)
        last = {entry.name: entry.value for entry in entries if isinstance(entry, ConfSetting)}
        return len(problems) <= before and all(last.get(name) == value for name, value in edited.changed)
    try:
        declared = {setting.key: setting.value for setting in parse_sysctl_conf(edited.text(), edited.shown)}
    except ParseError:
        return False
    return all(declared.get(key) == sysctl_value(value) for key, value in edited.changed)


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


def _write_sysctl(files: _Files, key: str, change: Change, declared: Fact | None, partner: Fact | None = None) -> None:
    source = declared.source if declared is not None else None
    # A key of a ratio/bytes pair is undone by a line of its counterpart written after it, even one that did not
    # zero it at boot (`vm.dirty_ratio = 20`, the boot value, changes nothing until vm.dirty_bytes is written
    # before it): the value goes after the counterpart's last line, which then stands for the key's place.
    partner_places = (partner.occurrences or (partner.source,)) if partner is not None else ()
    for place in partner_places:
        if place.line is not None and (source is None or _applied_order(place) > _applied_order(source)):
            source = place
    # the last file sysctl --system reads wins: a value declared in a file read after ours is changed there
    after_ours = source is not None and source.line is not None and _read_after_ours(source)
    shown = source.path if source is not None and after_ours else SYSCTL_FILE
    target = files.open(shown, create=shown == SYSCTL_FILE)
    if isinstance(target, str):
        files.outcome.left.append(f"{key} = {change.value}: not written ({target})")
        return
    from pgvet.errors import ParseError
    from pgvet.sources.sysctl import parse_sysctl_conf

    try:
        declared_here = [setting for setting in parse_sysctl_conf(target.text(), target.shown) if setting.key == key]
    except ParseError as error:
        files.outcome.left.append(f"{key} = {change.value}: not written ({error})")
        return
    # A key of a ratio/bytes pair whose counterpart is written further down this file (`source` is then that
    # line): changed in place it would stay undone, so the value goes after, at the end.
    undone_here = (declared_here and source is not None and source.path == target.shown and source.line is not None
                   and source.line > (declared_here[-1].source.line or 0))
    if declared_here and not undone_here:
        index = declared_here[-1].source.line - 1  # type: ignore[operator]  # parse_sysctl_conf numbers its lines
        line = target.lines[index]
        before, equals, after = line.partition("=")
        blank = after[:len(after) - len(after.lstrip(" \t"))]
        trailing = declared_here[-1].trailing  # `# …` after a number: the user's words, kept
        carriage = "\r" if line.endswith("\r") else ""
        target.lines[index] = f"{before}{equals}{blank}{change.value}{' ' + trailing if trailing else ''}{carriage}"
    else:
        target.append(f"{key} = {change.value}")
    target.kind = "sysctl"
    target.changed.append((key, change.value))


def _label_new_sysctl_file(files: _Files, fix: ConsolidatedFix) -> None:
    """A sysctl.d/90-postgresql.conf that pgvet creates (the only file it creates) starts by saying so."""
    for created in files.files.values():
        if not created.existed:
            rules = sorted({rule for change in fix.sysctl.values() for rule in change.rules})
            created.lines[:0] = [f"# Written by pgvet fix: {', '.join(rules)}"]
