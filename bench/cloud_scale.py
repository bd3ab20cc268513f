# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""How do provisioning and the inventory grow with the cluster, in time and in cloud API calls?

Against the emulated EC2 API of the tests (moto behind the proxy of tests/emulators/ec2.py, which counts
the calls by EC2 Action), for N in --sizes (default 10 50 100 200 1000) nodes, 1 chief + 1 ps + N-2 workers of
t2.micro, each phase runs the way a user runs it, as an ansible CLI in a subprocess:

  plan          `ansible localhost -m tfdist.cluster.libcloud_node --check` (the plan, nothing changes)
  create        the same without --check, wait=false (emulated instances answer no SSH), with the user-data of
                the aws profile (login user, host key pinned in a known_hosts: one per role, so one RunInstances)
  inventory     `ansible-inventory --list` of a *.libcloud.yml source with the plugin's cache off
  cached        the same source with `cache: true` (jsonfile): run twice, the second one timed
  destroy       libcloud_node with state=absent

The emulator is reset between sizes. Times include the start of the ansible CLI (measured once on its own
as `startup`). What it shows: the inventory makes the same few calls for 10 nodes as for 1,000, the cached
inventory none, and the create (one RunInstances per role) too; the time of create, inventory and destroy grows
with N. The goal: the plan and the create of 1,000 nodes (GOAL_NODES) in at most 10 s together. Prints a row per
size, writes bench/results/cloud_scale.json and bench/results/cloud_scale.png.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

from ansible.plugins.loader import init_plugin_loader

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The collection, the tests' helpers included, by its name as the ansible CLIs load it, from where make setup links it.
init_plugin_loader([os.path.join(REPO, ".collections")])

from goals import RESULTS, goal, save_figure, two_panels, write  # noqa: E402

from ansible_collections.tfdist.cluster.tests.ansible_cli import run, tail  # noqa: E402
from ansible_collections.tfdist.cluster.tests.emulators.ec2 import (  # noqa: E402
    CLUSTER_KEY,
    cli_settings,
    ec2_emulator,
    inventory_config,
    run_inventory,
    run_libcloud_node,
)

PHASES = ("plan", "create", "inventory", "cached", "destroy")
SIZE = "t2.micro"
# The goal's cluster size, and the most seconds its plan and create may take together.
GOAL_NODES = 1000
GOAL_PLAN_CREATE_S = 10


def roles(image, nodes):
    return [{"role": role, "count": count, "size": SIZE, "image": image}
            for role, count in (("chief", 1), ("ps", 1), ("worker", nodes - 2))]


def timed(emulator, what, func):
    """(seconds, API calls by action, result) of func(); exits with the output when the command failed."""
    emulator.reset_calls()
    started = time.monotonic()
    run, result = func()
    seconds = time.monotonic() - started
    if run.returncode != 0 or result is None:
        sys.exit(f"{what} failed (rc {run.returncode}):\n{tail(run)}")
    return seconds, dict(sorted(emulator.calls().items())), result


def measure(emulator, nodes, workdir):
    cluster = f"bench-{nodes}"
    # As the aws profile creates nodes (libcloud_user_data): a login user and a pinned host key in their user-data.
    user_data = {"user": "ubuntu", "public_key": CLUSTER_KEY, "known_hosts": os.path.join(workdir, f"{cluster}.known_hosts")}
    present = {"cluster": cluster, "roles": roles(emulator.image_id, nodes), "wait": False, "user_data": user_data}
    phases = {}

    def record(phase, seconds, calls):
        phases[phase] = {"seconds": round(seconds, 2), "calls": calls, "total_calls": sum(calls.values())}

    seconds, calls, result = timed(emulator, f"plan of {nodes}",
                                   lambda: run_libcloud_node(emulator, present, check=True))
    planned = sum(len(item["to_create"]) for item in result["plan"].values())
    if planned != nodes:
        sys.exit(f"the plan of {nodes} nodes creates {planned}: {result['plan']}")
    record("plan", seconds, calls)

    seconds, calls, result = timed(emulator, f"create of {nodes}", lambda: run_libcloud_node(emulator, present))
    if len(result["created"]) != nodes:
        sys.exit(f"create of {nodes} nodes made {len(result['created'])}")
    record("create", seconds, calls)

    source = inventory_config(emulator, os.path.join(workdir, f"cold-{nodes}.libcloud.yml"), clusters=[cluster],
                              cache=False)
    seconds, calls, inventory = timed(emulator, f"inventory of {nodes}", lambda: run_inventory(emulator, source))
    listed = len(inventory["_meta"]["hostvars"])
    if listed != nodes:
        sys.exit(f"the inventory of {nodes} nodes lists {listed} hosts")
    record("inventory", seconds, calls)

    cached = inventory_config(emulator, os.path.join(workdir, f"cached-{nodes}.libcloud.yml"), clusters=[cluster],
                              cache=True, cache_plugin="ansible.builtin.jsonfile",
                              cache_connection=os.path.join(workdir, f"cache-{nodes}"), cache_timeout=3600)
    timed(emulator, f"cached inventory of {nodes} (filling the cache)", lambda: run_inventory(emulator, cached))
    seconds, calls, inventory = timed(emulator, f"cached inventory of {nodes}", lambda: run_inventory(emulator, cached))
    if len(inventory["_meta"]["hostvars"]) != nodes:
        sys.exit(f"the cached inventory of {nodes} nodes lists {len(inventory['_meta']['hostvars'])} hosts")
    record("cached", seconds, calls)

    seconds, calls, result = timed(emulator, f"destroy of {nodes}",
                                   lambda: run_libcloud_node(emulator, {"cluster": cluster, "state": "absent"}))
    if len(result["removed"]) != nodes:
        sys.exit(f"destroy of {nodes} nodes removed {len(result['removed'])}")
    record("destroy", seconds, calls)
    return {"nodes": nodes, "phases": phases}


