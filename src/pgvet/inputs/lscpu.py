"""``lscpu`` output: plain text in the C or French locale, or ``lscpu -J`` JSON (detected).

Newer util-linux nests fields under each "Model name" (heterogeneous ARM systems list several);
the first value of a field wins. On s390 the sockets are spread over books and drawers: the count is
their product. Other localisations are refused rather than guessed: use ``LC_ALL=C lscpu``.
"""

from __future__ import annotations

import json
import unicodedata
from functools import lru_cache
from typing import Any

from pgvet.errors import ParseError
from pgvet.provenance import Located, Source

CpuValue = int | str

# label (normalised: NFC, lower case, no trailing colon) → (fact suffix, is an integer)
_LABELS: dict[str, tuple[str, bool]] = {
    # C locale
    "cpu(s)": ("count", True),
    "on-line cpu(s) list": ("online", False),
    "socket(s)": ("sockets", True),
    "core(s) per socket": ("cores_per_socket", True),
    "core(s) per cluster": ("cores_per_socket", True),
    "thread(s) per core": ("threads_per_core", True),
    "numa node(s)": ("numa_nodes", True),
    "architecture": ("architecture", False),
    "model name": ("model_name", False),
    "hypervisor vendor": ("hypervisor", False),
    "virtualization type": ("virtualization_type", False),
    "vendor id": ("vendor", False),
    "socket(s) per book": ("_sockets_per_book", True),
    "book(s) per drawer": ("_books_per_drawer", True),
    "book(s)": ("_books", True),
    "drawer(s)": ("_drawers", True),
    # French (util-linux fr.po, as in the Dalibo training module)
    "processeur(s)": ("count", True),
    "liste de processeur(s) en ligne": ("online", False),
    "cœur(s) par socket": ("cores_per_socket", True),
    "cœur(s) par grappe": ("cores_per_socket", True),
    "thread(s) par cœur": ("threads_per_core", True),
    "nœud(s) numa": ("numa_nodes", True),
    "nom de modèle": ("model_name", False),
    "constructeur d'hyperviseur": ("hypervisor", False),
    "type de virtualisation": ("virtualization_type", False),
    "identifiant constructeur": ("vendor", False),
    "socket(s) par livre": ("_sockets_per_book", True),
    "livre(s) par tiroir": ("_books_per_drawer", True),
    "tiroir(s)": ("_drawers", True),
}


def _normalise(label: str) -> str:
    label = unicodedata.normalize("NFC", label).strip().rstrip(":").strip().lower()
    return label.replace("’", "'")


@lru_cache(maxsize=1024)  # the same few dozen labels on every host, most of them not read
def _known_label(label: str) -> tuple[str, bool] | None:
    """The fact suffix and kind of a label as written, or None when pgvet does not read it."""
    return _LABELS.get(_normalise(label))


def _record(values: dict[str, Located[CpuValue]], known: tuple[str, bool], data: str, source: Source) -> None:
    suffix, integer = known
    if suffix in values or not data or data == "-":
        return
    if integer:
        if not data.isdigit() or len(data) > 18:
            return  # "Socket(s): -" on ARM, or a range where a count was expected
        values[suffix] = Located(int(data), source)
    else:
        values[suffix] = Located(data, source)


def _finish(values: dict[str, Located[CpuValue]], path: str, unread_labels: int) -> dict[str, Located[CpuValue]]:
    """``unread_labels``: how many fields had a label pgvet does not read."""
    if "count" not in values:
        raise ParseError(
            "no CPU count found: pgvet reads lscpu in the C and French locales; "
            "run `LC_ALL=C lscpu` or `lscpu -J`",
            Source(path, 1),
        )
    if unread_labels and "architecture" not in values and "online" not in values:
        # Every lscpu prints these two; "CPU(s):" is spelt alike in many languages (German, Spanish…), so a
        # count alone, among labels pgvet cannot read, is another locale: its sockets and NUMA nodes would be lost
        raise ParseError(
            "lscpu in a language pgvet does not read (only the CPU count was recognised): "
            "run `LC_ALL=C lscpu` or `lscpu -J`",
            Source(path, 1),
        )
    if "sockets" not in values and "_sockets_per_book" in values:
        books = values.get("_books_per_drawer") or values.get("_books")
        drawers = values.get("_drawers")
        product = int(values["_sockets_per_book"].value)
        product *= int(books.value) if books else 1
        product *= int(drawers.value) if drawers and "_books_per_drawer" in values else 1
        values["sockets"] = Located(product, values["_sockets_per_book"].source)
    return {key: located for key, located in values.items() if not key.startswith("_")}


def _walk_json(entries: Any, values: dict[str, Located[CpuValue]], path: str) -> int:
    """Record the fields pgvet reads; how many others there were."""
    if not isinstance(entries, list):
        raise ParseError("lscpu -J: expected a list under \"lscpu\"", Source(path, 1))
    unread = 0
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        field, data = entry.get("field"), entry.get("data")
        known = _known_label(field) if isinstance(field, str) else None
        if known is not None and isinstance(data, str | int | None):
            _record(values, known, "" if data is None else str(data).strip(), Source(path))
        elif known is None:
            unread += 1
        if "children" in entry:
            unread += _walk_json(entry["children"], values, path)
    return unread


def parse_lscpu(text: str, path: str) -> dict[str, Located[CpuValue]]:
    values: dict[str, Located[CpuValue]] = {}
    if text.lstrip().startswith("{"):
        try:
            document = json.loads(text)
        except json.JSONDecodeError as error:
            raise ParseError(f"invalid lscpu -J JSON: {error.msg}", Source(path, error.lineno)) from None
        except RecursionError:
            raise ParseError("invalid lscpu -J JSON: nested too deep", Source(path, 1)) from None
        if not isinstance(document, dict) or "lscpu" not in document:
            raise ParseError("expected the output of `lscpu -J` (an object with \"lscpu\")", Source(path, 1))
        return _finish(values, path, _walk_json(document["lscpu"], values, path))
    unread = 0
    for number, line in enumerate(text.split("\n"), 1):
        # "Label:   value"; split at the first colon (a regular expression here went quadratic on long lines).
        label, colon, data = line.partition(":")
        known = _known_label(label) if colon and label else None
        if known is not None:  # most lines are not read: no Source for them
            _record(values, known, data.strip(), Source(path, number))
        elif colon and label.strip():
            unread += 1
    return _finish(values, path, unread)
