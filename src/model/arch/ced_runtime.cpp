// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

#include "model/arch/ced_runtime.hpp"

#include "model/arch/ced_runtime_seq.hpp"

#include "kernels/attention.hpp"
#include "kernels/indexer.hpp"
#include "kernels/rms_norm.hpp"
#include "kernels/rope.hpp"
#include "util/dtype.hpp"
#include "util/error.hpp"
#include "util/kv_quant.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace kvrt::ced {


namespace {
constexpr const char* kSaltExact = "ced/exact";
constexpr const char* kSaltCed = "ced/ced-prefill";
}  // namespace

DType CedRuntime::bank_dtype_for(DType cache_dtype, std::optional<DType> bank_dtype) {
    if (bank_dtype) return *bank_dtype;
    return cache_dtype == DType::F32 || cache_dtype == DType::BF16 || cache_dtype == DType::F16 ? cache_dtype
                                                                                                  : DType::F16;
}

cache::CacheConfig CedRuntime::bank_layout(const CedConfig& c, int32_t block_tokens, DType dtype) {
    cache::CacheConfig cc;
    cc.block_tokens = block_tokens;
    for (int32_t s = 0; s < c.n_sources(); s++) {
        cache::LayerSpec b;
        b.kind = cache::LayerKind::BankSource;
        b.n_kv_heads = 1;
        b.head_dim = c.entry_dim;
        b.dtype = dtype;
        b.ratio = c.source_ratios[s];
        cc.layers.push_back(b);
        cache::LayerSpec k;
        k.kind = cache::LayerKind::IndexerKeys;
        k.n_kv_heads = 1;
        k.head_dim = c.idx_dim;
        k.dtype = dtype;
        k.source = 2 * s;
        cc.layers.push_back(k);
    }
    return cc;
}

cache::CacheConfig CedRuntime::window_layout(const CedConfig& c, int32_t block_tokens, DType dtype) {
    cache::CacheConfig cc;
    cc.block_tokens = block_tokens;
    for (int32_t l = 0; l < c.n_layers; l++) {
        cache::LayerSpec w;
        w.kind = cache::LayerKind::Window;
        w.n_kv_heads = 1;
        w.head_dim = c.entry_dim;
        w.dtype = dtype;
        w.window = c.window;
        w.shared_kv = true;
        cc.layers.push_back(w);
    }
    return cc;
}

CedRuntime::CedRuntime(std::shared_ptr<const CedWeights> w, const CedRuntimeOptions& opt, uint64_t fp_lo,
                       uint64_t fp_hi)
    : w_(std::move(w)), c_(w_->cfg), opt_(opt), fp_lo_(fp_lo), fp_hi_(fp_hi) {
    KVRT_CHECK(opt_.chunk >= 1, KVRT_ERR_INVALID_ARGUMENT, "ced runtime: chunk must be >= 1");
    const DType wdt = opt_.cache_dtype, bdt = bank_dtype_for(opt_.cache_dtype, opt_.bank_dtype);
    KVRT_CHECK(wdt == DType::F32 || wdt == DType::BF16 || wdt == DType::F16 || wdt == DType::I8 ||
                   wdt == DType::FP8_E4M3,
               KVRT_ERR_INVALID_ARGUMENT,
               std::string("ced runtime: window rows must be f32, bf16, f16, int8 or fp8, not ") + dtype_name(wdt));
    KVRT_CHECK(bdt == DType::F32 || bdt == DType::BF16 || bdt == DType::F16 || bdt == DType::FP4,
               KVRT_ERR_INVALID_ARGUMENT,
               std::string("ced runtime: bank rows and indexer keys must be f32, bf16, f16 or fp4, not ") +
                   dtype_name(bdt));
    for (int32_t r : c_.source_ratios)
        KVRT_CHECK(opt_.block_tokens % r == 0, KVRT_ERR_INVALID_ARGUMENT,
                   "ced runtime: block_tokens " + std::to_string(opt_.block_tokens) +
                       " is not a multiple of bank ratio " + std::to_string(r));
    cache::CacheConfig b = bank_layout(c_, opt_.block_tokens, bdt);
    b.budget_bytes = opt_.bank_budget_bytes;
    banks_ = std::make_shared<cache::Cache>(b);
    cache::CacheConfig wl = window_layout(c_, opt_.block_tokens, opt_.cache_dtype);
    wl.budget_bytes = opt_.window_budget_bytes;
    windows_ = std::make_shared<cache::Cache>(wl);
    last_sel_.assign(c_.n_layers, {});
}

