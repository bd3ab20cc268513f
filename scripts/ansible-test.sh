#!/usr/bin/env bash
# Run ansible-test offline on a copy of this collection.
#
# Usage: scripts/ansible-test.sh sanity|units ... (arguments go to ansible-test as they are)
#   e.g. scripts/ansible-test.sh sanity --venv --python 3.11
#
# ansible-test needs:
# - the collection at a path ending in ansible_collections/<namespace>/<name>; it resolves the
#   working directory, so the .collections symlink does not do: the tracked and untracked (not
#   ignored) files are copied to
#   .cache/ansible-test/<ansible-core version>-<command>/ansible_collections/<namespace>/<name>:
#   one copy per version (its tests/output/ keeps that version's virtualenvs) and per command
#   (make test runs sanity and units at the same time, and each copy is refreshed at its start);
# - a git tree there, with its own tests/output/ ignored (else it lints its own virtualenvs);
# - get-pip.py for every virtualenv it makes, which it downloads from a host outside the
#   package registries unless a copy is cached: scripts/ansible-test-get-pip.py stands in.
# The copy's tests/output/ (ansible-test's own virtualenv) is kept between runs.
#
# Environment: BIN, the bin folder of the virtualenv whose ansible-test runs (default .venv/bin).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BIN:-$ROOT/.venv/bin}

read -r NAMESPACE NAME < <("$BIN/python" -c '
import sys, yaml
galaxy = yaml.safe_load(open(sys.argv[1]))
print(galaxy["namespace"], galaxy["name"])' "$ROOT/galaxy.yml")
CORE_VERSION=$("$BIN/python" -c 'from ansible.release import __version__; print(__version__)')
DEST=$ROOT/.cache/ansible-test/$CORE_VERSION-$1/ansible_collections/$NAMESPACE/$NAME

# The pip version ansible-test bootstraps decides the cached file's name (get_pip_24_2.py).
PIP_VERSION=$("$BIN/python" -c '
import types
from ansible_test._internal.python_requirements import get_venv_packages
print(get_venv_packages(types.SimpleNamespace(version="3.11"))["pip"])')
GET_PIP=$HOME/.ansible/test/cache/get_pip_${PIP_VERSION//./_}.py
mkdir -p "$(dirname "$GET_PIP")"
# Written whole, then renamed: another ansible-test run (make test runs two) may be reading it.
if ! cmp -s "$ROOT/scripts/ansible-test-get-pip.py" "$GET_PIP"; then
    cp "$ROOT/scripts/ansible-test-get-pip.py" "$GET_PIP.$$" && mv -f "$GET_PIP.$$" "$GET_PIP"
fi

# A fresh copy of the files git knows (deleted ones left out), keeping .git and tests/output.
mkdir -p "$DEST"
find "$DEST" -mindepth 1 -maxdepth 1 ! -name .git ! -name tests -exec rm -rf {} +
if [[ -d $DEST/tests ]]; then
    find "$DEST/tests" -mindepth 1 -maxdepth 1 ! -name output -exec rm -rf {} +
fi
(
    cd "$ROOT"
    git ls-files -z --cached --others --exclude-standard --deduplicate |
        while IFS= read -r -d '' path; do
            if [[ -e $path || -L $path ]]; then printf '%s\0' "$path"; fi
        done |
        tar --null -c -T -
) | tar -x -C "$DEST"
printf '/tests/output/\n' >> "$DEST/.gitignore"

cd "$DEST"
[[ -d .git ]] || git init --quiet
git add --all
git -c user.name=tfdist -c user.email=tfdist@localhost commit --quiet --allow-empty -m "copy for ansible-test"
# ansible-test keeps the sanity tests' virtualenvs in ~/.ansible/test/venv, named by what they install, and two runs
# that make the same one at once break it (make test runs the newest and the oldest ansible-core's sanity together,
# and their validate-modules virtualenvs are the same): they are made one run at a time, then the tests run.
if [[ $1 == sanity ]]; then
    mkdir -p "$HOME/.ansible/test"
    flock "$HOME/.ansible/test/venv.lock" "$BIN/ansible-test" "$@" --prime-venvs
fi
exec "$BIN/ansible-test" "$@"
