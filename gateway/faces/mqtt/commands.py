"""Commands over MQTT: `<device>/set`, `estop` and `release` requests run through clients of the core.

A command's payload is JSON `{"type", "data", "timeout_s"?, "transaction"?}`. It is answered with our
`result` envelope on the MQTT 5 Response Topic with its Correlation Data, or, for MQTT 3.1.1 clients
that name a `transaction`, on `<device>/response` with `id` = the transaction (Zigbee2MQTT style).
Each requesting peer (the `hwgw-peer` user property or the payload's `peer`, plus `hwgw-client`) gets
its own client of the core, so its leases are its own; they end when the peer's `status` goes
`offline` or it publishes `release`. Bad input is answered where an answer topic exists, counted in
`rejected`, and never stops the bridge.

With tokens configured (`[auth]`), every request carries one: the MQTT 5 user property `token` or,
for MQTT 3.1.1 clients, the payload's `token`. It is checked like on every other face (roles, device
patterns, `AuthGuard` throttling); the broker hides who published, so every MQTT requester shares
one failure budget (`AUTH_PEER`). A client of the core is kept per peer, client and token, created
only once its token was accepted.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from gateway.core.client import Client, Hub
from gateway.errors import (
    BadRequest,
    GatewayError,
    InternalError,
    InvalidArgument,
    RateLimited,
    TooLarge,
    Unauthorized,
)
from gateway.faces.mqtt.link import Link
from gateway.faces.mqtt.topics import TopicMap

log = logging.getLogger(__name__)

#: Distinct peers' clients kept at once; past this, commands from new peers are refused.
MAX_PEERS = 1024
MAX_NAME_LENGTH = 128
PEER_PROPERTY = "hwgw-peer"
CLIENT_PROPERTY = "hwgw-client"
#: The MQTT 5 user property (and, for MQTT 3.1.1, the payload field) that carries a request's token.
TOKEN_PROPERTY = "token"
#: The address AuthGuard counts MQTT token failures under (the broker hides the publisher).
AUTH_PEER = "mqtt"
MAX_TOKEN_LENGTH = 4096
#: Requests (commands and releases) handled at once, and the payload bytes they hold: more are
#: answered `rate_limited` at once, so a flood (of wrong tokens, say) holds bounded memory. Estop is
#: never counted nor refused.
MAX_PENDING = 256
MAX_PENDING_BYTES = 4 * 1024 * 1024
_COMMAND_FIELDS = frozenset({"type", "data", "timeout_s", "transaction", "peer", "client", "token"})


@dataclass(frozen=True, slots=True)
class Request:
    """One request as it came off the broker."""

    payload: bytes
    response_topic: str | None
    correlation: bytes | None
    user: Mapping[str, str]


def request_of(payload: bytes, properties: Properties | None) -> Request:
    """Read the MQTT 5 properties the bridge uses (all absent for MQTT 3.1.1 publishers)."""
    response_topic = getattr(properties, "ResponseTopic", None) if properties is not None else None
    correlation = getattr(properties, "CorrelationData", None) if properties is not None else None
    pairs = getattr(properties, "UserProperty", None) if properties is not None else None
    user = {str(k): str(v) for k, v in pairs} if isinstance(pairs, list) else {}
    return Request(payload, response_topic or None, correlation, user)


def _name(value: object, what: str) -> str:
    if not isinstance(value, str) or not 0 < len(value) <= MAX_NAME_LENGTH:
        raise BadRequest(f"{what}: expected a string of 1-{MAX_NAME_LENGTH} characters")
    return value


class CommandService:
    """Runs MQTT requests on clients of the core, one per requesting peer and client."""

    def __init__(self, hub: Hub, topics: TopicMap, link: Link, max_payload_bytes: int) -> None:
        self._hub = hub
        self._topics = topics
        self._link = link
        self._max_payload = max_payload_bytes
        self._peers: dict[tuple[str, str, bytes], Client] = {}
        self._answers: set[asyncio.Task[None]] = set()
        #: Refused requests by error code (shown in /metrics).
        self.rejected: Counter[str] = Counter()
        self.accepted = 0
        self._pending = 0
        self._pending_bytes = 0

    @property
    def peers(self) -> int:
        """Peers' clients held now."""
        return len(self._peers)

    # -- peers -------------------------------------------------------------------------------

    async def _client(self, peer: str, client: str, token: object, urgent: bool = False) -> Client:
        """The core client of `peer`'s `client` holding `token` (no token needed when auth is off).

        An `urgent` request (estop) has its token checked behind no queue or delay.
        """
        if not self._hub.credentials:
            key = (peer, client, b"")
        elif not isinstance(token, str) or not 0 < len(token) <= MAX_TOKEN_LENGTH:
            raise Unauthorized(f"a token is required: the MQTT 5 user property {TOKEN_PROPERTY!r} or a 'token' field")
        else:
            key = (peer, client, hashlib.sha256(token.encode()).digest())
        found = self._peers.get(key)
        if found is None:
            if len(self._peers) >= MAX_PEERS:
                raise RateLimited(f"more than {MAX_PEERS} MQTT peers at once")
            found = Client(self._hub, AUTH_PEER, "json")
            if self._hub.credentials:
                assert isinstance(token, str)
                await found.authenticate(token, urgent)  # raises Unauthorized; throttled by the AuthGuard
            found.join()
            self._peers[key] = found
        return found

    def peer_gone(self, peer: str, client: str | None = None) -> None:
        """End the leases of `peer` (all its clients, or just `client`): it went offline or left."""
        for key in [k for k in self._peers if k[0] == peer and (client is None or k[1] == client)]:
            log.info("MQTT peer %s client %s is gone; ending its leases", key[0], key[1] or "-")
            self._peers.pop(key).leave()

    def close(self) -> None:
        """Forget every peer."""
        for client in self._peers.values():
            client.leave()
        self._peers.clear()
        for task in self._answers:
            task.cancel()

    # -- requests ----------------------------------------------------------------------------

    def command(self, device: str, request: Request) -> None:
        """Start a command for `device` (`<device>/set`); its answer goes out when it completes.

        Past `MAX_PENDING` requests or `MAX_PENDING_BYTES` in hand, it is answered `rate_limited` at once.
        """
        if self._admit(request):
            self._spawn(self._command(device, request), len(request.payload))
        else:
            self._answer(request, None, device, error=self._busy())

    def _admit(self, request: Request) -> bool:
        return self._pending < MAX_PENDING and self._pending_bytes + len(request.payload) <= MAX_PENDING_BYTES

    def _busy(self) -> RateLimited:
        return RateLimited(
            f"more than {MAX_PENDING} MQTT requests or {MAX_PENDING_BYTES} bytes are being handled; try again later"
        )

    async def _command(self, device: str, request: Request) -> None:
        transaction: object = None
        try:
            body = self._decode(request)
            transaction = body.get("transaction")
            unknown = sorted(set(body) - _COMMAND_FIELDS)
            if unknown:
                raise BadRequest(
                    f"command: unknown field {unknown[0]!r} (fields: {', '.join(sorted(_COMMAND_FIELDS))})"
                )
            type_name = _name(body.get("type"), "command.type")
            timeout = body.get("timeout_s")
            if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float)):
                raise InvalidArgument("command.timeout_s: expected a number of seconds")  # the core checks its range
            client = await self._requester(request, body)
            client.admit()
            task = client.command(device, type_name, body.get("data", {}), None if timeout is None else float(timeout))
            self.accepted += 1
            data = await task
        except GatewayError as error:
            self._answer(request, transaction, device, error=error)
            return
        except Exception:
            log.exception("MQTT command on %s failed", device)
            self._answer(request, transaction, device, error=InternalError("internal error; see the gateway's log"))
            return
        self._answer(request, transaction, device, data=data)

    def estop(self, request: Request) -> None:
        """Stop every local device (`estop`); answered with each device's outcome where asked.

        With auth on, any accepted token may stop (as on every face); without one it is refused.
        It waits behind nothing: not the requests in hand, not other requesters' wrong tokens.
        """

        async def run() -> None:
            try:
                body = self._decode(request, allow_empty=True)
            except GatewayError as error:
                if self._hub.credentials:
                    self._answer(request, None, None, error=error)
                    return  # no readable token: refused
                # An emergency stop goes ahead even when its payload is unreadable; its one answer
                # is the stop's outcome (a request gets one answer, not a refusal and then a result).
                body = {}
            transaction = body.get("transaction")
            try:
                runner = await self._requester(request, body, urgent=True)
            except Unauthorized as error:
                self._answer(request, transaction, None, error=error)
                return
            except GatewayError:
                runner = await self._client("mqtt", "", self._token(request, body), urgent=True)
            outcome = await runner.estop()
            self._answer(request, transaction, None, data={"devices": outcome})

        self._spawn(run())

    def release(self, request: Request) -> None:
        """A peer's client left (`release` with `{"peer", "client"}`): end that client's leases here."""

        async def run() -> None:
            try:
                body = self._decode(request)
                peer = _name(body.get("peer"), "release.peer")
                client = _name(body.get("client"), "release.client")
                if self._hub.credentials:
                    await self._client(peer, client, self._token(request, body))  # refused without a good token
            except GatewayError as error:
                self.rejected[error.code.value] += 1
                return
            self.peer_gone(peer, client)

        if self._admit(request):
            self._spawn(run(), len(request.payload))
        else:
            self.rejected[self._busy().code.value] += 1

    # -- helpers -----------------------------------------------------------------------------

    def _decode(self, request: Request, allow_empty: bool = False) -> dict[str, Any]:
        if len(request.payload) > self._max_payload:
            raise TooLarge(f"payload of {len(request.payload)} bytes exceeds the {self._max_payload}-byte limit")
        if allow_empty and not request.payload.strip():
            return {}
        try:
            body = orjson.loads(request.payload)
        except orjson.JSONDecodeError:
            raise BadRequest("payload: not JSON") from None
        if not isinstance(body, dict):
            raise BadRequest(f"payload: expected a JSON object, got {type(body).__name__}")
        return body

    @staticmethod
    def _token(request: Request, body: Mapping[str, Any]) -> object:
        return request.user.get(TOKEN_PROPERTY) or body.get("token")

    async def _requester(self, request: Request, body: Mapping[str, Any], urgent: bool = False) -> Client:
        peer = request.user.get(PEER_PROPERTY) or body.get("peer") or "mqtt"
        client = request.user.get(CLIENT_PROPERTY) or body.get("client") or ""
        return await self._client(
            _name(peer, "peer"), _name(client, "client") if client else "", self._token(request, body), urgent
        )

    def _answer(
        self,
        request: Request,
        transaction: object,
        device: str | None,
        data: dict[str, Any] | None = None,
        error: GatewayError | None = None,
    ) -> None:
        if error is not None:
            self.rejected[error.code.value] += 1
        if isinstance(transaction, bool) or not isinstance(transaction, int | float | str | type(None)):
            transaction = None
        if isinstance(transaction, str) and len(transaction) > MAX_NAME_LENGTH:
            transaction = None
        result: dict[str, Any] = {"op": "result", "id": transaction, "ok": error is None}
        if error is None:
            result["data"] = data or {}
        else:
            result["error"] = error.to_dict()
        properties: Properties | None = None
        if request.response_topic is not None:
            topic = request.response_topic
            if request.correlation is not None:
                properties = Properties(PacketTypes.PUBLISH)  # type: ignore[no-untyped-call]
                properties.CorrelationData = request.correlation
        elif transaction is not None:
            topic = (
                self._topics.device(self._topics.own, device, "response")
                if device is not None
                else self._topics.gateway(self._topics.own, "estop") + "/response"
            )
        else:
            return
        if "#" in topic or "+" in topic or len(topic) > 1024:
            return  # a response topic must be a topic name, not a filter
        self._spawn(self._link.publish(topic, orjson.dumps(result), qos=1, properties=properties))

    def _spawn(self, coroutine: Any, pending_bytes: int | None = None) -> None:
        """Run `coroutine`; with `pending_bytes`, it counts as a request in hand (`MAX_PENDING`) until it ends."""
        if pending_bytes is not None:
            self._pending += 1
            self._pending_bytes += pending_bytes

        async def guarded() -> None:
            try:
                await coroutine
            except Exception as error:  # the broker went away: the requester's answer is lost, nothing else
                log.warning("MQTT answer not sent: %s", error)
            finally:
                if pending_bytes is not None:
                    self._pending -= 1
                    self._pending_bytes -= pending_bytes

        task = asyncio.create_task(guarded())
        self._answers.add(task)
        task.add_done_callback(self._answers.discard)
