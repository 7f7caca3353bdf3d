// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

#include "cache/cache.hpp"

#include "util/log.hpp"
#include "cache/sequence.hpp"

#include "util/error.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <unordered_set>

namespace kvrt::cache {

namespace {
constexpr int64_t kMaxPositions = std::numeric_limits<int32_t>::max();

std::vector<size_t> block_sizes(const ResolvedLayout& l) {
    std::vector<size_t> v;
    for (const ManagerSpec& m : l.managers) v.push_back(m.block_bytes);
    return v;
}
std::string seq_name(SeqId id) { return "sequence " + std::to_string(id); }
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
// XORed into a tail block's hash (publish_tail_locked): "tail" in ASCII.
constexpr uint64_t kTailHashTag = 0x7461696cull << 32;
// reserve() to exactly n reallocates on every growth step: a one-token append
// would copy the whole token vector (O(length) per decode step). Grow geometrically.
template <class Vec>
void reserve_for(Vec& v, size_t n) {
    if (v.capacity() < n) v.reserve(std::max(n, v.capacity() * 2));
}
}  // namespace


Cache::Cache(const CacheConfig& cfg)
    : layout_(resolve_layout(cfg)), pool_(block_sizes(layout_), cfg.budget_bytes, cfg.large_pages) {
    pool_.on_evict = [this](BlockId id) { on_evict_locked(id); };  // sub-block records; tiers once added
    tails_ = true;
    for (const ManagerSpec& m : layout_.managers)
        tails_ = tails_ && (m.kind == LayerKind::Full || m.kind == LayerKind::Window);
    kvrt::log::at(kvrt::log::Info, [&] {
        const memory::Arena& a = pool_.arena();
        return "cache: budget " + std::to_string(cfg.budget_bytes >> 20) + " MiB over " +
               std::to_string(layout_.layers.size()) + " layers, blocks of " + std::to_string(layout_.block_tokens) +
               " tokens; " +
               (a.dedicated() ? "a dedicated arena of " + std::to_string(a.reserved_bytes() >> 20) +
                                    " MiB of address space (committed on use)"
                              : std::string("no dedicated arena could be reserved: blocks come from the default heap"));
    });
}

Cache::~Cache() = default;

Cache::Sequence& Cache::get(SeqId id, const char* what) {
    return const_cast<Sequence&>(static_cast<const Cache*>(this)->get(id, what));
}

const Cache::Sequence& Cache::get(SeqId id, const char* what) const {
    auto it = seqs_.find(id);
    if (it == seqs_.end()) {
        if (id != 0 && id < next_id_) fail(KVRT_ERR_NOT_FOUND, std::string(what) + ": " + seq_name(id) + " was released");
        fail(KVRT_ERR_NOT_FOUND, std::string(what) + ": " + seq_name(id) + " does not exist in this cache");
    }
    return *it->second;
}

const LayerGeometry& Cache::geometry(int32_t layer) const {
    KVRT_CHECK(layer >= 0 && layer < n_layers(), KVRT_ERR_OUT_OF_RANGE,
               "layer " + std::to_string(layer) + " is outside [0, " + std::to_string(n_layers()) + ")");
    return layout_.geometry[layer];
}

void Cache::set_entry(Sequence& s, int32_t m, int64_t b, BlockId id) {
    s.tables[m][b] = id;
    s.ptrs[m][b] = pool_.mem(id);
}

// ---- sequences ----------------------------------------------------------------

SeqId Cache::create_sequence(const SeqKeys& keys) {
    auto s = std::make_unique<Sequence>();
    s->keys = keys;
    s->extra = hash_extra_keys(keys);
    s->tables.resize(layout_.managers.size());
    s->ptrs.resize(layout_.managers.size());
    std::lock_guard<std::mutex> lock(mu_);
    s->id = next_id_;
    seqs_.emplace(s->id, std::move(s));
    return next_id_++;
}

void Cache::release_blocks(Sequence& s, int64_t from_block) {
    // Tail blocks first, so that the LRU queue evicts the ends of prefixes
    // before their beginnings.
    int64_t nb = 0;
    for (const auto& t : s.tables) nb = std::max<int64_t>(nb, static_cast<int64_t>(t.size()));
    for (int64_t b = nb - 1; b >= from_block; b--)
        for (size_t m = 0; m < s.tables.size(); m++)
            if (b < static_cast<int64_t>(s.tables[m].size()) && s.tables[m][b] != kNullBlock)
                pool_.release(s.tables[m][b]);
    for (size_t m = 0; m < s.tables.size(); m++) {
        if (static_cast<int64_t>(s.tables[m].size()) > from_block) {
            s.tables[m].resize(from_block);
            s.ptrs[m].resize(from_block);
        }
    }
    for (int64_t& d : s.dropped) d = std::min(d, from_block);
}

void Cache::release(SeqId id) {
    std::lock_guard<std::mutex> lock(mu_);
    Sequence& s = get(id, "release");
    KVRT_CHECK(!s.pin, KVRT_ERR_INVALID_ARGUMENT, "release: " + seq_name(id) + " is a pin; use unpin");
    publish_tail_locked(s);
    release_blocks(s, 0);
    seqs_.erase(id);
}

SeqId Cache::fork(SeqId parent) {
    std::lock_guard<std::mutex> lock(mu_);
    const Sequence& p = get(parent, "fork");
    KVRT_CHECK(!p.pin, KVRT_ERR_INVALID_ARGUMENT, "fork: " + seq_name(parent) + " is a pin");
    KVRT_CHECK(p.computed == p.length(), KVRT_ERR_INVALID_STATE,
               "fork: " + seq_name(parent) + " has positions [" + std::to_string(p.computed) + ", " +
                   std::to_string(p.length()) + ") appended but not marked computed");
    auto c = std::make_unique<Sequence>(p);  // copies tokens, hashes, tables (may throw: nothing changed yet)
    c->id = next_id_;
    SeqId id = c->id;
    auto slot = seqs_.emplace(id, nullptr).first;  // the last step that can throw
    slot->second = std::move(c);
    next_id_++;
    for (const auto& t : slot->second->tables)
        for (BlockId b : t)
            if (b != kNullBlock) pool_.acquire(b);
    return id;
}

void Cache::truncate(SeqId id, int64_t p) {
    std::lock_guard<std::mutex> lock(mu_);
    Sequence& s = get(id, "truncate");
    KVRT_CHECK(!s.pin, KVRT_ERR_INVALID_ARGUMENT, "truncate: " + seq_name(id) + " is a pin");
    KVRT_CHECK(p >= 0 && p <= s.length(), KVRT_ERR_OUT_OF_RANGE,
               "truncate: position " + std::to_string(p) + " is outside [0, " + std::to_string(s.length()) + "] of " +
                   seq_name(id));
    if (p == s.length()) return;
    const int64_t bt = layout_.block_tokens;
    if (p > 0) {
        for (size_t m = 0; m < layout_.managers.size(); m++) {
            const ManagerSpec& ms = layout_.managers[m];
            if (ms.kind != LayerKind::Window) continue;
            int64_t lo = std::max<int64_t>(0, p - ms.window + 1);
            for (int64_t b = lo / bt; b < ceil_div(p, bt); b++)
                KVRT_CHECK(s.tables[m][b] != kNullBlock, KVRT_ERR_INVALID_STATE,
                           "truncate: window " + std::to_string(ms.window) + " layers of " + seq_name(id) +
                               " no longer hold position " + std::to_string(b * bt) +
                               "; truncate to 0 or to a later position");
        }
    }
    release_blocks(s, ceil_div(p, bt));
    s.tokens.resize(p);
    s.computed = std::min(s.computed, p);
    if (static_cast<int64_t>(s.hashes.size()) > p / bt) s.hashes.resize(p / bt);
}

// ---- prefix cache -------------------------------------------------------------

int64_t Cache::hit_blocks(const SeqKeys&, const Hash128& extra, const int32_t* tokens, int64_t n,
                          int64_t max_blocks, std::vector<Hash128>* hashes) const {
    const int64_t bt = layout_.block_tokens;
    std::vector<Hash128> local;
    std::vector<Hash128>& h = hashes ? *hashes : local;
    h.clear();
    if (max_blocks <= 0) return 0;
    // Full-like managers (full, bank, indexer) are prefix-closed: a hit of k
    // blocks implies every shorter hit. Hash lazily: stop at the first miss.
    int64_t H = 0;
    Hash128 parent = hash_root();
    h.reserve(max_blocks);
    for (int64_t b = 0; b < max_blocks; b++) {
        Hash128 hb = hash_block(parent, extra, tokens + b * bt, bt);
        bool ok = true;
        for (size_t m = 0; m < layout_.managers.size() && ok; m++)
            if (layout_.managers[m].kind != LayerKind::Window && pool_.lookup(int32_t(m), hb) == kNullBlock) ok = false;
        if (!ok) break;
        h.push_back(hb);
        parent = hb;
        H = b + 1;
    }
    // Window managers: a hit of k blocks needs the blocks covering
    // [k*bt - W + 1, k*bt) (what the query at position k*bt reads); earlier
    // blocks may be gone. Not prefix-closed: shrink H until every window
    // manager accepts it.
    for (bool changed = true; changed && H > 0;) {
        changed = false;
        for (size_t m = 0; m < layout_.managers.size(); m++) {
            const ManagerSpec& ms = layout_.managers[m];
            if (ms.kind != LayerKind::Window) continue;
            // run[k]: number of consecutive present blocks ending at block k-1.
            int64_t run = 0, best = 0;
            std::vector<int64_t> runs(H + 1, 0);
            for (int64_t b = 0; b < H; b++) {
                run = pool_.lookup(int32_t(m), h[b]) != kNullBlock ? run + 1 : 0;
                runs[b + 1] = run;
            }
            for (int64_t k = H; k > 0; k--) {
                int64_t lo = std::max<int64_t>(0, k * bt - ms.window + 1);
                if (runs[k] >= k - lo / bt) {
                    best = k;
                    break;
                }
            }
            if (best < H) {
                H = best;
                changed = true;
            }
        }
    }
    h.resize(H);
    return H;
}

int64_t Cache::sub_block_tail(const Hash128& extra, const int32_t* tokens, int64_t n, const std::vector<Hash128>& h,
                              Hash128* child) const {
    const int64_t bt = layout_.block_tokens;
    const int64_t H = static_cast<int64_t>(h.size());
    // Positions [H bt, n - 1): the last token is never covered (its logits are needed).
    const int64_t room = std::min<int64_t>(bt - 1, n - 1 - H * bt);
    if (room <= 0) return 0;
    size_t c = 0;
    *child = children_.longest(H > 0 ? h.back() : hash_root(), extra, tokens + H * bt, size_t(room), &c,
                               [&](const Hash128& x) { return indexed_in_all_locked(x); });
    // A window manager resuming at P = H bt + c reads [P - W + 1, P): the blocks before H that it
    // needs are among those hit_blocks checked for H bt (P - W + 1 >= H bt - W + 1), block H is
    // the child itself.
    return static_cast<int64_t>(c);
}

void Cache::attach(Sequence& s, const int32_t* tokens, int64_t H, std::vector<Hash128>&& hashes, const Hash128& child,
                   int64_t tail) {
    const int64_t bt = layout_.block_tokens;
    const int64_t P = H * bt + tail, nb = H + (tail > 0 ? 1 : 0);
    // Reserve first so that nothing below can throw half-way.
    s.dropped.assign(layout_.managers.size(), 0);
    s.tokens.reserve(P);
    for (size_t m = 0; m < layout_.managers.size(); m++) {
        s.tables[m].reserve(nb);
        s.ptrs[m].reserve(nb);
    }
    for (size_t m = 0; m < layout_.managers.size(); m++) {
        const ManagerSpec& ms = layout_.managers[m];
        int64_t first = 0;
        if (ms.kind == LayerKind::Window) first = std::max<int64_t>(0, P - ms.window + 1) / bt;
        s.tables[m].assign(nb, kNullBlock);
        s.ptrs[m].assign(nb, nullptr);
        s.dropped[m] = first;
        for (int64_t b = first; b < nb; b++) {
            BlockId id = pool_.lookup(int32_t(m), b < H ? hashes[b] : child);
            pool_.acquire(id);
            set_entry(s, int32_t(m), b, id);
        }
    }
    s.tokens.assign(tokens, tokens + P);
    s.computed = P;
    s.hashes = std::move(hashes);  // whole blocks only: the partly held block is not the sequence's
}

int64_t Cache::match_prefix(SeqId id, const int32_t* tokens, int64_t n, bool sub_block) {
    KVRT_CHECK(n >= 0 && n <= kMaxPositions, KVRT_ERR_OUT_OF_RANGE, "match_prefix: n is " + std::to_string(n));
    KVRT_CHECK(n == 0 || tokens != nullptr, KVRT_ERR_INVALID_ARGUMENT, "match_prefix: tokens is NULL");
    std::lock_guard<std::mutex> lock(mu_);
    Sequence& s = get(id, "match_prefix");
    KVRT_CHECK(!s.pin, KVRT_ERR_INVALID_ARGUMENT, "match_prefix: " + seq_name(id) + " is a pin");
    KVRT_CHECK(s.length() == 0, KVRT_ERR_INVALID_STATE,
               "match_prefix: " + seq_name(id) + " is not empty (length " + std::to_string(s.length()) + ")");
    std::vector<Hash128> hashes;
    int64_t H = hit_blocks(s.keys, s.extra, tokens, n, n > 0 ? (n - 1) / layout_.block_tokens : 0, &hashes);
    Hash128 child;
    const int64_t tail = sub_block ? sub_block_tail(s.extra, tokens, n, hashes, &child) : 0;
    attach(s, tokens, H, std::move(hashes), child, tail);
    const int64_t hit = H * layout_.block_tokens + tail;
    queried_tokens_ += static_cast<uint64_t>(n);
    hit_tokens_ += static_cast<uint64_t>(hit);
    return hit;
}

int64_t Cache::lookup_prefix(const SeqKeys& keys, const int32_t* tokens, int64_t n, bool sub_block) const {
    KVRT_CHECK(n >= 0 && n <= kMaxPositions, KVRT_ERR_OUT_OF_RANGE, "lookup_prefix: n is " + std::to_string(n));
    KVRT_CHECK(n == 0 || tokens != nullptr, KVRT_ERR_INVALID_ARGUMENT, "lookup_prefix: tokens is NULL");
    Hash128 extra = hash_extra_keys(keys);
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<Hash128> hashes;
    const int64_t H = hit_blocks(keys, extra, tokens, n, n > 0 ? (n - 1) / layout_.block_tokens : 0, &hashes);
    Hash128 child;
    return H * layout_.block_tokens + (sub_block ? sub_block_tail(extra, tokens, n, hashes, &child) : 0);
}

SeqId Cache::pin_prefix(const SeqKeys& keys, const int32_t* tokens, int64_t n, int64_t* pinned_tokens) {
    KVRT_CHECK(n >= 0 && n <= kMaxPositions, KVRT_ERR_OUT_OF_RANGE, "pin_prefix: n is " + std::to_string(n));
    KVRT_CHECK(n == 0 || tokens != nullptr, KVRT_ERR_INVALID_ARGUMENT, "pin_prefix: tokens is NULL");
    auto s = std::make_unique<Sequence>();
    s->keys = keys;
    s->extra = hash_extra_keys(keys);
    s->pin = true;
    s->tables.resize(layout_.managers.size());
    s->ptrs.resize(layout_.managers.size());
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<Hash128> hashes;
    int64_t H = hit_blocks(s->keys, s->extra, tokens, n, n / layout_.block_tokens, &hashes);
    KVRT_CHECK(H > 0, KVRT_ERR_NOT_FOUND, "pin_prefix: no whole block of these tokens is cached");
    s->id = next_id_;
    SeqId id = s->id;
    Sequence& pin = *s;
    auto slot = seqs_.emplace(id, std::move(s)).first;
    next_id_++;
    try {
        attach(pin, tokens, H, std::move(hashes));  // reserves first; only that can throw
    } catch (...) {
        seqs_.erase(slot);
        throw;
    }
    n_pins_++;
    if (pinned_tokens) *pinned_tokens = H * layout_.block_tokens;
    return id;
}

void Cache::unpin(SeqId id) {
    std::lock_guard<std::mutex> lock(mu_);
    Sequence& s = get(id, "unpin");
    KVRT_CHECK(s.pin, KVRT_ERR_INVALID_ARGUMENT, "unpin: " + seq_name(id) + " is a sequence, not a pin");
    release_blocks(s, 0);
    seqs_.erase(id);
    n_pins_--;
}

// ---- rows -----------------------------------------------------------------------

void Cache::append(SeqId id, const int32_t* tokens, int64_t n) {
    append_impl(id, tokens, n);
    if (has_pending_.load(std::memory_order_relaxed)) flush_pending();  // evicted block sets -> tiers
}

void Cache::append_impl(SeqId id, const int32_t* tokens, int64_t n) {
    KVRT_CHECK(n >= 0, KVRT_ERR_OUT_OF_RANGE, "append: n is " + std::to_string(n));
    KVRT_CHECK(n == 0 || tokens != nullptr, KVRT_ERR_INVALID_ARGUMENT, "append: tokens is NULL");
    std::lock_guard<std::mutex> lock(mu_);
    Sequence& s = get(id, "append");
    KVRT_CHECK(!s.pin, KVRT_ERR_INVALID_ARGUMENT, "append: " + seq_name(id) + " is a pin");
    if (n == 0) return;
    const int64_t old = s.length();
    KVRT_CHECK(n <= kMaxPositions - old, KVRT_ERR_OVERFLOW,
               "append: " + seq_name(id) + " would exceed 2^31-1 positions");
    const int64_t bt = layout_.block_tokens;
    const int64_t old_blocks = ceil_div(old, bt), new_blocks = ceil_div(old + n, bt);
    const size_t nm = layout_.managers.size();

    if (s.dropped.size() != nm) s.dropped.assign(nm, 0);  // may throw: nothing changed yet

    // ---- plan: bytes needed vs free + evictable (+ what the window frees).
    uint64_t need = 0, freed = 0;
    std::vector<uint8_t> cow(nm, 0);
    std::vector<int64_t> drop_end(nm, 0);
    for (size_t m = 0; m < nm; m++) {
        const ManagerSpec& ms = layout_.managers[m];
        const uint64_t bb = ms.block_bytes;
        if (old % bt != 0) {
            BlockId last = s.tables[m][old / bt];
            if (last != kNullBlock && (pool_.block(last).ref > 1 || pool_.block(last).hashed)) {
                cow[m] = 1;
                need += bb;
            }
        }
        need += bb * static_cast<uint64_t>(new_blocks - old_blocks);
        if (ms.kind == LayerKind::Window) {
            // Queries at [old, old + n) read from old - W + 1 on.
            int64_t lo = std::max<int64_t>(0, old - ms.window + 1);
            drop_end[m] = std::min<int64_t>(lo / bt, static_cast<int64_t>(s.tables[m].size()));
            for (int64_t b = s.dropped[m]; b < drop_end[m]; b++) {
                BlockId x = s.tables[m][b];
                if (x != kNullBlock && pool_.block(x).ref == 1) freed += bb;
            }
        }
    }
    const uint64_t avail = pool_.available_bytes() + freed;
    KVRT_CHECK(need <= avail, KVRT_ERR_CACHE_FULL,
               "append: " + std::to_string(n) + " positions of " + seq_name(id) + " need " + std::to_string(need) +
                   " bytes; " + std::to_string(avail) + " of the " + std::to_string(pool_.budget()) +
                   "-byte budget are free or evictable");

    // ---- commit. Reserve vectors first: from here only the arena can fail.
    reserve_for(s.tokens, size_t(old + n));
    for (size_t m = 0; m < nm; m++) {
        reserve_for(s.tables[m], size_t(new_blocks));
        reserve_for(s.ptrs[m], size_t(new_blocks));
    }
    for (size_t m = 0; m < nm; m++) {
        for (int64_t b = s.dropped[m]; b < drop_end[m]; b++)
            if (s.tables[m][b] != kNullBlock) {
                pool_.release(s.tables[m][b]);
                set_entry(s, int32_t(m), b, kNullBlock);
            }
        s.dropped[m] = std::max(s.dropped[m], drop_end[m]);
    }
    std::vector<BlockId> fresh;
    fresh.reserve(nm * static_cast<size_t>(new_blocks - old_blocks + 1));
    try {
        for (size_t m = 0; m < nm; m++) {
            if (cow[m]) fresh.push_back(pool_.allocate(int32_t(m)));
            for (int64_t b = old_blocks; b < new_blocks; b++) fresh.push_back(pool_.allocate(int32_t(m)));
        }
    } catch (...) {
        for (BlockId b : fresh) pool_.release(b);
        throw;
    }
    size_t k = 0;
    for (size_t m = 0; m < nm; m++) {
        if (cow[m]) {
            int64_t b = old / bt;
            BlockId src = s.tables[m][b], dst = fresh[k++];
            std::memcpy(pool_.mem(dst), pool_.mem(src), layout_.managers[m].block_bytes);
            pool_.release(src);
            set_entry(s, int32_t(m), b, dst);
        }
        for (int64_t b = old_blocks; b < new_blocks; b++) {
            s.tables[m].push_back(fresh[k]);
            s.ptrs[m].push_back(pool_.mem(fresh[k]));
            k++;
        }
    }
    s.tokens.insert(s.tokens.end(), tokens, tokens + n);
}

void Cache::mark_computed(SeqId id, int64_t n_positions) {
    std::lock_guard<std::mutex> lock(mu_);
    Sequence& s = get(id, "mark_computed");
    KVRT_CHECK(n_positions >= 0 && n_positions <= s.length(), KVRT_ERR_OUT_OF_RANGE,
               "mark_computed: " + std::to_string(n_positions) + " is outside [0, " + std::to_string(s.length()) +
                   "] of " + seq_name(id));
    if (n_positions <= s.computed) return;
    reserve_for(s.hashes, static_cast<size_t>(n_positions / layout_.block_tokens));
    s.computed = n_positions;
    publish_computed_locked(s);
}

void Cache::publish_computed_locked(Sequence& s) {
    const int64_t bt = layout_.block_tokens;
    const int64_t full = s.computed / bt;
    const int64_t first = static_cast<int64_t>(s.hashes.size());
    // Hashes first (capacity reserved by the caller), then publishing: if the
    // index cannot grow (bad_alloc), the blocks merely stay unshared.
    Hash128 parent = s.hashes.empty() ? hash_root() : s.hashes.back();
    for (int64_t b = first; b < full; b++) {
        Hash128 h = hash_block(parent, s.extra, s.tokens.data() + b * bt, bt);
        s.hashes.push_back(h);
        parent = h;
    }
    for (int64_t b = first; b < full; b++) {
        for (size_t m = 0; m < s.tables.size(); m++) {
            BlockId x = s.tables[m][b];
            if (x != kNullBlock && !pool_.block(x).hashed) pool_.publish(x, s.hashes[b]);
        }
        add_child_locked(b > 0 ? s.hashes[b - 1] : hash_root(), s.extra, s.hashes[b], s.tokens.data() + b * bt);
    }
}

// A released sequence's last block holds c < block_tokens computed rows. Cached whole blocks stop
// at the last full one, so without this a prompt sharing all of that sequence (a conversation's
// next turn, a document asked again) would recompute those c positions, up to block_tokens - 1 of
// them. Rows of position p depend only on tokens [0, p], so the block's first c rows serve any
// prompt whose tokens there agree: the block is published under hash_block(parent, extra, its c
// tokens) with the tail tag (an input no whole block hashes) and recorded under its parent for
// sub-block hits (which take at most c of its rows and copy the block before any write). It is
// never a whole-block hit, never a parent, and stays out of lower tiers and prefix files.
void Cache::publish_tail_locked(const Sequence& s) noexcept {
    const int64_t bt = layout_.block_tokens;
    const int64_t b = s.computed / bt, c = s.computed % bt;
    if (!tails_ || c == 0 || static_cast<int64_t>(s.hashes.size()) != b) return;
    for (const auto& table : s.tables) {
        if (b >= static_cast<int64_t>(table.size())) return;
        const BlockId x = table[static_cast<size_t>(b)];
        if (x == kNullBlock) return;
        const Block& blk = pool_.block(x);
        if (blk.ref != 1 || blk.hashed) return;  // shared (a fork, a sub-block hit's block): not this sequence's alone
    }
    const Hash128 parent = b > 0 ? s.hashes[static_cast<size_t>(b - 1)] : hash_root();
    Hash128 h = hash_block(parent, s.extra, s.tokens.data() + b * bt, static_cast<size_t>(c));
    h.hi ^= kTailHashTag;
    if (indexed_in_any_locked(h)) return;  // the same rows are cached already
    try {
        // A cached child of the same parent that starts with these c tokens (a whole block, or a
        // longer tail) already serves every hit this one could.
        size_t have = 0;
        children_.longest(parent, s.extra, s.tokens.data() + b * bt, static_cast<size_t>(c), &have,
                          [&](const Hash128& x) { return indexed_in_all_locked(x); });
        if (have == static_cast<size_t>(c)) return;
        for (const auto& table : s.tables) pool_.publish(table[static_cast<size_t>(b)], h, true);
        children_.add(parent, s.extra, h, s.tokens.data() + b * bt, static_cast<size_t>(c));
    } catch (...) {
        // Out of memory: the blocks published so far are cached and evictable; a set not indexed by
        // every manager serves no hit (indexed_in_all_locked), and eviction drops it.
    }
}

void Cache::add_child_locked(const Hash128& parent, const Hash128& extra, const Hash128& h,
                             const int32_t* tokens) noexcept {
    if (!indexed_in_any_locked(h)) return;  // (its eviction removes the record again)
    try {
        children_.add(parent, extra, h, tokens, size_t(layout_.block_tokens));
    } catch (...) {
        // Out of memory: the block serves whole-block hits only.
    }
}

bool Cache::indexed_in_any_locked(const Hash128& h) const {
    for (size_t m = 0; m < layout_.managers.size(); m++)
        if (pool_.lookup(int32_t(m), h) != kNullBlock) return true;
    return false;
}

bool Cache::indexed_in_all_locked(const Hash128& h) const {
    for (size_t m = 0; m < layout_.managers.size(); m++)
        if (pool_.lookup(int32_t(m), h) == kNullBlock) return false;
    return true;
}

uint8_t* Cache::row_ptr_locked(const Sequence& s, int32_t layer, int64_t row, bool value, bool writable) const {
    const LayerGeometry& g = geometry(layer);
    KVRT_CHECK(!(writable && g.kind == LayerKind::BankReader), KVRT_ERR_INVALID_ARGUMENT,
               "layer " + std::to_string(layer) + " is a bank reader; write its source layer " +
                   std::to_string(g.row_layer));
    const int64_t rows = ceil_div(s.length(), g.ratio);
    KVRT_CHECK(row >= 0 && row < rows, KVRT_ERR_OUT_OF_RANGE,
               "row " + std::to_string(row) + " of layer " + std::to_string(layer) + " is outside [0, " +
                   std::to_string(rows) + ") of " + seq_name(s.id));
    const int64_t b = row / g.rows_per_block;
    BlockId id = s.tables[g.manager][b];
    KVRT_CHECK(id != kNullBlock, KVRT_ERR_OUT_OF_RANGE,
               "row " + std::to_string(row) + " of layer " + std::to_string(layer) + " of " + seq_name(s.id) +
                   " was dropped by the sliding window");
    if (writable) {
        const Block& blk = pool_.block(id);
        KVRT_CHECK(blk.ref == 1 && !blk.hashed, KVRT_ERR_INVALID_STATE,
                   "row " + std::to_string(row) + " of layer " + std::to_string(layer) + " of " + seq_name(s.id) +
                       " is in a shared or prefix-cached block; its rows are immutable");
    }
    return pool_.mem(id) + (value ? g.v_offset : g.k_offset) +
           static_cast<size_t>(row % g.rows_per_block) * (value ? g.v_row_bytes : g.row_bytes);
}

uint8_t* Cache::row_mut(SeqId id, int32_t layer, int64_t row, bool value) {
    std::lock_guard<std::mutex> lock(mu_);
    return row_ptr_locked(get(id, "row"), layer, row, value, true);
}

const uint8_t* Cache::row(SeqId id, int32_t layer, int64_t row, bool value) const {
    std::lock_guard<std::mutex> lock(mu_);
    return row_ptr_locked(get(id, "row"), layer, row, value, false);
}

uint8_t* Cache::k_row_mut(SeqId id, int32_t layer, int64_t pos) {
    KVRT_CHECK(pos >= 0, KVRT_ERR_OUT_OF_RANGE, "position " + std::to_string(pos) + " is negative");
    return row_mut(id, layer, pos / geometry(layer).ratio, false);
}

uint8_t* Cache::v_row_mut(SeqId id, int32_t layer, int64_t pos) {
    KVRT_CHECK(pos >= 0, KVRT_ERR_OUT_OF_RANGE, "position " + std::to_string(pos) + " is negative");
    return row_mut(id, layer, pos / geometry(layer).ratio, true);
}

void Cache::write_rows(SeqId id, int32_t layer, int64_t first_row, int64_t n_rows, const void* k, const void* v) {
    const LayerGeometry& g = geometry(layer);
    KVRT_CHECK(k != nullptr, KVRT_ERR_INVALID_ARGUMENT, "k is NULL");
    KVRT_CHECK(!(g.separate_v && v == nullptr), KVRT_ERR_INVALID_ARGUMENT,
               "v is NULL but layer " + std::to_string(layer) + " has V rows");
    KVRT_CHECK(!(!g.separate_v && v != nullptr), KVRT_ERR_INVALID_ARGUMENT,
               "v must be NULL: layer " + std::to_string(layer) + " stores one row as both K and V");
    KVRT_CHECK(first_row >= 0 && n_rows >= 0, KVRT_ERR_OUT_OF_RANGE,
               "rows [" + std::to_string(first_row) + ", +" + std::to_string(n_rows) + ") are negative");
    std::lock_guard<std::mutex> lock(mu_);
    const Sequence& s = get(id, "write_rows");
    if (n_rows == 0) return;
    // Checks the whole range (each block once) before writing anything.
    for (int64_t r = first_row; r < first_row + n_rows; r = (r / g.rows_per_block + 1) * g.rows_per_block)
        row_ptr_locked(s, layer, r, false, true);
    row_ptr_locked(s, layer, first_row + n_rows - 1, false, true);
    for (int64_t r = 0; r < n_rows; r++) {
        std::memcpy(row_ptr_locked(s, layer, first_row + r, false, true),
                    static_cast<const uint8_t*>(k) + static_cast<size_t>(r) * g.row_bytes, g.row_bytes);
        if (g.separate_v)
            std::memcpy(row_ptr_locked(s, layer, first_row + r, true, true),
                        static_cast<const uint8_t*>(v) + static_cast<size_t>(r) * g.v_row_bytes, g.v_row_bytes);
    }
}

void Cache::read_rows(SeqId id, int32_t layer, int64_t first_row, int64_t n_rows, void* k_dst, void* v_dst) const {
    const LayerGeometry& g = geometry(layer);
    KVRT_CHECK(k_dst != nullptr, KVRT_ERR_INVALID_ARGUMENT, "k_dst is NULL");
    KVRT_CHECK(!(!g.separate_v && v_dst != nullptr), KVRT_ERR_INVALID_ARGUMENT,
               "v_dst must be NULL: layer " + std::to_string(layer) + " stores one row as both K and V");
    KVRT_CHECK(first_row >= 0 && n_rows >= 0, KVRT_ERR_OUT_OF_RANGE,
               "rows [" + std::to_string(first_row) + ", +" + std::to_string(n_rows) + ") are negative");
    std::lock_guard<std::mutex> lock(mu_);
    const Sequence& s = get(id, "read_rows");
    if (n_rows == 0) return;
    for (int64_t r = first_row; r < first_row + n_rows; r = (r / g.rows_per_block + 1) * g.rows_per_block)
        row_ptr_locked(s, layer, r, false, false);
    row_ptr_locked(s, layer, first_row + n_rows - 1, false, false);
    for (int64_t r = 0; r < n_rows; r++) {
        std::memcpy(static_cast<uint8_t*>(k_dst) + static_cast<size_t>(r) * g.row_bytes,
                    row_ptr_locked(s, layer, first_row + r, false, false), g.row_bytes);
        if (v_dst)
            std::memcpy(static_cast<uint8_t*>(v_dst) + static_cast<size_t>(r) * g.v_row_bytes,
                        row_ptr_locked(s, layer, first_row + r, true, false), g.v_row_bytes);
    }
}

std::vector<const uint8_t*> Cache::block_table(SeqId id, int32_t layer) const {
    const LayerGeometry& g = geometry(layer);
    std::lock_guard<std::mutex> lock(mu_);
    return get(id, "block_table").ptrs[g.manager];
}

PagedKV Cache::paged_view(SeqId id, int32_t layer) {
    const LayerGeometry& g = geometry(layer);
    std::lock_guard<std::mutex> lock(mu_);
    const Sequence& s = get(id, "paged_view");
    PagedKV v;
    const auto& ptrs = s.ptrs[g.manager];
    v.blocks = ptrs.data();
    v.n_blocks = static_cast<int32_t>(ptrs.size());
    v.block_tokens = g.rows_per_block;
    v.k_offset = g.k_offset;
    v.v_offset = g.v_offset;
    v.row_bytes = g.row_bytes;
    v.n_kv_heads = g.n_kv_heads;
    v.head_dim = g.head_dim;
    v.dtype = g.dtype;
    v.v_dtype = g.v_dtype;
    v.v_row_bytes = g.v_row_bytes;
    v.n_tokens = static_cast<int32_t>(ceil_div(s.length(), g.ratio));
    return v;
}

// ---- inspection -------------------------------------------------------------------

SeqInfo Cache::seq_info(SeqId id) const {
    std::lock_guard<std::mutex> lock(mu_);
    const Sequence& s = get(id, "seq_info");
    SeqInfo info;
    info.length = s.length();
    info.computed = s.computed;
    info.n_blocks = ceil_div(s.length(), layout_.block_tokens);
    info.is_pin = s.pin;
    // O(managers + window blocks): only window managers hold null entries, and
    // never below their dropped prefix.
    for (size_t m = 0; m < s.tables.size(); m++) {
        const ManagerSpec& ms = layout_.managers[m];
        const auto& t = s.tables[m];
        uint64_t live = t.size();
        if (ms.kind == LayerKind::Window) {
            const size_t from = m < s.dropped.size() ? size_t(s.dropped[m]) : 0;
            live = 0;
            for (size_t b = from; b < t.size(); b++) live += t[b] != kNullBlock;
        }
        info.bytes += live * ms.block_bytes;
        info.bytes_by_kind[static_cast<int>(ms.kind)] += live * ms.block_bytes;
    }
    return info;
}

CacheStats Cache::stats() const {
    CacheStats st;
    st.managers.reserve(layout_.managers.size());
    std::lock_guard<std::mutex> lock(mu_);
    st.budget_bytes = pool_.budget();
    st.bytes_cached = pool_.cached_bytes();
    st.bytes_in_use = pool_.used_bytes() - pool_.cached_bytes();
    st.bytes_free = pool_.budget() - pool_.used_bytes();
    st.n_pins = n_pins_;
    st.n_sequences = seqs_.size() - n_pins_;
    st.queried_tokens = queried_tokens_;
    st.hit_tokens = hit_tokens_;
    st.evictions = pool_.evictions();
    st.dedicated_arena = pool_.arena().dedicated();
    st.large_pages = pool_.arena().large_pages();
    st.arena_reserved_bytes = pool_.arena().reserved_bytes();
    for (const LayerGeometry& g : layout_.geometry) {
        KindStats& k = st.kinds[static_cast<int>(g.kind)];
        k.n_layers++;
        k.bytes_per_token += layer_bytes_per_token(g);
        st.bytes_per_token += layer_bytes_per_token(g);
    }
    for (size_t m = 0; m < layout_.managers.size(); m++) {
        const ManagerSpec& ms = layout_.managers[m];
        ManagerStats mst;
        mst.kind = ms.kind;
        mst.window = ms.window;
        mst.ratio = ms.ratio;
        mst.n_layers = static_cast<int32_t>(ms.layers.size());
        mst.block_bytes = ms.block_bytes;
        mst.padding_bytes = ms.padding_bytes;
        mst.blocks_in_use = pool_.blocks_in_use(int32_t(m));
        mst.blocks_cached = pool_.blocks_cached(int32_t(m));
        st.managers.push_back(mst);
        st.blocks_in_use += mst.blocks_in_use;
        st.blocks_cached += mst.blocks_cached;
        st.block_set_bytes += ms.block_bytes;
        KindStats& k = st.kinds[static_cast<int>(ms.kind)];
        k.blocks_in_use += mst.blocks_in_use;
        k.blocks_cached += mst.blocks_cached;
        k.bytes_in_use += mst.blocks_in_use * ms.block_bytes;
        k.bytes_cached += mst.blocks_cached * ms.block_bytes;
    }
    st.blocks_free = st.block_set_bytes ? st.bytes_free / st.block_set_bytes : 0;
    return st;
}

void Cache::check_invariants() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<int32_t> refs(pool_.n_block_slots(), 0);
    const int64_t bt = layout_.block_tokens;
    for (const auto& entry : seqs_) {
        const SeqId id = entry.first;  // a named copy: clang < 16 cannot capture structured bindings
        const Sequence& s = *entry.second;
        std::unordered_set<BlockId> mine;
        auto bad = [&](const std::string& what) { fail(KVRT_ERR_INTERNAL, seq_name(id) + ": " + what); };
        if (s.computed > s.length()) bad("computed > length");
        if (static_cast<int64_t>(s.hashes.size()) != s.computed / bt) bad("hash count != full computed blocks");
        if (!s.dropped.empty() && s.dropped.size() != s.tables.size()) bad("dropped hints != managers");
        for (size_t m = 0; m < s.dropped.size(); m++) {
            if (s.dropped[m] < 0 || s.dropped[m] > static_cast<int64_t>(s.tables[m].size())) bad("dropped hint out of range");
            for (int64_t b = 0; b < s.dropped[m] && b < static_cast<int64_t>(s.tables[m].size()); b++)
                if (s.tables[m][b] != kNullBlock) bad("live block below the dropped hint");
        }
        for (size_t m = 0; m < s.tables.size(); m++) {
            if (static_cast<int64_t>(s.tables[m].size()) != ceil_div(s.length(), bt)) bad("table size != blocks");
            for (size_t b = 0; b < s.tables[m].size(); b++) {
                BlockId x = s.tables[m][b];
                if (s.ptrs[m][b] != pool_.mem(x)) bad("pointer table out of sync");
                if (x == kNullBlock) {
                    if (layout_.managers[m].kind != LayerKind::Window) bad("null block outside a window manager");
                    continue;
                }
                if (!mine.insert(x).second) bad("block " + std::to_string(x) + " owned twice");
                if (pool_.block(x).manager != int32_t(m)) bad("block of another manager in the table");
                if (pool_.block(x).hashed && int64_t(b) < int64_t(s.hashes.size()) && pool_.block(x).hash != s.hashes[b])
                    bad("block hash differs from the sequence's chained hash");
                refs[x]++;
            }
        }
    }
    children_.for_each([&](const Hash128& h, const Hash128&, const std::vector<int32_t>&) {
        if (!indexed_in_any_locked(h)) fail(KVRT_ERR_INTERNAL, "cache: a sub-block record outlives its block set's index entries");
    });
    pool_.check(refs);
}

}  // namespace kvrt::cache
