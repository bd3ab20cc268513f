"""The one way the tests run the ansible CLIs: as a user does, from the repository, with its ansible.cfg.

tests/ is on sys.path (tests/conftest.py), so every test folder imports it; the bench (and the EC2 emulator) import it
by the collection's name, ansible_collections.tfdist.cluster.tests.ansible_cli::

    from ansible_cli import run_playbook, tail

    result = run_playbook("playbooks/deploy.yml", "cluster_name=x", "tf_train_steps=100", env={"AWS_...": "..."})
    assert result.returncode == 0, tail(result)

- run(tool, *args, ...) runs ansible, ansible-playbook, ansible-inventory, ansible-galaxy or ansible-vault of
  this venv and returns the CompletedProcess (text, stdout and stderr captured apart).
- run_playbook(playbook, *extra_vars, ...) is run("ansible-playbook", ...) with `-e VAR` for each extra var.
- start_playbook(...) starts the same command in the background: a Popen whose stdout carries stderr too.
- run_inventory(*args, ...) is run("ansible-inventory", ...).
- environment(...) is the environment all of them use; tail(result) what a failed assertion shows.
- remove_artifacts(cluster) deletes what a test cluster left in artifacts/ (its RADL, model, logs) once it is gone.

Without `-i` a run reads the repository's inventory (ansible.cfg: inventories/clusters), as `make deploy` does.
config=None runs the CLIs as in a user's own project instead: no ansible.cfg of ours and no ANSIBLE_*
variable of the test's environment (the Makefile exports ANSIBLE_CONFIG).
"""

import os
import shutil
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.dirname(sys.executable)  # the venv's bin: its ansible CLIs and its python
CONFIG = os.path.join(REPO, "ansible.cfg")
TIMEOUT = 900
TAIL_CHARS = 5000


def environment(env=None, config=CONFIG):
    """The process environment of a run: the venv first on PATH, plain output, `config` as ANSIBLE_CONFIG.

    `env` is added last and wins; config=None drops ANSIBLE_CONFIG and every other inherited ANSIBLE_* variable.
    """
    full = dict(os.environ)
    if config is None:
        full = {key: value for key, value in full.items() if not key.startswith("ANSIBLE_")}
    else:
        full["ANSIBLE_CONFIG"] = str(config)
    full.update(PATH=BIN + os.pathsep + full.get("PATH", ""), ANSIBLE_FORCE_COLOR="0", ANSIBLE_NOCOLOR="1")
    full.update(env or {})
    return full


def command(tool, *args, extra_vars=()):
    """The command line: the venv's `tool`, then args, then `-e VAR` for each extra var."""
    cmd = [os.path.join(BIN, tool), *map(str, args)]
    for var in extra_vars:
        cmd += ["-e", str(var)]
    return cmd


def run(tool, *args, extra_vars=(), env=None, config=CONFIG, cwd=REPO, timeout=TIMEOUT, check=False):
    """Run an ansible CLI to its end and return the CompletedProcess (check=True raises on a non-zero exit).

    A run past `timeout` is killed and returned with returncode 124 and what it printed so far, so that the
    failed assertion shows where it hung.
    """
    cmd = command(tool, *args, extra_vars=extra_vars)
    try:
        return subprocess.run(cmd, cwd=str(cwd), env=environment(env, config), capture_output=True, text=True,
                              timeout=timeout, check=check)
    except subprocess.TimeoutExpired as expired:
        if check:
            raise
        output, errors = (text.decode(errors="replace") if isinstance(text, bytes) else text or ""
                          for text in (expired.stdout, expired.stderr))
        return subprocess.CompletedProcess(cmd, 124, output, errors + f"\n(killed after {timeout} s)")


def run_playbook(playbook, *extra_vars, env=None, args=(), config=CONFIG, cwd=REPO, timeout=TIMEOUT):
    """`ansible-playbook PLAYBOOK ARGS -e VAR...` (a path or an FQCN such as tfdist.cluster.deploy)."""
    return run("ansible-playbook", playbook, *args, extra_vars=extra_vars, env=env, config=config, cwd=cwd,
               timeout=timeout)


def start_playbook(playbook, *extra_vars, env=None, args=(), config=CONFIG, cwd=REPO):
    """The same command as run_playbook, started in the background: a Popen, stderr merged into stdout.

    The caller waits for it (communicate) and kills it if the test ends first.
    """
    return subprocess.Popen(command("ansible-playbook", playbook, *args, extra_vars=extra_vars), cwd=str(cwd),
                            env=environment(env, config), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def run_inventory(*args, env=None, config=CONFIG, cwd=REPO, timeout=TIMEOUT, check=False):
    """`ansible-inventory ARGS` (the repository's inventory unless args name one with -i)."""
    return run("ansible-inventory", *args, env=env, config=config, cwd=cwd, timeout=timeout, check=check)


def tail(result, chars=TAIL_CHARS):
    """The end of a run's output for an assertion message: stdout, then stderr when there is any."""
    out = (result.stdout or "")[-chars:]
    if result.stderr:
        out += "\n--- stderr ---\n" + result.stderr[-chars // 2:]
    return out


def remove_artifacts(cluster, home=REPO):
    """A test cluster's folder under HOME/artifacts, which destroy keeps for a user (their model and logs)."""
    shutil.rmtree(os.path.join(home, "artifacts", cluster), ignore_errors=True)
