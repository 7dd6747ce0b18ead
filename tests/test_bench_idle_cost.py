"""bench/idle_cost.py: every kind it measures is a configuration the daemon accepts, with the device it names."""

from __future__ import annotations

import pytest

from bench import idle_cost
from gateway import config


@pytest.mark.parametrize("kind", idle_cost.ALL)
def test_each_kind_is_a_valid_daemon_configuration_on_free_ports(kind: str) -> None:
    text = idle_cost.config_for(kind)
    parsed = config.loads(text)
    assert parsed.server.http_port == 0
    assert parsed.server.msgpack_port == 0
    if kind == "none":
        assert not parsed.devices
    elif kind == "demo":
        # The demo's own devices, every one of them (the page's "demo" row is the demo as shipped).
        demo = config.load(idle_cost.DEMO_TOML)
        assert [d.id for d in parsed.devices] == [d.id for d in demo.devices]
    else:
        assert len(parsed.devices) == 1
        (device,) = parsed.devices
        assert device.kind == kind.split("-")[0]


def test_the_per_client_cost_is_what_the_clients_add_shared_out() -> None:
    sample = idle_cost.Sample("sim", idle_pct=2.0, clients_pct=7.0, clients=10, msgs_per_client=100.0)
    assert sample.per_client_pct == pytest.approx(0.5)
    table = idle_cost.report([sample, idle_cost.Sample("sim", 4.0, 8.0, 10, 100.0)])
    assert "sim | 3.0 | 7.5 | 0.45 | 100 | 2" in table
