"""Ansible variables and sysctl tasks (pgvet.inputs.documents.ansible) on real files of autobase (formerly
postgresql_cluster), geerlingguy.postgresql and cyverse's ds-collection, and on copies of them with planted mistakes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pgvet.cli import app
from pgvet.errors import ParseError
from pgvet.inputs.documents import DeclaredHost, recognise
from pgvet.inputs.documents.ansible import AUTOBASE_PARAMETERS, parse_ansible
from pgvet.snapshot.load import load_hosts

CORPUS = Path(__file__).parent.parent / "data" / "documents" / "ansible"
AUTOBASE = CORPUS / "autobase" / "roles" / "common" / "defaults" / "main.yml"
CLUSTER_VARS = CORPUS / "postgresql_cluster" / "vars" / "main.yml"
CLUSTER_SYSTEM = CORPUS / "postgresql_cluster" / "vars" / "system.yml"
GEERLINGGUY = CORPUS / "geerlingguy" / "defaults" / "main.yml"
CYVERSE_TASKS = CORPUS / "cyverse" / "roles" / "postgresql" / "tasks" / "configure.yml"
CONVERGE = CORPUS / "autobase" / "molecule" / "default" / "converge.yml"


def _parse(path: Path, text: str | None = None) -> list[DeclaredHost]:
    return parse_ansible(path.read_text() if text is None else text, str(path))


def _line(text: str, fragment: str) -> int:
    return next(number for number, line in enumerate(text.split("\n"), 1) if fragment in line)


def _setting(host: DeclaredHost, name: str) -> tuple[str, int | None]:
    found = [setting for setting in host.settings if setting.name == name]
    assert found, f"{name} not read"
    return found[-1].value, found[-1].source.line


def _sysctl(host: DeclaredHost, key: str) -> tuple[int | str, int | None]:
    found = [setting for setting in host.sysctl if setting.key == key]
    assert found, f"{key} not read"
    return found[-1].value, found[-1].source.line


def test_autobase_defaults_give_the_cluster_parameters_then_the_local_ones_the_version_and_the_sysctl() -> None:
    text = AUTOBASE.read_text()
    [host] = _parse(AUTOBASE)
    assert host.name == "common" and host.hosting
    assert host.host["pg_version"].value == 18
    assert host.host["pg_version"].source.line == _line(text, "postgresql_version: 18")
    assert host.host["orchestrator"].value == "ansible"
    assert _setting(host, "max_connections") == ("1000", _line(text, '"max_connections"'))
    assert _setting(host, "huge_pages") == ("try", _line(text, '"huge_pages"'))
    assert _setting(host, "pg_stat_statements.track") == ("all", _line(text, '"pg_stat_statements.track"'))
    assert [setting.name for setting in host.settings][:3] == [
        "max_connections", "superuser_reserved_connections", "ssl_min_protocol_version"]
    # sysctl_conf.postgres_cluster only: the balancers' and etcd's lists are other machines'
    assert _sysctl(host, "vm.overcommit_memory") == (2, _line(text, '"vm.overcommit_memory"'))
    assert _sysctl(host, "net.ipv4.ip_local_port_range") == ("10000 65535", _line(text, "ip_local_port_range"))
    assert len(host.sysctl) == 16


def test_a_jinja_value_is_skipped_with_a_note_naming_its_line_never_guessed() -> None:
    text = AUTOBASE.read_text()
    [host] = _parse(AUTOBASE)
    assert "shared_buffers" not in {setting.name for setting in host.settings}
    assert "ssl" not in {setting.name for setting in host.settings}
    line = _line(text, '"shared_buffers"')
    assert any(note.startswith(f"{AUTOBASE}:{line}: shared_buffers is a Jinja2 template") for note in host.notes)


def test_integers_are_read_as_ansibles_yaml_1_1_reads_them() -> None:
    # PyYAML: 0640 is octal (416, what Ansible passes on), 0o770 a text, not YAML 1.2's 640 and 504
    text = GEERLINGGUY.read_text().replace("postgresql_global_config_options:\n", (
        "postgresql_global_config_options:\n  - {option: log_file_mode, value: 0640}\n"
        "  - {option: unix_socket_permissions, value: 0o770}\n"), 1)
    [host] = _parse(GEERLINGGUY, text)
    assert _setting(host, "log_file_mode") == ("416", _line(text, "value: 0640"))
    assert _setting(host, "unix_socket_permissions") == ("0o770", _line(text, "value: 0o770"))


def test_a_sexagesimal_number_is_read_as_ansibles_yaml_1_1_reads_it() -> None:
    # PyYAML: 3:20 is 200 (base 60), the value Ansible passes on; YAML 1.2 would read the text "3:20"
    text = GEERLINGGUY.read_text().replace("postgresql_global_config_options:\n", (
        "postgresql_global_config_options:\n  - {option: checkpoint_timeout, value: 3:20}\n"), 1)
    [host] = _parse(GEERLINGGUY, text)
    assert _setting(host, "checkpoint_timeout") == ("200", _line(text, "value: 3:20"))


def test_geerlingguy_global_config_options_block_items_are_read_at_their_value_line() -> None:
    text = GEERLINGGUY.read_text()
    [host] = _parse(GEERLINGGUY)
    assert host.name == "geerlingguy"
    assert _setting(host, "log_directory") == ("log", _line(text, "value: 'log'"))
    assert any("unix_socket_directories is a Jinja2 template" in note for note in host.notes)


def test_a_vars_file_of_sysctl_only_is_not_hosting() -> None:
    [host] = _parse(CLUSTER_SYSTEM)
    assert host.name == "postgresql_cluster" and not host.hosting and not host.settings
    assert _sysctl(host, "vm.swappiness")[0] == 1


def test_sysctl_tasks_give_their_literal_values_and_a_note_for_a_template() -> None:
    text = CYVERSE_TASKS.read_text()
    [host] = _parse(CYVERSE_TASKS)
    assert host.name == "postgresql" and not host.hosting
    assert host.sysctl == [host.sysctl[0]] and _sysctl(host, "vm.swappiness") == (5, _line(text, "value: '5'"))
    line = _line(text, "postgresql_num_huge_pages")
    assert host.notes == [f"{CYVERSE_TASKS}:{line}: sysctl vm.nr_hugepages is a Jinja2 template "
                          "('{{ postgresql_num_huge_pages }}'): not read"]


def test_planted_mistakes_in_a_copy_of_autobase_are_read_at_their_lines(tmp_path: Path) -> None:
    text = AUTOBASE.read_text()
    planted = (text.replace('"vm.overcommit_memory", value: "2"', '"vm.overcommit_memory", value: "1"')
               .replace('"vm.swappiness", value: "1"', '"vm.swappiness", value: "60"')
               .replace('option: "work_mem"', 'option: "wrok_mem"')
               .replace('option: "huge_pages", value: "try"', 'option: "huge_pages", value: "maybe"'))
    path = tmp_path / "group_vars" / "postgres_cluster.yml"
    path.parent.mkdir()
    path.write_text(planted)
    [host] = _parse(path)
    assert host.name == "postgres_cluster"
    assert _sysctl(host, "vm.overcommit_memory") == (1, _line(planted, '"vm.overcommit_memory"'))
    assert _sysctl(host, "vm.swappiness") == (60, _line(planted, '"vm.swappiness"'))
    assert _setting(host, "wrok_mem") == ("64MB", _line(planted, '"wrok_mem"'))
    assert _setting(host, "huge_pages") == ("maybe", _line(planted, '"huge_pages"'))


def test_local_parameters_apply_after_the_cluster_ones() -> None:
    text = ('postgresql_parameters:\n  - { option: "work_mem", value: "64MB" }\n'
            'local_postgresql_parameters:\n  - { option: "work_mem", value: "8MB" }\n')
    [host] = parse_ansible(text, "group_vars/db.yml")
    assert [(setting.value, setting.source.line) for setting in host.settings] == [("64MB", 2), ("8MB", 4)]


def test_local_parameters_alone_leave_autobases_own_list_unknown_not_postgresqls_defaults() -> None:
    # a group_vars/all.yml giving only each member's list (as autobase's molecule test does): autobase applies its
    # role's postgresql_parameters (checkpoint_timeout 15min, track_io_timing on…, AUTOBASE's lines) under it
    text = ('postgresql_version: 17\nlocal_postgresql_parameters:\n  - { option: "shared_buffers", value: "512MB" }\n'
            '  - { option: "effective_cache_size", value: "1536MB" }\n')
    [host] = parse_ansible(text, "group_vars/all.yml")
    assert [(setting.name, setting.value) for setting in host.settings] == [
        ("shared_buffers", "512MB"), ("effective_cache_size", "1536MB")]
    assert host.unknown["pg.checkpoint_timeout"].line == 2 and host.unknown["pg.track_io_timing"].line == 2
    assert "pg.shared_buffers" not in host.unknown and "pg.log_min_duration_statement" not in host.unknown
    assert host.notes[0].startswith("group_vars/all.yml:2: local_postgresql_parameters without postgresql_parameters")
    # the role's own list, as its defaults set it: every name it sets is among those left unknown
    [role] = _parse(AUTOBASE)
    assert {setting.name for setting in role.settings} <= set(AUTOBASE_PARAMETERS)
    [role] = _parse(CLUSTER_VARS)
    assert {setting.name for setting in role.settings} <= set(AUTOBASE_PARAMETERS)


def test_the_cluster_list_alone_leaves_the_members_memory_parameters_to_autobase() -> None:
    # autobase's role gives each member shared_buffers and effective_cache_size (25 %, 75 % of its memory) in its
    # patroni.yml, over the DCS's: a value of the cluster-wide list for them does not apply
    text = ('postgresql_parameters:\n  - { option: "shared_buffers", value: "256MB" }\n'
            '  - { option: "work_mem", value: "8MB" }\n')
    [host] = parse_ansible(text, "group_vars/postgres_cluster.yml")
    assert host.unknown == {"pg.shared_buffers": host.unknown["pg.shared_buffers"],
                            "pg.effective_cache_size": host.unknown["pg.shared_buffers"]}
    assert host.unknown["pg.shared_buffers"].line == 1
    assert host.notes == ["group_vars/postgres_cluster.yml:1: postgresql_parameters without "
                          "local_postgresql_parameters: autobase (2.x) sets each member's shared_buffers and "
                          "effective_cache_size from its memory (25 % and 75 %), over the cluster-wide list "
                          "(shared_buffers here has no effect): unknown here"]
    # with the members' list given, it is read
    [host] = parse_ansible(text + "local_postgresql_parameters: []\n", "group_vars/postgres_cluster.yml")
    assert not host.unknown and not host.notes


def test_an_option_a_template_names_makes_every_parameter_unknown() -> None:
    text = ('postgresql_parameters:\n  - { option: "work_mem", value: "64MB" }\n'
            '  - { option: "{{ item.name }}", value: "{{ item.value }}" }\n  - { option: "ssl", value: "on" }\n')
    [host] = parse_ansible(text, "group_vars/db.yml")
    assert host.unknown["pg.work_mem"].line == 3 and host.unknown["pg.max_connections"].line == 3
    assert "pg.ssl" not in host.unknown  # set after it


def test_an_inventory_gives_each_host_its_groups_variables_the_deeper_group_and_the_host_winning() -> None:
    text = """all:
  vars:
    postgresql_version: 16
    postgresql_parameters:
      - { option: "work_mem", value: "4MB" }
  children:
    postgres_cluster:
      vars:
        postgresql_parameters:
          - { option: "work_mem", value: "32MB" }
      hosts:
        pg1:
        pg2:
          postgresql_parameters:
            - { option: "work_mem", value: "64MB" }
    balancers:
      hosts:
        lb1:
