"""`matrix update --from URL|s3://…`: fetch matrix files into the user's matrix directory.

A source is one matrix TOML pinned by its digest (`URL#sha256=HEX` or `--sha256 HEX`), or a
manifest, a JSON document that pins each file it lists:

    {"schema": "neuron-env.matrix-manifest/1",
     "matrices": [{"url": "neuron-2.34.toml", "sha256": "<64 hex>"}]}

(`url` relative to the manifest's own URL, or absolute on its host). With `--manifest-key
KEY.pem` the manifest must also be signed: `<manifest URL>.sig` verifies with the key (openssl;
Ed25519, RSA or ECDSA). The manifest server is not trusted beyond what it pins (docs/security.md,
"Manifest server"): the source comes over https, s3 or a local file the user names, plain http
only pinned or signed; every listed file is on the manifest's own host (no `file://`, no other
host, no redirect elsewhere); every read is bounded in size and, as a whole, in time
(guards/bounded_http). Every file is checked against its pin, parsed and validated like `matrix
validate` before anything is written; the file name written is `neuron-<release>.toml` from the
matrix itself, never the remote name. Nothing replaces a good matrix with a worse one: an
invalid file, a digest mismatch, a release older than the newest one already known, an older
revision of a known release (its `date`) or other content under the same date (a replay),
releases compared as versions (2.34.0 is 2.34), refuses the WHOLE update (exit 2) and leaves
the directory as it was; the files that pass are written atomically. Pure decisions (`plan`)
are apart from the I/O (`fetch`, `apply`).
"""

from __future__ import annotations

import contextlib
import re
import urllib.parse
from pathlib import Path
from typing import Any

from neuron_env.errors import CommandTimeout, ConfigurationError, MatrixError
from neuron_env.matrix import catalog
from neuron_env.matrix.model import Matrix
from neuron_env.util.record import record
from neuron_env.util.versions import Ver

MANIFEST_SCHEMA = "neuron-env.matrix-manifest/1"
MAX_MATRIX = 1 << 20  # a matrix is a few KiB
MAX_MANIFEST = 256 << 10
MAX_FILES = 200
MAX_SIGNATURE = 16 << 10
_HEX = re.compile(r"^[0-9a-f]{64}$")


@record
class Fetched:
    url: str
    data: bytes
    pinned: str  # the sha256 the file had to have


@record
class Decision:
    url: str
    release: str
    sha256: str
    path: str  # where it goes (or would go)
    action: str  # install, replace, unchanged, refused
    reason: str = ""
    text: str = ""


def sha256(data: bytes) -> str:
    from neuron_env.util.digest import sha256_hex

    return sha256_hex(data)


def split_pin(url: str) -> tuple[str, str | None]:
    """`URL#sha256=HEX` -> (URL, HEX); a fragment that is not a sha256 pin is an error."""
    base, _, frag = url.partition("#")
    if not frag:
        return base, None
    key, _, value = frag.partition("=")
    value = value.lower()
    if key != "sha256" or not _HEX.match(value):
        raise ConfigurationError(f"{url}: the fragment must be #sha256=<64 hex digits>",
                                 hint="pin the file: URL#sha256=$(sha256sum FILE)")
    return base, value


# --- I/O: bounded reads from file://, http(s)://, s3:// -----------------------------------

def _shown(url: str) -> str:
    from neuron_env.guards.bounded_http import shown_url

    return shown_url(url)


def read_url(url: str, limit: int, *, ca_bundle: str | None = None,
             timeout: float = 30.0) -> bytes:
    """At most `limit` bytes of `url`; more is refused, not truncated. The URL is checked
    first (a clear exit 2 for a malformed one); an HTTP(S) or S3 read ends by `timeout`
    whatever the server does (exit 4)."""
    from neuron_env.guards.bounded_http import check_url, http_get

    scheme = urllib.parse.urlsplit(url).scheme if "://" in url else ""
    if scheme not in ("s3", "http", "https", "file"):
        raise ConfigurationError(f"{_shown(url)}: unsupported source (use https://, http://, "
                                 "file:// or s3://)", hint="matrix update --from https://host/"
                                 "neuron-2.34.toml#sha256=HEX")
    check_url(url)
    if scheme == "s3":
        data = _read_s3(url, limit, timeout)
    elif scheme in ("http", "https"):
        from neuron_env import __version__

        data = http_get(url, limit, timeout=timeout, ca_bundle=ca_bundle,
                        user_agent=f"neuron-env/{__version__}")
    else:
        data = _read_file(url, limit)
    if len(data) > limit:
        raise ConfigurationError(f"{_shown(url)}: larger than {limit} bytes: not a matrix or "
                                 "manifest")
    return data


