# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""Check the changelog the way antsibull-changelog keeps it.

Run from the repository root with the checks virtualenv, which has antsibull-changelog (`make docs` does):
    .cache/checks-venv/bin/python scripts/check-changelog.py

- `antsibull-changelog lint`: every fragment in changelogs/fragments/ is valid YAML with known sections;
- `antsibull-changelog lint-changelog-yaml`: changelogs/changelog.yaml is valid;
- CHANGELOG.rst is exactly what `antsibull-changelog generate` writes from changelog.yaml (never edited by hand);
- galaxy.yml's version is the last release of changelog.yaml (just released) or a later one, the version
  in development that `antsibull-changelog release` will turn the fragments into.
Exit status 1 with the findings when one of them fails.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

import yaml

ANTSIBULL_CHANGELOG = os.path.join(os.path.dirname(sys.executable), 'antsibull-changelog')


def version_tuple(version):
    return tuple(int(part) for part in str(version).split('.'))


def run(*args):
    """Run antsibull-changelog; returns a finding, or None when it succeeded."""
    done = subprocess.run([ANTSIBULL_CHANGELOG, *args], capture_output=True, text=True, check=False)
    if done.returncode == 0:
        return None
    output = (done.stdout + done.stderr).strip()
    return 'antsibull-changelog %s (exit status %d):\n%s' % (' '.join(args), done.returncode, output)


def check_versions():
    with open('galaxy.yml', encoding='utf-8') as handle:
        version = str(yaml.safe_load(handle)['version'])
    with open('changelogs/changelog.yaml', encoding='utf-8') as handle:
        releases = sorted((yaml.safe_load(handle) or {}).get('releases') or {}, key=version_tuple)
    if not releases:
        return [], version, None
    last = releases[-1]
    if version_tuple(version) < version_tuple(last):
        return ['galaxy.yml version %s is older than the last release in changelogs/changelog.yaml (%s)'
                % (version, last)], version, last
    return [], version, last


def check_generated():
    with tempfile.TemporaryDirectory() as tmp:
        generated = os.path.join(tmp, 'CHANGELOG.rst')
        finding = run('generate', '--output', generated)
        if finding:
            return [finding]
        with open(generated, encoding='utf-8') as new, open('CHANGELOG.rst', encoding='utf-8') as old:
            if new.read() != old.read():
                return ['CHANGELOG.rst differs from what `antsibull-changelog generate` writes from '
                        'changelogs/changelog.yaml: run `make changelog` (never edit it by hand)']
    return []


def main():
    findings = [finding for finding in (run('lint'), run('lint-changelog-yaml', 'changelogs/changelog.yaml')) if finding]
    version_problems, version, last = check_versions()
    findings += version_problems
    findings += check_generated()
    fragments = sorted(name for name in os.listdir('changelogs/fragments') if name.endswith(('.yml', '.yaml')))
    state = 'released' if version == last else 'in development, %d fragment(s) pending' % len(fragments)
    print('changelog: last release %s; galaxy.yml %s (%s)' % (last, version, state))
    for finding in findings:
        print(finding, flush=True)
    if findings:
        sys.exit('%d changelog finding(s)' % len(findings))


if __name__ == '__main__':
    main()
