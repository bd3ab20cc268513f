"""Runtime tests run the role's real files (train.py.j2, the package tfdist, the supervisor) as local processes."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # for `import local_cluster`
