# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""How does configuring a docker cluster grow with its size, and what does a re-run cost?

For N in --sizes (default 2 4 8 16 32) nodes, in one run on this machine: a fresh cluster of
1 chief + N-1 workers (multi_worker_mirrored, one TF task per container) is deployed with
`playbooks/deploy.yml -e cloud=docker`, then the same command runs again (nothing to change:
the job has finished), then the cluster is destroyed. It reports the configure time
(command start to launch: provision + install + lay down), the whole deploy, the idempotent
re-run as a fraction of the first run, and the growth against the smallest cluster. At 2 and 8
nodes, the sizes the goal compares, the first deploy is timed --repeat times (default 5, a fresh
cluster each, the repeats alternating between the two sizes) and the median counts: one deploy's configure time varies
by more than the goal's margin (those repeats train a tiny job, --large-steps: only the time to launch counts). At 4 nodes
(NOOP_GOAL_SIZE), the no-op re-run goal's size, --repeat fresh clusters are deployed and re-run once each, in the same
alternation, and the median of the re-run / first deploy ratios counts: a first deploy on this machine has taken 19 to 29 s.
Clusters above --large nodes (default 8) train a tiny job: what grows there is Ansible's fan-out.
At --rerun-size nodes (default 4) it also times a re-run with one setting changed (more steps), from the command's
start to the new run's first step, against the floor: the deployed scripts started in their containers by hand
(`docker exec`, no Ansible, no supervisor). Every node shares this machine's cores with the controller, so it also
reports the CPU seconds spent before launch by the nodes (their containers' cgroups) and by the rest of the machine
(Ansible, ssh, the engine): where a larger cluster's configure time goes. At --floor-sizes (default 2 and 8) it also
times the floor of that growth on this machine: the same cluster created, then one command over SSH on each node and
nothing else (bench/floor.yml), --repeat times at 2 and 8 nodes in the same alternation (the median counts). The goal
is stated against that floor: the configure time's growth from 2 to 8 nodes at most 1.15 times the floor's growth in
the same run (nodes that share the controller's cores slow every node down, which no deploy can avoid), with the
controller's CPU seconds per added node (Ansible, ssh and the engine: what limits a real cloud's fan-out) reported
beside it. And where an added node's time goes: one more fresh deploy at each of the 8/2 goal's sizes,
timed task by task up to its launch (bench/callback_plugins/task_cpu.py: wall time, the nodes' CPU and the rest's), and
the tasks that grew most per node added.
Writes bench/results/docker_scaling.json and bench/results/docker_scaling.png (the times and CPU split per size).
"""

from __future__ import annotations

import argparse
import configparser
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import threading
import time

from ansible.plugins.loader import init_plugin_loader

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The collection, the tests' helpers included, by its name as the ansible CLIs load it, from where make setup links it.
init_plugin_loader([os.path.join(REPO, ".collections")])

from cpu_seconds import sample  # noqa: E402
from goals import RESULTS, goal, save_figure, two_panels, write  # noqa: E402

from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist._cluster import launch_order, task_name  # noqa: E402
from ansible_collections.tfdist.cluster.tests.ansible_cli import run_playbook, tail  # noqa: E402

# The sizes whose configure times the goal compares (8 nodes / 2 nodes), and the size of the no-op re-run goal.
GOAL_SIZES = (2, 8)
NOOP_GOAL_SIZE = 4
# The configure time's growth from 2 to 8 nodes may exceed the floor's growth in the same run by this factor.
GROWTH_OVER_FLOOR = 1.15
# Seconds a playbook may run: a deploy of the largest cluster takes minutes (a test's 900 s is ansible_cli's default).
TIMEOUT = 3600
# A host's line of the PLAY RECAP: its name and its changed count.
RECAP_LINE = re.compile(r"^(\S+)\s+:\s+ok=\d+\s+changed=(\d+)", re.MULTILINE)


class CpuSampler(threading.Thread):
    """Samples the machine's and the containers' CPU seconds while a deploy runs, to split its configure time."""

    def __init__(self, every=0.2):
        super().__init__(daemon=True)
        self.every, self.samples, self.done = every, [], threading.Event()

    def run(self):
        while not self.done.is_set():
            self.samples.append(sample())
            self.done.wait(self.every)

    def stop(self):
        self.done.set()
        self.join()

    def used_until(self, moment):
        """(machine CPU s, containers CPU s or None) from the first sample to the one nearest `moment`."""
        first = self.samples[0]
        last = min(self.samples, key=lambda sample: abs(sample[0] - moment))
        nodes = last[2] - (first[2] or 0.0) if last[2] is not None else None
        return last[1] - first[1], nodes


# Where the training role puts a cluster's job on a node (its default training_home), and the hand-started job.
NODE_JOB = "/var/lib/tfdist/{cluster}"
HAND_JOB = "/tmp/tfdist-bench-hand"


def docker_exec(container, script, detach=False):
    cmd = ["docker", "exec"] + (["-d"] if detach else []) + [container, "sh", "-c", script]
    return subprocess.run(cmd, capture_output=True, text=True, check=False)


def by_hand_on_docker(cluster, tasks):
    """The deployed scripts and TF_CONFIGs started in their containers with `docker exec`, servers first, in a fresh
    job folder: seconds from the first start to the chief's first step (the docker floor)."""
    job = NODE_JOB.format(cluster=cluster)
    for task in tasks:  # untimed: a fresh job folder with the dataset, as the deploy had
        docker_exec(f"{cluster}-{task}", f"rm -rf {HAND_JOB} && mkdir -p {HAND_JOB}/tasks/{task} && cp -r {job}/data {HAND_JOB}/")
    # What the deploy's supervisor ran (the node's Python and the task's train.py), from its record.
    commands = {task: json.loads(docker_exec(f"{cluster}-{task}", f"cat {job}/tasks/{task}/task.json").stdout)["command"]
                for task in tasks}
    started = time.time()
    for task in tasks:
        folder = f"{HAND_JOB}/tasks/{task}"
        command = shlex.join(commands[task] + ["--work_dir", HAND_JOB, "--task_dir", folder])
        docker_exec(f"{cluster}-{task}", f"echo $$ > {folder}/pid; TF_CONFIG=$(cat {job}/tasks/{task}/tf_config.json) "
                    f"exec {command} > {folder}/task.log 2>&1", detach=True)
    deadline = time.time() + 600
    while time.time() < deadline:
        read = docker_exec(f"{cluster}-chief-0", f"cat {HAND_JOB}/result.json")
        if read.returncode == 0 and read.stdout.strip():
            break
        time.sleep(0.5)
    else:
        sys.exit(f"the hand-started chief of {cluster} gave no result: see {HAND_JOB}/tasks/chief-0/task.log in its container")
    for task in tasks:  # the job's ports free again for the re-run
        docker_exec(f"{cluster}-{task}", f"kill $(cat {HAND_JOB}/tasks/{task}/pid) 2>/dev/null; "
                    f"while kill -0 $(cat {HAND_JOB}/tasks/{task}/pid) 2>/dev/null; do sleep 0.1; done; rm -rf {HAND_JOB}")
    return json.loads(read.stdout)["first_step_at"] - started


def read_summary(cluster):
    """The summary.json of the cluster's last deploy."""
    with open(os.path.join(REPO, "artifacts", cluster, "summary.json")) as handle:
        return json.load(handle)


def launched_at(summary):
    """When the deploy of summary launched its job: its first step less the launch's time to it."""
    return float(summary["first_step_at"]) - summary["seconds"]["launch_to_first_step"]


def first_deploy(cluster, extra):
    """A first deploy of cluster (not there yet): (start, seconds, configure seconds (command start to launch),
    provision+install seconds, CPU before launch)."""
    sampler = CpuSampler()
    sampler.start()
    try:
        started, first, _output = playbook("deploy", cluster, *extra)
    finally:
        sampler.stop()
    summary = read_summary(cluster)
    configure = summary["seconds"]["provision"] + summary["seconds"]["install"]
    launched = launched_at(summary) - started
    machine_cpu, nodes_cpu = sampler.used_until(started + launched)
    cpu = {"nodes_s": None if nodes_cpu is None else round(nodes_cpu, 1),
           "controller_s": round(machine_cpu - (nodes_cpu or 0.0), 1), "machine_s": round(machine_cpu, 1),
           "busy": round(machine_cpu / (launched * os.cpu_count()), 2)}
    return started, first, launched, configure, cpu


# What the bench's callback (bench/callback_plugins/task_cpu.py) measures of each task.
TASK_FIELDS = ("wall_s", "machine_cpu_s", "nodes_cpu_s")


def profiled_deploy(cluster, extra):
    """A first deploy of cluster, task by task up to its launch (bench/callback_plugins/task_cpu.py, with the callbacks
    that ANSIBLE_CALLBACKS_ENABLED or else ansible.cfg enables): {task name: {wall_s, machine_cpu_s, nodes_cpu_s}}, a task
    that ran more than once summed."""
    config = configparser.ConfigParser()
    config.read(os.path.join(REPO, "ansible.cfg"))
    enabled = os.environ.get("ANSIBLE_CALLBACKS_ENABLED", config.get("defaults", "callbacks_enabled", fallback=""))
    enabled = [name.strip() for name in enabled.split(",") if name.strip()]
    out = os.path.join(RESULTS, f"task_cpu-{cluster}.json")
    os.makedirs(RESULTS, exist_ok=True)  # the callback writes there (a fresh clone has no bench/results yet)
    started = playbook("deploy", cluster, *extra, env={
        "ANSIBLE_CALLBACK_PLUGINS": os.path.join(REPO, "bench", "callback_plugins"),
        "ANSIBLE_CALLBACKS_ENABLED": ",".join(enabled + ["task_cpu"]), "TFDIST_TASK_CPU_OUT": out})[0]
    launched = launched_at(read_summary(cluster))
    with open(out) as handle:
        tasks = json.load(handle)
    os.remove(out)
    before = {}
    for task in tasks:
        if started <= task["started"] < launched:
            row = before.setdefault(task["task"], dict.fromkeys(TASK_FIELDS, 0.0))
            for key in TASK_FIELDS:
                row[key] += task[key]
    return before


def where_nodes_go(small, large, added, top=6):
    """The tasks whose time grew most from one profiled deploy to the other (profiled_deploy's), per node added:
    [{task, wall_s, nodes_cpu_s, rest_cpu_s}], the largest first, then their sum over every task as "all tasks"."""
    growth = []
    for name in list(large) + [name for name in small if name not in large]:
        a = small.get(name, dict.fromkeys(TASK_FIELDS, 0.0))
        b = large.get(name, dict.fromkeys(TASK_FIELDS, 0.0))
        growth.append({"task": name, "wall_s": round((b["wall_s"] - a["wall_s"]) / added, 3),
                       "nodes_cpu_s": round((b["nodes_cpu_s"] - a["nodes_cpu_s"]) / added, 3),
                       "rest_cpu_s": round((b["machine_cpu_s"] - b["nodes_cpu_s"] - a["machine_cpu_s"] + a["nodes_cpu_s"])
                                           / added, 3)})
    total = {key: round(sum(row[key] for row in growth), 3) for key in ("wall_s", "nodes_cpu_s", "rest_cpu_s")}
    return sorted(growth, key=lambda row: -row["wall_s"])[:top] + [dict(task="all tasks", **total)]


def noop_rerun(cluster, extra, changed):
    """The same deploy again on the live cluster, nothing to change: its seconds; adds each host's changed count to
    `changed` (a host that any re-run changed counts against the goal)."""
    _started, seconds, output = playbook("deploy", cluster, *extra)
    for host, count in RECAP_LINE.findall(output):
        changed[host] = changed.get(host, 0) + int(count)
    return seconds


def floor_seconds(nodes):
    """The floor at `nodes` nodes: a fresh cluster created as a deploy creates it, then one SSH command on each node
    and nothing else (bench/floor.yml); its seconds."""
    cluster = f"floor-{nodes}"
    playbook("destroy", cluster)
    seconds = playbook("bench/floor.yml", cluster, *cluster_shape(nodes))[1]
    playbook("destroy", cluster)
    return seconds


def cluster_shape(nodes):
    """The -e settings of a cluster of `nodes` nodes: 1 chief and nodes-1 workers, one TF task per container."""
    return ("tf_strategy=multi_worker_mirrored", f"tf_workers={nodes - 1}")


def playbook(name, cluster, *extra, env=None):
    """Runs playbooks/NAME.yml (or NAME, a path from the repository) on cloud=docker, with env added to the
    environment: (start, seconds, output)."""
    path = name if name.endswith(".yml") else f"playbooks/{name}.yml"
    started = time.time()
    run = run_playbook(path, "cloud=docker", f"cluster_name={cluster}", *extra, env=env, timeout=TIMEOUT)
    if run.returncode != 0:
        sys.exit(f"{name} of {cluster} failed:\n{tail(run)}")
    return started, time.time() - started, run.stdout


def plot(rows, path):
    """Configure and re-run times per cluster size, with the 8/2 goal's line, beside the CPU spent before launch."""
    sizes = [row["nodes"] for row in rows]
    fig, (times, cpu) = two_panels()
    times.plot(sizes, [row["configure_s"] for row in rows], marker="o", label="configure (command start to launch)")
    for row in rows:  # every timed first deploy, where the median of several counts
        times.scatter([row["nodes"]] * len(row["configure_runs_s"]), row["configure_runs_s"], color="C0", alpha=0.3, s=12)
    times.plot(sizes, [row["rerun_s"] for row in rows], marker="o", label="re-run that changes nothing")
    floors = [row for row in rows if row["floor_s"]]
    if floors:
        times.plot([row["nodes"] for row in floors], [row["floor_s"] for row in floors], marker="s", linestyle="--",
                   label="floor (created, one SSH command per node)")
    by_size = {row["nodes"]: row for row in rows}
    if 2 in by_size and 8 in by_size and by_size[2]["floor_s"] and by_size[8]["floor_s"]:
        limit = GROWTH_OVER_FLOOR * by_size[8]["floor_s"] / by_size[2]["floor_s"] * by_size[2]["configure_s"]
        times.axhline(limit, color="grey", linestyle=":",
                      label=f"goal at 8 nodes: x{GROWTH_OVER_FLOOR} of the floor's growth")
    times.set(xlabel="nodes in the cluster", ylabel="seconds", title="Docker cluster: configure and re-run")
    measured = [row for row in rows if row["configure_cpu"]["nodes_s"] is not None]
    nodes_cpu = [row["configure_cpu"]["nodes_s"] for row in measured]
    cpu.bar([str(row["nodes"]) for row in measured], nodes_cpu, label="nodes (their containers)")
    cpu.bar([str(row["nodes"]) for row in measured], [row["configure_cpu"]["controller_s"] for row in measured],
            bottom=nodes_cpu, label="controller, ssh and engine")
    cpu.set(xlabel="nodes in the cluster", ylabel="CPU seconds", title="CPU before launch (first deploy)")
    save_figure(fig, path)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[2, 4, 8, 16, 32])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--large", type=int, default=8,
                        help="clusters above this many nodes run a tiny job (--large-steps): the point is the fan-out")
    parser.add_argument("--large-steps", type=int, default=20)
    parser.add_argument("--floor-sizes", type=int, nargs="*", default=[2, 8],
                        help="sizes whose floor is also timed: the cluster created, then one SSH command on each node "
                             "(bench/floor.yml), the least a deploy does")
    parser.add_argument("--repeat", type=int, default=5,
                        help="fresh clusters timed at the sizes the 8/2 goal compares, and deployed then re-run at the no-op "
                             "goal's size; the median counts")
    parser.add_argument("--rerun-size", type=int, default=4,
                        help="the cluster size whose re-run with more steps is timed against the scripts started by hand")
    args = parser.parse_args()
    for script in ("ensure-docker.sh", "build-node-image.sh"):
        subprocess.run(["bash", os.path.join(REPO, "scripts", script)], check=True)

    rows = []
    for nodes in args.sizes:
        cluster = f"bench-{nodes}"
        playbook("destroy", cluster)
        steps = args.steps if nodes <= args.large else args.large_steps
        shape = cluster_shape(nodes)
        extra = shape + (f"tf_train_steps={steps}",)
        started, first, launched, configure, cpu = first_deploy(cluster, extra)
        changed = {}
        again = noop_rerun(cluster, extra, changed)
        changed_rerun = None
        if nodes == args.rerun_size:
            # The cluster's tasks, one per container, in the training role's launch order (servers first).
            tasks = [{"type": "chief", "index": 0}] + [{"type": "worker", "index": i} for i in range(nodes - 1)]
            hand = by_hand_on_docker(cluster, [task_name(t["type"], t["index"]) for t in launch_order(tasks)])
            rerun_started, _seconds, _output = playbook("deploy", cluster, *shape, f"tf_train_steps={steps + 100}")
            rerun = read_summary(cluster)["first_step_at"] - rerun_started
            changed_rerun = {"rerun_to_first_step_s": round(rerun, 1), "hand_to_first_step_s": round(hand, 1),
                             "ratio": round(rerun / hand, 2)}
            print(f"{nodes} nodes: first step of a re-run with more steps {rerun:.1f}s, of the scripts started by hand "
                  f"{hand:.1f}s (x{rerun / hand:.2f})", flush=True)
        playbook("destroy", cluster)
        floor = floor_seconds(nodes) if nodes in args.floor_sizes else None
        if floor is not None:
            print(f"{nodes} nodes: floor (created, then one SSH command on each node) {floor:.1f}s", flush=True)
        rows.append({"nodes": nodes, "steps": steps, "configure_s": round(launched, 2),
                     "configure_runs_s": [round(launched, 2)], "provision_install_s": round(configure, 1),
                     "deploy_s": round(first, 1), "deploy_runs_s": [round(first, 1)],
                     "rerun_s": round(again, 1), "rerun_runs_s": [round(again, 1)],
                     "rerun_fraction": round(again / first, 2), "rerun_fractions": [round(again / first, 3)],
                     "rerun_changed": changed, "changed_rerun": changed_rerun,
                     "configure_cpu": cpu, "controller_cpu_runs_s": [cpu["controller_s"]],
                     "floor_s": None if floor is None else round(floor, 1),
                     "floor_runs_s": [] if floor is None else [round(floor, 1)]})
        print(f"{nodes} nodes: configure {launched:.1f}s (provision+install {configure:.1f}s), "
              f"deploy {first:.1f}s, idempotent re-run {again:.1f}s = {again / first:.2f} of the first, "
              f"changed on {sum(1 for count in changed.values() if count)} of {len(changed)} hosts", flush=True)
        print(f"  CPU before launch: {cpu['machine_s']}s on {os.cpu_count()} cores ({cpu['busy']:.0%} busy): "
              f"nodes {cpu['nodes_s'] if cpu['nodes_s'] is not None else '?'}s, "
              f"controller, ssh and engine {cpu['controller_s']}s", flush=True)

    # The 8/2 goal compares two sizes of one run: their first deploys are timed --repeat times (fresh clusters each
    # time) and the median counts, as one deploy's configure time varies by more than the goal's margin. The repeats
    # alternate between the two sizes, so that a change in the machine's speed during the run weighs on both alike.
    # The no-op goal's size takes part in the same alternation: each fresh cluster re-run once, its ratio against its own
    # first deploy (with the same job: the first deploy's length is the goal's denominator).
    goal_rows = [row for row in rows if row["nodes"] in GOAL_SIZES or row["nodes"] == NOOP_GOAL_SIZE]
    for _repeat in range(args.repeat - 1):
        for row in goal_rows:
            cluster = f"bench-{row['nodes']}"
            noop = row["nodes"] == NOOP_GOAL_SIZE
            steps = row["steps"] if noop else min(row["steps"], args.large_steps)
            extra = cluster_shape(row["nodes"]) + (f"tf_train_steps={steps}",)
            _started, first, launched, _configure, cpu = first_deploy(cluster, extra)
            row["configure_runs_s"].append(round(launched, 2))
            row["controller_cpu_runs_s"].append(cpu["controller_s"])
            if noop:
                again = noop_rerun(cluster, extra, row["rerun_changed"])
                row["deploy_runs_s"].append(round(first, 1))
                row["rerun_runs_s"].append(round(again, 1))
                row["rerun_fractions"].append(round(again / first, 3))
            playbook("destroy", cluster)
            if row["floor_runs_s"]:
                row["floor_runs_s"].append(round(floor_seconds(row["nodes"]), 1))
    for row in goal_rows:
        row["configure_s"] = round(statistics.median(row["configure_runs_s"]), 2)
        row["controller_cpu_s"] = round(statistics.median(row["controller_cpu_runs_s"]), 2)
        print(f"{row['nodes']} nodes: configure {row['configure_s']:.1f}s, the median of "
              f"{', '.join(f'{run:.1f}' for run in row['configure_runs_s'])}", flush=True)
        if row["floor_runs_s"]:
            row["floor_s"] = round(statistics.median(row["floor_runs_s"]), 1)
            print(f"{row['nodes']} nodes: floor {row['floor_s']:.1f}s, the median of "
                  f"{', '.join(f'{run:.1f}' for run in row['floor_runs_s'])}", flush=True)
        if row["nodes"] == NOOP_GOAL_SIZE:
            row["rerun_fraction"] = round(statistics.median(row["rerun_fractions"]), 3)
            row["rerun_s"] = round(statistics.median(row["rerun_runs_s"]), 1)
            row["deploy_s"] = round(statistics.median(row["deploy_runs_s"]), 1)
            pairs = ", ".join(f"{again:.1f}s / {first:.1f}s" for again, first in zip(row["rerun_runs_s"], row["deploy_runs_s"]))
            print(f"{row['nodes']} nodes: re-run that changes nothing / first deploy {row['rerun_fraction']:.2f}, "
                  f"the median of {pairs}", flush=True)

    # Where an added node's time goes before the launch: one more fresh deploy at each of the 8/2 goal's sizes, task by
    # task (not among the timed ones: the callback reads the cgroups at each task's start).
    profile = None
    if all(size in [row["nodes"] for row in rows] for size in GOAL_SIZES):
        small, large = GOAL_SIZES
        profiled = {}
        for nodes in GOAL_SIZES:
            cluster = f"bench-profile-{nodes}"
            playbook("destroy", cluster)
            profiled[nodes] = profiled_deploy(cluster, cluster_shape(nodes) + (f"tf_train_steps={args.large_steps}",))
            playbook("destroy", cluster)
        profile = {"sizes": list(GOAL_SIZES), "tasks": {str(nodes): tasks for nodes, tasks in profiled.items()},
                   "per_node_added": where_nodes_go(profiled[small], profiled[large], large - small)}

    base = rows[0]
    for row in rows:
        row["configure_growth"] = round(row["configure_s"] / base["configure_s"], 2)
    print()
    print("configure time against the smallest cluster: "
          + ", ".join(f"{r['nodes']} nodes x{r['configure_growth']}" for r in rows))
    by_size = {row["nodes"]: row for row in rows}
    goals = []
    if NOOP_GOAL_SIZE in by_size:
        noop = by_size[NOOP_GOAL_SIZE]
        goals.append(goal(f"docker {NOOP_GOAL_SIZE} nodes, re-run that changes nothing / first deploy "
                          f"(median of {len(noop['rerun_fractions'])} fresh clusters)", noop["rerun_fraction"], 0.15))
        changed_hosts = sum(1 for count in noop["rerun_changed"].values() if count)
        goals.append(goal(f"docker {NOOP_GOAL_SIZE} nodes, hosts the re-run changed", changed_hosts, 0))
    if 2 in by_size and 8 in by_size:
        small, large = by_size[2], by_size[8]
        growth = large["configure_s"] / small["configure_s"]
        print(f"report: docker configure time, 8 nodes / 2 nodes: x{growth:.2f} ({large['configure_s']}s / "
              f"{small['configure_s']}s, medians of {args.repeat} first deploys)", flush=True)
        # The nodes share the controller's cores: an 8-node configure cannot take less than its CPU seconds spread over
        # every core with none ever idle, whatever the order of its work (the CPU of the first 8-node deploy, sampled).
        cpu_s = large["configure_cpu"]["machine_s"]
        cpu_bound = cpu_s / os.cpu_count()
        print(f"report: docker 8 nodes, CPU before launch {cpu_s}s on {os.cpu_count()} cores: at least {cpu_bound:.1f}s "
              f"with no core ever idle, x{cpu_bound / small['configure_s']:.2f} of 2 nodes' configure", flush=True)
        # What no deploy can beat on this machine: the same growth with one SSH command per node and nothing else. The
        # goal is the configure time's growth against it; beside it, the controller's CPU per added node (Ansible, ssh
        # and the engine, medians of the first deploys): what limits the fan-out where nodes have cores of their own.
        if small["floor_s"] and large["floor_s"]:
            floor_growth = large["floor_s"] / small["floor_s"]
            controller_per_node = (large["controller_cpu_s"] - small["controller_cpu_s"]) / (8 - 2)
            print(f"report: docker floor (created, one SSH command per node), 8 nodes / 2 nodes: x{floor_growth:.2f} "
                  f"({large['floor_s']}s / {small['floor_s']}s)", flush=True)
            print(f"report: controller CPU before launch per node added (2 -> 8 nodes): {controller_per_node:.2f}s "
                  f"({small['controller_cpu_s']}s at 2, {large['controller_cpu_s']}s at 8)", flush=True)
            record = goal(f"docker configure growth 2 -> 8 nodes / the floor's growth (x{growth:.2f} / "
                          f"x{floor_growth:.2f}; controller CPU {controller_per_node:.2f}s per added node)",
                          growth / floor_growth, GROWTH_OVER_FLOOR)
            record["controller_cpu_s_per_added_node"] = round(controller_per_node, 3)
            goals.append(record)
    if profile:
        print(f"report: where each node added goes before the launch ({profile['sizes'][0]} -> {profile['sizes'][1]} nodes, "
              "one profiled deploy each): wall s, CPU s in the nodes, CPU s elsewhere (Ansible, ssh, the engine)", flush=True)
        for row in profile["per_node_added"]:
            print(f"  {row['wall_s']:+.3f}  {row['nodes_cpu_s']:+.3f}  {row['rest_cpu_s']:+.3f}  {row['task']}", flush=True)
    if by_size.get(args.rerun_size, {}).get("changed_rerun"):
        timed = by_size[args.rerun_size]["changed_rerun"]
        print(f"report: docker {args.rerun_size} nodes, first step of a re-run with more steps / by hand: "
              f"x{timed['ratio']} ({timed['rerun_to_first_step_s']}s / {timed['hand_to_first_step_s']}s)", flush=True)
    for nodes in sorted(size for size in by_size if size > 8 and 2 in by_size):
        print(f"report: docker configure time, {nodes} nodes / 2 nodes: x{by_size[nodes]['configure_growth']}"
              f" ({by_size[nodes]['configure_s']}s)", flush=True)
    # Each node added costs CPU on its own container and on the controller's side (forks, ssh, the engine): on a
    # machine whose cores the nodes share, that sets how fast configure can grow.
    for row in rows[1:]:
        added = row["nodes"] - base["nodes"]
        before, after = base["configure_cpu"], row["configure_cpu"]
        nodes_each = (f"{(after['nodes_s'] - before['nodes_s']) / added:.2f}s"
                      if None not in (after["nodes_s"], before["nodes_s"]) else "?")
        print(f"report: CPU before launch per node added ({base['nodes']} -> {row['nodes']} nodes): nodes {nodes_each}, "
              f"controller, ssh and engine {(after['controller_s'] - before['controller_s']) / added:.2f}s", flush=True)
    write("docker_scaling", {"steps": args.steps, "cpus": os.cpu_count(), "rows": rows, "goals": goals, "profile": profile})
    plot(rows, os.path.join(RESULTS, "docker_scaling.png"))
    print("written: bench/results/docker_scaling.png")


if __name__ == "__main__":
    main()