CedRuntime::~CedRuntime() = default;

cache::SeqKeys CedRuntime::keys(const std::string& salt) const {
    cache::SeqKeys k;
    k.fingerprint_lo = fp_lo_;
    k.fingerprint_hi = fp_hi_;
    k.salt = opt_.salt + "\x1f" + salt;
    return k;
}

CedRuntime::Seq& CedRuntime::get(SeqId id) {
    auto it = seqs_.find(id);
    KVRT_CHECK(it != seqs_.end(), KVRT_ERR_NOT_FOUND, "ced runtime: no sequence " + std::to_string(id));
    return *it->second;
}
const CedRuntime::Seq& CedRuntime::get(SeqId id) const {
    auto it = seqs_.find(id);
    KVRT_CHECK(it != seqs_.end(), KVRT_ERR_NOT_FOUND, "ced runtime: no sequence " + std::to_string(id));
    return *it->second;
}

CedRuntime::SeqId CedRuntime::create() {
    auto s = std::make_unique<Seq>();
    s->fixed.assign(c_.n_sources(), 0);
    s->tail_kv.assign(c_.n_sources(), {});
    s->tail_gate.assign(c_.n_sources(), {});
    SeqId id = next_id_++;
    seqs_.emplace(id, std::move(s));
    return id;
}

void CedRuntime::release(SeqId id) {
    Seq& s = get(id);
    if (s.bank) banks_->release(s.bank);
    if (s.win) windows_->release(s.win);
    seqs_.erase(id);
}

CedRuntime::SeqId CedRuntime::fork(SeqId id) {
    const Seq& s = get(id);
    auto c = std::make_unique<Seq>(s);
    c->bank = c->win = 0;
    if (s.bank) c->bank = banks_->fork(s.bank);
    try {
        if (s.win) c->win = windows_->fork(s.win);
    } catch (...) {
        if (c->bank) banks_->release(c->bank);
        throw;
    }
    SeqId nid = next_id_++;
    seqs_.emplace(nid, std::move(c));
    return nid;
}

PagedKV CedRuntime::bank_view(SeqId id, int32_t source) {
    KVRT_CHECK(source >= 0 && source < c_.n_sources(), KVRT_ERR_OUT_OF_RANGE, "ced bank_view: no such source");
    return banks_->paged_view(get(id).bank, bank_layer(source));
}

PagedKV CedRuntime::indexer_view(SeqId id, int32_t source) {
    KVRT_CHECK(source >= 0 && source < c_.n_sources(), KVRT_ERR_OUT_OF_RANGE, "ced indexer_view: no such source");
    return banks_->paged_view(get(id).bank, idx_layer(source));
}

int64_t CedRuntime::length(SeqId id) const { return static_cast<int64_t>(get(id).tokens.size()); }

const std::vector<int32_t>& CedRuntime::tokens(SeqId id) const { return get(id).tokens; }

uint64_t CedRuntime::bytes(SeqId id) const {
    const Seq& s = get(id);
    uint64_t b = 0;
    if (s.bank) b += banks_->seq_info(s.bank).bytes;
    if (s.win) b += windows_->seq_info(s.win).bytes;
    return b;
}

