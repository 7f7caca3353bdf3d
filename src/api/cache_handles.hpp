// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The C handles of caches, for other parts of the library (the runtime's
// contexts share a kvrt::cache::Cache and hand out its kvrt_cache*).
#pragma once

#include "cache/cache.hpp"
#include "kvrt/cache.h"

#include <memory>

namespace kvrt::api {

// The handle of `cache`, registering it (non-owning: the handle dies with the
// last shared_ptr) when it has none yet. kvrt_cache_destroy ignores it.
kvrt_cache* cache_handle_for(const std::shared_ptr<cache::Cache>& cache);

// The cache behind a handle; throws kvrt::Error(KVRT_ERR_BAD_HANDLE) for
// NULL, destroyed or foreign handles.
std::shared_ptr<cache::Cache> cache_from_handle(const kvrt_cache* handle, const char* param = "cache");

}  // namespace kvrt::api
