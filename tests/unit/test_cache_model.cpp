// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Randomized model-based test of the cache manager: 120,000 random
// operations checked against a simple reference model.
//
// After every operation: every invariant of the pool (counts add up, no block
// owned twice, reference counts equal the number of owners, LRU queue and
// index consistent: Cache::check_invariants) and the reference's lengths and
// computed counts. Rows carry values derived from (token prefix, position,
// layer), so a block attached from the prefix cache or copied on write is
// checked for the right content. Phase "exact" (budget never reached, layers
// that are prefix-closed): every lookup/match hit equals the reference's
// longest cached prefix rounded down to blocks. Phase "evicting" (small
// budget, window layers too): hits never exceed that, CACHE_FULL changes
// nothing, contents stay right.
#include <doctest/doctest.h>

#include "cache/cache.hpp"
#include "util/error.hpp"

#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

using namespace kvrt;
using namespace kvrt::cache;

namespace {

struct RefSeq {
    std::vector<int32_t> toks;
    std::vector<uint64_t> ph;  // rolling hash of the prefix ending at each position
    int64_t computed = 0;
    int salt = 0;
    int doc = 0;
};

uint64_t mix(uint64_t h, uint64_t x) {
    h ^= x + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdull;
    return h ^ (h >> 33);
}

class Model {
public:
    Model(const CacheConfig& cfg, bool exact, uint64_t seed)
        : cache_(std::make_unique<Cache>(cfg)), cfg_(cfg), exact_(exact), rng_(seed) {
        bt_ = cfg.block_tokens;
        for (int d = 0; d < 3; d++) {
            std::vector<int32_t> doc(400);
            for (auto& t : doc) t = static_cast<int32_t>(rng_() % 50);
            docs_.push_back(doc);
        }
    }

    void step() {
        uint64_t r = rng_() % 100;
        last_op_ = int(r);
        if (seqs_.size() < 2 || r < 8) op_create();
        else if (r < 16) op_release();
        else if (r < 40) op_append();
        else if (r < 62) op_compute();
        else if (r < 68) op_fork();
        else if (r < 76) op_truncate();
        else if (r < 88) op_match();
        else if (r < 94) op_lookup();
        else op_pin();
        if (seqs_.size() > 10) op_release();
        cache_->check_invariants();
        for (auto& [id, s] : seqs_) {
            SeqInfo i = cache_->seq_info(id);
            if (i.length != static_cast<int64_t>(s.toks.size()) || i.computed != s.computed) {
                REQUIRE(i.length == static_cast<int64_t>(s.toks.size()));
                REQUIRE(i.computed == s.computed);
            }
            // seq_info's bytes (kept O(1) per step, not a walk) equal a walk of the block tables.
            if (i.bytes != walked_bytes(id)) REQUIRE(i.bytes == walked_bytes(id));
        }
        CacheStats st = cache_->stats();
        if (st.bytes_free + st.bytes_cached + st.bytes_in_use != st.budget_bytes || (exact_ && st.evictions != 0)) {
            REQUIRE(st.bytes_free + st.bytes_cached + st.bytes_in_use == st.budget_bytes);
            REQUIRE((!exact_ || st.evictions == 0));
        }
    }

    int64_t hits = 0, full_errors = 0, ops_checked = 0;
    std::unique_ptr<Cache> cache_;

