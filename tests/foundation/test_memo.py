"""RecentlyUsed: a bounded memo that forgets the least recently used entry, never all at once."""

from __future__ import annotations

from gpunb.foundation.memo import RecentlyUsed


def test_the_least_recently_used_entry_goes_first():
    memo = RecentlyUsed(3)
    for key in "abc":
        memo[key] = key.upper()
    assert memo.get("a") == "A"  # a is now the most recently used
    memo["d"] = "D"  # b, the least recently used, goes
    assert "b" not in memo and memo.get("b", "missing") == "missing"
    assert [memo.get(k) for k in "acd"] == ["A", "C", "D"] and len(memo) == 3


def test_a_full_memo_keeps_its_other_entries():
    """The memos it replaced cleared themselves when full: every entry missed at once."""
    memo = RecentlyUsed(100)
    for k in range(1000):
        memo[k] = k
    assert len(memo) == 100 and all(memo.get(k) == k for k in range(900, 1000))


def test_setting_a_key_again_refreshes_it_and_clear_empties():
    memo = RecentlyUsed(2)
    memo["x"], memo["y"] = 1, 2
    memo["x"] = 3  # x refreshed: y is the oldest now
    memo["z"] = 4
    assert memo.get("x") == 3 and "y" not in memo
    memo.clear()
    assert len(memo) == 0 and memo.get("x") is None
