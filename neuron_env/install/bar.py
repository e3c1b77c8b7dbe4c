"""The live download bar on a terminal: bytes, percentage, rate, elapsed (rich).

rich is imported here, and this module only when a bar is about to be shown (a terminal on
stderr, a download under way): doctor and every non-interactive run never load it."""

from __future__ import annotations

from neuron_env.install.downloads import Tally, human


def _label(tally: Tally, idle: str) -> str:
    active = tally.active
    if not active:
        return idle
    name = active[0] if len(active[0]) <= 40 else active[0][:37] + "..."
    size = next((f.total for f in tally.files if not f.finished), None)
    return (name + (f" ({human(size)})" if size and not tally.live else "")
            + (f" (+{len(active) - 1})" if len(active) > 1 else ""))


class Bar:
    """One transient rich progress bar on `stream` (the bar is wiped when it stops; the
    caller prints a summary line after it)."""

    def __init__(self, stream, idle: str) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            Progress,
            TaskProgressColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        self.idle = idle
        self.progress = Progress(
            TextColumn("  {task.description}"), BarColumn(), TaskProgressColumn(),
            DownloadColumn(), TextColumn("{task.fields[rate]}"), TimeElapsedColumn(),
            console=Console(file=stream), transient=True, redirect_stdout=False,
            redirect_stderr=False)
        self.task = self.progress.add_task(idle, total=None, rate="")
        self.progress.start()

    def update(self, tally: Tally, rate: float | None) -> None:
        self.progress.update(self.task, completed=tally.done, total=tally.total,
                             description=_label(tally, self.idle),
                             rate=f"{human(rate)}/s" if rate and tally.live else "")

    def stop(self) -> None:
        self.progress.stop()