def _read_file(url: str, limit: int) -> bytes:
    from urllib.request import url2pathname

    from neuron_env.guards.files import FileProblem, read_bounded

    parts = urllib.parse.urlsplit(url)
    path = url2pathname(parts.path)
    try:
        return read_bounded(path, limit)
    except FileProblem as e:
        raise ConfigurationError(f"{url}: {e.why}") from None
    except OSError as e:
        raise ConfigurationError(f"{url}: cannot be read: {e.strerror or e}") from None


def _read_s3(url: str, limit: int, timeout: float) -> bytes:
    from neuron_env.aws import ssm_fleet
    from neuron_env.errors import AwsError

    parts = urllib.parse.urlsplit(url)
    bucket, key = parts.netloc, parts.path.lstrip("/")
    if not bucket or not key:
        raise ConfigurationError(f"{url}: expected s3://bucket/key")
    try:
        s3 = ssm_fleet.client("s3")
        return ssm_fleet.s3_get_bounded(s3, bucket, key, limit, timeout)
    except AwsError as e:
        if e.code == "timed-out":  # a trickling endpoint: the whole read is bounded
            raise CommandTimeout(f"{url}: no answer within {timeout:g} s") from None
        raise ConfigurationError(f"{url}: {e.message}", hint="check the bucket, key, region "
                                 "and s3:GetObject permission") from None


def _join(base: str, ref: str) -> str:
    """A manifest entry's URL: relative to the manifest's, or absolute on the manifest's own
    host (same scheme, host and port; for s3 the same bucket). Anything else, an absolute
    `file://` included, is refused: the manifest server chooses files on its host only."""
    from neuron_env.guards.bounded_http import check_url, origin

    if urllib.parse.urlsplit(ref).scheme:
        out = ref
    elif base.startswith("s3://") and not ref.startswith("//"):
        out = base.rsplit("/", 1)[0] + "/" + ref
    else:
        out = urllib.parse.urljoin(base, ref)
    check_url(out)
    absolute_file = ref.startswith("file:") or (ref.startswith("/") and base.startswith("file:"))
    if absolute_file or origin(out) != origin(base):
        raise ConfigurationError(
            f"{_shown(base)}: lists {_shown(ref)}, which is not on the manifest's own host "
            f"({'://'.join(origin(base))}): refused, nothing changed",
            hint="list files relative to the manifest (neuron-2.34.toml), on its own host")
    return out


def _transport_ok(url: str, pinned: bool, signed: bool) -> None:
    """The source itself: https, s3 or a local file named on the command line; plain http
    only when its bytes are pinned (#sha256= / --sha256) or the manifest is signed."""
    if urllib.parse.urlsplit(url).scheme == "http" and not (pinned or signed):
        raise ConfigurationError(
            f"{_shown(url)}: plain http without a pinned digest or a signature: anyone on the "
            "path could change it; refused",
            hint="use https://, pin it (URL#sha256=HEX), or sign the manifest and pass "
                 "--manifest-key")


def verify_signature(url: str, data: bytes, key: Path, *, ca_bundle: str | None,
                     timeout: float) -> None:
    """A signed manifest: `<manifest URL>.sig` is a detached signature of the manifest's bytes
    (raw, or base64 text), made with the private half of `key` (a PEM public key): Ed25519 as
    `openssl pkeyutl -sign -rawin` makes it, RSA or ECDSA as `openssl dgst -sha256 -sign`
    does; checked by `openssl` (docs/integrations.md, "sign-manifest")."""
    import base64
    import binascii
    import shutil
    import tempfile

    from neuron_env.guards import proc

    openssl = shutil.which("openssl")
    if openssl is None:
        raise ConfigurationError("--manifest-key needs the openssl command, which is not on "
                                 "PATH", hint="install openssl, or pin files by digest only")
    if not key.is_file():
        raise ConfigurationError(f"--manifest-key {key}: no such file")
    sig = read_url(url + ".sig", MAX_SIGNATURE, ca_bundle=ca_bundle, timeout=timeout)
    with contextlib.suppress(binascii.Error, ValueError):
        text = sig.strip()
        if text and all(c in b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/="
                        for c in text):
            sig = base64.b64decode(text, validate=True)
    with tempfile.TemporaryDirectory(prefix="neuron-env-verify-") as d:
        manifest, sigfile = str(Path(d) / "manifest"), str(Path(d) / "sig")
        Path(manifest).write_bytes(data)
        Path(sigfile).write_bytes(sig)
        # Ed25519/Ed448 sign the raw bytes (`openssl pkeyutl -sign -rawin`, OpenSSL 3); RSA and
        # ECDSA a SHA-256 digest (`openssl dgst -sha256 -sign`). Either verifies with `key`.
        ok = False
        for argv in ([openssl, "pkeyutl", "-verify", "-pubin", "-inkey", str(key), "-rawin",
                      "-in", manifest, "-sigfile", sigfile],
                     [openssl, "dgst", "-sha256", "-verify", str(key), "-signature", sigfile,
                      manifest]):
            res = proc.run(argv, timeout=30)
            if res.timed_out:
                raise CommandTimeout("openssl did not verify the manifest's signature within "
                                     "30 s")
            if res.ok:
                ok = True
                break
    if not ok:
        raise ConfigurationError(f"{url}: the manifest's signature ({url}.sig) does not verify "
                                 f"with {key}: refused, nothing changed",
                                 hint="the manifest changed after it was signed, or it was "
                                      "signed with another key")


