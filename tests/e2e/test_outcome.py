"""JSON for automation: how a run ended (outcome.json, written by the outcome callback even when the run fails),
check.yml's plan.json and the audit's audit.json, each checked against its schema in docs/schemas/.

One case per outcome: bad input and a training failure on cloud=local, a cloud's refusal and a leak on the EC2
emulator (tests/emulators), whose `refusing` answers RunInstances with AWS's capacity error. Each run writes its
outcome to a file of its own (TFDIST_OUTCOME_FILE), as a pipeline would.
"""

import json
import os
import uuid

import jsonschema

from ansible_cli import REPO, run_playbook, tail
from emulators.ec2 import LIVE_STATES, cluster_instances
from processes import free_port_block

SCHEMAS = os.path.join(REPO, "docs", "schemas")
NO_CAPACITY = ("We currently do not have sufficient m5.xlarge capacity in the Availability Zone you requested "
               "(us-east-1a). Our system will be working on provisioning additional capacity.")


def valid(path, schema):
    """The JSON file at path, validated against docs/schemas/<schema>.schema.json."""
    with open(path) as handle:
        data = json.load(handle)
    with open(os.path.join(SCHEMAS, f"{schema}.schema.json")) as handle:
        jsonschema.validate(data, json.load(handle))
    return data


def run(tmp_path, playbook, *extra, env=None):
    """(the run, its outcome.json validated) of playbook with its own outcome file."""
    outcome_file = tmp_path / "outcome.json"
    result = run_playbook(playbook, *extra, env=dict(env or {}, TFDIST_OUTCOME_FILE=str(outcome_file)))
    return result, valid(outcome_file, "outcome")


def aws_settings(emulator, cluster):
    return ["cloud=aws", f"cluster_name={cluster}", "tf_ssh_from=127.0.0.1/32", f"aws_image={emulator.image_id}",
            "provision_wait=false"]


def test_bad_input_is_the_outcome_bad_input_and_creates_nothing(tmp_path, cluster_name):
    result, outcome = run(tmp_path, "playbooks/deploy.yml", f"cluster_name={cluster_name}", "tf_workers=-1")
    assert result.returncode == 2, tail(result)
    assert outcome == {"schema_version": 1, "outcome": "bad_input", "refusal": None, "playbook": "deploy.yml",
                       "message": "tf_workers: must be a whole number >= 1 (workers run the training steps), got '-1'"}
    assert not os.path.exists(os.path.join(REPO, "inventories", "clusters", f"{cluster_name}.local.yml"))
    assert not os.path.exists(os.path.join(REPO, "artifacts", cluster_name))


def test_a_training_failure_is_the_outcome_training_failed(tmp_path, cluster_name):
    script = tmp_path / "train.py"
    script.write_text("raise RuntimeError('the data is not there')\n")
    result, outcome = run(tmp_path, "playbooks/deploy.yml", f"cluster_name={cluster_name}",
                          f"tf_port_base={free_port_block(3)}", "tf_strategy=multi_worker_mirrored", "tf_workers=2",
                          f"tf_script={script}")
    assert result.returncode == 2, tail(result)
    assert outcome["outcome"] == "training_failed" and outcome["refusal"] is None, outcome
    assert "exited with code 1" in outcome["message"], outcome
    assert not os.path.exists(os.path.join(REPO, "artifacts", cluster_name, "summary.json"))  # a failed run has none


def test_the_plan_of_a_cloud_and_of_local_is_written_as_json(tmp_path, ec2_emulator, aws_cluster, cluster_name):
    result, outcome = run(tmp_path, "playbooks/check.yml", *aws_settings(ec2_emulator, aws_cluster), "tf_workers=2",
                          env=ec2_emulator.env)
    assert result.returncode == 0 and outcome["outcome"] == "success", tail(result)
    plan = valid(os.path.join(REPO, "artifacts", aws_cluster, "plan.json"), "plan")
    assert plan["cluster"] == aws_cluster and plan["provider"] == "ec2" and plan["nodes"] == []
    assert plan["roles"]["worker"]["to_create"] == [f"{aws_cluster}-worker-0", f"{aws_cluster}-worker-1"]
    assert plan["cost"]["nodes"] == len(plan["tasks"]) and plan["tasks"][0] == "chief-0"
    assert cluster_instances(ec2_emulator.boto3_client(), aws_cluster, LIVE_STATES) == {}  # check creates nothing

    result, outcome = run(tmp_path, "playbooks/check.yml", f"cluster_name={cluster_name}", "tf_workers=2", "tf_ps=1")
    assert result.returncode == 0 and outcome["outcome"] == "success", tail(result)
    plan = valid(os.path.join(REPO, "artifacts", cluster_name, "plan.json"), "plan")
    assert plan["cloud"] == "local" and plan["tasks"] == ["chief-0", "worker-0", "worker-1", "ps-0"]
    assert plan["roles"] == {} and plan["cost"] is None