void CedRuntime::truncate(SeqId id, int64_t p) {
    Seq& s = get(id);
    const int64_t len = static_cast<int64_t>(s.tokens.size());
    KVRT_CHECK(p >= 0 && p <= len, KVRT_ERR_OUT_OF_RANGE,
               "ced truncate: position " + std::to_string(p) + " is outside [0, " + std::to_string(len) + "]");
    if (p == len) return;
    if (p > 0) {
        for (int32_t i = 0; i < c_.n_sources(); i++) {
            const int64_t r = c_.source_ratios[i];
            const int64_t open = (len / r) * r;  // first position of the open group
            KVRT_CHECK(p % r == 0 || p >= open, KVRT_ERR_INVALID_STATE,
                       "ced truncate: position " + std::to_string(p) + " cuts a closed group of ratio " +
                           std::to_string(r) + " whose raw rows are gone; truncate to a multiple of " +
                           std::to_string(r));
        }
        KVRT_CHECK(p > s.dec_start, KVRT_ERR_INVALID_STATE,
                   "ced truncate: the decoder never ran before position " + std::to_string(s.dec_start) +
                       " (CED prefill); truncate to a later position or to 0");
        windows_->truncate(s.win, p);  // throws INVALID_STATE (nothing changed) when the windows lack rows
    } else if (s.win) {
        windows_->truncate(s.win, 0);
    }
    if (s.bank) banks_->truncate(s.bank, p);
    s.bank_len = std::min(s.bank_len, p);
    s.win_len = std::min(s.win_len, p);
    const size_t D = c_.entry_dim;
    for (int32_t i = 0; i < c_.n_sources(); i++) {
        const int64_t r = c_.source_ratios[i];
        const int64_t open = (p / r) * r;
        const int64_t old_open = (len / r) * r;
        size_t keep = (p % r == 0 || open != old_open) ? 0 : size_t(p - open);
        s.tail_kv[i].resize(keep * D);
        s.tail_gate[i].resize(keep * D);
        s.fixed[i] = std::min<int64_t>(s.fixed[i], p / r);
    }
    s.tokens.resize(p);
    s.dec_next = std::min(s.dec_next, p);
    if (p == 0) s.dec_start = s.dec_next = s.enc_floor = s.dec_floor = 0;
}


// ---- prefill ------------------------------------------------------------------

PrefillResult CedRuntime::prefill(SeqId id, const int32_t* tokens, int64_t n, PrefillMode mode, Resume resume) {
    Seq& s = get(id);
    KVRT_CHECK(s.tokens.empty(), KVRT_ERR_INVALID_STATE, "ced prefill: the sequence is not empty");
    KVRT_CHECK(tokens && n >= 1 && n < (int64_t(1) << 31) - 1, KVRT_ERR_INVALID_ARGUMENT,
               "ced prefill: empty prompt or NULL tokens");
    for (int64_t i = 0; i < n; i++)
        KVRT_CHECK(tokens[i] >= 0 && tokens[i] < c_.n_vocab, KVRT_ERR_OUT_OF_RANGE,
                   "ced prefill: token " + std::to_string(i) + " (" + std::to_string(tokens[i]) +
                       ") is outside the vocabulary");
    const std::string mode_salt = mode == PrefillMode::Exact ? kSaltExact : kSaltCed;
    const cache::SeqKeys bank_keys = keys("ced/bank");
    const int64_t W = c_.window;

    // ---- how much of the prompt the caches give back
    int64_t Hb = resume == Resume::Cold ? 0 : banks_->lookup_prefix(bank_keys, tokens, n);
    int64_t Hw = 0;
    if (Hb > 0 && resume != Resume::BoundedReplay && resume != Resume::Cold) {
        // A checkpoint at <= Hb. In CED mode also <= n - W: the decoder reruns
        // [n - W, n) and must not write into the checkpoint's (shared) blocks.
        int64_t cap = Hb;
        if (mode == PrefillMode::CedPrefill) cap = std::min(cap, std::max<int64_t>(0, n - W));
        if (cap > 0) Hw = windows_->lookup_prefix(keys(mode_salt), tokens, cap + 1);
    }
    int64_t H = 0;
    bool exact = false;
    // Auto prefers exactness when it recomputes no more than bounded replay
    // would (the W replayed positions, plus a block of rounding).
    if (resume == Resume::Checkpoint ||
        (resume == Resume::Auto && Hw > 0 && Hb - Hw <= W + opt_.block_tokens)) {
        H = Hw;
        exact = H > 0;
    } else if (resume != Resume::Cold) {
        H = Hb;
    }

    PrefillResult res;
    // An emptied (truncated to 0) sequence gets fresh cache sequences: the
    // window salt depends on how this prefill resumes.
    if (s.bank) banks_->release(s.bank);
    if (s.win) windows_->release(s.win);
    s.bank = s.win = 0;
    s.bank_len = s.win_len = 0;
    s.bank = banks_->create_sequence(bank_keys);
    std::string win_salt = mode_salt;
    if (H > 0 && !exact) win_salt = "ced/replayed/" + std::to_string(++replay_salt_counter_);
    s.win = windows_->create_sequence(keys(win_salt));
    try {
        if (H > 0) {
            int64_t got = banks_->match_prefix(s.bank, tokens, H + 1);
            KVRT_CHECK(got == H, KVRT_ERR_INTERNAL, "ced prefill: bank hit changed under us");
            s.bank_len = H;
            if (exact) {
                got = windows_->match_prefix(s.win, tokens, H + 1);
                KVRT_CHECK(got == H, KVRT_ERR_INTERNAL, "ced prefill: checkpoint changed under us");
                s.win_len = H;
            }
        }
        s.tokens.assign(tokens, tokens + n);
        for (int32_t i = 0; i < c_.n_sources(); i++) s.fixed[i] = H / c_.source_ratios[i];
        int64_t start = H;
        if (H > 0 && !exact) start = H - std::min(W, H);  // bounded replay
        s.enc_floor = exact ? 0 : start;
        s.dec_start = mode == PrefillMode::Exact ? start : std::max<int64_t>(0, n - W);
        s.dec_floor = mode == PrefillMode::Exact ? s.enc_floor : s.dec_start;
        s.dec_next = mode == PrefillMode::Exact ? start : s.dec_start;
        res.logits = run(s, start, n);
        res.hit = H;
        res.exact_resume = exact;
        res.replayed = exact ? 0 : H - start;
        res.computed = n - start;
        res.decoded = n - std::max(start, s.dec_start);
    } catch (...) {
        // Leave the sequence empty, as it was.
        banks_->release(s.bank);
        windows_->release(s.win);
        s.bank = s.win = 0;
        s.bank_len = s.win_len = 0;
        s.tokens.clear();
        for (auto& t : s.tail_kv) t.clear();
        for (auto& t : s.tail_gate) t.clear();
        throw;
    }
    return res;
}