    // A fresh cache and reference (bounds the never-evicted blocks of the exact phase).
    void restart() {
        cache_ = std::make_unique<Cache>(cfg_);
        seqs_.clear();
        pins_.clear();
        cached_[0].clear();
        cached_[1].clear();
    }

private:
    uint64_t walked_bytes(uint64_t id) const {
        const CacheStats st = cache_->stats();
        std::set<int32_t> seen;
        uint64_t bytes = 0;
        for (int32_t l = 0; l < cache_->n_layers(); l++) {
            const int32_t m = cache_->geometry(l).manager;
            if (!seen.insert(m).second) continue;
            for (const uint8_t* p : cache_->block_table(id, l))
                if (p) bytes += st.managers[m].block_bytes;
        }
        return bytes;
    }
    SeqKeys keys(int salt) const {
        SeqKeys k;
        if (salt) k.salt = "tenant-" + std::to_string(salt);
        return k;
    }
    uint64_t pick() {
        auto it = seqs_.begin();
        std::advance(it, rng_() % seqs_.size());
        return it->first;
    }
    static void extend_ph(RefSeq& s, size_t from) {
        s.ph.resize(s.toks.size());
        for (size_t p = from; p < s.toks.size(); p++) s.ph[p] = mix(p ? s.ph[p - 1] : 0x1234, uint64_t(s.toks[p]));
    }
    // Longest reference-cached prefix in blocks (at most max_blocks).
    int64_t ref_hit(int salt, const std::vector<int32_t>& t, int64_t max_blocks) const {
        int64_t k = 0;
        while (k < max_blocks && cached_[salt].count(std::vector<int32_t>(t.begin(), t.begin() + (k + 1) * bt_))) k++;
        return k * bt_;
    }
    // The sub-block extension of a hit of H tokens (whole blocks): the longest common prefix of
    // t[H, n - 1) with block H of a reference-cached prefix that agrees with t before H, < bt.
    int64_t ref_tail(int salt, const std::vector<int32_t>& t, int64_t n, int64_t H) const {
        const int64_t room = std::min<int64_t>(bt_ - 1, n - 1 - H);
        int64_t best = 0;
        if (room <= 0) return 0;
        for (const auto& c : cached_[salt]) {
            if (int64_t(c.size()) != H + bt_ || !std::equal(c.begin(), c.begin() + H, t.begin())) continue;
            int64_t k = 0;
            while (k < room && c[size_t(H + k)] == t[size_t(H + k)]) k++;
            best = std::max(best, k);
        }
        return best;
    }
    std::vector<int32_t> prompt(int doc, int64_t n) {
        std::vector<int32_t> t(docs_[doc].begin(), docs_[doc].begin() + n);
        if (rng_() % 4 == 0 && n > 0) t[rng_() % n] = 999;  // an edit somewhere
        return t;
    }

