#!/usr/bin/env bash
# Make the Docker Engine answer `docker info`, on a dev box or a fresh CI machine.
#
# Usage: ensure-docker.sh   (roles/provision/files/, run by the provision role for the docker cloud;
#                             scripts/ensure-docker.sh runs it from a checkout)
#   Exits 0 at once, silently, when `docker info` already works. Otherwise installs Debian's docker.io
#   when dockerd (or the docker client) is missing, starts dockerd in the background (no systemd here:
#   nothing else starts it) and waits until it answers. What it did goes to stdout (empty: nothing to do,
#   which callers may use as "changed"), errors to stderr with the end of dockerd's log.
# Environment:
#   TFDIST_DOCKERD_LOG      dockerd's log file (default /var/log/tfdist-dockerd.log)
#   TFDIST_DOCKER_TIMEOUT   seconds to wait for the daemon (default 60)
set -euo pipefail

LOG=${TFDIST_DOCKERD_LOG:-/var/log/tfdist-dockerd.log}
TIMEOUT=${TFDIST_DOCKER_TIMEOUT:-60}

say() { echo "ensure-docker: $*"; }
err() { echo "ensure-docker: $*" >&2; }
docker_ok() { docker info >/dev/null 2>&1; }

docker_ok && exit 0

# One start at a time (two deploys, or two test workers, at once): the second waits, then finds it answering.
# A lock file this user cannot open (another user's) only costs that guard.
if exec 9>>"${TMPDIR:-/tmp}/tfdist-ensure-docker.lock"; then flock 9; fi 2>/dev/null
docker_ok && exit 0

SUDO=
if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null || { err "not root and no sudo: cannot install or start dockerd"; exit 1; }
    SUDO=sudo
fi

if ! command -v dockerd >/dev/null || ! command -v docker >/dev/null; then
    say "installing docker.io from Debian"
    # apt's chatter (the package's service start fails without an init system) is shown only on failure.
    if ! out=$($SUDO apt-get update -qq 2>&1 &&
               DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq -o Dpkg::Use-Pty=0 docker.io 2>&1); then
        echo "$out" >&2
        err "installing docker.io failed"
        exit 1
    fi
fi

# A dockerd that is already starting (another script, the package's init script) is waited for, not doubled.
if ! pgrep -x dockerd >/dev/null; then
    say "starting dockerd (log: $LOG)"
    $SUDO mkdir -p "$(dirname "$LOG")"
    # setsid: the daemon must outlive this script and the process group of whoever called it; it must not
    # keep the lock (fd 9) either.
    $SUDO setsid dockerd </dev/null >>"$LOG" 2>&1 9>&- &
fi

for ((waited = 0; waited < TIMEOUT; waited++)); do
    docker_ok && { say "docker is ready"; exit 0; }
    if ! pgrep -x dockerd >/dev/null; then
        err "dockerd exited; last lines of $LOG:"
        tail -n 20 "$LOG" >&2 || true
        exit 1
    fi
    sleep 1
done
err "dockerd did not answer within ${TIMEOUT}s; last lines of $LOG:"
tail -n 20 "$LOG" >&2 || true
exit 1
