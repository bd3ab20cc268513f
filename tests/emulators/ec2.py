"""An emulated EC2 API on loopback: moto's server behind a small proxy that fixes and counts its answers.

The proxy corrects the three places where moto and libcloud's EC2 driver disagree, and nothing else:

- Answers: moto writes ``xmlns="http://ec2.amazonaws.com/doc/2016-11-15"``; real AWS, and so libcloud, use the
  same URL with a trailing slash, and libcloud finds nothing in an answer under the other namespace. The proxy
  rewrites that one string (and the Content-Length).
- Errors: AWS's ``<Error>`` holds ``<Code>`` and ``<Message>`` only; moto adds ``<Type>``, which breaks
  libcloud's error parser (a refused key would surface as a ValueError, not InvalidCredsError). Dropped.
- Requests: libcloud numbers some lists from 0 (``ex_create_tags``/``ex_delete_tags`` send ``ResourceId.0``,
  ``Tag.0.Key``), which AWS accepts; moto parses lists from 1 and answers MissingParameter. The proxy
  renumbers a list that has an item 0 from 1.

It also counts the requests by EC2 ``Action``, so a test or the bench can check how many API calls
something made, and keeps their parameters (``requests(action)``): what was asked of moto, where moto ignores it.
And it answers a chosen request with an error of EC2's instead of moto (``refusing(...)``), as a cloud that has no
capacity or quota left would: what moto never says.

Plain Python (no pytest), so the bench imports it too::

    with ec2_emulator() as ec2:
        driver = get_driver('ec2', credentials=..., driver_options=ec2.driver_options)
        ansible_cli.run_playbook(..., env=ec2.env)
        ec2.calls()['DescribeInstances']

Instance types moto knows include t2.micro, t3.large and g4dn.xlarge; ``image_id`` is one of moto's
default AMIs in us-east-1. Nothing on loopback answers SSH for the emulated instances: use wait=false.
"""

from __future__ import annotations

import collections
import contextlib
import http.client
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid
import xml.sax.saxutils
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import yaml  # ansible-core depends on PyYAML

from ansible_collections.tfdist.cluster.tests import ansible_cli  # by the collection's name, as the bench imports it

REGION = "us-east-1"
MOTO_NAMESPACE = b'xmlns="http://ec2.amazonaws.com/doc/2016-11-15"'
AWS_NAMESPACE = b'xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"'
# Not forwarded by a proxy (RFC 9110 7.6.1), plus Content-Length, which is recomputed after the rewrite.
HOP_HEADERS = frozenset(("connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer",
                         "upgrade", "content-length"))
START_TIMEOUT = 20


# A login key for nodes made on the emulator (they answer no SSH: only its text goes into their user-data).
CLUSTER_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIG4rT3vTt99Ox5kndS4HmgTrKBT8SKzhK4rhGkEVGlCI tfdist-test"

# What EC2 answers when a zone has no capacity of a size, and when the account's vCPU quota is spent (the refusals the
# tests inject with `refusing`).
NO_CAPACITY = ("We currently do not have sufficient g4dn.xlarge capacity in the Availability Zone you requested "
               "(us-east-1a). Our system will be working on provisioning additional capacity. You can currently get "
               "g4dn.xlarge capacity by not specifying an Availability Zone in your request or choosing us-east-1b, "
               "us-east-1c.")
VCPU_LIMIT = ("You have requested more vCPU capacity than your current vCPU limit of 0 allows for the instance bucket "
              "that the specified instance type belongs to. Please visit http://aws.amazon.com/contact-us/ec2-request "
              "to request an adjustment to this limit.")

# Instance states of a node that still exists (and may still cost).
LIVE_STATES = ("pending", "running", "stopping", "stopped")


