// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Cache state files: the whole prefix cache, or one sequence (see state_file.hpp
// for the container). Anything that does not match loads as a clean miss with a
// clear error and leaves the cache as it was.
#include "cache/cache.hpp"
#include "cache/quant_scale_check.hpp"
#include "cache/sequence.hpp"
#include "cache/state_file.hpp"
#include "util/error.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <new>

namespace kvrt::cache {

namespace {
const char kPrefixMagic[8] = {'K', 'V', 'R', 'T', 'P', 'F', 'X', '\0'};
const char kSeqMagic[8] = {'K', 'V', 'R', 'T', 'S', 'E', 'Q', '\0'};

// Identifies the block layout: block tokens and every layer's spec.
Hash128 layout_hash(const ResolvedLayout& l) {
    std::vector<int64_t> words{l.block_tokens, static_cast<int64_t>(l.layers.size())};
    for (const LayerSpec& s : l.layers) {
        words.insert(words.end(), {int64_t(s.kind), s.n_kv_heads, s.head_dim, int64_t(s.dtype), s.window, s.ratio,
                                   s.source, int64_t(s.shared_kv)});
        if (s.v_dtype) words.push_back(1000 + int64_t(*s.v_dtype));  // V rows of another type (issue 15)
    }
    XXH128_hash_t h = XXH3_128bits(words.data(), words.size() * sizeof(int64_t));
    return Hash128{h.low64, h.high64};
}

void check_header(StateReader& r, const ResolvedLayout& l, uint64_t fp_lo, uint64_t fp_hi, const std::string& path) {
    Hash128 lh = layout_hash(l);
    uint64_t lo = r.u64(), hi = r.u64();
    KVRT_CHECK(lo == lh.lo && hi == lh.hi, KVRT_ERR_MISMATCH,
               path + " was saved from a cache with another layout (block tokens, layer shapes or KV element "
                      "types; this cache's K/V types by layer: " + layout_dtype_signature(l) + ")");
    lo = r.u64();
    hi = r.u64();
    KVRT_CHECK(lo == fp_lo && hi == fp_hi, KVRT_ERR_MISMATCH, path + " was saved for another model fingerprint");
}

// The optional section after a prefix file's blocks: the sub-block records (block_children.hpp)
// of the saved hashes, so that hits after a load still reach the first changed token. Files
// without it (before the section existed) load as before, their blocks serving whole-block hits.
constexpr uint32_t kChildrenTag = 0x42425553;  // "SUBB"

// Largest file a cache could ever have written (all of its budget, plus headers and tokens).
uint64_t max_file_bytes(uint64_t budget) { return budget * 2 + (uint64_t(1) << 34); }
}  // namespace

uint64_t Cache::save_prefixes(const std::string& path, uint64_t fp_lo, uint64_t fp_hi) const {
    StateWriter w(kPrefixMagic);
    Hash128 lh = layout_hash(layout_);
    w.u64(lh.lo);
    w.u64(lh.hi);
    w.u64(fp_lo);
    w.u64(fp_hi);
    w.u32(static_cast<uint32_t>(layout_.managers.size()));
    for (const ManagerSpec& m : layout_.managers) w.u64(m.block_bytes);
    uint64_t n = 0;
    {
        std::lock_guard<std::mutex> lock(mu_);
        // Whole blocks only: the file's records hold block_tokens tokens (a tail block, Block::tail,
        // serves this process's sub-block hits only).
        pool_.for_each_indexed([&](int32_t, const Hash128&, BlockId id) { n += pool_.block(id).tail ? 0 : 1; });
        w.u64(n);
        pool_.for_each_indexed([&](int32_t m, const Hash128& h, BlockId id) {
            if (pool_.block(id).tail) return;
            w.u32(static_cast<uint32_t>(m));
            w.u32(0);
            w.u64(h.lo);
            w.u64(h.hi);
            w.bytes(pool_.mem(id), layout_.managers[m].block_bytes);
        });
        w.u32(kChildrenTag);
        w.u32(static_cast<uint32_t>(layout_.block_tokens));
        uint64_t nr = 0;
        children_.for_each([&](const Hash128&, const Hash128&, const std::vector<int32_t>& tokens) {
            nr += tokens.size() == size_t(layout_.block_tokens) ? 1 : 0;
        });
        w.u64(nr);
        children_.for_each([&](const Hash128& h, const Hash128& group, const std::vector<int32_t>& tokens) {
            if (tokens.size() != size_t(layout_.block_tokens)) return;
            w.u64(h.lo);
            w.u64(h.hi);
            w.u64(group.lo);
            w.u64(group.hi);
            w.bytes(tokens.data(), tokens.size() * sizeof(int32_t));
        });
    }
    w.commit(path);  // file I/O outside the lock
    return n;
}

uint64_t Cache::load_prefixes(const std::string& path, uint64_t fp_lo, uint64_t fp_hi) {
    StateReader r(path, kPrefixMagic, max_file_bytes(pool_.budget()));
    check_header(r, layout_, fp_lo, fp_hi, path);
    uint32_t nm = r.u32();
    KVRT_CHECK(nm == layout_.managers.size(), KVRT_ERR_BAD_FORMAT, path + ": manager count differs");
    for (uint32_t m = 0; m < nm; m++)
        KVRT_CHECK(r.u64() == layout_.managers[m].block_bytes, KVRT_ERR_BAD_FORMAT, path + ": block size differs");
    uint64_t n = r.u64();
    KVRT_CHECK(n <= r.remaining() / 24, KVRT_ERR_BAD_FORMAT, path + ": entry count exceeds the file");
    struct Entry {
        int32_t m;
        Hash128 h;
        const uint8_t* data;
    };
    std::vector<Entry> entries;
    entries.reserve(n);
    for (uint64_t i = 0; i < n; i++) {
        uint32_t m = r.u32();
        KVRT_CHECK(m < nm && r.u32() == 0, KVRT_ERR_BAD_FORMAT, path + ": bad entry " + std::to_string(i));
        Hash128 h;
        h.lo = r.u64();
        h.hi = r.u64();
        const uint8_t* block = r.bytes(layout_.managers[m].block_bytes);
        check_quant_scales(layout_, int32_t(m), block, path);  // int8 / fp8 rows: finite scales only
        entries.push_back({int32_t(m), h, block});
    }
    struct Record {
        Hash128 h, group;
        const uint8_t* tokens;
    };
    std::vector<Record> records;
    const size_t bt = size_t(layout_.block_tokens);
    if (r.remaining() > 0) {
        KVRT_CHECK(r.u32() == kChildrenTag && r.u32() == bt, KVRT_ERR_BAD_FORMAT,
                   path + ": unknown section after the blocks");
        const uint64_t nr = r.u64();
        KVRT_CHECK(nr <= r.remaining() / (32 + 4 * bt), KVRT_ERR_BAD_FORMAT,
                   path + ": sub-block record count exceeds the file");
        records.reserve(nr);
        for (uint64_t i = 0; i < nr; i++) {
            Record rec;
            rec.h.lo = r.u64();
            rec.h.hi = r.u64();
            rec.group.lo = r.u64();
            rec.group.hi = r.u64();
            rec.tokens = r.bytes(4 * bt);
            records.push_back(rec);
        }
    }
    r.expect_end();
    // Everything is validated: now insert (free bytes only).
    std::lock_guard<std::mutex> lock(mu_);
    uint64_t added = 0;
    for (const Entry& e : entries) {
        if (pool_.lookup(e.m, e.h) != kNullBlock) continue;
        BlockId id = pool_.allocate_if_free(e.m);
        if (id == kNullBlock) break;
        std::memcpy(pool_.mem(id), e.data, layout_.managers[e.m].block_bytes);
        pool_.publish(id, e.h);
        pool_.release(id);  // -> cached, at the LRU tail
        added++;
    }
    std::vector<int32_t> tokens(bt);
    for (const Record& rec : records) {
        if (!indexed_in_any_locked(rec.h)) continue;  // the budget may have cut the load short
        std::memcpy(tokens.data(), rec.tokens, 4 * bt);
        try {
            children_.add_to_group(rec.group, rec.h, tokens.data(), bt);
        } catch (const std::bad_alloc&) {
            break;  // the blocks serve whole-block hits
        }
    }
    return added;
}

std::vector<uint8_t> Cache::save_sequence_blob(SeqId id) const {
    StateWriter w(kSeqMagic);
    {
        std::lock_guard<std::mutex> lock(mu_);
        const Sequence& s = get(id, "save_sequence");
        KVRT_CHECK(!s.pin, KVRT_ERR_INVALID_ARGUMENT, "save_sequence: " + std::to_string(id) + " is a pin");
        Hash128 lh = layout_hash(layout_);
        w.u64(lh.lo);
        w.u64(lh.hi);
        w.u64(s.keys.fingerprint_lo);
        w.u64(s.keys.fingerprint_hi);
        w.u64(s.keys.adapter_id);
        w.u64(s.keys.salt.size());
        w.bytes(s.keys.salt.data(), s.keys.salt.size());
        w.i64(s.length());
        w.i64(s.computed);
        w.bytes(s.tokens.data(), s.tokens.size() * sizeof(int32_t));
        for (size_t m = 0; m < s.tables.size(); m++)
            for (BlockId b : s.tables[m]) {
                w.u32(b != kNullBlock ? 1 : 0);
                if (b != kNullBlock) w.bytes(pool_.mem(b), layout_.managers[m].block_bytes);
            }
    }
    return w.finish();
}

void Cache::save_sequence(SeqId id, const std::string& path) const {
    std::vector<uint8_t> blob = save_sequence_blob(id);
    write_file_atomic(path, blob.data(), blob.size());
}

SeqId Cache::load_sequence(const std::string& path, uint64_t fp_lo, uint64_t fp_hi) {
    StateReader r(path, kSeqMagic, max_file_bytes(pool_.budget()));
    return load_sequence_from(r, fp_lo, fp_hi, path);
}

SeqId Cache::load_sequence_blob(std::vector<uint8_t> blob, uint64_t fp_lo, uint64_t fp_hi, const std::string& what) {
    StateReader r(std::move(blob), kSeqMagic, what);
    return load_sequence_from(r, fp_lo, fp_hi, what);
}

SeqId Cache::load_sequence_from(StateReader& r, uint64_t fp_lo, uint64_t fp_hi, const std::string& path) {
    check_header(r, layout_, fp_lo, fp_hi, path);
    auto s = std::make_unique<Sequence>();
    s->keys.fingerprint_lo = fp_lo;
    s->keys.fingerprint_hi = fp_hi;
    s->keys.adapter_id = r.u64();
    uint64_t salt_len = r.u64();
    KVRT_CHECK(salt_len <= r.remaining(), KVRT_ERR_BAD_FORMAT, path + ": salt length exceeds the file");
    const uint8_t* salt = r.bytes(salt_len);
    s->keys.salt.assign(reinterpret_cast<const char*>(salt), salt_len);
    s->extra = hash_extra_keys(s->keys);
    int64_t n = r.i64(), computed = r.i64();
    KVRT_CHECK(n >= 0 && n <= std::numeric_limits<int32_t>::max() && computed >= 0 && computed <= n,
               KVRT_ERR_BAD_FORMAT, path + ": bad length " + std::to_string(n) + " / computed " + std::to_string(computed));
    KVRT_CHECK(uint64_t(n) * 4 <= r.remaining(), KVRT_ERR_BAD_FORMAT, path + ": tokens exceed the file");
    const uint8_t* tok = r.bytes(size_t(n) * 4);
    s->tokens.resize(size_t(n));
    if (n) std::memcpy(s->tokens.data(), tok, size_t(n) * 4);
    s->computed = computed;
    const int64_t bt = layout_.block_tokens, nb = (n + bt - 1) / bt;
    const size_t nm = layout_.managers.size();
    std::vector<std::vector<const uint8_t*>> data(nm);
    uint64_t need = 0;
    for (size_t m = 0; m < nm; m++) {
        const ManagerSpec& ms = layout_.managers[m];
        for (int64_t b = 0; b < nb; b++) {
            uint32_t present = r.u32();
            KVRT_CHECK(present <= 1, KVRT_ERR_BAD_FORMAT, path + ": bad block flag");
            bool may_drop = ms.kind == LayerKind::Window && (b + 1) * bt <= std::max<int64_t>(0, n - ms.window + 1);
            KVRT_CHECK(present || may_drop, KVRT_ERR_BAD_FORMAT, path + ": a block the sequence needs is missing");
            data[m].push_back(present ? r.bytes(ms.block_bytes) : nullptr);
            if (present) check_quant_scales(layout_, int32_t(m), data[m].back(), path);  // finite int8 / fp8 scales
            if (present) need += ms.block_bytes;
        }
    }
    r.expect_end();
    s->tables.assign(nm, std::vector<BlockId>(size_t(nb), kNullBlock));
    s->ptrs.assign(nm, std::vector<const uint8_t*>(size_t(nb), nullptr));

    std::lock_guard<std::mutex> lock(mu_);
    KVRT_CHECK(need <= pool_.available_bytes(), KVRT_ERR_CACHE_FULL,
               path + " needs " + std::to_string(need) + " bytes; " + std::to_string(pool_.available_bytes()) +
                   " are free or evictable");
    s->hashes.reserve(static_cast<size_t>(computed / bt));
    std::vector<BlockId> taken;
    taken.reserve(static_cast<size_t>(nb) * nm);
    try {
        for (size_t m = 0; m < nm; m++)
            for (int64_t b = 0; b < nb; b++)
                if (data[m][b]) {
                    BlockId id = pool_.allocate(int32_t(m));
                    taken.push_back(id);
                    std::memcpy(pool_.mem(id), data[m][b], layout_.managers[m].block_bytes);
                    set_entry(*s, int32_t(m), b, id);
                }
    } catch (...) {
        for (BlockId b : taken) pool_.release(b);
        throw;
    }
    s->id = next_id_;
    SeqId out = s->id;
    Sequence& seq = *s;
    try {
        seqs_.emplace(out, std::move(s));
    } catch (...) {
        for (BlockId b : taken) pool_.release(b);
        throw;
    }
    next_id_++;
    publish_computed_locked(seq);
    return out;
}

}  // namespace kvrt::cache