"""
    kind = recognise("inventory.yml", text)
    assert kind is not None and kind.name == "ansible"
    hosts = {host.name: host for host in parse_ansible(text, "inventory.yml")}
    assert _setting(hosts["pg1"], "work_mem") == ("32MB", 10)
    assert _setting(hosts["pg2"], "work_mem") == ("64MB", 15)
    assert hosts["pg1"].host["pg_version"].value == 16 and hosts["pg1"].source.line == 12
    assert _setting(hosts["lb1"], "work_mem") == ("4MB", 5)  # every host of `all` gets all's vars


@pytest.mark.parametrize("false", ["false", "no", "Off"])  # YAML 1.1's false, as Ansible's PyYAML reads it
def test_sysctl_shapes_sysctl_set_false_and_member_groups(false: str) -> None:
    text = f"""sysctl_set: {false}
sysctl_conf:
  postgres_cluster:
    - {{ name: "vm.swappiness", value: "1" }}
"""
    [host] = parse_ansible(text, "group_vars/all.yml")
    assert not host.sysctl and "sysctl_set is false" in host.notes[0]
    text = """sysctl_conf:
  master:
    - { name: "vm.nr_hugepages", value: "100" }
  postgres_cluster: []
sysctl_settings:
  vm.dirty_background_bytes: 67108864
  vm/overcommit_memory: true
