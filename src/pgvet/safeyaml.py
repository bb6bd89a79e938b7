"""YAML as pgvet reads every YAML input (rule packs, host.yaml, ignore files): ruamel.yaml's round-trip
loader (plain mappings, lists and scalars with their lines; no object construction) held to bounds that a
hostile document cannot get round.

- Brackets nested more than MAX_NESTING deep are refused before parsing: ruamel.yaml's pure-Python parser
  grows slow and then recursive on them, long before they could mean anything.
- Aliases may add at most MAX_ALIAS_VALUES values to the document: each alias counts the values of the
  node it names, those of the aliases inside it included. A billion-laughs document (anchors multiplying)
  is refused at the alias that crosses the budget, in time and memory proportional to its text, before
  anything walks the expanded document; an alias inside the node it names (a recursive document) is refused.
- A document a tool reads with PyYAML (Patroni, Ansible: ``pyyaml``) is read as PyYAML reads it: YAML 1.1's
  plain scalars (``1:30`` is 90, ``on`` a boolean, ``0640`` octal, ``0o640`` a text), a repeated key's last value.
- A number no double holds — an integer beyond 2^1024, ``.inf``, ``.nan``, ``1e400`` — and a text holding
  a lone surrogate (``"\\ud800"``, which no UTF-8 output can write) are refused at their line.

Every refusal is a YamlError with the 1-based line when known; callers turn it into their own error.
"""

from __future__ import annotations

import re
from functools import cache
from typing import TYPE_CHECKING, Any

from pgvet.numbers import out_of_range, shown_number

if TYPE_CHECKING:
    from ruamel.yaml.composer import Composer
    from ruamel.yaml.constructor import RoundTripConstructor
    from ruamel.yaml.resolver import VersionedResolver

MAX_NESTING = 100
# Values (scalars, lists, mappings) that aliases may add: sharing a few blocks of example facts or settings
# stays far below it; a document that needs more is better written out.
MAX_ALIAS_VALUES = 10_000
# Documents of one ---separated stream: a `helm template` of a large chart has hundreds; each costs ruamel.yaml its
# own start, so a file of nothing but --- lines (a megabyte of them) took tens of seconds.
MAX_DOCUMENTS = 10_000
_SURROGATE = re.compile("[\ud800-\udfff]")
_LONE_SURROGATE = "a lone surrogate (such as \\ud800) is no character: write the text itself, in UTF-8"