def startup_seconds(emulator):
    """Wall time of `ansible localhost -m ansible.builtin.ping`: the fixed cost in every phase's figure."""
    args = ["localhost", "-i", "localhost,", "-c", "local", "-e", f"ansible_python_interpreter={sys.executable}",
            "-m", "ansible.builtin.ping"]
    env = cli_settings(emulator, ANSIBLE_INVENTORY_ENABLED="host_list")
    best = None
    for dummy in range(2):
        started = time.monotonic()
        run("ansible", *args, env=env, check=True)
        took = time.monotonic() - started
        best = took if best is None else min(best, took)
    return round(best, 2)


def cell(row, base, phase):
    seconds = row["phases"][phase]["seconds"]
    growth = seconds / base["phases"][phase]["seconds"] if base["phases"][phase]["seconds"] else float("nan")
    return f"{seconds:6.2f}s x{growth:<5.2f}"


def calls_cell(row, phase):
    calls = row["phases"][phase]["calls"]
    described = f" ({calls.get('DescribeInstances', 0)} DI)" if phase in ("inventory", "cached") else ""
    return f"{row['phases'][phase]['total_calls']}" + described


def print_header():
    print(f"{'nodes':>5} | " + " | ".join(f"{phase:<14}" for phase in PHASES) + " | API calls "
          + "/".join(PHASES), flush=True)
    print("-" * 132, flush=True)


def print_row(row, base):
    print(f"{row['nodes']:>5} | " + " | ".join(cell(row, base, phase) for phase in PHASES) + " | "
          + " / ".join(calls_cell(row, phase) for phase in PHASES), flush=True)


def plot(rows, startup, path):
    sizes = [row["nodes"] for row in rows]
    fig, (times, calls) = two_panels()
    for phase in PHASES:
        times.plot(sizes, [row["phases"][phase]["seconds"] for row in rows], marker="o", label=phase)
        calls.plot(sizes, [row["phases"][phase]["total_calls"] for row in rows], marker="o", label=phase)
    times.axhline(startup, color="grey", linestyle=":", label="ansible startup")
    times.set(xlabel="nodes in the cluster", ylabel="wall time (s)", title="Time per phase (emulated EC2)")
    calls.set(xlabel="nodes in the cluster", ylabel="EC2 API calls", title="API calls per phase")
    save_figure(fig, path)


def code_under_test():
    """How this checkout creates EC2 nodes (the figures depend on it)."""
    from ansible_collections.tfdist.cluster.plugins.module_utils import _clouds, _provider  # noqa: PLC0415

    batch = _clouds.PROVIDERS["ec2"].batch_create
    return {"ec2_create": "batch: %s.%s" % (batch.__module__.rpartition(".")[2], batch.__name__) if batch
            else "one create_node per node",
            "max_parallel": _provider.MAX_PARALLEL}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 50, 100, 200, GOAL_NODES])
    args = parser.parse_args()
    if min(args.sizes) < 3:
        parser.error("every size needs at least 3 nodes (1 chief, 1 ps, 1 worker)")

    code = code_under_test()
    rows = []
    with ec2_emulator() as emulator, tempfile.TemporaryDirectory(prefix="tfdist-cloud-scale-") as workdir:
        startup = startup_seconds(emulator)
        print(f"EC2 emulator at {emulator.endpoint} (moto), image {emulator.image_id}, size {SIZE}; "
              f"create: {code['ec2_create']}; ansible startup {startup:.2f}s (in every figure)", flush=True)
        print("each phase: wall time and growth against the smallest cluster; "
              "API calls per phase (DI: DescribeInstances)", flush=True)
        print_header()
        for nodes in args.sizes:
            emulator.reset()
            rows.append(measure(emulator, nodes, workdir))
            print_row(rows[-1], rows[0])

    base = rows[0]
    for row in rows:
        for phase in PHASES:
            item = row["phases"][phase]
            item["growth"] = round(item["seconds"] / base["phases"][phase]["seconds"], 2) \
                if base["phases"][phase]["seconds"] else None
            item["calls_growth"] = round(item["total_calls"] / base["phases"][phase]["total_calls"], 2) \
                if base["phases"][phase]["total_calls"] else None
    goals = [goal(f"EC2 emulator, plan + create of {row['nodes']} nodes (s)",
                  row["phases"]["plan"]["seconds"] + row["phases"]["create"]["seconds"], GOAL_PLAN_CREATE_S)
             for row in rows if row["nodes"] == GOAL_NODES]
    write("cloud_scale", {"sizes": args.sizes, "cpus": os.cpu_count(), "instance_type": SIZE, "startup_s": startup,
                          "code": code, "rows": rows, "goals": goals})
    plot(rows, startup, os.path.join(RESULTS, "cloud_scale.png"))

    last = rows[-1]
    print()
    print(f"{base['nodes']} -> {last['nodes']} nodes: inventory calls "
          f"{base['phases']['inventory']['total_calls']} -> {last['phases']['inventory']['total_calls']}, "
          f"cached inventory calls {last['phases']['cached']['total_calls']}, create calls "
          f"{base['phases']['create']['total_calls']} -> {last['phases']['create']['total_calls']}")
    print("written: bench/results/cloud_scale.png")


if __name__ == "__main__":
    main()
