"""Fixtures the queue's tests share."""
import pytest


@pytest.fixture(autouse=True)
def short_lease(settings):
    """A lease of a minute, and no provider retries: a lost worker is found, and a failure ends, at once."""
    settings.EEGAB_EPISODE_LEASE_SEC = 60
    settings.EEGAB_PROVIDER_RETRIES = 0