def instances_of(ec2, cluster, states=("pending", "running")):
    """A cluster's instances in `states`, each with its tags as a `tags` dict and its ReservationId (one per
    RunInstances), read with boto3 (duplicates kept)."""
    found = []
    pages = ec2.get_paginator("describe_instances").paginate(Filters=[
        {"Name": "tag:tfdist_cluster", "Values": [cluster]},
        {"Name": "instance-state-name", "Values": list(states)}])
    for page in pages:
        for reservation in page["Reservations"]:
            for instance in reservation["Instances"]:
                found.append(dict(instance, tags={tag["Key"]: tag["Value"] for tag in instance.get("Tags", [])},
                                  ReservationId=reservation["ReservationId"]))
    return found


def node_name(instance):
    """The name tfdist gives an instance of instances_of(): {cluster}-{role}-{index}, its index the tfdist_index tag,
    or, on the instances one RunInstances made for a run of indexes, the run's tfdist_first_index plus the instance's
    launch index (those share one Name tag); the Name tag (or the id) of an instance with neither."""
    tags = instance["tags"]
    index = tags.get("tfdist_index")
    if index is None and "tfdist_first_index" in tags:
        index = int(tags["tfdist_first_index"]) + instance["AmiLaunchIndex"]
    if str(index).isdigit() and "tfdist_role" in tags:
        return "%s-%s-%s" % (tags["tfdist_cluster"], tags["tfdist_role"], index)
    return tags.get("Name", instance["InstanceId"])


def cluster_instances(ec2, cluster, states=("pending", "running")):
    """{node_name(): instance} of instances_of()."""
    return {node_name(i): i for i in instances_of(ec2, cluster, states)}


def owned(ec2, cluster):
    """{owner's id: {'instances': [ids], 'groups': {name: [SSH CIDRs]}, 'keys': [names]}} of a cluster's resources."""
    found = {}
    for instance in instances_of(ec2, cluster, LIVE_STATES):
        owner = instance["tags"].get("tfdist_owner")
        found.setdefault(owner, {}).setdefault("instances", []).append(instance["InstanceId"])
    of_cluster = [{"Name": "tag:tfdist_cluster", "Values": [cluster]}]
    for group in ec2.describe_security_groups(Filters=of_cluster)["SecurityGroups"]:
        owner = {t["Key"]: t["Value"] for t in group.get("Tags", [])}.get("tfdist_owner")
        found.setdefault(owner, {}).setdefault("groups", {})[group["GroupName"]] = sorted(
            ip["CidrIp"] for rule in group["IpPermissions"] if rule["FromPort"] == 22 for ip in rule["IpRanges"])
    for key in ec2.describe_key_pairs(Filters=of_cluster)["KeyPairs"]:
        owner = {t["Key"]: t["Value"] for t in key.get("Tags", [])}.get("tfdist_owner")
        found.setdefault(owner, {}).setdefault("keys", []).append(key["KeyName"])
    return found


def terminate_cluster(ec2, cluster):
    """Terminate what is left of a cluster's instances (test clean-up, with boto3, not the code under test)."""
    ids = [instance["InstanceId"] for instance in instances_of(ec2, cluster, LIVE_STATES)]
    if ids:
        ec2.terminate_instances(InstanceIds=ids)


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def renumber_lists(pairs):
    """Query parameters with every list that starts at item 0 (`Tag.0.Key`) renumbered from 1 (`Tag.1.Key`)."""
    split = [(key.split("."), value) for key, value in pairs]
    zero_based = {tuple(parts[:i]) for parts, value in split for i, part in enumerate(parts) if part == "0"}
    if not zero_based:
        return pairs
    fixed = []
    for parts, value in split:
        new = [str(int(part) + 1) if part.isdigit() and tuple(parts[:i]) in zero_based else part
               for i, part in enumerate(parts)]
        fixed.append((".".join(new), value))
    return fixed


def fix_request(path, body, form):
    """(path, body) with libcloud's 0-based lists renumbered for moto, in the query string and a form body."""
    url = urllib.parse.urlsplit(path)
    if url.query:
        pairs = urllib.parse.parse_qsl(url.query, keep_blank_values=True)
        fixed = renumber_lists(pairs)
        if fixed is not pairs:
            path = urllib.parse.urlunsplit(url._replace(query=urllib.parse.urlencode(fixed)))
    if body and form:
        pairs = urllib.parse.parse_qsl(body.decode("utf-8"), keep_blank_values=True)
        fixed = renumber_lists(pairs)
        if fixed is not pairs:
            body = urllib.parse.urlencode(fixed).encode("utf-8")
    return path, body


