"""What the configuration documents of a host directory declare (Patroni, Kubernetes manifests, compose files…),
read once for all the hosts they declare, and the names those hosts get (snapshot/load.py builds each)."""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pgvet.errors import InputError
from pgvet.inputs.documents import MAX_DOCUMENT_BYTES, DeclaredHost, recognise, unread_operator
from pgvet.inputs.documents._kustomize import KUSTOMIZATION_NAMES, Listed, overlay_path, read_listed
from pgvet.inputs.documents.cnpg import chart_override
from pgvet.inputs.reading import read_text
from pgvet.paths import repository_of
from pgvet.provenance import Located, Source
from pgvet.snapshot.builder import MAX_HOST_BYTES, HostBuilder
from pgvet.snapshot.discovery import SnapshotInputs

# File names a tool gives whatever the file holds: a host named after one is named after nothing of its own.
_CONVENTIONAL_STEMS = frozenset({"values", "main", "compose", "docker-compose"})
# A Helm chart's values file by its name (values.yaml, values-production.yaml, values.prod.yml…).
HELM_VALUES_NAME = re.compile(r"values([-._][^/]*)?\.ya?ml")
# The values of Bitnami's postgresql-ha chart (its postgresql: and pgpool: sections, the repmgr image), an umbrella
# chart's postgresql-ha: section, a Flux HelmRelease of the chart: a PostgreSQL chart whose values pgvet does not read.
# Each pattern matches within a line (a repository's file of many `postgresql:` lines stays linear to search).
_HA_TOP_KEY = re.compile(r"^(?:(postgresql-ha):|(pgpool|postgresql):[ \t]*(?:#.*)?$)", re.MULTILINE)
_HA_CHART = re.compile(r"^[ \t]+chart:[ \t]*['\"]?(?:[\w./:-]*/)?postgresql-ha['\"]?[ \t]*(?:#.*)?$", re.MULTILINE)


def _postgresql_ha(text: str) -> bool:
    keys = {"".join(match) for match in _HA_TOP_KEY.findall(text)}
    return ("postgresql-ha" in keys or {"pgpool", "postgresql"} <= keys or "bitnami/postgresql-repmgr" in text
            or _HA_CHART.search(text) is not None)


def host_names(hosting: Sequence[DeclaredHost], directory: str, overlay: str | None,
                named: Located[object] | None) -> list[Located[object]]:
    """The names of the hosts the directory's documents declare: host.yaml's ``name`` when there is only one; else
    each its object's, told apart from the objects of that name elsewhere by what comes after it in parentheses —
    host.yaml's ``name``, else the kustomize overlay that declares it (``orders (overlays/staging)``: every overlay
    of a base declares the base's objects), and its file when the directory declares another of its name
    (``pg (a.yaml)``); objects of one name in one file (a manifest of each environment's Cluster) by their
    namespace (``orders (all.yaml, namespace prod)``), else by their order among those it does not tell apart
    (``orders (all.yaml, #2)``). One named after a file whose name the tool fixes (a Helm chart's values.yaml, an
    Ansible role's defaults/main.yml) has the directory's name before it instead (host.yaml's name when it has
    one), so that the charts of a repository are not all one host called "values"."""
    if named is not None and len(hosting) == 1:
        return [named]
    counts = Counter(document.name for document in hosting)
    names = []
    for document in hosting:
        qualifier = str(named.value) if named is not None else overlay
        name = document.name
        stem = os.path.basename(document.source.path).split(".", 1)[0]
        if stem in _CONVENTIONAL_STEMS and (name == stem or name.startswith(f"{stem}-")):  # values, values-read
            name, qualifier = f"{named.value if named is not None else directory}/{name}", None
        said = [part for part in (qualifier, document.source.path if counts[document.name] > 1 else None) if part]
        names.append((name, said))
    shown = [f"{name} ({', '.join(said)})" if said else name for name, said in names]
    clashes: dict[str, list[int]] = {}
    for index, text in enumerate(shown):
        clashes.setdefault(text, []).append(index)
    for indexes in clashes.values():
        if len(indexes) == 1:
            continue
        spaces = Counter(hosting[index].namespace for index in indexes)
        seen: Counter[str | None] = Counter()
        for index in indexes:
            space = hosting[index].namespace
            said = names[index][1]
            if space is not None and len(spaces) > 1:
                said.append(f"namespace {space}")
            if spaces[space] > 1:
                seen[space] += 1
                said.append(f"#{seen[space]}")
            shown[index] = f"{names[index][0]} ({', '.join(said)})"
    return [Located(text, document.source) for text, document in zip(shown, hosting, strict=True)]


