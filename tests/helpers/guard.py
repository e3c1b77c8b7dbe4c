"""What the unit tier's guard (tests/unit/conftest.py) raises when a unit test starts a process
or opens a network connection."""


class RealWorldTouched(AssertionError):
    pass
