"""Issue #36 items 24 and 25, and the two cases that held (kept as regressions): `bundle`'s member
names (no `..`, no leading `/`, no terminal escapes), its archive mode (0600 like its
members), and masking beyond URL credentials (Authorization headers, AWS secret keys, token
query parameters). Pure: the archive is built in memory and written to tmp_path."""

from __future__ import annotations

import os
import stat
import tarfile

import pytest

from neuron_env.commands import bundle
from neuron_env.guards import redact


# -- 25. member names that a naive extract would follow out of the target --------------------------
@pytest.mark.parametrize("name, want", [
    ("../doctor.json", "doctor.json"), ("/etc/cron.d/x", "etc/cron.d/x"),
    ("neuron-env/../../x.log", "neuron-env/x.log"), ("..", "member"),
    ("neuron-env/\x1b]0;pwned\x07.log", "neuron-env/__0_pwned_.log"),
    ("neuron-env/a\nb.log", "neuron-env/a_b.log"), ("doctor.json", "doctor.json"),
])
def test_member_names_are_plain_relative_names(name, want):
    assert bundle.safe_name(name) == want


@pytest.mark.parametrize("out_name", ["...tar.gz", "..tar.gz", ".tar.gz", "case.tar.gz",
                                      "\x1b[2Jcase.tar.gz"])
def test_the_archive_extracts_inside_its_directory_and_is_0600(tmp_path, out_name):
    out = tmp_path / out_name
    members = [("../doctor.json", "{}", ""), ("/abs.txt", "a", ""),
               ("neuron-env/\x1b[2J.log", "log", "")]
    old = os.umask(0)
    try:
        bundle._write(out, members)
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o600
    with tarfile.open(out) as tar:
        for m in tar.getmembers():
            assert not m.name.startswith("/") and ".." not in m.name.split("/"), m.name
            assert not any(ord(c) < 32 or ord(c) == 127 for c in m.name), m.name
            assert stat.S_IMODE(m.mode) == 0o600
        names = tar.getnames()
    assert len(names) == 3 and len({n.split("/", 1)[0] for n in names}) == 1


# -- 25. masking beyond a URL's userinfo -----------------------------------------------------------
@pytest.mark.parametrize("raw, secret", [
    ("Authorization: Bearer eyJhbGciOi.J9.abc", "eyJhbGciOi"),
    ('{"headers": {"Authorization": "Bearer sk-LIVE-123"}}', "sk-LIVE-123"),
    ("authorization: Basic dXNlcjpwYXNz", "dXNlcjpwYXNz"),
    ("Proxy-Authorization: Basic cHJveHk6cHc=", "cHJveHk6cHc"),
    ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI"),
    ("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI", "wJalrXUtnFEMI"),
    ("aws_session_token=FQoGZXIvYXdzEXAMPLE", "FQoGZXIvYXdz"),
    ("pip install -i https://gitlab.example.com/api/v4/projects/1/packages/pypi/simple"
     "?private_token=glpat-SECRET123 torch", "glpat-SECRET123"),
    ("GET https://bucket.s3.amazonaws.com/k?X-Amz-Signature=deadbeef&X-Amz-Date=1",
     "deadbeef"),
    ("https://host/simple?access_token=ghp_ABC&x=1", "ghp_ABC"),
])
def test_other_secrets_are_masked_name_kept(raw, secret):
    out = redact.mask(raw)
    assert secret not in out and "***" in out, out
    assert redact.mask({"log": [raw]}) == {"log": [out]}


def test_ordinary_text_is_left_alone():
    for s in ("token budget exceeded", "the authorization failed: AccessDenied",
              "https://pypi.org/simple?page=2", "secret sauce", "aws_region = us-east-1"):
        assert redact.mask(s) == s


# -- the cases that held: regressions --------------------------------------------------------------
@pytest.mark.parametrize("url, leak", [
    ("https://user:p@ss@host/simple", "p@ss"), ("https://user:@host/simple", "user"),
    ("https://ci:to@k@en@mirror.example.com/simple/torch/", "to@k@en"),
])
def test_held_masking_of_passwords_with_at_signs_and_empty_passwords(url, leak):
    out = redact.mask(f"index {url} ok")
    assert leak not in out and "***@" in out and out.endswith(" ok"), out
