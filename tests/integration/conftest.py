"""moto's server on loopback, shared by the AWS tests (doctor --aws, publish, instance)."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests.helpers import slurm as slurm_helper
from tests.helpers.aws import boto, free_port, moto_process
from tests.helpers.indexes import build_indexes


@pytest.fixture(scope="session")
def moto_url():
    server_mod = pytest.importorskip("moto.server")
    port = free_port()
    server = server_mod.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    yield f"http://127.0.0.1:{port}"
    server.stop()


@pytest.fixture(scope="session")
def moto_auth():
    """A moto server that checks IAM: a user allowed only DescribeInstanceTypes.
    Yields (url, key, secret). A separate process, so the shared server stays open."""
    with moto_process(3) as url:
        iam = boto("iam", url)
        iam.create_user(UserName="readonly")
        iam.put_user_policy(UserName="readonly", PolicyName="describe-only",
                            PolicyDocument=json.dumps({
                                "Version": "2012-10-17", "Statement": [{
                                    "Effect": "Allow", "Resource": "*",
                                    "Action": ["ec2:DescribeInstanceTypes"]}]}))
        k = iam.create_access_key(UserName="readonly")["AccessKey"]
        yield url, k["AccessKeyId"], k["SecretAccessKey"]


@pytest.fixture(scope="session")
def idx(tmp_path_factory):
    """file:// URLs of the neuron, pytorch and public stand-in indexes (and their root)."""
    return build_indexes(tmp_path_factory.mktemp("indexes"))


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory):
    """neuron-env's own wheel and its dependencies, for an offline self-install."""
    pytest.importorskip("hatchling", reason="hatchling (in the [test] extras) builds "
                        "neuron-env's wheel offline")
    from tests.helpers import wheelhouse as wh

    return wh.build(tmp_path_factory.mktemp("wheelhouse"))


# -- real model libraries in the torch venv (trial on Hugging Face / timm models) ---------------
MODEL_LIBS = ("transformers", "timm")  # installed (pinned) by the root conftest's torch_python


def _model_libs_probe(py: str) -> dict:
    code = ("import importlib, json, sys\nout = {}\nfor name in sys.argv[1:]:\n"
            "    try:\n        m = importlib.import_module(name)\n"
            "        out[name] = {'version': m.__version__}\n"
            "    except BaseException as e:\n"
            "        c = e.__cause__ or e.__context__\n"
            "        out[name] = {'error': '%s: %s%s' % (type(e).__name__, e, "
            "' (caused by %s: %s)' % (type(c).__name__, c) if c else '')}\n"
            "import torch\nout['torch'] = torch.__version__\nprint(json.dumps(out))")
    r = subprocess.run([py, "-c", code, *MODEL_LIBS], capture_output=True, text=True,
                       timeout=300)
    return json.loads(r.stdout.strip().splitlines()[-1]) if r.returncode == 0 else {}


@pytest.fixture(scope="session")
def models_python(hf_python):
    """hf_python (transformers; timm went in --no-deps with it, in the root conftest's
    torch_python: timm needs torchvision, and PyPI's torchvision is built against CUDA torch,
    so `import timm` fails beside torch 2.13.0+cpu); `libs` says what imports and why not."""
    return hf_python, _model_libs_probe(hf_python)


# -- a real one-node Slurm cluster (tests/helpers/slurm.py), shared by the modules that need it
@pytest.fixture(scope="session")
def cluster(tmp_path_factory):
    missing = slurm_helper.missing()
    if os.geteuid() != 0:
        pytest.skip("the test cluster runs slurmctld/slurmd as root (SlurmUser=root); run as "
                    "root, as CI does")
    if missing:
        pytest.skip(f"Slurm not installed ({', '.join(missing)} missing): apt-get install "
                    "slurm-wlm munge (.ci/run does)")
    c = slurm_helper.SlurmCluster(tmp_path_factory.mktemp("slurm"))
    try:
        c.start()
        yield c
    finally:
        c.stop()
