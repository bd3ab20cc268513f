#!/usr/bin/env bash
# Build the docker cloud's node images: the provision role's script, run from a checkout
# (make, tests, benches). Usage and options: roles/provision/files/build-node-image.sh.
exec bash "$(dirname "$0")/../roles/provision/files/build-node-image.sh" "$@"
