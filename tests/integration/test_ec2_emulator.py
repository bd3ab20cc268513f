"""libcloud_node and the libcloud inventory on EC2, through libcloud's real EC2 driver, against moto's emulator.

The emulator (tests/emulators/ec2.py) is moto's server behind a proxy that fixes the XML namespace of its
answers and counts the API calls. The outcome is checked with boto3, which does not go through libcloud.
Emulated instances answer no SSH, so the module runs with wait=false. Each test has a cluster of its own,
whose instances are terminated afterwards even when the test fails.
"""

import base64
import json
import sys
import uuid

import pytest
import yaml
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat, load_ssh_private_key

from ansible_collections.tfdist.cluster.plugins.module_utils._libcloud import get_driver
import ansible_cli
from emulators.ec2 import (CLUSTER_KEY, cli_settings, cluster_instances, inventory_config, run_inventory, run_libcloud_node,
                           terminate_cluster)

CREDENTIALS = {"access_key": "testing", "secret_key": "testing"}
TAGS = ("tfdist_cluster", "tfdist_role")
LAYOUT = {"chief": 1, "worker": 2, "ps": 1}


def plain(value):
    """A host variable from `ansible-inventory --list`, which writes values marked unsafe as {"__ansible_unsafe": v}."""
    return value["__ansible_unsafe"] if isinstance(value, dict) and "__ansible_unsafe" in value else value


@pytest.fixture
def cluster(ec2_emulator):
    """A cluster name of its own; its instances are terminated afterwards (with boto3, not the code under test)."""
    name = "ec2-%s" % uuid.uuid4().hex[:8]
    yield name
    terminate_cluster(ec2_emulator.boto3_client(), name)


def create_cluster(emulator, cluster):
    roles = [{"role": role, "count": count, "size": "t2.micro", "image": emulator.image_id}
             for role, count in LAYOUT.items()]
    run, result = run_libcloud_node(emulator, {"cluster": cluster, "roles": roles, "wait": False})
    assert run.returncode == 0 and result, "libcloud_node failed:\n" + run.stdout[-4000:] + run.stderr[-2000:]
    return result


def test_libcloud_reads_nothing_from_moto_without_the_proxy(ec2_emulator, cluster):
    """The harness is needed: straight from moto, libcloud parses no instance; through the proxy it does."""
    ec2 = ec2_emulator.boto3_client(direct=True)
    ec2.run_instances(ImageId=ec2_emulator.image_id, InstanceType="t2.micro", MinCount=1, MaxCount=1,
                      TagSpecifications=[{"ResourceType": "instance",
                                          "Tags": [{"Key": "tfdist_cluster", "Value": cluster}]}])
    direct = get_driver("ec2", ec2_emulator.region, CREDENTIALS,
                        dict(ec2_emulator.driver_options, port=ec2_emulator.moto_port))
    assert direct.list_nodes() == []

    proxied = get_driver("ec2", ec2_emulator.region, CREDENTIALS, ec2_emulator.driver_options)
    tagged = [n for n in proxied.list_nodes() if n.extra.get("tags", {}).get("tfdist_cluster") == cluster]
    assert len(tagged) == 1 and tagged[0].state == "running"


def test_create_cluster_makes_tagged_running_instances(ec2_emulator, cluster):
    ec2_emulator.reset_calls()
    result = create_cluster(ec2_emulator, cluster)
    # Whole at creation: one RunInstances per role, no call per node.
    calls = ec2_emulator.calls()
    assert calls["RunInstances"] == len(LAYOUT) and calls["CreateTags"] == 0, calls
    assert result["changed"] is True
    assert sorted(n["name"] for n in result["created"]) == sorted(
        "%s-%s-%d" % (cluster, role, index) for role, count in LAYOUT.items() for index in range(count))

    # Named as tfdist names them: by the tfdist_index tag of a lone node, by the run's tfdist_first_index plus the
    # launch index of a node made with others.
    instances = cluster_instances(ec2_emulator.boto3_client(), cluster, ("running",))
    assert sorted(instances) == sorted(n["name"] for n in result["created"])
    for name, instance in instances.items():
        role, index = name[len(cluster) + 1:].rsplit("-", 1)
        assert {k: instance["tags"].get(k) for k in TAGS} == {"tfdist_cluster": cluster, "tfdist_role": role}
        assert instance["tags"].get("tfdist_index", index) == index
        assert instance["InstanceType"] == "t2.micro" and instance["ImageId"] == ec2_emulator.image_id
    assert instances[cluster + "-worker-1"]["tags"]["Name"] == cluster + "-worker-0-1"

    again, second = run_libcloud_node(ec2_emulator, {"cluster": cluster, "wait": False, "roles": [
        {"role": role, "count": count} for role, count in LAYOUT.items()]})
    assert again.returncode == 0 and second["changed"] is False, again.stdout[-4000:]


