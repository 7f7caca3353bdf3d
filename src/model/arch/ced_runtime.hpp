// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// CedRuntime (the ced architecture's forward over its caches, run by the one Context): the cached CED forward (CED.md) on kvrt::Cache and the cpu
// kernels: exact prefill, CED prefill, decode, prefix hits with exact
// resumption from window checkpoints or bounded replay, fork and truncate.
//
// Two caches, one concern each:
//   bank cache    per source s: its bank (BankSource, ratio r, K = V rows of
//                 width D; layer 2s) and its indexer keys (IndexerKeys, width
//                 Di; layer 2s + 1). Cached per block like any KV: the prefix
//                 cache of a CED model holds no window state.
//   window cache  every model layer's private window (Window(W), one K = V row
//                 of width D per position; layer l). Its prefix index *is*
//                 the window checkpoints: a
//                 released or live sequence's full computed window blocks stay
//                 cached, and a hit of H positions on it holds exactly the
//                 rows a query at H reads, so resumption from it is exact. Its
//                 sequences carry a salt per prefill mode ("exact", "ced"; in
//                 CED mode the decoder windows before N - W are never written
//                 and never read); sequences rebuilt by bounded replay get a
//                 salt of their own so that their approximate windows never
//                 serve as a checkpoint. In CED mode a checkpoint is used only
//                 at H <= N - W: the decoder reruns [N - W, N) from the
//                 encoder's output and must not write into shared blocks.
// Tail state (the raw rows of each r > 1 source's open group) lives in the
// runtime's sequence, never in a cache (a block boundary closes every group:
// block_tokens % r == 0).
//
// Determinism: every operation on a position is a function of that position's
// row and the cached rows it reads (weight matmul, norms, RoPE, attention,
// indexer and top-k all have this contract), so exact prefill in any chunking
// equals token-by-token decode bit for bit.
//
// Thread safety: one thread at a time per CedRuntime (the caches themselves
// are internally synchronised).
#pragma once

#include "cache/cache.hpp"
#include "model/arch/ced_weights.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace kvrt::ced {

// Prefill semantics (CED.md): every layer over every prompt position, or CED prefill
// (the encoder over all N positions, the decoder over the last W only).
enum class PrefillMode : uint8_t { Exact = 0, CedPrefill = 1 };

struct CedRuntimeOptions {
    int32_t block_tokens = 16;                 // a multiple of every bank ratio
    uint64_t bank_budget_bytes = 256ull << 20;
    uint64_t window_budget_bytes = 256ull << 20;
    int32_t chunk = 256;                       // prefill positions per pass
    bool use_ref_kernels = false;              // ref:: kernels and matmul_ref (slow; for tests)
    // Element type of the window rows, and of the bank rows and indexer keys unless bank_dtype
    // says otherwise: F32, or BF16 / F16 (half the bytes per token, and half the bytes the
    // memory-bound indexer scans read per decode step), or I8 / FP8_E4M3 (windows only: the
    // banks are then F16 unless bank_dtype is set). Rows are computed in f32 and rounded
    // (nearest even) or quantised (util/kv_quant.hpp) when written.
    DType cache_dtype = DType::F32;
    // Element type of the bank rows and indexer keys: F32, F16, BF16 or FP4 (4-bit: f16 scales
    // on bank rows, e8m0 scales on indexer keys; util/kv_quant.hpp). Unset: bank_dtype_for().
    std::optional<DType> bank_dtype;
    std::string salt;                          // cache salt (tenant)
    // Long prefills: called after each chunk with the fraction done ("prefill");
    // false cancels (KVRT_ERR_CANCELLED; the sequence is left as before the call).
    std::function<bool(float, const char*)> progress;
};

// How a prefill may use the prefix caches.
enum class Resume : uint8_t {
    Auto = 0,           // exact resumption from a checkpoint at Hw when Hb - Hw <= W + block (it then
                        // recomputes no more than bounded replay would), else bounded replay at Hb
    Checkpoint = 1,     // exact resumption only (the bank hit is cut to the checkpoint's length)
    BoundedReplay = 2,  // bank hit + replay of [H - W, H) with window floor H - W
    Cold = 3,           // no prefix reuse
};

struct PrefillResult {
    std::vector<float> logits;  // of the last prompt position
    int64_t hit = 0;            // prompt positions taken from the bank cache
    bool exact_resume = false;  // the windows came from a checkpoint
    int64_t replayed = 0;       // positions replayed (bounded replay)
    int64_t computed = 0;       // positions run through the encoder
    int64_t decoded = 0;        // positions run through the decoder
};

class CedRuntime {
public:
    using SeqId = uint64_t;

    CedRuntime(std::shared_ptr<const CedWeights> w, const CedRuntimeOptions& opt, uint64_t fingerprint_lo = 0,
               uint64_t fingerprint_hi = 0);
    ~CedRuntime();

    SeqId create();
    void release(SeqId seq);
    // A new sequence sharing seq's cached rows (copy-on-write) with a copy of its tail state.
    SeqId fork(SeqId seq);
    // Positions >= p are dropped. INVALID_STATE when p cuts an open r > 1 group
    // whose raw rows are gone (p must be a multiple of the ratios, or inside the
    // open group) or when the windows no longer hold what a query at p reads.
    void truncate(SeqId seq, int64_t p);

