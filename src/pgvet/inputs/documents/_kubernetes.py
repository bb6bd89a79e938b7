"""What Kubernetes operators' manifests share: multi-document YAML, resource quantities, a container's resources as
host keys, Helm templates' ``{{ … }}`` in values and how they print a value. A private module (its name starts
with ``_``): no document kind of its own."""

from __future__ import annotations

import math
import re
from decimal import Decimal
from fractions import Fraction
from typing import Any

from pgvet.errors import ParseError
from pgvet.inputs.delimited import replaced
from pgvet.inputs.documents import DeclaredHost, get, load_document, yaml_line
from pgvet.provenance import Located, Source

# The problem kind of what the API server or the operator refuses (fatal: the manifest is not applied, PGV407);
# its target is the parameter's name.
REFUSED = "operator-refused"
# The problem kind of a parameter the operator sets itself whatever the manifest says (PGV435); its target is the
# parameter's name. What Patroni does with its dynamic configuration is patroni.dcs_parameter's.
OVERRIDES = "operator-overrides"

# Kubernetes' quantities (apimachinery resource.ParseQuantity): <sign><digits>[.<digits>] and a binary (Ki…Ei),
# decimal (n u m k M G T P E) or exponent (e3, E-2) suffix.
_QUANTITY = re.compile(r"([+-]?)(\d+(?:\.\d*)?|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?")
_FACTORS = {
    "": Fraction(1), "n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000),
    "k": Fraction(10**3), "M": Fraction(10**6), "G": Fraction(10**9), "T": Fraction(10**12),
    "P": Fraction(10**15), "E": Fraction(10**18),
    "Ki": Fraction(2**10), "Mi": Fraction(2**20), "Gi": Fraction(2**30), "Ti": Fraction(2**40),
    "Pi": Fraction(2**50), "Ei": Fraction(2**60),
}
_MAX_EXPONENT = 30  # beyond any resource; it also keeps a written exponent from building an enormous number
# A Helm (Go template) expression: in a value it becomes UNRENDERED (a value pgvet cannot know).
_TEMPLATES = (("{{", "}}"),)
UNRENDERED = "PGVET-UNRENDERED-TEMPLATE"
RUNTIME_SHM_SIZE = 64 * 1024**2  # /dev/shm of a container without a memory-backed volume (Docker, containerd)
HUGEPAGE_SIZES = {"hugepages-2Mi": 2 * 1024**2, "hugepages-1Gi": 1024**3}


