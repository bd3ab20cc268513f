#!/usr/bin/env bash
# Build the local node images of tfdist's `docker` cloud. No registry is reachable, so nothing is pulled:
# the base image is a Debian rootfs made by debootstrap and imported, the TF and VM-like images are built on top of it.
#
# Usage: build-node-image.sh [--force] [--base-only | --vm]   (roles/provision/files/, run by the provision role
#        for the docker cloud; scripts/build-node-image.sh and `make images` run it from a checkout)
#   --force       rebuild the images even when they exist (by default an existing image is kept)
#   --base-only   build only the base image (what the driver's integration tests need)
#   --vm          build the base image and the VM-like node image, not the TF image (cloud=docker-vm)
#
# Images:
#   $TFDIST_BASE_IMAGE  (tfdist/node:bookworm)   Debian bookworm minbase with python3, sshd, sudo;
#                                                a container runs sshd and is reached like a VM
#   $TFDIST_NODE_IMAGE  (tfdist/node-tf:$TFDIST_TF_VERSION, i.e. tfdist/node-tf:2.21.0)
#                                                the image the docker cloud's nodes run: base +
#                                                /opt/tfdist/venv with tensorflow-cpu, so that deploys
#                                                do not download TensorFlow on every node
#   $TFDIST_VM_IMAGE    (tfdist/node-vm:bookworm) the VM-like node (cloud=docker-vm), a stock cloud image: base +
#                                                systemd as PID 1, cloud-init (NoCloud seed only), dbus, locales;
#                                                no TensorFlow. Run unprivileged, as the docker driver does:
#                                                -v /sys/fs/cgroup:/sys/fs/cgroup:ro --tmpfs /run --tmpfs /run/lock
# Environment:
#   TFDIST_TF_VERSION      tensorflow-cpu version for the TF image (2.21.0)
#   TFDIST_DEBIAN_SUITE    the base image's Debian release (bookworm; trixie for a newer Python, 3.13, with
#                          --base-only: scripts/core-matrix.sh's controller image); it names the default base image
#   TFDIST_DEBIAN_MIRROR   Debian mirror (default: the first one in this machine's apt sources)
#   TFDIST_PIP_CACHE       host pip cache, mounted into the TF build (default ~/.cache/pip)
#   TFDIST_CA_BUNDLE       CA bundle given to pip in the TF build, for TLS-intercepting proxies
#                          (default /etc/ssl/certs/ca-certificates.crt)
# Needs root (debootstrap); starts the Docker engine first with ensure-docker.sh (next to this script).
# Takes about a minute for the base image and a few more for the TF image; cached runs take a second.
set -euo pipefail

FORCE=0
BUILD=tf
for arg in "$@"; do
    case $arg in
        --force) FORCE=1 ;;
        --base-only) BUILD=base ;;
        --vm) BUILD=vm ;;
        -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "build-node-image: unknown argument $arg (see --help)" >&2; exit 2 ;;
    esac
done