def test_inventory_groups_the_cluster_with_one_describe_call(ec2_emulator, cluster, tmp_path):
    create_cluster(ec2_emulator, cluster)
    config = inventory_config(ec2_emulator, tmp_path / "x.libcloud.yml", clusters=[cluster])

    ec2_emulator.reset_calls()
    run, inventory = run_inventory(ec2_emulator, config)
    assert inventory, "ansible-inventory failed:\n" + run.stdout[-2000:] + run.stderr[-4000:]
    calls = ec2_emulator.calls()

    prefix = "tfdist_" + cluster.replace("-", "_")
    assert sorted(inventory[prefix + "_worker"]["hosts"]) == [cluster + "-worker-0", cluster + "-worker-1"]
    assert inventory[prefix + "_chief"]["hosts"] == [cluster + "-chief-0"]
    assert inventory[prefix + "_ps"]["hosts"] == [cluster + "-ps-0"]
    assert len(inventory[prefix]["hosts"]) == 4
    hostvars = inventory["_meta"]["hostvars"]
    assert hostvars[cluster + "-worker-1"]["tfdist_index"] == 1
    assert plain(hostvars[cluster + "-worker-1"]["libcloud_size"]) == "t2.micro"
    instances = cluster_instances(ec2_emulator.boto3_client(), cluster)
    assert plain(hostvars[cluster + "-ps-0"]["libcloud_id"]) == instances[cluster + "-ps-0"]["InstanceId"]
    assert calls["DescribeInstances"] == 1, calls


def test_a_role_grown_and_mended_keeps_its_numbering_with_no_call_per_node(ec2_emulator, cluster, tmp_path):
    """2 workers, then 5 (indexes 2 to 4 in one RunInstances), then worker 1 lost and made again on its own: the
    inventory has hosts worker-0 to worker-4, each with its index and tags, and no instance was tagged after its
    creation."""
    def workers(count):
        roles = [{"role": "worker", "count": count, "size": "t2.micro", "image": ec2_emulator.image_id}]
        run, result = run_libcloud_node(ec2_emulator, {"cluster": cluster, "roles": roles, "wait": False})
        assert run.returncode == 0 and result, run.stdout[-4000:] + run.stderr[-2000:]
        return sorted(node["name"] for node in result["created"])

    ec2 = ec2_emulator.boto3_client()
    ec2_emulator.reset_calls()
    assert workers(2) == [cluster + "-worker-0", cluster + "-worker-1"]
    assert workers(5) == [cluster + "-worker-%d" % n for n in (2, 3, 4)]
    ec2.terminate_instances(InstanceIds=[cluster_instances(ec2, cluster)[cluster + "-worker-1"]["InstanceId"]])
    assert workers(5) == [cluster + "-worker-1"]
    assert ec2_emulator.calls()["RunInstances"] == 3 and ec2_emulator.requests("CreateTags") == []

    run, inventory = run_inventory(ec2_emulator, inventory_config(ec2_emulator, tmp_path / "x.libcloud.yml",
                                                                  clusters=[cluster]))
    assert inventory, "ansible-inventory failed:\n" + run.stdout[-2000:] + run.stderr[-4000:]
    hosts = [cluster + "-worker-%d" % n for n in range(5)]
    assert sorted(inventory["tfdist_" + cluster.replace("-", "_") + "_worker"]["hosts"]) == hosts
    instances = cluster_instances(ec2, cluster)
    assert sorted(instances) == hosts
    for n, host in enumerate(hosts):
        hostvars = inventory["_meta"]["hostvars"][host]
        assert [plain(hostvars[key]) for key in ("tfdist_cluster", "tfdist_role", "tfdist_index")] == [
            cluster, "worker", n]
        assert plain(hostvars["libcloud_id"]) == instances[host]["InstanceId"]
        assert plain(hostvars["libcloud_extra"]["tags"]["tfdist_role"]) == "worker"