def exact_quantity(value: object) -> Fraction | None:
    """A Kubernetes quantity (``500Mi``, ``0.5Gi``, ``1G``, ``250m``, ``2``, ``1e3``, a YAML number) exactly, as the
    API server reads it; None when it is none or negative (``4GB``, ``-1Gi``, ``lots``)."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return None
    match = _QUANTITY.fullmatch(str(value).strip())
    if match is None:
        return None
    sign, number, suffix = match.group(1), match.group(2), match.group(3) or ""
    if suffix in _FACTORS:
        factor = _FACTORS[suffix]
    elif abs(int(suffix[1:])) <= _MAX_EXPONENT:
        factor = Fraction(10) ** int(suffix[1:])
    else:
        return None
    size = Fraction(number) * factor
    return None if sign == "-" and size else size


def quantity(value: object) -> float | None:
    """A Kubernetes quantity as a number; None when it is none."""
    exact = exact_quantity(value)
    return None if exact is None else float(exact)


# YAML 1.1's booleans that YAML 1.2, which pgvet reads, leaves as texts: sigs.k8s.io/yaml, with which kubectl, Helm,
# Argo CD and Flux read manifests, reads them as booleans (go-yaml v2's resolve table), quoted they stay texts.
_YAML_1_1_BOOLEANS = {**dict.fromkeys(("y", "Y", "yes", "Yes", "YES", "on", "On", "ON"), True),
                      **dict.fromkeys(("n", "N", "no", "No", "NO", "off", "Off", "OFF"), False)}


# A List (apiVersion v1, kind List): how kubectl get -o yaml writes several objects, which kubectl apply takes as
# its items, each an object of its own.
_LIST_LINE = re.compile(r"^kind:[ \t]*[\"']?List[\"']?[ \t]*(#.*)?$", re.MULTILINE)


def listed(text: str, kind: str) -> bool:
    """Whether a manifest file is a List with an item of that kind (``kind: Cluster`` indented, as an item of
    ``items:`` writes it)."""
    return _LIST_LINE.search(text) is not None and re.search(
        rf"^[ \t]*(?:-[ \t]+)?kind:[ \t]*[\"']?{kind}[\"']?[ \t]*(#.*)?$", text, re.MULTILINE) is not None


def load_manifests(text: str, path: str) -> list[Any]:
    """Every object of a manifest file, as Kubernetes reads it (an unquoted ``on`` is a boolean: a parameter's
    ``jit: off`` is no string to a CRD that takes strings), a List's items each one; ParseError at the line of invalid
    YAML."""
    documents: list[Any] = [item for document in load_document(text, path, every=True) for item in _objects(document)]
    lines = text.split("\n")
    pending = list(documents)
    while pending:  # a walk without recursion: a document may nest deeper than Python's stack
        node = pending.pop()
        position = getattr(node, "lc", None)
        if isinstance(node, dict):
            keys: list[Any] = list(node)
            locate = position.value if position is not None else None
        elif isinstance(node, list):
            keys, locate = list(range(len(node))), position.item if position is not None else None
        else:
            continue
        for key in keys:
            value = node[key]
            if isinstance(value, (dict, list)):
                pending.append(value)
            elif isinstance(value, str) and value in _YAML_1_1_BOOLEANS and _unquoted(locate, key, value, lines):
                node[key] = _YAML_1_1_BOOLEANS[value]
    return documents


def _objects(document: Any) -> list[Any]:
    """The objects of a document: a List's items, else the document itself."""
    items = document.get("items") if isinstance(document, dict) and document.get("kind") == "List" else None
    return items if isinstance(items, list) else [document]


def _unquoted(locate: Any, key: Any, value: str, lines: list[str]) -> bool:
    """Whether a value of a ruamel mapping or list is written plain (no quotes, no tag) where it starts; False for a
    value a merge key or an alias brought, written elsewhere."""
    try:
        line, column = locate(key)
    except (KeyError, IndexError, TypeError):
        return False
    return bool(lines[line][column:column + len(value)] == value)


def file_stem(path: str) -> str:
    """A file's name without its directory and suffix: the name of a host whose file does not name it (a Helm
    values file: the release's name is given on helm's command line)."""
    return path.replace("\\", "/").rsplit("/", 1)[-1].rsplit(".", 1)[0]


def namespace(document: Any) -> str | None:
    """A manifest's metadata.namespace; None where it leaves it to where it is applied (or to a template)."""
    value = get(document, "metadata", "namespace")
    return value if isinstance(value, str) and value and not unrendered(value) else None


def at(node: Any, key: str, path: str) -> Source:
    """The place of a key of a mapping."""
    return Source(path, yaml_line(node, key) or yaml_line(node))


def apply_resources(declared: DeclaredHost, resources: Any, path: str, what: str, placed: Source | None = None) -> None:
    """A container's ``resources`` (limits, requests) as host keys: the memory limit is the RAM of every memory
    formula (``ram`` and ``memory_limit``), the CPU limit the CPUs (rounded up: 500m is part of one CPU),
    ``hugepages-2Mi``/``hugepages-1Gi`` the huge page pool. ``what`` names the object in messages; ``placed``, when
    given, is the place of every value (resources a preset stands for)."""
    if not isinstance(resources, dict):
        return

    def where(node: Any, key: str) -> Source:
        return placed or at(node, key, path)

    limits, requests = resources.get("limits"), resources.get("requests")
    for node, targets in ((limits, ("ram", "memory_limit")), (requests, ("memory_request",))):
        if isinstance(node, dict) and "memory" in node:
            size = _bytes(node, "memory", where(node, "memory"), what)
            for target in targets:
                declared.host[target] = Located(size, where(node, "memory"))
    if isinstance(limits, dict) and "cpu" in limits:
        cores = quantity(limits["cpu"])
        if cores is None or cores <= 0:
            raise ParseError(f"{what}: resources.limits.cpu {limits['cpu']!r} is no CPU quantity Kubernetes accepts "
                             "(2, 1.5, 500m)", where(limits, "cpu"))
        declared.host["cpus"] = Located(max(1, math.ceil(cores - 1e-9)), where(limits, "cpu"))
        declared.host["cpu_limit"] = Located(cores, where(limits, "cpu"))
    for node in (limits, requests):  # Kubernetes requires huge pages in limits; requests must equal them
        if not isinstance(node, dict):
            continue
        for key, page in HUGEPAGE_SIZES.items():
            if key in node and "hugepages" not in declared.host:
                declared.host["hugepages"] = Located(_bytes(node, key, where(node, key), what), where(node, key))
                declared.host["hugepage_size"] = Located(page, where(node, key))


