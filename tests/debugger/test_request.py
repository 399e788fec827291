"""--threads specs of a traced launch (gpunb/debugger/request.py): what cannot be read says which
forms there are, at the launch and (check_threads_spec) before it."""

from __future__ import annotations

import pytest

from gpunb.debugger.errors import DebuggerError
from gpunb.debugger.request import check_threads_spec, trace_ranges


@pytest.mark.parametrize("spec", ["banana", "warp x", "thread 3"])
def test_an_unreadable_spec_lists_the_forms_at_the_launch_and_before(spec):
    with pytest.raises(DebuggerError, match="expected 'all', 'block x,y,z', 'warp W'"):
        trace_ranges(spec, (2, 1, 1), (64, 1, 1), "k")
    with pytest.raises(DebuggerError, match="expected 'all'"):
        check_threads_spec(spec)


def test_readable_specs_still_give_their_ranges():
    assert trace_ranges("warp 1; block 1; 0-3; 5", (2, 1, 1), (64, 1, 1), "k") == \
        [(32, 64), (64, 128), (0, 4), (5, 6)]
    check_threads_spec("warp 1; block 1; 0-3; 5")
