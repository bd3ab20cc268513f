"""libcloud_audit on EC2 with credentials whose policy lacks ec2:DescribeNetworkInterfaces: the audit still lists the
key pairs and security groups and names the permission missing (unchecked), where any other error fails it. The
module runs libcloud's own EC2 driver over HTTP against a small EC2 endpoint in the test, which answers as EC2 does
(XML, and its errors with their HTTP status), so libcloud's own error parsing decides what the module sees."""

import http.server
import json
import threading
import urllib.parse

import pytest
from ansible.module_utils.testing import patch_module_args
from libcloud.compute.drivers.ec2 import NAMESPACE as EC2_NAMESPACE

from ansible_collections.tfdist.cluster.plugins.modules import libcloud_audit

KEYS = {"access_key": "AKIDEXAMPLE", "secret_key": "secret"}
TAGS = "<tagSet><item><key>tfdist_cluster</key><value>demo</value></item></tagSet>"
# What this account holds: cluster demo's key pair and security group, nothing else.
ANSWERS = {
    "DescribeInstances": "<reservationSet/>",
    "DescribeVolumes": "<volumeSet/>",
    "DescribeNetworkInterfaces": "<networkInterfaceSet/>",
    "DescribeKeyPairs": "<keySet><item><keyName>tfdist-demo</keyName><keyPairId>key-0123</keyPairId>%s</item>"
                        "</keySet>" % TAGS,
    "DescribeSecurityGroups": "<securityGroupInfo><item><ownerId>123456789012</ownerId><groupId>sg-0123</groupId>"
                              "<groupName>tfdist-demo</groupName><groupDescription>tfdist</groupDescription>"
                              "<ipPermissions/><ipPermissionsEgress/>%s</item></securityGroupInfo>" % TAGS,
    "DescribeImages": "<imagesSet/>",
}
NOT_AUTHORIZED = "You are not authorized to perform this operation."


class Ec2Endpoint(http.server.BaseHTTPRequestHandler):
    """EC2's query API for the calls the audit makes; `refusals` maps an action to (HTTP status, error code)."""

    refusals = {}

    def do_GET(self):
        self.answer(urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query))

    def do_POST(self):
        self.answer(urllib.parse.parse_qs(self.rfile.read(int(self.headers["Content-Length"] or 0)).decode()))

    def answer(self, params):
        action = params["Action"][0]
        if action in self.refusals:
            status, code = self.refusals[action]
            body = ("<Response><Errors><Error><Code>%s</Code><Message>%s</Message></Error></Errors>"
                    "<RequestID>req-1</RequestID></Response>" % (code, NOT_AUTHORIZED))
        else:
            answer = ANSWERS[action]
            status, body = 200, '<%sResponse xmlns="%s">%s</%sResponse>' % (action, EC2_NAMESPACE, answer, action)
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/xml")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def audit(capsys, monkeypatch):
    """Runs the module against the endpoint with these refusals; returns its result."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Ec2Endpoint)
    threading.Thread(target=server.serve_forever, daemon=True).start()

    def run_module(refusals):
        monkeypatch.setattr(Ec2Endpoint, "refusals", refusals)
        args = {"provider": "ec2", "region": "us-east-1", "credentials": KEYS, "known_clusters": ["demo"],
                "driver_options": {"host": "127.0.0.1", "port": server.server_address[1], "secure": False,
                                   "signature_version": "4"}}
        with patch_module_args(args), pytest.raises(SystemExit):
            libcloud_audit.main()
        return json.loads(capsys.readouterr().out)

    yield run_module
    server.shutdown()
    server.server_close()


def test_every_listing_allowed_leaves_nothing_unchecked(audit):
    result = audit({})

    assert [r["description"] for r in result["resources"]] == [
        "key pair tfdist-demo (key-0123)", "security group tfdist-demo (sg-0123)"]
    assert result["unchecked"] == []


@pytest.mark.parametrize("code", ["UnauthorizedOperation", "AccessDenied"])
def test_interfaces_the_policy_may_not_list_are_named_unchecked_and_the_audit_goes_on(audit, code):
    result = audit({"DescribeNetworkInterfaces": (403, code)})

    assert not result.get("failed"), result.get("msg")
    assert [r["description"] for r in result["resources"]] == [
        "key pair tfdist-demo (key-0123)", "security group tfdist-demo (sg-0123)"]
    assert result["report"] == [
        "demo (inventory source on this controller): key pair tfdist-demo (key-0123), security group tfdist-demo "
        "(sg-0123)"]
    assert result["unchecked"] == [
        "network interfaces: the credentials may not list them (permission ec2:DescribeNetworkInterfaces missing): "
        "%s: %s" % (code, NOT_AUTHORIZED)]


@pytest.mark.parametrize("status, code, message", [
    (401, "AuthFailure", "credentials: the ec2 provider refused them: AuthFailure: "),
    (500, "InternalError", "ec2 provider error: InternalError: "),
])
def test_any_other_error_listing_the_interfaces_fails_the_audit(audit, status, code, message):
    result = audit({"DescribeNetworkInterfaces": (status, code)})

    assert result["failed"]
    assert result["msg"].startswith(message)
