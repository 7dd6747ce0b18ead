"""bench/scale.py: a brief real run of all three sides (behaviour only), and its CPU quota's cgroup handling."""

from __future__ import annotations

import re
import socket
from pathlib import Path

import pytest

from bench import baseline_server, scale
from bench.fanout import Window, client_socket


def test_a_brief_run_measures_every_side_with_churn_under_a_quota_or_says_why_not(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["--clients", "2", "--devices", "2", "--patterns", "3", "--churn", "0,4", "--rate", "50", "--held", "2"]
    argv += ["--seconds", "0.5", "--warmup", "0.3", "--cpu-quota", "90"]
    assert scale.main(argv) == 0
    out = capsys.readouterr().out
    # The quota is applied, or the run says plainly that it goes on without one.
    assert ("CPU quota 90 % of a core for every server: cgroup v" in out) or ("running WITHOUT a quota" in out)
    for side in ("gateway", "bare", "bare-batched"):
        rows = [
            line
            for line in out.splitlines()
            if line.startswith(f"2 cl x 2 dev x 50 Hz, 3 pat churn 4/s holding 2 subs | {side} |")
        ]
        assert len(rows) == 1, out
        delivered = float(rows[0].split("|")[2])
        assert delivered > 0.0  # every side delivered samples (how many is the bench's report)
    progress = [line for line in out.splitlines() if line.startswith("[1/1]") and "churn 4/s" in line]
    assert len(progress) == 3
    # Every client's churn was answered by every server, during warm-up and window.
    assert all(int(re.search(r"(\d+) subscription changes", line).group(1)) > 0 for line in progress)  # type: ignore[union-attr]
    assert all(" 4 held," in line for line in progress)  # 2 clients x 2, each accepted
    # The same point without churn ran in the same repeat: the churn's cost, per side.
    churn_cost = [line for line in out.splitlines() if "churn cost" in line]
    assert len(churn_cost) == 1
    assert all(f"{side} " in churn_cost[0] for side in ("gateway", "bare", "bare-batched"))
    assert "gateway/bare delivered" in out
    assert "gateway/bare-batched delivered" in out
    assert ("gateway delivers everything" in out) or ("gateway stops delivering everything at" in out)
    assert "load average" in out


def test_clients_spread_over_processes_count_their_samples_and_churn_as_in_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # 3 clients in 2 processes (clients 0-1 and 2); the first two churn and hold one subscription
    # each, both in the first process: indices stay global across processes.
    argv = ["--clients", "3", "--devices", "1", "--patterns", "2", "--churn", "4", "--churners", "2", "--held", "1"]
    argv += ["--rate", "50", "--seconds", "0.5", "--warmup", "0.3", "--sides", "gateway", "--client-processes", "2"]
    assert scale.main(argv) == 0
    out = capsys.readouterr().out
    progress = [line for line in out.splitlines() if line.startswith("[1/1]")]
    assert len(progress) == 1, out
    delivered = float(re.search(r"delivered ([\d.]+)", progress[0]).group(1))  # type: ignore[union-attr]
    assert delivered > 0.5  # 3 clients x 50 Hz, counted in two processes and summed
    assert int(re.search(r"(\d+) subscription changes", progress[0]).group(1)) > 0  # type: ignore[union-attr]
    assert " 2 held," in progress[0]
    assert "clients in up to 2 processes" in out


async def test_a_client_process_that_cannot_connect_fails_the_run_with_its_reason() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    point = scale.Point("custom", clients=2, devices=1)
    with pytest.raises(RuntimeError, match=r"a client process failed: clients [01]-[01]: .*ConnectionRefusedError"):
        async with scale.client_processes("msgpack", port, point, mss=0, processes=2):
            pass


@pytest.mark.parametrize(
    ("clients", "processes", "expected"),
    [(5, 2, [(0, 3), (3, 2)]), (2, 4, [(0, 1), (1, 1)]), (6, 3, [(0, 2), (2, 2), (4, 2)]), (4, 1, [(0, 4)])],
)
def test_client_processes_take_consecutive_blocks_within_one_of_each_other(
    clients: int, processes: int, expected: list[tuple[int, int]]
) -> None:
    assert scale.blocks(clients, processes) == expected


def test_a_cgroup_v1_tree_gets_the_quota_and_the_server_pid(tmp_path: Path) -> None:
    cpu = tmp_path / "cpu"
    cpu.mkdir()
    (cpu / "cpu.cfs_quota_us").write_text("-1")
    quota, how = scale.Quota.create(25.0, root=tmp_path)
    assert quota is not None, how
    assert quota.version == 1
    assert quota.path.parent == cpu
    assert (quota.path / "cpu.cfs_quota_us").read_text() == "25000"
    assert (quota.path / "cpu.cfs_period_us").read_text() == "100000"
    quota.add(1234)
    assert (quota.path / "cgroup.procs").read_text() == "1234"
    (quota.path / "cpu.stat").write_text("nr_periods 10\nnr_throttled 2\nthrottled_time 500000000\n")
    assert quota.throttled_s() == 0.5


def test_a_cgroup_v2_tree_with_the_cpu_controller_gets_cpu_max(tmp_path: Path) -> None:
    (tmp_path / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    (tmp_path / "cgroup.subtree_control").write_text("")
    quota, how = scale.Quota.create(12.5, root=tmp_path)
    assert quota is not None, how
    assert quota.version == 2
    assert (quota.path / "cpu.max").read_text() == "12500 100000"
    assert (tmp_path / "cgroup.subtree_control").read_text() == "+cpu"


def test_without_a_usable_cgroup_it_says_why_for_each_place_tried(tmp_path: Path) -> None:
    (tmp_path / "unified").mkdir()
    (tmp_path / "unified" / "cgroup.controllers").write_text("memory pids\n")
    quota, how = scale.Quota.create(25.0, root=tmp_path)
    assert quota is None
    assert "no cgroup v2 cpu controller" in how
    assert "no cgroup v1 cpu controller" in how


def test_the_help_lists_every_option(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        scale.parse_args(["--help"])
    assert exit_.value.code == 0
    assert "--cpu-quota" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("bad", "said"),
    [
        (["--held", "900"], "--held: 0 to 899"),
        (["--held", "-1"], "--held: 0 to 899"),
        (["--churn", "0,x"], "--churn"),
        (["--client-processes", "0"], "--client-processes: 1 or more"),
    ],
)
def test_arguments_it_cannot_measure_are_refused(bad: list[str], said: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        scale.parse_args(bad)
    assert exit_.value.code == 2
    assert said in capsys.readouterr().err


def test_each_repeat_s_p99_is_compared_with_the_bare_sides_of_the_same_repeat() -> None:
    point = scale.Point("clients", clients=500, devices=1)
    gateway_p99 = [7.0, 6.4, 9.0, 7.2, 6.8, 7.0]
    bare_p99 = [6.2, 7.2, 8.0, 7.2, 7.0, 6.5]  # the host was slower in repeat 2: both sides were
    sides: list[tuple[scale.Side, list[float]]] = [
        ("gateway", gateway_p99),
        ("baseline", bare_p99),
        ("floor", bare_p99[:1]),
    ]
    runs = [
        scale.Run(point, side, repeat, 50_000.0, 1.0, p99, 30.0, 6.0, 0.0)
        for side, p99s in sides
        for repeat, p99 in enumerate(p99s)
    ]
    (line,) = scale.paired_p99(runs, [point])
    ratios = sorted(g / b for g, b in zip(gateway_p99, bare_p99, strict=True))
    median = (ratios[2] + ratios[3]) / 2
    assert line == (
        f"  p99 by repeat, {point.label()}: gateway over bare {median:.2f} "
        f"({ratios[0]:.2f}-{ratios[-1]:.2f}; median {ratios[0]:.2f}-{ratios[-1]:.2f} at 95 %)"
    )  # one repeat of the floor: no spread to give, so no cell for it


async def segment_sizes_the_server_uses(transport: str, mss: int) -> list[int]:
    """Each server-side socket's MSS (bytes) with 3 clients of `scale.fleet_of(..., mss=mss)` on a bare server."""
    server = baseline_server.WsFanout() if transport == "ws" else baseline_server.MsgpackFanout()
    port = await server.start("127.0.0.1", 0)
    try:
        async with scale.fleet_of(transport, port, scale.Point("custom", clients=3, devices=1), Window(), mss) as fleet:
            assert len(fleet.connections) == 3
            if isinstance(server, baseline_server.WsFanout):
                sockets = [transport.get_extra_info("socket") for transport in server.transports.values()]
            else:
                sockets = [writer.get_extra_info("socket") for writer in server.clients]
            return [sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG) for sock in sockets]
    finally:
        await server.stop()


@pytest.mark.parametrize("transport", ["ws", "msgpack"])
async def test_with_client_mss_every_client_socket_offers_at_most_that_segment(transport: str) -> None:
    # The server's side segments for what each client's SYN offered (less the timestamp option).
    pinned = await segment_sizes_the_server_uses(transport, 536)
    assert len(pinned) == 3
    assert all(0 < size <= 536 for size in pinned), pinned
    unpinned = await segment_sizes_the_server_uses(transport, 0)  # the loopback's own, tens of kB
    assert len(unpinned) == 3
    assert all(size > 536 for size in unpinned), unpinned


@pytest.mark.parametrize("mss", ["87", "32768", "-1"])
def test_a_client_mss_linux_would_refuse_is_refused(mss: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        scale.parse_args(["--client-mss", mss])
    assert exit_.value.code == 2
    assert "--client-mss: 0 (the kernel's) or 88 to 32767 bytes" in capsys.readouterr().err


def test_client_socket_passes_the_mss_to_the_kernel_or_leaves_it() -> None:
    with client_socket(socket.AF_INET, 1000) as pinned, client_socket(socket.AF_INET, 0) as free:
        assert pinned.getsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG) == 1000
        assert free.getsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG) != 1000


def test_the_floor_s_own_p99_over_bare_is_paired_by_repeat_too() -> None:
    point = scale.Point("clients", clients=500, devices=1)
    bare_p99 = [6.0, 7.0, 6.5, 6.8, 6.1, 6.6]
    floor_p99 = [6.6, 7.7, 7.8, 6.8, 7.0, 7.3]
    sides: list[tuple[scale.Side, list[float]]] = [("gateway", floor_p99), ("baseline", bare_p99), ("floor", floor_p99)]
    runs = [
        scale.Run(point, side, repeat, 50_000.0, 1.0, p99, 30.0, 6.0, 0.0)
        for side, p99s in sides
        for repeat, p99 in enumerate(p99s)
    ]
    (line,) = scale.paired_p99(runs, [point])
    design = sorted(f / b for f, b in zip(floor_p99, bare_p99, strict=True))
    over_bare = f"{(design[2] + design[3]) / 2:.2f} ({design[0]:.2f}-{design[-1]:.2f}; median"
    assert f"gateway over bare {over_bare}" in line
    assert "over bare-batched 1.00 (1.00-1.00;" in line
    assert line.endswith(f"; bare-batched over bare {over_bare} {design[0]:.2f}-{design[-1]:.2f} at 95 %)")
