"""The cheap forms on doctor's path: `@record` value classes and the dpkg reader that parses
only aws-neuron* stanzas."""

from __future__ import annotations

import pytest

from neuron_env.probes.host import parse_dpkg_status
from neuron_env.util.record import factory, record, replace


@record
class Point:
    x: int
    y: int = 0
    tags: dict = factory(dict)

    @property
    def norm1(self) -> int:
        return abs(self.x) + abs(self.y)


def test_record_behaves_like_a_frozen_dataclass():
    p = Point(1, y=2)
    assert (p.x, p.y, p.tags, p.norm1) == (1, 2, {}, 3)
    assert Point(1).tags is not Point(1).tags  # a fresh default each time
    assert p == Point(1, 2) and p != Point(2, 2)
    assert hash(Point(1, 2, ())) == hash(Point(1, 2, ()))
    assert repr(p) == "Point(x=1, y=2, tags={})"
    with pytest.raises(AttributeError):
        p.x = 5
    assert not hasattr(p, "__dict__")
    assert replace(p, y=7) == Point(1, 7) and p.y == 2
    with pytest.raises(TypeError, match="missing argument 'x'"):
        Point()
    with pytest.raises(TypeError, match="unexpected"):
        Point(1, z=3)


STATUS = """Package: zlib1g
Status: install ok installed
Version: 1:1.2.13
Description: compression
 Package: aws-neuronx-fake (continuation text, not a stanza)
 .
 more

Status: install ok installed
Package: aws-neuronx-tools
Version: 2.32.28.0

Package: aws-neuronx-collectives
Status: deinstall ok config-files
Version: 2.1

Package: aws-neuronx-dkms
Status: install ok installed
Version: 2.33.1
"""


def test_dpkg_reader_reads_only_installed_neuron_stanzas():
    assert parse_dpkg_status(STATUS) == {"aws-neuronx-tools": "2.32.28.0",
                                         "aws-neuronx-dkms": "2.33.1"}
    many = "\n\n".join(f"Package: p{i}\nStatus: install ok installed\nVersion: 1"
                       for i in range(3000))
    assert parse_dpkg_status(many + "\n\n" + STATUS) == parse_dpkg_status(STATUS)
    assert parse_dpkg_status("") == {}
