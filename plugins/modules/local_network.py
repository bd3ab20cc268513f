#!/usr/bin/python
# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""Give a local cluster a network namespace of its own (loopback only), or say what is exposed without one."""

from __future__ import annotations

DOCUMENTATION = r"""
module: local_network
short_description: Keep a local cluster's TF tasks in a network namespace of their own, with loopback only
description:
  - TensorFlow's gRPC server listens on every interface whatever its cluster spec says, and asks no authentication.
    On cloud=local every TF task of a cluster therefore runs in one network namespace of the cluster's, with loopback
    only. Its tasks reach each other on 127.0.0.1 inside it, and no other process of the machine, nor anything
    outside it, reaches them.
  - One process per cluster (the holder) keeps the namespace, with its record C(network.json) in the job folder
    O(dir); the tfdist supervisor (M(tfdist.cluster.training_task)) starts every task of that folder inside it.
    As root it is a network namespace alone; otherwise, or where root may not make one (a container without
    C(CAP_SYS_ADMIN)), an unprivileged user namespace too, which maps the user to itself.
  - The holder forwards the ports O(forward) of the machine's loopback (127.0.0.1 only) to the same ports inside
    (TensorBoard's).
  - Where no namespace can be made, the module warns once with what is exposed, and the deploy goes on.
version_added: 0.5.0
author: tfdist maintainers (@tfdist)
extends_documentation_fragment:
  - tfdist.cluster.attributes
options:
  dir:
    description: The cluster's job folder (created when missing).
    type: path
    required: true
  state:
    description:
      - V(isolated) makes sure a holder keeps the namespace (a new one when O(forward) changed), or warns when none can
        be made here.
      - V(shared) runs the tasks in the machine's own network, for a job whose tasks reach storage off the machine
        themselves. The namespace goes, and the module warns with what is exposed.
      - V(absent) ends the holder and removes its record.
    type: str
    choices: [isolated, shared, absent]
    default: isolated
  forward:
    description: Ports of the machine's loopback forwarded to the same ports inside the namespace.
    type: list
    elements: int
    default: []
  ports:
    description: The cluster's TF ports, named in the warning when they are exposed.
    type: list
    elements: int
    default: []
attributes:
  check_mode:
    support: full
    details: Says whether the holder would be started or ended, and starts or ends nothing.
  diff_mode:
    support: none
  idempotent:
    support: full
"""

EXAMPLES = r"""
- name: Keep the cluster's TF tasks in a network namespace of their own
  tfdist.cluster.local_network:
    dir: /home/me/tfdist/.cache/run/demo
    forward: [6006]
    ports: [2222, 2223, 2224, 2225]
"""

RETURN = r"""
namespace:
  description:
    - The kind of namespace the tasks run in, V(net), or V(user+net) for an unprivileged one; null without one.
  returned: always
  type: str
  sample: user+net
pid:
  description: The pid of the holder; null without one.
  returned: always
  type: int
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist import _netns


def exposed(ports):
    """What the tasks expose in the machine's own network."""
    listed = ", ".join(str(port) for port in ports) or "the TF ports"
    return ("TensorFlow listens on every interface, so the cluster's TF ports (%s) are open, without authentication, "
            "to anyone who reaches this machine while the job runs" % listed)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            dir=dict(type="path", required=True),
            state=dict(type="str", choices=["isolated", "shared", "absent"], default="isolated"),
            forward=dict(type="list", elements="int", default=[]),
            ports=dict(type="list", elements="int", default=[]),
        ),
        supports_check_mode=True,
    )
    p = module.params
    if p["state"] != "isolated":
        changed = _netns.remove_namespace(p["dir"], module.check_mode)
        if p["state"] == "shared":
            module.warn("cloud=local with local_isolated=false: the tasks run in this machine's network. %s."
                        % exposed(p["ports"]))
        module.exit_json(changed=changed, namespace=None, pid=None)
    try:
        changed, record = _netns.ensure(p["dir"], p["forward"], check_mode=module.check_mode)
    except _netns.NamespaceError as error:
        if error.port:
            module.fail_json(msg="port %d, forwarded from this machine's loopback to the cluster's network namespace "
                                 "(TensorBoard's, tf_tensorboard_port), is taken (%s): stop what holds it or choose "
                                 "another port" % (error.port, error))
        module.warn("cloud=local: no network namespace can be made on this machine (%s), so the tasks run in its own "
                    "network. %s." % (error, exposed(p["ports"])))
        module.exit_json(changed=False, namespace=None, pid=None)
    module.exit_json(changed=changed, namespace=(record or {}).get("kind"), pid=(record or {}).get("pid"))


if __name__ == "__main__":
    main()
