"""Issue #25, writing files and secrets (items 1, 3, 4, 5, 10, 11, 12): the attacks reproduced on
real files, real device nodes, FIFOs and symlinks, as root where root changes the outcome.
No subprocess, no socket: the attacks through real processes are in
tests/integration/test_files_and_secrets_cli.py."""

from __future__ import annotations

import json
import os
import stat

import pytest

from neuron_env.guards import atomic, redact

ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not ROOT, reason="needs root: mknod, chown to another user")
OTHER = 65534  # nobody


def _null_device(path) -> None:
    """A private /dev/null (char 1:3): the real one is shared by every process here."""
    os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))


# -- 1. --report onto devices, FIFOs, symlinks -------------------------------------------------
@needs_root
def test_report_onto_a_device_or_a_link_to_one_is_refused(tmp_path):
    """Issue #36 turned round 2's "written through" into "refused": the one writer writes
    regular files only (tests/unit/test_one_writer.py walks every output option)."""
    dev, link = tmp_path / "null", tmp_path / "report.json"
    _null_device(dev)
    link.symlink_to(dev)
    for p in (dev, link):
        with pytest.raises(atomic.RefusedPath):
            atomic.write_output(p, "{}\n")
    assert stat.S_ISCHR(os.lstat(dev).st_mode), "the device was replaced by a regular file"
    assert os.path.islink(link) and os.readlink(link) == str(dev)


