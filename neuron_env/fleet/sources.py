"""Read doctor reports gathered any way (files, a directory, s3://bucket/prefix, SSM output)
into aggregate.Entry objects. The only I/O of `fleet report`."""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from neuron_env.errors import CommandTimeout, ConfigurationError
from neuron_env.fleet.aggregate import Entry
from neuron_env.guards.files import FileProblem, read_bounded
from neuron_env.report import verdict as V
from neuron_env.report.verdict import instance_id

MAX_REPORT = 16 * 1024 * 1024  # one doctor JSON is a few KiB; a huge file is not one

DOCTOR = "neuron-env.doctor/1"
# <prefix>/<command-id>/<instance-id>/awsrunShellScript/0.awsrunShellScript/stdout
SSM_KEY = re.compile(r"(?:^|/)[0-9a-f-]{36}/(?P<iid>[^/]+)/awsrunShellScript/"
                     r"0\.awsrunShellScript/stdout$")


def parse(raw: bytes | str, name: str, source: str, **kw) -> Entry:
    """One report's bytes -> an Entry named by its instance id (else `name`)."""
    from neuron_env.errors import BadInput
    from neuron_env.guards.files import parse_json

    try:  # the one reader's parser: depth-limited (a doctor report nests ~6 levels)
        doc = parse_json(raw, "report", finite=False)
    except BadInput as e:
        why = e.message.removeprefix("report: ")
        return Entry(name, source, unreadable=(
            "not a doctor report: JSON nested too deeply" if "nested" in why
            else f"not JSON ({why.removeprefix('is not valid JSON (').rstrip(')')})"), **kw)
    if not isinstance(doc, dict) or doc.get("schema") != DOCTOR:
        return Entry(name, source, unreadable=f"not a doctor report ({_schema_of(doc)}); "
                     "make it with `neuron-env doctor --format json`", **kw)
    bad = shape_problem(doc)
    if bad:
        return Entry(name, source, unreadable=f"not a doctor report: {bad}", **kw)
    # the SSM agent's key names the instance it ran on; elsewhere the report's own id wins
    own = None if SSM_KEY.search(source) else instance_id(doc)
    return Entry(own if isinstance(own, str) and own else name, source, doc=doc, **kw)


def _schema_of(doc: object) -> str:
    """What the document is instead, in words (never `schema None`)."""
    if not isinstance(doc, dict):
        return f"a JSON {_JSON_TYPES.get(type(doc), type(doc).__name__)}, not an object"
    if "schema" not in doc:
        return "no `schema` field"
    return f"schema {V.one_line(repr(doc['schema']), 80)}"


_JSON_TYPES = {list: "array", str: "string", int: "number", float: "number", bool: "boolean",
               type(None): "null"}
_OBJECTS = (("summary",), ("target",), ("target", "instance"), ("target", "packages"),
            ("target", "driver"), ("target", "driver", "apt_packages"), ("error",))


def shape_problem(doc: dict[str, Any]) -> str | None:
    """What makes a document that says it is a doctor report unusable (the parts fleet
    reads have the wrong type), else None. Checked before anything reads it."""
    if not isinstance(doc.get("exit_code"), int | None) or isinstance(doc.get("exit_code"),
                                                                       bool):
        return f"exit_code is {type(doc.get('exit_code')).__name__}, not an integer"
    for path in _OBJECTS:
        v: object = doc
        for k in path:
            v = v.get(k) if isinstance(v, dict) else None
        if v is not None and not isinstance(v, dict):
            return f"{'.'.join(path)} is {type(v).__name__}, not an object"
    results = doc.get("results")
    if results is not None and not isinstance(results, list):
        return f"results is {type(results).__name__}, not a list"
    if results and not all(isinstance(r, dict) for r in results):
        i, r = next((i, r) for i, r in enumerate(results) if not isinstance(r, dict))
        return f"results[{i}] is {type(r).__name__}, not an object"
    return None


def _files(arg: str) -> list[Path]:
    p = Path(arg)
    if p.is_dir():
        found = sorted((x for x in p.rglob("*") if (x.suffix == ".json" or x.name == "stdout")
                        and x.is_file()), key=lambda x: x.parts)
        if not found:
            raise ConfigurationError(f"{arg}: no *.json reports in this directory",
                                     hint="write them with `neuron-env doctor --format json "
                                     "> DIR/$(hostname).json`")
        return found
    if not p.is_file():
        raise ConfigurationError(f"{arg}: no such file or directory",
                                 hint="pass report files, a directory or s3://bucket/prefix")
    return [p]


