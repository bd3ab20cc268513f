"""One home per default: a value that several roles and playbooks start from is written once, in the collection's
Python, and every role default, playbook variable and profile reads it from there (tfdist.cluster.tf_default).

What counts as a definition: a value in the code and configuration of plugins/, roles/, playbooks/ and inventories/
(Python code, YAML values, Jinja templates). Documentation (docstrings, DOCUMENTATION/EXAMPLES/RETURN, the filters'
YAML docs, READMEs, comments) and tests (molecule scenarios) may mention the values. The roles' argument specs carry
defaults for ansible-doc: those are checked against the roles' own defaults instead.
"""

import ast
import os
import re

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar

from ansible_cli import REPO
from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist._cluster import DEFAULT_PORT, NODE_VENV
from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist._storage import HDFS_PORTS
from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist._supervisor import GONE_GRACE
from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist.train import cli

SEARCHED = ("plugins", "roles", "playbooks", "inventories")
DOC_ASSIGNMENTS = {"DOCUMENTATION", "EXAMPLES", "RETURN"}
STRATEGY_NAMES = ("parameter_server", "multi_worker_mirrored")


def code_files():
    """(path relative to the repository, suffix) of every code and configuration file searched."""
    for top in SEARCHED:
        for folder, dirs, files in os.walk(os.path.join(REPO, top)):
            dirs[:] = [d for d in dirs if d not in ("molecule", "__pycache__")]
            for name in files:
                path = os.path.relpath(os.path.join(folder, name), REPO)
                suffix = os.path.splitext(name)[1]
                if suffix in (".yml", ".yaml") and (path.startswith("plugins/") or name == "argument_specs.yml"):
                    continue  # the plugins' YAML files are their documentation; argument specs: see below
                if suffix in (".py", ".yml", ".yaml", ".j2"):
                    yield path, suffix


def python_values(tree):
    """The constants and the literal collections of a module's code, without its documentation."""
    docs = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docs.add(id(first.value))
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) in DOC_ASSIGNMENTS for t in node.targets):
            docs.update(id(n) for n in ast.walk(node.value))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and id(node) not in docs:
            yield node.value
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            yield [n.value for n in node.elts if isinstance(n, ast.Constant)]


def yaml_values(data):
    """Every scalar and list of a YAML document (comments are not in it)."""
    if isinstance(data, dict):
        for key, value in data.items():
            yield key
            yield from yaml_values(value)
    elif isinstance(data, list):
        yield data
        for value in data:
            yield from yaml_values(value)
    else:
        yield data


def values_of(path, suffix):
    with open(os.path.join(REPO, path), encoding="utf-8") as handle:
        text = handle.read()
    if suffix == ".py":
        return list(python_values(ast.parse(text)))
    if suffix == ".j2":
        return [re.sub(r"{#.*?#}", "", text, flags=re.S)]  # the template's text less its Jinja comments
    return [value for document in yaml.safe_load_all(text) for value in yaml_values(document)]


@pytest.fixture(scope="module")
def values():
    return {path: values_of(path, suffix) for path, suffix in code_files()}


def number_literal(number):
    word = re.compile(r"(?<![\w.])%d(?![\w.])" % number)
    # A number, or a number in a text (a Jinja expression, a template); in Python a text is a message, not a default.
    return lambda value, path: (value == number and not isinstance(value, bool)) or (
        isinstance(value, str) and bool(word.search(value)) and (not path.endswith(".py") or value == str(number)))


def venv_literal(value, path):
    return isinstance(value, str) and NODE_VENV in value


def strategy_names(value, path):
    """The names listed together: a tuple or list of them, or in YAML and templates a Jinja text naming both (Python's
    texts are messages, which may advise one strategy over the other)."""
    if isinstance(value, list):
        return all(name in value for name in STRATEGY_NAMES)
    return isinstance(value, str) and not path.endswith(".py") and all(name in value for name in STRATEGY_NAMES)


def homes(values, is_literal):
    return sorted({path for path, found in values.items() for value in found if is_literal(value, path)})


@pytest.mark.parametrize("port", [DEFAULT_PORT])
def test_the_tf_port_is_defined_once(values, port):
    assert homes(values, number_literal(port)) == ["plugins/module_utils/tfdist/_cluster.py"]


@pytest.mark.parametrize("name", sorted(HDFS_PORTS))
def test_each_hdfs_port_is_defined_once(values, name):
    assert homes(values, number_literal(HDFS_PORTS[name])) == ["plugins/module_utils/tfdist/_storage.py"]


