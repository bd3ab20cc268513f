# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""Jinja's compiled code for each template and expression, kept in this process and in a folder between runs.

Ansible compiles a template string or an expression (a task's arguments, its `when`, each variable that holds a
template) every time it renders one, and mostly in a worker forked for one host of one task, whose work ends with
it: Jinja's lexer, parser and code generator, then Python's compile, again for every host of every task. On a re-run
of deploy.yml that changes nothing, that was more than a third of the workers' CPU time.

install(folder) wraps Jinja's Environment.compile and compile_expression. What they return for a source is a code
object that depends on that source, on the environment's compile-time settings and on how each filter and test the
source names takes its arguments (or whether it exists): it is kept under a key made of the first two, with the
Python, Jinja and Ansible versions, beside what it found of the filters and tests, which is checked again before the
code is used (a collection upgraded since may have changed them). The folder keeps it for the workers and for later
runs; the process keeps what it compiled or read, which each worker it forks inherits. A source Jinja refuses is
compiled (and refused) as before, and an entry that cannot be read or no longer holds is compiled again. Entries
no run has used for a month are removed (_prune), so the folder holds what runs use.

Private to the collection (leading underscore): the API may change between releases.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import sys
import tempfile
import threading
import time
import types

import jinja2
from jinja2 import environment as jinja_environment
from jinja2 import nodes
from jinja2.parser import Parser
from jinja2.utils import _PassArg

from ansible.release import __version__ as ansible_version

try:  # Ansible's own compile-time settings; without them nothing is cached
    from ansible._internal._templating._jinja_bits import _TemplateCompileContext
    from ansible._internal._templating._jinja_common import _TemplateConfig
except ImportError:  # pragma: no cover - another ansible-core
    _TemplateCompileContext = _TemplateConfig = None

# The settings of an environment that change the code Jinja generates for a source: its lexer's, then the others.
LEXER_SETTINGS = ("block_start_string", "block_end_string", "variable_start_string", "variable_end_string",
                  "comment_start_string", "comment_end_string", "line_statement_prefix", "line_comment_prefix",
                  "trim_blocks", "lstrip_blocks", "newline_sequence", "keep_trailing_newline")
# Marshal's format and the generated code belong to one Python, one Jinja and one Ansible (its code generator); the
# last number is this file's own format.
VERSIONS = (sys.version, jinja2.__version__, ansible_version, 2)

# The folder keeps what runs use: an entry read from it is marked used (its mtime) at most once a day, and once a day
# the first run removes entries unused for UNUSED_DAYS (those of an older Ansible, Jinja or Python, of edited
# templates) and what a write cut short left behind.
UNUSED_DAYS = 30
DAY = 24 * 3600
PRUNED_MARK = ".pruned"

_memory = {}
_installed = {}
# The code of the expression this thread compiles: Jinja compiles an expression as a template node, not a source.
_capture = threading.local()


def install(folder):
    """Keep compiled templates in this process and in folder (made 0700 where missing).

    Returns None when installed (or already), otherwise why not: another ansible-core, or a folder that other users
    can write to (the code in it runs in this process).
    """
    if _installed:
        return None
    if _TemplateCompileContext is None:
        return "this ansible-core has no _TemplateCompileContext"
    folder = os.path.abspath(os.path.expanduser(folder))
    os.makedirs(folder, mode=0o700, exist_ok=True)
    info = os.stat(folder)
    if info.st_uid != os.getuid() or info.st_mode & 0o022:
        return "%s is not this user's own, or others can write to it" % folder
    _prune(folder)
    _installed.update(folder=folder, compile=jinja_environment.Environment.compile,
                      compile_expression=jinja_environment.Environment.compile_expression)
    jinja_environment.Environment.compile = _compile
    jinja_environment.Environment.compile_expression = _compile_expression
    return None


def uninstall():
    """Jinja compiles every source again, as without install()."""
    if _installed:
        jinja_environment.Environment.compile = _installed["compile"]
        jinja_environment.Environment.compile_expression = _installed["compile_expression"]
        _installed.clear()
    _memory.clear()


def _prune(folder):
    """Once a day: remove the entries unused for UNUSED_DAYS, and writes cut short (.new-*) over an hour old."""
    now = time.time()
    mark = os.path.join(folder, PRUNED_MARK)
    try:
        if now - os.stat(mark).st_mtime < DAY:
            return
    except OSError:
        pass  # never pruned
    for entry in os.scandir(folder):
        try:
            age = now - entry.stat(follow_symlinks=False).st_mtime
            if entry.name.startswith(".new-") and age > 3600 or (
                    not entry.name.startswith(".") and age > UNUSED_DAYS * DAY):
                os.remove(entry.path)
        except OSError:
            pass  # removed by another run meanwhile
    try:
        with open(mark, "w"):
            pass  # its mtime: when the folder was last pruned
    except OSError:
        pass  # a read-only folder: looked at again next run


