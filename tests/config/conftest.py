import io
import logging

import pytest


@pytest.fixture
def console():
    """What the configured console handler (with the request id filter) writes during a test."""
    [handler] = [h for h in logging.getLogger().handlers if h.get_name() == "console"]
    stream = io.StringIO()
    previous = handler.setStream(stream)
    yield stream
    handler.setStream(previous)
