"""The fact table of one host: a flat namespace of typed values, each with its source(s)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import NamedTuple

from pgvet.provenance import Source

FactValue = int | float | str | bool
# The source path of a PostgreSQL boot value: a setting no file or server gave.
DEFAULT_SOURCE_PATH = "<default>"
# Item scopes a live server gives (docs/facts.md).
LIVE_SCOPES = ("drift", "file_error", "role_setting", "database", "slot", "prepared", "session", "index")


class Fact(NamedTuple):
    """One named value in canonical units (bytes, seconds, bool, lower-case enum).

    ``occurrences`` lists every place the value was set, the effective one last (PostgreSQL
    settings and declared sysctl keys can be set several times; later wins).
    ``raw`` is the text as written, when it differs from ``value`` (``'8GB'``, ``16384``).

    A named tuple: immutable like a frozen dataclass, and cheaper to make — a host has
    hundreds of facts (a dozen per postgresql.conf line).
    """

    name: str
    value: FactValue
    source: Source
    occurrences: tuple[Source, ...] = ()
    raw: str | None = None

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"value": self.value, "source": self.source.to_json()}
        if self.raw is not None and self.raw != str(self.value):
            out["raw"] = self.raw
        if len(self.occurrences) > 1:
            out["occurrences"] = [occurrence.to_json() for occurrence in self.occurrences]
        return out


# A Fact from its five fields (name, value, source, occurrences, raw), made by tuple.__new__ straight: Fact(...)'s
# __new__ is Python code. For the loops that make most of a host's facts.
make_fact: Callable[[tuple[str, FactValue, Source, tuple[Source, ...], str | None]], Fact] = partial(
    tuple.__new__, Fact)


class Item(dict[str, FactValue]):
    """One item of a scope (a postgresql.conf line, a mount, a disk): its facts' values by name, and where
    they were read — ``source`` for all of them but those ``sources`` places elsewhere.

    Values rather than a Fact per name: a host has ~40 items of a dozen facts, nearly all read at one
    place, and a rule reads a few of them; ``fact()`` makes the Fact a finding shows.
    """

    __slots__ = ("source", "sources")

    def __init__(self, values: Mapping[str, FactValue] | Iterable[tuple[str, FactValue]], source: Source,
                 sources: dict[str, Source] | None = None) -> None:
        dict.__init__(self, values)  # not super(): a host makes a few dozen items, and super() is a call more
        self.source = source
        self.sources = sources  # None: every fact was read at ``source``

    def source_of(self, name: str) -> Source:
        sources = self.sources
        return self.source if sources is None else sources.get(name, self.source)

    def fact(self, name: str) -> Fact | None:
        value = self.get(name)
        return None if value is None else make_fact((name, value, self.source_of(name), (), None))

    def facts(self) -> list[Fact]:
        return [make_fact((name, value, self.source_of(name), (), None)) for name, value in self.items()]

    def put(self, name: str, value: FactValue, source: Source) -> None:
        """A fact read elsewhere than the item's ``source``."""
        self[name] = value
        if source != self.source:
            if self.sources is None:
                self.sources = {}
            self.sources[name] = source


@dataclass(slots=True, eq=False, repr=False)
class HostFacts:
    """Everything pgvet knows about one host, ready for the rules.

    ``facts`` are host-wide; ``items`` holds, per scope (``mount``, ``disk``, ``setting``), one Item
    (values and where they were read) per item, evaluated by scoped rules beside the host-wide facts.
    ``notes`` say what pgvet inferred (shown with ``--verbose``); ``warnings`` say what it refused
    or could not read (always shown).
    """

    name: str
    root: str
    facts: dict[str, Fact] = field(default_factory=dict)
    items: dict[str, list[Item]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # always shown: inputs skipped, paths refused
    # inputs the host has but that could not be read, by the namespace of what they give (an item scope,
    # ``setting``; a fact namespace, ``live``) or by a fact's name: why, and how to have them read
    unread: dict[str, str] = field(default_factory=dict)
    # files read whose text never mentions "pgvet", by the name findings give them: no suppression comment
    # can be in them, so suppressions need not read them again
    unmarked_files: set[str] = field(default_factory=set)
    marked_files: set[str] = field(default_factory=set)  # the others: their suppressions are judged even unused
    # the line in force of each kernel key a sysctl.conf / sysctl.d file (or a document) declares at the value the
    # kernel runs: a suppression comment there silences a finding about the running value too (kept once the
    # facts are trimmed)
    sysctl_declared_at: dict[str, Source] = field(default_factory=dict)
    # parameters a live server runs with from its command line or environment (pg_settings.source), by name, with
    # the pg_settings row that shows it: they override postgresql.conf and ALTER SYSTEM, which a fix writes
    set_outside_files: dict[str, Source] = field(default_factory=dict)
    # parameters a live server takes from a file its snapshot's copy left out (an include outside its configuration
    # directory), set in a copied file before it: the server's line in force, by name (a fix written into the
    # copy's line would not take effect)
    set_where_not_copied: dict[str, Source] = field(default_factory=dict)
    # pg.* facts as a live server's configuration files set them where the server does not run that value yet (a
    # restart or reload pending, a fix written into a snapshot): what it runs once restarted, by fact name
    pending_from_files: dict[str, Fact] = field(default_factory=dict)
    # names the host directory's listing showed as regular files (no links): a report resolves their real
    # paths without asking the file system again; and every name of that listing, lower-cased (None: not
    # listed, ask the file system), which tells the suppressions whether the host has an ignore file
    regular_files: set[str] = field(default_factory=set)
    listing: frozenset[str] | None = None
    # its places name files of the machine pgvet runs on (pgvet check's, pointed back from a temporary snapshot at
    # the server's files and /proc's): a report may look them up where they are, not only beneath the directory
    places_local: bool = False

    def add(self, fact: Fact) -> None:
        self.facts[fact.name] = fact

    def value(self, name: str) -> FactValue | None:
        fact = self.facts.get(name)
        return None if fact is None else fact.value
