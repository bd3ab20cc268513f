"""Which errors of reading a step's loss from a worker the parameter-server loop lives with, and which end the job."""

from types import SimpleNamespace

import pytest

from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist.train import strategies


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
