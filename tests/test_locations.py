"""Two spellings of one place name the same place, whichever of the two comparisons asks
(``storage.same_location`` on arguments, ``storage.same_file`` on locations): they used to disagree
on ``file:///x`` against ``/x`` and on a relative path against its absolute one."""

from __future__ import annotations

import os

import pytest

from clinconsensus_tasks.storage import location, same_file, same_location


@pytest.mark.parametrize(("a", "b", "same"), [
    ("file:///tmp/runs/a.eval", "/tmp/runs/a.eval", True),
    ("runs/a.eval", os.path.join(os.getcwd(), "runs", "a.eval"), True),
    ("memory://bucket/runs/a.eval", "memory:///bucket/runs/a.eval", True),
    ("memory://bucket/runs/", "memory://bucket/runs", True),
    ("/tmp/runs/a.eval", "memory://tmp/runs/a.eval", False),
    ("/tmp/runs/a.eval", "/tmp/runs/b.eval", False),
])
def test_both_comparisons_agree(a, b, same):
    assert same_location(a, b) is same
    assert same_file(location(a), location(b)) is same
    assert same_location(b, a) is same
