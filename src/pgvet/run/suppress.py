"""Inline suppressions and baselines.

Inline: a comment ``# pgvet: ignore[ID or name, …] reason`` on the line a finding points at, or on the
line before it, suppresses that finding; the reason is required. In sysctl.conf / sysctl.d files a
comment must stand on its own line (procps reads the rest of a line as the value), so only the line
before works there; above the line in force of a key, it also suppresses a finding about the key's running
value where the two agree (sysctl.txt, the snapshot's `sysctl -a`, which cannot carry comments). Suppressed
findings stay in the results, marked, and do not fail the run; a suppression without a reason, or one that
suppresses nothing, is reported as a notice.

Ignore file: for captured inputs that cannot carry comments (sysctl.txt, meminfo.txt…), a YAML list —
``.pgvet-ignore.yaml`` in the host directory, or the file given with ``--ignore-file`` / ``ignore-file`` in
the configuration — of entries ``{host: glob, rule: id or name, subject: optional, reason: required,
expires: optional YYYY-MM-DD}``. Expired entries no longer suppress and are reported, like unused ones. An entry
is unused when the run judged a host it names, with its rule, and no such host used it; one whose hosts or rule
the run did not judge (another host's entry in a fleet's shared file) is not checked, and said so in one notice.

Baseline: a JSON file of fingerprints (``pgvet baseline create``); findings in it are marked ``baseline``
and do not fail the run; ``pgvet baseline update`` only removes entries that no longer occur (a ratchet).
"""

from __future__ import annotations

import datetime
import difflib
import json
import os
import re
import stat
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path

from pgvet.errors import InputError
from pgvet.findings import Finding, HostResult, LintResult
from pgvet.inputs.reading import LeadsOut, find_mark_in_bytes, read_input
from pgvet.paths import is_inside, repository_of, root_within
from pgvet.provenance import Source
from pgvet.safeyaml import YamlError, load_yaml

# The start of a suppression comment; its selectors run to the first ']' after it, found with str.find. As one
# pattern (`…ignore\[([^\]]*)\]`) each start scanned the rest of the line for its ']': quadratic on a line of
# starts without one (minutes on one long line).
_IGNORE_START = re.compile(r"#\s*pgvet:\s*ignore\[")
MAX_SCANNED_BYTES = 4 * 1024 * 1024
BASELINE_FORMAT = 1


@dataclass(slots=True, eq=False, repr=False)
class Suppression:
    selectors: tuple[str, ...]
    reason: str
    source: Source
    used: bool = False


def _suppressions(root: str, path: str) -> dict[int, Suppression]:
    """The suppression comments of a file of a host (``path``, relative to its directory ``root``), by line
    number: none in a file that is not the host's (read beneath its directory: inputs/reading.py, open_input),
    but for one above it in its repository (a kustomize component's: ``../../components/ha/cluster.yaml``, a path
    from the directory's real path), read beneath the repository."""
    try:
        if path.startswith("../") and (repository := repository_of(os.path.realpath(root))) is not None:
            data, status = read_input(os.path.join(os.path.realpath(root), path), MAX_SCANNED_BYTES, repository)
        else:
            data, status = read_input(os.path.join(root, path), MAX_SCANNED_BYTES, root)
    except OSError:
        return {}
    if status.st_size > MAX_SCANNED_BYTES:
        return {}
    found: dict[int, Suppression] = {}
    if find_mark_in_bytes(data) is None:
        return found  # most files have no comment at all: spare decoding them and the search line by line
    for number, line in enumerate(data.decode("utf-8", errors="replace").split("\n"), 1):
        comment = suppression_comment(line)
        if comment is not None:
            listed, reason = comment
            selectors = tuple(part.strip() for part in listed.split(",") if part.strip())
            found[number] = Suppression(selectors, reason.strip(), Source(path, number))
    return found


def suppression_comment(line: str) -> tuple[str, str] | None:
    """The selectors and the reason of the first ``# pgvet: ignore[…] reason`` of a line, or None; linear in
    the line. The first start that has a ']' after it is the comment: when it has none, no later one has."""
    start = _IGNORE_START.search(line)
    if start is None:
        return None
    close = line.find("]", start.end())
    if close < 0:
        return None
    return line[start.end():close], line[close + 1:]