class YamlError(Exception):
    def __init__(self, message: str, line: int | None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


def too_deep(text: str) -> int | None:
    """The line where ``[`` / ``{`` nesting first exceeds MAX_NESTING, or None. Brackets inside quotes and
    comments count too: a legitimate document never comes near the limit either way."""
    if "[" not in text and "{" not in text:
        return None  # the usual document: spare the walk over every character
    depth = 0
    line = 1
    for char in text:
        if char in "[{":
            depth += 1
            if depth > MAX_NESTING:
                return line
        elif char in "]}":
            depth = max(0, depth - 1)
        elif char == "\n":
            line += 1
    return None


def _refused_scalar(value: object) -> str | None:
    """Why a scalar cannot be a value of pgvet's (a number no double holds, a lone surrogate), or None."""
    if isinstance(value, str):
        return _LONE_SURROGATE if _SURROGATE.search(value) else None
    return out_of_range(value)


# PyYAML's resolver (yaml/resolver.py) has YAML 1.1's implicit types, narrower in two: a boolean is yes/no,
# true/false, on/off (not the spec's y/n), and a float has a dot, and a sign in its exponent (2e4 and 1.5e3 are texts).
_PYYAML_TEXTS_OF_YAML_1_1_BOOLEANS = frozenset({"y", "Y", "n", "N"})
_PYYAML_FLOAT = re.compile(r"[-+]?[0-9][0-9_]*\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?"
                           r"|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)")


@cache
def _classes() -> tuple[type[Composer], type[RoundTripConstructor], type[RoundTripConstructor],
                        type[VersionedResolver]]:
    """ruamel.yaml's composer and constructor with pgvet's bounds, and the resolver of the documents PyYAML reads
    (made at the first load: ruamel.yaml is imported only by the commands that read YAML)."""
    from ruamel.yaml.composer import Composer, ComposerError
    from ruamel.yaml.constructor import ConstructorError, RoundTripConstructor
    from ruamel.yaml.events import AliasEvent
    from ruamel.yaml.nodes import MappingNode, ScalarNode, SequenceNode
    from ruamel.yaml.resolver import VersionedResolver

    class BoundedComposer(Composer):
        """Counts the values each node stands for (its own and those of the aliases in it) as the document is
        composed, and the values aliases add; composition is linear in the text whatever the aliases."""

        def compose_document(self) -> Any:
            self.sizes: dict[int, int] = {}  # id of a finished node → the values it stands for
            self.aliased = 0
            self.warn_double_anchors = False  # YAML allows it (an alias names the latest): no warning on stderr
            return super().compose_document()

        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.parser.check_event(AliasEvent):
                mark = self.parser.peek_event().start_mark
                node = super().compose_node(parent, index)
                size = self.sizes.get(id(node))
                if size is None:  # the node it names is still being composed: it would hold itself
                    raise ComposerError(None, None, "an alias inside the node it names (a recursive document)",
                                        mark)
                self.aliased += size
                if self.aliased > MAX_ALIAS_VALUES:
                    raise ComposerError(None, None, f"aliases expand to more than {MAX_ALIAS_VALUES} values "
                                        "(pgvet refuses YAML alias bombs)", mark)
                return node
            node = super().compose_node(parent, index)
            sizes = self.sizes
            if isinstance(node, SequenceNode):
                sizes[id(node)] = 1 + sum(sizes[id(child)] for child in node.value)
            elif isinstance(node, MappingNode):
                sizes[id(node)] = 1 + sum(sizes[id(key)] + sizes[id(value)] for key, value in node.value)
            else:
                sizes[id(node)] = 1
            return node

    class ValidatingConstructor(RoundTripConstructor):
        """Scalars checked as they are made, where their line is known."""

        def construct_non_recursive_object(self, node: Any, tag: str | None = None) -> Any:
            try:
                value = super().construct_non_recursive_object(node, tag)
            except ValueError as error:  # int() of more than 4300 digits, Python's limit
                too_long = (f"{shown_number(node.value)}: beyond what a double holds (about 1.8e308)"
                            if str(node.tag).endswith(":int") else str(error))
                raise ConstructorError(None, None, too_long, node.start_mark) from None
            refused = _refused_scalar(value)
            if refused is not None:
                raise ConstructorError(None, None, f"{shown_number(str(node.value))}: {refused}", node.start_mark)
            return value

    class LastKeyWinsConstructor(ValidatingConstructor):
        """A key repeated in a mapping takes the value of its last occurrence, at that line: what PyYAML's
        loaders do (Patroni and Ansible read their files with them)."""

        def check_mapping_key(self, node: Any, key_node: Any, mapping: Any, key: Any, value: Any) -> bool:
            if key in mapping:
                del mapping[key]
            return True

    class PyYamlResolver(VersionedResolver):
        """Plain scalars typed as PyYAML types them: YAML 1.1's rules whatever the document's %YAML directive says
        (PyYAML has no other), less what PyYAML's resolver leaves a text."""

        @property
        def processing_version(self) -> Any:
            return (1, 1)

        def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
            tag = super().resolve(kind, value, implicit)
            if kind is ScalarNode and implicit[0] and (
                    (tag == "tag:yaml.org,2002:bool" and value in _PYYAML_TEXTS_OF_YAML_1_1_BOOLEANS)
                    or (tag == "tag:yaml.org,2002:float" and not _PYYAML_FLOAT.fullmatch(value))):
                return self.DEFAULT_SCALAR_TAG
            return tag

    return BoundedComposer, ValidatingConstructor, LastKeyWinsConstructor, PyYamlResolver


def load_yaml(text: str, *, pyyaml: bool = False) -> Any:
    """The round-trip document of ``text`` (None when it is empty); YamlError when it is invalid or refused.
    A repeated key is refused. ``pyyaml``: read as PyYAML reads it (the tools that read the document with it:
    Patroni, Ansible): plain scalars by YAML 1.1's rules as PyYAML's resolver has them, and a repeated key takes
    its last value, at that line."""
    return _loaded(text, every=False, pyyaml=pyyaml)


def load_yaml_documents(text: str) -> list[Any]:
    """Every document of a ``---``-separated stream (Kubernetes manifests), empty ones included as None."""
    documents: list[Any] = _loaded(text, every=True)
    return documents


def _loaded(text: str, *, every: bool, pyyaml: bool = False) -> Any:
    from ruamel.yaml import YAML
    from ruamel.yaml.error import MarkedYAMLError, YAMLError
    from ruamel.yaml.reader import ReaderError

    deep = too_deep(text)
    if deep is not None:
        raise YamlError(f"brackets nested more than {MAX_NESTING} deep", deep)
    yaml = YAML(typ="rt", pure=True)
    composer, validating, pyyaml_constructor, pyyaml_resolver = _classes()
    yaml.Composer, yaml.Constructor = composer, pyyaml_constructor if pyyaml else validating
    if pyyaml:
        yaml.Resolver = pyyaml_resolver
    try:
        if not every:
            return yaml.load(text)
        documents: list[Any] = []
        for document in yaml.load_all(text):
            if len(documents) == MAX_DOCUMENTS:
                raise YamlError(f"more than {MAX_DOCUMENTS} YAML documents in one file", None)
            documents.append(document)
        return documents
    except MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        reason = " ".join(part for part in (error.context, error.problem) if part)
        raise YamlError(reason, mark.line + 1 if mark is not None else None) from None
    except ReaderError as error:  # a character YAML does not allow, at a position of the text
        raise YamlError(str(error).split("\n")[0], text.count("\n", 0, error.position) + 1) from None
    except (YAMLError, ValueError, TypeError, RecursionError) as error:
        raise YamlError(f"{error}", None) from None
