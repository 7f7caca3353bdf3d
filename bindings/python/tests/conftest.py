# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The kvrt authors

import os
import pathlib

import pytest

# While the library lacks the model/context API (KVRT_TEST_RUNTIME=0, set by
# tests/bindings/CMakeLists.txt), those tests are not collected at all.
collect_ignore = ["test_model.py", "test_ced.py"] if os.environ.get("KVRT_TEST_RUNTIME") == "0" else []


def model_path():
    env = os.environ.get("KVRT_MODEL")
    if env:
        return env
    return str(pathlib.Path.home() / ".cache/kvrt/models/SmolLM2-135M-Instruct.Q4_1.gguf")


@pytest.fixture(scope="session")
def model():
    import kvrt
    m = kvrt.Model(model_path())
    yield m
    m.close()
