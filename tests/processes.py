"""Process helpers shared by the tests (tests/ is on sys.path through tests/conftest.py)."""


def alive(pid):
    """Whether pid runs (a zombie counts as gone)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
