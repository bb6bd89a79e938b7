"""The report of ``pgvet check``, in the spirit of postgresqltuner: one section per subject, every rule
with its verdict (OK, INFO, WARN, BAD) and the values it computed; findings in full with their fix.

Sections come from rule tags (``section_of``): the first section whose tags a rule carries.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rich.console import Console
from rich.text import Text

from pgvet.findings import Finding, HostResult, NotEvaluated, Passed, RuleMeta
from pgvet.report import printed, visible
from pgvet.report.memory import memory_picture
from pgvet.report.text import (
    LABEL_WIDTH,
    HostFiles,
    print_blank,
    print_finding,
    print_line,
    print_memory,
    print_rows,
    report_console,
    summary_line,
    value_text,
)

if TYPE_CHECKING:
    from pgvet.live.check import CheckOutcome
    from pgvet.report import ReportOptions

# (section, tags that put a rule in it): the first match wins, so specific subjects come first.
SECTIONS: tuple[tuple[str, frozenset[str]], ...] = (
    ("Huge pages", frozenset({"hugepages"})),
    ("Configuration files", frozenset({"validity", "version"})),
    ("Outage risks", frozenset({"outage"})),  # what takes servers down: wraparound, slots, stuck transactions
    ("Security", frozenset({"security"})),
    ("WAL and checkpoints", frozenset({"wal", "checkpoints", "durability"})),
    ("Planner", frozenset({"planner", "parallelism"})),
    ("Storage", frozenset({"storage", "filesystem", "raid", "io"})),
    ("Memory", frozenset({"memory"})),
    ("Configuration files", frozenset({"consistency"})),  # files against what runs, once memory is placed
    ("Connections and activity", frozenset({"connections", "live"})),
    ("Maintenance and logging", frozenset({"maintenance", "statistics", "logging"})),
    ("OS", frozenset({"os", "cpu", "scheduler", "virtualisation"})),
)
OTHER = "Other"
VERDICT = {"error": ("BAD", "bold red"), "warning": ("WARN", "yellow"), "info": ("INFO", "cyan")}
OK_STYLE = "green"


def section_of(tags: tuple[str, ...]) -> str:
    present = set(tags)
    for name, wanted in SECTIONS:
        if present & wanted:
            return name
    return OTHER


@dataclass(slots=True)
class Section:
    findings: list[Finding] = field(default_factory=list)
    passed: dict[str, list[Passed]] = field(default_factory=dict)  # rule id → its passes (several for items)
    not_evaluated: list[NotEvaluated] = field(default_factory=list)


def sections(host: HostResult, rules: dict[str, RuleMeta]) -> dict[str, Section]:
    """The host's outcomes grouped by section, in SECTIONS order."""
    grouped: dict[str, Section] = defaultdict(Section)
    for finding in host.findings:
        grouped[section_of(finding.tags)].findings.append(finding)
    for passed in host.passed or []:
        grouped[section_of(rules[passed.rule_id].tags)].passed.setdefault(passed.rule_id, []).append(passed)
    for skipped in host.not_evaluated:
        grouped[section_of(rules[skipped.rule_id].tags)].not_evaluated.append(skipped)
    order = list(dict.fromkeys([name for name, _ in SECTIONS] + [OTHER]))
    return {name: grouped[name] for name in order if name in grouped}


def _verdict(label: str, style: str) -> Text:
    return Text(f"{'[' + label + ']':<{LABEL_WIDTH}}", style)


def _pass_row(rule: RuleMeta, passes: list[Passed]) -> tuple[str, Text]:
    """``[OK]  PGVnnn not the case: <the problem it looks for> — the values it computed``. A rule's title names the
    problem: the row says first that it is not there (`values — PGV110: Huge page pool too small: no` read as if it
    were)."""
    text = Text(f"{rule.id} not the case: ", "bold")
    text.append(visible(rule.title), "dim")
    if len(passes) > 1 or passes[0].subject is not None:
        text.append(f" — {len(passes)} checked", "bold")
    else:
        shown = [f"{name} = {value_text(name, value)}" for name, value in passes[0].values.items()
                 if value is not None]
        if shown:
            text.append(visible(f" — {', '.join(shown)}"), "bold")
    return "[OK]", text


