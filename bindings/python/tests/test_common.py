# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The kvrt authors

import ctypes
import os

import pytest

import kvrt
from kvrt import _capi


def test_library_version_equals_header_macros():
    assert _capi.lib().kvrt_version() == kvrt.VERSION_NUMBER
    assert kvrt.version() == (kvrt.VERSION_MAJOR, kvrt.VERSION_MINOR, kvrt.VERSION_PATCH)
    assert kvrt.version_string() == kvrt.__version__
    kvrt.check_version()


def test_status_names_from_the_library():
    assert _capi.lib().kvrt_status_string(0) == b"KVRT_OK"
    e = kvrt.KvrtError(-3, "x")
    assert e.status is kvrt.Status.CACHE_FULL and e.status_name == "KVRT_ERR_CACHE_FULL"
    assert str(e) == "KVRT_ERR_CACHE_FULL: x"
    assert kvrt.KvrtError(-99, "y").status == -99


def test_struct_sizes_match_the_c_compiler():
    path = os.environ.get("KVRT_ABI_LAYOUT")
    assert path, "set KVRT_ABI_LAYOUT to the file tests/bindings/abi_layout.c prints (ctest sets it)"
    seen = set()
    with open(path) as f:
        for line in f:
            name, value = line.split()
            if name == "version":
                assert int(value) == kvrt.VERSION_NUMBER
                continue
            assert name in _capi.STRUCTS, "the binding lacks " + name
            assert ctypes.sizeof(_capi.STRUCTS[name]) == int(value), name
            seen.add(name)
    assert seen == set(_capi.STRUCTS)


def test_every_declared_function_is_exported_or_known_missing():
    symbols = os.path.join(os.environ.get("KVRT_SOURCE_DIR", ""), "cmake", "kvrt.symbols")
    if not os.path.exists(symbols):
        pytest.fail("KVRT_SOURCE_DIR must point at the source tree (ctest sets it)")
    exported = {l.strip() for l in open(symbols) if l.startswith("kvrt_")}
    # Every exported function is declared by the binding...
    missing = sorted(exported - set(_capi.SIGNATURES))
    assert not missing, ("libkvrt exports functions the bindings do not declare: %s. Add them to "
                         "bindings/python/kvrt/_capi.py (SIGNATURES), bindings/rust/kvrt-sys/src/lib.rs "
                         "and bindings/go." % ", ".join(missing))
    # ...and every declared one that the library exports binds.
    for name in exported:
        getattr(_capi.lib(), name)
