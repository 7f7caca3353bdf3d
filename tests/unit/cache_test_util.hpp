// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Helpers shared by the cache unit tests.
#pragma once

#include "cache/cache.hpp"
#include "test_support.hpp"

#include <filesystem>
#include <numeric>
#include <string>
#include <unistd.h>
#include <vector>

namespace kvrt::test {

// A dense layout: n full layers of heads x dim f16, block_tokens positions per block.
inline cache::CacheConfig dense_config(int n_layers, int heads, int dim, int block_tokens, uint64_t budget,
                                       DType dt = DType::F16) {
    cache::CacheConfig c;
    c.block_tokens = block_tokens;
    c.budget_bytes = budget;
    for (int i = 0; i < n_layers; i++) {
        cache::LayerSpec s;
        s.kind = cache::LayerKind::Full;
        s.n_kv_heads = heads;
        s.head_dim = dim;
        s.dtype = dt;
        c.layers.push_back(s);
    }
    return c;
}

// An empty directory path of this process under the system temp folder: <prefix><pid>_<name>
// (removed first if a crashed run left it).
inline std::string fresh_temp_dir(const std::string& prefix, const char* name) {
    const std::filesystem::path p =
        std::filesystem::temp_directory_path() / (prefix + std::to_string(::getpid()) + "_" + name);
    std::filesystem::remove_all(p);
    return p.string();
}

inline std::vector<int32_t> iota_tokens(int n, int32_t start = 1) {
    std::vector<int32_t> t(n);
    std::iota(t.begin(), t.end(), start);
    return t;
}

}  // namespace kvrt::test
