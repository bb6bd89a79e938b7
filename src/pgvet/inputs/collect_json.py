"""collect.json, the manifest ``pgvet collect`` writes in a snapshot (docs/live.md): the host's recorded name, its
kernel's base page size, what could not be read and why, and whether a server was read.

A pure parser: text → CollectManifest with the line of each value, or ParseError at the offending line.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from pgvet.errors import ParseError
from pgvet.inputs.host_yaml import PAGE_SIZES
from pgvet.inputs.pg_settings import _Fields, _members, _Node, _Walker
from pgvet.provenance import Located, Source

SUPPORTED_FORMAT = 1


class NotRead(NamedTuple):
    """Something the collection could not read: a snapshot file (``name``: ``lscpu.txt``), the server's
    configuration files (``what``: ``configuration files``) or one of them (``what``: its server path)."""

    what: str
    error: str
    is_file: bool  # a snapshot file of the host (name), not a configuration file of the server (what)
    source: Source


@dataclass(frozen=True, slots=True)
class CollectManifest:
    """``server_read``: False with --host-only (``server_error`` None) or when the server could not be reached
    (``server_error`` says why)."""

    hostname: Located[str] | None
    page_size: Located[int] | None  # the kernel's base page size, as collect measured it (older manifests: None)
    not_read: tuple[NotRead, ...]
    server_read: bool
    server_error: Located[str] | None
    # the server's configuration files copied into the snapshot: each copy's name there, with the server file it
    # copies (``files[].name``, ``files[].server_file``)
    copied: Mapping[str, str] = field(default_factory=dict)


def _not_read(node: _Node, path: str) -> NotRead:
    row = _Fields(node, path, "a failed entry")
    name = row.optional_text("name")
    what = name or row.optional_text("what")
    if not what:
        raise ParseError("a failed entry names neither a file ('name') nor what was not read ('what')", row.source)
    return NotRead(what, row.optional_text("error") or "", name is not None, row.source)


def parse_collect_json(text: str, path: str) -> CollectManifest:
    """A ``collect.json`` as a CollectManifest; ParseError(path, line) when it is not one pgvet wrote."""
    try:
        document = _Walker(text, path).document()
    except RecursionError:
        raise ParseError("invalid JSON: nested too deep", Source(path, 1)) from None
    top = _Fields(document, path, "collect.json")
    members: dict[str, _Node] = _members(document, path, "collect.json", dict)
    file_format = top.optional_int("format")
    if file_format != SUPPORTED_FORMAT:
        raise ParseError(f"collect.json format {file_format!r} is not supported (pgvet reads format "
                         f"{SUPPORTED_FORMAT}); collect it again with this pgvet", top.source)
    hostname = top.optional_text("hostname")
    located_name = Located(hostname, Source(path, members["hostname"].line)) if hostname else None
    page_size = top.optional_int("page_size")
    if page_size is not None and page_size not in PAGE_SIZES:
        raise ParseError(f"page_size {page_size} is no kernel's base page size ({', '.join(map(str, PAGE_SIZES))})",
                         Source(path, members["page_size"].line))
    located_page = Located(page_size, Source(path, members["page_size"].line)) if page_size is not None else None
    failed = members.get("failed")
    not_read = tuple(_not_read(node, path) for node in _members(failed, path, "failed", list)) if failed else ()
    files = members.get("files")
    copied: dict[str, str] = {}
    for node in _members(files, path, "files", list) if files else ():
        entry = _Fields(node, path, "a file entry")
        name, server_file = entry.optional_text("name"), entry.optional_text("server_file")
        if name and server_file:
            copied[name] = server_file
    server_node = members.get("server")
    if server_node is None or server_node.value is None:
        return CollectManifest(located_name, located_page, not_read, False, None, copied)
    server = _Fields(server_node, path, "server")
    error = server.optional_text("error")
    return CollectManifest(located_name, located_page, not_read, error is None,
                           Located(error, server.source) if error is not None else None, copied)
