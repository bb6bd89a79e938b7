"""`pgvet facts`: the fact table of a host, with every value's source.

The text table shows what inputs hold with their control characters escaped (pgvet.report.visible), as the
lint report does: a value or a file name may hold an escape sequence, which must not reach the terminal. The
parameters that may hold a secret (a connection string's password, a command, a custom setting) are shown as a
collection writes them (pgvet.live.redact): the configuration files' lines are facts so already
(snapshot/pgfacts.py); a pg_settings.json not written by a collection may still hold one."""

from __future__ import annotations

import io
import json

from pgvet.live.redact import redact_setting
from pgvet.report import cut, one_line, printed
from pgvet.snapshot.facts import Fact, HostFacts


def _redacted(fact: Fact, parameter: str | None) -> Fact:
    """The fact with the secret a parameter's value may hold hidden (``parameter``: its name; None for no parameter)."""
    if parameter is None or not isinstance(fact.value, str):
        return fact
    return fact._replace(value=_hidden(parameter, fact.value),
                         raw=None if fact.raw is None else _hidden(parameter, fact.raw))


def _hidden(parameter: str, text: str) -> str:
    """A parameter's text with its secret hidden; as written (``'…'``), the quotes kept."""
    if len(text) > 1 and text[0] == text[-1] == "'":
        return f"'{redact_setting(parameter, text[1:-1])}'"
    return redact_setting(parameter, text) or ""


def _host_facts(host: HostFacts) -> list[Fact]:
    return [_redacted(host.facts[name], name[3:] if name.startswith("pg.") else None) for name in sorted(host.facts)]


def facts_json(host: HostFacts) -> dict[str, object]:
    return {
        "host": host.name,
        "root": host.root,
        "facts": {fact.name: fact.to_json() for fact in _host_facts(host)},
        "items": {
            scope: [{fact.name: fact.to_json() for fact in item.facts()} for item in items]
            for scope, items in sorted(host.items.items())
        },
        "notes": host.notes,
        "warnings": host.warnings,
    }


def _shown(fact: Fact) -> str:
    value = str(fact.value).lower() if isinstance(fact.value, bool) else str(fact.value)
    return f"{value} ({fact.raw})" if fact.raw is not None and fact.raw != value else value


def _sources(fact: Fact) -> str:
    if len(fact.occurrences) > 1:
        overridden = ", ".join(str(place) for place in fact.occurrences[:-1])
        return f"{fact.source} (also set at {overridden})"
    return str(fact.source)


def render_facts(host: HostFacts, output_format: str) -> str:
    if output_format == "json":
        return json.dumps(facts_json(host), indent=2, ensure_ascii=False, default=str) + "\n"
    # rich takes longer to import than the JSON table takes to write: only for the text table
    from rich.console import Console
    from rich.table import Table

    buffer = io.StringIO()
    console = Console(file=buffer, width=160, no_color=True, highlight=False, soft_wrap=False)
    table = Table(title=one_line(f"facts of {host.name}"), title_justify="left", show_lines=False)
    table.add_column("fact", no_wrap=True)
    table.add_column("value", overflow="fold", max_width=48)
    table.add_column("source", overflow="fold")
    for fact in _host_facts(host):
        table.add_row(cut(one_line(fact.name)), cut(one_line(_shown(fact))), cut(one_line(_sources(fact))))
    console.print(table)
    for scope, items in sorted(host.items.items()):
        if not items:
            continue
        console.print(f"\n{scope} items ({len(items)})")
        for index, item in enumerate(items, 1):
            values = ", ".join(f"{fact.name.split('.', 1)[1]}={_shown(fact)}" for fact in item.facts())
            console.print(cut(one_line(f"  {index}. [{item.source}] {values}")), markup=False)
    for note in host.notes:
        console.print(one_line(f"note: {note}"), markup=False)
    for warning in host.warnings:
        console.print(one_line(f"warning: {warning}"), markup=False)
    return printed(buffer.getvalue())
