#!/usr/bin/env bash
# Start the Docker engine when it does not answer: the provision role's script, run from a checkout
# (make, tests, benches). Usage and options: roles/provision/files/ensure-docker.sh.
exec bash "$(dirname "$0")/../roles/provision/files/ensure-docker.sh" "$@"
