# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""Check that ansible-doc renders every plugin and every role entry point of the collection.

Run from the repository root with the project's virtualenv (`make docs` does):
    python scripts/check-docs.py

Nothing is listed by hand: the plugins are the files under plugins/<type>/ (for filters and tests,
the names ansible-doc lists for the collection), the roles are the folders under roles/. A role's
entry points are its tasks files that no other tasks file of the role includes or imports; each
must have an argument spec. Every one is rendered as text and as JSON; any error or warning that
ansible-doc prints, an undocumented plugin, an action plugin without a module of the same name
(where its documentation lives), or a `tasks_from: NAME.yml` in a playbook or role (Ansible looks up
the argument spec by the name as written, so with `.yml` it validates nothing) is a finding, and so is a
plugin without a `version_added`, or any `version_added` (of a plugin, an option or a return value) later
than galaxy.yml's version. Exit status 1 when there is one.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import yaml

# plugins/<folder> -> ansible-doc type; folders of code that has no documentation of its own are left out.
DOCUMENTED_TYPES = ('become', 'cache', 'callback', 'cliconf', 'connection', 'httpapi', 'inventory', 'lookup',
                    'module', 'netconf', 'shell', 'strategy', 'vars')
JINJA_TYPES = ('filter', 'test')
INCLUDE_KEYS = ('include_tasks', 'import_tasks', 'ansible.builtin.include_tasks', 'ansible.builtin.import_tasks')
ROLE_KEYS = ('include_role', 'import_role', 'ansible.builtin.include_role', 'ansible.builtin.import_role')
YAML_FOLDERS = ('playbooks', 'roles', 'examples')
ANSIBLE_DOC = os.path.join(os.path.dirname(sys.executable), 'ansible-doc')


def galaxy():
    with open('galaxy.yml', encoding='utf-8') as handle:
        return yaml.safe_load(handle)


def collection_name():
    info = galaxy()
    return '%s.%s' % (info['namespace'], info['name'])


def version_tuple(version):
    """(0, 5, 0) for '0.5.0'; None for anything that is not dotted numbers."""
    parts = str(version).split('.')
    return tuple(int(part) for part in parts) if all(part.isdigit() for part in parts) else None


def version_findings(label, doc, returns, collection, current):
    """A missing plugin version_added, or one of the plugin, its options or return values past `current`
    (those that a doc fragment of another collection brings name that collection and are left alone)."""
    findings = [] if 'version_added' in doc else ['%s: no version_added' % label]

    def walk(where, entry):
        if not isinstance(entry, dict):
            return
        added = entry.get('version_added')
        own = entry.get('version_added_collection', collection) == collection
        if own and added is not None and not (version_tuple(added) or (0,)) <= current:
            findings.append('%s: %s version_added %s is later than galaxy.yml version %s'
                            % (label, where, added, '.'.join(map(str, current))))
        for key in ('options', 'suboptions', 'contains'):
            for name, child in (entry.get(key) or {}).items():
                walk(name if where == 'plugin' else '%s.%s' % (where, name), child)

    walk('plugin', doc)
    for name, spec in (returns or {}).items():
        walk('return ' + name, spec)
    return findings


def ansible_doc(*args):
    """Run ansible-doc; returns (stdout, findings), a finding for a failure or anything it warns about."""
    run = subprocess.run([ANSIBLE_DOC, *args], capture_output=True, text=True, check=False)
    findings = [line.strip() for line in run.stderr.splitlines() if '[ERROR]' in line or '[WARNING]' in line]
    if run.returncode != 0 and not findings:
        findings.append('exit status %d: %s' % (run.returncode, run.stderr.strip()[-500:]))
    return run.stdout, ['ansible-doc %s: %s' % (' '.join(args), finding) for finding in findings]


def plugin_files(folder):
    path = os.path.join('plugins', folder)
    if not os.path.isdir(path):
        return []
    return sorted(name[:-3] for name in os.listdir(path) if name.endswith('.py') and name != '__init__.py')


def render(plugin_type, names):
    """Text and JSON rendering of the given plugins; returns the findings."""
    if not names:
        return []
    _text, findings = ansible_doc('-t', plugin_type, *names)
    out, json_findings = ansible_doc('-t', plugin_type, '--json', *names)
    if findings or json_findings:
        # ansible-doc stops at the first plugin it cannot render: render one at a time to name each.
        if len(names) == 1:
            return findings or json_findings
        return [finding for name in names for finding in render(plugin_type, [name])]
    docs = json.loads(out)
    current = version_tuple(galaxy()['version'])
    findings = []
    for name in names:
        doc = (docs.get(name) or {}).get('doc')
        if not doc:
            findings.append('%s %s: no documentation' % (plugin_type, name))
            continue
        findings += version_findings('%s %s' % (plugin_type, name), doc, docs[name].get('return'), collection_name(), current)
    return findings