def test_the_nodes_virtualenv_is_defined_once(values):
    assert homes(values, venv_literal) == ["plugins/module_utils/tfdist/_cluster.py"]


def test_the_strategy_names_are_listed_once(values):
    assert homes(values, strategy_names) == ["plugins/module_utils/tfdist/train/cli.py"]


def test_each_steps_default_is_defined_once(values, capsys):
    """Deploy's tf_train_steps and the training role's training_steps (two documented defaults, each written once);
    the training program's --steps has none of its own: without the role's setting it is required."""
    given = {}
    for path, suffix in code_files():
        if suffix in (".yml", ".yaml"):
            with open(os.path.join(REPO, path), encoding="utf-8") as handle:
                for document in yaml.safe_load_all(handle):
                    for name in ("tf_train_steps", "training_steps"):
                        if isinstance(document, dict) and isinstance(document.get(name), int):
                            given.setdefault(name, []).append((path, document[name]))
    assert given == {"tf_train_steps": [("playbooks/group_vars/all.yml", 2000)],
                     "training_steps": [("roles/training/defaults/main.yml", 300)]}
    assert homes(values, number_literal(2000)) == ["playbooks/group_vars/all.yml"]
    job = dict(strategy="parameter_server", batch_size=64, learning_rate=0.01, checkpoint_every=50,
               data="builtin:digits", work_dir="/tmp/job", hidden_units="64")
    assert cli.parse_args([], settings=dict(job, steps=300)).steps == 300
    with pytest.raises(SystemExit):
        cli.parse_args([], settings=job)
    assert "the following arguments are required: --steps" in capsys.readouterr().err


# ---------------------------------------------------------------- the argument specs, for ansible-doc
def role_default(role, name):
    """A role's default as the role sees it (rendered, e.g. through tfdist.cluster.tf_default)."""
    loader = DataLoader()
    path = os.path.join(REPO, "roles", role, "defaults", "main.yml")
    defaults = loader.load_from_file(path, trusted_as_template=True)
    return Templar(loader=loader, variables=defaults).template(defaults[name])


def spec_options(role, name):
    """The option `name` of every entry point of a role's argument specs that has it."""
    with open(os.path.join(REPO, "roles", role, "meta", "argument_specs.yml"), encoding="utf-8") as handle:
        specs = yaml.safe_load(handle)["argument_specs"]
    options = [spec["options"][name] for spec in specs.values() if name in spec.get("options", {})]
    assert options, "%s: no entry point has %s" % (role, name)
    return options


SHARED_DEFAULTS = [
    ("training", "training_port", DEFAULT_PORT),
    ("training", "training_python", NODE_VENV + "/bin/python"),
    ("training", "training_steps", 300),
    ("training", "training_gone_grace", int(GONE_GRACE)),
    ("tensorflow", "tensorflow_venv", NODE_VENV),
] + [("hdfs", "hdfs_%s_port" % name, port) for name, port in sorted(HDFS_PORTS.items())]


@pytest.mark.parametrize("role, name, expected", SHARED_DEFAULTS)
def test_the_documented_default_is_the_one_the_role_uses(role, name, expected):
    assert role_default(role, name) == expected
    assert [option["default"] for option in spec_options(role, name)] == [expected] * len(spec_options(role, name))


def test_the_documented_strategies_are_the_training_programs():
    assert [option["choices"] for option in spec_options("training", "training_strategy")] == \
        [list(cli.STRATEGIES)] * len(spec_options("training", "training_strategy"))


def test_the_command_line_is_listed_once_by_the_check_and_each_setting_has_its_default_in_group_vars():
    """The check reads the command line's settings from the play's variables by the names it checks (SETTINGS); the
    task names only what it passes otherwise, and group_vars/all.yml gives each setting its default."""
    from ansible_collections.tfdist.cluster.plugins.action.check_command_line import SETTINGS

    with open(os.path.join(REPO, "playbooks", "group_vars", "all.yml"), encoding="utf-8") as handle:
        group_vars = yaml.safe_load(handle)
    assert [name for name in SETTINGS if name not in group_vars] == []
    with open(os.path.join(REPO, "playbooks", "tasks", "check_command_line.yml"), encoding="utf-8") as handle:
        check = yaml.safe_load(handle)[0]["tfdist.cluster.check_command_line"]
    assert list(check["settings"]) == ["tf_ssh_from"]
