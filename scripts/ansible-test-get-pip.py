# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""Offline stand-in for the get-pip.py that `ansible-test --venv` downloads.

ansible-test bootstraps pip in each virtual environment it creates with a get-pip.py fetched
from a host outside the package registries, unless a copy is cached at
~/.ansible/test/cache/get_pip_<pip version>.py. scripts/ansible-test.sh puts this file there.
It takes the same arguments (pip install arguments plus --no-setuptools/--no-wheel, which pip
itself does not know), gets pip from the interpreter's own ensurepip, then lets pip install the
pinned versions ansible-test asked for from the package index.
"""

from __future__ import annotations

import subprocess
import sys

GET_PIP_ONLY_OPTIONS = ('--no-setuptools', '--no-wheel')


def main() -> None:
    pip_args = [arg for arg in sys.argv[1:] if arg not in GET_PIP_ONLY_OPTIONS]
    subprocess.run([sys.executable, '-m', 'ensurepip', '--upgrade'], check=True, stdout=subprocess.DEVNULL)
    subprocess.run([sys.executable, '-m', 'pip', 'install', *pip_args], check=True)


if __name__ == '__main__':
    main()