# Hosts the documents of one directory may declare: a repository's directory holds a cluster's members, a
# manifest a few clusters; many more are a mistake or a hostile file (each host is read with the directory).
MAX_DECLARED_HOSTS = 200


@dataclass(slots=True, eq=False, repr=False)
class DirectoryDocuments:
    """What a directory's configuration documents declare, read once for all its hosts: the texts read (counted
    against each host's bounds), the declared hosts and machine settings, what could not be read."""

    texts: list[tuple[str, str]] = field(default_factory=list)  # (the file as shown, its text)
    declared: list[DeclaredHost] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    overlay: str | None = None  # the directory as its hosts' names say it, when it is a kustomize overlay

    def accounted(self, builder: HostBuilder) -> None:
        """The documents counted as inputs of the host being built, and what was said of them."""
        for display, text in self.texts:
            builder.account(text, display)
        builder.host.warnings.extend(self.warnings)
        builder.host.notes.extend(self.notes)


_KUSTOMIZATION_NAMES = frozenset(name.lower() for name in KUSTOMIZATION_NAMES)


def read_documents(builder: HostBuilder, inputs: SnapshotInputs) -> DirectoryDocuments:
    """The hosts and machine settings the directory's configuration documents declare, in the order of their
    files, then those its kustomization lists in its subdirectories and its components (_kustomize.read_listed); a
    file that is no document pgvet reads is no input (their hosts' names: host_names). InputError for a kustomize
    Component: its documents are read with the kustomizations that list it, never a host of their own."""
    documents = DirectoryDocuments()
    declared = documents.declared
    listing = builder.host.listing  # lower-cased: kustomize's Kustomization is no name a document has
    listed = read_listed(builder.root) if listing and not listing.isdisjoint(_KUSTOMIZATION_NAMES) else None
    if listed is not None and listed.component:
        raise InputError("a kustomize Component (kind: Component): its documents change the resources of the "
                         "kustomizations that list it under components:, and are read with them, not as hosts of "
                         "their own: lint those", Source(listed.shown))
    candidates = [(path, builder.root) for path in inputs.documents]
    if listed is not None:
        documents.warnings.extend(listed.warnings)
        candidates += [(Path(path), Path(beneath)) for path, beneath in listed.files]
    read = 0
    seen: set[str] = set()
    for path, beneath in candidates:
        display = builder.display(path)
        if display in seen:  # listed twice (a resource patched by itself, two components' one file)
            continue
        seen.add(display)
        try:
            size = os.stat(path).st_size
            text = read_text(path, display, beneath) if size <= MAX_DOCUMENT_BYTES else ""
        except (OSError, InputError) as error:  # perhaps no document at all: the host is read without it
            reason = error.message if isinstance(error, InputError) else error.strerror or str(error)
            documents.warnings.append(f"{display}: not read as a configuration document: {reason}")
            continue
        if size > MAX_DOCUMENT_BYTES:
            documents.notes.append(f"{display}: not read as a configuration document: {size} bytes, more than "
                                   f"one holds ({MAX_DOCUMENT_BYTES})")
            continue
        kind = recognise(display, text)
        if kind is None:
            if _postgresql_ha(text) and path.suffix.lower() in (".yaml", ".yml"):
                # a warning, not a note: a PostgreSQL chart's, which a reader of Bitnami's postgresql may seem to read
                documents.warnings.append(f"{display}: not read: the values of Bitnami's postgresql-ha chart (repmgr, "
                                          "Pgpool-II), which pgvet does not read (it reads Bitnami's postgresql "
                                          "chart's): its PostgreSQL hosts are not judged; lint what the chart renders "
                                          "(`helm template`'s output) and the postgresql.conf its pods write")
            elif (operator := unread_operator(text)) is not None:
                documents.warnings.append(f"{display}: not read: {operator}, whose manifests pgvet does not read: "
                                          "its PostgreSQL hosts are not judged (`pgvet check` judges a running "
                                          "server)")
            elif (overridden := chart_override(text, display)) is not None:
                keys = overridden[0] if len(overridden) == 1 else f"{', '.join(overridden[:-1])} and {overridden[-1]}"
                documents.warnings.append(f"{display}: not read: values given over CloudNativePG's cluster chart's "
                                          "values (Helm merges them over the chart's values file; pgvet does not "
                                          f"merge values files): its {keys} are not judged; lint what the chart "
                                          f"renders (`helm template … -f values.yaml -f {path.name}`)")
            elif HELM_VALUES_NAME.fullmatch(path.name):  # data, not a template, whatever {{ }} its strings hold
                documents.notes.append(f"{display}: not read: the values of a Helm chart pgvet does not read (it reads "
                                       "the Bitnami PostgreSQL charts', CloudNativePG's cluster chart's and "
                                       "timescaledb-single's own): lint what the chart renders (`helm template`'s "
                                       "output)")
            elif "{{" in text:  # a template (a Helm chart's, Ansible's Jinja): its values only exist once rendered
                documents.notes.append(f"{display}: not read: a template ({{{{ … }}}}: Helm, Jinja), whose values are "
                                       "known only once rendered: lint what it renders (`helm template`'s output, "
                                       "the chart's values file)")
            continue
        documents.texts.append((display, text))
        # the host's bound on what it reads, before parsing: a directory of many documents is refused at the one
        # that crosses it, not after parsing them all (YAML is slow to parse)
        read += len(text)
        if read > MAX_HOST_BYTES:
            raise InputError(f"with this file, the directory's documents hold more than {MAX_HOST_BYTES} bytes, more "
                             "than pgvet reads in one host: it does not judge them", Source(display))
        declared.extend(kind.parse(text, display))
        if sum(document.hosting for document in declared) > MAX_DECLARED_HOSTS:
            raise InputError(f"with this file, the directory's documents declare more than {MAX_DECLARED_HOSTS} "
                             "hosts, more than pgvet reads in one directory: give each cluster a directory of its "
                             "own", Source(display))
    _without_their_host(documents)
    if declared and listed is not None:
        _kustomize_overlay(builder, listed, documents)
    return documents


