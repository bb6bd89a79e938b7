"""``pgvet check``: collect this host and a running server, ask what cannot be detected, lint the snapshot.

The snapshot is the same one ``pgvet collect`` writes (kept with ``--snapshot DIR``), with the answers
in its host.yaml, so ``pgvet lint DIR`` later gives the same findings. docs/live.md describes the flow.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import socket
import sys
import tempfile
from collections.abc import Callable, Collection
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple

from pgvet.errors import InputError
from pgvet.findings import LintResult
from pgvet.inputs.collect_json import parse_collect_json
from pgvet.inputs.host_yaml import WORKLOADS, host_yaml_keys
from pgvet.inputs.reading import read_text
from pgvet.interrupt import Interrupted
from pgvet.live.commands import collect_command
from pgvet.live.writer import copied_from, write_text
from pgvet.output_file import write_file
from pgvet.provenance import Source
from pgvet.report import visible
from pgvet.run.lint import lint
from pgvet.run.options import LintOptions
from pgvet.snapshot.facts import HostFacts, Item
from pgvet.snapshot.load import load_host

# An answer is asked with its prompt and choices; the raw YAML value is what host.yaml stores.
Answers = dict[str, Any]
Prompter = Callable[[str, list[str], str], str]  # (question, choices, default) → the chosen text


class Question(NamedTuple):
    key: str  # host.yaml key (``raid`` holds a mapping)
    text: str
    choices: tuple[str, ...]


QUESTIONS: tuple[Question, ...] = (
    Question("storage", "Storage that holds the data directory", ("hdd", "ssd", "nvme", "san")),
    Question("raid", "RAID level of that storage", ("none", "0", "1", "5", "6", "10")),
    Question("workload", "Workload", WORKLOADS),
    Question("dedicated", "Is the host dedicated to PostgreSQL", ("yes", "no")),
)
RAID_DISKS_DEFAULT = {"0": "2", "1": "2", "5": "3", "6": "4", "10": "4"}


@dataclass(slots=True)
class CheckOutcome:
    result: LintResult
    snapshot: Path
    kept: bool  # False: a temporary snapshot, already removed
    asked: list[str] = field(default_factory=list)  # host.yaml keys answered at the prompt
    unanswered: list[str] = field(default_factory=list)  # keys neither given nor asked (--no-input)
    saved_answers: Path | None = None
    server_error: str | None = None  # why no server was read (the host was checked all the same)


def detected_storage(host: HostFacts) -> str:
    """A default for ``storage``: rotational disks under PGDATA (or anywhere) say hdd, NVMe names nvme."""
    disks = [item for item in host.items.get("disk", []) if not _fact(item, "disk.virtual")]
    holding = [item for item in disks if _fact(item, "disk.holds_pgdata")] or disks
    if any(_fact(item, "disk.rotational") for item in holding):
        return "hdd"
    if holding and all(str(_fact(item, "disk.name") or "").startswith("nvme") for item in holding):
        return "nvme"
    return "ssd"


def _fact(item: Item, name: str) -> object:
    return item.get(name)


def ask_answers(given: Collection[str], host: HostFacts, prompt: Prompter) -> tuple[Answers, list[str]]:
    """The answers to the questions ``given`` does not answer, asked with ``prompt``; and the keys asked."""
    answers: Answers = {}
    asked: list[str] = []
    defaults = {"storage": detected_storage(host), "raid": "none", "workload": "mixed", "dedicated": "yes"}
    for question in QUESTIONS:
        if question.key in given:
            continue
        chosen = prompt(question.text, list(question.choices), defaults[question.key])
        asked.append(question.key)
        if question.key == "raid":
            if chosen != "none":
                disks = prompt("Disks in the array", [], RAID_DISKS_DEFAULT[chosen])
                answers["raid"] = {"level": int(chosen), "disks": _whole_number(disks)}
        elif question.key == "dedicated":
            answers["dedicated"] = chosen == "yes"
        else:
            answers[question.key] = chosen
    return answers, asked


def _whole_number(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise InputError(f"the number of disks must be a whole number, not {text!r}") from None


def load_answers(path: Path) -> tuple[str, list[str]]:
    """A host.yaml of answers, checked as pgvet checks any host.yaml (unknown keys, bad values → file:line).

    Returns its text (written into the snapshot as it is, or with the answers asked added: render_answers) and
    the keys it answers.
    """
    text = read_text(path, str(path))
    return text, host_yaml_keys(text, str(path))


def render_answers(text: str | None, answers: Answers) -> str:
    """host.yaml text: the given one (``text``) with the new answers added, its comments kept; the given text as
    it is when nothing was asked (ruamel.yaml, slow to import, is needed only to add answers)."""
    if not answers:
        return text or ""
    from ruamel.yaml import YAML
    from ruamel.yaml.comments import CommentedMap

    yaml = YAML(typ="rt", pure=True)
    document = yaml.load(text) if text else None
    merged = document if isinstance(document, CommentedMap) else CommentedMap()
    for key, value in answers.items():
        merged[key] = value
    buffer = io.StringIO()
    yaml.default_flow_style = False
    yaml.dump(merged, buffer)
    return buffer.getvalue()


def run_check(dsn: str | None, options: LintOptions, *, snapshot: Path | None, answers_file: Path | None,
              prompt: Prompter | None, confirm_save: Callable[[], Path | None] | None = None,
              timeout: float = 10) -> CheckOutcome:
    """Collect into ``snapshot`` (a temporary directory when None), add the answers, lint it.

    ``prompt`` None: nothing is asked (--no-input, or not on a terminal). ``confirm_save``, called after
    questions were asked, returns where to save the answers (None: not saved).
    """
    given_text, given = load_answers(answers_file) if answers_file is not None else (None, [])
    # A temporary snapshot is named after the host: the report's name for it.
    scratch: Path | None = None
    if snapshot is not None:
        directory = snapshot
    else:
        scratch = Path(tempfile.mkdtemp(prefix="pgvet-check-"))
        directory = scratch / (socket.gethostname().replace("/", "_") or "localhost")
    try:
        collect_command(directory, dsn, timeout=timeout, server_optional=True)
    except BaseException:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
        raise
    try:
        asked: list[str] = []
        answers: Answers = {}
        if prompt is not None:
            answers, asked = ask_answers(given, load_host(directory), prompt)
        saved = None
        if asked and confirm_save is not None:
            saved = confirm_save()
            if saved is not None:
                _save(saved, render_answers(given_text, answers))
        if given or answers:
            write_text(directory, "host.yaml", render_answers(given_text, answers))
        result = lint([directory], replace(options, record_passes=True))
        server_error = _server_error(directory)
        if scratch is not None:
            _point_at_origins(result, directory)
    except KeyboardInterrupt:
        raise Interrupted("the temporary snapshot removed" if scratch is not None
                          else f"the snapshot is kept in {directory}") from None
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
    unanswered = [question.key for question in QUESTIONS if question.key not in given and question.key not in asked]
    return CheckOutcome(result, directory, snapshot is not None, asked, unanswered, saved, server_error)


def _server_error(directory: Path) -> str | None:
    """Why the collection read no server, as its collect.json says."""
    manifest = parse_collect_json(read_text(directory / "collect.json", "collect.json", directory), "collect.json")
    return None if manifest.server_error is None else manifest.server_error.value


# Snapshot files that copy a file of the machine line for line.
_VERBATIM = {"meminfo.txt": "/proc/meminfo", "mounts.txt": "/proc/mounts"}


class _Origins:
    """Where a place in a temporary snapshot was read from, for a report that outlives the snapshot: a copied
    configuration file is the server's file (line for line); meminfo.txt and mounts.txt are /proc's files; a
    line of sysctl.txt is its key's /proc/sys file, and one of sysfs.txt the /sys file it names. Other places
    (lscpu's output, pg_settings.json's rows) have no file to name, and stay as they are."""

    def __init__(self, directory: Path, copies: dict[str, str]) -> None:
        self.directory = directory
        self.copies = copies
        self.lines: dict[str, list[str]] = {}
        # a copy's name as a place in a message (`postgresql.conf:822`), and a path in the temporary directory
        # (where the snapshot resolved an include written relative to a copy)
        names = "|".join(re.escape(name) for name in sorted(copies, key=len, reverse=True))
        scratch = {str(directory.parent), os.path.realpath(directory.parent)}
        self.places = re.compile("|".join(
            [*([rf"(?<![\w./-])(?:{names})(?=:\d)"] if names else []),
             *(rf"{re.escape(path)}/[^\s()'\",;:]*" for path in sorted(scratch, key=len, reverse=True))]))
        config = copies.get("postgresql.conf")
        self.config_dir = None if config is None else os.path.dirname(config)

    def _line(self, name: str, number: int | None) -> str | None:
        if name not in self.lines:
            try:
                self.lines[name] = read_text(self.directory / name, name, self.directory).splitlines()
            except InputError:
                self.lines[name] = []
        lines = self.lines[name]
        return lines[number - 1] if number is not None and 0 < number <= len(lines) else None

    def text(self, message: str) -> str:
        """A message's places as the server has them: a copy's name (PGV405's `postgresql.conf:822`) is the server
        file it copies, and a path the snapshot resolved is the server's (PGV408's include `../rel.conf`, written
        relative to the configuration file: beside the server's configuration directory, not the snapshot)."""
        return self.places.sub(lambda match: self._server_path(match.group()), message)

    def _server_path(self, path: str) -> str:
        relative = os.path.relpath(path, os.path.realpath(self.directory)) if os.path.isabs(path) else path
        if relative in self.copies:
            return self.copies[relative]
        if self.config_dir is None or not os.path.isabs(path):
            return path
        return os.path.normpath(os.path.join(self.config_dir, relative))

    def of(self, source: Source) -> Source:
        path = source.path
        if path in self.copies:
            return replace(source, path=self.copies[path])
        if path in _VERBATIM:
            return replace(source, path=_VERBATIM[path])
        text = self._line(path, source.line) if path in ("sysctl.txt", "sysfs.txt") else None
        if text is None:
            return source
        if path == "sysctl.txt":  # `vm.dirty_ratio = 20`: a '.' separates directories, a '/' is a '.' of a name
            key = text.split(" = ", 1)[0]
            return Source("/proc/sys/" + "/".join(part.replace("/", ".") for part in key.split(".")))
        return Source(text.split(":", 1)[0])  # `/sys/block/vda/queue/read_ahead_kb:8192`


def _point_at_origins(result: LintResult, directory: Path) -> None:
    """Places in a temporary snapshot name where they were read from instead (``_Origins``): the snapshot is
    removed when the command ends."""
    try:
        copies = copied_from(json.loads(read_text(directory / "collect.json", "collect.json", directory)))
    except (InputError, ValueError):
        copies = {}
    origins = _Origins(directory, copies)
    for host in result.hosts:
        host.host_facts.places_local = True
        for finding in host.findings:
            finding.message = origins.text(finding.message)
            if finding.path is not None:
                place = origins.of(Source(finding.path, finding.line))
                finding.path, finding.line = place.path, place.line
            finding.evidence = [item if item.source is None else item._replace(source=origins.of(item.source))
                                for item in finding.evidence]


def _save(path: Path, text: str) -> None:
    """The answers written as every file pgvet writes is: whole or not at all, never through a link, and private
    (they describe a database host)."""
    write_file(path, text.encode("utf-8"), private=True)
    print(visible(f"answers saved to {path} (next time: pgvet check --answers {path})"), file=sys.stderr)