def fetch(source: str, pin: str | None = None, *, ca_bundle: str | None = None,
          timeout: float = 30.0, key: Path | None = None) -> list[Fetched]:
    """The files of `source` (a pinned matrix or a manifest), each checked against its pin;
    with `key`, the source must be a manifest whose signature verifies with it."""
    url, frag_pin = split_pin(source)
    if pin and frag_pin and pin.lower() != frag_pin:
        raise ConfigurationError("--sha256 and the URL's #sha256= differ", hint="give one pin")
    pin = (pin or frag_pin or "").lower() or None
    if pin and not _HEX.match(pin):
        raise ConfigurationError(f"--sha256 {pin}: not 64 hex digits")
    from neuron_env.guards.bounded_http import check_url

    if check_url(url).scheme != "https" and ca_bundle is not None:
        raise ConfigurationError(f"--ca-bundle {ca_bundle}: only https:// uses a CA bundle, and "
                                 f"{_shown(url)} is not https: refused rather than ignored",
                                 hint="drop --ca-bundle, or use the https:// URL")
    _transport_ok(url, pin is not None, key is not None)
    data = read_url(url, max(MAX_MATRIX, MAX_MANIFEST), ca_bundle=ca_bundle, timeout=timeout)
    if pin:
        _check_pin(url, data, pin)
    manifest = _manifest(url, data)
    if key is not None:
        if manifest is None:
            raise ConfigurationError(f"{url}: --manifest-key checks a manifest, and this is a "
                                     "matrix file", hint="point --from at the signed manifest")
        verify_signature(url, data, key, ca_bundle=ca_bundle, timeout=timeout)
    if manifest is None:
        if not pin:
            raise ConfigurationError(
                f"{url}: a matrix file without a pinned digest: refused",
                hint=f"pin it: --from '{url}#sha256=<sha256 of the file>', or publish a "
                     "manifest that lists each file's sha256")
        return [Fetched(url, data, pin)]
    out = []
    for item in manifest:
        file_url = _join(url, item["url"])
        body = read_url(file_url, MAX_MATRIX, ca_bundle=ca_bundle, timeout=timeout)
        _check_pin(file_url, body, item["sha256"])
        out.append(Fetched(file_url, body, item["sha256"]))
    return out


def _check_pin(url: str, data: bytes, pin: str) -> None:
    got = sha256(data)
    if got != pin:
        raise ConfigurationError(f"{url}: sha256 {got} does not match the pinned {pin}: "
                                 "refused, nothing changed",
                                 hint="the file changed since it was pinned, or the pin is "
                                      "wrong; check where it comes from")


def _manifest(url: str, data: bytes) -> list[dict[str, str]] | None:
    """The manifest's entries, or None when `data` is not a manifest (a matrix TOML)."""
    from neuron_env.guards.files import parse_json

    head = data.lstrip()[:1]
    if head not in (b"{", b"["):
        return None
    # the one reader's parser: UTF-8, depth-limited, no NaN/Infinity; BadInput (exit 2)
    doc = parse_json(data, f"{_shown(url)} (a matrix manifest)")
    if not isinstance(doc, dict) or doc.get("schema") != MANIFEST_SCHEMA:
        raise ConfigurationError(f"{url}: not a matrix manifest (schema "
                                 f"{MANIFEST_SCHEMA!r} expected)")
    items = doc.get("matrices")
    if not isinstance(items, list) or not items or len(items) > MAX_FILES:
        raise ConfigurationError(f"{url}: 'matrices' must list 1 to {MAX_FILES} files")
    out = []
    for i, it in enumerate(items):
        ok = (isinstance(it, dict) and isinstance(it.get("url"), str) and it["url"]
              and isinstance(it.get("sha256"), str) and _HEX.match(it["sha256"].lower()))
        if not ok:
            raise ConfigurationError(f"{url}: matrices[{i}] needs 'url' and 'sha256' (64 hex "
                                     "digits)")
        out.append({"url": it["url"], "sha256": it["sha256"].lower()})
    return out