def _without_their_host(documents: DirectoryDocuments) -> None:
    """Overrides (``laid_over``) of a kind no document of the directory declares a host of are no input, with a
    warning: alone, they would be judged on the defaults their reader fills in for what the chart's values say."""
    kinds = {document.kind for document in documents.declared if document.hosting}
    for document in [document for document in documents.declared if document.laid_over not in (None, *kinds)]:
        documents.declared.remove(document)
        documents.warnings.append(
            f"{document.source.path}: not read: {document.laid_over} values without its chart's values (an override "
            "Helm merges over them), and no such values beside it: lint it beside them, or what the chart renders "
            "(`helm template`'s output)")


def _kustomize_overlay(builder: HostBuilder, listed: Listed, documents: DirectoryDocuments) -> None:
    """A warning for a directory that is a kustomize overlay: its documents are judged as written, without the
    bases and patches ``kustomize build`` would merge (pgvet does not build overlays); and, when it takes bases
    or components from elsewhere, how its hosts' names say it (``documents.overlay``)."""
    _objects_of_the_kustomization(builder, listed, documents)
    what = listed.overlay
    if what is None:
        return
    documents.warnings.append(
        f"{listed.shown}: a kustomize overlay ({what.said()}): pgvet judges the directory's documents as written, "
        "not what `kustomize build` renders (bases not merged, patches not applied); lint the rendered manifests")
    if what.bases or what.components:
        real = os.fspath(builder.real_root)
        documents.overlay = overlay_path(real, what.bases + what.components, repository_of(real))


def _objects_of_the_kustomization(builder: HostBuilder, listed: Listed, documents: DirectoryDocuments) -> None:
    """One host for each object of a kustomization, as kustomize applies its patches and its components' to its
    resources. A patch of an object a resource declares (the directory's, a component's) is no host of its own:
    read whole, a partial manifest would be judged on the defaults its reader fills in (one instance, no memory
    limit), and laid over the object those defaults would replace its values. Nor is a component's document of an
    object the kustomization declares itself, or an earlier component. They are left out, with a note (the
    overlay's warning says its patches are not applied). A patch of an object from a base elsewhere stays a host,
    judged as written: the directory's own, else the first component's."""
    real_root = os.fspath(builder.real_root)
    hosting = [(document, os.path.realpath(os.path.join(real_root, document.source.path)))
               for document in documents.declared if document.hosting]
    resources: dict[tuple[str, str], str] = {}
    for document, path in hosting:
        if path in listed.resources:
            resources.setdefault((document.kind, document.name), document.source.path)
    kept: dict[tuple[str, str], str] = {}
    for document, path in hosting:
        key = (document.kind, document.name)
        if path in listed.patches and path not in listed.resources and key in resources:  # not one patching itself
            documents.declared.remove(document)
            documents.notes.append(f"{document.source.path}: a kustomize patch of {document.name}, which "
                                   f"{resources[key]} declares: not a host of its own, and not applied")
        elif path not in listed.components:
            kept.setdefault(key, document.source.path)
    for document, path in hosting:
        key = (document.kind, document.name)
        if path not in listed.components or document not in documents.declared:
            continue
        if key in kept:
            documents.declared.remove(document)
            documents.notes.append(f"{document.source.path}: {document.name} of the kustomize component "
                                   f"{listed.components[path]}, which {kept[key]} declares too: not a host of its "
                                   "own, and not applied")
        else:
            kept[key] = document.source.path
