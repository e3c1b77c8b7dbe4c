"""The one renderer (util/template.py) and its callers: every module that renders a script, a YAML
document or a command line imports it and neither quotes nor fills placeholders on its own; any
other module that quotes for a shell is a named exception (a fix hint shown to a person). Every
template's placeholders are all filled by its renderer, in one pass."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import neuron_env
from neuron_env.bootstrap.userdata import BootstrapOptions, component, userdata
from neuron_env.collectives import launch as coll_launch
from neuron_env.collectives.options import CollectivesOptions
from neuron_env.errors import UsageError
from neuron_env.fleet import k8s, slurm, ssm
from neuron_env.trial import distributed as dist
from neuron_env.trial.options import TrialOptions
from neuron_env.util import template

PKG = Path(neuron_env.__file__).parent
RENDERERS = ["bootstrap/userdata.py", "fleet/slurm.py", "fleet/k8s.py", "fleet/ssm.py",
             "collectives/launch.py", "trial/distributed/launch.py", "cli/engines.py",
             "cli/fleet.py"]
# modules that quote for a shell only to SHOW a command to a person (a fix hint, a plan)
HINTS = {"checks/fixes.py", "checks/companions.py", "checks/backend.py", "checks/lineage.py",
         "commands/install.py"}
QUOTES = re.compile(r"\bimport shlex\b|\bshlex\.(quote|join|split)\b")
OWN_FILL = re.compile(r"""replace\(\s*f?["']@@|re\.compile\(\s*r?["']@@""")


@pytest.mark.parametrize("rel", RENDERERS)
def test_every_renderer_goes_through_util_template(rel):
    text = (PKG / rel).read_text()
    assert "util.template import" in text or "from neuron_env.util import template" in text, rel
    assert not QUOTES.search(text), f"{rel} quotes on its own: use util.template.sh/sh_join"
    assert not OWN_FILL.search(text), f"{rel} fills placeholders on its own: util.template.fill"


def test_no_other_module_quotes_for_a_shell():
    found = {str(p.relative_to(PKG)) for p in PKG.rglob("*.py") if QUOTES.search(p.read_text())}
    assert found <= HINTS | {"util/template.py"}, sorted(found - HINTS)


def test_every_placeholder_is_filled():
    o = CollectivesOptions(device="cpu", ops=("all_reduce",), sizes=(8,), iterations=1)
    src = {"source": "neuron-env==0.1.0", "source_index_url": "https://i/simple"}  # (#44)
    out = [userdata(BootstrapOptions(**src, neuron_index_url="https://m/simple")), component(
        BootstrapOptions(**src, pytorch_index_from="ssm:/p", instance_type="trn2.48xlarge")),
        slurm.render_script("/opt/ne", 45, ["--skip", "aws"]),
        slurm.render_conf("/etc/slurm/hc.sh", 300, True),
        k8s.to_yaml(k8s.manifests(doctor_args=["--skip", "aws"])),
        coll_launch.render("srun", "/ne", "/py", o, 2, 8),
        dist.launch_script("torchrun", "/py", TrialOptions(model="builtin:mlp"),
                           dist.DistOptions(world_size=8, nnodes=2))]
    for text in out:
        assert not template.PLACEHOLDER.search(text), text


def test_fill_is_one_pass_and_misses_nothing():
    assert template.fill("a @@X@@ b @@Y@@", {"X": "@@Y@@", "Y": "$(id)"}) == "a @@Y@@ b $(id)"
    with pytest.raises(KeyError):
        template.fill("@@NOPE@@", {})


@pytest.mark.parametrize("c", ["\n", "\r", "\x00", "\x1b", "\x7f", "\x85", "\u2028", "\u2029",
                               "\ufeff", "\ufffe", "\u202e", "\ud800"])
def test_value_refuses_line_breaks_and_controls_naming_the_option(c):
    with pytest.raises(UsageError, match="--venv") as e:
        template.value("--venv", f"/opt/v{c}x")
    assert e.value.exit_code == 2 and f"U+{ord(c):04X}" in e.value.message


def test_ssm_remote_command_is_quoted_and_checked():
    o = ssm.FleetOptions(targets="i-0123456789abcdef0", doctor_args=["--skip", "a b;c"],
                         neuron_env="/opt/it's/neuron-env")
    assert ssm.remote_command(o) == ("'/opt/it'\"'\"'s/neuron-env' doctor --format json "
                                     "--skip 'a b;c'")
    with pytest.raises(UsageError, match="--doctor-args"):
        ssm.remote_command(ssm.FleetOptions(targets="i-0123456789abcdef0",
                                            doctor_args=["x\u2028y"]))
