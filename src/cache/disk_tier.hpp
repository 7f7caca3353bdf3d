// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The disk tier of the prefix cache: one file per block set in a directory,
// surviving restarts and shared by any number of processes.
//
// Files: <dir>/<64 hex digits of the TierKey>.kvb holding the framed payload
// (tier_envelope). Writes go to <dir>/.tmp.<hex>.<pid>.<n> and are renamed over
// the final name, so a reader (in any process) sees a whole entry or none; two
// processes writing one key write the same bytes and the last rename wins. No
// fsync: a write torn by a crash or power loss, a flipped byte, a file of
// another format version, model or layout all fail the envelope check on read:
// they count as `corrupt`, the file is removed, and the lookup is a miss (never
// garbage rows). Temporary files of writers that died (their pid is gone) are
// removed when a tier opens the directory.
//
// Budget: budget_bytes > 0 caps the directory's entry bytes. Each hit sets the
// file's mtime to now (last use); when this process's running estimate of the
// directory's size passes the budget it rescans the directory and removes the
// least recently used entries until they fill at most 90% of it. Several
// processes may do so at once: removing a file another process has open does
// not disturb its read, and a removed entry is a miss. budget_bytes = 0: no cap.
//
// Thread-safe; never throws after construction (faults are counted misses or
// dropped puts, the cause in last_error()).
#pragma once

#include "cache/block_tier.hpp"

#include <cstdint>
#include <memory>
#include <string>

namespace kvrt::cache {

struct DiskTierOptions {
    std::string dir;            // created (with parents) when missing
    uint64_t budget_bytes = 0;  // 0 = unbounded
};

// Throws kvrt::Error(KVRT_ERR_IO) when the directory cannot be created or written,
// KVRT_ERR_INVALID_ARGUMENT for an empty dir.
std::unique_ptr<BlockTier> make_disk_tier(const DiskTierOptions& opt);

}  // namespace kvrt::cache
