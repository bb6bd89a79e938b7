"""Every file of the configuration documents' corpus (tests/data/documents/<kind>/, each folder's SOURCES.md says
where its files come from) is claimed by its kind and no other, and read without a problem; the files kept there
because they must not be claimed are claimed by no kind. What each kind reads from its files is tested in its own
module (test_documents_<kind>.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from documents_support import DOCUMENTS, kinds_recognising
from pgvet.inputs.documents import document_kinds, recognise

# The corpus files no kind may claim, by their path under tests/data/documents/, and why.
NOT_CLAIMED = {
    "bitnami/ci-replication.yaml": "a values file without the chart's own keys",
    "bitnami/helmrelease/lthms-ext-postgres-operator.yaml": "a HelmRelease of another chart",
    "bitnami/helmrelease/keswick-postgresql-values-from.yaml": "a HelmRelease whose values come from a ConfigMap",
    "bitnami/postgresql-ha/values.yaml": "the values of Bitnami's postgresql-ha chart, which pgvet does not read",
    "cnpg/helm-chart-cluster-template.yaml": "a Helm template: no manifest until it is rendered",
    "systemd/debian/postgresql@.service": "a packaged unit: it sets no limit pgvet judges",
    "systemd/pgdg/postgresql-12.service": "a packaged unit: it sets no limit pgvet judges",
    "systemd/exporter/postgres_exporter.service": "it runs no PostgreSQL server",
    "systemd/patroni/patroni.service": "Patroni's unit, with no limit",
}
# The problems a corpus file is read with on purpose, by its path (its kind's module says why).
EXPECTED_PROBLEMS = {"zalando/complete-postgres-manifest.yaml": {"patroni-replaced"}}


def _key(path: Path) -> str:
    return path.relative_to(DOCUMENTS).as_posix()


CORPUS = sorted((path for path in DOCUMENTS.rglob("*") if path.is_file() and path.name != "SOURCES.md"), key=_key)
CLAIMED = [path for path in CORPUS if _key(path) not in NOT_CLAIMED]
UNCLAIMED = [path for path in CORPUS if _key(path) in NOT_CLAIMED]


def test_the_corpus_holds_a_folder_per_kind_and_the_files_listed_here() -> None:
    assert {path.relative_to(DOCUMENTS).parts[0] for path in CORPUS} == {kind.name for kind in document_kinds()}
    assert set(NOT_CLAIMED) | set(EXPECTED_PROBLEMS) <= {_key(path) for path in CORPUS}
    assert len(CLAIMED) >= 47


@pytest.mark.parametrize("path", CLAIMED, ids=_key)
def test_a_corpus_file_is_its_kind_alone_and_read_without_a_problem(path: Path) -> None:
    kind = _key(path).split("/")[0]
    text = path.read_text(encoding="utf-8")
    for shown in (path.name, str(path)):  # as a host directory shows it, and with its folders
        assert kinds_recognising(Path(shown), text) == [kind], shown
        found = recognise(shown, text)
        assert found is not None and found.name == kind, shown
    hosts = found.parse(text, path.name)
    assert hosts and all(host.kind == kind for host in hosts)
    assert {problem.kind for host in hosts for problem in host.problems} == EXPECTED_PROBLEMS.get(_key(path), set())


@pytest.mark.parametrize("path", CLAIMED, ids=_key)
def test_a_byte_order_mark_hides_no_document(path: Path) -> None:
    """A file an editor saved with a byte order mark (Notepad's UTF-8) is the same document to PyYAML, Compose and
    systemd: a compose file that began with one was passed over without a word, its settings never judged."""
    text = path.read_text(encoding="utf-8")
    found = recognise(path.name, "\ufeff" + text)
    assert found is not None and found.name == _key(path).split("/")[0]


@pytest.mark.parametrize("path", UNCLAIMED, ids=_key)
def test_a_corpus_file_kept_as_a_counterexample_is_claimed_by_no_kind(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    for shown in (path.name, str(path)):
        assert kinds_recognising(Path(shown), text) == [], (shown, NOT_CLAIMED[_key(path)])
        assert recognise(shown, text) is None, shown
