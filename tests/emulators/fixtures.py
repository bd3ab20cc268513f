"""pytest fixtures of the emulated clouds: a plugin listed in tests/conftest.py's pytest_plugins, so every test folder has them."""

import pytest

from emulators.ec2 import Ec2Emulator


@pytest.fixture(scope="session")
def ec2_emulator():
    """moto's EC2 emulator behind the namespace-fixing, call-counting proxy (see emulators/ec2.py)."""
    emulator = Ec2Emulator()
    try:
        emulator.start()
    except RuntimeError as e:
        pytest.fail("the EC2 emulator did not start: %s" % e, pytrace=False)
    yield emulator
    emulator.stop()
