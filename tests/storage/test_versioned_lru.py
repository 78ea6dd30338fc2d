"""storage.versioned_lru: get_many answers as get does, key by key, and counts as a use."""

from __future__ import annotations

from storage.versioned_lru import VersionedLru


def test_get_many_is_get_of_each_and_a_use_of_each() -> None:
    lru: VersionedLru[str] = VersionedLru(max_bytes=30)
    for key in "abc":
        lru.put(key, 1, key.upper(), 10)
    got = lru.get_many([("a", 1), ("b", 2), ("z", 1), ("c", 1)])
    assert got == ["A", None, None, "C"] == [lru.get(k, v) for k, v in [("a", 1), ("b", 2), ("z", 1), ("c", 1)]]
    lru.get_many([("a", 1), ("c", 1)])  # b is now the least recently used
    lru.put("d", 1, "D", 10)
    assert lru.get("b", 1) is None and lru.get_many([("a", 1), ("c", 1), ("d", 1)]) == ["A", "C", "D"]
