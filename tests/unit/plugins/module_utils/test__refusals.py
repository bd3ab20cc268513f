"""A cloud's refusal classified and named with what to do (_libcloud.classify_error and explain_error, with each cloud
file's `refusal`). Each error is what libcloud's own response class of that cloud raises for the cloud's answer (its
HTTP status and body, as the cloud writes them), so libcloud's error parsing decides what the classification sees."""

import json
from types import SimpleNamespace

import pytest
from libcloud.common.azure_arm import AzureAuthJsonResponse, AzureJsonResponse
from libcloud.common.google import GoogleAuthError
from libcloud.compute.drivers.ec2 import EC2Response
from libcloud.compute.drivers.gce import GCEResponse
from libcloud.compute.drivers.openstack import OpenStack_1_1_Response

from ansible_collections.tfdist.cluster.plugins.module_utils._libcloud import classify_error, explain_error
from ansible_collections.tfdist.cluster.plugins.module_utils._provider import REFUSALS, Attempt

REASONS = {400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 409: "Conflict",
           500: "Internal Server Error", 200: "OK"}


def raised(response_cls, status, body, content_type):
    """The exception libcloud's response class raises for this answer of the cloud."""
    http = SimpleNamespace(headers={"Content-Type": content_type}, reason=REASONS[status], status_code=status,
                           request=None, iter_content=None, text=body)
    with pytest.raises(Exception) as error:
        response_cls(http, SimpleNamespace(driver=None, context={}))
    return error.value


def ec2(status, code, message):
    body = ("<Response><Errors><Error><Code>%s</Code><Message>%s</Message></Error></Errors>"
            "<RequestID>req-1</RequestID></Response>" % (code, message))
    return raised(EC2Response, status, body, "text/xml")


def gce(status, error):
    return raised(GCEResponse, status, json.dumps({"error": error}), "application/json")


def azure(status, code, message):
    return raised(AzureJsonResponse, status, json.dumps({"error": {"code": code, "message": message}}),
                  "application/json")


def openstack(status, key, message):
    return raised(OpenStack_1_1_Response, status, json.dumps({key: {"code": status, "message": message}}),
                  "application/json")


WORKER_GPU = Attempt("worker", "g4dn.xlarge", "us-east-1a", False)
SPOT_WORKER = Attempt("worker", "g4dn.xlarge", "us-east-1a", True)
VCPU_LIMIT = ("You have requested more vCPU capacity than your current vCPU limit of 0 allows for the instance bucket "
              "that the specified instance type belongs to. Please visit http://aws.amazon.com/contact-us/ec2-request "
              "to request an adjustment to this limit.")
NO_CAPACITY = ("We currently do not have sufficient g4dn.xlarge capacity in the Availability Zone you requested "
               "(us-east-1a). Our system will be working on provisioning additional capacity. You can currently get "
               "g4dn.xlarge capacity by not specifying an Availability Zone in your request or choosing us-east-1b, "
               "us-east-1c.")


def test_ec2_gpu_quota_of_a_new_account_names_the_quota_to_ask_for():
    error = ec2(400, "VcpuLimitExceeded", VCPU_LIMIT)

    assert classify_error("ec2", error, WORKER_GPU).kind == "quota"
    assert explain_error("ec2", error, WORKER_GPU) == (
        "worker: AWS refused g4dn.xlarge in us-east-1a: your account's quota for G and VT instances is 0 vCPUs "
        "(VcpuLimitExceeded); ask for a quota increase (Service Quotas \"Running On-Demand G and VT instances\") or "
        "choose another size")


@pytest.mark.parametrize("size, quota", [
    ("m5.xlarge", "Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances"),
    ("p4d.24xlarge", "Running On-Demand P instances"),
    ("inf2.xlarge", "Running On-Demand Inf instances"),
])
def test_ec2_quota_is_named_after_the_size_s_family(size, quota):
    error = ec2(400, "VcpuLimitExceeded", VCPU_LIMIT)

    message = explain_error("ec2", error, Attempt("chief", size, "us-east-1", False))

    assert '(Service Quotas "%s")' % quota in message


def test_ec2_spot_quota_names_the_spot_quota():
    error = ec2(400, "MaxSpotInstanceCountExceeded", "Max spot instance count exceeded")

    assert classify_error("ec2", error, SPOT_WORKER).kind == "quota"
    assert '(Service Quotas "All G and VT Spot Instance Requests")' in explain_error("ec2", error, SPOT_WORKER)


