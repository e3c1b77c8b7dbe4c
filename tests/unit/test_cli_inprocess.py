"""In-process CLI pieces that need no process (doctor runs in-process: tests/integration)."""

from __future__ import annotations


def test_colour_only_on_a_tty_and_never_with_no_color(monkeypatch):
    from neuron_env.report import text

    class TTY:
        def isatty(self):
            return True

    monkeypatch.delenv("FORCE_COLOR", raising=False)
    assert text.use_colour(TTY()) is True
    monkeypatch.setenv("NO_COLOR", "")  # no-color.org: only a non-empty value counts
    assert text.use_colour(TTY()) is True
    monkeypatch.setenv("NO_COLOR", "1")
    assert text.use_colour(TTY()) is False
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert text.use_colour(object()) is True
    monkeypatch.setenv("FORCE_COLOR", "0")
    assert text.use_colour(object()) is False
