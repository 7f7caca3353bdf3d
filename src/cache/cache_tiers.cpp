// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The prefix cache's lower tiers (disk, Redis): block sets leave RAM into the
// tiers on eviction (and on persist()), and come back from them on a RAM miss.
//
// A block set is every manager's block of one chained block hash; its payload
// (tier_envelope.hpp) lists each manager's block or its absence (a window
// manager may have dropped or evicted it). Keys are TierKey{block hash, layout
// hash}: the block hash already names the parent chain, the tokens, the model
// fingerprint, the salt and the adapter, the layout hash the dtype, the block
// size and every layer's geometry.
//
// Locking: the cache mutex (mu_) guards the pool; tier I/O never runs under
// it. Eviction happens under mu_ (inside BlockPool::allocate): on_evict_locked
// copies the block set into pending_, and the public call that evicted
// (append, fetch_from_tiers, persist) writes pending_ out after unlocking.
#include "cache/block_tier.hpp"
#include "cache/cache.hpp"
#include "cache/quant_scale_check.hpp"
#include "cache/tier_envelope.hpp"
#include "util/error.hpp"

#include <cstring>

namespace kvrt::cache {

struct Cache::TierSlot {
    std::shared_ptr<BlockTier> tier;
    bool remote = false;
    std::atomic<uint64_t> corrupt{0};  // rejected by the cache (envelope, payload shape)
    std::atomic<uint64_t> loaded{0};
};

namespace {
void put_u32(std::vector<uint8_t>& v, uint32_t x) {
    const uint8_t* p = reinterpret_cast<const uint8_t*>(&x);
    v.insert(v.end(), p, p + 4);
}
void put_u64(std::vector<uint8_t>& v, uint64_t x) {
    const uint8_t* p = reinterpret_cast<const uint8_t*>(&x);
    v.insert(v.end(), p, p + 8);
}

// A parsed block-set payload: per manager a pointer to its block's bytes or null.
bool parse_payload(const uint8_t* p, size_t n, const ResolvedLayout& l, std::vector<const uint8_t*>* blocks) {
    const size_t nm = l.managers.size();
    size_t off = 0;
    auto take = [&](void* dst, size_t k) {
        if (n - off < k) return false;
        std::memcpy(dst, p + off, k);
        off += k;
        return true;
    };
    uint32_t m_count = 0;
    if (!take(&m_count, 4) || m_count != nm) return false;
    blocks->assign(nm, nullptr);
    for (size_t m = 0; m < nm; m++) {
        uint32_t present = 0;
        uint64_t bytes = 0;
        if (!take(&present, 4) || !take(&bytes, 8) || present > 1) return false;
        if (!present) {
            if (bytes != 0) return false;
            continue;
        }
        if (bytes != l.managers[m].block_bytes || n - off < bytes) return false;
        (*blocks)[m] = p + off;
        off += bytes;
    }
    return off == n;
}
bool quant_scales_finite(const ResolvedLayout& l, int32_t m, const uint8_t* block) {
    try {
        check_quant_scales(l, m, block, "tier");
        return true;
    } catch (const Error&) {
        return false;
    }
}

// Frames block sets and writes them to every tier in batches (BlockTier::put_many: one
// round trip per batch on Redis), holding at most kBatchSets sets / kBatchBytes at once.
class BatchWriter {
public:
    static constexpr size_t kBatchSets = 16;
    static constexpr size_t kBatchBytes = size_t(16) << 20;
    BatchWriter(std::vector<std::shared_ptr<BlockTier>> tiers, const Hash128& layout)
        : tiers_(std::move(tiers)), layout_(layout) {}
    ~BatchWriter() { flush(); }
    void add(const Hash128& h, const std::vector<uint8_t>& payload) {
        const TierKey key{h, layout_};
        framed_.push_back(tier_frame(key, payload.data(), payload.size()));
        keys_.push_back(key);
        bytes_ += framed_.back().size();
        if (framed_.size() >= kBatchSets || bytes_ >= kBatchBytes) flush();
    }
    void flush() noexcept {
        if (framed_.empty()) return;
        std::vector<TierPut> puts(framed_.size());
        for (size_t i = 0; i < framed_.size(); i++) puts[i] = TierPut{keys_[i], framed_[i].data(), framed_[i].size()};
        for (const auto& t : tiers_) t->put_many(puts.data(), puts.size());
        framed_.clear();
        keys_.clear();
        bytes_ = 0;
    }

private:
    std::vector<std::shared_ptr<BlockTier>> tiers_;
    Hash128 layout_;
    std::vector<std::vector<uint8_t>> framed_;
    std::vector<TierKey> keys_;
    size_t bytes_ = 0;
};
}  // namespace

void Cache::add_tier(std::shared_ptr<BlockTier> tier) {
    KVRT_CHECK(tier != nullptr, KVRT_ERR_INVALID_ARGUMENT, "add_tier: the tier is NULL");
    auto slot = std::make_shared<TierSlot>();
    slot->remote = std::strcmp(tier->kind(), "disk") != 0;
    slot->tier = std::move(tier);
    std::lock_guard<std::mutex> lock(mu_);
    std::lock_guard<std::mutex> tl(tiers_mu_);
    if (tiers_.empty()) {
        tier_layout_ = tier_layout_hash(layout_);
        tiers_on_ = true;
    }
    tiers_.push_back(std::move(slot));
}

bool Cache::has_tiers() const {
    std::lock_guard<std::mutex> tl(tiers_mu_);
    return !tiers_.empty();
}

std::vector<std::shared_ptr<Cache::TierSlot>> Cache::tier_slots() const {
    std::lock_guard<std::mutex> tl(tiers_mu_);
    return tiers_;
}

std::vector<uint8_t> Cache::block_set_payload_locked(const Hash128& h) const {
    const size_t nm = layout_.managers.size();
    std::vector<BlockId> ids(nm, kNullBlock);
    size_t bytes = 4;
    for (size_t m = 0; m < nm; m++) {
        ids[m] = pool_.lookup(int32_t(m), h);
        // A full-like manager's block is needed to resume; without it the set is useless.
        if (ids[m] == kNullBlock && layout_.managers[m].kind != LayerKind::Window) return {};
        bytes += 12 + (ids[m] != kNullBlock ? layout_.managers[m].block_bytes : 0);
    }
    std::vector<uint8_t> v;
    v.reserve(bytes);
    put_u32(v, uint32_t(nm));
    for (size_t m = 0; m < nm; m++) {
        put_u32(v, ids[m] != kNullBlock);
        put_u64(v, ids[m] != kNullBlock ? layout_.managers[m].block_bytes : 0);
        if (ids[m] != kNullBlock) v.insert(v.end(), pool_.mem(ids[m]), pool_.mem(ids[m]) + layout_.managers[m].block_bytes);
    }
    return v;
}

void Cache::on_evict_locked(BlockId id) {
    // The last manager to evict the hash ends its sub-block record (the victim is still indexed).
    {
        const Block& victim = pool_.block(id);
        bool elsewhere = false;
        for (size_t m = 0; m < layout_.managers.size() && !elsewhere; m++)
            elsewhere = int32_t(m) != victim.manager && pool_.lookup(int32_t(m), victim.hash) != kNullBlock;
        if (!elsewhere) children_.remove(victim.hash);
    }
    if (!tiers_on_ || pool_.block(id).tail) return;  // (a tail block serves this process's sub-block hits only)
    // Runs inside BlockPool::allocate under mu_; must not throw into the pool half-way:
    // an allocation failure here only loses the copy (the block set stays computable).
    try {
        const Hash128 h = pool_.block(id).hash;
        if (persisted_.count(h)) return;
        std::vector<uint8_t> payload = block_set_payload_locked(h);
        if (payload.empty()) return;
        pending_.push_back(PendingSet{h, std::move(payload)});
        persisted_.insert(h);
        has_pending_.store(true, std::memory_order_relaxed);
    } catch (...) {
    }
}

std::vector<std::shared_ptr<BlockTier>> Cache::tier_backends() const {
    std::vector<std::shared_ptr<BlockTier>> v;
    for (const auto& slot : tier_slots()) v.push_back(slot->tier);
    return v;
}

void Cache::flush_pending() {
    std::vector<PendingSet> todo;
    {
        std::lock_guard<std::mutex> lock(mu_);
        todo.swap(pending_);
        has_pending_.store(false, std::memory_order_relaxed);
    }
    if (todo.empty()) return;
    BatchWriter out(tier_backends(), tier_layout_);
    for (const PendingSet& p : todo) out.add(p.hash, p.payload);
}

uint64_t Cache::persist() {
    if (!has_tiers()) return 0;
    flush_pending();
    // The hashes first, then one block set at a time (bounded memory, short lock holds).
    std::vector<Hash128> hashes;
    {
        std::lock_guard<std::mutex> lock(mu_);
        int32_t m0 = 0;
        for (size_t m = 0; m < layout_.managers.size(); m++)
            if (layout_.managers[m].kind != LayerKind::Window) {
                m0 = int32_t(m);
                break;
            }
        pool_.for_each_indexed([&](int32_t m, const Hash128& h, BlockId id) {
            if (m == m0 && !pool_.block(id).tail && !persisted_.count(h)) hashes.push_back(h);
        });
    }
    uint64_t n = 0;
    BatchWriter out(tier_backends(), tier_layout_);
    for (const Hash128& h : hashes) {
        std::vector<uint8_t> payload;
        {
            std::lock_guard<std::mutex> lock(mu_);
            if (persisted_.count(h)) continue;
            payload = block_set_payload_locked(h);
            if (payload.empty()) continue;
            persisted_.insert(h);
        }
        out.add(h, payload);
        n++;
    }
    out.flush();
    return n;
}

TierFetch Cache::fetch_from_tiers(const SeqKeys& keys, const int32_t* tokens, int64_t n) {
    TierFetch out;
    KVRT_CHECK(n >= 0 && (n == 0 || tokens != nullptr), KVRT_ERR_INVALID_ARGUMENT, "fetch_from_tiers: bad prompt");
    const auto slots = tier_slots();
    const int64_t bt = layout_.block_tokens;
    const int64_t max_blocks = n > 0 ? (n - 1) / bt : 0;
    if (slots.empty() || max_blocks == 0) return out;
    const Hash128 extra = hash_extra_keys(keys);
    const size_t nm = layout_.managers.size();
    std::vector<Hash128> h(static_cast<size_t>(max_blocks));
    Hash128 parent = hash_root();
    for (int64_t b = 0; b < max_blocks; b++) h[b] = parent = hash_block(parent, extra, tokens + b * bt, size_t(bt));

    std::vector<BlockId> held;  // refs taken so that loading never evicts this prompt's own blocks
    auto release_held = [&] {
        std::lock_guard<std::mutex> lock(mu_);
        for (BlockId id : held) pool_.release(id);
        held.clear();
    };
    int64_t b = 0;
    {
        std::lock_guard<std::mutex> lock(mu_);
        while (b < max_blocks && indexed_in_all_locked(h[b])) b++;
        out.ram_blocks = b;
        if (b == max_blocks) return out;
        held.reserve(size_t(max_blocks) * nm);
        for (int64_t k = 0; k < b; k++)
            for (size_t m = 0; m < nm; m++) {
                BlockId id = pool_.lookup(int32_t(m), h[k]);
                pool_.acquire(id);
                held.push_back(id);
            }
    }
    try {
        std::vector<uint8_t> framed;
        std::vector<const uint8_t*> blocks;
        for (; b < max_blocks; b++) {
            const TierKey key{h[b], tier_layout_};
            const TierSlot* from = nullptr;
            for (const auto& slot : slots) {
                if (!slot->tier->get(key, &framed)) continue;
                const uint8_t* p = nullptr;
                size_t pn = 0;
                if (tier_unframe(key, framed.data(), framed.size(), &p, &pn, nullptr) &&
                    parse_payload(p, pn, layout_, &blocks)) {
                    bool usable = true;
                    for (size_t m = 0; m < nm; m++)
                        if (!blocks[m] && layout_.managers[m].kind != LayerKind::Window) usable = false;
                    // int8 / fp8 rows: every scale finite (a NaN scale would poison every later query).
                    for (size_t m = 0; m < nm && usable; m++)
                        if (blocks[m] && !quant_scales_finite(layout_, int32_t(m), blocks[m])) usable = false;
                    if (usable) {
                        from = slot.get();
                        break;
                    }
                }
                slot->corrupt++;
                slot->tier->remove(key);
            }
            if (!from) break;
            // framed holds the winning payload; blocks point into it.
            bool stop = false;
            {
                std::lock_guard<std::mutex> lock(mu_);
                for (size_t m = 0; m < nm && !stop; m++) {
                    BlockId id = pool_.lookup(int32_t(m), h[b]);
                    if (id != kNullBlock) {
                        pool_.acquire(id);
                        held.push_back(id);
                        continue;
                    }
                    if (!blocks[m]) continue;  // a window manager's block the tier lacks
                    try {
                        id = pool_.allocate(int32_t(m));
                    } catch (const Error& e) {
                        if (e.status() != KVRT_ERR_CACHE_FULL) throw;
                        stop = true;  // the budget holds no more: what was loaded stays
                        break;
                    }
                    std::memcpy(pool_.mem(id), blocks[m], layout_.managers[m].block_bytes);
                    pool_.publish(id, h[b]);
                    held.push_back(id);
                }
                if (!stop) {
                    persisted_.insert(h[b]);
                    add_child_locked(b > 0 ? h[b - 1] : hash_root(), extra, h[b], tokens + b * bt);
                }
            }
            if (stop) break;
            out.loaded_from.push_back(from->remote ? 1 : 0);
            const_cast<TierSlot*>(from)->loaded++;
        }
    } catch (...) {
        release_held();
        throw;
    }
    release_held();
    if (has_pending_.load(std::memory_order_relaxed)) flush_pending();
    return out;
}

std::vector<TierReport> Cache::tier_reports() const {
    std::vector<TierReport> v;
    for (const auto& slot : tier_slots()) {
        const TierStats s = slot->tier->stats();
        TierReport r;
        r.kind = slot->tier->kind();
        r.puts = s.puts;
        r.put_bytes = s.put_bytes;
        r.put_failures = s.put_failures;
        r.gets = s.gets;
        r.hits = s.hits;
        r.get_bytes = s.get_bytes;
        r.misses = s.misses;
        r.corrupt = s.corrupt + slot->corrupt.load();
        r.errors = s.errors;
        r.timeouts = s.timeouts;
        r.evictions = s.evictions;
        r.bytes_stored = s.bytes_stored;
        r.loaded_blocks = slot->loaded.load();
        r.last_error = slot->tier->last_error();
        v.push_back(std::move(r));
    }
    return v;
}

}  // namespace kvrt::cache
