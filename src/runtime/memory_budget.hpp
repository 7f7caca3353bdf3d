// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The default memory of a context that creates its own cache and was given no budget
// (kvrt_context_config.cache_bytes = 0): see kvrt/context.h for the rule as documented.
//
//   cap     = a quarter of the machine's physical memory;
//   n_ctx   = as asked; when the caller left it 0, the model's training context, lowered
//             (by halving, not below 512 or a block) while n_seq_max full sequences would
//             not fit in the cap;
//   budget  = room for n_seq_max sequences at n_ctx plus as much again for cached
//             prefixes, capped at `cap` but never below the n_seq_max sequences themselves.
// Memory is committed only as blocks are used; the budget bounds it.
#pragma once

#include <cstdint>
#include <functional>

namespace kvrt::runtime {

struct DefaultMemory {
    uint32_t n_ctx = 0;
    uint64_t budget_bytes = 0;
};

// per_seq(n_ctx): bytes one sequence of n_ctx positions holds. n_ctx_asked 0 = the
// caller left it to kvrt. phys_bytes: physical memory (0 = unknown: no cap).
DefaultMemory choose_default_memory(uint32_t n_ctx_asked, uint32_t n_ctx_train, uint32_t n_seq_max,
                                    uint32_t block_tokens, uint64_t phys_bytes,
                                    const std::function<uint64_t(uint32_t)>& per_seq);

// Physical memory of the machine (sysconf), 0 when unknown.
uint64_t physical_memory_bytes() noexcept;

}  // namespace kvrt::runtime