def unknown_rules(selectors: Collection[str], rule_names: Mapping[str, str]) -> str | None:
    """What a notice says of the selectors that name no rule (``rule_names``: the run's rules, id to name), with
    the name probably meant: a misspelt name is not merely unused. Names alone are offered: the id nearest a
    wrong one differs by a digit, and is no more likely the one meant than any other. None when each names one."""
    unknown = [selector for selector in selectors
               if selector not in rule_names and selector not in rule_names.values()]
    if not unknown:
        return None
    meant = [match for selector in unknown for match in difflib.get_close_matches(selector, rule_names.values(), n=1)]
    hint = f"did you mean {', '.join(meant)}?" if meant else "see 'pgvet rules'"
    return f"{', '.join(unknown)} ({hint})"


def suppress_inline(host: HostResult, notices: list[str], rule_names: Mapping[str, str],
                    evaluated: Collection[str]) -> None:
    """Mark the host's findings that a comment suppresses; notices for comments that are wrong, name no rule
    (``rule_names``: the pack's rules, id to name) or are unused — a comment that silences only what fires once
    the host's files are applied (the target's suppressed_once_booted) is used; one that names a rule the run did
    not evaluate (``evaluated``: their ids and names; --select, --ignore) is not judged unused."""
    root, unmarked = host.host_facts.root, host.host_facts.unmarked_files
    files: dict[str, dict[int, Suppression]] = {}

    def read(path: str) -> None:
        # a file without the mark when the host was loaded has no comment
        files[path] = {} if path in unmarked else _suppressions(root, path)

    booted = host.target.suppressed_once_booted if host.target is not None else []
    for finding in [*host.findings, *booted]:
        for path, line in _commentable_places(finding, host.host_facts.sysctl_declared_at):
            if path not in files:
                read(path)
            suppression = _suppression_at(files[path], line, finding)
            if suppression is not None:
                suppression.used = True
                if suppression.reason:
                    finding.suppressed = suppression.reason
                break
    for path in sorted(host.host_facts.marked_files - files.keys()):  # no finding left: its comments may be stale
        read(path)
    for comments in files.values():
        for suppression in comments.values():
            unknown = unknown_rules(suppression.selectors, rule_names)
            if not suppression.reason:
                notices.append(f"{host.host_facts.name}: {suppression.source}: suppression without a reason "
                               "is ignored (write the reason after the brackets)")
            elif unknown is not None:
                notices.append(f"{host.host_facts.name}: {suppression.source}: suppression names no rule: {unknown}")
            elif not suppression.used and all(selector in evaluated for selector in suppression.selectors):
                notices.append(f"{host.host_facts.name}: {suppression.source}: unused suppression "
                               f"[{', '.join(suppression.selectors)}]")


def _commentable_places(finding: Finding, declared_at: Mapping[str, Source]) -> list[tuple[str, int]]:
    """Where a comment may suppress a finding: at the line it points at; and where that line is a kernel value as
    the host runs it (sysctl -a), at the sysctl.conf / sysctl.d line in force that declares the same key at that
    value (HostFacts.sysctl_declared_at) — the file a team keeps, and comments in."""
    if not finding.path or finding.line is None or finding.path.startswith("<"):
        return []
    places = [(finding.path, finding.line)]
    for evidence in finding.evidence:
        source = evidence.source
        if (evidence.fact.startswith("sysctl.") and source is not None
                and (source.path, source.line) == (finding.path, finding.line)):
            declared = declared_at.get(evidence.fact.removeprefix("sysctl."))
            if declared is not None and declared.line is not None:
                places.append((declared.path, declared.line))
    return places


def _suppression_at(comments: Mapping[int, Suppression], line: int, finding: Finding) -> Suppression | None:
    """The comment on the line, or on the line before it, that names the finding's rule."""
    for number in (line, line - 1):
        suppression = comments.get(number)
        if suppression is not None and any(selector in (finding.rule_id, finding.rule_name)
                                           for selector in suppression.selectors):
            return suppression
    return None


IGNORE_FILE = ".pgvet-ignore.yaml"
DEFAULT_BASELINE = "pgvet-baseline.json"  # what `pgvet baseline` writes and reads when told no other file


@dataclass(slots=True, eq=False, repr=False)
class IgnoreEntry:
    host: str
    rule: str
    subject: str | None
    reason: str
    expires: str | None
    source: Source
    used: bool = False
    checked: bool = False  # the run judged a host the entry names, with its rule evaluated


# An ignore file is a few dozen entries; a baseline ~200 bytes a finding (a fleet's: tens of MB).
MAX_IGNORE_FILE_BYTES = 4 * 1024 * 1024
MAX_BASELINE_BYTES = 256 * 1024 * 1024
# and no more findings than the bytes hold at that size (a repository's baseline of empty entries, `"x":{}`, a few
# bytes each, took ~250 bytes of memory apiece: gigabytes within the byte bound)
MAX_BASELINE_ENTRIES = 2_000_000
_IGNORE_KEYS = ("host", "rule", "subject", "reason", "expires")


