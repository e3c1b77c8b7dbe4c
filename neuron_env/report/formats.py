"""THE table of output formats (pipx's result.py declares its formats once; so does this): each
`--format` / `--report FORMAT:PATH` value, the module that renders it and the commands that
offer it. Derived from it: the CLI's choice enums (`cli/app.py`), the typer-free entry's doctor
formats (`entry.py`), the renderer's dispatch and `--report`'s formats (`report/render.py`).
Plain data (a `@record` per row, the doctor path's cheap value class): the console entry reads
it before anything else is loaded.

Adding a format: a row here, a module `neuron_env/report/<name>.py` with `render(report) -> str`
(and `render_error(doc) -> str` when a failed run needs its own shape), or, for a format of a
Document, a field of that name on `Document` (report/model.py) holding the view the command
gives it; see CONTRIBUTING.md ("Adding a report format")."""

from __future__ import annotations

from neuron_env.util.record import record

# who offers which formats: the `--format` choice sets of the commands
ANY = "any"  # every command: text and JSON
DOCTOR = "doctor"  # doctor and collectives: a Report for people, pipelines and health engines
SCAN = "scan"
FLEET = "fleet"
TRIAL = "trial"
GROUPS = (ANY, DOCTOR, SCAN, FLEET, TRIAL)


@record
class Format:
    name: str
    offered_by: tuple[str, ...]  # GROUPS whose --format lists it (ANY: all of them)
    renderer: str | None = None  # the module in neuron_env/report/ whose render(report) speaks it
    engine: bool = False  # read by a health engine (Slurm NHC, NPD): one line, even on error
    report_file: bool = True  # also a `--report FORMAT:PATH` (a Report's file)
    document_view: bool = False  # a Document may carry its own view for it (a field so named)
    error_document: bool = True  # a failed run still prints one (JSON's envelope, JUnit's...)


FORMATS: tuple[Format, ...] = (
    Format("text", (ANY,)),
    Format("json", (ANY,)),
    Format("junit", (DOCTOR, FLEET, TRIAL), "junit", document_view=True),
    Format("markdown", (DOCTOR, TRIAL), "markdown"),
    Format("html", (FLEET, TRIAL), "html", document_view=True),
    Format("nhc", (DOCTOR,), "nhc", engine=True),
    Format("npd", (DOCTOR,), "npd", engine=True),
    Format("prometheus", (DOCTOR,), "prometheus"),
    # a failed scan prints no SARIF log (the message is on stderr)
    Format("sarif", (SCAN,), report_file=False, document_view=True, error_document=False),
)
BY_NAME = {f.name: f for f in FORMATS}
# FORMAT -> the module in neuron_env/report/ whose render(report) speaks it (text/json: render.py)
RENDERERS = {f.name: f.renderer for f in FORMATS if f.renderer}
REPORT_FILE_FORMATS = tuple(f.name for f in FORMATS if f.report_file)
ENGINE_FORMATS = tuple(f.name for f in FORMATS if f.engine)
ENGINE_LINE_MAX = 120  # what an engine keeps of an error line


def offered_by(group: str) -> tuple[str, ...]:
    """The `--format` choices of a group of commands, in table order."""
    if group not in GROUPS:
        raise ValueError(f"no format group {group!r}")
    return tuple(f.name for f in FORMATS if ANY in f.offered_by or group in f.offered_by)
