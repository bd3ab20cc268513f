# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""A copy of the chief's checkpoints at --checkpoint_url, and the resume from it on a new cluster."""

from __future__ import annotations

import os
import re
import threading
import time

from .. import _storage
from .progress import log

FLAG = "--checkpoint_url"
CHECKPOINT_STATE = "checkpoint"  # CheckpointManager's list of checkpoints, relative to its folder


def checkpoint_names(state_text):
    """Checkpoint prefixes (ckpt-N) listed in a `checkpoint` state file."""
    names = re.findall(r'^all_model_checkpoint_paths: "(.*)"$', state_text, re.M)
    names += re.findall(r'^model_checkpoint_path: "(.*)"$', state_text, re.M)
    return sorted({os.path.basename(n) for n in names})


class CheckpointMirror:
    """Keeps a copy of the chief's checkpoints at --checkpoint_url.

    Copies run in a background thread, so training never waits on the store; a slow store
    skips intermediate checkpoints instead of queueing them. close() makes the final copy
    and raises its error. The state file goes last: a reader never sees a half-copied checkpoint.
    """

    def __init__(self, url, ckpt_dir):
        self.url, self.ckpt_dir = url, ckpt_dir
        try:
            self.fs, self.path = _storage.filesystem(url, FLAG)
        except _storage.StorageError as e:
            raise SystemExit(str(e))
        self.copied = {}  # file name -> size already at the URL
        self.wanted = threading.Event()
        self.stopping = False
        self.thread = None

    def fetch(self):
        """Copy the URL's checkpoints into an empty local folder (resume on a new cluster)."""
        local_state = os.path.join(self.ckpt_dir, CHECKPOINT_STATE)
        if os.path.exists(local_state):
            return
        try:
            state_text = self.fs.cat_file(self.path + "/" + CHECKPOINT_STATE).decode()
        except FileNotFoundError:
            return
        except OSError as e:
            raise SystemExit(_storage.explain(FLAG, self.url, e))
        names = checkpoint_names(state_text)
        os.makedirs(self.ckpt_dir, exist_ok=True)
        for remote in self.fs.ls(self.path, detail=False):
            name = os.path.basename(remote.rstrip("/"))
            if any(name.startswith(n + ".") for n in names):
                self.fs.get_file(remote, os.path.join(self.ckpt_dir, name))
                self.copied[name] = os.path.getsize(os.path.join(self.ckpt_dir, name))
        with open(local_state, "w") as f:
            f.write(state_text)
        log("fetched checkpoints %s from %s" % (", ".join(names), self.url))

    def start(self):
        self.thread = threading.Thread(target=self._run, name="checkpoint-mirror", daemon=True)
        self.thread.start()

    def push(self):
        self.wanted.set()

    def _run(self):
        while not self.stopping:
            if self.wanted.wait(0.5):
                self.wanted.clear()
                try:
                    self.sync()
                except FileNotFoundError:  # a checkpoint was rotated away under us: copy the newer state
                    time.sleep(0.2)
                    self.wanted.set()
                except Exception as e:  # the final copy in close() reports it for good
                    log("could not copy checkpoints to %s (will retry): %s" % (self.url, e))

    def sync(self):
        with open(os.path.join(self.ckpt_dir, CHECKPOINT_STATE)) as f:
            state_text = f.read()
        names = checkpoint_names(state_text)
        local = [n for n in os.listdir(self.ckpt_dir) if any(n.startswith(k + ".") for k in names)]
        for name in sorted(local):
            size = os.path.getsize(os.path.join(self.ckpt_dir, name))
            if self.copied.get(name) != size:
                self.fs.put_file(os.path.join(self.ckpt_dir, name), self.path + "/" + name)
                self.copied[name] = size
        self.fs.pipe_file(self.path + "/" + CHECKPOINT_STATE, state_text.encode())
        for name in [n for n in self.copied if n not in local]:  # rotated out (--keep_checkpoints)
            self.fs.rm_file(self.path + "/" + name)
            del self.copied[name]

    def close(self):
        self.stopping = True
        if self.thread:
            self.thread.join()
        try:
            self.sync()
        except Exception as e:
            raise SystemExit("%s: %s: cannot write the checkpoints: %s" % (FLAG, self.url, e))
        log("checkpoints copied to %s" % self.url)