"""
    [host] = parse_ansible(text, "group_vars/all.yml")
    assert [(setting.key, setting.value, setting.source.line) for setting in host.sysctl] == [
        ("vm.dirty_background_bytes", 67108864, 6), ("vm.overcommit_memory", 1, 7)]
    assert host.notes == ["group_vars/all.yml:2: sysctl_conf.master: applies to some members of the cluster only: "
                          "not read"]


def test_a_playbook_reads_play_vars_and_sysctl_tasks_in_the_free_form_and_skips_loops() -> None:
    text = """- hosts: databases
  vars:
    postgresql_version: "15"
    postgresql_parameters:
      - { option: "work_mem", value: "4MB" }
  tasks:
    - name: swappiness
      sysctl: name=vm.swappiness value=10
    - block:
        - ansible.posix.sysctl:
            name: vm.overcommit_memory
            value: 2
    - ansible.posix.sysctl:
        name: "{{ item.name }}"
        value: "{{ item.value }}"
      loop: "{{ sysctl_items }}"
"""
    kind = recognise("site.yml", text)
    assert kind is not None and kind.name == "ansible"
    [host] = parse_ansible(text, "site.yml")
    assert host.name == "databases" and host.hosting and host.host["pg_version"].value == 15
    assert [(setting.name, setting.value, setting.source.line) for setting in host.settings] == [("work_mem", "4MB", 5)]
    assert [(setting.key, setting.value, setting.source.line) for setting in host.sysctl] == [
        ("vm.swappiness", 10, 8), ("vm.overcommit_memory", 2, 12)]
    assert host.notes[1:] == ["site.yml:13: ansible.posix.sysctl runs in a loop: not read"]
    assert host.notes[0].startswith("site.yml:4: postgresql_parameters without local_postgresql_parameters")


def test_values_that_cannot_be_known_are_notes_and_a_state_absent_is_no_setting() -> None:
    text = """postgresql_version: "9.6"