def test_the_user_data_carries_the_roles_host_key_which_the_controller_pins(ec2_emulator, cluster, tmp_path):
    """What cloud-init on an EC2 instance reads (DescribeInstanceAttribute userData): its role's host key pair (one
    user-data, so one RunInstances for the role), whose public half the controller's known_hosts holds under the node's
    name and the node's tfdist_host_key tag carries; no private key is kept on the controller. A controller without
    that known_hosts pins the nodes from their tags."""
    known_hosts = tmp_path / "keys" / f"{cluster}.known_hosts"
    roles = [{"role": "worker", "count": 2, "size": "t2.micro", "image": ec2_emulator.image_id}]
    run, result = run_libcloud_node(ec2_emulator, {"cluster": cluster, "roles": roles, "wait": False, "user_data": {
        "user": "ubuntu", "public_key": CLUSTER_KEY, "known_hosts": str(known_hosts)}})
    assert run.returncode == 0 and result, run.stdout[-4000:] + run.stderr[-2000:]

    ec2 = ec2_emulator.boto3_client()
    instances = cluster_instances(ec2, cluster)
    pinned = dict(line.split(" ", 1) for line in known_hosts.read_text().splitlines())
    assert sorted(pinned) == sorted(instances) == [f"{cluster}-worker-0", f"{cluster}-worker-1"]
    for name, instance in instances.items():
        answer = ec2.describe_instance_attribute(InstanceId=instance["InstanceId"], Attribute="userData")
        config = yaml.safe_load(base64.b64decode(answer["UserData"]["Value"]))
        assert config["users"][0]["name"] == "ubuntu" and config["users"][0]["ssh_authorized_keys"] == [CLUSTER_KEY]
        keys = config["ssh_keys"]
        assert " ".join(keys["ed25519_public"].split()[:2]) == pinned[name]
        private = load_ssh_private_key(keys["ed25519_private"].encode(), password=None)  # its pair
        assert private.public_key().public_bytes(Encoding.OpenSSH, PublicFormat.OpenSSH).decode() == pinned[name]
        assert instance["tags"]["tfdist_host_key"] == pinned[name]
    assert len(set(pinned.values())) == 1
    assert len({instance["ReservationId"] for instance in instances.values()}) == 1  # one RunInstances
    assert [path.name for path in known_hosts.parent.iterdir()] == [known_hosts.name]
    assert "PRIVATE KEY" not in run.stdout + run.stderr

    known_hosts.unlink()
    again, result = run_libcloud_node(ec2_emulator, {"cluster": cluster, "roles": roles, "wait": False, "user_data": {
        "user": "ubuntu", "public_key": CLUSTER_KEY, "known_hosts": str(known_hosts)}})
    assert again.returncode == 0 and result["created"] == [], again.stdout[-4000:] + again.stderr[-2000:]
    assert dict(line.split(" ", 1) for line in known_hosts.read_text().splitlines()) == pinned


def test_absent_terminates_every_node(ec2_emulator, cluster):
    create_cluster(ec2_emulator, cluster)
    ec2 = ec2_emulator.boto3_client()
    before = cluster_instances(ec2, cluster)
    assert len(before) == 4

    run, result = run_libcloud_node(ec2_emulator, {"cluster": cluster, "state": "absent"})
    assert run.returncode == 0 and result, run.stdout[-4000:] + run.stderr[-2000:]
    assert sorted(n["name"] for n in result["removed"]) == sorted(before)
    assert cluster_instances(ec2, cluster) == {}
    gone = cluster_instances(ec2, cluster, ("shutting-down", "terminated"))
    assert sorted(i["InstanceId"] for i in gone.values()) == sorted(i["InstanceId"] for i in before.values())

    again, second = run_libcloud_node(ec2_emulator, {"cluster": cluster, "state": "absent"})
    assert again.returncode == 0 and second["changed"] is False, again.stdout[-4000:]


# Sizes from constraints: a RADL system with cpu.count, memory.size and gpu.count and no instance_type, read by the
# RADL lookup's parser and carried by the filters the provision role uses, gets the cheapest fitting instance type.
CONSTRAINED_RADL = """\
network public (outbound = 'yes')
system chief ( instance_type = 't2.micro' and disk.0.image.url = 'aws://us-east-1/{image}' )
system wn ( tfdist.role = 'worker' and cpu.count >= 4 and memory.size >= 16g and gpu.count >= {gpus}
            and disk.0.image.url = 'aws://us-east-1/{image}' )
deploy chief 1
deploy wn 2
"""


def constrained_roles(emulator, gpus):
    from ansible_collections.tfdist.cluster.plugins.filter.cluster import tf_node_specs, tf_role_nodes, tf_task_layout
    from ansible_collections.tfdist.cluster.plugins.module_utils._radl import parse_cluster

    shape = parse_cluster(CONSTRAINED_RADL.format(image=emulator.image_id, gpus=gpus), "cluster.radl")
    specs = tf_node_specs({}, shape["nodes"], shape["source"])
    return tf_role_nodes(tf_task_layout(shape["workers"], shape["ps"], shape["evaluators"]), specs)


