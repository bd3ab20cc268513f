#!/usr/bin/env bash
# The collection on the current ansible-core releases that need a newer Python (3.12+) than this machine's:
# in a Debian 13 (trixie) container with Python 3.13, for each release in turn, ansible-test sanity (the tests
# given), ansible-test units, playbooks/check.yml on cloud=local, then a small deploy on cloud=local (a few
# training steps) and its destroy.
#
# Usage: scripts/core-matrix.sh [SANITY_OPTION...]   (make core-matrix; e.g. --test pep8 --test pylint)
#
# No registry serves base images: the controller image (tfdist/controller:trixie-tf<version>) is the docker cloud's base made
# by debootstrap (build-node-image.sh --base-only with TFDIST_DEBIAN_SUITE=trixie) plus git, TensorFlow in the
# system Python (cloud=local trains in the controller's Python) and this machine's CA bundle for pip. Built once;
# an existing image is kept (--force rebuilds it), a new TensorFlow pin makes another.
# The container gets a copy of the files git tracks (and untracked ones it does not ignore), never the checkout:
# nothing it runs writes into the clone, and it runs as the calling user. What it keeps between runs (pip's cache,
# ansible-test's virtualenvs and per-release copies) lies in .cache/core-matrix.
# Each release gets a virtualenv with ansible-core and requirements.txt that sees the system's TensorFlow.
#
# Environment:
#   TFDIST_CORE_VERSIONS      the releases (default: the newest patch of each release PyPI serves beyond 2.19,
#                             which make sanity, units and the tests run on Python 3.11)
#   TFDIST_CONTROLLER_IMAGE   the image (tfdist/controller:trixie-tf<TFDIST_TF_VERSION>)
#   TFDIST_TF_VERSION         its tensorflow-cpu (default: requirements-dev.txt's pin)
#   TFDIST_CA_BUNDLE          CA bundle pip trusts in the image (default /etc/ssl/certs/ca-certificates.crt)
set -euo pipefail