postgresql_global_config_options:
  - option: shared_buffers
    value: !vault |
      $ANSIBLE_VAULT;1.1;AES256
      3234
  - option: log_line_prefix
    value: !unsafe '%m {{ not a template }}'
  - option: work_mem
    value: 4MB
    state: absent
  - "{{ more }}"
"""
    [host] = parse_ansible(text, "roles/db/vars/main.yml")
    assert host.name == "db"
    assert [(setting.name, setting.value) for setting in host.settings] == [
        ("log_line_prefix", "%m {{ not a template }}")]
    # 9.6 is read as pgvet reads PG_VERSION's 9.6: judged as 18, the role's wal_keep_segments was a false PGV402
    assert (host.host["pg_version"].value, host.host["pg_version"].source.line) == (9, 1)
    assert host.notes == ["roles/db/vars/main.yml:4: shared_buffers is tagged !vault: not read",
                          "roles/db/vars/main.yml:10: work_mem: state absent (the line is removed): not read",
                          "roles/db/vars/main.yml:12: postgresql_global_config_options item is no {option, value}: "
                          "not read"]


@pytest.mark.parametrize(("name", "text"), [
    ("group_vars/all.yml", "postgresql_parameters:\n  - option: a\n  value: [\n"),
    ("group_vars/all.yml", "postgresql_parameters: {\n"),
])
def test_invalid_yaml_is_a_parse_error_at_its_line(name: str, text: str) -> None:
    with pytest.raises(ParseError) as error:
        parse_ansible(text, name)
    assert error.value.source.path == name and error.value.source.line


@pytest.mark.parametrize(("name", "text"), [
    ("vars.yml", "postgres_port: 5432\nparameters: []\n"),  # not one of the variables
    ("roles/web/tasks/main.yml", "- sysctl:\n    name: net.core.somaxconn\n    value: 1024\n"),  # no postgres hint
    ("roles/kafka/defaults/main.yml", "sysctl_settings:\n  vm.swappiness: 1\n"),  # no postgres hint
    ("values.yaml", "nested:\n  postgresql_parameters: []\n"),  # not at the top level, no inventory
    ("values.yaml", "ingress:\n  hosts: [db.example]\ndb:\n  postgresql_parameters: []\n"),  # declares nothing
    ("group_vars/db.yml", "sysctl_conf:\n  postgres_cluster: []\n"),  # declares nothing
    ("patroni.yml", "scope: x\npostgresql:\n  parameters:\n    work_mem: 4MB\n"),
])
def test_other_yaml_is_not_recognised(name: str, text: str) -> None:
    kind = recognise(name, text)
    assert kind is None or kind.name != "ansible"


def test_a_file_of_parameters_none_literal_is_still_a_postgresql_host_and_odd_items_are_notes() -> None:
    text = """postgresql_parameters:
  - { option: "shared_buffers", value: "{{ ram_mb // 4 }}MB" }