def _name(path: Path) -> str:
    m = SSM_KEY.search(path.as_posix())
    return m.group("iid") if m else path.stem


def from_args(args: list[str], region: str | None = None,
              timeout: float | None = None) -> list[Entry]:
    """Every input's entries (see entries())."""
    return list(entries(args, region, timeout))


def entries(args: list[str], region: str | None = None,
            timeout: float | None = None) -> Iterator[Entry]:
    """Every input's entries, one at a time (aggregate.Fleet keeps a summary of each, not the
    report); s3:// reads all end within `timeout` s (from now) when given."""
    if not args:
        raise ConfigurationError("no reports given",
                                 hint="neuron-env fleet report FILES...|DIR|s3://bucket/prefix")
    import time

    deadline = None if timeout is None else time.monotonic() + timeout
    for arg in args:
        if arg.startswith("s3://"):
            yield from from_s3(arg, region, deadline)
            continue
        for path in _files(arg):
            yield _file_entry(path)


def _file_entry(path: Path) -> Entry:
    try:
        raw = read_bounded(path, MAX_REPORT)  # a FIFO or a 10 GB file: not a report
    except FileProblem as e:
        return Entry(_name(path), str(path), unreadable=e.why)
    except OSError as e:
        return Entry(_name(path), str(path), unreadable=f"cannot read: {e.strerror or e}")
    return parse(raw, _name(path), str(path))


WORKERS = 10  # objects read at once (botocore keeps 10 connections per client)


def from_s3(uri: str, region: str | None, deadline: float | None = None,
            workers: int = WORKERS) -> Iterator[Entry]:
    """The reports under s3://bucket/prefix, read `workers` at a time (in key order). Each
    exchange has its own deadline (see ssm_fleet.bounded), none past `deadline` (monotonic):
    a trickled object is "unreadable", the others are still read; a listing that times out is
    the command's timeout."""
    from neuron_env.aws import ssm_fleet
    from neuron_env.aws.client import AwsError

    bucket, _, prefix = uri[len("s3://"):].partition("/")
    if not bucket:
        raise ConfigurationError(f"{uri}: no bucket", hint="s3://bucket/prefix")
    try:
        s3 = ssm_fleet.client("s3", region)
        keys = [k for k in ssm_fleet.s3_keys(s3, bucket, prefix, deadline)
                if k.endswith(".json") or SSM_KEY.search(k)]
        if not keys:
            raise ConfigurationError(f"{uri}: no reports (*.json or SSM stdout objects)")
        yield from _pooled(lambda k: _s3_entry(s3, bucket, k, deadline), keys, workers)
    except AwsError as e:
        if e.code == "timed-out":
            raise CommandTimeout(f"{uri}: {e.message}") from None
        raise ConfigurationError(f"{uri}: {e.message}",
                                 hint="check the bucket, region and s3:ListBucket/"
                                 "s3:GetObject permissions") from None


def _pooled(read: Callable[[str], Entry], keys: list[str], workers: int) -> Iterator[Entry]:
    """read(key) for every key on `workers` threads, in key order, at most 2 x workers read
    ahead of the caller (a slow consumer never holds 10,000 parsed reports)."""
    if workers <= 1:
        yield from map(read, keys)
        return
    from concurrent.futures import Future, ThreadPoolExecutor

    with ThreadPoolExecutor(workers, thread_name_prefix="s3 read") as pool:
        ahead: deque[Future[Entry]] = deque()
        todo = iter(keys)
        try:
            for k in todo:
                ahead.append(pool.submit(read, k))
                if len(ahead) >= 2 * workers:
                    yield ahead.popleft().result()
            while ahead:
                yield ahead.popleft().result()
        finally:
            for f in ahead:
                f.cancel()


def _s3_entry(s3: Any, bucket: str, key: str, deadline: float | None = None) -> Entry:
    """One object: a report, or "unreadable" with the reason (too large, gone, denied, timed
    out)."""
    from neuron_env.aws import ssm_fleet
    from neuron_env.aws.client import AwsError

    src = f"s3://{bucket}/{key}"
    try:
        raw = ssm_fleet.s3_get(s3, bucket, key, MAX_REPORT, deadline)
    except AwsError as e:
        if e.code in ("no-credentials",):
            raise
        return Entry(_name(Path(key)), src, unreadable=e.message)
    return parse(raw, _name(Path(key)), src)