def _not_evaluated_lines(console: Console, skipped: list[NotEvaluated], unread: set[str], said: set[str]) -> None:
    """Without --verbose: how many rules of the section were not evaluated, one line per input that could not
    be read (with why, and how to have it read: in full the first time, ``said`` holds those), one for the
    rest."""
    by_reason: dict[str, set[str]] = defaultdict(set)
    for record in skipped:
        by_reason[record.reason if record.reason in unread else ""].add(record.rule_id)
    for reason, rule_ids in sorted(by_reason.items(), key=lambda pair: pair[0] == ""):
        if not reason:
            why = " (missing inputs; --verbose says which)"
        elif reason in said:
            why = f": {reason.split(': ', 1)[0]} (as above)"
        else:
            why = f": {reason}"
            said.add(reason)
        style = "yellow" if reason else "dim"
        print_line(console, Text(visible(f"{'':<{LABEL_WIDTH}}{len(rule_ids)} not evaluated{why}"), style))


def _header(console: Console, outcome: CheckOutcome, host: HostResult) -> None:
    facts = host.host_facts.facts

    def fact(name: str) -> object:
        found = facts.get(name)
        return None if found is None else found.value

    title = Text("pgvet check", "bold")
    title.append(visible(f" — {host.host_facts.name}"), "bold")
    print_line(console, title)
    version = fact("pg.server_version") or fact("pg.version")
    ram = fact("meminfo.mem_total")
    cpus = fact("cpu.count")
    lines = [
        f"PostgreSQL {version}" if version is not None else "no PostgreSQL server read",
        f"RAM {value_text('ram', ram)}" if ram is not None else None,
        f"{cpus} CPUs" if cpus is not None else None,
    ]
    print_line(console, Text(visible(", ".join(line for line in lines if line)), "dim"))
    for warning in host.host_facts.warnings:
        print_line(console, Text(visible(f"warning: {warning}"), "yellow"))
    if outcome.unanswered:
        print_line(console, Text(f"not asked (--no-input): {', '.join(outcome.unanswered)} — rules that need them are "
                                 "not evaluated; give them with --answers host.yaml", "yellow"))
    print_blank(console)


def render_check(outcome: CheckOutcome, options: ReportOptions) -> str:
    """The sectioned report of one checked host."""
    console, buffer, width = report_console(options)
    result = outcome.result
    for error in result.errors:
        print_line(console, Text(visible(f"error: {error.host}: {error.message}"), "bold red"))
    for host in result.hosts:
        files = HostFiles(host.host_facts.root)
        _header(console, outcome, host)
        picture = memory_picture(host.host_facts)
        if picture is not None:
            print_memory(console, picture, width)
        said: set[str] = set()  # reasons already given in full
        for name, section in sections(host, result.rules).items():
            print_line(console, Text(f"== {name} ==", "bold underline"))
            for finding in sorted(section.findings, key=lambda item: (-item.rank, item.rule_id, item.subject or "")):
                label, style = VERDICT[finding.severity]
                head = _verdict(label, style)
                head.append(f"{finding.rule_id} ", "bold")
                head.append(visible(finding.title))
                if finding.subject:
                    head.append(visible(f"  [{finding.subject}]"), "dim")
                print_line(console, head)
                print_finding(console, finding, host, files, options, heading=False, snapshot_places=outcome.kept)
            if section.passed:
                print_rows(console, [_pass_row(result.rules[rule_id], section.passed[rule_id])
                                     for rule_id in sorted(section.passed)], OK_STYLE)
            if section.not_evaluated and options.verbose:
                for skipped in section.not_evaluated:
                    why = skipped.reason or "missing " + ", ".join(skipped.missing)
                    line = _verdict("--", "dim")
                    title = result.rules[skipped.rule_id].title
                    line.append(visible(f"{skipped.rule_id} {title}: not evaluated ({why})"), "dim")
                    print_line(console, line)
            elif section.not_evaluated:
                _not_evaluated_lines(console, section.not_evaluated, set(host.host_facts.unread.values()), said)
            print_blank(console)
    print_line(console, Text(summary_line(result, options.verbose), "bold"))
    if outcome.kept:
        print_line(console, Text(visible(f"snapshot kept in {outcome.snapshot}: `pgvet lint {outcome.snapshot}` gives "
                                         "these findings again, offline"), "dim"))
    return printed(buffer.getvalue())