# --- pure: what to do with each fetched file ----------------------------------------------

def _date(m: Matrix | None) -> str:
    return str(m.date or "") if m else ""


def _parsed(f: Fetched, digest: str) -> tuple[Matrix, Ver, str] | Decision:
    """(matrix, its release as a version, its text), or the refusal."""
    from neuron_env.matrix.loader import parse_text

    try:
        text = f.data.decode("utf-8")
        m = parse_text(text, f.url)
    except UnicodeDecodeError:
        return Decision(f.url, "", digest, "", "refused", "not UTF-8 text")
    except MatrixError as e:
        why = "; ".join(f"{p.path or '-'}: {p.message}" for p in e.problems[:5])
        return Decision(f.url, "", digest, "", "refused", f"fails matrix validate: {why}")
    try:
        return m, Ver(m.release), text
    except ValueError:
        return Decision(f.url, m.release, digest, "", "refused",
                        "its release is not a version number")


def _revision(m: Matrix, same: list[catalog.Entry], load: Any, target: Path
              ) -> tuple[str, str]:
    """(action, reason) for a release known already (`same`: its entries, first wins): only a
    strictly later date replaces it; an earlier one is a rollback, the same one a replay."""
    first = same[0]
    old = load(first)
    if old is not None and _date(m) < _date(old):
        return "refused", (f"an older revision of Neuron {first.release} (dated "
                           f"{_date(m) or 'none'}; the {first.origin} one is dated "
                           f"{_date(old)})")
    if old is not None and _date(m) == _date(old):  # a replay, or an undated edit
        return "refused", (f"other content with the same date as the {first.origin} Neuron "
                           f"{first.release} ({_date(old) or 'undated'}): a new revision needs "
                           "a later date")
    if Path(first.path).parent == target:
        return "replace", (f"a newer revision of Neuron {m.release}" if old is not None
                           else f"replaces an invalid Neuron {m.release}")
    return "install", f"shadows the {first.origin} Neuron {m.release}"


def plan(fetched: list[Fetched], target: Path, known: list[catalog.Entry],
         load: Any, allow_older: bool = False) -> list[Decision]:
    """Decide per file. `known`: the matrices there are now (user dir and bundled);
    `load(entry) -> Matrix | None` reads a known one (None: it is invalid). Releases compare
    as versions: 2.34.0 is 2.34 (and replaces that file, never sits beside it)."""
    newest = known[0].version if known else None
    out: list[Decision] = []
    seen: set[Ver] = set()
    for f in fetched:
        digest = sha256(f.data)
        got = _parsed(f, digest)
        if isinstance(got, Decision):
            out.append(got)
            continue
        m, ver, text = got
        same = [e for e in known if e.version == ver]
        mine = [e for e in same if Path(e.path).parent == target]
        path = str(mine[0].path if mine else target / f"neuron-{m.release}.toml")
        if ver in seen:
            out.append(Decision(f.url, m.release, digest, path, "refused",
                                f"Neuron {m.release} listed twice"))
            continue
        seen.add(ver)
        if any(_digest_of(e.path) == digest for e in same):
            out.append(Decision(f.url, m.release, digest, path, "unchanged",
                                "already there, same digest"))
        elif same:
            action, why = _revision(m, same, load, target)
            out.append(Decision(f.url, m.release, digest, path, action, why,
                                text if action != "refused" else ""))
        elif newest is not None and ver < newest and not allow_older:
            out.append(Decision(f.url, m.release, digest, path, "refused",
                                f"Neuron {m.release} is older than the newest known release "
                                f"({known[0].release}); --allow-older adds it anyway"))
        else:
            out.append(Decision(f.url, m.release, digest, path, "install", "new release",
                                text))
    return out


def _digest_of(path: Path) -> str | None:
    from neuron_env.guards.files import read_bounded
    from neuron_env.matrix.loader import MAX_MATRIX as LOADER_MAX

    try:
        return sha256(read_bounded(path, LOADER_MAX))
    except OSError:
        return None


def apply(decisions: list[Decision], dry_run: bool = False) -> int:
    """Write the accepted files (all or none): exit 2 when any was refused."""
    if any(d.action == "refused" for d in decisions):
        return 2
    if not dry_run:
        from neuron_env.guards.atomic import write_atomic

        for d in decisions:
            if d.action in ("install", "replace"):
                write_atomic(d.path, d.text)
    return 0


def known_entries() -> list[catalog.Entry]:
    """The user directory's and the bundled matrices, newest first (no --matrix-dir)."""
    return catalog.available([])
