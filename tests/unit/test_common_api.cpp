// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

#include <doctest/doctest.h>

#include "api/boundary.hpp"
#include "kvrt/kvrt.h"

#include <cstring>

TEST_CASE("guard turns exceptions into status codes and messages") {
    kvrt_status s = kvrt::api::guard("unit", [] { throw kvrt::Error(KVRT_ERR_OUT_OF_RANGE, "position 7 past 3"); });
    CHECK(s == KVRT_ERR_OUT_OF_RANGE);
    CHECK(std::strstr(kvrt_last_error(), "position 7 past 3") != nullptr);
    s = kvrt::api::guard("unit", [] { throw std::bad_alloc(); });
    CHECK(s == KVRT_ERR_OUT_OF_MEMORY);
    s = kvrt::api::guard("unit", [] { throw std::runtime_error("boom"); });
    CHECK(s == KVRT_ERR_INTERNAL);
    CHECK(std::strstr(kvrt_last_error(), "boom") != nullptr);
    s = kvrt::api::guard("unit", [] {});
    CHECK(s == KVRT_OK);
    kvrt_clear_error();
    CHECK(std::strlen(kvrt_last_error()) == 0);
}