def test_radl_constraints_plan_and_create_the_cheapest_fitting_type(ec2_emulator, cluster):
    roles = constrained_roles(ec2_emulator, gpus=1)

    run, plan = run_libcloud_node(ec2_emulator, {"cluster": cluster, "roles": roles, "wait": False}, check=True)
    assert run.returncode == 0 and plan, run.stdout[-4000:] + run.stderr[-2000:]
    assert plan["plan"]["worker"]["size"] == "g4dn.xlarge"
    assert plan["plan"]["worker"]["size_reason"].startswith(
        "g4dn.xlarge: 4 vCPUs, 16 GiB, 1 GPU, $0.526/h: the cheapest of ")
    assert plan["plan"]["worker"]["size_reason"].endswith(
        "x86_64 sizes with cpu.count >= 4 and memory.size >= 16g and gpu.count >= 1")
    assert "size" not in plan["plan"]["chief"]  # its instance_type wins
    assert cluster_instances(ec2_emulator.boto3_client(), cluster) == {}

    run, result = run_libcloud_node(ec2_emulator, {"cluster": cluster, "roles": roles, "wait": False})
    assert run.returncode == 0 and result, run.stdout[-4000:] + run.stderr[-2000:]
    instances = cluster_instances(ec2_emulator.boto3_client(), cluster)
    assert {name: i["InstanceType"] for name, i in instances.items()} == {
        cluster + "-chief-0": "t2.micro", cluster + "-worker-0": "g4dn.xlarge", cluster + "-worker-1": "g4dn.xlarge"}


def test_radl_constraints_no_type_meets_name_the_system_and_create_nothing(ec2_emulator, cluster):
    roles = constrained_roles(ec2_emulator, gpus=64)

    for check in (True, False):
        run, result = run_libcloud_node(ec2_emulator, {"cluster": cluster, "roles": roles, "wait": False}, check=check)
        assert run.returncode != 0 and result and "msg" in result, run.stdout[-4000:]
        assert result["msg"].startswith(
            "cluster.radl: system 'wn': no ec2 size meets cpu.count >= 4 and memory.size >= 16g and gpu.count >= 64: "
            "gpu.count >= 64 is more than any of the "), result["msg"]
        assert "(the most: 16, p2.16xlarge)" in result["msg"]
    ec2 = ec2_emulator.boto3_client()
    assert cluster_instances(ec2, cluster, ("pending", "running", "stopping", "stopped")) == {}


PLAN_HERE_AND_IN_A_MODULE = """
- hosts: localhost
  connection: local
  gather_facts: false
  vars:
    node_args: {args}
  tasks:
    - name: Plan in the controller's own process (the action runs the module's code)
      tfdist.cluster.libcloud_node: "{{{{ node_args }}}}"
      check_mode: true
      register: here
    - name: Plan in a module run (an environment of the task's own sends it there)
      tfdist.cluster.libcloud_node: "{{{{ node_args }}}}"
      check_mode: true
      environment: {{TFDIST_PLAN: module}}
      register: module
    - ansible.builtin.copy:
        content: "{{{{ {{'here': here, 'module': module}} | to_json }}}}"
        dest: "{out}"
        mode: "0600"
"""


def test_the_controller_plans_in_its_own_process_as_the_module_does(ec2_emulator, cluster, tmp_path):
    create_cluster(ec2_emulator, cluster)
    secret = "not-in-any-result-%s" % uuid.uuid4().hex[:6]
    args = {"provider": "ec2", "region": ec2_emulator.region, "driver_options": ec2_emulator.driver_options,
            "credentials": {"access_key": "testing", "secret_key": secret}, "cluster": cluster,
            "roles": [{"role": role, "count": count, "size": "t2.micro", "image": ec2_emulator.image_id}
                      for role, count in LAYOUT.items()]}
    playbook = tmp_path / "plan.yml"
    out = tmp_path / "plans.json"
    playbook.write_text(PLAN_HERE_AND_IN_A_MODULE.format(args=json.dumps(args), out=out))
    run = ansible_cli.run("ansible-playbook", str(playbook), "-i", "localhost,", "-vvv",
                          "-e", "ansible_python_interpreter=%s" % sys.executable,
                          env=cli_settings(ec2_emulator, ANSIBLE_INVENTORY_ENABLED="host_list"))
    assert run.returncode == 0, run.stdout[-4000:]
    module_runs = [line for line in run.stdout.splitlines() if "Using module file" in line and "libcloud_node" in line]
    assert len(module_runs) == 1  # the second task's only
    plans = json.loads(out.read_text())
    assert secret not in out.read_text() and secret not in run.stdout
    here, module = plans["here"], plans["module"]
    assert here["changed"] is False and sorted(n["name"] for n in here["nodes"]) == sorted(
        n["name"] for n in module["nodes"])
    assert {key: here[key] for key in ("plan", "cost", "nothing_to_do", "created")} == {
        key: module[key] for key in ("plan", "cost", "nothing_to_do", "created")}


