# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""How much does tfdist add on top of starting the TF processes by hand?

For each round, in one run on this machine:
  deployed  `ansible-playbook playbooks/deploy.yml` on cloud=local for a fresh cluster,
            timed from the command's start to the chief's first training step;
  by hand   the very scripts and TF_CONFIGs that deploy rendered, started directly with
            `python train.py` (no Ansible, no supervisor) in a fresh job folder,
            timed from the first process start to the chief's first step (the floor).
It prints both, their ratio, and the examples/s of each job, and writes
bench/results/deploy_overhead.json. Each goal's ratio is the median of its rounds' ratios: the two runs of a round
are made back to back, so a change in this machine's speed between rounds (the examples/s of the same job have moved
by 15 % from one round to the next here) falls on both sides of a round's ratio. Usage: bench/deploy_overhead.py
[--rounds 5] [--steps 2000]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from ansible.plugins.loader import init_plugin_loader

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The collection, the tests' helpers included, by its name as the ansible CLIs load it, from where make setup links it.
init_plugin_loader([os.path.join(REPO, ".collections")])

from goals import goal, write  # noqa: E402

from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist._cluster import launch_order, task_name  # noqa: E402
from ansible_collections.tfdist.cluster.tests.ansible_cli import run_playbook, tail  # noqa: E402
from ansible_collections.tfdist.cluster.tests.processes import free_port_block  # noqa: E402

CLUSTER = "bench"


def playbook(name, *extra):
    return run_playbook(f"playbooks/{name}.yml", f"cluster_name={CLUSTER}", *extra)


def deploy(*extra):
    """deploy.yml on the bench cluster; returns (its start time, the run's summary.json)."""
    started = time.time()
    run = playbook("deploy", *extra)
    if run.returncode != 0:
        sys.exit("deploy failed:\n" + tail(run))
    with open(os.path.join(REPO, "artifacts", CLUSTER, "summary.json")) as handle:
        return started, json.load(handle)


def deployed_round(steps, workers, ps):
    """Fresh cluster, full deploy; returns (seconds to first step, examples/s, summary, its first TF port)."""
    playbook("destroy")
    base = free_port_block(1 + workers + ps)
    started, summary = deploy(f"tf_train_steps={steps}", f"tf_workers={workers}", f"tf_ps={ps}", f"tf_port_base={base}")
    return summary["first_step_at"] - started, summary["examples_per_sec"], summary, base


def changed_rerun(steps, workers, ps, base):
    """The live cluster deployed again with one setting changed (more steps): seconds to the new run's first step."""
    started, summary = deploy(f"tf_train_steps={steps}", f"tf_workers={workers}", f"tf_ps={ps}", f"tf_port_base={base}")
    return summary["first_step_at"] - started


