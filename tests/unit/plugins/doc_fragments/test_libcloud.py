"""The libcloud doc fragment says what each cloud's file declares: its credentials keys and their environment
variables, and where the region comes from. The cloud files are the rule; this keeps the doc from drifting."""

import re

import pytest
import yaml

from ansible_collections.tfdist.cluster.plugins.doc_fragments.libcloud import ModuleDocFragment
from ansible_collections.tfdist.cluster.plugins.module_utils._clouds import PROVIDERS

OPTIONS = yaml.safe_load(ModuleDocFragment.DOCUMENTATION)["options"]
# "optional C(session_token) (E(AWS_SESSION_TOKEN))" or "C(project_name) (E(OS_PROJECT_NAME) or E(OS_TENANT_NAME))"
DOCUMENTED_KEY = re.compile(r"(optional )?C\((\w+)\) \(((?:E\(\w+\)(?: or )?)+)\)")


def documented_credentials(provider):
    """{key: (environment variables, required)} as the credentials option's line for `provider` says."""
    line = next(line for line in OPTIONS["credentials"]["description"] if line.startswith("V(%s) keys" % provider))
    return {key: (tuple(re.findall(r"E\((\w+)\)", variables)), not optional)
            for optional, key, variables in DOCUMENTED_KEY.findall(line)}


@pytest.mark.parametrize("provider", sorted(name for name, cloud in PROVIDERS.items() if cloud.credentials))
def test_the_credentials_doc_lists_each_key_of_the_cloud_file_with_its_variables(provider):
    declared = {key: (tuple(variables), required) for key, variables, required in PROVIDERS[provider].credentials.values()}

    assert documented_credentials(provider) == declared


@pytest.mark.parametrize("provider", sorted(name for name, cloud in PROVIDERS.items() if cloud.region_env))
def test_the_region_doc_names_the_variables_of_the_cloud_file(provider):
    line = next(line for line in OPTIONS["region"]["description"] if "E(" in line)
    documented = re.search(r"((?:E\(\w+\)(?: or )?)+) for V\(%s\)" % provider, line)

    assert documented, (provider, line)
    assert tuple(re.findall(r"E\((\w+)\)", documented.group(1))) == PROVIDERS[provider].region_env
