"""Fuzzing the MQTT face's requests: any payload and properties on `set`, `estop` or `release`, never a crash.

Anyone who may publish on the broker reaches `gateway.faces.mqtt.commands.CommandService`. Whatever
a request holds, a request that names where its answer goes (a response topic, or a `transaction`
for `<device>/response`) gets exactly one answer there, and no answer is an `internal_error`.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import orjson
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from devices.registry import KINDS
from gateway.core.config import DeviceConfig
from gateway.faces.mqtt.commands import CLIENT_PROPERTY, PEER_PROPERTY, TOKEN_PROPERTY, CommandService, Request
from gateway.faces.mqtt.topics import TopicMap
from tests.fuzzing import SCALARS, LogRecords, fuzz_hub, fuzz_settings, json_bytes, nested
from tests.test_leases import RecordingLink

pytestmark = pytest.mark.fuzz

#: The largest payload the service takes (bytes): small, so that oversized ones are among the examples.
MAX_PAYLOAD_BYTES = 512
FIELDS = ["type", "data", "timeout_s", "transaction", "peer", "client", "token", "colour"]
values = nested(SCALARS | st.sampled_from(["led", "sound", "rumble", "estop", "sim-1", "", "x" * 300]))
payloads = (
    st.binary(max_size=80)
    | values.map(json_bytes)
    | st.dictionaries(st.sampled_from(FIELDS), values, max_size=5).map(json_bytes)
    | st.builds(
        lambda kind, data, transaction: json_bytes({"type": kind, "data": data, "transaction": transaction}),
        st.sampled_from(["led", "sound", "rumble", "nope"]),
        values,
        st.integers(0, 9) | st.text(max_size=4),
    )
)
user_properties = st.lists(
    st.tuples(st.sampled_from([PEER_PROPERTY, CLIENT_PROPERTY, TOKEN_PROPERTY, "other"]), st.text(max_size=300)),
    max_size=3,
)
requests = st.builds(
    Request,
    payloads,
    st.none() | st.just("test/replies"),
    st.none() | st.binary(max_size=8),
    user_properties.map(dict),
)
calls = st.tuples(
    st.sampled_from(["set", "estop", "release"]), st.sampled_from(["sim-1", "ghost", "a b", ""]), requests
)


@given(st.lists(calls, min_size=1, max_size=5))
# An unreadable estop still stops (auth is off), and is answered once: it was answered bad_request, then ok.
@example([("estop", "sim-1", Request(b"\x00", "test/replies", None, {}))])
@fuzz_settings(150)
def test_any_request_is_answered_without_internal_errors(batch: list[tuple[str, str, Request]]) -> None:
    async def run() -> None:
        devices = (DeviceConfig("sim-1", "sim", True, KINDS.options_class("sim")()),)
        link: Any = RecordingLink()
        service = CommandService(fuzz_hub(devices), TopicMap("hwgw", "lab-a"), link, MAX_PAYLOAD_BYTES)
        # With a link that never fails, a warning ("answer not sent") means a bug.
        with LogRecords("gateway.faces.mqtt.commands", logging.WARNING) as warnings:
            for kind, device, request in batch:
                if kind == "set":
                    service.command(device, request)
                elif kind == "estop":
                    service.estop(request)
                else:
                    service.release(request)
            for _ in range(20):
                await asyncio.sleep(0)
            service.close()
        assert not warnings.messages, warnings.messages
        answers = [orjson.loads(payload) for _, payload in link.published]
        assert all(answer["op"] == "result" for answer in answers), answers
        assert not [a for a in answers if not a["ok"] and a["error"]["code"] == "internal_error"], answers
        # Every set and estop with a response topic is answered there once; a release only when refused.
        replies = sum(1 for topic, _ in link.published if topic == "test/replies")
        asked = [kind for kind, _, request in batch if request.response_topic is not None]
        assert asked.count("set") + asked.count("estop") <= replies <= len(asked), (replies, asked)

    asyncio.run(run())