def test_ec2_capacity_names_the_zones_aws_suggests():
    error = ec2(500, "InsufficientInstanceCapacity", NO_CAPACITY)

    assert classify_error("ec2", error, WORKER_GPU).kind == "capacity"
    assert explain_error("ec2", error, WORKER_GPU) == (
        "worker: AWS refused g4dn.xlarge in us-east-1a: no capacity of this size there now "
        "(InsufficientInstanceCapacity); try another zone (AWS suggests us-east-1b, us-east-1c) or size, or again "
        "later")


def test_ec2_capacity_names_the_zone_aws_chose_where_the_role_names_none():
    error = ec2(500, "InsufficientInstanceCapacity", NO_CAPACITY)

    assert explain_error("ec2", error, Attempt("worker", "g4dn.xlarge", "us-east-1", False)).startswith(
        "worker: AWS refused g4dn.xlarge in us-east-1: no capacity of this size in us-east-1a now")


@pytest.mark.parametrize("code, message", [
    ("InsufficientInstanceCapacity", NO_CAPACITY),
    ("SpotMaxPriceTooLow", "Your Spot request price of 0.02 is lower than the minimum required Spot request "
                           "fulfillment price of 0.0218."),
])
def test_ec2_spot_requests_without_capacity_are_spot_capacity(code, message):
    error = ec2(400, code, message)

    assert classify_error("ec2", error, SPOT_WORKER).kind == "spot_capacity"
    assert "on-demand nodes (spot: false)" in explain_error("ec2", error, SPOT_WORKER)


@pytest.mark.parametrize("code, message", [
    ("Unsupported", "Your requested instance type (g4dn.xlarge) is not supported in your requested Availability "
                    "Zone (us-east-1e). Please retry your request by not specifying an Availability Zone or choosing "
                    "us-east-1a, us-east-1b."),
    ("InvalidParameterValue", "The instance type 'g4dn.xlarge' is not supported in this zone."),
])
def test_ec2_a_size_the_zone_does_not_offer(code, message):
    assert classify_error("ec2", ec2(400, code, message), WORKER_GPU).kind == "size_unavailable"


def test_ec2_missing_permission_is_not_refused_credentials_and_names_the_action():
    error = ec2(403, "UnauthorizedOperation",
                "You are not authorized to perform this operation. User: arn:aws:iam::123456789012:user/ci is not "
                "authorized to perform: ec2:RunInstances on resource: arn:aws:ec2:us-east-1:123456789012:instance/* "
                "because no identity-based policy allows the ec2:RunInstances action. Encoded authorization failure "
                "message: AbC")

    assert classify_error("ec2", error).kind == "permission"
    assert explain_error("ec2", error, WORKER_GPU).startswith(
        "worker: AWS refused g4dn.xlarge in us-east-1a: the credentials may not call ec2:RunInstances "
        "(UnauthorizedOperation); add ec2:RunInstances to their IAM policy")


@pytest.mark.parametrize("status, code", [(401, "AuthFailure"), (403, "InvalidClientTokenId"),
                                          (403, "SignatureDoesNotMatch")])
def test_ec2_refused_keys_are_credentials_whatever_the_role(status, code):
    error = ec2(status, code, "AWS was not able to validate the provided access credentials")

    assert classify_error("ec2", error).kind == "credentials"
    assert explain_error("ec2", error, WORKER_GPU).startswith("credentials: the ec2 provider refused them: %s" % code)


def test_an_error_no_code_explains_stays_the_cloud_s_own_words():
    error = ec2(500, "InternalError", "An internal error has occurred")

    assert classify_error("ec2", error, WORKER_GPU).kind == "unknown"
    assert explain_error("ec2", error, WORKER_GPU) == (
        "ec2 provider error: InternalError: An internal error has occurred")


def test_gce_gpu_quota_names_the_quota():
    error = gce(200, {"errors": [{"code": "QUOTA_EXCEEDED",
                                  "message": "Quota 'NVIDIA_T4_GPUS' exceeded.  Limit: 0.0 in region us-central1."}]})

    assert classify_error("gce", error).kind == "quota"
    assert explain_error("gce", error, Attempt("worker", "n1-standard-4", "us-central1-a", False)) == (
        "worker: GCE refused n1-standard-4 in us-central1-a: your project's quota NVIDIA_T4_GPUS allows 0.0 "
        "(QUOTA_EXCEEDED); ask for a quota increase (Google Cloud console, IAM & Admin > Quotas, NVIDIA_T4_GPUS) or "
        "choose another size")