ACCESS_AND_AUDIT_HERE_AND_IN_A_MODULE = """
- hosts: localhost
  connection: local
  gather_facts: false
  module_defaults:
    group/tfdist.cluster.libcloud: {connection}
  tasks:
    - name: Key pair and firewall in the controller's own process
      tfdist.cluster.libcloud_access:
        cluster: {cluster}
        public_key: "{public_key}"
        ssh_from: [203.0.113.7/32]
        internal_ports: ["2222"]
      register: access
    - name: Audit in the controller's own process
      tfdist.cluster.libcloud_audit:
        clusters: [{cluster}]
      register: here
    - name: Audit in a module run (an environment of the task's own sends it there)
      tfdist.cluster.libcloud_audit:
        clusters: [{cluster}]
      environment: {{TFDIST_AUDIT: module}}
      register: module
    - name: A key pair asked for with no key, named by the module's own check
      tfdist.cluster.libcloud_access:
        cluster: {cluster}
        ssh_from: [203.0.113.7/32]
      register: no_key
      ignore_errors: true
    - name: Key pair and firewall removed in the controller's own process
      tfdist.cluster.libcloud_access:
        cluster: {cluster}
        state: absent
      register: removed
    - ansible.builtin.copy:
        content: "{{{{ {{'access': access, 'here': here, 'module': module, 'no_key': no_key, 'removed': removed}} | to_json }}}}"
        dest: "{out}"
        mode: "0600"
"""


def test_the_controller_makes_access_and_audits_in_its_own_process_as_the_module_does(ec2_emulator, cluster, tmp_path):
    secret = "not-in-any-result-%s" % uuid.uuid4().hex[:6]
    connection = {"provider": "ec2", "region": ec2_emulator.region, "driver_options": ec2_emulator.driver_options,
                  "credentials": {"access_key": "testing", "secret_key": secret}}
    public_key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHf2wHPeYp7WLEQ5M0vRk1y8j3N3pL0y8KxjJxv3eC1d tfdist-%s" % cluster
    playbook = tmp_path / "access.yml"
    out = tmp_path / "results.json"
    playbook.write_text(ACCESS_AND_AUDIT_HERE_AND_IN_A_MODULE.format(
        connection=json.dumps(connection), cluster=cluster, public_key=public_key, out=out))
    run = ansible_cli.run("ansible-playbook", str(playbook), "-i", "localhost,", "-vvv",
                          "-e", "ansible_python_interpreter=%s" % sys.executable,
                          env=cli_settings(ec2_emulator, ANSIBLE_INVENTORY_ENABLED="host_list"))
    assert run.returncode == 0, run.stdout[-4000:]
    module_runs = [line.split("/")[-1] for line in run.stdout.splitlines() if "Using module file" in line
                   and ("libcloud_access" in line or "libcloud_audit" in line)]
    # The audit sent to a module, and the access with no key: its required_if is the module's to name.
    assert module_runs == ["libcloud_audit.py", "libcloud_access.py"], module_runs
    results = json.loads(out.read_text())
    assert secret not in out.read_text() and secret not in run.stdout

    access = results["access"]
    assert access["changed"] is True and "key pair tfdist-%s" % cluster in access["changes"], access
    here, module = results["here"], results["module"]
    assert not here.get("failed") and here["resources"], here
    assert {key: here[key] for key in ("resources", "clusters", "report", "unchecked")} == {
        key: module[key] for key in ("resources", "clusters", "report", "unchecked")}
    assert sorted(r["description"].split(" (")[0] for r in here["resources"]) == [
        "key pair tfdist-%s" % cluster, "security group tfdist-%s" % cluster]

    no_key = results["no_key"]
    assert no_key["failed"] is True and "public_key" in no_key["msg"], no_key

    assert results["removed"]["changed"] is True
    ec2 = ec2_emulator.boto3_client()
    assert ec2.describe_key_pairs(Filters=[{"Name": "key-name", "Values": ["tfdist-%s" % cluster]}])["KeyPairs"] == []
    groups = ec2.describe_security_groups(Filters=[{"Name": "group-name", "Values": ["tfdist-%s" % cluster]}])
    assert groups["SecurityGroups"] == []