CORE_VERSIONS=${TFDIST_CORE_VERSIONS:-2.20.10 2.21.5}
CA_BUNDLE=${TFDIST_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
# A deploy that trains at all, quickly: the default cluster (chief, 2 workers, ps) for a few steps.
DEPLOY_STEPS=20

START=$SECONDS
say() { echo "core-matrix: [$((SECONDS - START))s] $*"; }

# ---------------------------------------------------------------- inside the container
# This script comes as bash -c's text, the copy of the collection as a tar on stdin; /cache is .cache/core-matrix.
if [[ ${1:-} == --in-container ]]; then
    shift
    export HOME=/cache/home USER=${USER:-tfdist}
    ROOT=/tmp/ansible_collections/tfdist/cluster
    mkdir -p "$ROOT" "$HOME" /cache/ansible-test
    tar -x -C "$ROOT"
    cd "$ROOT"
    # scripts/ansible-test.sh copies the files git knows to .cache/ansible-test: a git tree, whose copies (with
    # ansible-test's virtualenvs in them) are kept.
    git init --quiet && git add --all
    git -c user.name=tfdist -c user.email=tfdist@localhost commit --quiet -m "copy for core-matrix"
    mkdir -p .cache .collections/ansible_collections/tfdist
    ln -s /cache/ansible-test .cache/ansible-test
    ln -s ../../.. .collections/ansible_collections/tfdist/cluster
    export ANSIBLE_CONFIG=$ROOT/ansible.cfg TFDIST_HOME=$ROOT
    BASE_PATH=$PATH
    python=$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    # Every step runs (a later one may fail for another reason): the failed ones are listed at the end.
    failed=()
    step() {
        local name=$1
        shift
        say "ansible-core $version: $name"
        "$@" || failed+=("ansible-core $version: $name")
    }
    # The checks below run through step (shellcheck: SC2329, "never invoked").
    # shellcheck disable=SC2329
    trained() {
        "$venv/bin/python" - "artifacts/$cluster/summary.json" "$DEPLOY_STEPS" <<'EOF'
import json, sys
summary = json.load(open(sys.argv[1]))
assert summary["steps"] == int(sys.argv[2]), "trained %s steps, not %s" % (summary["steps"], sys.argv[2])
EOF
    }
    # shellcheck disable=SC2329
    in_inventory() { [[ $("$venv/bin/ansible-inventory" --graph) == *"$cluster-local"* ]]; }
    # shellcheck disable=SC2329
    left_inventory() { ! in_inventory; }
    for version in $CORE_VERSIONS; do
        venv=/tmp/core-$version
        cluster=core-${version//./-}
        say "ansible-core $version on Python $python: virtualenv"
        python3 -m venv --system-site-packages "$venv"
        "$venv/bin/pip" install --quiet --progress-bar off "ansible-core==$version" -r requirements.txt
        export PATH=$venv/bin:$BASE_PATH
        step "ansible-test sanity $*" env BIN="$venv/bin" scripts/ansible-test.sh sanity --venv --python "$python" "$@"
        step "ansible-test units" env BIN="$venv/bin" scripts/ansible-test.sh units --venv --python "$python"
        playbook=(ansible-playbook -e cloud=local -e "cluster_name=$cluster")
        step "check.yml" "${playbook[@]}" playbooks/check.yml
        step "deploy.yml ($DEPLOY_STEPS steps)" "${playbook[@]}" playbooks/deploy.yml -e "tf_train_steps=$DEPLOY_STEPS"
        step "the model trained $DEPLOY_STEPS steps" trained
        step "the cluster is in the inventory" in_inventory
        step "destroy.yml" "${playbook[@]}" playbooks/destroy.yml
        step "the cluster left the inventory" left_inventory
    done
    if (( ${#failed[@]} )); then
        printf 'core-matrix: failed: %s\n' "${failed[@]}"
        exit 1
    fi
    say "passed: ansible-core $CORE_VERSIONS"
    exit 0
fi

# ---------------------------------------------------------------- on this machine
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
CACHE=$ROOT/.cache/core-matrix
# TensorFlow of requirements-dev.txt (the one pin of the repository's TF), and the image named after it: a new pin
# builds a new image.
TF_VERSION=${TFDIST_TF_VERSION:-$(sed -n 's/^tensorflow-cpu==\([0-9.]*\).*/\1/p' "$ROOT/requirements-dev.txt")}
IMAGE=${TFDIST_CONTROLLER_IMAGE:-tfdist/controller:trixie-tf$TF_VERSION}

build_image() {
    [ -r "$CA_BUNDLE" ] || { echo "core-matrix: CA bundle $CA_BUNDLE not readable (set TFDIST_CA_BUNDLE)" >&2; exit 1; }
    local base=tfdist/node:trixie builder=tfdist-build-controller-$$
    TFDIST_DEBIAN_SUITE=trixie TFDIST_BASE_IMAGE=$base bash "$HERE/build-node-image.sh" --base-only
    say "building $IMAGE: git, tensorflow-cpu==$TF_VERSION (pip cache: $CACHE/pip)"
    mkdir -p "$CACHE/pip"
    trap 'docker rm -f "$builder" >/dev/null 2>&1 || true' EXIT
    # Debian's Python is marked as managed by apt: the image is this one check's, so pip may install into it.
    docker run --name "$builder" -v "$CACHE/pip:/mnt/pip-cache" -v "$CA_BUNDLE:/mnt/host-ca.crt:ro" "$base" sh -ec "
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o Dpkg::Use-Pty=0 --no-install-recommends git >/dev/null
        rm -rf /var/lib/apt/lists/*
        cp /mnt/host-ca.crt /etc/ssl/certs/tfdist-ca-bundle.crt
        printf '[global]\ncert = /etc/ssl/certs/tfdist-ca-bundle.crt\nbreak-system-packages = true\n' >/etc/pip.conf
        PIP_CACHE_DIR=/mnt/pip-cache pip install --quiet --progress-bar off tensorflow-cpu==$TF_VERSION
        python3 -c 'import sys, tensorflow as tf; print(\"python\", sys.version.split()[0], \"tensorflow\", tf.__version__)'"
    docker commit --change 'CMD ["bash"]' --change 'ENV LANG=C.UTF-8 TF_CPP_MIN_LOG_LEVEL=2' \
        --message "tfdist controller: debian trixie, tensorflow-cpu $TF_VERSION" "$builder" "$IMAGE" >/dev/null
    docker rm "$builder" >/dev/null
    trap - EXIT
    say "built $IMAGE"
}

FORCE=0
if [[ ${1:-} == --force ]]; then FORCE=1; shift; fi
bash "$HERE/ensure-docker.sh"
if [[ $FORCE == 1 ]] || ! docker image inspect "$IMAGE" >/dev/null 2>&1; then
    build_image
fi
mkdir -p "$CACHE"
say "ansible-core $CORE_VERSIONS in $IMAGE"
cd "$ROOT"
git ls-files -z --cached --others --exclude-standard --deduplicate |
    while IFS= read -r -d '' path; do
        if [[ -e $path || -L $path ]]; then printf '%s\0' "$path"; fi
    done |
    tar --null -c -T - |
    # cloud=local keeps a cluster in a network namespace of its own (local_network, its unit tests and the deploy):
    # Docker's default seccomp profile forbids the unprivileged user namespace it then makes.
    docker run --rm -i --user "$(id -u):$(id -g)" --security-opt seccomp=unconfined -v "$CACHE:/cache" \
        -e "TFDIST_CORE_VERSIONS=$CORE_VERSIONS" "$IMAGE" bash -c "$(cat "$0")" core-matrix --in-container "$@"
