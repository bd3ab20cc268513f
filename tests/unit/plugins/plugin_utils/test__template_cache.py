"""plugin_utils/_template_cache: Jinja's compiled code kept between runs, with the results Ansible renders unchanged."""

import os
import time

import jinja2
import pytest
from jinja2 import pass_context

from ansible._internal._datatag._tags import TrustedAsTemplate
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar

from ansible_collections.tfdist.cluster.plugins.plugin_utils import _template_cache

VARIABLES = {"steps": 3, "hosts": ["w0", "w1"], "path": "x\\1"}


def trusted(text):
    return TrustedAsTemplate().tag(text)


def render_all():
    """What a play renders most: templates with filters, an expression, a conditional, backslashes both ways."""
    templar = Templar(loader=DataLoader(), variables=VARIABLES)
    return [
        templar.template(trusted("{{ steps + 1 }} steps on {{ hosts | map('upper') | join(',') }}")),
        templar.template(trusted("{{ {'a': steps} | combine({'b': hosts}) }}")),
        templar.template(trusted("{{ path | regex_replace('x(.)', '\\\\1y') }}")),
        templar.evaluate_conditional(trusted("steps > 2 and hosts | length == 2")),
        # The same text, compiled with and without Ansible's backslash escaping: 4 characters, then 3 (a tab).
        templar.template(trusted("{{ 'a\\tb' | length }}")),
        templar.template(trusted("{{ 'a\\tb' | length }}"), escape_backslashes=False),
        templar.evaluate_expression(trusted("hosts | last")),
    ]


@pytest.fixture
def cache(tmp_path):
    folder = tmp_path / "templates"
    assert _template_cache.install(str(folder)) is None
    yield folder
    _template_cache.uninstall()


def test_results_are_the_same_with_the_cache_and_its_entries_are_used_again(cache, monkeypatch):
    without = [4, 3]  # the two backslash cases, as Ansible renders them
    first = render_all()
    assert first[0] == "4 steps on W0,W1"
    assert first[1] == {"a": 3, "b": ["w0", "w1"]}
    assert first[3] is True
    assert first[4:6] == without
    assert first[6] == "w1"
    assert len(os.listdir(cache)) >= 7
    # A new process: nothing in memory, and no compiling allowed; every code object comes from the folder.
    _template_cache._memory.clear()

    def refuse(*args, **kwargs):
        raise AssertionError("compiled again: %r" % (args[1],))

    monkeypatch.setitem(_template_cache._installed, "compile", refuse)
    monkeypatch.setitem(_template_cache._installed, "compile_expression", refuse)
    assert render_all() == first


def test_a_template_jinja_refuses_is_refused_as_before_and_not_kept(cache):
    templar = Templar(loader=DataLoader(), variables=VARIABLES)
    with pytest.raises(Exception, match="Syntax error in template"):
        templar.template(trusted("{{ steps + }}"))
    assert [name for name in os.listdir(cache) if not name.startswith(".")] == []


def test_an_entry_that_cannot_be_read_is_compiled_again(cache):
    first = render_all()
    for name in os.listdir(cache):
        (cache / name).write_bytes(b"not marshal data")
    _template_cache._memory.clear()
    assert render_all() == first


def test_a_folder_other_users_can_write_to_is_not_used(tmp_path):
    folder = tmp_path / "shared"
    folder.mkdir()
    folder.chmod(0o777)
    compile_before = _template_cache.jinja_environment.Environment.compile
    assert "others can write to it" in _template_cache.install(str(folder))
    assert _template_cache.jinja_environment.Environment.compile is compile_before
    assert render_all()[0] == "4 steps on W0,W1"
    assert os.listdir(folder) == []


def shout(value):
    return str(value).upper()


@pass_context
def shout_in_context(context, value):
    return "%s from %s" % (str(value).upper(), context.get("origin"))


def test_code_compiled_against_other_filters_is_compiled_again(cache, monkeypatch):
    """A collection upgraded between runs may change how its filter takes its arguments, or bring a filter that
    was missing: code Jinja generated for the old one would call the new one wrongly."""
    before = jinja2.Environment()
    before.filters["shout"] = shout
    assert before.from_string("{{ word | shout }}").render(word="hi") == "HI"
    assert before.from_string("{{ word | later if word else '' }}").render(word="") == ""  # 'later' not there yet
    _template_cache._memory.clear()  # the next run
    after = jinja2.Environment()
    after.filters.update(shout=shout_in_context, later=shout)
    assert after.from_string("{{ word | shout }}").render(word="hi", origin="b") == "HI from b"
    assert after.from_string("{{ word | later if word else '' }}").render(word="hi") == "HI"
    # With the same filters as when it was compiled, the kept code is used: nothing is compiled.
    _template_cache._memory.clear()
    monkeypatch.setitem(_template_cache._installed, "compile", None)
    assert after.from_string("{{ word | shout }}").render(word="hi", origin="c") == "HI from c"


def test_entries_unused_for_a_month_are_removed_and_used_ones_kept(tmp_path):
    folder = tmp_path / "templates"
    assert _template_cache.install(str(folder)) is None
    first = render_all()
    _template_cache.uninstall()
    entries = {name for name in os.listdir(folder) if not name.startswith(".")}
    month_ago = time.time() - 40 * _template_cache.DAY
    for name in entries:
        os.utime(folder / name, (month_ago, month_ago))
    cut_short = folder / ".new-abc"
    cut_short.write_bytes(b"half")
    os.utime(cut_short, (time.time() - 7200,) * 2)
    # A run today uses one template of them (the folder was pruned today: not again).
    assert _template_cache.install(str(folder)) is None
    Templar(loader=DataLoader(), variables=VARIABLES).template(trusted("{{ 'a\\tb' | length }}"))
    _template_cache.uninstall()
    used = {name for name in entries if os.stat(folder / name).st_mtime > time.time() - 60}
    assert used and used < entries
    assert cut_short.exists()
    # The first run of the next day prunes: what that run used stays, the rest goes, and so does the cut-short write.
    os.utime(folder / _template_cache.PRUNED_MARK, (time.time() - 2 * _template_cache.DAY,) * 2)
    assert _template_cache.install(str(folder)) is None
    try:
        assert {name for name in os.listdir(folder) if not name.startswith(".")} == used
        assert not cut_short.exists()
        assert render_all() == first  # what went is compiled again
    finally:
        _template_cache.uninstall()
