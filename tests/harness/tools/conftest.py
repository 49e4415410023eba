import pytest

from tests.support.fake_web import FakeWeb


@pytest.fixture
def fake_web():
    with FakeWeb() as web:
        yield web