def _read_bounded(path: Path, limit: int, what: str, root: str | None = None) -> str:
    """A file's text, no more than ``limit`` bytes of it read (beneath ``root`` when given: see read_input);
    InputError naming the file otherwise."""
    display = str(path)
    try:
        data, status = read_input(display, limit, root)
    except LeadsOut:  # not where: the machine's paths are not a report's
        raise InputError(f"{what} not read: a symbolic link leads it out of the repository {root}",
                         Source(display)) from None
    except FileNotFoundError:
        raise InputError(f"{what} not found", Source(display)) from None
    except IsADirectoryError:
        raise InputError(f"{what} is a directory, expected a file", Source(display)) from None
    except OSError as error:
        raise InputError(f"cannot read the {what}: {error.strerror or error}", Source(display)) from None
    if len(data) > limit or status.st_size > limit:
        raise InputError(f"{what} of more than {limit} bytes, more than pgvet reads", Source(display))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise InputError(f"{what} is not valid UTF-8", Source(display, line)) from None


def load_ignore_file(path: Path, root: str | None = None) -> list[IgnoreEntry]:
    """Read an ignore file safely (plain YAML, line numbers kept; beneath ``root`` when given); errors name the
    file and line."""
    display = str(path)
    text = _read_bounded(path, MAX_IGNORE_FILE_BYTES, "ignore file", root)
    try:
        document = load_yaml(text)
    except YamlError as error:
        raise InputError(f"invalid YAML: {error.message}", Source(display, error.line)) from None
    if document is None:
        return []
    if not isinstance(document, list):
        raise InputError("an ignore file is a list of {host, rule, subject, reason, expires}", Source(display, 1))
    entries: list[IgnoreEntry] = []
    for index, item in enumerate(document):
        position = getattr(document, "lc", None)  # ruamel's round-trip list knows its items' lines
        line = int(position.item(index)[0]) + 1 if position is not None else index + 1
        where = Source(display, line)
        if not isinstance(item, dict) or set(item) - set(_IGNORE_KEYS):
            raise InputError("each entry has host, rule, reason and optionally subject and expires", where)
        for key in _IGNORE_KEYS:
            if isinstance(item.get(key), list | dict):  # an alias of a list of lists would be written out whole
                raise InputError(f"'{key}' must be a single value, not a list or a mapping", where)
        if not item.get("rule") or not str(item.get("reason", "")).strip():
            raise InputError("an entry needs a rule and a reason", where)
        expires = _expiry(item["expires"], where) if item.get("expires") is not None else None
        entries.append(IgnoreEntry(str(item.get("host", "*")), str(item["rule"]),
                                   str(item["subject"]) if item.get("subject") is not None else None,
                                   str(item["reason"]).strip(), expires, where))
    return entries


def _expiry(value: object, where: Source) -> str:
    """An entry's expiry as YYYY-MM-DD, which compares with today's as text; InputError for anything else: taken
    as it was written, 'tomorrow' or 27-01-2027 never expired, and '2026-9-1' expired a year late."""
    if isinstance(value, datetime.datetime):  # a YAML timestamp with a time: the day is what expires
        return value.date().isoformat()
    if isinstance(value, datetime.date):
        return value.isoformat()
    try:
        if isinstance(value, str):
            return datetime.date.fromisoformat(value).isoformat()
    except ValueError:
        pass
    raise InputError(f"'expires' must be a date YYYY-MM-DD, not {str(value)!r}", where)


