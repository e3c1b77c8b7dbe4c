"""Public reports of broken Neuron Python stacks, rebuilt as fixtures: a `--root` host and a
target venv whose site-packages hold the METADATA of the versions the report lists; doctor runs
with the release of the report's date (`--matrix`) and must name the root cause (check id,
status) with the fix the thread says worked.

Where a report gives no version of a package, the case says which release's version stands in
(`from`); everything else is as reported."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from tests.helpers import roots
from tests.helpers.cli import run_cli
from tests.helpers.envs import add_dist, make_venv, pyenv_python, site_packages

pytestmark = pytest.mark.integration


@dataclass(frozen=True)
class Report:
    url: str
    release: str  # the release of the report's date (or the one the user installed, said so)
    instance: str
    pip: dict[str, str]
    check: str  # the root-cause check
    status: str
    fix: tuple[str, ...] = ()  # what the fix line must hold (the thread's fix)
    summary: tuple[str, ...] = ()
    not_in_fix: tuple[str, ...] = ()
    python: str = "3.10"  # the report's Python (its paths, image tag or pip wheel tags)


REPORTS = [
    # libneuronxla unpinned: SDK 2.19.1's torch-neuronx pulls 2.20's libneuronxla; the thread's
    # workaround pins 2.19.1's libneuronxla 2.0.2335
    Report("https://github.com/aws-neuron/aws-neuron-sdk/issues/1012", "2.19.1",
           "trn1.32xlarge",
           {"torch": "2.1.2", "torch-neuronx": "2.1.2.2.2.0", "libneuronxla": "2.0.4115.0",
            "torch-xla": "2.1.3", "neuronx-cc": "2.14.227.0+2d4f85be"},
           "backend.stack", "fail", ("libneuronxla==2.0.2335",),
           ("libneuronxla 2.0.4115.0", "Unknown flags in XLA_FLAGS")),
    # the same mismatch in an SDK 2.20.0 DLC holding 2.19.1's torch-neuronx: judged against the
    # release of its torch-neuronx (2.19.1), as the maintainers' #1012 does
    Report("https://github.com/huggingface/optimum-neuron/issues/710", "2.19.1", "inf2.48xlarge",
           {"torch": "2.1.2", "torch-neuronx": "2.1.2.2.2.0", "libneuronxla": "2.0.4115.0",
            "neuronx-cc": "2.14.227.0+2d4f85be", "neuronx-distributed": "0.8.0",
            "transformers-neuronx": "0.11.351", "optimum-neuron": "0.0.24",
            "aws-neuronx-runtime-discovery": "2.9"},
           "backend.stack", "fail", ("libneuronxla==2.0.2335",), ("libneuronxla 2.0.4115.0",),
           ("neuronx-distributed==", "transformers-neuronx==")),
    # transformers-neuronx 0.6 (Neuron 2.13) beside 2.12's torch-neuronx 1.13.1.1.9.0:
    # `cannot import name 'neuron_xla_compile'`; the fix is 2.13's torch-neuronx
    Report("https://github.com/aws-neuron/transformers-neuronx/issues/33", "2.13.0",
           "inf2.48xlarge",
           {"torch": "1.13.1", "torch-neuronx": "1.13.1.1.9.0",
            "transformers-neuronx": "0.6.106"},
           "backend.pairing", "warn", ("--matrix 2.13.0", "--torch 1.13"), ("Neuron 2.12",),
           python="3.7"),
    # the same ImportError ('neuron_xla_compile' from libneuronxla) in a Python 3.8 venv a few
    # days later; the thread's answer, as aws-neuron-samples#47 quotes it: update torch-neuronx
    # (the report's pip list is cut before the Neuron packages in what was read: #33's versions
    # stand in, same error, same release)
    Report("https://github.com/huggingface/optimum-neuron/issues/213", "2.13.0",
           "inf2.48xlarge",
           {"torch": "1.13.1", "torch-neuronx": "1.13.1.1.9.0",
            "transformers-neuronx": "0.6.106", "aws-neuronx-runtime-discovery": "2.9"},
           "backend.pairing", "warn", ("--matrix 2.13.0", "--torch 1.13"), ("Neuron 2.12",),
           python="3.8"),
    # torch-neuronx on ml.inf1.6xlarge: Inf1 runs torch-neuron; no torch-neuronx install
    Report("https://github.com/aws-neuron/aws-neuron-sdk/issues/655", "2.9.1", "inf1.6xlarge",
           {"torch": "1.13.0", "torch-neuronx": "1.13.0.1.6.1", "neuronx-cc": "2.5.0.28"},
           "instance.type", "fail", ("legacy-inf1/pytorch.html",), ("inf1",),
           ("neuron-env install",), python="3.7"),
    # torch-neuron on Inf1 (NRT_STATE_CHILD): AWS's Inf1 stack, pointed to its guide
    # (torch-neuron and neuron-cc: Neuron 2.21.0's, the report names no versions)
    Report("https://github.com/aws-neuron/aws-neuron-sdk/issues/1083", "2.21.0", "inf1.xlarge",
           {"torch": "1.13.1", "torch-neuron": "1.13.1.2.11.13.0", "neuron-cc": "1.24.0.0"},
           "backend.torch_neuron", "fail", ("legacy-inf1/pytorch.html",),
           ("Inf1 (torch-neuron) environment",),
           ("pip install torch-neuronx", "neuron-env install"), python="3.7"),
    # torch-neuron 1.13 with torch 2.0.1+cu117: Inf1's stack; never "install torch-neuronx"
    # (torch-neuron: Neuron 2.10.0's 1.13.1 build)
    Report("https://github.com/aws-neuron/aws-neuron-sdk/issues/686", "2.10.0", "inf1.2xlarge",
           {"torch": "2.0.1+cu117", "torch-neuron": "1.13.1.2.7.1.0"},
           "backend.torch_neuron", "fail", ("legacy-inf1/pytorch.html",), ("torch-neuron",),
           ("pip install torch-neuronx", "neuron-env install"), python="3.8"),
    # the Inf1 DLC (pytorch-inference-neuron sdk2.10.0) shipped neuronx-cc, not neuron-cc:
    # an Inf1 environment, sent to the Inf1 guide (which installs neuron-cc[tensorflow])
    Report("https://github.com/aws/deep-learning-containers/issues/3082", "2.10.0",
           "inf1.6xlarge",
           {"torch": "1.13.1", "torch-neuron": "1.13.1.2.7.1.0",
            "neuronx-cc": "2.6.0.19+3d819e565", "neuronx-hwm": "2.6.0.0+826e77395"},
           "backend.torch_neuron", "fail", ("legacy-inf1/pytorch.html",), ("torch-neuron",),
           ("neuron-env install",), python="3.8"),
    # torch-neuron left beside torch-neuronx after an upgrade to 2.16 ("A different version of
    # libtorchneuron.so has already been loaded"): remove the Inf1 package
    # (torch-neuron: Neuron 2.16.0's 1.13.1 build; the report names no version)
    Report("https://github.com/aws-neuron/aws-neuron-sdk/issues/806", "2.16.0", "inf2.xlarge",
           {"torch": "1.13.1", "torch-neuronx": "1.13.1.1.13.0", "torch-neuron":
            "1.13.1.2.9.17.0", "libneuronxla": "0.5.669", "torch-xla": "1.13.1+torchneurond",
            "neuronx-cc": "2.12.54.0"},
           "backend.torch_neuron", "warn", ("pip uninstall -y torch-neuron",),
           ("beside torch-neuronx",), python="3.8"),
    # NxD Inference from 2.24 (git v0.4.7422) in the 2.23.0 DLC: `cannot import name
    # '_traced_spmd_tiled_rs'` (the instance is not stated: trn2 stands in)
    Report("https://github.com/aws-neuron/neuronx-distributed/issues/50", "2.23.0",
           "trn2.48xlarge",
           {"torch": "2.6.0", "torch-neuronx": "2.6.0.2.7.5413", "libneuronxla": "2.2.3493.0",
            "neuronx-cc": "2.18.121.0", "neuronx-distributed": "0.12.12111",
            "neuronx-distributed-inference": "0.4.7422"},
           "backend.stack", "warn", ("neuronx-distributed-inference==0.3.5591",),
           ("neuronx-distributed-inference 0.4.7422 is not from Neuron 2.23.0",)),
    # vLLM's requirements pinned 2.26.0's neuronx-cc on the 2.26.1 DLAMI; the fix moved to
    # 2.26.1's compiler 2.21.33363.0 (a maintainers' pull request, with the DLAMI's pip output)
    Report("https://github.com/aws-neuron/upstreaming-to-vllm/pull/30", "2.26.1",
           "trn1.32xlarge",
           {"torch": "2.8.0", "torch-neuronx": "2.8.0.2.10.16998+e9bf8a50",
            "neuronx-cc": "2.21.18209.0", "libneuronxla": "2.2.12677.0"},  # (the DLAMI's)
           "backend.stack", "warn", ("neuronx-cc==2.21.33363.0",),
           ("neuronx-cc 2.21.18209.0 is not from Neuron 2.26.1",)),
    # tensorflow-neuron installed into a torch-neuron environment brought tensorflow 2.8, which
    # torch-neuron's compiler cannot use; the maintainers' fix: a fresh torch-neuron environment
    # from AWS's Inf1 install guide (versions: Neuron 2.3.0's torch-neuron 1.11, neuron-cc and
    # tensorflow-neuron 2.8 builds stand in; the thread gives the tensorflow version only, and
    # does not say where it ran: inf1.xlarge stands in)
    Report("https://github.com/aws-neuron/aws-neuron-sdk/issues/440", "2.3.0", "inf1.xlarge",
           {"torch": "1.11.0", "torch-neuron": "1.11.0.2.3.0.0", "neuron-cc": "1.11.7.0",
            "tensorflow": "2.8.0", "tensorflow-neuron": "2.8.0.2.3.0"},
           "backend.torch_neuron", "fail", ("legacy-inf1/pytorch.html",), ("torch-neuron",),
           ("pip install torch-neuronx", "neuron-env install"), python="3.7"),
    # Python 3.9 on Ubuntu 22.04 (Neuron 2.4.0 was the release of the day): pip found no
    # neuron-cc wheel for it and fell back to the 1.0.post1 placeholder; the maintainers' answer:
    # Python 3.9 is not supported, use a supported Python (the pip list is the report's)
    Report("https://github.com/aws-neuron/aws-neuron-sdk/issues/602", "2.4.0", "inf1.xlarge",
           {"torch": "1.11.0", "torch-neuron": "1.11.0.2.3.0.0", "neuron-cc": "1.0.post1",
            "tensorflow": "2.11.0", "torchvision": "0.12.0"},
           "python.version", "fail", ("legacy-inf1/pytorch.html",), ("3.9", ">=3.7,<3.9"),
           ("neuron-env install",), python="3.9"),
    # a compiler error on the exact Neuron 2.15.0 stack: the stack is right, doctor must not
    # blame it (the thread fixed the model, not the environment)
    Report("https://github.com/aws-neuron/aws-neuron-sdk/issues/798", "2.15.0", "trn1.32xlarge",
           {"torch": "1.13.1", "torch-neuronx": "1.13.1.1.12.0", "libneuronxla": "0.5.538",
            "neuronx-cc": "2.11.0.34+c5231f848", "torch-xla": "1.13.1+torchneuronc",
            "optimum": "1.14.0", "optimum-neuron": "0.0.13",
            "aws-neuronx-runtime-discovery": "2.9"},
           "backend.stack", "pass", summary=("at its versions",)),
    # the HF DLAMI v20240318 venv is Neuron 2.17.0's stack: the import error was optimum-neuron's
    # own (a dev build), not the Neuron stack
    Report("https://github.com/huggingface/optimum-neuron/issues/545", "2.17.0", "inf2.8xlarge",
           {"torch": "1.13.1", "torch-neuronx": "1.13.1.1.13.1", "libneuronxla": "0.5.809",
            "neuronx-cc": "2.12.68.0+4480452af", "neuronx-distributed": "0.6.0",
            "neuronx-hwm": "2.12.0.0+422c9037c", "optimum-neuron": "0.0.20.dev0",
            "torch-xla": "1.13.1+torchneurond", "aws-neuronx-runtime-discovery": "2.9"},
           "backend.stack", "pass", summary=("at its versions",), python="3.8"),
]


def _doctor(tmp_path, rep: Report) -> dict:
    root = roots.make_root(tmp_path / "root", os="ubuntu-22.04", instance=rep.instance)
    exe = pyenv_python(rep.python)
    if exe is None:
        pytest.skip(f"no Python {rep.python} here (pyenv): the report's interpreter")
    py = make_venv(tmp_path / "venv", exe)
    site = site_packages(py)
    for name, ver in rep.pip.items():
        add_dist(site, name, ver)
    p = run_cli("doctor", "--format", "json", "--root", str(root), "--python", str(py),
                "--matrix", rep.release, timeout=120)
    doc = json.loads(p.stdout)
    return {r["id"]: r for r in doc["results"]}


@pytest.mark.parametrize("rep", REPORTS, ids=[r.url.split("github.com/")[1] for r in REPORTS])
def test_public_report(tmp_path, rep):
    res = _doctor(tmp_path, rep)
    r = res[rep.check]
    assert r["status"] == rep.status, (rep.url, r["summary"])
    for text in rep.summary:
        assert text in r["summary"], (rep.url, r["summary"])
    fix = " ".join(filter(None, (r.get("fix"), r.get("fix_command"))))
    for text in rep.fix:
        assert text in fix, (rep.url, fix)
    for text in rep.not_in_fix:  # no wrong fix anywhere in the report
        for other in res.values():
            line = " ".join(filter(None, (other.get("fix"), other.get("fix_command"))))
            assert text not in line, (rep.url, other["id"], line)


def test_the_corpus_cites_a_dozen_reports():
    assert len({r.url for r in REPORTS}) >= 12


def test_the_two_corpora_cite_at_least_thirty_public_reports():
    """The issue's floor: 30 public reports, host and stack corpora together (one URL counted
    once where both rebuild it)."""
    from tests.integration.test_public_reports_host import REPORTS as HOST

    urls = {r.url for r in REPORTS} | {r.url for r in HOST}
    assert len(urls) >= 30, len(urls)