std::vector<float> CedRuntime::extend(SeqId id, const int32_t* tokens, int64_t n) {
    Seq& s = get(id);
    KVRT_CHECK(!s.tokens.empty(), KVRT_ERR_INVALID_STATE, "ced extend: prefill the sequence first");
    KVRT_CHECK(tokens && n >= 1, KVRT_ERR_INVALID_ARGUMENT, "ced extend: no tokens");
    for (int64_t i = 0; i < n; i++)
        KVRT_CHECK(tokens[i] >= 0 && tokens[i] < c_.n_vocab, KVRT_ERR_OUT_OF_RANGE,
                   "ced extend: token " + std::to_string(tokens[i]) + " is outside the vocabulary");
    const int64_t a = static_cast<int64_t>(s.tokens.size());
    // What a failure must restore: the tail state (small: < r rows per source).
    const auto tail_kv = s.tail_kv, tail_gate = s.tail_gate;
    const int64_t dec_next = s.dec_next;
    s.tokens.insert(s.tokens.end(), tokens, tokens + n);
    try {
        return run(s, a, a + n);
    } catch (...) {
        // The caches may hold rows past a: cut them (rows before a are untouched).
        s.tokens.resize(a);
        s.tail_kv = tail_kv;
        s.tail_gate = tail_gate;
        s.dec_next = dec_next;
        if (s.bank_len > a) banks_->truncate(s.bank, a), s.bank_len = a;
        if (s.win_len > a) windows_->truncate(s.win, a), s.win_len = a;
        throw;
    }
}

void CedRuntime::ensure_appended(Seq& s, int64_t b) {
    if (b > s.bank_len) {
        banks_->append(s.bank, s.tokens.data() + s.bank_len, b - s.bank_len);
        s.bank_len = b;
    }
    // Window positions are appended in pieces so that a long skipped range
    // (bounded replay) never holds more than a chunk of rows.
    while (s.win_len < b) {
        const int64_t m = std::min<int64_t>(b - s.win_len, std::max(opt_.chunk, c_.window));
        windows_->append(s.win, s.tokens.data() + s.win_len, m);
        s.win_len += m;
    }
}

