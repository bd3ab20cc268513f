"""tfdist.cluster.training_files: the lay-down's render hands the template lookup the task's variables to copy
shallowly (Ansible's lookup deep-copies what it is given, only to add its own variables on top)."""

from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import lookup_loader
from ansible.template import Templar

from ansible_collections.tfdist.cluster.plugins.action.training_files import _CopiedShallow


class CountsDeepCopies:
    """A variable that counts the deep copies made of it."""

    copies = 0

    def __deepcopy__(self, memo):
        CountsDeepCopies.copies += 1
        return self


def test_the_template_lookup_renders_the_lay_downs_variables_without_copying_each_one(tmp_path):
    template = tmp_path / "train.py.j2"
    template.write_text("{{ greeting }} from task {{ training_task.index }}")
    loader = DataLoader()
    lookup = lookup_loader.get("ansible.builtin.template", loader=loader, templar=Templar(loader=loader))
    variables = {"greeting": "hello", "held": CountsDeepCopies()}

    shallow = lookup.run([str(template)], _CopiedShallow(variables), template_vars={"training_task": {"index": 1}})
    assert shallow == ["hello from task 1"]
    # The saving holds on this ansible-core: its lookup copies through __deepcopy__, which copies no variable.
    assert CountsDeepCopies.copies == 0

    # The same render with a plain dict deep-copies each variable (what the lay-down did before).
    assert lookup.run([str(template)], dict(variables), template_vars={"training_task": {"index": 1}}) == shallow
    assert CountsDeepCopies.copies == 1
