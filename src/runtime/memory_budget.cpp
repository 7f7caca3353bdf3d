// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

#include "runtime/memory_budget.hpp"

#include <unistd.h>

#include <algorithm>

namespace kvrt::runtime {

DefaultMemory choose_default_memory(uint32_t n_ctx_asked, uint32_t n_ctx_train, uint32_t n_seq_max,
                                    uint32_t block_tokens, uint64_t phys_bytes,
                                    const std::function<uint64_t(uint32_t)>& per_seq) {
    const uint64_t cap = phys_bytes / 4;
    auto seqs = [&](uint32_t n) { return static_cast<uint64_t>(n_seq_max) * per_seq(n); };
    DefaultMemory d;
    d.n_ctx = n_ctx_asked != 0 ? n_ctx_asked : n_ctx_train;
    if (n_ctx_asked == 0 && cap > 0) {
        const uint32_t floor = std::min(n_ctx_train, std::max<uint32_t>(512, block_tokens));
        while (d.n_ctx > floor && seqs(d.n_ctx) > cap) d.n_ctx = std::max(floor, d.n_ctx / 2);
    }
    const uint64_t need = seqs(d.n_ctx);
    d.budget_bytes = 2 * need;
    if (cap > 0) d.budget_bytes = std::max(need, std::min(d.budget_bytes, cap));
    return d;
}

uint64_t physical_memory_bytes() noexcept {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || page <= 0) return 0;
    return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
}

}  // namespace kvrt::runtime
