"""Foxglove names for the bus, shared by every Foxglove client: channel, schema and service ids.

A bus topic `thymio-demo/node/1/buttons` is channel `/thymio-demo/node/1/buttons`; a command a device
accepts is service `/<device>/<type>` and client-publish topic `/<device>/command/<type>`. Ids are
given once for the life of the gateway, so a Foxglove app that reconnects sees the same ids.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from typing import Any

import orjson

from gateway.core.client import Client
from gateway.errors import GatewayError
from gateway.messages import shapes

#: Seconds between two looks for new topics (a new topic is advertised within this time).
REFRESH_S = 0.25
COMMAND_SEGMENT = "/command/"
#: The schema of a command's result data, for commands that are not services of their own.
RESULT_TYPE = "hwgateway/CommandResult"
_RESULT_SCHEMA = {"type": "object", "description": "the command's result data (often empty)", "properties": {}}


@dataclass(frozen=True, slots=True)
class ChannelInfo:
    """One bus topic as a Foxglove channel."""

    id: int
    topic: str
    name: str
    type: str
    device: str
    schema_id: int
    schema: str
    #: Makes a message of the topic's type its Foxglove form (None: sent as it is); see `shapes`.
    reshape: shapes.Reshape | None = None


@dataclass(frozen=True, slots=True)
class ServiceInfo:
    """One command a device accepts, as a Foxglove service."""

    id: int
    name: str
    device: str
    type: str
    request_schema: str
    response_type: str
    response_schema: str
    #: Take a request from its Foxglove form, make a response its Foxglove form (None: as it is).
    request_reshape: shapes.Reshape | None = None
    response_reshape: shapes.Reshape | None = None

    def advertisement(self) -> dict[str, Any]:
        """The entry of `advertiseServices`."""
        return {
            "id": self.id,
            "name": self.name,
            "type": self.type,
            "request": {
                "encoding": "json",
                "schemaName": self.type,
                "schemaEncoding": "jsonschema",
                "schema": self.request_schema,
            },
            "response": {
                "encoding": "json",
                "schemaName": self.response_type,
                "schemaEncoding": "jsonschema",
                "schema": self.response_schema,
            },
        }


def channel_advertisement(channel: ChannelInfo, schema_table: bool) -> dict[str, Any]:
    """The entry of `advertise` (v1: the schema inline; v1.1 `schema_table`: its `schemaId`)."""
    if schema_table:
        return {"id": channel.id, "topic": channel.name, "encoding": "json", "schemaId": channel.schema_id}
    return {
        "id": channel.id,
        "topic": channel.name,
        "encoding": "json",
        "schemaName": channel.type,
        "schemaEncoding": "jsonschema",
        "schema": channel.schema,
    }


def schema_advertisement(channel: ChannelInfo) -> dict[str, Any]:
    """The entry of v1.1's `advertise.schemas` for the channel's schema."""
    return {"id": channel.schema_id, "name": channel.type, "encoding": "jsonschema", "data": channel.schema}


def command_topic(topic: str) -> tuple[str, str] | None:
    """The device and command type a client-publish topic `/<device>/command/<type>` names (None: not one)."""
    if not topic.startswith("/") or COMMAND_SEGMENT not in topic:
        return None
    device, _, type_name = topic[1:].partition(COMMAND_SEGMENT)
    return (device, type_name) if device and type_name and "/" not in device else None


class Catalog:
    """The channels and services every Foxglove client of this gateway sees, with stable ids."""

    def __init__(self) -> None:
        self.channels: dict[str, ChannelInfo] = {}
        self.services: dict[int, ServiceInfo] = {}
        self._services_by_device: dict[str, list[ServiceInfo]] = {}
        self._schemas: dict[str, tuple[int, str, shapes.Reshape | None]] = {}
        self._inward: dict[str, shapes.Reshape | None] = {}
        self._channel_ids = itertools.count(1)
        self._schema_ids = itertools.count(1)
        self._service_ids = itertools.count(1)
        self._refreshed = -REFRESH_S
        #: Bumped whenever a channel is added or replaced, so sessions diff only after a change.
        self.version = 0

    def refresh(self, client: Client, now: float | None = None) -> None:
        """Look for new topics through `client` (at most once per `REFRESH_S` for all clients)."""
        now = time.monotonic() if now is None else now
        if now - self._refreshed < REFRESH_S:
            return
        self._refreshed = now
        for topic, type_name in client.topics():
            known = self.channels.get(topic)
            if known is None or known.type != type_name:
                self._add_channel(client, topic, type_name)

    def device_services(self, client: Client, device: str, accepts: list[str]) -> list[ServiceInfo]:
        """The services of `device` (made on first use from the command types it `accepts`)."""
        services = self._services_by_device.get(device)
        if services is None:
            services = [self._service(client, device, type_name) for type_name in accepts]
            self._services_by_device[device] = services
        return services

    def _add_channel(self, client: Client, topic: str, type_name: str) -> None:
        schema_id, schema, reshape = self._schema(client, type_name)
        device = topic.split("/", 1)[0]
        self.channels[topic] = ChannelInfo(
            next(self._channel_ids), topic, "/" + topic, type_name, device, schema_id, schema, reshape
        )
        self.version += 1

    def _schema(self, client: Client, type_name: str) -> tuple[int, str, shapes.Reshape | None]:
        known = self._schemas.get(type_name)
        if known is None:
            try:
                schema: dict[str, Any] = client.describe(type_name)["schema"]
            except GatewayError:  # a type outside the registry: still shown, undescribed
                schema = {"type": "object"}
            known = self._schemas[type_name] = (
                next(self._schema_ids),
                orjson.dumps(shapes.viewer_schema(schema)).decode(),
                shapes.outward(schema),
            )
        return known

    def inward(self, client: Client, type_name: str) -> shapes.Reshape | None:
        """What takes a client's message of command `type_name` from its Foxglove form (None: nothing)."""
        if type_name not in self._inward:
            try:
                schema: dict[str, Any] = client.describe(type_name)["schema"]
            except GatewayError:
                schema = {"type": "object"}
            self._inward[type_name] = shapes.inward(schema)
        return self._inward[type_name]

    def _service(self, client: Client, device: str, type_name: str) -> ServiceInfo:
        try:
            described = client.describe(type_name)
        except GatewayError:
            described = {"schema": {"type": "object"}}
        response_type, response = RESULT_TYPE, _RESULT_SCHEMA
        if "response_schema" in described:
            response_type, response = f"{type_name}_Response", described["response_schema"]
        service = ServiceInfo(
            next(self._service_ids),
            f"/{device}/{type_name}",
            device,
            type_name,
            orjson.dumps(shapes.viewer_schema(described["schema"])).decode(),
            response_type,
            orjson.dumps(shapes.viewer_schema(response)).decode(),
            shapes.inward(described["schema"]),
            shapes.outward(response),
        )
        self.services[service.id] = service
        return service
