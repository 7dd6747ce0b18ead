"""mqtts:// against Debian's mosquitto with a TLS listener (certificates from trustme): CA file, client
certificate, user/password; a wrong CA, a garbage certificate, no client certificate and a wrong
password each leave the daemon running with the reason in /healthz."""

from __future__ import annotations

import asyncio
import ssl
import uuid
from pathlib import Path
from typing import Any

import aiomqtt
import trustme

from tests.harness import RunningGateway, gateway_config, health_faults, healthz, start_gateway
from tests.mosquitto_broker import Broker, BrokerTls, start_broker

USER, PASSWORD = "gateway", "broker-pass-123"


def write(path: Path, blob: bytes) -> Path:
    path.write_bytes(blob)
    return path


async def start(tmp_path: Path, name: str, broker: Broker, url_user: str, files: dict[str, Path]) -> RunningGateway:
    home = tmp_path / name
    home.mkdir()
    keys = "".join(f'{key} = "{path}"\n' for key, path in files.items())
    url = broker.url.replace("mqtts://", f"mqtts://{url_user}@")
    mqtt = f'[mqtt]\nurl = "{url}"\ngateway = "{name}"\nreconnect_initial_s = 0.05\nreconnect_max_s = 0.5\n{keys}'
    return await start_gateway(home, gateway_config(home, extra=mqtt))


async def mqtt_state(gateway: RunningGateway, want: str, timeout: float = 10.0) -> dict[str, Any]:
    async with asyncio.timeout(timeout):
        while True:
            mqtt: dict[str, Any] = (await healthz(gateway))["mqtt"]
            if want == "connected" and mqtt["state"] == "connected":
                return mqtt
            # A refused connect: the reason stays in last_error while the bridge backs off and retries.
            if want == "refused" and mqtt["state"] != "connected" and mqtt["last_error"]:
                return mqtt
            await asyncio.sleep(0.1)


async def test_mqtts_with_ca_client_certificate_and_password(tmp_path: Path) -> None:
    ca, other_ca = trustme.CA(), trustme.CA()
    server = ca.issue_cert("127.0.0.1", "localhost")
    client = ca.issue_cert("hwgw-test-client")
    pki = tmp_path / "pki"
    pki.mkdir()
    ca_file = write(pki / "ca.pem", ca.cert_pem.bytes())
    tls = BrokerTls(
        ca_file,
        write(pki / "server.pem", b"".join(blob.bytes() for blob in server.cert_chain_pems)),
        write(pki / "server.key", server.private_key_pem.bytes()),
        require_certificate=True,
    )
    cert_file = write(pki / "client.pem", b"".join(blob.bytes() for blob in client.cert_chain_pems))
    key_file = write(pki / "client.key", client.private_key_pem.bytes())
    client_cert = {"ca_file": ca_file, "cert_file": cert_file, "key_file": key_file}
    broker = await start_broker(tmp_path, tls=tls, users={USER: PASSWORD})
    gateways: list[RunningGateway] = []
    try:
        good = await start(tmp_path, "good", broker, f"{USER}:{PASSWORD}", client_cert)
        gateways.append(good)
        cases = {
            "wrong-ca": ({**client_cert, "ca_file": write(pki / "other.pem", other_ca.cert_pem.bytes())},
                         f"{USER}:{PASSWORD}"),
            "garbage-cert": ({**client_cert, "cert_file": write(pki / "garbage.pem", b"not a certificate\n")},
                             f"{USER}:{PASSWORD}"),
            "no-cert": ({"ca_file": ca_file}, f"{USER}:{PASSWORD}"),
            "bad-password": (client_cert, f"{USER}:wrong-password"),
        }  # fmt: skip
        for name, (files, user) in cases.items():
            gateways.append(await start(tmp_path, name, broker, user, files))
        health = await mqtt_state(good, "connected")
        assert health["broker"] == broker.url

        # The good gateway's retained status is on the TLS broker for a TLS client.
        context = ssl.create_default_context(cafile=str(ca_file))
        context.load_cert_chain(str(cert_file), str(key_file))
        async with aiomqtt.Client(
            "127.0.0.1", broker.port, username=USER, password=PASSWORD, tls_context=context,
            identifier=f"test-{uuid.uuid4().hex[:8]}",
        ) as reader:  # fmt: skip
            await reader.subscribe("hwgw/good/status")
            async with asyncio.timeout(5):
                async for message in reader.messages:
                    assert message.payload == b"online"
                    break

        expected = {
            "wrong-ca": "certificate verify failed",
            "garbage-cert": "SSLError",
            "no-cert": "timed out",  # TLS 1.3: the broker refuses after the handshake
            "bad-password": "authoriz",
        }
        for gateway, name in zip(gateways[1:], cases, strict=True):
            mqtt = await mqtt_state(gateway, "refused", timeout=20.0)
            assert expected[name].lower() in mqtt["last_error"].lower(), (name, mqtt)
            body = await healthz(gateway)  # the daemon runs on, its devices too
            assert health_faults(body) == [], body
            assert {d["status"] for d in body["devices"]} == {"connected"}, body
        assert (await mqtt_state(good, "connected"))["connects"] == 1
    finally:
        for gateway in gateways:
            assert await gateway.stop() == 0
        await broker.stop()
