"""What a failed task's log says went wrong: the exception, where it was raised, not the numbers after it."""

from ansible_collections.tfdist.cluster.plugins.module_utils._failures import error_in, failure_line

TENSOR_ERROR = """2026-11-28 10:00:01 I tensorflow/core: starting
[train] step 100/1000 loss 0.5
Traceback (most recent call last):
  File "/var/lib/tfdist/job/tasks/chief-0/train.py", line 12, in <module>
    main()
  File "/var/lib/tfdist/job/tasks/chief-0/train.py", line 9, in main
    raise ValueError("bad logits: %s" % logits)
    ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
ValueError: bad logits: [[0.1 0.2 0.3]
 [0.4 0.5 0.6]
""" + " [0.7 0.8 0.9]\n" * 40 + """[tfdist-supervise] 2026-11-28T10:00:02+0000 task ended: returncode 1 (exited)
"""


def test_the_exception_and_the_frame_that_raised_it_are_found_above_a_tensor_dump():
    error = error_in(TENSOR_ERROR)
    assert error == {"error": "ValueError: bad logits: [[0.1 0.2 0.3]",
                     "where": "/var/lib/tfdist/job/tasks/chief-0/train.py:9 in main",
                     "line": 'raise ValueError("bad logits: %s" % logits)'}
    assert failure_line(error) == ('ValueError: bad logits: [[0.1 0.2 0.3] (raised at '
                                   '/var/lib/tfdist/job/tasks/chief-0/train.py:9 in main: '
                                   'raise ValueError("bad logits: %s" % logits))')


def test_the_last_of_chained_tracebacks_is_the_one_that_ended_the_task():
    log = """Traceback (most recent call last):
  File "a.py", line 1, in <module>
    import foo
ModuleNotFoundError: No module named 'foo'

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "a.py", line 3, in <module>
    raise SystemError("no foo")
SystemError: no foo
"""
    assert error_in(log)["error"] == "SystemError: no foo"
    assert error_in(log)["where"] == "a.py:3 in <module>"


def test_without_a_traceback_the_last_line_the_task_wrote_is_the_error():
    log = "starting\nFATAL: cannot bind port 2222\n[tfdist-supervise] 2026-11-28T10:00:02+0000 task ended\n"
    assert error_in(log) == {"error": "FATAL: cannot bind port 2222", "where": "", "line": ""}
    assert failure_line(error_in(log)) == "FATAL: cannot bind port 2222"
    assert error_in("") == {"error": "", "where": "", "line": ""} and failure_line(error_in("")) == ""


def test_a_huge_exception_line_is_shortened():
    log = "Traceback (most recent call last):\n  File \"t.py\", line 1, in <module>\nValueError: " + "9 " * 10000
    error = error_in(log)["error"]
    assert error.startswith("ValueError: 9 9") and error.endswith("...") and len(error) <= 300