def test_report_onto_a_fifo_is_refused_never_read_or_written(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    r = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        with pytest.raises(atomic.RefusedPath, match="FIFO"):
            atomic.write_output(fifo, "hello\n")
        assert os.read(r, 100) == b""
    finally:
        os.close(r)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


@needs_root
def test_a_link_to_another_owners_file_is_refused_never_followed(tmp_path):
    victim = tmp_path / "theirs.json"
    victim.write_text("THEIRS\n")
    os.chown(victim, OTHER, OTHER)
    link = tmp_path / "report.json"
    link.symlink_to(victim)
    with pytest.raises(atomic.RefusedPath, match="symbolic link"):
        atomic.write_output(link, "{}\n")
    assert victim.read_text() == "THEIRS\n" and os.path.islink(link)


def test_a_regular_report_is_0644_whatever_the_umask(tmp_path):
    old = os.umask(0o077)
    try:
        atomic.write_output(tmp_path / "r.prom", "x 1\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "r.prom").st_mode) == 0o644


# -- 3. temporary files: random, exclusive, never through a planted link ----------------------
def test_temp_file_never_opens_a_planted_name(tmp_path, monkeypatch):
    victim = tmp_path / "victim"
    victim.write_text("keep")
    names = iter(["aaaa", "bbbb"])
    monkeypatch.setattr(atomic, "_random_name", lambda: next(names))
    (tmp_path / ".x-aaaa.tmp").symlink_to(victim)  # the attacker guessed the first name
    fd, path = atomic.temp_file(tmp_path, prefix=".x-")
    os.close(fd)
    assert path.endswith(".x-bbbb.tmp") and victim.read_text() == "keep"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_atomic_write_replaces_a_planted_link_not_its_target(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep")
    target = tmp_path / "install-manifest.json"
    target.symlink_to(victim)
    atomic.write_atomic(target, "{}")
    assert victim.read_text() == "keep" and not target.is_symlink()


# -- 4. install.lock, .write-test, logs: never through links ----------------------------------
def _victim(tmp_path):
    v = tmp_path / "etc-shadow"
    v.write_text("root:secret\n")
    return v


def test_install_lock_symlink_is_refused_and_its_target_untouched(tmp_path):
    from neuron_env.errors import ConfigurationError
    from neuron_env.install.lock import EnvLock

    victim = _victim(tmp_path)
    d = tmp_path / ".neuron-env"
    d.mkdir()
    (d / "install.lock").symlink_to(victim)
    with pytest.raises(ConfigurationError, match="symbolic link"), EnvLock(str(d), 1):
        pass
    assert victim.read_text() == "root:secret\n"


def test_install_lock_hard_link_is_refused(tmp_path):
    from neuron_env.errors import ConfigurationError
    from neuron_env.install.lock import EnvLock

    victim = _victim(tmp_path)
    d = tmp_path / ".neuron-env"
    d.mkdir()
    os.link(victim, d / "install.lock")
    with pytest.raises(ConfigurationError, match="hard link"), EnvLock(str(d), 1):
        pass
    assert victim.read_text() == "root:secret\n"


def test_write_test_never_truncates_a_planted_link(tmp_path):
    from neuron_env.install.execute import state_dir

    victim = _victim(tmp_path)
    d = tmp_path / "env" / ".neuron-env"
    (d / "logs").mkdir(parents=True)
    (d / ".write-test").symlink_to(victim)
    state_dir(str(tmp_path / "env"))
    assert victim.read_text() == "root:secret\n"


def test_a_state_dir_that_is_a_link_is_refused(tmp_path):
    from neuron_env.errors import ConfigurationError
    from neuron_env.install.execute import state_dir

    elsewhere = tmp_path / "etc"
    elsewhere.mkdir()
    (tmp_path / "env").mkdir()
    (tmp_path / "env" / ".neuron-env").symlink_to(elsewhere)
    with pytest.raises(ConfigurationError, match="symbolic link"):
        state_dir(str(tmp_path / "env"))
    assert list(elsewhere.iterdir()) == []


def test_install_log_is_never_opened_through_a_link(tmp_path):
    from neuron_env.install.steps import Log

    victim = _victim(tmp_path)
    link = tmp_path / "install-x.log"
    link.symlink_to(victim)
    log = Log(str(link))
    log.write("pip output\n")
    log.close()
    assert victim.read_text() == "root:secret\n" and log.error


# -- 5. matrix cache ---------------------------------------------------------------------------
@pytest.fixture
def cdir(tmp_path, monkeypatch):
    d = tmp_path / "xdg"
    monkeypatch.delenv("NEURON_ENV_CACHE_DIR", raising=False)
    monkeypatch.delenv("NEURON_ENV_NO_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(d))
    return d / "neuron-env" / "matrices"


def _matrix(tmp_path):
    from tests.helpers.cli import REPO

    f = tmp_path / "neuron-2.33.toml"
    f.write_text((REPO / "matrices" / "neuron-2.33.toml").read_text())
    return f


def test_cache_directories_are_0700_under_umask_000(cdir, tmp_path):
    from neuron_env.matrix import loader

    old = os.umask(0)
    try:
        loader.load_file(_matrix(tmp_path))
    finally:
        os.umask(old)
    for d in (cdir, cdir.parent):
        assert stat.S_IMODE(os.stat(d).st_mode) == 0o700, d
    for e in cdir.iterdir():
        assert not os.stat(e).st_mode & 0o022, e


def _poison(cdir) -> None:
    (entry,) = cdir.iterdir()
    doc = json.loads(entry.read_text())
    for idx in doc["data"]["indexes"]:
        idx["url"] = "https://evil.example/simple"
    entry.write_text(json.dumps(doc))


@needs_root
@pytest.mark.parametrize("how", ["foreign-owner", "world-writable"])
def test_a_poisoned_cache_entry_is_ignored_with_a_warning(cdir, tmp_path, capsys, how):
    from neuron_env.matrix import loader

    f = _matrix(tmp_path)
    good = loader.load_file(f)
    _poison(cdir)
    (entry,) = cdir.iterdir()
    if how == "foreign-owner":
        os.chown(entry, OTHER, OTHER)
    else:
        os.chmod(entry, 0o666)
    again = loader.load_file(f)
    assert [i.url for i in again.indexes] == [i.url for i in good.indexes]
    assert "evil.example" not in json.dumps([i.url for i in again.indexes])
    assert "ignoring the matrix cache entry" in capsys.readouterr().err


def test_a_cache_entry_for_other_text_is_a_miss(cdir, tmp_path):
    from neuron_env.matrix import cache

    f = _matrix(tmp_path)
    cache.put(str(f), "some text", {"x": 1})
    assert cache.get(str(f), "some text") == {"x": 1}
    assert cache.get(str(f), "other text") is None


# -- 10, 11. masking: the authority parsed, mask first then cut --------------------------------
@pytest.mark.parametrize("raw,secret", [
    ("http://user:pa/ss@host/simple", "pa/ss"),
    ("--index-url http://user:pa ss@host/simple x", "pa ss"),
    ('{"u": "https://ci:a/b c@d@mirror/simple"}', "a/b c@d"),
    ("https://user:TOKEN@host/m.toml", "TOKEN"),
])
def test_passwords_with_slash_blank_and_at_are_masked(raw, secret):
    out = redact.text(raw)
    assert secret not in out and "***@" in out, out


@pytest.mark.parametrize("clean", [
    "git+https://github.com/a/b@v1.0", "see https://host:8080/simple and ops@example.com",
    "a https://u:p@h/ and mail ops@example.com",
])
def test_what_is_no_userinfo_is_not_eaten(clean):
    out = redact.text(clean)
    assert out == clean or out == "a https://***@h/ and mail ops@example.com"


def test_nhc_error_line_is_masked_before_it_is_cut():
    from neuron_env.report.render import render_error

    token = "T" * 100
    msg = "x" * 80 + f" https://user:{token}@mirror.example/simple"
    line = render_error("neuron-env.doctor/1", 2, {"message": msg}, "nhc")
    assert "TTTT" not in line and len(line) <= 121


def test_drain_reason_and_npd_line_are_masked_before_the_cut():
    from neuron_env.report.verdict import reason

    token = "S" * 100
    doc = {"exit_code": 1, "results": [{"id": "backend.origin", "status": "fail",
                                        "summary": "y" * 70 + f" https://ci:{token}@m/simple"}]}
    why = reason(doc)
    assert "SSSS" not in why and len(why) <= 120


def test_ssm_summary_masks_before_it_cuts():
    from neuron_env.aws.publish import summary_doc
    from neuron_env.report.model import Report, Result

    token = "K" * 400
    rep = Report("neuron-env.doctor/1", {"name": "neuron-env", "version": "0"}, None, {},
                 (Result("backend.origin", "backend", "fail",
                         f"{'z' * 250} https://ci:{token}@m/simple"),), 1)
    assert "KKKK" not in json.dumps(summary_doc(rep))


# -- beyond the list: the attacks next to the ones the issue named -----------------------------
def test_a_fifo_nobody_reads_is_an_error_never_a_hang(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(OSError):
        atomic.write_output(fifo, "x\n")


def test_bundle_leaves_out_a_state_dir_that_is_a_link(tmp_path):
    from neuron_env.bundle import collect

    secret_dir = tmp_path / "root-home"
    (secret_dir / "logs").mkdir(parents=True)
    (secret_dir / "logs" / "install-1.log").write_text("ROOT\n")
    env = tmp_path / "env"
    env.mkdir()
    (env / ".neuron-env").symlink_to(secret_dir)
    members, left = collect.logs(str(env))
    assert members == [] and "symbolic link" in left[0]["reason"]


def test_bundle_leaves_out_a_logs_dir_that_is_a_link(tmp_path):
    from neuron_env.bundle import collect

    secret_dir = tmp_path / "root-logs"
    secret_dir.mkdir()
    (secret_dir / "install-1.log").write_text("ROOT\n")
    state = tmp_path / "env" / ".neuron-env"
    state.mkdir(parents=True)
    (state / "logs").symlink_to(secret_dir)
    members, left = collect.logs(str(tmp_path / "env"))
    assert not any("ROOT" in m[1] for m in members)
    assert any("symbolic link" in x["reason"] for x in left)


def test_a_cache_entry_that_is_a_link_is_ignored(cdir, tmp_path, capsys):
    from neuron_env.matrix import loader

    f = _matrix(tmp_path)
    loader.load_file(f)
    _poison(cdir)
    (entry,) = cdir.iterdir()
    elsewhere = tmp_path / "planted.json"
    entry.rename(elsewhere)
    entry.symlink_to(elsewhere)
    again = loader.load_file(f)
    assert "evil.example" not in json.dumps([i.url for i in again.indexes])
    assert "symbolic link" in capsys.readouterr().err
