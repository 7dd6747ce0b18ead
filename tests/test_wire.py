"""gateway.wire's msgpack encoding: a packer kept per thread gives what `msgpack.packb` gives."""

from __future__ import annotations

import threading
from typing import Any

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.wire import encode

SCALARS = st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.floats() | st.text() | st.binary()
VALUES = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5)
)
MESSAGES = st.dictionaries(st.text(), VALUES, max_size=8)


@given(MESSAGES)
def test_every_message_packs_as_packb_would(message: dict[str, Any]) -> None:
    assert encode(message, "msgpack") == msgpack.packb(message, use_bin_type=True)


def test_a_message_that_does_not_pack_leaves_nothing_behind_for_the_next() -> None:
    with pytest.raises(TypeError):
        encode({"op": "state", "data": object()}, "msgpack")
    assert msgpack.unpackb(encode({"op": "ping"}, "msgpack")) == {"op": "ping"}


def test_threads_pack_with_packers_of_their_own() -> None:
    results: dict[int, list[bytes]] = {}

    def pack_many(index: int) -> None:
        results[index] = [encode({"thread": index, "n": n, "pad": "x" * n}, "msgpack") for n in range(2000)]

    threads = [threading.Thread(target=pack_many, args=(index,)) for index in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for index, packed in results.items():
        assert [msgpack.unpackb(data) for data in packed] == [
            {"thread": index, "n": n, "pad": "x" * n} for n in range(2000)
        ]