sysctl_settings:
  - { name: 5, value: 1 }
  - { name: vm.swappiness }
"""
    [host] = parse_ansible(text, "group_vars/db.yml")
    assert host.hosting and not host.settings and not host.sysctl
    assert host.notes == ["group_vars/db.yml:2: shared_buffers is a Jinja2 template ('{{ ram_mb // 4 }}MB'): not read",
                          "group_vars/db.yml:1: postgresql_parameters without local_postgresql_parameters: autobase "
                          "(2.x) sets each member's shared_buffers and effective_cache_size from its memory (25 % and "
                          "75 %), over the cluster-wide list: unknown here",
                          "group_vars/db.yml:4: a sysctl name is missing or not text: not read",
                          "group_vars/db.yml:5: sysctl vm.swappiness has no value: not read"]


def test_a_playbooks_set_fact_variables_are_read_and_a_conditional_one_is_a_note() -> None:
    text = CONVERGE.read_text()
    [host] = _parse(CONVERGE)
    assert host.name == "all" and host.hosting
    # autobase's own postgresql_parameters apply beneath the members' lists
    assert [note.split(": ", 1)[1][:50] for note in host.notes] == [
        "local_postgresql_parameters without postgresql_par"]
    assert "pg.checkpoint_timeout" in host.unknown and "pg.shared_buffers" not in host.unknown
    assert host.host["pg_version"].value == 18
    assert [(setting.name, setting.value, setting.source.line) for setting in host.settings] == [
        ("shared_buffers", "128MB", _line(text, '"shared_buffers"')),
        ("effective_cache_size", "512MB", _line(text, '"effective_cache_size"'))]
    conditional = """- hosts: db
  tasks:
    - ansible.builtin.set_fact:
        postgresql_parameters: [{ option: work_mem, value: 1GB }]
      when: big