def ec2_params(path, body, content_type):
    """The parameters of a request, from its query string and form body: {name: first value}."""
    params = urllib.parse.parse_qs(urllib.parse.urlsplit(path).query)
    if body and "x-www-form-urlencoded" in (content_type or ""):
        params.update(urllib.parse.parse_qs(body.decode("utf-8", "replace")))
    return {name: values[0] for name, values in params.items()}


def fix_answer(data, status):
    """moto's answer as AWS writes it: the namespace with its slash; in errors, only Code and Message.

    AWS's EC2 <Error> holds exactly <Code> and <Message>; moto adds <Type>, and libcloud's error parser
    (which unpacks the two) then fails instead of raising InvalidCredsError and the like.
    """
    data = data.replace(MOTO_NAMESPACE, AWS_NAMESPACE)
    if status >= 400:
        data = re.sub(rb"<Type>[^<]*</Type>", b"", data)
    return data


class _ProxyHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive towards the client, as libcloud and boto3 reuse connections

    def log_message(self, *args):  # quiet: the tests and the bench print what matters
        pass

    def _upstream(self):
        # One upstream connection per client connection (each is served by its own thread).
        if getattr(self, "_conn", None) is None:
            self._conn = http.client.HTTPConnection("127.0.0.1", self.server.emulator.moto_port, timeout=120)
        return self._conn

    def _answer(self, status, data):
        self.send_response(status)
        self.send_header("Content-Type", "text/xml;charset=UTF-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _forward(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        params = ec2_params(self.path, body, self.headers.get("Content-Type"))
        if params.get("Action"):
            self.server.emulator._count(params)
            refusal = self.server.emulator._refusal(params)
            if refusal:
                self._answer(refusal[0], refusal[1])
                return
        path, body = fix_request(self.path, body, "x-www-form-urlencoded" in (self.headers.get("Content-Type") or ""))
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_HEADERS}
        if body or self.command in ("POST", "PUT"):
            headers["Content-Length"] = str(len(body))
        for attempt in (1, 2):
            conn = self._upstream()
            try:
                conn.request(self.command, path, body=body, headers=headers)
                response = conn.getresponse()
                data = response.read()
                break
            except (http.client.HTTPException, OSError):
                conn.close()  # moto closed a kept-alive connection: reconnect once
                self._conn = None
                if attempt == 2:
                    self.send_error(502, "moto server did not answer")
                    return
        data = fix_answer(data, response.status)
        self.send_response(response.status, response.reason)
        for key, value in response.getheaders():
            if key.lower() not in HOP_HEADERS and key.lower() not in ("server", "date"):  # send_response set them
                self.send_header(key, value)
        # A HEAD answer has no body: keep moto's length of the object (S3 HeadObject reports sizes this way).
        length = response.getheader("Content-Length", "0") if self.command == "HEAD" else str(len(data))
        self.send_header("Content-Length", length)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = _forward


