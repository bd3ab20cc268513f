"""The shape of the collection's code: rules a reviewer would otherwise have to count by hand."""

import ast
import glob
import os

from ansible_cli import REPO

# A function longer than this mixes several decisions: each deserves a name of its own.
MOST_LINES = 80


def functions(path):
    """(line, name, lines) of every function and method in a Python file, nested ones too; lines from its def to its
    last line, docstring included."""
    with open(path) as handle:
        tree = ast.parse(handle.read(), path)
    return [(node.lineno, node.name, node.end_lineno - node.lineno + 1) for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]


def test_no_function_in_plugins_is_over_80_lines():
    paths = sorted(glob.glob(os.path.join(REPO, "plugins", "**", "*.py"), recursive=True))
    found = [(os.path.relpath(path, REPO), line, name, lines) for path in paths for line, name, lines in functions(path)]
    assert len(found) > 100, "the plugins' functions were not found under %s" % REPO
    too_long = ["%s:%d %s is %d lines" % item for item in found if item[3] > MOST_LINES]
    assert not too_long, "functions over %d lines (split them into named helpers):\n%s" % (
        MOST_LINES, "\n".join(too_long))