    void op_create() {
        RefSeq s;
        s.salt = int(rng_() % 2);
        uint64_t id = cache_->create_sequence(keys(s.salt));
        s.doc = int(rng_() % 3);
        seqs_[id] = s;
    }
    void op_release() {
        if (seqs_.empty()) return;
        uint64_t id = pick();
        cache_->release(id);
        seqs_.erase(id);
        bool threw = false;
        try {
            cache_->release(id);
        } catch (const Error& e) {
            threw = e.status() == KVRT_ERR_NOT_FOUND;
        }
        REQUIRE(threw);
    }
    void op_append() {
        uint64_t id = pick();
        RefSeq& s = seqs_[id];
        int64_t n = 1 + int64_t(rng_() % (2 * bt_ + 1));
        if (s.toks.size() + n > 160) return;
        std::vector<int32_t> t(n);
        for (int64_t i = 0; i < n; i++) {
            size_t p = s.toks.size() + i;
            // Mostly the sequence's document (so prefixes are shared), sometimes a
            // divergence (fewer in the exact phase: its cached blocks are never evicted).
            t[i] = rng_() % (exact_ ? 60 : 10) == 0 ? int32_t(rng_() % 50) : docs_[s.doc][p];
        }
        CacheStats before = cache_->stats();
        try {
            cache_->append(id, t.data(), n);
        } catch (const Error& e) {
            REQUIRE(e.status() == KVRT_ERR_CACHE_FULL);
            REQUIRE(!exact_);
            CacheStats after = cache_->stats();
            REQUIRE(after.bytes_in_use == before.bytes_in_use);
            REQUIRE(after.bytes_cached == before.bytes_cached);
            REQUIRE(after.evictions == before.evictions);
            full_errors++;
            return;
        }
        size_t from = s.toks.size();
        s.toks.insert(s.toks.end(), t.begin(), t.end());
        extend_ph(s, from);
    }
    uint64_t row_value(const RefSeq& s, int32_t layer, int64_t row, int64_t upto) const {
        const LayerGeometry& g = cache_->geometry(layer);
        int64_t last = std::min<int64_t>(row * g.ratio + g.ratio - 1, upto - 1);
        return mix(s.ph[last], uint64_t(layer) * 7919 + uint64_t(last));
    }
    // Writes the rows of positions [computed, n) as a runtime would, then marks them.
    void compute(uint64_t id, RefSeq& s, int64_t n) {
        for (int32_t l = 0; l < cache_->n_layers(); l++) {
            const LayerGeometry& g = cache_->geometry(l);
            if (g.kind == LayerKind::BankReader) continue;
            PagedKV v = cache_->paged_view(id, l);
            for (int64_t p = s.computed; p < n; p++) {
                int64_t row = p / g.ratio;
                if (v.blocks[row / g.rows_per_block] == nullptr) continue;  // a window dropped it
                uint64_t val = row_value(s, l, row, p + 1);
                std::memcpy(cache_->row_mut(id, l, row, false), &val, 8);
                if (g.separate_v) {
                    val ^= 1;
                    std::memcpy(cache_->row_mut(id, l, row, true), &val, 8);
                }
            }
        }
        cache_->mark_computed(id, n);
        s.computed = std::max(s.computed, n);
        for (int64_t b = 0; b < s.computed / bt_; b++)
            cached_[s.salt].insert(std::vector<int32_t>(s.toks.begin(), s.toks.begin() + (b + 1) * bt_));
    }
    void op_compute() {
        uint64_t id = pick();
        RefSeq& s = seqs_[id];
        int64_t len = int64_t(s.toks.size());
        if (len == s.computed) return;
        int64_t n = s.computed + 1 + int64_t(rng_() % (len - s.computed));
        compute(id, s, n);
        if (rng_() % 8 == 0) verify(id, s);
    }
    // Every readable computed row holds the value its prefix implies.
    void verify(uint64_t id, const RefSeq& s) {
        ops_checked++;
        for (int32_t l = 0; l < cache_->n_layers(); l++) {
            const LayerGeometry& g = cache_->geometry(l);
            PagedKV v = cache_->paged_view(id, l);
            // Closed groups only: an open group's row is rewritten when it closes
            // (after a truncation it still holds the old group's value).
            int64_t rows = s.computed / g.ratio;
            for (int64_t row = 0; row < rows; row++) {
                if (v.blocks[row / g.rows_per_block] == nullptr) continue;
                uint64_t got, want = row_value(s, g.row_layer, row, s.computed);
                std::memcpy(&got, v.k_row(row), 8);
                if (got != want) {
                    MESSAGE("seq " << id << " layer " << l << " row " << row << " computed " << s.computed);
                    REQUIRE(got == want);
                }
                if (g.separate_v) {
                    std::memcpy(&got, v.v_row(row), 8);
                    if (got != (want ^ 1)) REQUIRE(got == (want ^ 1));
                }
            }
        }
    }
    void op_fork() {
        uint64_t id = pick();
        RefSeq& s = seqs_[id];
        if (s.computed != int64_t(s.toks.size())) {
            bool threw = false;
            try {
                cache_->fork(id);
            } catch (const Error& e) {
                threw = e.status() == KVRT_ERR_INVALID_STATE;
            }
            REQUIRE(threw);
            return;
        }
        uint64_t c = cache_->fork(id);
        seqs_[c] = seqs_[id];
        verify(c, seqs_[c]);
    }
    void op_truncate() {
        uint64_t id = pick();
        RefSeq& s = seqs_[id];
        int64_t p = int64_t(rng_() % (s.toks.size() + 1));
        try {
            cache_->truncate(id, p);
        } catch (const Error& e) {
            REQUIRE(e.status() == KVRT_ERR_INVALID_STATE);  // a window already dropped what p needs
            REQUIRE(p > 0);
            p = 0;
            cache_->truncate(id, 0);
        }
        s.toks.resize(p);
        s.ph.resize(p);
        s.computed = std::min(s.computed, p);
    }
    void op_match() {
        int salt = int(rng_() % 2), doc = int(rng_() % 3);
        int64_t n = int64_t(rng_() % 160);
        std::vector<int32_t> t = prompt(doc, n);
        uint64_t id = cache_->create_sequence(keys(salt));
        const bool sub = rng_() % 2 == 0;  // a context's hit (to the first changed token) or whole blocks
        int64_t hit = cache_->match_prefix(id, t.data(), n, sub);
        int64_t want = ref_hit(salt, t, n > 0 ? (n - 1) / bt_ : 0);
        if (sub) want += ref_tail(salt, t, n, want);
        if (!sub) REQUIRE(hit % bt_ == 0);
        if (exact_) REQUIRE(hit == want);
        else if (!sub) REQUIRE(hit <= want);
        hits += hit;
        RefSeq s;
        s.salt = salt;
        s.doc = doc;
        s.toks.assign(t.begin(), t.begin() + hit);
        extend_ph(s, 0);
        s.computed = hit;
        seqs_[id] = s;
        verify(id, seqs_[id]);
    }
    void op_lookup() {
        int salt = int(rng_() % 2), doc = int(rng_() % 3);
        int64_t n = int64_t(rng_() % 160);
        std::vector<int32_t> t = prompt(doc, n);
        const bool sub = rng_() % 2 == 0;
        int64_t hit = cache_->lookup_prefix(keys(salt), t.data(), n, sub);
        int64_t want = ref_hit(salt, t, n > 0 ? (n - 1) / bt_ : 0);
        if (sub) want += ref_tail(salt, t, n, want);
        if (!exact_ && sub) return;  // the sub-block part may exceed an inexact reference's bound
        if (exact_) REQUIRE(hit == want);
        else REQUIRE(hit <= want);
    }
    void op_pin() {
        if (!pins_.empty() && rng_() % 2) {
            cache_->unpin(pins_.back());
            pins_.pop_back();
            return;
        }
        if (pins_.size() >= 2) return;
        int salt = int(rng_() % 2), doc = int(rng_() % 3);
        int64_t n = int64_t(rng_() % 100);
        std::vector<int32_t> t = prompt(doc, n);
        int64_t want = ref_hit(salt, t, n / bt_);
        int64_t pinned = 0;
        try {
            pins_.push_back(cache_->pin_prefix(keys(salt), t.data(), n, &pinned));
        } catch (const Error& e) {
            REQUIRE(e.status() == KVRT_ERR_NOT_FOUND);
            if (exact_) REQUIRE(want == 0);
            return;
        }
        if (exact_) REQUIRE(pinned == want);
        else REQUIRE(pinned <= want);
    }

