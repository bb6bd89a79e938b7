"""Kubernetes workloads running the postgres image (pgvet.inputs.documents.kubernetes): the shapes public
StatefulSets take (a ConfigMap's postgresql.conf mounted with subPath, named by config_file or not; options in
args; an emptyDir at /dev/shm), and the mistakes they carry."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from documents_support import DOCUMENTS, kinds_recognising, line_of, lint_findings, settings
from pgvet.cli import app
from pgvet.inputs.documents import DeclaredHost
from pgvet.inputs.documents._kubernetes import RUNTIME_SHM_SIZE
from pgvet.inputs.documents.kubernetes import RUNTIME_DEFAULT, parse_workloads
from pgvet.snapshot.load import load_hosts

GiB = 1024**3

CONFIGMAP = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: postgres-config
data:
  postgresql.conf: |
    listen_addresses = '*'
    shared_buffers = 3GB
    work_mem = 64MB
    max_connections = 300
"""

STATEFULSET = """\
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: postgres
  namespace: db
spec:
  replicas: 1
  template:
    spec:
      containers:
        - name: postgres
          image: postgres:16.4
          args: ["-c", "config_file=/etc/postgresql/postgresql.conf", "-c", "max_wal_size=4GB"]
          env:
            - name: PGDATA
              value: /var/lib/postgresql/data/pgdata
          resources:
            limits:
              memory: 4Gi
              cpu: "2"
          volumeMounts:
            - name: data
              mountPath: /var/lib/postgresql/data
            - name: config
              mountPath: /etc/postgresql/postgresql.conf
              subPath: postgresql.conf
            - name: dshm
              mountPath: /dev/shm
      volumes:
        - name: config
          configMap:
            name: postgres-config
        - name: dshm
          emptyDir:
            medium: Memory
            sizeLimit: 1Gi
"""
MANIFEST = CONFIGMAP + "---\n" + STATEFULSET


def only(text: str) -> DeclaredHost:
    [host] = parse_workloads(text, "postgres.yaml")
    return host


def test_a_statefulset_with_its_configmap_is_one_host_read_at_its_lines() -> None:
    host = only(MANIFEST)
    assert (host.kind, host.name, host.namespace) == ("kubernetes", "postgres", "db")
    assert host.host["pg_version"].value == 16
    assert host.host["ram"].value == host.host["memory_limit"].value == 4 * GiB
    assert host.host["cpus"].value == 2
    assert host.host["shm_size"].value == GiB
    # the ConfigMap's lines first, then the command line's, which outrank them
    assert settings(host) == [
        ("listen_addresses", "*", line_of(MANIFEST, "listen_addresses")),
        ("shared_buffers", "3GB", line_of(MANIFEST, "shared_buffers")),
        ("work_mem", "64MB", line_of(MANIFEST, "work_mem")),
        ("max_connections", "300", line_of(MANIFEST, "max_connections")),
        ("config_file", "/etc/postgresql/postgresql.conf", line_of(MANIFEST, "args:")),
        ("max_wal_size", "4GB", line_of(MANIFEST, "args:")),
    ]
    assert not host.unseen_configuration and not host.problems


def test_its_lint_judges_the_configmap_with_the_pod_s_memory(tmp_path: Path) -> None:
    (tmp_path / "postgres.yaml").write_text(MANIFEST)
    found = lint_findings(tmp_path)
    assert ("postgres", "PGV501", "postgres.yaml", line_of(MANIFEST, "shared_buffers")) in found
    assert ("postgres", "PGV530", "postgres.yaml", line_of(MANIFEST, "work_mem")) in found
    [host] = load_hosts(tmp_path)
    assert host.facts["host.orchestrator"].value == "kubernetes"


def test_a_configmap_mounted_where_postgres_does_not_read_it_is_a_finding_and_the_pod_runs_its_defaults(
        tmp_path: Path) -> None:
    """The shape of many public StatefulSets: the ConfigMap mounted at /etc/postgresql/postgresql.conf, no
    config_file: the server reads its data directory's postgresql.conf, initdb's."""
    text = MANIFEST.replace('args: ["-c", "config_file=/etc/postgresql/postgresql.conf", "-c", "max_wal_size=4GB"]',
                            'args: ["-c", "max_wal_size=4GB"]')
    host = only(text)
    assert [setting.name for setting in host.settings] == ["max_wal_size"]
    [problem] = host.problems
    assert (problem.kind, problem.target, problem.fatal) == ("mounted-not-read", "/etc/postgresql/postgresql.conf",
                                                             False)
    (tmp_path / "postgres.yaml").write_text(text)
    found = lint_findings(tmp_path)
    assert ("postgres", "PGV436", "postgres.yaml", line_of(text, "mountPath: /etc/postgresql/postgresql.conf")) in found
    assert not {rule for _, rule, _, _ in found} & {"PGV501", "PGV530"}  # 3GB and 64MB never run


def test_a_configmap_of_another_file_leaves_the_parameters_unknown() -> None:
    host = only(STATEFULSET)
    assert host.unseen_configuration
    assert "pg.shared_buffers" in host.unknown and "pg.max_wal_size" not in host.unknown
    assert any("ConfigMap postgres-config's key postgresql.conf, not in this file" in note for note in host.notes)


