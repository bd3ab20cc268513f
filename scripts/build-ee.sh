#!/usr/bin/env bash
# Build the execution environment image from the build context of `make ee-context` (ansible-builder create),
# with the local Docker engine.
#
# Usage: scripts/build-ee.sh CONTEXT   (make ee-image; tests/integration/test_execution_environment.py)
#
# No registry is reachable here, so execution-environment.yml's base image (debian:bookworm-slim) cannot be
# pulled: the base is the docker cloud's Debian bookworm image (tfdist/node:bookworm, made by debootstrap;
# build-node-image.sh --base-only) plus a CA bundle that pip trusts (PIP_CERT), for a proxy that re-signs HTTPS.
# The image is tagged with a hash of what it is built from (the context's Containerfile and scripts, the
# collection's MANIFEST.json, the base image): a second run with the same inputs builds nothing.
# Prints the image's name on its last line.
#
# Environment:
#   TFDIST_CA_BUNDLE   CA bundle baked into the base (default /etc/ssl/certs/ca-certificates.crt)
#   TFDIST_EE_BASE     the base image made here (default tfdist/ee-base:bookworm)
#   TFDIST_EE_IMAGE    the image's repository (default tfdist/ee); it is also tagged :latest
set -euo pipefail

CONTEXT=${1:?usage: build-ee.sh CONTEXT}
HERE=$(cd "$(dirname "$0")" && pwd)
CA_BUNDLE=${TFDIST_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
EE_BASE=${TFDIST_EE_BASE:-tfdist/ee-base:bookworm}
EE_IMAGE=${TFDIST_EE_IMAGE:-tfdist/ee}
NODE_BASE=${TFDIST_BASE_IMAGE:-tfdist/node:bookworm}

START=$SECONDS
say() { echo "build-ee: [$((SECONDS - START))s] $*" >&2; }

[ -f "$CONTEXT/Containerfile" ] || { echo "build-ee: $CONTEXT/Containerfile missing: run make ee-context" >&2; exit 1; }
[ -r "$CA_BUNDLE" ] || { echo "build-ee: CA bundle $CA_BUNDLE not readable (set TFDIST_CA_BUNDLE)" >&2; exit 1; }

# The Debian image (and the engine) of the docker cloud, built once.
bash "$HERE/build-node-image.sh" --base-only >&2

base_dir=$(mktemp -d)
trap 'rm -rf "$base_dir"' EXIT
cp "$CA_BUNDLE" "$base_dir/ca-bundle.crt"
cat >"$base_dir/Dockerfile" <<EOF
FROM $NODE_BASE
COPY ca-bundle.crt /etc/ssl/certs/tfdist-ca-bundle.crt
ENV PIP_CERT=/etc/ssl/certs/tfdist-ca-bundle.crt REQUESTS_CA_BUNDLE=/etc/ssl/certs/tfdist-ca-bundle.crt
CMD ["bash"]
EOF
say "base image $EE_BASE (from $NODE_BASE, CA bundle $CA_BUNDLE)"
docker build --quiet -t "$EE_BASE" "$base_dir" >/dev/null

# What the image is made of, hashed: the same inputs give the same tag, and an existing tag is kept.
key=$( {
    docker image inspect --format '{{.Id}}' "$EE_BASE"
    cat "$CONTEXT/Containerfile" "$CONTEXT/_build/requirements.yml"
    find "$CONTEXT/_build/scripts" -type f | sort | xargs cat
    for tarball in "$CONTEXT"/_build/collections/*.tar.gz; do tar -xzOf "$tarball" MANIFEST.json; done
} | sha256sum | cut -c1-16)
image=$EE_IMAGE:$key
if docker image inspect "$image" >/dev/null 2>&1; then
    say "$image exists (same inputs)"
else
    say "building $image (docker build of $CONTEXT)"
    docker build -f "$CONTEXT/Containerfile" --build-arg "EE_BASE_IMAGE=$EE_BASE" -t "$image" "$CONTEXT" >&2
    say "built $image ($(docker image inspect --format '{{.Size}}' "$image" | awk '{printf "%.0f MB", $1 / 1e6}'))"
fi
docker tag "$image" "$EE_IMAGE:latest"

# Keep one image: the images of earlier inputs go, and so do the galaxy and builder stages that the legacy
# builder leaves untagged (dangling images built on our base), so that rebuilds do not fill the disk.
base_id=$(docker image inspect --format '{{.Id}}' "$EE_BASE")
built_on_base() {
    local id=$1
    while [ -n "$id" ]; do
        [ "$id" = "$base_id" ] && return 0
        id=$(docker image inspect --format '{{.Parent}}' "$id" 2>/dev/null || true)
    done
    return 1
}
for old in $(docker images --format '{{.Repository}}:{{.Tag}}' "$EE_IMAGE"); do
    case $old in "$image"|"$EE_IMAGE:latest") ;; *) docker rmi "$old" >/dev/null 2>&1 || true ;; esac
done
for leftover in $(docker images --filter dangling=true --quiet --no-trunc); do
    if built_on_base "$leftover"; then docker rmi "$leftover" >/dev/null 2>&1 || true; fi
done
echo "$image"
