"""Shared test set-up: make the collection importable as ansible_collections.tfdist.cluster."""

import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLLECTIONS = os.path.join(REPO, ".collections")
if COLLECTIONS not in sys.path:
    sys.path.insert(0, COLLECTIONS)
