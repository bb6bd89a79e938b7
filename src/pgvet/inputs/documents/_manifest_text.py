"""What the manifests of every Kubernetes operator share (a module starting with ``_`` is no kind): resource
quantities (``512Mi``, ``1.5Gi``, ``500m``, ``2``, ``1e3``) as the API server reads them
(k8s.io/apimachinery resource.ParseQuantity): exact, as fractions, so that ``0.5Gi`` is 536870912 bytes and
``500m`` half a CPU; and Helm templates' unrendered ``{{ … }}``, which are never guessed.
"""

from __future__ import annotations

import re
from fractions import Fraction

from pgvet.errors import ParseError
from pgvet.provenance import Source

# <sign><digits>[.<digits>]<suffix>: a binary (Ki…Ei), decimal (n u m k M G T P E) or exponent (e3, E-2) suffix.
_QUANTITY = re.compile(r"([+-]?)(\d+(?:\.\d*)?|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?")
_SUFFIX = {
    "": Fraction(1), "n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000),
    "k": Fraction(10**3), "M": Fraction(10**6), "G": Fraction(10**9), "T": Fraction(10**12),
    "P": Fraction(10**15), "E": Fraction(10**18),
    "Ki": Fraction(2**10), "Mi": Fraction(2**20), "Gi": Fraction(2**30), "Ti": Fraction(2**40),
    "Pi": Fraction(2**50), "Ei": Fraction(2**60),
}
# A Helm (Go template) expression; in a value it becomes UNRENDERED, a line that is nothing else is blanked.
_TEMPLATE = re.compile(r"\{\{.*?\}\}")
UNRENDERED = "PGVET-UNRENDERED-TEMPLATE"
# Beyond what any resource holds; it also keeps a written exponent from building an enormous number.
_MAX_EXPONENT = 30


def parse_quantity(value: object, what: str, source: Source) -> Fraction:
    """A non-negative quantity; ParseError at its line for what the API server refuses (``4GB``, ``-1Gi``, ``lots``).
    YAML numbers (``cpu: 2``, ``cpu: 0.5``) are quantities too, as Kubernetes reads them."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ParseError(f"{what}: {value!r} is no Kubernetes quantity (such as 512Mi, 2Gi, 500m, 2)", source)
    text = str(value).strip()
    match = _QUANTITY.fullmatch(text)
    if match is None:
        hint = " (Kubernetes writes Gi or G, never GB)" if text.endswith("B") else ""
        raise ParseError(f"{what}: {text!r} is no Kubernetes quantity (such as 512Mi, 2Gi, 500m, 2){hint}", source)
    sign, number, suffix = match.group(1), match.group(2), match.group(3) or ""
    if suffix not in _SUFFIX:  # an exponent
        exponent = int(suffix[1:])
        if abs(exponent) > _MAX_EXPONENT:
            raise ParseError(f"{what}: {text!r} is out of range for a resource quantity", source)
        scale = Fraction(10) ** exponent
    else:
        scale = _SUFFIX[suffix]
    quantity = Fraction(number) * scale
    if sign == "-" and quantity:
        raise ParseError(f"{what}: {text!r} is negative; a resource quantity is at least 0", source)
    return quantity


def without_templates(text: str) -> tuple[str, list[int]]:
    """The text with each ``{{ … }}`` of a Helm template replaced by UNRENDERED, and the lines made only of
    template actions (``{{- if … }}``, ``{{ toYaml … }}``) blanked, so that line numbers stay; and those lines'
    numbers. A value holding UNRENDERED is unknown: its reader skips it with a note."""
    if "{{" not in text:
        return text, []
    lines = text.split("\n")
    touched = []
    for index, line in enumerate(lines):
        if "{{" in line:
            touched.append(index + 1)
            rest = _TEMPLATE.sub("", line).strip()
            lines[index] = "" if not rest or rest.startswith("#") else _TEMPLATE.sub(UNRENDERED, line)
    return "\n".join(lines), touched


def unrendered(value: object) -> bool:
    return isinstance(value, str) and UNRENDERED in value
