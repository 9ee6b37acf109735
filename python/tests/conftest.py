"""What the tests share: a fresh spool for each test, open."""

import pytest

import spool


@pytest.fixture
def sp(tmp_path):
    path = str(tmp_path / "spool")
    spool.init(path)
    with spool.Spool(path) as s:
        yield s
