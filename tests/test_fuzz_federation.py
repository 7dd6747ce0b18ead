"""Fuzzing federation's import: whatever another gateway (or anyone on the broker) publishes is refused or taken.

The importer reads other gateways' retained `status`, `devices`, `availability` and `state` topics and
the replies to forwarded commands. Any payload on any of them, under any gateway and device name, is
refused (counted in `rejected`) or taken, never raised: the MQTT reader only logs what a handler
raises, and the rest of that message is lost. And a well-formed sample of a listed device is
imported after any of it.
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from devices.remote.adapter import RemoteDevice
from gateway.bus import Bus
from gateway.commands import CommandRouter
from gateway.core.client import Hub
from gateway.core.config import ServerConfig, SupervisorConfig
from gateway.faces.mqtt.federation import Importer
from gateway.faces.mqtt.topics import TopicMap
from gateway.supervisor import Supervisor
from tests.fuzzing import fuzz_settings, json_bytes, nested
from tests.test_leases import RecordingLink

pytestmark = pytest.mark.fuzz

GOOD_STATE = orjson.dumps({"type": "hwgateway/SimOutputs", "data": {"leds": [[0.0, 1.0, 0.0]]}, "stamp": 1.5, "seq": 1})
KINDS = ("status", "devices", "availability", "state", "reply")
names = st.sampled_from(["lab-a", "lab-b", "lamp", "x" * 200, "", "a/b", "a:b", " ", "é"]) | st.text(max_size=12)
values = nested()
#: Documents shaped like what each topic carries, with any values where its fields go.
documents = st.one_of(
    st.builds(lambda devices: {"devices": devices}, st.lists(values, max_size=3) | values),
    st.builds(
        lambda entry, extra: {"devices": [{**extra, **entry}]},
        st.fixed_dictionaries({"id": names | values}),
        st.dictionaries(st.sampled_from(["publishes", "accepts", "capabilities", "kind"]), values, max_size=4),
    ),
    st.dictionaries(st.sampled_from(["status", "detail", "state"]), values | st.sampled_from(["connected", "online"])),
    st.dictionaries(
        st.sampled_from(["type", "data", "stamp", "seq"]),
        values | st.sampled_from(["hwgateway/SimOutputs", "creos_messages/ControllerState"]),
    ),
    st.dictionaries(st.sampled_from(["ok", "data", "error"]), values),
)
payloads = st.binary(max_size=200) | st.one_of(values, documents).map(json_bytes)
events = st.tuples(st.sampled_from(KINDS), names, names, st.sampled_from(["state", "outputs", "x/y", ""]), payloads)


def _importer() -> tuple[Importer, Supervisor, Bus]:
    bus = Bus()
    supervisor = Supervisor(bus, SupervisorConfig(), ())
    hub = Hub(bus, supervisor, CommandRouter(supervisor, lambda *_: None), ServerConfig(), ())
    link: Any = RecordingLink()
    return Importer(hub, RemoteDevice.imported, TopicMap("hwgateway", "lab-b"), link), supervisor, bus


def _deliver(importer: Importer, kind: str, gateway: str, device: str, stream: str, payload: bytes) -> None:
    if kind == "status":
        importer.on_status(gateway, payload)
    elif kind == "devices":
        importer.on_devices(gateway, payload)
    elif kind == "availability":
        importer.on_availability(gateway, device, payload)
    elif kind == "state":
        importer.on_state(gateway, device, f"{device}/{stream}", payload)
    else:
        importer.on_reply(None, payload)


@given(st.lists(events, min_size=1, max_size=8))
@fuzz_settings(150)
def test_any_publication_is_refused_or_imported_and_a_good_sample_still_gets_in(
    batch: list[tuple[str, str, str, str, bytes]],
) -> None:
    async def run() -> None:
        importer, supervisor, bus = _importer()
        try:
            importer.on_status("lab-a", b"online")
            importer.on_devices("lab-a", b'{"devices": [{"id": "lamp", "publishes": ["hwgateway/SimOutputs"]}]}')
            for event in batch:
                _deliver(importer, *event)
            await asyncio.sleep(0)
            assert "lab-a:lamp" in supervisor.devices
            imported = importer.imported
            importer.on_state("lab-a", "lamp", "lamp/outputs", GOOD_STATE)
            assert importer.imported == imported + 1
            sample = bus.latest("lab-a:lamp/outputs")
            assert sample is not None
            assert sample.data()["leds"] == [[0.0, 1.0, 0.0]]
            assert sample.stamp == 1.5
        finally:
            importer.close()  # asyncio.run cancels the imported devices' tasks (no shutdown's settle time each)

    asyncio.run(run())
