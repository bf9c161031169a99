"""The implementations under test: compiled (when built) and pure Python, side by side."""

import pytest

import kafkaproto
from kafkaproto import _pycore
from kafkaproto.messages import load_implementation

IMPLS = ["python"] + (["compiled"] if kafkaproto.compiled() else [])


def core(impl):
    """(Reader, Writer) of one implementation."""
    if impl == "compiled":
        from kafkaproto import _core
        return _core.Reader, _core.Writer
    return _pycore.Reader, _pycore.Writer


def classes(impl):
    return load_implementation(impl)


impl_param = pytest.mark.parametrize("impl", IMPLS)


def records(impl):
    """The record codec module of one implementation."""
    if impl == "compiled":
        from kafkaproto.records import _crecords
        return _crecords
    from kafkaproto.records import _pyrecords
    return _pyrecords


def added_by_extensions():
    """Names of the specs that loaded extensions add (not those they amend): Kafka and its peers lack them."""
    from kafkaproto import registry

    return {name for package in registry.extensions() for name in package.SPECS
            if name not in getattr(package, "AMENDS", {})}