def test_a_cloud_s_refusal_is_the_outcome_cloud_refused_with_its_class(tmp_path, ec2_emulator, aws_cluster):
    with ec2_emulator.refusing("RunInstances", "InsufficientInstanceCapacity", NO_CAPACITY, status=500):
        result, outcome = run(tmp_path, "playbooks/deploy.yml", *aws_settings(ec2_emulator, aws_cluster),
                              env=ec2_emulator.env)
    assert result.returncode == 2, tail(result)
    assert outcome["outcome"] == "cloud_refused" and outcome["refusal"] == "capacity", outcome
    assert outcome["message"].startswith("chief: AWS refused m5.xlarge"), outcome
    assert cluster_instances(ec2_emulator.boto3_client(), aws_cluster, LIVE_STATES) == {}


def test_an_orphan_left_by_the_audit_is_the_outcome_leak(tmp_path, ec2_emulator):
    ec2, cluster = ec2_emulator.boto3_client(), f"o{uuid.uuid4().hex[:8]}"
    # A cluster of no controller's (no owner's mark, no inventory source here): an orphan once named in audit_clusters.
    [instance] = [i["InstanceId"] for i in ec2.run_instances(
        ImageId=ec2_emulator.image_id, InstanceType="t2.micro", MinCount=1, MaxCount=1, TagSpecifications=[
            {"ResourceType": "instance", "Tags": [{"Key": key, "Value": value} for key, value in (
                ("tfdist_cluster", cluster), ("tfdist_role", "worker"), ("tfdist_index", "0"),
                ("Name", f"{cluster}-worker-0"))]}])["Instances"]]
    audit_file = os.path.join(REPO, "artifacts", "audit.json")

    result, outcome = run(tmp_path, "playbooks/audit.yml", "cloud=aws", f"audit_clusters={cluster}",
                          env=ec2_emulator.env)
    assert result.returncode == 0 and outcome["outcome"] == "leak", tail(result)
    audit = valid(audit_file, "audit")
    assert audit["outcome"] == "leak" and cluster in audit["orphans"] and not audit["orphans_removed"]
    assert [r["id"] for r in audit["resources"] if r["cluster"] == cluster and r["kind"] == "node"] == [instance]

    result, outcome = run(tmp_path, "playbooks/audit.yml", "cloud=aws", f"audit_clusters={cluster}",
                          "remove_orphans=true", env=ec2_emulator.env)
    assert result.returncode == 0 and outcome["outcome"] == "success", tail(result)
    assert valid(audit_file, "audit")["orphans_removed"]
    assert cluster_instances(ec2, cluster, LIVE_STATES) == {}


def test_a_destroy_that_leaves_something_of_the_cluster_is_the_outcome_leak(tmp_path, ec2_emulator, aws_cluster):
    ec2 = ec2_emulator.boto3_client()
    made = run_playbook("playbooks/provision.yml", *aws_settings(ec2_emulator, aws_cluster), "tf_workers=1", "tf_ps=0",
                        "tf_strategy=multi_worker_mirrored", env=ec2_emulator.env)
    assert made.returncode == 0, tail(made)
    # A disk tagged for the cluster that outlived its node: destroy leaves it and says so.
    volume = ec2.create_volume(Size=1, AvailabilityZone=f"{ec2_emulator.region}a", TagSpecifications=[
        {"ResourceType": "volume", "Tags": [{"Key": "tfdist_cluster", "Value": aws_cluster}]}])["VolumeId"]
    try:
        result, outcome = run(tmp_path, "playbooks/destroy.yml", "cloud=aws", f"cluster_name={aws_cluster}",
                              env=ec2_emulator.env)
        assert result.returncode == 2, tail(result)
        assert outcome["outcome"] == "leak" and f"volume {volume}" in outcome["message"], outcome
    finally:
        ec2.delete_volume(VolumeId=volume)