    CacheConfig cfg_;
    bool exact_;
    std::mt19937_64 rng_;
    int64_t bt_ = 0;
    int last_op_ = 0;
    std::vector<std::vector<int32_t>> docs_;
    std::map<uint64_t, RefSeq> seqs_;
    std::vector<uint64_t> pins_;
    std::set<std::vector<int32_t>> cached_[2];
};

LayerSpec spec(LayerKind k, int heads, int dim, int window = 0, int ratio = 1, int source = -1) {
    LayerSpec s;
    s.kind = k;
    s.n_kv_heads = heads;
    s.head_dim = dim;
    s.dtype = DType::F32;
    s.window = window;
    s.ratio = ratio;
    s.source = source;
    return s;
}

}  // namespace

TEST_CASE("cache model-based: 60000 random operations where the budget is never reached: hits are exact") {
    CacheConfig cfg;
    cfg.block_tokens = 4;
    cfg.budget_bytes = 64ull << 20;
    cfg.layers = {spec(LayerKind::Full, 1, 2), spec(LayerKind::Full, 1, 2), spec(LayerKind::BankSource, 1, 2, 0, 2),
                  spec(LayerKind::IndexerKeys, 1, 2, 0, 0, 2), spec(LayerKind::BankReader, 0, 0, 0, 0, 2)};
    Model m(cfg, true, 20261129);
    for (int i = 0; i < 60000; i++) {
        if (i % 3000 == 2999) m.restart();
        m.step();
    }
    CHECK(m.hits > 0);
    CHECK(m.cache_->stats().evictions == 0);
}

TEST_CASE("cache model-based: 60000 random operations with eviction and sliding windows") {
    CacheConfig cfg;
    cfg.block_tokens = 4;
    cfg.layers = {spec(LayerKind::Full, 1, 2), spec(LayerKind::Window, 1, 2, 6), spec(LayerKind::Window, 1, 2, 11),
                  spec(LayerKind::BankSource, 1, 4, 0, 4), spec(LayerKind::BankReader, 0, 0, 0, 0, 3)};
    // Block bytes (each K/V region padded to 64): full 128, windows 128 + 128, bank 64 = 448
    // per block set; room for 30 block sets (120 positions) while 10 sequences hold up to 160 each.
    cfg.budget_bytes = 30 * 448;
    Model m(cfg, false, 424242);
    for (int i = 0; i < 60000; i++) m.step();
    CacheStats st = m.cache_->stats();
    CHECK(st.evictions > 0);
    CHECK(m.full_errors > 0);
    CHECK(m.hits > 0);
}
