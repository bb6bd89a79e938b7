"""What one host's facts are gathered in while its inputs are read (snapshot/load.py), and the bounds on what a
host's inputs may hold together."""

from __future__ import annotations

import os
from collections.abc import Mapping
from functools import cached_property
from pathlib import Path

from pgvet.errors import InputError
from pgvet.inputs.reading import MAX_INPUT_BYTES, find_mark, read_text
from pgvet.provenance import Located, Source
from pgvet.snapshot.discovery import SnapshotInputs
from pgvet.snapshot.facts import FactValue, HostFacts, make_fact

MAX_HOST_BYTES = 2 * MAX_INPUT_BYTES
MAX_ITEM_LINES = 100_000


class HostBuilder:
    """Collects facts for one host, keeping the first error of each input as a warning."""

    def __init__(self, name: str, root: Path, wanted: frozenset[str] | None) -> None:
        self.root = root
        self.root_name = os.fspath(root)
        self.host = HostFacts(name=name, root=str(root))
        self.wanted = wanted
        self.bytes_read = 0
        self.item_lines: dict[str, int] = {}  # lines read so far of each kind of item input
        self.inputs = SnapshotInputs()  # the host's inputs, once found

    @cached_property
    def real_root(self) -> Path:
        return self.root.resolve()

    def display(self, path: Path) -> str:
        # path.parent == root, compared as the normalised strings Paths are (a Path's own operations cost
        # several times as much): a file of the directory that is no link is shown by its name, which is
        # what resolving both would give, without walking every directory of the path.
        name = os.fspath(path)
        head, tail = os.path.split(name) if name != "." else (".", "")  # Path("."): its own parent, no name
        if ((head or ".") == self.root_name and tail != ".."
                and (tail in self.host.regular_files or not os.path.islink(name))):
            return tail
        if name == self.root_name:
            return "."  # what resolving gives for the (existing) host directory itself
        # Outside the host directory too, relative to it (``../out/meminfo.txt``): reports join a source to
        # the host's directory, and a fingerprint holding this path is the same from any working directory.
        return os.path.relpath(os.path.realpath(name), self.real_root)

    def text(self, path: Path, items: str | None = None) -> tuple[str, str]:
        """An input's text and its path as shown; ``items``: what its lines are, when each becomes an item
        (the lines of all the inputs of that kind count together)."""
        display = self.display(path)
        text = read_text(path, display, self.inputs.read_beneath(path, self.root))
        self.account(text, display, items)
        return text, display

    def account(self, text: str, display: str, items: str | None = None) -> None:
        """Count an input read against the host's bounds, and note whether it may hold suppression comments."""
        self.bytes_read += len(text)
        if self.bytes_read > MAX_HOST_BYTES:
            raise InputError(f"with this file, the host's inputs hold more than {MAX_HOST_BYTES} bytes, more than "
                             "pgvet reads in one host: it does not judge them", Source(display))
        if items is not None:
            lines = self.item_lines[items] = self.item_lines.get(items, 0) + text.count("\n")
            if lines > MAX_ITEM_LINES:
                raise InputError(f"with this file, more than {MAX_ITEM_LINES} lines of {items}, more than pgvet "
                                 "judges in one host: it does not judge them", Source(display))
        if find_mark(text) is None:
            self.host.unmarked_files.add(display)
        elif "ignore[" in text:  # not every file naming pgvet (a collected pg_settings.json does) has comments
            self.host.marked_files.add(display)

    def put(self, name: str, located: Located[FactValue]) -> None:
        self.host.facts[name] = make_fact((name, located.value, located.source, (), None))

    def put_all(self, prefix: str, values: Mapping[str, Located[FactValue]]) -> None:
        facts = self.host.facts
        for key, located in values.items():
            name = f"{prefix}.{key}"
            facts[name] = make_fact((name, located.value, located.source, (), None))