void CedRuntime::put_rows(cache::Cache& c, cache::SeqId seq, int32_t layer, int64_t first_row, int64_t n,
                          const float* rows, size_t dim) {
    // The layer's own type (bank rows, indexer keys and windows may differ; 4-bit indexer keys
    // are FP4_E8): one head of width dim per row, K = V.
    const cache::LayerGeometry& g = c.geometry(layer);
    if (g.dtype == DType::F32) return c.write_rows(seq, layer, first_row, n, rows, nullptr);
    std::vector<uint8_t>& b = scratch_rows_;
    b.resize(size_t(n) * g.row_bytes);
    for (int64_t r = 0; r < n; r++)
        kv_store_head(b.data() + size_t(r) * g.row_bytes, rows + size_t(r) * dim, g.dtype, static_cast<int32_t>(dim));
    c.write_rows(seq, layer, first_row, n, b.data(), nullptr);
}

std::vector<float> CedRuntime::run(Seq& s, int64_t a, int64_t n) {
    std::vector<float> logits;
    for (int64_t x = a; x < n;) {
        const int64_t b = std::min<int64_t>(n, x + opt_.chunk);
        ensure_appended(s, b);
        run_chunk(s, x, b, b == n ? &logits : nullptr);
        banks_->mark_computed(s.bank, b);  // no-op below a bank hit (already computed)
        windows_->mark_computed(s.win, b);
        if (opt_.progress && n - a > opt_.chunk && b < n &&
            !opt_.progress(static_cast<float>(b - a) / static_cast<float>(n - a), "prefill"))
            fail(KVRT_ERR_CANCELLED, "prefill cancelled by the progress callback after " + std::to_string(b - a) +
                                         " of " + std::to_string(n - a) + " tokens");
        x = b;
    }
    return logits;
}

// ---- one chunk of positions ---------------------------------------------------

void CedRuntime::matmul(const PackedWeight& w, const float* X, int64_t M, float* Y) const {
    if (opt_.use_ref_kernels) matmul_ref(w, X, M, w.cols(), Y, w.rows());
    else kvrt::matmul(w, X, M, w.cols(), Y, w.rows());
}

void CedRuntime::rms_norm(const float* x, const std::vector<float>& w, int64_t rows, int32_t dim, float* out) const {
    if (opt_.use_ref_kernels) ref::rms_norm(x, w.data(), c_.rms_eps, int32_t(rows), dim, out);
    else cpu::rms_norm(x, w.data(), c_.rms_eps, int32_t(rows), dim, out);
}

void CedRuntime::rope(float* x, int64_t n, const int32_t* pos, int32_t heads, int32_t dim, bool inverse) const {
    RopeParams rp;
    rp.n_heads = heads;
    rp.head_dim = dim;
    rp.rope_dims = c_.rope_dims;
    rp.theta = c_.rope_theta;
    rp.mode = RopeMode::Neox;
    if (opt_.use_ref_kernels) ref::rope(x, int32_t(n), pos, rp, inverse);
    else cpu::rope(x, int32_t(n), pos, rp, inverse);
}

void CedRuntime::run_chunk(Seq& s, int64_t a, int64_t b, std::vector<float>* logits) {
    const int64_t m = b - a;
    const size_t E = c_.n_embd;
    std::vector<float> X(size_t(m) * E);
    for (int64_t t = 0; t < m; t++) w_->tok_embd->dequantize_row(s.tokens[a + t], X.data() + size_t(t) * E);
    for (int32_t l = 0; l < c_.n_encoder; l++) layer(s, l, a, m, X.data());
    // The encoder's final hidden state: the decoder's input and the decoder
    // source's row projection (over every position, also in CED prefill).
    const int32_t ld = c_.decoder_source();
    {
        std::vector<float> Hn(size_t(m) * E);
        rms_norm(X.data(), w_->layers[ld].attn_norm, m, int32_t(E), Hn.data());
        build_source_rows(s, ld, a, m, Hn.data());
    }
    const int64_t d0 = std::max(s.dec_next, s.dec_start);
    if (d0 < b) {
        const int64_t dm = b - d0;
        KVRT_CHECK(d0 >= a, KVRT_ERR_INTERNAL, "ced runtime: decoder input before the chunk");
        std::vector<float> Xd(X.begin() + size_t(d0 - a) * E, X.end());
        for (int32_t l = c_.n_encoder; l < c_.n_layers; l++) layer(s, l, d0, dm, Xd.data());
        s.dec_next = b;
        if (logits) {
            std::vector<float> h(E);
            rms_norm(Xd.data() + size_t(dm - 1) * E, w_->output_norm, 1, int32_t(E), h.data());
            logits->assign(size_t(c_.n_vocab), 0.0f);
            matmul(*w_->output, h.data(), 1, logits->data());
        }
    }
}

