"""bench/run.py's per-turn figures: the share of the cores a turn left idle and the bindings
Karmada made meanwhile, from plain readings (no server, no /proc)."""

from __future__ import annotations

from bench.run import Turn


def readings(*values):
    queue = list(values)
    return lambda: queue.pop(0)


def test_a_turn_reports_the_idle_share_and_the_bindings_made_between_its_two_readings():
    turn = Turn({}, children=False, count_bindings=readings(10, 25),
                ticks=readings((1000, 400), (1150, 450)))
    done = turn.done()
    assert done["idle_share"] == 0.25  # 50 idle ticks of 200
    assert done["bindings_made"] == 15
    assert done["server_cpu_s"] == 0 and done["server"] == {}


def test_without_karmada_or_proc_the_figures_are_absent_not_zero():
    turn = Turn({}, children=False, ticks=readings((0, 0), (0, 0)))
    done = turn.done()
    assert done["idle_share"] is None
    assert done["bindings_made"] is None