"""
    [host] = parse_ansible(conditional, "site.yml")
    assert not host.settings
    assert host.notes == ["site.yml:3: ansible.builtin.set_fact under a `when` condition: not read"]


# The example play of an Ansible role's README (entercloudsuite.postgres, given to a PostgreSQL master): its variables
# are the role entry's parameters, as Ansible takes them (role params, over the play's vars)
ROLE_PARAMETERS = """\
- name: postgresql master
  become: true
  become_method: sudo
  hosts: all
  vars:
    postgresql_global_config_options:
      - option: wal_level
        value: minimal
  roles:
    - role: entercloudsuite.postgres
      postgresql_global_config_options:
          - option: listen_addresses
            value: '*'
          - option: wal_level
            value: hot_standby
          - option: archive_mode
            value: on
          - option: max_wal_senders
            value: 3
    - role: other
      vars:
        postgresql_version: 15
"""


def test_a_plays_role_parameters_are_its_variables() -> None:
    # were not read: "no inputs found" for the playbook of a role's README
    [host] = parse_ansible(ROLE_PARAMETERS, "site.yml")
    assert host.name == "all" and host.hosting
    assert _setting(host, "wal_level") == ("hot_standby", _line(ROLE_PARAMETERS, "value: hot_standby"))
    assert _setting(host, "archive_mode") == ("on", _line(ROLE_PARAMETERS, "value: on"))
    assert "minimal" not in [setting.value for setting in host.settings]  # the role's parameter wins
    assert host.host["pg_version"].value == 15


def _lint(directory: Path) -> list[tuple[object, ...]]:
    result = CliRunner().invoke(app, ["lint", str(directory), "--format", "json"])
    assert result.exit_code in (0, 1), result.output
    return [(finding["host"], finding["rule_id"], Path(str(finding["path"])).name, finding["line"])
            for finding in json.loads(result.output)["findings"] if finding["path"]]


def test_pgvet_lint_finds_the_planted_mistakes_of_group_vars_at_their_yaml_lines(tmp_path: Path) -> None:
    planted = (AUTOBASE.read_text()
               .replace('"vm.overcommit_memory", value: "2"', '"vm.overcommit_memory", value: "1"')
               .replace('"vm.swappiness", value: "1"', '"vm.swappiness", value: "60"')
               .replace('option: "work_mem"', 'option: "wrok_mem"')
               .replace('option: "huge_pages", value: "try"', 'option: "huge_pages", value: "maybe"'))
    directory = tmp_path / "group_vars"
    directory.mkdir()
    (directory / "postgres_cluster.yml").write_text(planted)
    found = _lint(directory)
    file = "postgres_cluster.yml"
    assert {("postgres_cluster", "PGV401", file, _line(planted, '"wrok_mem"')),
            ("postgres_cluster", "PGV403", file, _line(planted, '"huge_pages"')),
            ("postgres_cluster", "PGV101", file, _line(planted, '"vm.overcommit_memory"')),
            ("postgres_cluster", "PGV130", file, _line(planted, '"vm.swappiness"'))} <= set(found)
    [host] = load_hosts(directory)
    assert host.value("pg.version") == 18 and host.value("host.orchestrator") == "ansible"
    jinja = _line(planted, '"shared_buffers"')
    assert any(note.startswith(f"{file}:{jinja}: shared_buffers is a Jinja2") for note in host.notes)


def test_pgvet_lint_joins_a_vars_file_of_kernel_settings_to_the_host_beside_it(tmp_path: Path) -> None:
    directory = tmp_path / "db1"
    directory.mkdir()
    (directory / "postgresql.conf").write_text("shared_buffers = 1GB\n")
    system = CLUSTER_SYSTEM.read_text().replace('"vm.swappiness", value: "1"', '"vm.swappiness", value: "60"')
    (directory / "system.yml").write_text(system)
    assert ("db1", "PGV130", "system.yml", _line(system, '"vm.swappiness"')) in _lint(directory)


def test_a_repeated_variable_takes_its_last_value_as_ansible_reads_it() -> None:
    text = ("postgresql_parameters:\n  - {option: work_mem, value: 4MB}\n"
            "postgresql_parameters:\n  - {option: work_mem, value: 16MB}\n")
    hosts = parse_ansible(text, "group_vars/postgres.yml")
    assert [(setting.name, setting.value, setting.source.line) for host in hosts for setting in host.settings] == [
        ("work_mem", "16MB", 4)]
