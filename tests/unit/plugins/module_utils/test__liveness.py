"""The watch's rules for a job that has not died: a deadline, a stall, a peer silent for longer than a blip."""

import pytest

from ansible_collections.tfdist.cluster.plugins.module_utils._liveness import (
    Frozen, Progress, Silence, format_duration, frozen_message, parse_duration, stall_message)


@pytest.mark.parametrize("text, seconds", [
    ("90", 90), ("45s", 45), ("15m", 900), ("2h", 7200), ("1d", 86400), ("1h30m", 5400), ("1.5h", 5400),
    (" 2H ", 7200), ("1d2h3m4s", 93784),
])
def test_durations_read_as_people_write_them(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "abc", "-1", "1x", "h", "30m2h", "1,5h"])
def test_anything_else_is_not_a_duration(text):
    with pytest.raises(ValueError, match="expected a duration such as 90s, 45m, 2h, 1d or 1h30m"):
        parse_duration(text)


def test_durations_are_shown_in_their_two_biggest_units():
    assert [format_duration(s) for s in (0, 45, 900, 5400, 93784)] == ["0s", "45s", "15m", "1h30m", "1d2h"]


def test_a_leader_without_a_step_for_the_stall_time_is_stalled_and_a_step_resets_the_clock():
    progress = Progress(stall_seconds=60, now=1000)
    progress.see(("step", 10), 1000)
    assert progress.stalled(1059) is None
    progress.see(("step", 11), 1059)
    assert progress.stalled(1100) is None
    assert progress.stalled(1119) == 60


def test_the_launch_counts_as_progress_so_a_start_up_that_never_trains_is_a_stall():
    progress = Progress(stall_seconds=60, now=1000)
    progress.see(("step", 0), 1010)  # the first look: the run's initial step, unchanged since
    assert progress.stalled(1069) is None and progress.stalled(1070) == 60


def test_a_slow_job_gets_twenty_of_its_step_intervals():
    # One step a minute: 15 minutes of silence is a normal wait between steps, not a stall.
    progress = Progress(stall_seconds=900, now=0)
    assert progress.limit(steps_per_sec=1 / 60) == 1200
    assert progress.stalled(1000, steps_per_sec=1 / 60) is None
    assert progress.stalled(1200, steps_per_sec=1 / 60) == 1200
    assert progress.limit(steps_per_sec=100) == 900


def test_no_stall_time_never_calls_a_job_stalled():
    assert Progress(stall_seconds=0, now=0).stalled(10 ** 9) is None
    frozen = Frozen(stall_seconds=0)
    frozen.see("ps-0", "stopped", 0)
    assert frozen.stalled(10 ** 9) == []


def test_a_task_held_by_the_kernel_for_the_stall_time_is_stalled_until_it_runs_again():
    frozen = Frozen(stall_seconds=30)
    frozen.see("ps-0", "stopped", 100)
    frozen.see("worker-0", "running", 100)
    assert frozen.state("ps-0") == "stopped" and frozen.state("worker-0") is None
    assert frozen.stalled(129) == []
    assert frozen.stalled(130) == [("ps-0", "stopped", 30)]
    frozen.see("ps-0", "running", 131)  # SIGCONT
    assert frozen.stalled(200) == [] and frozen.state("ps-0") is None
    frozen.see("ps-0", "uninterruptible", 200)
    assert frozen.stalled(240) == [("ps-0", "uninterruptible", 40)]


def test_a_silence_shorter_than_the_grace_is_a_blip():
    silence = Silence(grace=60)
    silence.see("10.0.0.5:2222", True, 0)
    silence.see("10.0.0.5:2222", False, 10)
    assert not silence.gone("10.0.0.5:2222", 69) and silence.silent_for("10.0.0.5:2222", 30) == 20
    silence.see("10.0.0.5:2222", True, 30)  # back: the clock starts again at the next silence
    silence.see("10.0.0.5:2222", False, 40)
    assert not silence.gone("10.0.0.5:2222", 99)
    assert silence.gone("10.0.0.5:2222", 100)


def test_a_peer_never_heard_is_not_gone_but_never_heard():
    silence = Silence(grace=60)
    silence.see("10.0.0.6:2222", False, 0)
    assert not silence.heard("10.0.0.6:2222") and not silence.gone("10.0.0.6:2222", 10 ** 6)


def test_the_stall_message_says_at_which_step_for_how_long_and_what_holds_the_task():
    status = {"step": 1200, "target_steps": 5000}
    message = stall_message(status, 900, moved_at=0, frozen_state="stopped")
    assert message.startswith("stalled at step 1200/5000: no step for 15m (last step ")
    assert message.endswith("; its process is stopped (SIGSTOP))")
    # A script without status.json is judged by its log.
    assert stall_message(None, 3600, moved_at=0).startswith("stalled: no new output in its log for 1h (last output ")
    assert frozen_message("uninterruptible", 960) == (
        "stalled: its process is stuck in the kernel (uninterruptible sleep: a hung disk, NFS or device) for 16m")