void CedRuntime::build_source_rows(Seq& s, int32_t l, int64_t p0, int64_t n, const float* H) {
    const CedLayerWeights& L = w_->layers[l];
    const int32_t si = c_.bank_of[l];
    const int64_t r = c_.source_ratios[si];
    const size_t D = c_.entry_dim, Di = c_.idx_dim;
    // Positions of this chunk whose group is not a cached (fixed) one.
    const int64_t first = std::max<int64_t>(p0, s.fixed[si] * r);
    if (first >= p0 + n) return;
    const int64_t off = first - p0, m = p0 + n - first;
    std::vector<float> KV(size_t(m) * D);
    matmul(*L.bank_kv, H + size_t(off) * c_.n_embd, m, KV.data());
    std::vector<float> latent;  // rows of the groups completed in this chunk
    int64_t g0 = -1, ng = 0;
    if (r == 1) {
        latent.resize(size_t(m) * D);
        rms_norm(KV.data(), L.bank_norm, m, int32_t(D), latent.data());
        g0 = first;
        ng = m;
    } else {
        std::vector<float> G(size_t(m) * D);
        matmul(*L.bank_gate, H + size_t(off) * c_.n_embd, m, G.data());
        std::vector<float>& tk = s.tail_kv[si];
        std::vector<float>& tg = s.tail_gate[si];
        std::vector<float> pooled(D);
        for (int64_t t = 0; t < m; t++) {
            const int64_t p = first + t;
            tk.insert(tk.end(), KV.begin() + t * D, KV.begin() + (t + 1) * D);
            tg.insert(tg.end(), G.begin() + t * D, G.begin() + (t + 1) * D);
            if ((p + 1) % r != 0) continue;
            // Per-channel softmax(score) pooling of the group's r raw rows, in position order.
            for (size_t d = 0; d < D; d++) {
                float mx = -std::numeric_limits<float>::infinity();
                for (int64_t i = 0; i < r; i++) mx = std::max(mx, tg[i * D + d]);
                float den = 0, num = 0;
                for (int64_t i = 0; i < r; i++) {
                    const float e = std::exp(tg[i * D + d] - mx);
                    den += e;
                    num += e * tk[i * D + d];
                }
                pooled[d] = num / den;
            }
            if (g0 < 0) g0 = p / r;
            latent.insert(latent.end(), pooled.begin(), pooled.end());
            ng++;
            tk.clear();
            tg.clear();
        }
        if (ng > 0) rms_norm(latent.data(), L.bank_norm, ng, int32_t(D), latent.data());
    }
    if (ng == 0) return;
    std::vector<float> IK(size_t(ng) * Di);
    matmul(*L.idx_k, latent.data(), ng, IK.data());
    rms_norm(IK.data(), L.idx_k_norm, ng, int32_t(Di), IK.data());
    std::vector<int32_t> pos(ng);
    for (int64_t i = 0; i < ng; i++) pos[i] = int32_t((g0 + i) * r);
    rope(IK.data(), ng, pos.data(), 1, int32_t(Di), false);
    rope(latent.data(), ng, pos.data(), 1, int32_t(D), false);
    put_rows(*banks_, s.bank, bank_layer(si), g0, ng, latent.data(), D);
    put_rows(*banks_, s.bank, idx_layer(si), g0, ng, IK.data(), Di);
}

