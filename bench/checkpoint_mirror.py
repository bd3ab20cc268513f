# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""What does keeping the checkpoints at a URL cost the training?

For each round, in one run on this machine, the same parameter_server job (1 chief, 2 workers,
1 ps as local processes, a checkpoint every 50 steps) trains three times:
  baseline   checkpoints on the chief's disk only;
  file://    plus a copy in another local folder (--checkpoint_url file://...);
  s3://      plus a copy in a bucket of the S3 emulator (moto) on this machine.
The copies run in a background thread, so the ratio of examples/s against the baseline is the
figure to watch (1.00: training does not wait). Writes bench/results/checkpoint_mirror.json.
Usage: bench/checkpoint_mirror.py [--rounds 2] [--steps 2000]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile

from ansible.plugins.loader import init_plugin_loader

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The collection, the tests' helpers included, by its name as the ansible CLIs load it, from where make setup links it.
init_plugin_loader([os.path.join(REPO, ".collections")])

from ansible_collections.tfdist.cluster.tests.emulators.ec2 import ec2_emulator  # noqa: E402
from ansible_collections.tfdist.cluster.tests.runtime import local_cluster as lc  # noqa: E402 - real TF tasks


def train(work, steps, url, env):
    dirs = lc.start_cluster(work, lc.layout(workers=2, ps=1), gone_grace=3, steps=steps, checkpoint_every=50,
                            checkpoint_url=url, env=env)
    try:
        chief = lc.wait_exit(dirs["chief-0"], 900)
        if chief["returncode"] != 0:
            raise SystemExit(lc.log_tail(dirs["chief-0"]))
    finally:
        lc.stop_all(dirs)
    with open(os.path.join(work, "result.json")) as f:
        result = json.load(f)
    return {"examples_per_sec": result["examples_per_sec"], "training_seconds": result["training_seconds"]}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--steps", type=int, default=2000)
    a = p.parse_args()
    runs = {"baseline": [], "file://": [], "s3://": []}
    with ec2_emulator() as emulator, tempfile.TemporaryDirectory(prefix="tfdist-bench-") as tmp:
        emulator.boto3_client("s3").create_bucket(Bucket="bench")
        for n in range(a.rounds):
            for kind in runs:
                url = {"baseline": "", "file://": "file://%s/copy-%d" % (tmp, n), "s3://": "s3://bench/run-%d" % n}[kind]
                work = os.path.join(tmp, "%s-%d" % (kind.rstrip(":/"), n))
                figures = train(work, a.steps, url, emulator.env)  # S3's credentials, as training_env gives them
                runs[kind].append(figures)
                print("round %d %-8s %8.1f examples/s, %5.1f s training" % (
                    n + 1, kind, figures["examples_per_sec"], figures["training_seconds"]), flush=True)
    base = statistics.median(r["examples_per_sec"] for r in runs["baseline"])
    summary = {kind: {"examples_per_sec": statistics.median(r["examples_per_sec"] for r in rs),
                      "ratio_to_baseline": round(statistics.median(r["examples_per_sec"] for r in rs) / base, 3)}
               for kind, rs in runs.items()}
    for kind, s in summary.items():
        print("%-8s median %8.1f examples/s, x%.3f of the baseline" % (kind, s["examples_per_sec"], s["ratio_to_baseline"]))
    os.makedirs(os.path.join(REPO, "bench", "results"), exist_ok=True)
    with open(os.path.join(REPO, "bench", "results", "checkpoint_mirror.json"), "w") as f:
        json.dump({"steps": a.steps, "rounds": a.rounds, "checkpoint_every": 50, "runs": runs, "summary": summary},
                  f, indent=1)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
