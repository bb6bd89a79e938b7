"""Patroni's configuration file (patroni.yml, postgres0.yml): one member of a Patroni cluster.

Its PostgreSQL parameters are ``bootstrap.dcs.postgresql.parameters`` (the cluster-wide ones, written to the DCS
when the cluster is bootstrapped) and ``postgresql.parameters`` (this member's), the member's applying last.
"""

from __future__ import annotations

from typing import Any

from pgvet.errors import ParseError
from pgvet.inputs.documents import DeclaredHost, DocumentKind, conf_setting, yaml_line
from pgvet.provenance import Source
from pgvet.safeyaml import YamlError, load_yaml

MAX_DOCUMENT_CHARS = 1024 * 1024


def _recognises(name: str, text: str) -> bool:
    return "postgresql:" in text and any(key in text for key in ("restapi:", "bootstrap:", "scope:"))


def parse_patroni(text: str, path: str) -> list[DeclaredHost]:
    document = _document(text, path)
    if not isinstance(document, dict) or not isinstance(document.get("postgresql"), dict):
        return []
    name = document.get("name") or document.get("scope") or path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    declared = DeclaredHost("patroni", str(name), Source(path, yaml_line(document, "name") or 1))
    dcs = _path(document, "bootstrap", "dcs", "postgresql", "parameters")
    for parameters in (dcs, _path(document, "postgresql", "parameters")):
        if isinstance(parameters, dict):
            for key, value in parameters.items():
                declared.settings.append(conf_setting(str(key), value, Source(path, yaml_line(parameters, key))))
    return [declared]


def _path(node: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return node


def _document(text: str, path: str) -> Any:
    if len(text) > MAX_DOCUMENT_CHARS:
        raise ParseError(f"{len(text)} characters: more than pgvet reads in a configuration document "
                         f"({MAX_DOCUMENT_CHARS})", Source(path, 1))
    try:
        return load_yaml(text)
    except YamlError as error:
        raise ParseError(f"invalid YAML: {error.message}", Source(path, error.line or 1)) from None


KIND = DocumentKind("patroni", "a Patroni member's configuration (patroni.yml): its and the cluster's parameters",
                    (".yml", ".yaml"), _recognises, parse_patroni)
