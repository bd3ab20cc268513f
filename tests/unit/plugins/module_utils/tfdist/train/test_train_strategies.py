"""Which errors of reading a step's loss from a worker the parameter-server loop lives with, and which end the job;
a stop ends the loop even when its signal handler's exception was lost."""

import signal
from types import SimpleNamespace

import pytest

from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist.train import job, strategies


class UnavailableError(Exception):
    pass


class InternalError(Exception):
    pass


class PSUnavailableError(UnavailableError):
    pass


class InvalidArgumentError(Exception):
    pass


# tf.errors as fetch_loss uses it: the classes it catches by name.
TF = SimpleNamespace(errors=SimpleNamespace(UnavailableError=UnavailableError, InternalError=InternalError))

UNPARSABLE = ("2 root error(s) found.\n  (0) INTERNAL: {{function_node __wrapped__Identity_device_/job:chief/replica:0/"
              "task:0/device:CPU:0}} Unable to parse request\nAdditional GRPC error information from remote target "
              "/job:worker/replica:0/task:0/device:CPU:0 while calling /tensorflow.eager.EagerService/"
              "RunComponentFunction:")


class RemoteLoss:
    def __init__(self, value=None, error=None):
        self.value, self.error = value, error

    def fetch(self):
        if self.error:
            raise self.error
        return self.value


def test_a_loss_that_reads_is_a_float():
    assert strategies.fetch_loss(TF, RemoteLoss(value=0.25)) == 0.25


@pytest.mark.parametrize("error", [
    UnavailableError("Socket closed /job:worker/replica:0/task:1"),  # the worker is gone since it ran the step
    InternalError(UNPARSABLE),  # the worker garbled the read of the result (seen once in CI's make test)
], ids=["worker-gone", "worker-unparsable"])
def test_a_loss_a_worker_cannot_hand_back_is_skipped_and_logged(error, capsys):
    assert strategies.fetch_loss(TF, RemoteLoss(error=error)) is None
    logged = capsys.readouterr()
    assert "could not be read from its worker; training goes on (%s" % type(error).__name__ in logged.out + logged.err


@pytest.mark.parametrize("error", [
    PSUnavailableError("ps 0 is gone"),  # the variables are lost: the job cannot go on
    UnavailableError("Connection reset /job:ps/replica:0/task:0"),
    InternalError("Unable to parse request from remote target /job:ps/replica:0/task:0"),
    InternalError("Failed to load a kernel"),  # not a worker's answer: a fault of the chief itself
    InvalidArgumentError("NaN in the loss"),
], ids=["ps-unavailable", "ps-named", "ps-unparsable", "internal-elsewhere", "other-error"])
def test_errors_of_the_parameter_servers_and_any_other_end_the_job(error):
    with pytest.raises(type(error)):
        strategies.fetch_loss(TF, RemoteLoss(error=error))


class LostStop:
    """Delivers SIGTERM's handler while Python runs a __del__, as a stop that finds TensorFlow collecting an object
    does: Python prints "Exception ignored in ..." and the Terminated it raised goes nowhere."""

    def __del__(self):
        job.on_sigterm(signal.SIGTERM, None)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the lost exception, as expected
def test_a_stop_whose_exception_was_lost_in_a_del_still_stops_the_loop(monkeypatch):
    monkeypatch.setattr(job, "stop_signal", None)
    scheduled = []

    def schedule(k):
        scheduled.append(k)
        return RemoteLoss(value=0.5)

    def update(done, loss):
        if done == 2:
            LostStop()  # made and collected at once: its __del__ runs the handler

    args = SimpleNamespace(steps=100, steps_per_execution=1, checkpoint_every=1000)
    state = SimpleNamespace(step=SimpleNamespace(numpy=lambda: len(scheduled)))
    with pytest.raises(job.Terminated) as stopped:
        strategies.schedule_steps(TF, args, schedule, state, SimpleNamespace(update=update), 0, limit=4)
    assert stopped.value.args[1] == 128 + signal.SIGTERM
    assert len(scheduled) == 5  # the queue of 4 and the one refilled after step 1: nothing after the stop