    // Runs the prompt on an empty sequence; see Resume. tokens[i] in [0, V).
    PrefillResult prefill(SeqId seq, const int32_t* tokens, int64_t n, PrefillMode mode,
                          Resume resume = Resume::Auto);
    // Appends n tokens through every layer (exact); returns the last logits.
    std::vector<float> extend(SeqId seq, const int32_t* tokens, int64_t n);
    std::vector<float> decode(SeqId seq, int32_t token) { return extend(seq, &token, 1); }

    // A sequence's whole state as a KVRTCED container (ced_runtime_state.cpp): tokens, decoder
    // progress, the tail state of every open group and its bank and window cache sequences, so
    // that a loaded sequence continues bit for bit. load_state validates everything first
    // (BAD_FORMAT, MISMATCH; CACHE_FULL when the rows do not fit) and then adds a new sequence.
    std::vector<uint8_t> save_state(SeqId seq) const;
    SeqId load_state(std::vector<uint8_t> blob, const std::string& what);

    int64_t length(SeqId seq) const;
    const std::vector<int32_t>& tokens(SeqId seq) const;
    // Bytes the sequence's blocks take in the bank and window caches (shared blocks counted).
    uint64_t bytes(SeqId seq) const;
    // The kernels' view of source s's bank rows of seq (valid until seq changes).
    PagedKV bank_view(SeqId seq, int32_t source);
    // The same for source s's indexer keys.
    PagedKV indexer_view(SeqId seq, int32_t source);
    const CedConfig& config() const { return c_; }
    cache::Cache& bank_cache() { return *banks_; }
    cache::Cache& window_cache() { return *windows_; }
    // The bank cache is the prefix cache of a CED model (what a context exposes as its cache).
    const std::shared_ptr<cache::Cache>& bank_cache_ptr() const { return banks_; }
    // Bank layer / indexer-key layer of source s in the bank cache.
    static int32_t bank_layer(int32_t s) { return 2 * s; }
    static int32_t idx_layer(int32_t s) { return 2 * s + 1; }

    // Cache layouts of a model (used by inspect too).
    // The bank rows' type when CedRuntimeOptions::bank_dtype is unset: cache_dtype when it can
    // hold bank rows (F32, F16, BF16), else F16.
    static DType bank_dtype_for(DType cache_dtype, std::optional<DType> bank_dtype);
    // dtype: the bank rows' and indexer keys' type (FP4: the keys are stored as FP4_E8).
    static cache::CacheConfig bank_layout(const CedConfig& c, int32_t block_tokens, DType dtype);
    static cache::CacheConfig window_layout(const CedConfig& c, int32_t block_tokens, DType dtype);

private:
    // Tests and benchmarks (tests/support/runtime/ced_runtime_access.hpp): the selections of
    // the last position, and sequences filled with random rows; not part of the library.
    friend struct CedRuntimeAccess;
    struct Seq;
    struct Pass;
    Seq& get(SeqId id);
    const Seq& get(SeqId id) const;
    cache::SeqKeys keys(const std::string& salt) const;
    // Runs positions [a, n) of s (tokens already in s.tokens): encoder for all,
    // decoder for positions >= s.dec_start. Returns the logits of n - 1.
    std::vector<float> run(Seq& s, int64_t a, int64_t n);
    void run_chunk(Seq& s, int64_t a, int64_t b, std::vector<float>* logits);
    void layer(Seq& s, int32_t l, int64_t p0, int64_t n, float* X);
    void build_source_rows(Seq& s, int32_t l, int64_t p0, int64_t n, const float* H);
    void select(Seq& s, int32_t l, int64_t p0, int64_t n, const float* H, std::vector<std::vector<int32_t>>& sel,
                std::vector<std::vector<int32_t>>& cand);
    void matmul(const PackedWeight& w, const float* X, int64_t M, float* Y) const;
    void rms_norm(const float* x, const std::vector<float>& w, int64_t rows, int32_t dim, float* out) const;
    void rope(float* x, int64_t n, const int32_t* pos, int32_t heads, int32_t dim, bool inverse) const;
    void ensure_appended(Seq& s, int64_t b);
    // Writes n f32 rows of width dim to (cache, seq, layer) from first_row on, in cache_dtype.
    void put_rows(cache::Cache& c, cache::SeqId seq, int32_t layer, int64_t first_row, int64_t n, const float* rows,
                  size_t dim);

    std::shared_ptr<const CedWeights> w_;
    const CedConfig& c_;
    CedRuntimeOptions opt_;
    uint64_t fp_lo_, fp_hi_;
    std::shared_ptr<cache::Cache> banks_;
    std::shared_ptr<cache::Cache> windows_;
    std::unordered_map<SeqId, std::unique_ptr<Seq>> seqs_;
    SeqId next_id_ = 1;
    uint64_t replay_salt_counter_ = 0;
    bool record_selection_ = false;               // CedRuntimeAccess turns it on
    std::vector<std::vector<int32_t>> last_sel_;  // per layer, when record_selection_
    // Per-position selections / decoder candidates of the current pass
    // (encoder or decoder) over one chunk: published by index sources, reused by the others.
    std::vector<std::vector<int32_t>> pass_sel_, pass_cand_;
    std::vector<float> scratch_scores_, scratch_cand_scores_;  // indexer scores (select)
    std::vector<int32_t> scratch_blocks_;
    std::vector<uint8_t> scratch_rows_;  // put_rows: rows converted to the layer's element type
};

}  // namespace kvrt::ced
