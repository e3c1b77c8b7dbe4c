"""smoke/trial step lines (smoke/live.py): a line as each step starts, heartbeats while one runs
long, whatever the chunking of the child's stderr."""

from __future__ import annotations

import io

from neuron_env.smoke.live import StepLines, steps_in
from neuron_env.util.progress import Progress


class _Clock(Progress):
    """A Progress whose clock the test moves."""

    def __init__(self):
        super().__init__(stream=io.StringIO())
        self.now = 0.0

    def elapsed(self) -> float:
        return self.now


def test_steps_are_said_in_order_as_they_start_and_long_ones_beat():
    p = _Clock()
    lines = StepLines("smoke", p)
    lines.feed(b"@@STEP import@@\n@@STEP dev")  # a marker cut between two chunks
    assert p.stream.getvalue() == "[   0.0s] smoke: import\n"
    p.now = 2.5
    lines.feed(b"ice@@\nsome warning from torch\n@@STEP matmul@@\n")
    for t in (5, 12.4, 12.6, 20, 22.6, 33):
        p.now = t
        lines.tick()
    out = p.stream.getvalue().splitlines()
    assert out == ["[   0.0s] smoke: import", "[   2.5s] smoke: device",
                   "[   2.5s] smoke: matmul", "[  12.6s]   ... still in matmul (10s)",
                   "[  22.6s]   ... still in matmul (20s)", "[  33.0s]   ... still in matmul (30s)"]


def test_a_new_step_restarts_the_heartbeat_and_nothing_beats_before_a_step():
    p = _Clock()
    lines = StepLines("trial", p)
    p.now = 30
    lines.tick()
    assert p.stream.getvalue() == ""  # the target is still starting: no step to name
    lines.feed(b"@@STEP eager@@\n")
    p.now = 39
    lines.tick()
    lines.feed(b"@@STEP compile@@\n")
    p.now = 41
    lines.tick()
    assert "still" not in p.stream.getvalue()
    assert steps_in("x @@STEP a@@\n@@STEP b_c@@ @@STEP @@") == ["a", "b_c"]
