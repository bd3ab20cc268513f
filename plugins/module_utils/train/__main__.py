# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""`python -m tfdist.train [FLAGS]`: one task of the training job (flags only, no job settings)."""

from __future__ import annotations

from .job import run

if __name__ == "__main__":
    run()