void CedRuntime::select(Seq& s, int32_t l, int64_t p0, int64_t n, const float* H,
                        std::vector<std::vector<int32_t>>& sel, std::vector<std::vector<int32_t>>& cand) {
    const CedLayerWeights& L = w_->layers[l];
    const int32_t si = c_.bank_of[l];
    const int64_t r = c_.source_ratios[si];
    const int32_t Hi = c_.idx_heads, Di = c_.idx_dim;
    sel.resize(n);
    cand.resize(n);
    std::vector<float> IQ(size_t(n) * Hi * Di), IW(size_t(n) * Hi);
    matmul(*L.idx_q, H, n, IQ.data());
    matmul(*L.idx_w, H, n, IW.data());
    std::vector<int32_t> pos(n);
    for (int64_t t = 0; t < n; t++) pos[t] = int32_t(p0 + t);
    rope(IQ.data(), n, pos.data(), Hi, Di, false);
    const PagedKV keys = banks_->paged_view(s.bank, idx_layer(si));
    // Reused across calls: at 1M positions a fresh 4 MB score buffer per layer
    // and step costs page faults that show in the decode step.
    std::vector<float>& scores = scratch_scores_;
    std::vector<float>& cs = scratch_cand_scores_;
    std::vector<int32_t>& blocks = scratch_blocks_;
    auto query = [&](int64_t t) { return IndexerQuery{IQ.data() + size_t(t) * Hi * Di, IW.data() + size_t(t) * Hi, Hi}; };
    if (l > c_.decoder_source()) {
        // Later decoder index sources re-rank their query's own candidates.
        for (int64_t t = 0; t < n; t++) {
            const IndexerQuery q = query(t);
            const std::vector<int32_t>& rows = cand[t];
            std::vector<int32_t>& out = sel[t];
            cs.resize(rows.size());
            if (opt_.use_ref_kernels) ref::indexer_scores_rows(keys, q, rows.data(), int32_t(rows.size()), cs.data());
            else cpu::indexer_scores_rows(keys, q, rows.data(), int32_t(rows.size()), cs.data());
            out.resize(std::min<size_t>(rows.size(), size_t(c_.top_k)));
            out.resize(topk_rows(cs.data(), rows.data(), int32_t(rows.size()), c_.top_k, out.data()));
        }
        return;
    }
    // Full scans (encoder index sources, the decoder source): batches of queries
    // against each key tile once (bit-identical to scoring each query alone, so
    // the selections do not depend on the chunking).
    constexpr int64_t kBatch = 32;
    std::vector<IndexerQuery> qs;
    std::vector<int32_t> nv;
    for (int64_t t0 = 0; t0 < n; t0 += kBatch) {
        const int64_t nb = std::min<int64_t>(kBatch, n - t0);
        qs.resize(nb);
        nv.resize(nb);
        for (int64_t i = 0; i < nb; i++) {
            qs[i] = query(t0 + i);
            nv[i] = int32_t((p0 + t0 + i + 1) / r);
        }
        const size_t stride = std::max<size_t>(1, size_t(nv[nb - 1]));
        scores.resize(size_t(nb) * stride);
        if (opt_.use_ref_kernels) ref::indexer_scores_batch(keys, qs.data(), nv.data(), int32_t(nb), scores.data(), stride);
        else cpu::indexer_scores_batch(keys, qs.data(), nv.data(), int32_t(nb), scores.data(), stride);
        for (int64_t i = 0; i < nb; i++) {
            const int64_t t = t0 + i;
            const int32_t nvis = nv[i];
            const float* sc = scores.data() + size_t(i) * stride;
            std::vector<int32_t>& out = sel[t];
            if (l == c_.decoder_source()) {
                blocks.resize(c_.cand_blocks);
                int32_t nbk = block_max_candidates(sc, nvis, c_.cand_block, c_.cand_blocks, blocks.data());
                std::vector<int32_t>& rows = cand[t];
                rows.resize(size_t(nbk) * c_.cand_block);
                rows.resize(expand_blocks(blocks.data(), nbk, c_.cand_block, nvis, rows.data()));
                cs.resize(rows.size());
                for (size_t j = 0; j < rows.size(); j++) cs[j] = sc[rows[j]];
                out.resize(std::min<size_t>(rows.size(), size_t(c_.top_k)));
                out.resize(topk_rows(cs.data(), rows.data(), int32_t(rows.size()), c_.top_k, out.data()));
            } else {
                out.resize(std::min<size_t>(size_t(nvis), size_t(c_.top_k)));
                out.resize(topk_rows(sc, nullptr, nvis, c_.top_k, out.data()));
            }
        }
    }
}

