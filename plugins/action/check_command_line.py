# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""The rules of deploy's command line, in the order a user would fix them: one action on the controller.

Some twenty assert tasks cost the controller a round each (about a tenth of a second apiece, most of them
only to be skipped) before anything was created. Here they are plain functions: the first rule broken stops
the play with the message that names its field, and nothing is created. The rules that need the cluster
model or the storage policy call them (module_utils.tfdist._cluster.count_error, the storage_plan's errors).
"""

from __future__ import annotations

import ipaddress
import os
import re

from ansible.module_utils.parsing.convert_bool import BOOLEANS, boolean
from ansible.plugins.action import ActionBase

from ansible_collections.tfdist.cluster.plugins.module_utils._access import parse_ports, port_text
from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist._cluster import CHIEF_NAMES, count_error
from ansible_collections.tfdist.cluster.plugins.module_utils._liveness import parse_duration
from ansible_collections.tfdist.cluster.plugins.module_utils._owner import public_key
from ansible_collections.tfdist.cluster.plugins.module_utils._provider import TfdistCloudError
from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist._storage import HDFS_PORTS
from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist.train.cli import STRATEGIES

# The settings the rules read: the play's variables of these names (the command line's, group_vars/all.yml), unless
# the task gives a value for one (as tf_ssh_from: the CIDRs split as the firewall gets them).
SETTINGS = ("cloud", "tf_chief", "tf_workers", "tf_ps", "tf_evaluators", "tf_train_steps", "tf_batch_size",
            "tf_port_base", "tf_tensorboard_port", "tf_max_restarts", "tf_chief_name", "tf_strategy", "tf_spot",
            "tf_restart", "tf_idle_minutes", "tf_deadline", "tf_budget", "tf_stall_minutes", "tf_worker_loss", "tf_script",
            "tf_script_interface", "tf_hdfs", "tf_stage_data", "tf_data", "tf_tensorboard", "tf_ssh_from",
            "tf_ssh_from_any", "tf_hdfs_ports", "teardown", "image", "tf_keras", "tf_env",
            "tf_ssh_key")
ARGUMENT_SPEC = {
    "settings": {"type": "dict", "default": {}, "options": {name: {"type": "raw"} for name in SETTINGS}},
    "radl": {"type": "dict", "default": {}},
    "radl_path": {"type": "str", "default": ""},
    "storage": {"type": "dict", "required": True},
    "script_path": {"type": "str", "default": ""},
    "ssh_key_path": {"type": "str", "default": ""},
    "public_ports": {"type": "list", "elements": "raw", "default": []},
}

WHOLE_NUMBER = re.compile(r"^-?[0-9]+$")
MINUTES = re.compile(r"^[0-9]*[.]?[0-9]+$")
DOLLARS = MINUTES  # the same shape: 12, 7.50, .5

# What the command line may say against a RADL file: (field, the RADL's key, where the file says it).
RADL_FIELDS = (
    ("cloud", "cloud", "its image URLs"),
    ("tf_chief", "chief", "its chief system"),
    ("tf_workers", "workers", "deploy worker"),
    ("tf_ps", "ps", "deploy ps"),
    ("tf_evaluators", "evaluators", "deploy evaluator"),
)

# The switches, each read with Ansible's bool filter (tf_spot | bool): a word it does not know would read as false.
FLAGS = (
    ("tf_spot", "spot or preemptible nodes where the cloud has them"),
    ("tf_hdfs", "HDFS on the cluster"),
    ("tf_tensorboard", "TensorBoard on the leader"),
    ("tf_keras", "tf-keras on the nodes, tf.keras is Keras 2"),
    ("teardown", "remove the cluster once the model is kept"),
    ("tf_ssh_from_any", "tf_ssh_from may be wider than a /16 (IPv6: a /48)"),
)

# The widest network tf_ssh_from lets in unless tf_ssh_from_any says so, by IP version: a /16 is a campus, a /48 a site.
WIDEST_SSH_FROM = {4: 16, 6: 48}


def text(value):
    """A value as Jinja's `string` filter shows it (what the command line and the messages say)."""
    if isinstance(value, bool):
        return str(value)
    return "" if value is None else str(value)


def radl_errors(s, radl, radl_path):
    for field, key, where in RADL_FIELDS:
        said = radl.get(key)
        if said not in (None, "") and text(s[field]) != text(said):
            yield ("%s=%s contradicts %s, which says %s (%s). Change the file, or leave %s off the command line."
                   % (field, text(s[field]), radl_path, text(said), where, field))
    if s["tf_strategy"] == "parameter_server" and not whole(radl.get("ps")):
        yield ("radl: %s deploys no ps system, and tf_strategy=parameter_server needs one. "
               "Add `deploy ps 1`, or use -e tf_strategy=multi_worker_mirrored." % radl_path)


def whole(value):
    """Jinja's `int` filter: the whole number, 0 when there is none."""
    try:
        return int(text(value))
    except ValueError:
        return 0


def count_errors(s):
    ps_job = s["tf_strategy"] == "parameter_server"
    counts = (
        ("tf_chief", 0, "1, or 0 for a classic cluster led by worker 0"),
        ("tf_workers", 1 if ps_job else 0, "workers run the training steps"),
        ("tf_ps", 1 if ps_job else 0, "parameter servers hold the variables"),
        ("tf_evaluators", 0, "side-car evaluators"),
        ("tf_train_steps", 1, "total training steps"),
        ("tf_batch_size", 1, "examples per step"),
        ("tf_port_base", 1024, "first TF port"),
        ("tf_tensorboard_port", 1024, "TensorBoard's port on the chief"),
        ("tf_max_restarts", 0, "restarts before tf_restart=on_failure gives up"),
    )
    for field, least, why in counts:
        value = text(s[field])
        if not WHOLE_NUMBER.match(value) or int(value) < least:
            yield "%s: must be a whole number >= %d (%s), got '%s'" % (field, least, why, value)


def choice_errors(s):
    if s["tf_chief_name"] not in CHIEF_NAMES:
        yield "tf_chief_name: must be chief or master (Estimator-era scripts), got '%s'" % text(s["tf_chief_name"])
    if s["tf_strategy"] not in STRATEGIES:
        yield "tf_strategy: must be %s, got '%s'" % (" or ".join(STRATEGIES), text(s["tf_strategy"]))
    for field, why in FLAGS:
        if text(s[field]).lower() not in BOOLEANS:
            yield "%s: must be true or false (%s), got '%s'" % (field, why, text(s[field]))
    if s["tf_restart"] not in ("never", "on_failure"):
        yield ("tf_restart: must be never or on_failure (replace what was lost and resume), got '%s'"
               % text(s["tf_restart"]))
    idle = text(s["tf_idle_minutes"])
    if not MINUTES.match(idle) or 0 < float(idle) < 1:
        yield ("tf_idle_minutes: must be 0 (the idle guard off) or a number of minutes >= 1 (a node idle for less "
               "may power off between two steps of a deploy), got '%s'" % idle)
    if not MINUTES.match(text(s["tf_stall_minutes"])):
        yield ("tf_stall_minutes: must be a number of minutes >= 0 (a job with no step for this long is lost; 0 never "
               "calls it stalled), got '%s'" % text(s["tf_stall_minutes"]))
    why = deadline_error(text(s["tf_deadline"]))
    if why:
        yield "tf_deadline: %s" % why
    if not budget_ok(text(s["tf_budget"])):
        yield ("tf_budget: must be a number of US dollars the run may cost, more than 0 (empty: no budget), got '%s'"
               % text(s["tf_budget"]))
    if s["tf_worker_loss"] not in ("fail", "tolerate"):
        yield "tf_worker_loss: must be fail or tolerate, got '%s'" % text(s["tf_worker_loss"])
    if s["image"] not in ("stock", "baked"):
        yield ("image: must be stock (the cloud profile's images) or baked (those playbooks/image.yml baked), got '%s'"
               % text(s["image"]))
    for cidr in s["tf_ssh_from"]:  # the list of CIDRs the firewall gets (provision_ssh_from)
        why = cidr_error(text(cidr))
        if why:
            yield ("tf_ssh_from: '%s' is not a network the firewall can let in (%s); give ADDRESS/BITS, "
                   "comma-separated, e.g. 203.0.113.7/32" % (cidr, why))
        elif too_wide(text(cidr)) and not boolean(s["tf_ssh_from_any"], strict=False):
            yield ("tf_ssh_from: '%s' is wider than a /%d: it lets that much of the internet reach the nodes' SSH and "
                   "public ports (TensorBoard, the RADL's outports). Give the addresses that need it (your own: /32), "
                   "or add -e tf_ssh_from_any=true if you mean it"
                   % (cidr, WIDEST_SSH_FROM[ipaddress.ip_network(text(cidr)).version]))
    why = env_error(s["tf_env"])
    if why:
        yield ("tf_env: must be a mapping of environment variable names to values, e.g. -e '{\"tf_env\": "
               "{\"AWS_PROFILE\": \"ml\"}}', got %r (%s)" % (s["tf_env"], why))
    why = ports_error(s["tf_hdfs_ports"])
    if why:
        yield ("tf_hdfs_ports: must be a list of port numbers (1-65535), e.g. -e '{\"tf_hdfs_ports\": "
               "%s}', got %r (%s)" % (sorted(HDFS_PORTS.values()), s["tf_hdfs_ports"], why))
    if s["tf_strategy"] != "parameter_server" and whole(s["tf_ps"]) != 0:
        yield ("tf_ps: multi_worker_mirrored uses no parameter servers; leave tf_ps unset or set it to 0 (got %s)"
               % text(s["tf_ps"]))


ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def env_error(env):
    """Why tf_env cannot be every TF task's environment, '' when it can."""
    if not isinstance(env, dict):
        return "not a mapping"
    for name, value in env.items():
        if not ENV_NAME.match(str(name)):
            return "%r is not a variable name" % name
        if isinstance(value, (dict, list)) or value is None:
            return "the value of %s is not a string" % name
    return ""


def ports_error(ports):
    """Why tf_hdfs_ports cannot be opened between the nodes, '' when it can: the firewall's own rule (parse_ports)."""
    if not isinstance(ports, list):
        return "not a list"
    try:
        parse_ports(ports, "tf_hdfs_ports")
    except TfdistCloudError as error:
        return str(error)
    return ""


def cidr_error(cidr):
    """Why a CIDR of tf_ssh_from cannot be a firewall rule, '' when it can."""
    if "/" not in cidr:
        return "no /BITS"
    try:
        ipaddress.ip_network(cidr)
    except ValueError as error:
        return str(error)
    return ""


def too_wide(cidr):
    """Whether a network of tf_ssh_from (a valid CIDR) is wider than WIDEST_SSH_FROM lets in without tf_ssh_from_any."""
    network = ipaddress.ip_network(cidr)
    return network.prefixlen < WIDEST_SSH_FROM[network.version]


def outport_span(port):
    """The node's TCP ports (first, last) a RADL outport opens, None for another protocol. The radl lookup gives a TCP
    port as an int, anything else in the IM's notation: [CIDR-]FIRST:LAST/PROTOCOL, [CIDR-]PUBLIC-NODE/PROTOCOL (a
    public port to the node's), [CIDR-]PORT/PROTOCOL."""
    if isinstance(port, int):
        return port, port
    spec, dummy, protocol = str(port).rpartition("/")
    if protocol != "tcp":
        return None
    if "/" in spec:  # ADDRESS/BITS-PORTS: the ports after the CIDR
        spec = spec.split("/", 1)[1].split("-", 1)[1]
    if ":" in spec:
        first, last = spec.split(":")
        return int(first), int(last)
    node = int(spec.rsplit("-", 1)[-1])
    return node, node


def public_ports(s, radl, radl_path, extra):
    """The ports the firewall opens to tf_ssh_from besides SSH, each as (who opens it, first, last): the RADL's
    outports, TensorBoard's port, then extra (provision_public_ports as (first, last): those two are in it already)."""
    for port in radl.get("ports") or []:
        span = outport_span(port)
        if span:
            yield ("radl: %s opens port %s (its outports)" % (radl_path, port),) + span
    if boolean(s["tf_tensorboard"], strict=False):
        port = whole(s["tf_tensorboard_port"])
        yield ("tf_tensorboard_port: TensorBoard's port %d is open to tf_ssh_from" % port, port, port)
    for low, high in extra:
        yield ("provision_public_ports: %s is open to tf_ssh_from" % port_text(low, high), low, high)


def exposure_errors(s, radl, radl_path, extra):
    """A public port that is a TF or HDFS port: those take no password, only the cluster's own nodes may reach them.
    A TensorBoard port that is a TF port would collide with a task's even where nothing is public (cloud=local)."""
    try:
        extra = parse_ports(extra, "provision_public_ports")
    except TfdistCloudError as error:
        yield str(error)
        return
    base = whole(s["tf_port_base"])
    last = base + sum(whole(s[field]) for field in ("tf_chief", "tf_workers", "tf_ps", "tf_evaluators")) - 1
    kept = [(base, last, "a TF port (tf_port_base=%d, one port per task: %s)" % (base, port_text(base, last)),
             "give the TF ports others with -e tf_port_base=N")]
    kept += [(low, high, "an HDFS port (tf_hdfs_ports)", "give HDFS others with -e tf_hdfs_ports") for low, high in
             parse_ports(s["tf_hdfs_ports"], "tf_hdfs_ports")]
    for who, first, final in public_ports(s, radl, radl_path, extra):
        for low, high, what, move in kept:
            if first <= high and low <= final:
                port = max(first, low)
                yield ("%s, and %d is %s, which only the cluster's own nodes may reach: TF's servers and HDFS take no "
                       "password. Open another port, or %s" % (who, port, what, move))


def deadline_error(deadline):
    """Why tf_deadline is not a duration a job may run, '' when it is (or is empty: no deadline)."""
    if not deadline:
        return ""
    try:
        seconds = parse_duration(deadline)
    except ValueError as error:
        return str(error)
    return "" if seconds > 0 else "must be longer than 0 (leave it empty for no deadline), got '%s'" % deadline


def budget_ok(budget):
    """Whether tf_budget is a positive number of dollars (12, 7.50) or empty (no budget)."""
    return not budget or bool(DOLLARS.match(budget)) and float(budget) > 0


def compile_error(path):
    """Why a Python script does not compile (FILE, line N: the error and the line), '' when it does.

    A script that does not compile fails the same way on every node and every restart: it is refused before anything
    is created. A Jinja template (*.j2) is only Python once rendered for a task, so it is not compiled here.
    """
    if path.endswith(".j2"):
        return ""
    try:
        with open(path, "rb") as handle:
            compile(handle.read(), path, "exec", dont_inherit=True)
    except SyntaxError as error:  # IndentationError and TabError included
        # compile() always says where: a line, and that line's text unless it is blank.
        code = (error.text or "").strip()
        quoted = " ('%s')" % code if code else ""
        return "%s, line %s: %s: %s%s" % (path, error.lineno, type(error).__name__, error.msg, quoted)
    except (OSError, ValueError) as error:
        return "%s: %s" % (path, error)
    return ""


def script_errors(s, script_path):
    if not text(s["tf_script"]):
        return
    if not os.path.isfile(script_path):
        yield "tf_script: %s does not exist on the controller (or is not a file)" % text(s["tf_script"])
        return
    why = compile_error(script_path)
    if why:
        yield "tf_script: the script does not compile: %s" % why
    if s["tf_script_interface"] not in ("tf_config", "flags"):
        yield "tf_script_interface: must be tf_config or flags, got '%s'" % text(s["tf_script_interface"])


def ssh_key_errors(s, ssh_key_path):
    """tf_ssh_key: a private key ssh takes as it is (its user's alone, no passphrase to ask for)."""
    if not text(s["tf_ssh_key"]):
        return
    if not ssh_key_path or not os.path.isfile(ssh_key_path):
        yield "tf_ssh_key: %s is not a file on the controller" % text(s["tf_ssh_key"])
        return
    if os.stat(ssh_key_path).st_mode & 0o077:
        yield "tf_ssh_key: %s can be read by others and ssh refuses such a key; chmod 0600 it" % ssh_key_path
        return
    try:
        public_key(ssh_key_path)
    except ValueError as error:
        yield "tf_ssh_key: %s" % error


def storage_errors(s, storage):
    if boolean(s["tf_hdfs"], strict=False) and (s["cloud"] == "local" or whole(s["tf_workers"]) <= 0):
        yield "tf_hdfs: " + (
            "cloud=local has no cluster nodes to run HDFS on; use cloud=docker or a cloud, or point tf_data "
            "at an HDFS that runs elsewhere (hdfs://NAMENODE:PORT/PATH)" if s["cloud"] == "local"
            else "the DataNodes run on the workers, and tf_workers is 0")
    # What a storage setting means is the storage policy's (tfdist.cluster.storage_plan); here its verdict.
    yield from storage.get("errors") or []
    stage, data = storage.get("stage") or {}, storage.get("data") or {}
    if stage.get("kind") == "local" and not os.path.exists(stage["path"]):
        yield "tf_stage_data: %s does not exist on the controller" % text(s["tf_stage_data"])
    if data.get("kind") == "local" and not os.path.exists(data["path"]):
        yield "tf_data: %s does not exist on the controller" % text(s["tf_data"])


def first_error(settings, storage, radl=None, radl_path="", script_path="", extra_public_ports=(), ssh_key_path=""):
    """The message of the first rule the command line breaks, '' when it breaks none."""
    s = settings
    checks = [radl_errors(s, radl, radl_path)] if radl_path else []
    checks.append(count_errors(s))
    for errors in checks:
        for error in errors:
            return error
    # The counts are whole numbers from here on: the cluster model's rule for a cluster.
    shape = count_error(s["tf_chief"], s["tf_workers"], s["tf_ps"], s["tf_evaluators"],
                        s["tf_strategy"] if not text(s["tf_script"]) else "")
    if shape:
        return shape
    for errors in (choice_errors(s), exposure_errors(s, radl or {}, radl_path, extra_public_ports),
                   script_errors(s, script_path), ssh_key_errors(s, ssh_key_path), storage_errors(s, storage)):
        for error in errors:
            return error
    return ""


class ActionModule(ActionBase):

    TRANSFERS_FILES = False
    _requires_connection = False  # it only reads the controller's own files

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = self.validate_argument_spec(ARGUMENT_SPEC)[1]
        given = {name: value for name, value in args["settings"].items() if value is not None}
        missing = [name for name in SETTINGS if name not in given and name not in task_vars]
        if missing:
            return dict(result, failed=True, msg="settings: no value for %s (neither given nor a variable of the play)"
                        % ", ".join(missing))
        settings = self._templar.template({name: task_vars[name] for name in SETTINGS if name not in given})
        settings.update(given)
        error = first_error(settings, args["storage"], args["radl"], args["radl_path"], args["script_path"],
                            args["public_ports"], args["ssh_key_path"])
        if error:
            result.update(failed=True, msg=error)
        else:
            result.update(changed=False, msg="the command line is fine")
        return result
