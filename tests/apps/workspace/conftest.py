import pytest

from apps.workspace import hooks


@pytest.fixture(autouse=True)
def fresh_snapshot_cache():
    """Each test's threads start unknown to the process's snapshot cache."""
    hooks.cache.clear()
    yield
    hooks.cache.clear()
