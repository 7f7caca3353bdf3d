// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The default memory of a context given no budget (runtime/memory_budget.hpp), against
// hand computations.
#include "runtime/memory_budget.hpp"

#include <doctest/doctest.h>

using kvrt::runtime::choose_default_memory;

namespace {
constexpr uint64_t GiB = 1ull << 30;
// An 8B Llama-3-like model at f16 K/V: 32 layers x 8 KV heads x 128 x 2 (K, V) x 2 bytes
// = 128 KiB per token.
uint64_t llama8b(uint32_t n_ctx) { return uint64_t{n_ctx} * 131072; }
}  // namespace

TEST_CASE("default memory: a 128K-context 8B model on a 24 GiB machine gets n_ctx 32768 and 6 GiB") {
    // n_ctx left to kvrt: 131072 (16 GiB) and 65536 (8 GiB) exceed a quarter of 24 GiB; 32768 (4 GiB) fits.
    const auto d = choose_default_memory(0, 131072, 1, 16, 24 * GiB, llama8b);
    CHECK(d.n_ctx == 32768);
    CHECK(d.budget_bytes == 6 * GiB);  // min(2 x 4 GiB, 6 GiB), not below 4 GiB
}

TEST_CASE("default memory: an n_ctx the caller chose is kept, the budget never below its sequences") {
    const auto d = choose_default_memory(131072, 131072, 1, 16, 24 * GiB, llama8b);
    CHECK(d.n_ctx == 131072);
    CHECK(d.budget_bytes == 16 * GiB);  // the cap (6 GiB) is below one full sequence
    const auto two = choose_default_memory(8192, 131072, 2, 16, 24 * GiB, llama8b);
    CHECK(two.n_ctx == 8192);
    CHECK(two.budget_bytes == 4 * GiB);  // 2 x (2 sequences x 1 GiB), under the cap
}

TEST_CASE("default memory: small models keep the old rule, unknown RAM means no cap, the floor is 512") {
    auto small = [](uint32_t n) { return uint64_t{n} * 23040; };  // SmolLM2-135M-like
    const auto s = choose_default_memory(0, 8192, 1, 16, 24 * GiB, small);
    CHECK(s.n_ctx == 8192);
    CHECK(s.budget_bytes == 2ull * 8192 * 23040);
    const auto nocap = choose_default_memory(0, 131072, 1, 16, 0, llama8b);
    CHECK(nocap.n_ctx == 131072);
    CHECK(nocap.budget_bytes == 32 * GiB);
    const auto tiny = choose_default_memory(0, 131072, 1, 16, 256ull << 20, llama8b);  // 256 MiB machine
    CHECK(tiny.n_ctx == 512);
    CHECK(tiny.budget_bytes == 512ull * 131072);  // the sequence itself (= the 64 MiB cap)
}