class Ec2Emulator:
    """moto's server in a subprocess, and in front of it a rewriting, counting proxy in a thread."""

    def __init__(self, region=REGION, check_credentials=False):
        self.region = region
        # moto checks access keys against its IAM users once told to (none exist: every key is refused).
        self.check_credentials = check_credentials
        self.moto_port = None
        self.port = None
        self.image_id = None
        self._process = None
        self._log = None
        self._proxy = None
        self._calls = collections.Counter()
        self._requests = []
        self._refusals = []
        self._lock = threading.Lock()

    # Addresses and settings for the clients.
    @property
    def endpoint(self):
        return "http://127.0.0.1:%d" % self.port

    @property
    def moto_endpoint(self):
        """moto itself, without the proxy: its EC2 answers use the namespace libcloud does not read."""
        return "http://127.0.0.1:%d" % self.moto_port

    @property
    def driver_options(self):
        return {"host": "127.0.0.1", "port": self.port, "secure": False, "signature_version": "4"}

    @property
    def env(self):
        return {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                "AWS_DEFAULT_REGION": self.region, "AWS_ENDPOINT_URL": self.endpoint}

    def boto3_client(self, service="ec2", direct=False):
        """A boto3 client of the emulator (through the proxy, or straight to moto with direct=True)."""
        import boto3  # moto[server] brings it; imported late so the module loads without it
        return boto3.client(service, region_name=self.region, aws_access_key_id="testing",
                            aws_secret_access_key="testing",
                            endpoint_url=self.moto_endpoint if direct else self.endpoint)

    # API call counts (EC2 requests that went through the proxy), and the requests themselves.
    def _count(self, params):
        with self._lock:
            self._calls[params["Action"]] += 1
            self._requests.append(params)

    def requests(self, action):
        """The parameters ({name: value}, as sent, before the proxy renumbers lists) of each `action` request since
        the start or reset_calls(), in order: what moto does not keep (tags it ignores) can be read here."""
        with self._lock:
            return [dict(params) for params in self._requests if params["Action"] == action]

    def calls(self):
        """A Counter of the EC2 actions requested through the proxy since the start or reset_calls()."""
        with self._lock:
            return collections.Counter(self._calls)

    def reset_calls(self):
        with self._lock:
            self._calls.clear()
            self._requests.clear()

    # Refusals: EC2's errors in place of moto's answer.
    @contextlib.contextmanager
    def refusing(self, action, code, message, status=400, when=None):
        """Within the block, answer each `action` request whose parameters include `when` ({name: value}, e.g.
        {"InstanceType": "g4dn.xlarge"}) with EC2's error `code` and `message` and HTTP `status`, as AWS writes it;
        moto never sees it. Counted like any other request."""
        body = ('<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error><Code>%s</Code><Message>%s</Message>'
                '</Error></Errors><RequestID>%s</RequestID></Response>'
                % (code, xml.sax.saxutils.escape(message), uuid.uuid4())).encode("utf-8")
        refusal = (action, dict(when or {}), status, body)
        with self._lock:
            self._refusals.append(refusal)
        try:
            yield
        finally:
            with self._lock:
                self._refusals.remove(refusal)

    def _refusal(self, params):
        """(status, body) of the refusal that answers this request, or None: moto answers it."""
        with self._lock:
            for action, when, status, body in self._refusals:
                if params["Action"] == action and all(params.get(k) == v for k, v in when.items()):
                    return status, body
        return None

    # Life cycle.
    def start(self):
        self.moto_port = free_port()
        self._log = tempfile.TemporaryFile(prefix="moto-")
        env = dict(os.environ, AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing",
                   AWS_DEFAULT_REGION=self.region)
        if self.check_credentials:
            env["INITIAL_NO_AUTH_ACTION_COUNT"] = "0"
        self._process = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1",
                                          "-p", str(self.moto_port)],
                                         stdout=self._log, stderr=subprocess.STDOUT, env=env)
        try:
            self._wait_for_moto()
            self._proxy = ThreadingHTTPServer(("127.0.0.1", 0), _ProxyHandler)
            self._proxy.daemon_threads = True
            self._proxy.emulator = self
            self.port = self._proxy.server_address[1]
            threading.Thread(target=self._proxy.serve_forever, name="ec2-emulator-proxy", daemon=True).start()
            self.image_id = None if self.check_credentials else self._pick_image()
        except BaseException:
            self.stop()
            raise
        self.reset_calls()
        return self

    def _moto_log(self):
        self._log.seek(0)
        return self._log.read().decode("utf-8", "replace")[-4000:]

    def _wait_for_moto(self):
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if self._process.poll() is not None:
                raise RuntimeError("moto server exited with %s:\n%s" % (self._process.returncode, self._moto_log()))
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.moto_port, timeout=2)
                conn.request("POST", "/moto-api/reset")
                if conn.getresponse().status == 200:
                    conn.close()
                    return
                conn.close()
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("moto server did not answer on port %d within %d s:\n%s"
                                   % (self.moto_port, START_TIMEOUT, self._moto_log()))
            time.sleep(0.2)

    def _pick_image(self):
        """A default x86_64 AMI of moto in the region (the same one on every start: moto ships a fixed list)."""
        images = self.boto3_client().describe_images(
            Owners=["amazon"], Filters=[{"Name": "architecture", "Values": ["x86_64"]}])["Images"]
        if not images:
            raise RuntimeError("moto has no default x86_64 AMI in %s" % self.region)
        return min(image["ImageId"] for image in images)

    def reset(self):
        """Forget every instance, tag and counted call (moto's POST /moto-api/reset); default AMIs stay."""
        conn = http.client.HTTPConnection("127.0.0.1", self.moto_port, timeout=30)
        try:
            conn.request("POST", "/moto-api/reset")
            response = conn.getresponse()
            response.read()
            if response.status != 200:
                raise RuntimeError("moto reset answered %d" % response.status)
        finally:
            conn.close()
        self.reset_calls()

    def stop(self):
        if self._proxy is not None:
            self._proxy.shutdown()
            self._proxy.server_close()
            self._proxy = None
        if self._process is not None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
            self._process = None
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


