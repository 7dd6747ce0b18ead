"""bench/route_churn.py: the bus's routing work per join stays the same however many clients joined before."""

from __future__ import annotations

import itertools

from bench import route_churn


def test_every_join_of_a_storm_makes_the_same_calls() -> None:
    work = route_churn.storm_work(old_routing=False, clients=40)
    assert work[0] > 0
    assert set(work) == {work[0]}, work


def test_the_old_routing_s_joins_grow_with_the_clients_before_them() -> None:
    work = route_churn.storm_work(old_routing=True, clients=8)
    assert all(later > earlier for earlier, later in itertools.pairwise(work)), work


def test_a_churn_run_delivers_every_sample_to_every_reader() -> None:
    per_message_us, delivered = route_churn.churn_run(0.05, churn=True, old_routing=False)
    assert delivered == 1.0
    assert per_message_us > 0.0


def test_a_storm_run_gives_each_figure_and_its_one_connection() -> None:
    figures = route_churn.storm_run(old_routing=False, clients=12)
    routing, one_round, joins, one_join, control, one_control = figures
    assert min(joins, one_join, control, one_control) > 0.0
    # A round's routing is a difference of two timings: it may come out below zero, never absurd.
    assert max(abs(routing), abs(one_round)) < 1.0
