"""entry.py parses doctor's common command lines without typer: the same DoctorOptions as the
typer command for every flag, environment variable and default it accepts; None (the typer app
parses) for everything else; and a doctor flag neither side places fails here."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from neuron_env import entry
from neuron_env.cli import app, requires
from neuron_env.cli.app import DoctorFmt
from neuron_env.commands import doctor as doctor_cmd
from neuron_env.commands import doctor_flags
from neuron_env.probes import facts
from neuron_env.report.model import Report

# doctor's flags the fast path leaves to typer (each: a partner rule, a callback, a prompt, a
# second command, or a rare path whose cost is not start-up)
TYPER_ONLY = {"report", "fix", "yes", "waive", "reason", "until", "waivers_file", "wait",
              "list_checks", "aws", "smoke", "smoke_timeout", "collectives", "tag_instance",
              "publish_ssm", "strict_publish", "slurm_drain"}
ENV = ("NEURON_ENV_MATRIX", "NEURON_ENV_NEURON_INDEX_URL", "NEURON_ENV_PYTORCH_INDEX_URL")


def doctor_params():
    from typer.main import get_command

    from neuron_env.cli import register

    return {p.name: p for p in get_command(register()).commands["doctor"].params}


def typer_options(monkeypatch, args: list[str], env: dict[str, str]):
    """The DoctorOptions the typer command hands commands.doctor.command."""
    seen = []

    def command(opts, started=None, confirm=None):
        seen.append(opts)
        return Report(schema=entry.SCHEMA, tool={"name": "neuron-env"}, matrix={}, target={},
                      results=(), exit_code=0)
    monkeypatch.setattr(doctor_cmd, "command", command)
    monkeypatch.setattr(facts, "start_target", lambda python: None)
    full_env = {k: "" for k in ENV} | env  # none of this machine's settings leak in
    res = CliRunner().invoke(app, ["doctor", *args], env=full_env)
    assert res.exit_code == 0 and len(seen) == 1, (args, res.output)
    return seen[0]


def fast_options(args: list[str], env: dict[str, str]):
    flags = entry.parse_doctor(["doctor", *args], env)
    assert flags is not None, args
    return doctor_cmd.DoctorOptions(**doctor_flags.options(flags))  # flags: a DoctorFlags


SAME = [
    [], ["--format", "json"], ["--format=junit"], ["--format", "text"], ["--format", "npd"],
    ["--python", "/opt/venv/bin/python"], ["--python=/usr/bin/python3.12"],
    ["--matrix", "2.33"], ["--matrix=/etc/neuron/matrix.toml"], ["--root", "/mnt/image"],
    ["--instance-type", "trn2.48xlarge"], ["--only", "driver,backend", "--only", " os.release "],
    ["--skip", "net.efa"], ["--strict"], ["-v"], ["--verbose"], ["--all-packages"],
    ["--expect-efa"], ["--no-expect-efa"], ["--neuron-index-url", "https://m.example/neuron"],
    ["--pytorch-index-url=https://m.example/cpu"],
    ["--format", "prometheus", "--python", "/p", "--matrix", "2.34", "--root", "/r", "--strict",
     "-v", "--only", "driver", "--skip", "os.kernel", "--all-packages", "--no-expect-efa",
     "--instance-type", "trn3.48xlarge"],
]
ENVS = [{}, {"NEURON_ENV_MATRIX": "2.33"},
        {"NEURON_ENV_NEURON_INDEX_URL": "https://env.example/neuron",
         "NEURON_ENV_PYTORCH_INDEX_URL": "https://env.example/cpu"}]


@pytest.mark.parametrize("env", ENVS, ids=["no-env", "matrix-env", "index-env"])
@pytest.mark.parametrize("args", SAME, ids=lambda a: " ".join(a) or "bare")
def test_the_fast_path_builds_what_typer_builds(monkeypatch, args, env):
    assert fast_options(args, env) == typer_options(monkeypatch, args, env)


def test_a_flag_beats_its_environment_variable(monkeypatch):
    env = {"NEURON_ENV_MATRIX": "2.33", "NEURON_ENV_NEURON_INDEX_URL": "https://env/n"}
    args = ["--matrix", "2.34", "--neuron-index-url", "https://flag/n"]
    fast = fast_options(args, env)
    assert fast == typer_options(monkeypatch, args, env)
    assert fast.matrix == "2.34" and fast.neuron_index_url == "https://flag/n"


@pytest.mark.parametrize("argv", [
    [], ["--version"], ["matrix", "show"], ["install"], ["doctor", "--help"], ["doctor", "-h"],
    ["doctor", "--fix"], ["doctor", "--report", "json:/tmp/d.json"], ["doctor", "--smoke"],
    ["doctor", "--list-checks"], ["doctor", "--format", "xml"], ["doctor", "--format", "JSON"],
    ["doctor", "--python"], ["doctor", "--python", ""], ["doctor", "--python="],
    ["doctor", "--python", "-v"], ["doctor", "--strict", "--strict"],
    ["doctor", "--python", "a", "--python", "b"], ["doctor", "-vy"], ["doctor", "--", "x"],
    ["doctor", "extra"], ["doctor", "--strict=1"], ["doctor", "--pyth", "x"],
    ["doctor", "--only"], ["doctor", "--expect-efa", "--no-expect-efa"],
])
def test_anything_else_goes_to_typer(argv):
    assert entry.parse_doctor(argv, {}) is None


def test_every_doctor_flag_is_placed_and_the_accepted_ones_need_no_typer():
    params = doctor_params()
    accepted = {n for n in (*entry.VALUES.values(), *entry.REPEATED.values())} | \
        {n for n, _ in entry.SWITCHES.values()}
    # a new doctor flag must be placed: accepted here (and tested above) or left to typer
    assert set(params) == accepted | TYPER_ONLY, set(params) ^ (accepted | TYPER_ONLY)
    assert not accepted & TYPER_ONLY
    for name in accepted:
        p = params[name]
        assert p.callback is None, name  # typer would run it; the fast path would not
        assert name not in requires.REQUIRES["doctor"], name  # no partner rule to check
        assert (p.envvar or None) == entry.ENVIRONMENT.get(name), name
        for flag, n in (*entry.VALUES.items(), *entry.REPEATED.items()):
            if n == name:
                assert flag in p.opts and not p.is_flag and p.multiple == (flag in
                                                                            entry.REPEATED)
        for flag, (n, on) in entry.SWITCHES.items():
            if n == name:
                assert flag in (p.opts if on else p.secondary_opts), (flag, name)
    # every flag that reads the environment is accepted (or a default would differ)
    assert all(not p.envvar or n in accepted for n, p in params.items())
    assert tuple(f.value for f in DoctorFmt) == entry.FORMATS


def test_options_of_flags_not_given_are_doctor_options_defaults():
    assert doctor_cmd.DoctorOptions(**doctor_flags.options(doctor_flags.DEFAULT)) == \
        doctor_cmd.DoctorOptions()


def test_typer_s_defaults_are_doctor_flags_defaults():
    """One declaration: every doctor option's default (and environment variable) is read
    from DoctorFlags/ENVIRONMENT (commands/doctor_flags.py), never typed twice."""
    for name, p in doctor_params().items():
        assert p.default in (getattr(doctor_flags.DEFAULT, name), None), name
        assert (p.envvar or None) == doctor_flags.ENVIRONMENT.get(name), name


def test_trial_s_options_are_one_record_with_its_defaults():
    """trial's command line is one TrialFlags (trial/options.py): every typer parameter is a
    field, each default read from it (the model's from TrialOptions), none typed twice."""
    from typer.main import get_command

    from neuron_env.cli import register
    from neuron_env.trial.options import TrialFlags, TrialOptions

    params = {p.name: p for p in get_command(register()).commands["trial"].params}
    fields = TrialFlags.__dataclass_fields__
    assert set(params) == set(fields)
    for name, p in params.items():
        assert p.default in (getattr(TrialFlags, name, None), None), name
    assert TrialFlags("m").options() == TrialOptions("m")