class IgnoreFiles:
    """Suppress findings matched by the ignore file: the one given for the run (loaded once), else each
    host's .pgvet-ignore.yaml; applied host by host."""

    def __init__(self, explicit: Path | None, today: str, rule_names: Mapping[str, str],
                 evaluated: Collection[str] | None = None, repository: Path | None = None) -> None:
        """``rule_names``: the run's rules, id to name, that entries naming none are reported; ``evaluated``: the
        ids and names of those it evaluates (None: all), an entry for another is not checked; ``repository``: a
        found configuration's, beneath which a file in it is read."""
        self.shared = (load_ignore_file(explicit, root_within(explicit, repository)) if explicit is not None
                       else None)
        self.today = today
        self.rule_names = rule_names
        self.evaluated = evaluated
        # a host's own file, kept until every host of its directory is judged (they are judged one after the
        # other): its root and its entries, marked by each
        self._own_file: tuple[str, list[IgnoreEntry]] | None = None

    def entries(self, host: HostResult, notices: list[str]) -> list[IgnoreEntry]:
        """The entries for a host: the shared file's, else the host's own, read now (InputError when invalid,
        with its place relative to the host directory, as that host's other inputs are named)."""
        if self.shared is not None:
            return self.shared
        try:
            return self._own(host, notices)
        except InputError as error:
            line = error.source.line if error.source is not None else None
            raise InputError(error.message, Source(IGNORE_FILE, line)) from None

    def apply(self, host: HostResult, entries: list[IgnoreEntry], *, trial: bool = False) -> None:
        """Suppress the host's findings ``entries`` match: each by the first entry in the file that is not expired,
        names the host, its rule (id or name) and its subject (or none); the entries naming the host are checked,
        and an entry is used when it silences a finding, or one that fires only once the host's files are applied
        (the target's suppressed_once_booted). ``trial``: the planner's, on a host it tries — entries left unmarked,
        what a run reports of them is the judged host's alone (and the same whatever process planned it).

        The first such entry of each rule and subject is found once (an expired entry is reported as expired,
        used or not): a finding then looks up four keys, where trying each entry made a hostile host's ignore
        file of 100 000 entries against its 100 000 findings take hours."""
        first: dict[tuple[str, str | None], tuple[int, IgnoreEntry]] = {}
        evaluated = self.evaluated
        for index, entry in enumerate(entries):
            if entry.expires is not None and entry.expires < self.today:
                continue
            key = (entry.rule, entry.subject)
            # a trial looks for the first entry of a key only; a judgement marks every entry naming the host
            if (key not in first or not (trial or entry.checked)) and fnmatch(host.host_facts.name, entry.host):
                if not trial:
                    entry.checked = entry.checked or evaluated is None or entry.rule in evaluated
                first.setdefault(key, (index, entry))
        if not first:
            return

        def matched(finding: Finding) -> IgnoreEntry | None:
            rule_id, rule_name, subject = finding.rule_id, finding.rule_name, finding.subject
            found = [first[key] for key in ((rule_id, None), (rule_name, None), (rule_id, subject),
                                            (rule_name, subject)) if key in first]
            return min(found, key=lambda pair: pair[0])[1] if found else None

        for finding in host.findings:
            silencing = matched(finding) if finding.suppressed is None else None
            if silencing is not None:
                silencing.used = silencing.used or not trial
                finding.suppressed = silencing.reason
        if not trial and host.target is not None:
            for finding in host.target.suppressed_once_booted:  # silenced already, when the target was planned
                silencing = matched(finding)
                if silencing is not None:
                    silencing.used = True

    def judged(self, host: HostResult, entries: list[IgnoreEntry], notices: list[str]) -> None:
        """``entries``, applied to ``host``, are the run's judgement (not a planner's trial): a host's own file is
        reported once the hosts of its directory are judged (a directory's documents declare several, each
        entry for one of them), when the next host is, or at the end."""
        if self.shared is not None:
            return
        root = host.host_facts.root
        kept = self._own_file
        if kept is not None and kept[0] == root and len(kept[1]) == len(entries):
            for entry, again in zip(kept[1], entries, strict=True):
                entry.used, entry.checked = entry.used or again.used, entry.checked or again.checked
            return
        self._report_own(notices)
        self._own_file = (root, entries) if entries else None

    def _report_own(self, notices: list[str]) -> None:
        if self._own_file is not None:
            _report_entries(notices, self._own_file[1], self.today, self.rule_names)
            self._own_file = None

    @staticmethod
    def _own(host: HostResult, notices: list[str]) -> list[IgnoreEntry]:
        """The host's .pgvet-ignore.yaml; one that is a link out of the host directory, a pipe or a device is
        not read, and a notice says so (the host's inputs are held to the same rule)."""
        listing = host.host_facts.listing
        if listing is not None and IGNORE_FILE not in listing:
            return []  # the directory's listing, read with the host's inputs, holds none (in any case's spelling)
        own = Path(host.host_facts.root) / IGNORE_FILE
        try:
            mode = own.lstat().st_mode
        except OSError:
            return []
        if stat.S_ISLNK(mode):
            real_root = os.path.realpath(host.host_facts.root)
            if not is_inside(os.path.realpath(own), real_root):
                notices.append(f"{host.host_facts.name}: {IGNORE_FILE}: refused, it resolves outside the host "
                               "directory; its entries suppress nothing")  # not where: the linting machine's path
                return []
            try:
                mode = own.stat().st_mode
            except OSError as error:  # a dangling link, or a loop
                notices.append(f"{host.host_facts.name}: {IGNORE_FILE}: refused, {error.strerror or error}")
                return []
        if not stat.S_ISREG(mode):
            notices.append(f"{host.host_facts.name}: {IGNORE_FILE}: refused, it is not a regular file")
            return []
        return load_ignore_file(own)

    def finish(self, notices: list[str]) -> None:
        """The expired, unused and unchecked entries of the shared file, or of the last host's own, known once
        every host is done."""
        if self.shared is not None:
            _report_entries(notices, self.shared, self.today, self.rule_names)
        self._report_own(notices)


