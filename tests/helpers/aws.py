"""AWS in tests: the environment that points boto3 and the CLI at moto's server on loopback, a
boto3 client for it, moto in its own process (IAM checks on), and seeding a public parameter."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time

import pytest

from tests.helpers.cli import cli_env

ACCOUNT = "123456789012"


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port



def aws_env(url: str, **extra) -> dict:
    env = dict(AWS_ENDPOINT_URL=url, AWS_ACCESS_KEY_ID="testing",
               AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1",
               AWS_CONFIG_FILE="/nonexistent", AWS_SHARED_CREDENTIALS_FILE="/nonexistent")
    env.update(extra)
    return cli_env(**env)


def boto(service: str, url: str, key: str = "testing", secret: str = "testing"):
    import boto3

    return boto3.session.Session(aws_access_key_id=key, aws_secret_access_key=secret,
                                 region_name="us-east-1").client(service, endpoint_url=url)


def seed_public_parameter(name: str, value: str) -> None:
    """AWS owns /aws/service/...: moto refuses PutParameter there (as AWS does), so the test
    puts the public value straight into the in-process moto backend, as moto does for its own
    bundled public parameters."""
    from moto.core.utils import utcnow
    from moto.ssm.models import Parameter, ssm_backends

    params = ssm_backends[ACCOUNT]["us-east-1"]._parameters
    params[name].append(Parameter(account_id=ACCOUNT, name=name, value=value,
                                  parameter_type="String", description=None,
                                  allowed_pattern=None, keyid=None,
                                  last_modified_date=utcnow(), version=1,
                                  data_type="aws:ec2:image"))


@contextlib.contextmanager
def moto_process(no_auth_actions: int):
    """moto's server in its own process with IAM checks on after `no_auth_actions` calls (the
    setup); yields its URL and stops it after."""
    pytest.importorskip("moto.server")
    port = free_port()
    env = dict(os.environ, INITIAL_NO_AUTH_ACTION_COUNT=str(no_auth_actions))
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p",
                             str(port)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    pytest.fail("moto server (auth) did not start")
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
