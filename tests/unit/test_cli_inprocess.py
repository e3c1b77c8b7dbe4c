"""In-process CLI pieces that need no process (doctor runs in-process: tests/integration)."""

from __future__ import annotations


def test_colour_only_on_a_tty_and_never_with_no_color(monkeypatch):
    from neuron_env.report import text

    class TTY:
        def isatty(self):
            return True

    assert text.use_colour(TTY()) is True
    monkeypatch.setenv("NO_COLOR", "")
    assert text.use_colour(TTY()) is False
