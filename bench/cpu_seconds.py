# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""The CPU seconds the benches split a deploy's time with: the whole machine's, and its containers' (the docker nodes),
read from /proc/stat and the containers' cgroups."""

from __future__ import annotations

import glob
import os
import time

# The containers' CPU accounting: cgroup v1 (cpuacct.usage, ns) and cgroup v2 (cpu.stat usage_usec), either driver.
CGROUP_V1 = ("/sys/fs/cgroup/cpuacct/docker/*/cpuacct.usage", "/sys/fs/cgroup/cpu,cpuacct/docker/*/cpuacct.usage")
CGROUP_V2 = ("/sys/fs/cgroup/system.slice/docker-*.scope/cpu.stat", "/sys/fs/cgroup/docker/*/cpu.stat")


def machine_cpu_s():
    """CPU seconds this machine has been busy (every core, /proc/stat without idle and iowait)."""
    with open("/proc/stat") as handle:
        fields = [int(value) for value in handle.readline().split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def containers_cpu_s():
    """CPU seconds used by the running containers, or None where their cgroups cannot be read."""
    total, found = 0.0, False
    for path in (p for pattern in CGROUP_V1 for p in glob.glob(pattern)):
        try:
            with open(path) as handle:
                total += int(handle.read()) / 1e9
            found = True
        except (OSError, ValueError):
            pass  # a container that just went away
    for path in (p for pattern in CGROUP_V2 for p in glob.glob(pattern)):
        try:
            with open(path) as handle:
                usage = dict(line.split() for line in handle)
            total += int(usage["usage_usec"]) / 1e6
            found = True
        except (OSError, ValueError, KeyError):
            pass
    return total if found else None


def sample():
    """(now, machine_cpu_s(), containers_cpu_s()): one reading of the clock and both counters."""
    return time.time(), machine_cpu_s(), containers_cpu_s()
