"""One exception hierarchy; each class carries the exit code it maps to (caught once in cli)."""

from __future__ import annotations

import os

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_CONFIG = 2
EXIT_INTERNAL = 3
EXIT_TIMEOUT = 4


class FileProblem(OSError):
    """A file that is there but must not be read (a FIFO, a device, over its size cap, a
    symlink loop): `str()` says why, for the user. Raised by guards/files.py."""

    def __init__(self, path: str | os.PathLike[str], why: str) -> None:
        super().__init__(f"{path} {why}")
        self.path, self.why = str(path), why


class ImdsFailure(Exception):
    """One IMDS exchange failed (bad endpoint, timeout, refused): probes/imds.py turns it into
    a fact ("IMDS unavailable: why"), never into an exit code."""


class NeuronEnvError(Exception):
    """Base class. `code` is a stable machine-readable error code for JSON output."""

    exit_code = EXIT_INTERNAL
    code = "internal"
    reports_written = False  # doctor wrote its --report files: the boundary must keep them

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def render(self) -> str:
        return self.message if not self.hint else f"{self.message}\n  fix: {self.hint}"

    def to_dict(self) -> dict:
        return {"code": self.code, "message": self.message, "hint": self.hint}


class ConfigurationError(NeuronEnvError):
    exit_code = EXIT_CONFIG
    code = "configuration"


class UsageError(ConfigurationError):
    code = "usage"


class RefusedPath(ConfigurationError, OSError):
    """A path the user named that neuron-env will not write (a device, a FIFO, a socket, a
    symbolic link, a directory): exit 2. Raised by guards/atomic.py, the one writer; an OSError
    too, so a caller's `except OSError` still sees it."""

    code = "refused-path"

    def __init__(self, path: str | os.PathLike[str], why: str) -> None:
        ConfigurationError.__init__(self, f"{os.fspath(path)} {why}",
                                    hint="name a regular file (or a new one) in a directory "
                                         "you own")
        self.path, self.why = os.fspath(path), why

    def __str__(self) -> str:
        return self.message


class BadInput(ConfigurationError):
    """An untrusted input (a file, an HTTP body) that is not what it must be: not a regular
    file, too large, too deep, too slow, or the wrong shape (guards/files.py, the one reader)."""

    code = "bad-input"


class InterpreterError(ConfigurationError):
    """The target interpreter is missing, not executable or not a usable Python."""

    code = "interpreter"


class MatrixError(ConfigurationError):
    """A matrix file (or several) is invalid. Carries every problem found."""

    code = "matrix"

    def __init__(self, problems: list[Problem], *, hint: str | None = None) -> None:
        self.problems = problems
        super().__init__("\n".join(p.render() for p in problems), hint=hint)

    def to_dict(self) -> dict:
        d = super().to_dict()
        d["problems"] = [p.to_dict() for p in self.problems]
        return d


class Problem:
    """One located problem in a matrix document."""

    __slots__ = ("file", "line", "message", "path")

    def __init__(self, file: str, path: str, message: str, line: int | None = None) -> None:
        self.file, self.path, self.message, self.line = file, path, message, line

    def render(self) -> str:
        where = self.file + (f":{self.line}" if self.line else "")
        key = f" [{self.path}]" if self.path else ""
        return f"{where}{key}: {self.message}"

    def to_dict(self) -> dict:
        return {"file": self.file, "path": self.path, "line": self.line, "message": self.message}

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"Problem({self.render()!r})"


class ResolutionError(ConfigurationError):
    """No backend pair of the matrix fits the target."""

    code = "resolution"


class CommandTimeout(NeuronEnvError):
    exit_code = EXIT_TIMEOUT
    code = "timeout"


class Interrupted(NeuronEnvError):
    """Ctrl-C or SIGTERM: whatever was under way was stopped (exit 130, as shells count it)."""

    exit_code = 130
    code = "interrupted"


class InstallError(NeuronEnvError):
    """The install could not be carried out; `exit_code` 1 unless a subclass says otherwise."""

    exit_code = EXIT_FAILED
    code = "install"


class ProvenanceError(InstallError):
    """A resolved package would come from outside its governed index: nothing is installed."""

    code = "provenance"

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__(problems[0] + (f" (+{len(problems) - 1} more)" if len(problems) > 1
                                        else ""),
                         hint="nothing was installed. Point the Neuron index (or mirror) at a "
                              "source that holds the real packages: --neuron-index-url / "
                              "NEURON_ENV_NEURON_INDEX_URL")


class InstallFailed(InstallError):
    """The installer itself failed midway; the environment's manifest says `incomplete`."""

    code = "install-failed"

    def __init__(self, what: str, fix: str, log_path: str, prefix: str) -> None:
        super().__init__(f"installing into {prefix} failed: {what}. The environment is "
                         "marked incomplete in its install manifest (doctor reports it)",
                         hint=f"{fix}; re-running `neuron-env install` repairs it. Installer "
                              f"output: {log_path}")
        self.log_path = log_path


class AwsError(NeuronEnvError):
    """A soft AWS failure (no credentials, access denied, unknown type, endpoint down): the
    AWS commands and options turn it into a warning; `code` says which."""

    def __init__(self, message: str, code: str = "aws") -> None:
        super().__init__(message)
        self.code = code