def check_plugins(collection):
    findings = []
    counts = {}
    for plugin_type in DOCUMENTED_TYPES:
        names = ['%s.%s' % (collection, name) for name in plugin_files('modules' if plugin_type == 'module' else plugin_type)]
        findings += render(plugin_type, names)
        counts[plugin_type] = len(names)
    for plugin_type in JINJA_TYPES:
        out, list_findings = ansible_doc('-t', plugin_type, '-l', '--json', collection)
        findings += list_findings
        listed = json.loads(out) if out.strip() else {}
        names = sorted(listed)
        if plugin_files(plugin_type) and not names:
            findings.append('%s: plugins/%s/ has files but ansible-doc lists no %s' % (plugin_type, plugin_type, plugin_type))
        findings += render(plugin_type, names)
        counts[plugin_type] = len(names)
    for action in plugin_files('action'):
        if not os.path.exists(os.path.join('plugins', 'modules', action + '.py')):
            findings.append('plugins/action/%s.py: no plugins/modules/%s.py documents it' % (action, action))
    return findings, counts


def included_patterns(tasks_file):
    """Regexes of the tasks files that tasks_file includes or imports (templated parts match anything)."""
    with open(tasks_file, encoding='utf-8') as handle:
        tasks = yaml.safe_load(handle) or []
    patterns = []

    def walk(items):
        for task in items or []:
            if not isinstance(task, dict):
                continue
            for key in INCLUDE_KEYS:
                target = task.get(key)
                if isinstance(target, dict):
                    target = target.get('file')
                if isinstance(target, str):
                    parts = re.split(r'{{.*?}}', target)
                    patterns.append(re.compile('.*'.join(re.escape(part) for part in parts) + '$'))
            for block_key in ('block', 'rescue', 'always'):
                walk(task.get(block_key))

    walk(tasks)
    return patterns


def role_entry_points(role_path):
    """Tasks files (without .yml) that no other tasks file of the role includes: what tasks_from can start."""
    tasks_dir = os.path.join(role_path, 'tasks')
    if not os.path.isdir(tasks_dir):
        return []
    files = sorted(name for name in os.listdir(tasks_dir) if name.endswith(('.yml', '.yaml')))
    patterns = []
    for name in files:
        patterns += included_patterns(os.path.join(tasks_dir, name))
    return [os.path.splitext(name)[0] for name in files
            if not any(pattern.search(name) for pattern in patterns)]


def check_roles(collection):
    findings = []
    roles = sorted(name for name in os.listdir('roles') if os.path.isdir(os.path.join('roles', name))) if os.path.isdir('roles') else []
    names = ['%s.%s' % (collection, role) for role in roles]
    findings += render_roles(names)
    out, json_findings = ansible_doc('-t', 'role', '--json', *names) if names else ('', [])
    findings += json_findings
    docs = json.loads(out) if out.strip() else {}
    entry_point_count = 0
    for role, name in zip(roles, names):
        role_path = os.path.join('roles', role)
        if not any(os.path.exists(os.path.join(role_path, 'meta', spec)) for spec in ('argument_specs.yml', 'argument_specs.yaml')):
            findings.append('%s: no meta/argument_specs.yml' % role_path)
            continue
        documented = (docs.get(name) or {}).get('entry_points') or {}
        entry_point_count += len(documented)
        for entry_point in role_entry_points(role_path):
            if entry_point not in documented:
                findings.append('%s: tasks/%s.yml is an entry point (no other tasks file includes it) without an argument spec'
                                % (role_path, entry_point))
        for entry_point, spec in documented.items():
            if not spec.get('short_description'):
                findings.append('%s: entry point %s has no short_description' % (role_path, entry_point))
    return findings, len(roles), entry_point_count


def role_calls(node):
    """Every include_role/import_role argument mapping in a loaded YAML document."""
    if isinstance(node, list):
        for item in node:
            yield from role_calls(item)
    elif isinstance(node, dict):
        for key, value in node.items():
            if key in ROLE_KEYS and isinstance(value, dict):
                yield value
            else:
                yield from role_calls(value)


def check_tasks_from(collection):
    """tasks_from values with an extension, for a role of this collection that has an entry point of that name."""
    findings = []
    for folder in YAML_FOLDERS:
        for dirpath, _dirnames, filenames in os.walk(folder):
            for filename in sorted(filenames):
                if not filename.endswith(('.yml', '.yaml')):
                    continue
                path = os.path.join(dirpath, filename)
                with open(path, encoding='utf-8') as handle:
                    try:
                        documents = list(yaml.safe_load_all(handle))
                    except yaml.YAMLError:
                        continue  # not plain YAML (a template): ansible-lint reads those
                for call in role_calls(documents):
                    role = str(call.get('name') or call.get('role') or '').removeprefix(collection + '.')
                    tasks_from = str(call.get('tasks_from') or '')
                    stem, extension = os.path.splitext(tasks_from)
                    if extension and stem in role_entry_points(os.path.join('roles', role)):
                        findings.append('%s: tasks_from: %s skips the argument spec of entry point %s (write tasks_from: %s)'
                                        % (path, tasks_from, stem, stem))
    return findings


def render_roles(names):
    if not names:
        return []
    _text, findings = ansible_doc('-t', 'role', *names)
    return findings


def main():
    collection = collection_name()
    findings, counts = check_plugins(collection)
    role_findings, role_count, entry_point_count = check_roles(collection)
    findings += role_findings
    findings += check_tasks_from(collection)
    rendered = ', '.join('%d %s' % (count, plugin_type) for plugin_type, count in counts.items() if count)
    print('ansible-doc: %s, %d roles with %d entry points' % (rendered, role_count, entry_point_count))
    for finding in findings:
        print(finding, flush=True)
    if findings:
        sys.exit('%d documentation finding(s)' % len(findings))


if __name__ == '__main__':
    main()