@contextlib.contextmanager
def ec2_emulator(region=REGION, check_credentials=False):
    """A started Ec2Emulator, stopped on exit."""
    emulator = Ec2Emulator(region, check_credentials)
    emulator.start()
    try:
        yield emulator
    finally:
        emulator.stop()


# Driving the collection against the emulator the way a user does: the ansible CLIs through tests/ansible_cli.py.
def cli_settings(emulator, **extra):
    """What the ansible CLIs get on top of ansible_cli's environment: the emulator's AWS variables, JSON results."""
    return dict(emulator.env, ANSIBLE_CALLBACK_RESULT_FORMAT="json", **extra)


def ansible_env(emulator, **extra):
    """The whole environment of an ansible CLI run against the emulator (for callers of subprocess)."""
    return ansible_cli.environment(cli_settings(emulator, **extra))


def run_libcloud_node(emulator, args, check=False, timeout=600):
    """`ansible localhost -m tfdist.cluster.libcloud_node -a JSON` on EC2 at the emulator.

    Returns (CompletedProcess, the module's result dict or None when no result could be read).
    """
    args = dict({"provider": "ec2", "region": emulator.region, "driver_options": emulator.driver_options}, **args)
    cli_args = ["localhost", "-i", "localhost,", "-c", "local", "-e", "ansible_python_interpreter=%s" % sys.executable,
                "-m", "tfdist.cluster.libcloud_node", "-a", json.dumps(args)]
    if check:
        cli_args.append("--check")
    # Only `localhost,` as inventory (the repo's default inventory may list clusters of other clouds).
    run = ansible_cli.run("ansible", *cli_args, env=cli_settings(emulator, ANSIBLE_INVENTORY_ENABLED="host_list"),
                          timeout=timeout)
    try:
        result = json.loads(run.stdout.split(" => ", 1)[1]) if " => " in run.stdout else None  # "localhost | CHANGED => {...}"
    except ValueError:
        result = None
    return run, result


def run_inventory(emulator, config, timeout=600):
    """`ansible-inventory -i CONFIG --list`; returns (CompletedProcess, the parsed inventory or None)."""
    run = ansible_cli.run_inventory("-i", config, "--list", env=cli_settings(emulator), timeout=timeout)
    try:
        return run, json.loads(run.stdout) if run.returncode == 0 else None
    except ValueError:
        return run, None


def inventory_config(emulator, path, clusters=(), **options):
    """Write a tfdist.cluster.libcloud inventory source (path must end in .libcloud.yml) for the emulator."""
    config = {"plugin": "tfdist.cluster.libcloud", "provider": "ec2", "region": emulator.region,
              "driver_options": emulator.driver_options, "clusters": list(clusters)}
    config.update(options)
    with open(path, "w") as handle:
        yaml.safe_dump(config, handle, sort_keys=False)
    return path