def test_a_configmap_mounted_as_the_data_directory_s_file_through_its_items() -> None:
    text = MANIFEST.replace('          args: ["-c", "config_file=/etc/postgresql/postgresql.conf", "-c", '
                            '"max_wal_size=4GB"]\n', "").replace("""            - name: config
              mountPath: /etc/postgresql/postgresql.conf
              subPath: postgresql.conf
""", """            - name: config
              mountPath: /var/lib/postgresql/data/pgdata/postgresql.conf
              subPath: pg.conf
""").replace("""            name: postgres-config
""", """            name: postgres-config
            items:
              - key: postgresql.conf
                path: pg.conf
""")
    host = only(text)
    assert [setting.name for setting in host.settings] == ["listen_addresses", "shared_buffers", "work_mem",
                                                          "max_connections"]


def test_options_in_a_block_list_and_the_defaults_of_a_pod_without_configuration() -> None:
    text = """\
apiVersion: v1
kind: Pod
metadata:
  name: pg
spec:
  containers:
    - name: db
      image: docker.io/library/postgres:17-alpine
      command:
        - docker-entrypoint.sh
        - postgres
      args:
        - -c
        - shared_buffers=512MB
        - -c
        - password=$(PASSWORD)
        - -N
        - "50"
"""
    host = only(text)
    assert settings(host) == [("shared_buffers", "512MB", line_of(text, "shared_buffers")),
                              ("max_connections", "50", line_of(text, '"50"'))]
    assert "pg.password" in host.unknown  # filled in by Kubernetes: not judged
    assert host.host["shm_size"].value == RUNTIME_SHM_SIZE and host.host["shm_size"].source.path == RUNTIME_DEFAULT
    assert host.host["parameter_form"].value == "block list"
    assert not host.unseen_configuration and "ram" not in host.host


@pytest.mark.parametrize("text", [
    # a client run from the image, an image of another layout, a Helm template, no workload
    "kind: Job\nspec:\n  template:\n    spec:\n      containers:\n        - image: postgres:16\n"
    "          command: [psql, -c, 'select 1']\n",
    "kind: Pod\nmetadata: {name: x}\nspec:\n  containers:\n    - image: postgres:16\n      command: [pg_dump]\n",
    "kind: StatefulSet\nmetadata: {name: x}\nspec:\n  template:\n    spec:\n      containers:\n"
    "        - image: bitnami/postgresql:16\n",
    "kind: StatefulSet\nmetadata: {name: x}\nspec:\n  template:\n    spec:\n      containers:\n"
    "        - image: postgres:{{ .Values.tag }}\n",
])
def test_what_is_no_postgres_workload_is_not_claimed(tmp_path: Path, text: str) -> None:
    assert "kubernetes" not in kinds_recognising(tmp_path / "x.yaml", text)


def test_a_volume_at_the_data_directory_of_before_18_is_fatal(tmp_path: Path) -> None:
    text = MANIFEST.replace("postgres:16.4", "postgres:18").replace("""            - name: PGDATA
              value: /var/lib/postgresql/data/pgdata
""", "")
    (tmp_path / "postgres.yaml").write_text(text)
    line = line_of(text, "mountPath: /var/lib/postgresql/data")
    assert ("postgres", "PGV407", "postgres.yaml", line) in lint_findings(tmp_path)


def test_the_directory_s_postgresql_conf_is_not_the_pod_s(tmp_path: Path) -> None:
    (tmp_path / "postgres.yaml").write_text(MANIFEST)
    (tmp_path / "postgresql.conf").write_text("shared_buffers = 128MB\nwork_mem = 1GB\n")
    [host] = load_hosts(tmp_path)
    assert host.facts["pg.shared_buffers"].value == 3 * GiB
    assert host.facts["pg.work_mem"].value == 64 * 1024**2
    assert any("postgresql.conf is mounted nowhere postgres reads it" in warning for warning in host.warnings)


def test_the_fix_is_written_as_the_container_s_args(tmp_path: Path) -> None:
    (tmp_path / "postgres.yaml").write_text(MANIFEST)
    result = CliRunner().invoke(app, ["fix", str(tmp_path)])
    assert '"-c", "shared_buffers=' in result.output and "postgres' command line" in result.output


def test_a_real_deployment_is_one_host_on_its_image_s_defaults(tmp_path: Path) -> None:
    """dockersamples/example-voting-app's database: postgres:15-alpine on an emptyDir, no resources, no options."""
    text = (DOCUMENTS / "kubernetes" / "example-voting-app-db-deployment.yaml").read_text()
    host = only(text)
    assert (host.name, host.host["pg_version"].value, host.settings, host.problems) == ("db", 15, [], [])
    assert not host.unseen_configuration and "ram" not in host.host
    (tmp_path / "db-deployment.yaml").write_text(text)
    [loaded] = load_hosts(tmp_path)
    assert loaded.facts["pg.shared_buffers"].value == 128 * 1024**2 and loaded.facts["pg.version"].value == 15
    raised = text.replace("postgres:15-alpine", "postgres:18-alpine")  # the tag raised, the mount kept
    assert [problem.kind for problem in only(raised).problems] == ["data-mount-before-18"]
