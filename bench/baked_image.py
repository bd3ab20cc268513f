# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""What an image baked once saves: from the command's start to the first training step of a fresh cluster of 3 nodes
(1 chief, 1 worker, 1 ps, unless told), on three kinds of node, in one run on this machine:
  stock     cloud=docker-vm on the stock VM-like image (tfdist/node-vm: systemd, cloud-init, no TensorFlow): the
            tensorflow role installs TensorFlow on each node from the controller's wheelhouse, as on a cloud's stock
            image (the bake, first, fills the wheelhouse: no round downloads anything);
  baked     the same cloud, booting the image that playbooks/image.yml baked from it (-e image=baked): nothing to install;
  prebuilt  cloud=docker on tfdist/node-tf, the image with TensorFlow that scripts/build-node-image.sh builds (root logs
            in, no init system, no cloud-init): what the docker cloud boots today.
Each round deploys the three, one after the other, each a fresh cluster destroyed after; a goal is the median of its
rounds' ratios (both sides of a ratio from the same round). Goals: baked <= 1.2 x prebuilt; stock <= 3 x baked.
The bake's own time is reported too. The image is removed at the end, and recorded in a folder of the bench's own, not
in images/. Writes bench/results/baked_image.json; another shape (--workers, --ps) writes baked_image-N-nodes.json:
with --ps 0 (multi_worker_mirrored), a chief and a worker, each node has a core of this machine's two to itself, as a
cloud's node has its own.
Usage: bench/baked_image.py [--rounds 3] [--steps 200] [--workers 1] [--ps 1]
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
import uuid

from ansible.plugins.loader import init_plugin_loader

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The collection, the tests' helpers included, by its name as the ansible CLIs load it, from where make setup links it.
init_plugin_loader([os.path.join(REPO, ".collections")])

from goals import goal, write  # noqa: E402

from ansible_collections.tfdist.cluster.tests.ansible_cli import remove_artifacts, run_playbook, tail  # noqa: E402

CA_BUNDLE = os.environ.get("TFDIST_CA_BUNDLE", "/etc/ssl/certs/ca-certificates.crt")
# The kinds of node, each a cloud and its settings, in the order a round deploys them.
KINDS = {
    "prebuilt": ("cloud=docker",),
    "baked": ("cloud=docker-vm", "image=baked"),
    "stock": ("cloud=docker-vm",),
}
TIMEOUT = 3600


def playbook(name, *extra):
    """playbooks/NAME.yml with extra -e settings, stopping the bench when it fails; its seconds."""
    started = time.time()
    run = run_playbook(f"playbooks/{name}.yml", *extra, env={"TFDIST_CA_BUNDLE": CA_BUNDLE}, timeout=TIMEOUT)
    if run.returncode != 0:
        sys.exit(f"{name} {' '.join(extra)} failed:\n{tail(run)}")
    return time.time() - started


def first_step(kind, cluster, steps, records, workers, ps):
    """A fresh cluster of the kind, deployed: seconds from the command's start to its first step, and its phases."""
    started = time.time()
    # Without a ps, the strategy that needs none (chief and workers mirror the variables).
    strategy = "parameter_server" if ps else "multi_worker_mirrored"
    playbook("deploy", *KINDS[kind], f"cluster_name={cluster}", f"tf_workers={workers}", f"tf_ps={ps}",
             f"tf_strategy={strategy}", f"tf_train_steps={steps}",
             f"provision_images_dir={records}")
    with open(os.path.join(REPO, "artifacts", cluster, "summary.json")) as handle:
        summary = json.load(handle)
    playbook("destroy", KINDS[kind][0], f"cluster_name={cluster}")
    remove_artifacts(cluster)
    return summary["first_step_at"] - started, summary["seconds"]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--ps", type=int, default=1)
    args = parser.parse_args()
    for flags in ((), ("--vm",)):
        if subprocess.run(["bash", os.path.join(REPO, "scripts", "build-node-image.sh"), *flags], check=False).returncode:
            sys.exit("the node images could not be built")

    suffix = uuid.uuid4().hex[:8]
    image, records = f"tfdist-bench-{suffix}", tempfile.mkdtemp(prefix="tfdist-bench-images-")
    on_vm = ("cloud=docker-vm", f"provision_images_dir={records}")
    rows = []
    try:
        bake_s = playbook("image", *on_vm, f"image_name={image}", f"image_cluster=bench-image-{suffix}")
        print(f"bake: {bake_s:.1f}s (image {image}, the wheelhouse filled on the way if it was empty)", flush=True)
        for round_no in range(1, args.rounds + 1):
            row = {}
            for kind in KINDS:
                seconds, phases = first_step(kind, f"bench-{kind}-{suffix}", args.steps, records, args.workers, args.ps)
                row[f"{kind}_to_first_step_s"] = round(seconds, 1)
                row[f"{kind}_phases_s"] = phases
            row["baked_over_prebuilt"] = round(row["baked_to_first_step_s"] / row["prebuilt_to_first_step_s"], 3)
            row["stock_over_baked"] = round(row["stock_to_first_step_s"] / row["baked_to_first_step_s"], 3)
            rows.append(row)
            print(f"round {round_no}: to first step stock {row['stock_to_first_step_s']}s, baked "
                  f"{row['baked_to_first_step_s']}s, prebuilt {row['prebuilt_to_first_step_s']}s: baked / prebuilt "
                  f"x{row['baked_over_prebuilt']:.2f}, stock / baked x{row['stock_over_baked']:.2f}", flush=True)
    finally:
        for kind in KINDS:
            run_playbook("playbooks/destroy.yml", KINDS[kind][0], f"cluster_name=bench-{kind}-{suffix}")
        run_playbook("playbooks/image.yml", *on_vm, "image_state=absent", f"image_name={image}")
        shutil.rmtree(records, ignore_errors=True)

    def median(key):
        return statistics.median(row[key] for row in rows)

    report = {
        "setup": {"nodes": 1 + args.workers + args.ps, "chief": 1, "workers": args.workers, "ps": args.ps,
                  "steps": args.steps, "rounds": args.rounds,
                  "cpus": os.cpu_count()},
        "bake_s": round(bake_s, 1),
        "rounds": rows,
        "median": {key: median(key) for key in rows[0] if not key.endswith("_phases_s")},
    }
    report["goals"] = [
        goal("first step from a baked image / the prebuilt TF image", report["median"]["baked_over_prebuilt"], 1.2),
        goal("first step on the stock image / from a baked image", report["median"]["stock_over_baked"], 3),
    ]
    nodes = report["setup"]["nodes"]
    write("baked_image" if nodes == 3 else f"baked_image-{nodes}-nodes", report)


if __name__ == "__main__":
    main()
