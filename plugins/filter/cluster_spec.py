# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""Filters that turn inventory hosts into a TensorFlow cluster."""

from __future__ import annotations

DOCUMENTATION = r"""
name: tf_tasks
short_description: The TF tasks that inventory hosts run
description:
  - Returns one entry per TensorFlow task (C(type), C(index), C(host), C(address), C(port)) for the given hosts.
  - A host runs the tasks listed in its C(tfdist_tasks) variable; without it, the one task
    named by C(tfdist_role) and C(tfdist_task_index) (one task per node, as on clouds).
  - The address is C(tfdist_private_ip), else C(ansible_host), else the host name: TF traffic stays inside the cluster network.
options:
  _input:
    description: C(hostvars).
    type: dict
    required: true
  hosts:
    description: Inventory host names of the cluster.
    type: list
    elements: str
    required: true
  default_port:
    description: Port of a task that names none.
    type: int
    default: 2222
"""

from ansible.errors import AnsibleFilterError

TASK_TYPES = ("chief", "worker", "ps", "evaluator")


def tf_tasks(hostvars, hosts, default_port=2222):
    tasks = []
    for host in hosts:
        hv = hostvars[host]
        address = hv.get("tfdist_private_ip") or hv.get("ansible_host") or host
        host_tasks = hv.get("tfdist_tasks")
        if host_tasks is None:
            if "tfdist_role" not in hv:
                raise AnsibleFilterError(f"host {host} has neither tfdist_tasks nor tfdist_role")
            host_tasks = [{"type": hv["tfdist_role"], "index": hv.get("tfdist_task_index", 0)}]
        for task in host_tasks:
            if task["type"] not in TASK_TYPES:
                raise AnsibleFilterError(f"host {host}: unknown TF task type {task['type']!r}")
            tasks.append({
                "type": str(task["type"]),
                "index": int(task["index"]),
                "name": tf_task_name(task),
                "host": host,
                "address": str(address),
                "port": int(task.get("port", default_port)),
            })
    tasks.sort(key=lambda t: (TASK_TYPES.index(t["type"]), t["index"]))
    _check(tasks)
    return tasks


def _check(tasks):
    seen = set()
    for task in tasks:
        if task["name"] in seen:
            raise AnsibleFilterError(f"TF task {task['name']} is defined twice")
        seen.add(task["name"])
    for task_type in TASK_TYPES:
        indexes = sorted(t["index"] for t in tasks if t["type"] == task_type)
        if indexes != list(range(len(indexes))):
            raise AnsibleFilterError(f"{task_type} task indexes must be 0..{len(indexes) - 1}, got {indexes}")
    chiefs = [t for t in tasks if t["type"] == "chief"]
    if len(chiefs) != 1:
        raise AnsibleFilterError(f"a cluster needs exactly one chief, found {len(chiefs)}")
    addresses = [(t["address"], t["port"]) for t in tasks]
    if len(set(addresses)) != len(addresses):
        raise AnsibleFilterError("two TF tasks share one address and port")


def tf_task_layout(workers, ps=0, evaluators=0, port_base=None):
    """One chief, then the workers, parameter servers and evaluators, each indexed from 0.

    With port_base (several tasks on one node) each task gets the next port.
    """
    counts = {"worker": workers, "ps": ps, "evaluator": evaluators}
    layout = [{"type": "chief", "index": 0}]
    for task_type, count in counts.items():
        layout += [{"type": task_type, "index": i} for i in range(int(count))]
    if port_base is not None:
        for offset, task in enumerate(layout):
            task["port"] = int(port_base) + offset
    return layout


def tf_task_name(task):
    """The name a task goes by everywhere: worker-1, ps-0, chief-0."""
    return f"{task['type']}-{int(task['index'])}"


def tf_launch_order(tasks):
    """Servers first and the chief last, so the coordinator finds its cluster up."""
    order = ("ps", "worker", "evaluator", "chief")
    return sorted(tasks, key=lambda t: (order.index(t["type"]), int(t["index"])))


def tf_role_nodes(role, layout, node_specs, create_args=None):
    """libcloud_node's entry for one role: one node per task of that role in the layout."""
    spec = dict(node_specs.get(role) or {})
    spec.update(role=role, count=sum(1 for t in layout if t["type"] == role))
    if create_args:
        spec["create_args"] = {**create_args, **(spec.get("create_args") or {})}
    return spec


def tf_flags(task, cluster_spec, interface="tf_config"):
    """The classic command-line flags of a task, for scripts that do not read TF_CONFIG."""
    if interface == "tf_config":
        return []
    return [
        "--ps_hosts=" + ",".join(cluster_spec.get("ps", [])),
        "--worker_hosts=" + ",".join(cluster_spec.get("worker", [])),
        "--chief_host=" + ",".join(cluster_spec.get("chief", [])),
        f"--job_name={task['type']}",
        f"--task_index={int(task['index'])}",
    ]


def tf_cluster_spec(tasks):
    """The `cluster` part of TF_CONFIG (evaluators are not part of it)."""
    spec = {}
    for task in tasks:
        if task["type"] != "evaluator":
            spec.setdefault(task["type"], []).append(f"{task['address']}:{task['port']}")
    return spec


def tf_node_specs(profile_nodes, overrides):
    """Size and image per role: the cloud profile's, with those an override (a RADL file) sets on top."""
    specs = {}
    for role in TASK_TYPES:
        spec = dict(profile_nodes.get(role) or {})
        spec.update((key, value) for key, value in (overrides.get(role) or {}).items()
                    if key in ("size", "image") and value)
        if spec:
            specs[role] = spec
    return specs


def tf_plan_line(role_spec, plan, nodes):
    """One line of the cluster plan for a role: how many of what, and what deploy would create or remove."""
    role = role_spec["role"]
    line = f"{role}: {role_spec['count']} x {role_spec.get('size') or '?'} ({role_spec.get('image') or '?'})"
    running = [n["name"] for n in nodes if n.get("role") == role]
    todo = (plan or {}).get(role) or {}
    parts = []
    if running:
        parts.append("running " + ", ".join(running))
    if todo.get("to_create"):
        parts.append("create " + ", ".join(todo["to_create"]))
    if todo.get("to_remove"):
        parts.append("remove " + ", ".join(todo["to_remove"]))
    return line + (": " + "; ".join(parts) if parts else "")


class FilterModule:
    def filters(self):
        return {
            "tf_tasks": tf_tasks,
            "tf_task_layout": tf_task_layout,
            "tf_task_name": tf_task_name,
            "tf_launch_order": tf_launch_order,
            "tf_role_nodes": tf_role_nodes,
            "tf_cluster_spec": tf_cluster_spec,
            "tf_flags": tf_flags,
            "tf_plan_line": tf_plan_line,
            "tf_node_specs": tf_node_specs,
        }
