"""`.pre-commit-hooks.yaml` run by the real `pre-commit`: `pre-commit try-repo` builds the hook's
virtualenv and pip-installs this checkout into it (offline, from a wheelhouse), then runs the
hook on the files of a temporary git repository, as a user's commit would."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import wheelhouse as wh
from tests.helpers.snippets import snippet

pytestmark = [pytest.mark.integration, pytest.mark.slow]
pytest.importorskip("pre_commit", reason="pre-commit (in the [test] extras) runs the hooks")

XLA = "import torch_xla.core.xla_model as xm\n\ndev = xm.xla_device()\n"
CLEAN = "import torch\n\nprint(torch.ones(2, device='neuron'))\n"


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c",
                    "commit.gpgsign=false", *args], cwd=cwd, check=True, capture_output=True,
                   timeout=60)


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A commit of this working tree (try-repo installs a repository's HEAD)."""
    return wh.snapshot(tmp_path_factory.mktemp("hookrepo"))


@pytest.fixture(scope="module")
def offline_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    env = wh.offline_pip_env(tmp_path_factory.mktemp("hookwheels"))
    env = {k: v for k, v in env.items() if not k.startswith("PRE_COMMIT")}
    return {**env, "PRE_COMMIT_HOME": str(tmp_path_factory.mktemp("precommit-home")),
            "VIRTUALENV_NO_DOWNLOAD": "1"}


def try_repo(repo: Path, hook: str, work: Path, env: dict[str, str], *files: str
             ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pre_commit", "try-repo", str(repo), hook,
                           "--verbose", "--color", "never", "--files", *files], cwd=work,
                          env=env, capture_output=True, text=True, timeout=600)


def _work(tmp_path: Path, **files: str) -> Path:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "-A")
    return tmp_path


def test_scan_hook_fails_on_xla_and_passes_clean(hook_repo: Path, offline_env: dict[str, str],
                                                 tmp_path: Path) -> None:
    work = _work(tmp_path, **{"train.py": XLA, "ok.py": CLEAN, "notes.txt": XLA})
    bad = try_repo(hook_repo, "neuron-env-scan", work, offline_env, "train.py", "notes.txt")
    out = bad.stdout + bad.stderr
    assert bad.returncode == 1, out
    assert "neuron-env scan" in out and "Failed" in out
    assert "train.py:1:1: error   xla.import" in out and "xla.device" in out
    assert "notes.txt" not in out  # types: [python]
    good = try_repo(hook_repo, "neuron-env-scan", work, offline_env, "ok.py")
    assert good.returncode == 0, good.stdout + good.stderr
    assert "Passed" in good.stdout
    assert (work / "train.py").read_text() == XLA  # the report hook changes nothing


def test_fix_hook_rewrites_the_file(hook_repo: Path, offline_env: dict[str, str],
                                    tmp_path: Path) -> None:
    work = _work(tmp_path, **{"train.py": XLA})
    res = try_repo(hook_repo, "neuron-env-scan-fix", work, offline_env, "train.py")
    out = res.stdout + res.stderr
    assert res.returncode == 1, out  # files were modified (and the import is left to a person)
    assert "files were modified by this hook" in out
    text = (work / "train.py").read_text()
    assert 'dev = torch.device("neuron")' in text and "xm.xla_device" not in text


def test_fail_on_is_overridable(hook_repo: Path, offline_env: dict[str, str],
                                tmp_path: Path) -> None:
    """A user's `args:` replace the default `--fail-on warning` (cuda.* findings are info)."""
    cuda = "import torch\n\nx = torch.ones(2).cuda()\n"
    work = _work(tmp_path, **{"c.py": cuda})
    rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=hook_repo, capture_output=True,
                         text=True, check=True, timeout=30).stdout.strip()
    (work / ".pre-commit-config.yaml").write_text(
        f"repos:\n- repo: {hook_repo}\n  rev: {rev}\n  hooks:\n  - id: neuron-env-scan\n"
        "    args: [--fail-on, info]\n")
    strict = subprocess.run([sys.executable, "-m", "pre_commit", "run", "--files", "c.py",
                             "--color", "never"], cwd=work, env=offline_env,
                            capture_output=True, text=True, timeout=600)
    assert strict.returncode == 1, strict.stdout + strict.stderr
    assert "cuda" in strict.stdout
    default = try_repo(hook_repo, "neuron-env-scan", work, offline_env, "c.py")
    assert default.returncode == 0, default.stdout + default.stderr


def test_docs_config_snippet(hook_repo: Path, offline_env: dict[str, str],
                             tmp_path: Path) -> None:
    """docs/integrations.md's .pre-commit-config.yaml, pointed at this checkout: `--fail-on
    error` lets an info finding through and stops an XLA import."""
    rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=hook_repo, capture_output=True,
                         text=True, check=True, timeout=30).stdout.strip()
    cfg = snippet("pre-commit-config")
    assert "https://github.com/your-org/neuron-env" in cfg and "rev: v0.1.0" in cfg
    work = _work(tmp_path, **{"c.py": "import torch\n\nx = torch.ones(2).cuda()\n",
                              "t.py": XLA})
    (work / ".pre-commit-config.yaml").write_text(
        cfg.replace("https://github.com/your-org/neuron-env", str(hook_repo))
        .replace("v0.1.0", rev))

    def run(*files: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "pre_commit", "run", "--color", "never",
                               "--files", *files], cwd=work, env=offline_env,
                              capture_output=True, text=True, timeout=600)

    info = run("c.py")
    assert info.returncode == 0, info.stdout + info.stderr
    xla = run("t.py")
    assert xla.returncode == 1 and "xla.import" in xla.stdout, xla.stdout + xla.stderr
