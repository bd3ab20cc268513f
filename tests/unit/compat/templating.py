"""Template trust on every ansible-core that meta/runtime.yml claims.

ansible-core 2.19 templates only strings marked trusted (trust_as_template) and never those that are not;
older releases template every string except those wrapped as unsafe (AnsibleUnsafe). These two functions
mean the same thing on both.
"""

from __future__ import annotations

try:
    from ansible.template import is_trusted_as_template, trust_as_template
except ImportError:  # ansible-core < 2.19
    from ansible.utils.unsafe_proxy import AnsibleUnsafe

    def trust_as_template(value):
        """Before 2.19 every string that is not unsafe is a template."""
        return value

    def is_trusted_as_template(value):
        """Before 2.19 a string is templated unless it is unsafe."""
        return isinstance(value, str) and not isinstance(value, AnsibleUnsafe)

__all__ = ["is_trusted_as_template", "trust_as_template"]