@pytest.mark.parametrize("spot, kind", [(False, "capacity"), (True, "spot_capacity")])
def test_gce_zone_without_resources_is_capacity(spot, kind):
    error = gce(200, {"errors": [{"code": "ZONE_RESOURCE_POOL_EXHAUSTED",
                                  "message": "The zone 'projects/demo/zones/us-central1-a' does not have enough "
                                             "resources available to fulfill the request.  Try a different zone, or "
                                             "try again later."}]})

    assert classify_error("gce", error, Attempt("worker", "n1-standard-4", "us-central1-a", spot)).kind == kind


def test_gce_missing_permission_names_it():
    error = gce(403, {"code": 403, "message": "Required 'compute.instances.create' permission for "
                                              "'projects/demo/zones/us-central1-a/instances/demo-worker-0'",
                      "errors": [{"message": "Required 'compute.instances.create' permission for "
                                             "'projects/demo/zones/us-central1-a/instances/demo-worker-0'",
                                  "domain": "global", "reason": "forbidden"}]})

    refusal = classify_error("gce", error)
    assert refusal.kind == "permission"
    assert "compute.instances.create" in refusal.why and "compute.instances.create" in refusal.advice


def test_gce_unreadable_key_is_credentials():
    error = GoogleAuthError("Missing (or unreadable) key file: '/nope.json'")

    assert classify_error("gce", error).kind == "credentials"


def test_azure_family_quota_names_it():
    error = azure(409, "OperationNotAllowed",
                  "Operation could not be completed as it results in exceeding approved standardNCFamily Cores quota. "
                  "Additional details - Deployment Model: Resource Manager, Location: eastus, Current Limit: 0, "
                  "Current Usage: 0, Additional Required: 6, (Minimum) New Limit Required: 6.")

    assert classify_error("azure_arm", error).kind == "quota"
    assert explain_error("azure_arm", error, Attempt("worker", "Standard_NC6s_v3", "eastus", False)).startswith(
        "worker: Azure refused Standard_NC6s_v3 in eastus: the standardNCFamily vCPU quota of your subscription is "
        "used up (OperationNotAllowed); ask for a quota increase")


@pytest.mark.parametrize("status, code, kind", [
    (409, "SkuNotAvailable", "size_unavailable"),
    (409, "AllocationFailed", "capacity"),
    (403, "AuthorizationFailed", "permission"),
])
def test_azure_codes(status, code, kind):
    message = ("The client 'ci' with object id 'x' does not have authorization to perform action "
               "'Microsoft.Compute/virtualMachines/write' over scope '/subscriptions/s'")
    assert classify_error("azure_arm", azure(status, code, message)).kind == kind


def test_azure_wrong_secret_is_credentials():
    error = raised(AzureAuthJsonResponse, 400, json.dumps({
        "error": "invalid_client", "error_description": "AADSTS7000215: Invalid client secret provided."}),
        "application/json")

    assert classify_error("azure_arm", error).kind == "credentials"


def test_openstack_quota_403_is_quota_not_permission():
    error = openstack(403, "forbidden", "Quota exceeded for cores: Requested 8, but already used 16 of 20 cores")

    assert classify_error("openstack", error).kind == "quota"
    assert explain_error("openstack", error, Attempt("ps", "m1.large", "RegionOne", False)) == (
        "ps: OpenStack refused m1.large in RegionOne: your project's quota for cores is used up: Requested 8, but "
        "already used 16 of 20 cores; ask your cloud's operators for a quota increase or choose a smaller flavor")


def test_openstack_policy_refusal_names_the_rule():
    error = openstack(403, "forbidden", "Policy doesn't allow os_compute_api:servers:create to be performed.")

    refusal = classify_error("openstack", error)
    assert refusal.kind == "permission"
    assert "os_compute_api:servers:create" in refusal.why


def test_every_class_is_one_of_the_stable_names():
    errors = [("ec2", ec2(400, "VcpuLimitExceeded", VCPU_LIMIT)), ("gce", GoogleAuthError("bad")),
              ("openstack", openstack(500, "computeFault", "boom")), ("docker", RuntimeError("boom"))]

    assert {classify_error(provider, error).kind for provider, error in errors} <= set(REFUSALS)
