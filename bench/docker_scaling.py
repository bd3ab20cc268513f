# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""How does configuring a docker cluster grow with its size, and what does a re-run cost?

For N in --sizes (default 2 4 8 16) nodes, in one run on this machine: a fresh cluster of
1 chief + N-1 workers (multi_worker_mirrored, one TF task per container) is deployed with
`playbooks/deploy.yml -e cloud=docker`, then the same command runs again (nothing to change:
the job has finished), then the cluster is destroyed. It reports the configure time
(command start to launch: provision + install + lay down), the whole deploy, the idempotent
re-run as a fraction of the first run, and the growth against the smallest cluster.
Clusters above --large nodes (default 8) train a tiny job: what grows there is Ansible's fan-out.
Writes bench/results/docker_scaling.json.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.dirname(sys.executable)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from goals import goal, write  # noqa: E402

# A host's line of the PLAY RECAP: its name and its changed count.
RECAP_LINE = re.compile(r"^(\S+)\s+:\s+ok=\d+\s+changed=(\d+)", re.MULTILINE)


def playbook(name, cluster, *extra):
    cmd = [os.path.join(BIN, "ansible-playbook"), f"playbooks/{name}.yml", "-e", "cloud=docker",
           "-e", f"cluster_name={cluster}"]
    for var in extra:
        cmd += ["-e", var]
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), PATH=BIN + os.pathsep + os.environ["PATH"])
    started = time.time()
    run = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    if run.returncode != 0:
        sys.exit(f"{name} of {cluster} failed:\n{run.stdout[-4000:]}")
    return started, time.time() - started, run.stdout


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[2, 4, 8, 16])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--large", type=int, default=8,
                        help="clusters above this many nodes run a tiny job (--large-steps): the point is the fan-out")
    parser.add_argument("--large-steps", type=int, default=20)
    args = parser.parse_args()
    for script in ("ensure-docker.sh", "build-node-image.sh"):
        subprocess.run(["bash", os.path.join(REPO, "scripts", script)], check=True)

    rows = []
    for nodes in args.sizes:
        cluster = f"bench-{nodes}"
        playbook("destroy", cluster)
        steps = args.steps if nodes <= args.large else args.large_steps
        extra = ("tf_strategy=multi_worker_mirrored", f"tf_workers={nodes - 1}", f"tf_train_steps={steps}")
        started, first, _output = playbook("deploy", cluster, *extra)
        with open(os.path.join(REPO, "artifacts", cluster, "summary.json")) as handle:
            summary = json.load(handle)
        configure = summary["seconds"]["provision"] + summary["seconds"]["install"]
        launched = float(summary.get("first_step_at", started)) - started - summary["seconds"]["launch_to_first_step"]
        _started, again, output = playbook("deploy", cluster, *extra)
        changed = {host: int(count) for host, count in RECAP_LINE.findall(output)}
        playbook("destroy", cluster)
        rows.append({"nodes": nodes, "steps": steps, "configure_s": round(launched, 1), "provision_install_s": round(configure, 1),
                     "deploy_s": round(first, 1), "rerun_s": round(again, 1), "rerun_fraction": round(again / first, 2),
                     "rerun_changed": changed})
        print(f"{nodes} nodes: configure {launched:.1f}s (provision+install {configure:.1f}s), "
              f"deploy {first:.1f}s, idempotent re-run {again:.1f}s = {again / first:.2f} of the first, "
              f"changed on {sum(1 for count in changed.values() if count)} of {len(changed)} hosts", flush=True)

    base = rows[0]
    for row in rows:
        row["configure_growth"] = round(row["configure_s"] / base["configure_s"], 2)
    print()
    print("configure time against the smallest cluster: "
          + ", ".join(f"{r['nodes']} nodes x{r['configure_growth']}" for r in rows))
    by_size = {row["nodes"]: row for row in rows}
    goals = []
    if 4 in by_size:
        goals.append(goal("docker 4 nodes, re-run that changes nothing / first deploy", by_size[4]["rerun_fraction"], 0.15))
        changed_hosts = sum(1 for count in by_size[4]["rerun_changed"].values() if count)
        goals.append(goal("docker 4 nodes, hosts the re-run changed", changed_hosts, 0))
    if 2 in by_size and 8 in by_size:
        goals.append(goal("docker configure time, 8 nodes / 2 nodes", by_size[8]["configure_s"] / by_size[2]["configure_s"], 1.5))
    for nodes in sorted(size for size in by_size if size > 8 and 2 in by_size):
        print(f"report: docker configure time, {nodes} nodes / 2 nodes: x{by_size[nodes]['configure_growth']}"
              f" ({by_size[nodes]['configure_s']}s)", flush=True)
    write("docker_scaling", {"steps": args.steps, "cpus": os.cpu_count(), "rows": rows, "goals": goals})


if __name__ == "__main__":
    main()