void CedRuntime::layer(Seq& s, int32_t l, int64_t p0, int64_t n, float* X) {
    const CedLayerWeights& L = w_->layers[l];
    const size_t E = c_.n_embd, D = c_.entry_dim;
    const int32_t NH = c_.n_heads;
    const size_t QW = size_t(NH) * D;
    std::vector<float> H(size_t(n) * E);
    rms_norm(X, L.attn_norm, n, int32_t(E), H.data());
    std::vector<int32_t> pos(n);
    for (int64_t t = 0; t < n; t++) pos[t] = int32_t(p0 + t);

    if (c_.is_source[l] && l != c_.decoder_source()) build_source_rows(s, l, p0, n, H.data());

    // Window rows.
    {
        std::vector<float> KV(size_t(n) * D);
        matmul(*L.wkv, H.data(), n, KV.data());
        rms_norm(KV.data(), L.kv_norm, n, int32_t(D), KV.data());
        rope(KV.data(), n, pos.data(), 1, int32_t(D), false);
        put_rows(*windows_, s.win, l, p0, n, KV.data(), D);
    }

    // Selection: this layer's own (index source) or the last published one.
    // Kept across the layers of one pass (encoder or decoder) of one chunk.
    std::vector<std::vector<int32_t>>& sel = pass_sel_;
    std::vector<std::vector<int32_t>>& cand = pass_cand_;
    const int32_t si = c_.bank_of[l];
    if (l == 0 || l == c_.n_encoder) {
        sel.clear();
        cand.clear();
    }
    if (si >= 0 && c_.is_index[l]) select(s, l, p0, n, H.data(), sel, cand);

    std::vector<float> Q(size_t(n) * QW), O(size_t(n) * QW), lse(size_t(n) * NH);
    matmul(*L.wq, H.data(), n, Q.data());
    rope(Q.data(), n, pos.data(), NH, int32_t(D), false);
    AttnParams ap;
    ap.n_heads = NH;
    ap.head_dim = int32_t(D);
    ap.scale = 1.0f / std::sqrt(float(D));
    ap.window = c_.window;
    ap.window_floor = int32_t(l < c_.n_encoder ? s.enc_floor : s.dec_floor);
    ap.sinks = L.sinks.data();
    const PagedKV wkv = windows_->paged_view(s.win, l);
    if (opt_.use_ref_kernels) ref::attention_prefill(wkv, ap, Q.data(), int32_t(n), int32_t(p0), O.data(), lse.data());
    else cpu::attention_prefill(wkv, ap, Q.data(), int32_t(n), int32_t(p0), O.data(), lse.data());
    if (si >= 0) {
        std::vector<float> O2(size_t(n) * QW), lse2(size_t(n) * NH);
        std::vector<SparseQuery> qs(n);
        for (int64_t t = 0; t < n; t++) {
            qs[t].q = Q.data() + size_t(t) * QW;
            qs[t].rows = sel[t].data();
            qs[t].n_rows = int32_t(sel[t].size());
            qs[t].out = O2.data() + size_t(t) * QW;
            qs[t].lse = lse2.data() + size_t(t) * NH;
        }
        AttnParams sp = ap;
        sp.sinks = nullptr;  // counted once, in the window partial
        sp.window = 0;
        sp.window_floor = 0;
        const PagedKV bank = banks_->paged_view(s.bank, bank_layer(si));
        if (opt_.use_ref_kernels) ref::attention_sparse(bank, sp, qs.data(), int32_t(n));
        else cpu::attention_sparse(bank, sp, qs.data(), int32_t(n));
        for (int64_t t = 0; t < n; t++)
            merge_attention(O.data() + size_t(t) * QW, lse.data() + size_t(t) * NH, O2.data() + size_t(t) * QW,
                            lse2.data() + size_t(t) * NH, NH, int32_t(D));
        if (record_selection_) last_sel_[l] = sel[n - 1];
    }
    rope(O.data(), n, pos.data(), NH, int32_t(D), true);
    std::vector<float> A(size_t(n) * E);
    matmul(*L.wo, O.data(), n, A.data());
    for (size_t i = 0; i < A.size(); i++) X[i] += A[i];

    // SwiGLU FFN.
    rms_norm(X, L.ffn_norm, n, int32_t(E), H.data());
    const size_t F = c_.n_ff;
    std::vector<float> G(size_t(n) * F), U(size_t(n) * F);
    matmul(*L.ffn_gate, H.data(), n, G.data());
    matmul(*L.ffn_up, H.data(), n, U.data());
    for (size_t i = 0; i < G.size(); i++) G[i] = G[i] / (1.0f + std::exp(-G[i])) * U[i];
    matmul(*L.ffn_down, G.data(), n, A.data());
    for (size_t i = 0; i < A.size(); i++) X[i] += A[i];
}

}  // namespace kvrt::ced