def by_hand_round(job_dir, python):
    """The deployed scripts, started directly in a new job folder."""
    work_dir = tempfile.mkdtemp(prefix="tfdist-bench-")
    shutil.copytree(os.path.join(job_dir, "data"), os.path.join(work_dir, "data"))
    # Servers first, as the training role launches them.
    folders = [name.rsplit("-", 1) for name in os.listdir(os.path.join(job_dir, "tasks"))]
    tasks = [task_name(t["type"], t["index"]) for t in launch_order([{"type": kind, "index": index} for kind, index in folders])]
    procs = []
    started = time.time()
    try:
        for name in tasks:
            src = os.path.join(job_dir, "tasks", name)
            task_dir = os.path.join(work_dir, "tasks", name)
            os.makedirs(task_dir)
            with open(os.path.join(src, "tf_config.json")) as handle:
                tf_config = json.dumps(json.load(handle))
            log = open(os.path.join(task_dir, "task.log"), "w")
            procs.append((name, subprocess.Popen(
                [python, os.path.join(src, "train.py"), "--work_dir", work_dir, "--task_dir", task_dir],
                # TMPDIR in the task's folder, as the supervisor gives a deployed task: TensorFlow's autograph files,
                # which a program leaving by os._exit does not remove, go with the job folder.
                env=dict(os.environ, TF_CONFIG=tf_config, TMPDIR=task_dir), stdout=log, stderr=subprocess.STDOUT)))
        chief = dict(procs)["chief-0"]
        if chief.wait(timeout=900) != 0:
            sys.exit("hand-started chief failed, see " + os.path.join(work_dir, "tasks", "chief-0", "task.log"))
        with open(os.path.join(work_dir, "result.json")) as handle:
            result = json.load(handle)
        return result["first_step_at"] - started, result["examples_per_sec"]
    finally:
        for _name, proc in procs:
            if proc.poll() is None:
                proc.terminate()
        for _name, proc in procs:
            proc.wait(timeout=30)
        shutil.rmtree(work_dir, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--ps", type=int, default=1)
    args = parser.parse_args()

    rows = []
    for round_no in range(1, args.rounds + 1):
        deploy_s, deploy_eps, summary, base = deployed_round(args.steps, args.workers, args.ps)
        job_dir = os.path.join(REPO, ".cache", "run", CLUSTER)
        hand_s, hand_eps = by_hand_round(job_dir, sys.executable)
        rerun_s = changed_rerun(args.steps + 500, args.workers, args.ps, base)
        rows.append({"deploy_to_first_step_s": deploy_s, "hand_to_first_step_s": hand_s, "rerun_to_first_step_s": rerun_s,
                     "deploy_examples_per_sec": deploy_eps, "hand_examples_per_sec": hand_eps,
                     "deploy_phases_s": summary["seconds"]})
        print(f"round {round_no}: to first step deploy {deploy_s:.1f}s, by hand {hand_s:.1f}s "
              f"(x{deploy_s / hand_s:.2f}); re-run with more steps {rerun_s:.1f}s (x{rerun_s / hand_s:.2f}); "
              f"examples/s deploy {deploy_eps:.0f}, by hand {hand_eps:.0f}", flush=True)
    playbook("destroy")
    shutil.rmtree(os.path.join(REPO, "artifacts", CLUSTER), ignore_errors=True)

    def median(key):
        return statistics.median(r[key] for r in rows)

    # Each round's ratios, and their medians for the goals.
    ratios = {"start_ratio_deploy_over_hand": ("deploy_to_first_step_s", "hand_to_first_step_s"),
              "rerun_ratio_over_hand": ("rerun_to_first_step_s", "hand_to_first_step_s"),
              "throughput_ratio_deploy_over_hand": ("deploy_examples_per_sec", "hand_examples_per_sec")}
    for row in rows:
        row.update({name: round(row[num] / row[den], 3) for name, (num, den) in ratios.items()})
    report = {
        "setup": {"cloud": "local", "workers": args.workers, "ps": args.ps, "steps": args.steps,
                  "rounds": args.rounds, "cpus": os.cpu_count()},
        "rounds": rows,
        "median": {key: median(key) for key in rows[0] if key != "deploy_phases_s"},
    }
    report.update({name: report["median"][name] for name in ratios})
    m = report["median"]
    print()
    print(f"start to first step (median of {args.rounds}): deploy {m['deploy_to_first_step_s']:.1f}s, "
          f"re-run with more steps {m['rerun_to_first_step_s']:.1f}s, by hand {m['hand_to_first_step_s']:.1f}s")
    print(f"examples/s (median): deploy {m['deploy_examples_per_sec']:.0f}, by hand {m['hand_examples_per_sec']:.0f}")
    for name in ratios:
        print(f"{name}, by round: {' '.join(f'{row[name]:.2f}' for row in rows)}")
    report["goals"] = [
        goal("local first step, deploy / by hand", report["start_ratio_deploy_over_hand"], 1.5),
        goal("local first step of a re-run with more steps / by hand", report["rerun_ratio_over_hand"], 1.5),
        goal("examples/s, deploy / by hand", report["throughput_ratio_deploy_over_hand"], 0.97, at_most=False),
    ]
    write("deploy_overhead", report)


if __name__ == "__main__":
    main()