def _key(env, kind, source, *more):
    compile_context = _TemplateCompileContext.current(optional=True)
    autoescape = env.autoescape if isinstance(env.autoescape, bool) else getattr(env.autoescape, "__qualname__", "?")
    settings = tuple(getattr(env, name, None) for name in LEXER_SETTINGS) + (
        type(env).__qualname__, env.optimized, env.is_async, env.finalize is not None, autoescape,
        tuple(sorted(env.extensions)), env.code_generator_class.__qualname__, env.template_class.__qualname__,
        compile_context.escape_backslashes if compile_context else None, _TemplateConfig.allow_embedded_templates)
    digest = hashlib.sha256(repr((VERSIONS, settings, kind) + more).encode("utf-8", "surrogatepass"))
    # The text alone: Ansible's tags on a string (where it came from, whether it is trusted) are not Jinja's code.
    digest.update(b"\0" + str.__str__(source).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def _plugin_form(env, kind, name):
    """How Jinja's code generator calls a filter or test: the context, environment or nothing passed first, or
    missing (inside an if, Jinja compiles a call that fails when it runs)."""
    try:
        found = (env.filters if kind == "filter" else env.tests).get(name)
    except Exception:  # pylint: disable=broad-exception-caught  # a plugin that fails to load: compiled to say so
        return "unloadable"
    if found is None:
        return "missing"
    passed = _PassArg.from_obj(found)
    return passed.name if passed else ""


def _plugins(env, tree):
    """(kind, name, form) of each filter and test of a parsed template or expression."""
    named = {("filter" if isinstance(node, nodes.Filter) else "test", node.name)
             for node in tree.find_all((nodes.Filter, nodes.Test))}
    return tuple((kind, name, _plugin_form(env, kind, name)) for kind, name in sorted(named))


def _load(key, env):
    code = _memory.get(key)
    if code is None:
        path = os.path.join(_installed["folder"], key)
        try:
            with open(path, "rb") as handle:
                code, plugins = marshal.load(handle)
                used = os.fstat(handle.fileno()).st_mtime
        except (OSError, EOFError, ValueError, TypeError):
            return None
        if time.time() - used > DAY:
            try:
                os.utime(path)  # still in use: kept by _prune
            except OSError:
                pass  # a folder this run may read, not write: nothing to prune there either
        if not isinstance(code, types.CodeType):
            return None
        if any(_plugin_form(env, kind, name) != form for kind, name, form in plugins):
            return None  # compiled against other filters or tests than this run has
        _memory[key] = code
    return code


def _store(key, code, plugins):
    _memory[key] = code
    folder = _installed["folder"]
    try:
        handle, path = tempfile.mkstemp(dir=folder, prefix=".new-")
        with os.fdopen(handle, "wb") as out:
            marshal.dump((code, plugins), out)
        os.replace(path, os.path.join(folder, key))  # whole or not at all, for a process that reads it meanwhile
    except OSError:
        pass  # a full or read-only disk: compiled again next time


def _debugged(env):
    # Ansible's template debugging writes each template's Python source out as it compiles it.
    return getattr(env, "_debuggable_template_source", False)


def _compile(self, source, name=None, filename=None, raw=False, defer_init=False):
    original = _installed["compile"]
    if raw or not isinstance(source, str) or _debugged(self):
        code = original(self, source, name, filename, raw, defer_init)
        if getattr(_capture, "codes", None) is not None:
            _capture.codes.append(code)
        return code
    key = _key(self, "template", source, name, filename, defer_init)
    code = _load(key, self)
    if code is None:
        code = original(self, source, name, filename, raw, defer_init)
        # Parsed again only to name its filters and tests (Jinja's parser accepted it a moment ago).
        _store(key, code, _plugins(self, self.parse(source, name, filename)))
    return code


def _compile_expression(self, source, undefined_to_none=True):
    original = _installed["compile_expression"]
    if not isinstance(source, str) or _debugged(self):
        return original(self, source, undefined_to_none)
    key = _key(self, "expression", source)
    code = _load(key, self)
    if code is None:
        # Jinja compiles the expression as a template of one assignment; that template's code is kept.
        _capture.codes = []
        try:
            expression = original(self, source, undefined_to_none)
            codes = _capture.codes
        finally:
            _capture.codes = None
        if len(codes) == 1 and isinstance(codes[0], types.CodeType):
            _store(key, codes[0], _plugins(self, Parser(self, source, state="variable").parse_expression()))
        return expression
    # As Jinja's compile_expression ends (from_string, then TemplateExpression), with the kept code.
    template = self.template_class.from_code(self, code, self.make_globals(None), None)
    return jinja_environment.TemplateExpression(template, undefined_to_none)
