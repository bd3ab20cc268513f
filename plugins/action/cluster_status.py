# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""Put playbooks/status.yml's report together on the controller, from what the run already holds.

It reads each node's inventory variables and the one training_status answer the play got from it (registered as
training_status_result by the training role's `status` entry point), and the deploy's summary.json; it runs
nothing on the nodes. plugin_utils/_status.py makes the report.
"""

from __future__ import annotations

import os
import time

from ansible.plugins.action import ActionBase

from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist._cluster import group_name
from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist._json_files import read_json, write_json
from ansible_collections.tfdist.cluster.plugins.plugin_utils import _status

ARGUMENT_SPEC = {
    "clusters": {"type": "list", "elements": "dict", "required": True, "options": {
        "name": {"type": "str", "required": True},
        "cloud": {"type": "str", "required": True},
        "provider": {"type": "str", "default": ""},
        "region": {"type": "str", "default": ""},
        "source": {"type": "str", "default": ""},
        "artifacts_dir": {"type": "path", "required": True},
        "ssh_config": {"type": "path"},
    }},
    # The folder of a cluster the user named that has no state here (gone): its status.json, if any, says so.
    "gone_artifacts_dir": {"type": "path"},
    "cloud": {"type": "str", "default": ""},
    "audit": {"type": "dict"},
    "detail": {"type": "bool", "default": False},
    "probe_var": {"type": "str", "default": "training_status_result"},
}


def node_input(name, host_vars, probe_var):
    """What the report needs of one node, from its variables (inventory's and the registered probe)."""
    probe = host_vars.get(probe_var)
    answered = isinstance(probe, dict) and not probe.get("unreachable") and not probe.get("failed") \
        and not probe.get("skipped") and "tasks" in probe
    error = None
    if not answered:
        error = (probe or {}).get("msg") if isinstance(probe, dict) else None
        error = " ".join(str(error or "not looked at").split())[:200]
    return dict(name=name, state=host_vars.get("libcloud_state") or host_vars.get("tfdist_cloud") or None,
                address=host_vars.get("ansible_host"), size=host_vars.get("libcloud_size") or None,
                price_per_hour=host_vars.get("tfdist_price_per_hour") or None,
                created_at=_status.created_at(host_vars.get("libcloud_extra")),
                probe=dict(probe) if answered else None, unreachable=error)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = self.validate_argument_spec(ARGUMENT_SPEC)[1]
        hostvars = task_vars["hostvars"]
        now = time.time()
        clusters = []
        for cluster in args["clusters"]:
            # Its nodes: its group in this run's inventory (the cluster's inventory source, read by the play).
            hosts = task_vars["groups"].get(group_name(cluster["name"])) or []
            nodes = [node_input(host, hostvars[host], args["probe_var"]) for host in hosts]
            summary = read_json(os.path.join(cluster["artifacts_dir"], "summary.json"))
            ssh_config = cluster["ssh_config"]
            # The cloud as the deploy named it, which its nodes carry (docker-vm is the provider docker).
            named = [hostvars[host].get("tfdist_cloud") for host in hosts if hostvars[host].get("tfdist_cloud")]
            clusters.append(dict(cluster, cloud=named[0] if named else cluster["cloud"], nodes=nodes, summary=summary,
                                 ssh_config=ssh_config if ssh_config and os.path.isfile(ssh_config) else None))
        status = _status.report(clusters, now, cloud=args["cloud"] or None, audit=args["audit"])
        written = []
        if not self._task.check_mode:
            # Each cluster's own file, a report of that cluster alone (the schema's shape, cloud_only empty).
            for cluster, entry in zip(args["clusters"], status["clusters"]):
                path = os.path.join(cluster["artifacts_dir"], "status.json")
                os.makedirs(cluster["artifacts_dir"], mode=0o700, exist_ok=True)
                write_json(path, dict(status, clusters=[entry], cloud_only=[]), indent=1)
                written.append(path)
            gone = args["gone_artifacts_dir"]
            if gone and not status["clusters"] and os.path.isfile(os.path.join(gone, "status.json")):
                write_json(os.path.join(gone, "status.json"), status, indent=1)
                written.append(os.path.join(gone, "status.json"))
        result.update(changed=False, status=status, lines=_status.lines(status, detail=args["detail"]),
                      written=written)
        return result
