"""Recordings open in Foxglove and Lichtblick: every schema a recording holds is one their parser takes.

The apps read an MCAP `json` channel with a `jsonschema` schema through `parseJsonSchema`, which refuses
an array of arrays (tests/test_foxglove_schemas.py runs it, unchanged, from the published
`@foxglove/studio-base` bundle). A recording stores such arrays in the viewer form
(`gateway.messages.shapes`: `{values: [...]}`), and the replay reads files of both forms.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from mcap.reader import make_reader

from devices.replay.adapter import our_form
from gateway.messages import REGISTRY, from_plain, schema_of, to_plain
from gateway.messages.microbit import MicrobitLeds
from gateway.messages.shapes import outward
from gateway.messages.sim import SimOutputs
from gateway.record.channels import OWN_SCHEMAS
from gateway.record.replay_source import load
from gateway.record.sink import Encoded, McapSink
from tests.test_foxglove_schemas import parse

#: Messages of the types that hold an array of arrays, with something in it.
NESTED_SAMPLES: dict[str, object] = {
    "hwgateway/MicrobitLeds": MicrobitLeds(rows=tuple(tuple(c == r for c in range(5)) for r in range(5))),
    "hwgateway/SimOutputs": SimOutputs(leds=((1.0, 0.0, 0.0), (0.0, 0.5, 1.0)), commands_received=2),
}


def _plain_sample(type_name: str) -> Any:
    """A message of `type_name` as the bus records it: the nested samples, else the type's defaults."""
    if type_name in NESTED_SAMPLES:
        return to_plain(NESTED_SAMPLES[type_name])
    if type_name not in REGISTRY:  # the recording's own channels (availability, commands)
        return {}
    try:
        return to_plain(REGISTRY[type_name].cls())
    except TypeError:  # a type with required fields: its schema is what this test reads
        return {}


def _record_every_type(path: Path, schemas: dict[str, dict[str, Any]]) -> None:
    sink = McapSink(path, schemas, compression="none")
    for number, type_name in enumerate(sorted(schemas), start=1):
        data = orjson.dumps(_plain_sample(type_name))
        sink.put(Encoded(f"dev/{type_name}", type_name, number * 1000, number * 1000, number, data))
    sink.close()
    assert sink.error == ""


async def test_every_recorded_schema_and_message_is_taken_by_the_apps_parser(tmp_path: Path) -> None:
    schemas = {name: schema_of(info.cls) for name, info in REGISTRY.items()} | OWN_SCHEMAS
    assert {name for name, schema in schemas.items() if outward(schema) is not None} == set(NESTED_SAMPLES)
    path = tmp_path / "every-type.mcap"
    _record_every_type(path, schemas)
    requests = []
    with path.open("rb") as file:
        for schema, channel, message in make_reader(file).iter_messages():
            assert schema is not None
            requests.append(
                {
                    "name": channel.topic,
                    "type": schema.name,
                    "schema": schema.data.decode(),
                    "samples": [message.data.decode()],
                }
            )
    assert len(requests) == len(schemas)
    results = await parse(requests)
    refused = {name: result["error"] for name, result in results.items() if result["error"] is not None}
    assert refused == {}
    # The parsed micro:bit matrix is rows of {values: [...]}, and the sample reads as such.
    (leds,) = results["dev/hwgateway/MicrobitLeds"]["samples"]
    assert [row["values"] for row in leds["rows"]] == [[c == r for c in range(5)] for r in range(5)]
    (outputs,) = results["dev/hwgateway/SimOutputs"]["samples"]
    assert [led["values"] for led in outputs["leds"]] == [[1, 0, 0], [0, 0.5, 1]]


def test_the_replay_reads_the_viewer_form_and_files_recorded_before_it_alike(tmp_path: Path) -> None:
    schemas = {name: schema_of(REGISTRY[name].cls) for name in NESTED_SAMPLES}
    path = tmp_path / "nested.mcap"
    _record_every_type(path, schemas)
    recorded = {message.type: message for message in load(path)}
    for type_name, sample in NESTED_SAMPLES.items():
        viewer_form = orjson.loads(recorded[type_name].data)
        old_form = to_plain(sample)  # as files were written before the viewer form
        assert viewer_form != old_form
        cls = REGISTRY[type_name].cls
        assert from_plain(cls, our_form(type_name)(viewer_form)) == sample
        assert from_plain(cls, our_form(type_name)(old_form)) == sample