TF_VERSION=${TFDIST_TF_VERSION:-2.21.0}
SUITE=${TFDIST_DEBIAN_SUITE:-bookworm}
BASE_IMAGE=${TFDIST_BASE_IMAGE:-tfdist/node:$SUITE}
TF_IMAGE=${TFDIST_NODE_IMAGE:-tfdist/node-tf:$TF_VERSION}
VM_IMAGE=${TFDIST_VM_IMAGE:-tfdist/node-vm:bookworm}
PIP_CACHE=${TFDIST_PIP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pip}
CA_BUNDLE=${TFDIST_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
PACKAGES=python3,python3-apt,python3-venv,python3-pip,sudo,procps,openssh-server,ca-certificates,iproute2
# Each container makes its own host keys (the image must not ship shared ones), then runs sshd.
SSHD_CMD='CMD ["/bin/sh", "-c", "mkdir -p /run/sshd && ssh-keygen -A && exec /usr/sbin/sshd -D -e"]'

START=$SECONDS
say() { echo "build-node-image: [$((SECONDS - START))s] $*"; }
err() { echo "build-node-image: $*" >&2; }
have_image() { docker image inspect "$1" >/dev/null 2>&1; }

debian_mirror() {
    if [ -n "${TFDIST_DEBIAN_MIRROR:-}" ]; then echo "$TFDIST_DEBIAN_MIRROR"; return; fi
    local uri
    # deb822 sources first (Debian 12 default), then one-line sources; security mirrors do not hold the suite.
    uri=$(sed -n 's/^URIs:[[:space:]]*//p' /etc/apt/sources.list.d/*.sources 2>/dev/null | tr ' ' '\n' |
          grep -v -e security -e '^$' | head -n 1 || true)
    if [ -z "$uri" ]; then
        uri=$(sed -n 's/^deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\{0,1\}\([^[:space:]]\+\).*/\2/p' \
              /etc/apt/sources.list 2>/dev/null | grep -v security | head -n 1 || true)
    fi
    echo "${uri:-http://deb.debian.org/debian}"
}

build_base() {
    command -v debootstrap >/dev/null || {
        say "installing debootstrap"
        local out
        if ! out=$(apt-get update -qq 2>&1 &&
                   DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o Dpkg::Use-Pty=0 debootstrap 2>&1); then
            echo "$out" >&2
            err "installing debootstrap failed"
            exit 1
        fi
    }
    local mirror rootfs
    mirror=$(debian_mirror)
    rootfs=$(mktemp -d /var/tmp/tfdist-rootfs.XXXXXX)
    trap 'rm -rf "$rootfs"' EXIT
    say "debootstrap $SUITE from $mirror (about 40-60 s)"
    if ! debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$rootfs" "$mirror" \
            >"$rootfs.log" 2>&1; then
        tail -n 30 "$rootfs.log" >&2
        err "debootstrap failed (full log: $rootfs.log)"
        exit 1
    fi
    rm -f "$rootfs.log"
    # Smaller image; no host keys or machine id shared by every container.
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/etc/ssh/ssh_host_*
    : >"$rootfs/etc/machine-id"
    say "importing $BASE_IMAGE"
    tar -C "$rootfs" -c . | docker import --change "$SSHD_CMD" --change 'ENV LANG=C.UTF-8' \
        --message "tfdist node: debian $SUITE minbase" - "$BASE_IMAGE" >/dev/null
    rm -rf "$rootfs"
    trap - EXIT
}

build_tf() {
    local builder=tfdist-build-tf-$$
    mkdir -p "$PIP_CACHE"
    [ -r "$CA_BUNDLE" ] || { err "CA bundle $CA_BUNDLE not readable (set TFDIST_CA_BUNDLE)"; exit 1; }
    say "installing tensorflow-cpu==$TF_VERSION into /opt/tfdist/venv (pip cache: $PIP_CACHE)"
    trap 'docker rm -f "$builder" >/dev/null 2>&1 || true' EXIT
    # The cache and the CA bundle are bind mounts under /mnt, so neither ends up in the committed image; pip
    # settings are exported in the script, not `docker run -e`, which `docker commit` would keep.
    docker run --name "$builder" \
        -v "$PIP_CACHE:/mnt/pip-cache" -v "$CA_BUNDLE:/mnt/host-ca.crt:ro" \
        "$BASE_IMAGE" sh -ec "
            export PIP_CERT=/mnt/host-ca.crt PIP_CACHE_DIR=/mnt/pip-cache
            export PIP_DISABLE_PIP_VERSION_CHECK=1 TF_CPP_MIN_LOG_LEVEL=2
            python3 -m venv /opt/tfdist/venv
            /opt/tfdist/venv/bin/pip install --quiet --cert /mnt/host-ca.crt tensorflow-cpu==$TF_VERSION
            /opt/tfdist/venv/bin/python -c 'import tensorflow as tf; print(\"tensorflow\", tf.__version__)'"
    say "committing $TF_IMAGE"
    docker commit --change "$SSHD_CMD" --change 'ENV LANG=C.UTF-8' \
        --message "tfdist node: tensorflow-cpu $TF_VERSION in /opt/tfdist/venv" "$builder" "$TF_IMAGE" >/dev/null
    docker rm "$builder" >/dev/null
    trap - EXIT
}

# What a cloud's stock image has that the base lacks: systemd as init, cloud-init, dbus, locales (cloud-init's locale
# module needs them). cloud-init reads its NoCloud seed only (the docker driver writes it; the network and the
# hostname are docker's) and makes one host key, ed25519, as sshd does where cloud-init did not (a container of
# this image started without a seed). Every container gets its own machine id and host key.
write_vm_files() {
    mkdir -p "$1/etc/cloud/cloud.cfg.d" "$1/etc/systemd/system/ssh.service.d"
    cat >"$1/etc/cloud/cloud.cfg.d/99_tfdist.cfg" <<'EOF'
# tfdist's VM-like docker node: user-data and meta-data come from the NoCloud seed in /var/lib/cloud/seed/nocloud;
# the network and the hostname are docker's; the locale is the one every glibc has (Debian's default, en_US.UTF-8,
# would have to be generated first).
datasource_list: [NoCloud]
network: {config: disabled}
preserve_hostname: true
locale: C.UTF-8
ssh_genkeytypes: [ed25519]
EOF
    cat >"$1/etc/systemd/system/ssh.service.d/host-key.conf" <<'EOF'
[Service]
ExecStartPre=/bin/sh -c 'test -e /etc/ssh/ssh_host_ed25519_key || ssh-keygen -q -t ed25519 -N "" -f /etc/ssh/ssh_host_ed25519_key'
EOF
}

build_vm() {
    local builder=tfdist-build-vm-$$ files log
    files=$(mktemp -d)
    log=$files.log
    # shellcheck disable=SC2064  # expanded now: the names are this function's locals
    trap "docker rm -f '$builder' >/dev/null 2>&1 || true; rm -rf '$files' '$log'" EXIT
    write_vm_files "$files"
    say "installing systemd, cloud-init, dbus and locales (about 30 s)"
    docker create --name "$builder" "$BASE_IMAGE" sh -ec '
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o Dpkg::Use-Pty=0 --no-install-recommends \
            systemd systemd-sysv cloud-init dbus locales
        systemctl enable --quiet ssh.service
        rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb /etc/ssh/ssh_host_*
        # No package lists, dated as old as can be: a node'"'"'s first apt task with a cache_valid_time fetches them
        # (a stock cloud image'"'"'s lists are days old), as the empty folder of a fresh build would not make it.
        touch -d @0 /var/lib/apt/lists
        : >/etc/machine-id' >/dev/null
    # etc/ only (not the temporary folder itself, whose mode would become the image's /), owned by root, world-readable.
    tar -C "$files" --owner=0 --group=0 --mode=go+rX,go-w -c etc | docker cp - "$builder:/"
    if ! docker start --attach "$builder" >"$log" 2>&1; then
        tail -n 30 "$log" >&2
        err "installing the VM-like node's packages failed"
        exit 1
    fi
    say "committing $VM_IMAGE"
    docker commit --change 'CMD ["/lib/systemd/systemd"]' \
        --message "tfdist node: debian $SUITE like a cloud VM (systemd, cloud-init)" "$builder" "$VM_IMAGE" >/dev/null
    # docker commit takes no STOPSIGNAL: systemd's orderly shutdown on `docker stop`, in a build of one line.
    # (The engine's note that its legacy builder is deprecated is shown only when the build fails.)
    if ! printf 'FROM %s\nSTOPSIGNAL SIGRTMIN+3\n' "$VM_IMAGE" | docker build --quiet --tag "$VM_IMAGE" - >"$log" 2>&1; then
        cat "$log" >&2
        exit 1
    fi
    docker rm "$builder" >/dev/null
    rm -rf "$files" "$log"
    trap - EXIT
}

size_of() { docker image inspect --format '{{.Size}}' "$1" | awk '{printf "%.0f MB", $1 / 1e6}'; }
image_id() { docker image inspect --format '{{.Id}}' "$1" 2>/dev/null || true; }

bash "$(dirname "$0")/ensure-docker.sh"

# One build at a time on this machine (two deploys, or two test workers, starting at once): the second
# waits, then finds the images the first one built.
# A lock file this user cannot open (another user's) only costs that guard.
if exec 9>>"${TMPDIR:-/tmp}/tfdist-build-node-image.lock"; then flock 9; fi 2>/dev/null

# Build an image with its build function unless it exists (or --force); note the image it replaces.
REPLACED=()
build_image() {
    local image=$1 build=$2
    if [ "$FORCE" = 1 ] || ! have_image "$image"; then
        REPLACED=("$(image_id "$image")" "${REPLACED[@]}")
        "$build"
        say "built $image ($(size_of "$image"))"
    else
        say "$image exists (--force rebuilds it)"
    fi
}

build_image "$BASE_IMAGE" build_base
case $BUILD in
    tf) build_image "$TF_IMAGE" build_tf ;;
    vm) build_image "$VM_IMAGE" build_vm ;;
esac
# A rebuild leaves the previous images untagged: remove them (the TF one first, it is built on the base)
# unless something still uses them (a container, another tag, a child image), so --force does not fill the disk.
for old in "${REPLACED[@]}"; do
    [ -n "$old" ] || continue
    if [ "$(docker image inspect --format '{{len .RepoTags}}' "$old" 2>/dev/null)" = 0 ]; then
        docker rmi "$old" >/dev/null 2>&1 || true
    fi
done