def memory_size(node: dict[str, Any], key: str, path: str, what: str) -> int:
    """A memory quantity of a mapping, in bytes (ParseError at its line when Kubernetes would refuse it)."""
    return _bytes(node, key, at(node, key, path), what)


def _bytes(node: dict[str, Any], key: str, source: Source, what: str) -> int:
    size = quantity(node[key])
    if size is None:
        raise ParseError(f"{what}: {key} {node[key]!r} is no memory quantity Kubernetes accepts (512Mi, 4Gi, 1G)",
                         source)
    return round(size)


def template_lines(text: str) -> tuple[list[int], list[int]]:
    """The lines holding Helm's ``{{ … }}``: those where it is in a value (``memory: {{ .Values.memory }}``), and
    those made only of template actions (``{{- with … }}``, ``{{ toYaml . | nindent 4 }}``), which change the
    document's structure: such a template is no manifest until rendered."""
    in_values: list[int] = []
    structural: list[int] = []
    for number, line in enumerate(text.split("\n"), 1):
        if "{{" in line:
            rest = replaced(line, _TEMPLATES, "").strip()
            (structural if not rest or rest.startswith("#") else in_values).append(number)
    return in_values, structural


def without_templates(text: str) -> str:
    """The text with each ``{{ … }}`` replaced by UNRENDERED (lines and columns stay where they are)."""
    return replaced(text, _TEMPLATES, UNRENDERED) if "{{" in text else text


# Flux's post-build substitution (envsubst): ${VAR}, ${VAR:=default}, filled in before the API server sees the
# manifest: a value pgvet cannot know, as a template's.
_VARIABLES = (("${", "}"),)


def without_variables(text: str) -> str:
    """The text with each ``${…}`` replaced by UNRENDERED (lines stay where they are)."""
    return replaced(text, _VARIABLES, UNRENDERED) if "${" in text else text


def unrendered(value: object) -> bool:
    """A value (or a key) a template fills in: pgvet cannot know it."""
    return isinstance(value, str) and UNRENDERED in value


def helm_text(value: object) -> str | None:
    """A scalar of the values as a template prints it (Helm's ``quote`` and ``{{ $value }}`` alike); None for a
    list, a mapping or null."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return go_number(value)
    return value if isinstance(value, str) else None


def go_number(value: int | float) -> str:
    """A number of the values as Helm's templates print it: Helm reads values through JSON (sigs.k8s.io/yaml), so
    every number is a float64, which Go prints as strconv's shortest 'g' — in exponent form from 1e+06 on and below
    1e-04 (1000000 is 1e+06, which postgresql.conf cannot read unquoted)."""
    number = float(value)
    if not math.isfinite(number):
        return {"inf": "+Inf", "-inf": "-Inf"}.get(repr(number), "NaN")
    if number == 0:
        return "0"
    shortest = Decimal(repr(abs(number))).normalize()  # Python's repr: the shortest digits, as Go's
    digits = shortest.as_tuple().digits
    position = len(digits) - 1 + int(shortest.as_tuple().exponent)  # the power of ten of the first digit
    sign = "-" if number < 0 else ""
    if -4 <= position < 6:
        return sign + format(shortest, "f")
    mantissa = str(digits[0]) + ("." + "".join(map(str, digits[1:])) if len(digits) > 1 else "")
    return f"{sign}{mantissa}e{'-' if position < 0 else '+'}{abs(position):02d}"