def _report_entries(notices: list[str], entries: list[IgnoreEntry], today: str, rule_names: Mapping[str, str]) -> None:
    """The notices of one file's entries: naming no rule, expired, unused (a host it names was judged, with its
    rule, and none used it); those not checked (no such host, or their rule, in the run) in one."""
    unchecked: list[int] = []
    for entry in entries:
        unknown = unknown_rules((entry.rule,), rule_names)
        if unknown is not None:
            notices.append(f"{entry.source}: ignore entry names no rule: {unknown}")
        elif entry.expires is not None and entry.expires < today:
            notices.append(f"{entry.source}: expired ignore entry ({entry.rule}, {entry.expires})")
        elif not entry.checked:
            unchecked.append(entry.source.line or 0)
        elif not entry.used:
            notices.append(f"{entry.source}: unused ignore entry ({entry.rule})")
    if unchecked:
        lines = ", ".join(map(str, unchecked[:10])) + (", …" if len(unchecked) > 10 else "")
        said = ("1 ignore entry not checked: its host or rule is not in this run (line" if len(unchecked) == 1
                else f"{len(unchecked)} ignore entries not checked: their hosts or rules are not in this run (lines")
        notices.append(f"{entries[0].source.path}: {said} {lines})")


def load_baseline(path: Path, root: str | None = None) -> dict[str, dict[str, object]]:
    text = _read_bounded(path, MAX_BASELINE_BYTES, "baseline file", root)
    # each entry is an object: its braces bound the entries before they are made (a brace in a message counts too)
    if text.count("{") > MAX_BASELINE_ENTRIES + 1:
        raise InputError(f"more than {MAX_BASELINE_ENTRIES} findings, more than a pgvet baseline holds: not read",
                         Source(str(path)))
    try:
        document = json.loads(text)
    except ValueError as error:
        raise InputError(f"not a pgvet baseline: {error}", Source(str(path))) from None
    except RecursionError:
        raise InputError("not a pgvet baseline: arrays or objects nested too deep", Source(str(path))) from None
    entries = document.get("findings") if isinstance(document, dict) else None
    if not isinstance(entries, dict) or document.get("format") != BASELINE_FORMAT:
        raise InputError("not a pgvet baseline (expected {\"format\": 1, \"findings\": {…}})", Source(str(path)))
    return entries


def mark_baseline(host: HostResult, entries: dict[str, dict[str, object]]) -> None:
    for finding in host.findings:
        if finding.fingerprint in entries:
            finding.baseline = True


def baseline_entries(result: LintResult) -> dict[str, dict[str, object]]:
    """The current findings by fingerprint (one entry for findings that share one: two hosts of one name)."""
    return {
        finding.fingerprint: {"rule": f"{finding.rule_id} {finding.rule_name}", "host": finding.host,
                              "path": finding.path, "message": " ".join(finding.message.split())}
        for host in result.hosts for finding in host.findings
    }


def updated_baseline(recorded: dict[str, dict[str, object]], result: LintResult) -> dict[str, dict[str, object]]:
    """The baseline without the entries the run found fixed: those of a host it linted that no current finding
    has. The entries of the hosts it did not lint stay (`update hosts/alpha` is not a claim about bravo)."""
    linted = {host.host_facts.name for host in result.hosts}
    current = baseline_entries(result)
    return {key: current.get(key, entry) for key, entry in recorded.items()
            if key in current or (entry.get("host") if isinstance(entry, dict) else None) not in linted}


def baseline_document(entries: dict[str, dict[str, object]]) -> str:
    """The baseline file's text."""
    return json.dumps({"format": BASELINE_FORMAT, "findings": dict(sorted(entries.items()))}, indent=2,
                      ensure_ascii=False) + "\n"
