#!/usr/bin/python
# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
# The work is done by the action plugin of the same name; this file documents it.

from __future__ import annotations

DOCUMENTATION = r"""
module: cluster_status
short_description: Report what each tfdist cluster runs, where, how far and at what cost
description:
  - Runs on the controller for C(playbooks/status.yml). Puts together, for each cluster of O(clusters), its nodes (the
    hosts of its group C(tfdist_<name>) in this run's inventory) with their state, address, size and list price
    from their inventory variables, the state of its job and of each TF task
    from the one M(tfdist.cluster.training_status) answer each node gave (registered as O(probe_var)), its uptime and
    its cost so far at list prices, and the restarts the deploy recorded in C(summary.json).
  - Writes each cluster's report to C(status.json) in its O(clusters[].artifacts_dir), in the shape of the JSON
    Schema C(docs/schemas/status.schema.json) (its C(schema_version) changes only when a key changes meaning or
    goes away).
  - Reaches no node and no cloud API itself; list prices come from libcloud's bundled price list.
version_added: 0.5.0
author: tfdist maintainers (@tfdist)
options:
  clusters:
    description: The clusters this controller holds state of.
    type: list
    elements: dict
    required: true
    suboptions:
      name:
        description: The cluster's name.
        type: str
        required: true
      cloud:
        description: The cloud it runs on (V(local) for this machine).
        type: str
        required: true
      provider:
        description: Its libcloud provider (for the list prices); empty for O(clusters[].cloud=local).
        type: str
        default: ""
      region:
        description: Its region, where the price list is per region (EC2).
        type: str
        default: ""
      source:
        description: Its inventory source on this controller.
        type: str
        default: ""
      artifacts_dir:
        description: Where its C(summary.json) is read from and its C(status.json) written to.
        type: path
        required: true
      ssh_config:
        description: Its ssh config file, reported (and shown as an C(ssh -F) line) where it exists.
        type: path
  gone_artifacts_dir:
    description:
      - The artifacts folder of a cluster the user asked for that has no state here (destroyed). A C(status.json)
        there is replaced by this report, with no cluster, rather than left saying what the cluster was.
    type: path
  cloud:
    description: The cloud whose audit is in O(audit).
    type: str
    default: ""
  audit:
    description:
      - A P(tfdist.cluster.libcloud_audit_regions#filter) result of that cloud; its clusters that are not in
        O(clusters) are reported in the C(cloud_only) list of RV(status).
    type: dict
  detail:
    description: Also list each TF task in RV(lines).
    type: bool
    default: false
  probe_var:
    description: The variable of each node that holds its M(tfdist.cluster.training_status) answer.
    type: str
    default: training_status_result
extends_documentation_fragment:
  - tfdist.cluster.attributes
attributes:
  check_mode:
    support: full
    details: Reports the same and writes no C(status.json).
  diff_mode:
    support: none
  idempotent:
    support: full
    details: It writes its report only.
"""

EXAMPLES = r"""
- name: Report on the cluster demo
  tfdist.cluster.cluster_status:
    clusters:
      - name: demo
        cloud: docker
        provider: docker
        artifacts_dir: "{{ playbook_dir }}/artifacts/demo"
  register: report

- name: Show it
  ansible.builtin.debug:
    msg: "{{ report.lines }}"
"""

RETURN = r"""
status:
  description: The report (C(schema_version), C(generated_at), C(cloud), C(clusters), C(cloud_only)); see the JSON
    Schema C(docs/schemas/status.schema.json).
  returned: always
  type: dict
lines:
  description: The report as short lines for a person.
  returned: always
  type: list
  elements: str
written:
  description: The C(status.json) files written.
  returned: always
  type: list
  elements: path
"""
