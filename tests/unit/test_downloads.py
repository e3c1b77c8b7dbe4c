"""Download progress parsed from what pip and uv really print (samples captured from real
installs from the test indexes: tests/fixtures/installer_output/capture.py), and what an
install step shows of it: a live bar on a terminal, heartbeat lines otherwise."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from neuron_env.install import installers
from neuron_env.install.downloads import Rate, Tally, figures, human, parse_line, size_bytes
from neuron_env.install.steps import Watch, _Lines
from neuron_env.util.progress import Heartbeat, Progress

SAMPLES = Path(__file__).resolve().parents[1] / "fixtures" / "installer_output"


def sample(prefix: str) -> list[str]:
    (path,) = SAMPLES.glob(prefix + "*.txt")
    return path.read_text().splitlines()


def tally_of(lines, parallel=False) -> Tally:
    t = Tally(parallel)
    for line in lines:
        t.feed(line)
    return t


def test_old_pip_announces_the_size_and_ends_with_one_bar_line():
    for which in ("pip-23.2.1-install", "pip-23.2.1-resolve"):
        t = tally_of(sample(which))
        assert [(f.name, f.total, f.finished) for f in t.files] == [
            ("filelock-3.0.0-py3-none-any.whl", 1_200_000, True)], which
        assert t.done == t.total == 1_200_000 and t.active == []


def test_raw_pip_gives_bytes_as_they_arrive():
    lines = sample("pip-26.3-raw-install")
    t, seen = Tally(), []
    for line in lines:
        if t.feed(line):
            seen.append((t.done, t.total))
    assert seen[0] == (0, 1_200_000)  # the announced size, until pip says the exact one
    assert (524288, 1201184) in seen and seen[-1] == (1201184, 1201184)
    done = [d for d, _ in seen]
    assert done == sorted(done)


def test_uv_names_the_files_it_downloads_in_parallel():
    lines = sample("uv-0.13.9-install")
    t = Tally(parallel=True)
    for line in lines[:3]:
        t.feed(line)
    assert t.active == ["filelock"] and t.done == 0 and t.total == int(1.1 * 2**20)
    t = tally_of(lines, parallel=True)
    assert t.active == [] and t.done == t.total == int(1.1 * 2**20)


def test_parallel_downloads_end_by_name_and_other_lines_do_not_end_them():
    t = tally_of(["Downloading torch (180.0MiB)", "Downloading nki (2.0MiB)",
                  "warning: something", " Downloaded nki"], parallel=True)
    assert t.active == ["torch"] and t.done == 2 * 2**20 and t.total == 182 * 2**20


def test_line_shapes():
    assert parse_line("  Downloading http://h/files/x-1.0-py3-none-any.whl") == (
        "start", "x-1.0-py3-none-any.whl", None, 0)  # the server sent no size
    assert parse_line("Resuming download http://h/f/t.whl (1.0 MB/4.0 MB)") == (
        "start", "t.whl", 4_000_000, 1_000_000)
    assert parse_line("\x1b[1mDownloading\x1b[0m torch \x1b[2m(1.2GiB)\x1b[0m") == (
        "start", "torch", int(1.2 * 2**30), 0)
    assert parse_line("Progress 5 of 10\rProgress 7 of 10") == ("bytes", 7, 10)
    assert parse_line("   ") is None and parse_line("Collecting x") == ("other",)
    assert size_bytes("936", "bytes") == 936 and size_bytes("1", "parsecs") is None


def test_unknown_total_stays_unknown_until_the_file_ends():
    t = tally_of(["Downloading http://h/a.whl", "Progress 300 of 0"])
    assert t.total is None and t.done == 300
    t.feed("Installing collected packages: a")
    assert t.total == t.done == 300


def test_rate_over_a_window_and_the_figures_line():
    r = Rate(window=5.0)
    assert r.per_second() is None
    for t, b in ((0, 0), (1, 1_000_000), (2, 2_000_000), (10, 2_000_000)):
        r.add(t, b)
    assert r.per_second() == 0.0  # stalled for the last window
    r.add(11, 3_000_000)
    assert r.per_second() == pytest.approx(1_000_000 / 9)
    t = tally_of(["Downloading http://h/a.whl (4.0 MB)", "Progress 1000000 of 4000000"])
    assert figures(t, 2_300_000) == "1.0 MB of 4.0 MB downloaded (25%), 2.3 MB/s"
    assert human(936) == "936 bytes" and human(12_345) == "12.3 kB" and human(None) == "?"


def test_heartbeat_schedule():
    beat = Heartbeat(every=10)
    assert [t for t in (0, 5, 10, 11, 19.9, 20.5, 31) if beat.due(t)] == [10, 20.5, 31]
    beat.restart(40)
    assert not beat.due(45) and beat.due(50)


class _Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


class _TTY(io.StringIO):
    def isatty(self):
        return True


def test_without_a_terminal_heartbeats_carry_the_download_figures():
    err, clock = io.StringIO(), _Clock()
    w = Watch(Progress(stream=err), "installing", clock=clock)
    lines = _Lines(_NoLog(), on_line=w.line)
    lines(b"Collecting a\n  Downloading a-1.0.whl (4.0 MB)\nProgress 0 of 4000")
    lines(b"000\n")
    clock.now += 4
    lines(b"Progress 2000000 of 4000000\n")
    w.tick(5.0)
    assert err.getvalue() == ""  # no beat before HEARTBEAT seconds
    clock.now += 6
    w.tick(10.0)
    beat = err.getvalue()
    assert "... still installing (10s; 2.0 MB of 4.0 MB downloaded (50%)" in beat
    lines(b"Progress 4000000 of 4000000\nInstalling collected packages: a\n")
    w.close()
    assert "downloaded 1 file, 4.0 MB in 10.0s (400.0 kB/s)" in err.getvalue()
    assert "\x1b[" not in err.getvalue() and "━" not in err.getvalue()


def test_on_a_terminal_a_bar_instead_of_heartbeats(monkeypatch):
    monkeypatch.setenv("TERM", "xterm")
    err, clock = _TTY(), _Clock()
    w = Watch(Progress(stream=err), "installing", clock=clock)
    w.tick(30.0)
    assert "still installing" in err.getvalue() and w.bar is None  # nothing downloads yet
    w.line("  Downloading a-1.0.whl (4.0 MB)")
    clock.now += 2
    w.line("Progress 2000000 of 4000000")
    w.tick(40.0)
    w.close()
    out = err.getvalue()
    assert "━" in out and "50%" in out and "a-1.0.whl" in out
    assert out.count("still installing") == 1  # the bar replaced the heartbeats


def test_quiet_or_dumb_terminal_gets_no_bar(monkeypatch):
    monkeypatch.setenv("TERM", "dumb")
    assert Progress(stream=_TTY()).tty is False
    monkeypatch.setenv("TERM", "xterm")
    assert Progress(stream=_TTY(), quiet=True).tty is False
    assert Progress(stream=io.StringIO()).tty is False


def test_pause_takes_prompt_time_out_of_the_elapsed_time():
    p = Progress(stream=io.StringIO())
    before = p.elapsed()
    p.pause(1000)
    assert p.elapsed() < before


@pytest.mark.parametrize(("version", "raw"), [("23.2.1", False), ("24.0", False),
                                              ("24.1", True), ("26.3", True),
                                              ("banana", False), (None, False)])
def test_raw_progress_only_where_pip_has_it(version, raw):
    assert installers.raw_progress(version) is raw
    inst = installers.Installer("pip", ("pip",), raw_progress=raw)
    s = installers.sources(None, [], (), False)
    assert ("raw" in installers.resolve_cmd(inst, "r.json", ["x"], s, True)) is raw
    assert ("raw" in installers.install_cmd(inst, "py", "lock", True)) is raw


class _NoLog:
    def write(self, text: str) -> None:
        pass


def test_an_installer_that_does_not_count_bytes_is_described_not_guessed():
    t = tally_of(sample("pip-23.2.1-install")[:7])  # up to `Downloading ... (1.2 MB)`
    assert figures(t, 0.0) == "fetching filelock-3.0.0-py3-none-any.whl (1.2 MB)"
    t = tally_of(["Downloading torch (180.0MiB)", "Downloading nki (2.0MiB)", " Downloaded nki"],
                 parallel=True)
    assert figures(t, 5e6) == ("fetching torch (188.7 MB); 2.1 MB of 190.8 MB downloaded (1%)")
