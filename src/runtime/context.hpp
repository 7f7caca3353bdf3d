// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Context: runs one model over a KV cache for up to n_seq_max sequences.
//
// prefill(seq, tokens) makes the sequence hold exactly `tokens`: it keeps the
// longest common prefix with what the sequence held (appended chat turn ->
// everything kept; an edit -> the positions before the first changed token),
// or — when that is longer — attaches the longest prefix the shared prefix
// cache holds for these tokens (same model fingerprint, same salt), then
// computes the rest in n_batch-token chunks and keeps the last token's logits.
// decode() appends one token to each of several sequences in one forward pass.
// generate() = prefill + sample/decode loop with stop conditions.
//
// Thread safety: one thread at a time per Context. The cache may be shared
// with other contexts (it is internally synchronised).
#pragma once

#include "cache/cache.hpp"
#include "model/arch/decoder_forward.hpp"
#include "model/arch/ced_runtime.hpp"
#include "runtime/sampler.hpp"
#include "runtime/thread_governor.hpp"

#include <atomic>
#include <functional>
#include <memory>
#include <span>
#include <optional>
#include <string>
#include <vector>

namespace kvrt {
class Model;
}

namespace kvrt::runtime {

struct SeqFileContents;  // runtime/seq_file.hpp

struct ContextParams {
    uint32_t n_ctx = 0;       // 0 = the model's training context
    uint32_t n_seq_max = 1;
    uint32_t n_batch = 512;
    int n_threads = 0;        // 0 = up to the OpenMP default, decode steps governed (thread_governor.hpp)
    DType kv_dtype = DType::F16;      // the K rows' type (and the V rows' unless kv_v_dtype is set)
    std::optional<DType> kv_v_dtype;  // the V rows' type when it differs (util/kv_quant.hpp)
    // Under a quantised K type, keep K in f16 on the layers whose K bias has outliers
    // (model/arch/kv_layer_types.hpp). false: the asked type on every layer (benchmarks). For
    // the cache the context makes; a shared cache may have either layout (its creator chose).
    bool kv_protect_outlier_layers = true;
    std::optional<DType> ced_bank_dtype;  // CED: bank rows' and indexer keys' type (unset: CedRuntime::bank_dtype_for)
    // Positions per cache block; 0 = the default, resolved by Context::Context: a shared cache's own,
    // else kDefaultBlockTokens for decoder models, kDefaultBlockTokensCed for CED ones.
    int32_t block_tokens = 0;
    uint64_t cache_bytes = 0;  // 0 = n_seq_max x n_ctx x 2 (see kvrt_context_config)
    bool prefix_caching = true;
    std::string salt;
    std::function<bool(float, const char*)> progress;  // long prefills; false = cancel
    // CED models only (ignored otherwise): how a prompt's decoder half runs, and how a
    // prefix-cache hit restores the window state (ced_runtime.hpp).
    ced::PrefillMode ced_prefill = ced::PrefillMode::Exact;
    ced::Resume ced_resume = ced::Resume::Auto;
    // Activation code widths of the quantised weight matmuls: 0 (the default, which the
    // context resolves to 9: 16-bit codes for the K/V projections, 8-bit codes with their
    // outlier blocks' residuals elsewhere, ActBits::Q8R), 8 or 16 everywhere (ActCodes in
    // model/arch/decoder_forward.hpp); CED models: 8 (0 becomes 8). Part of the prefix-cache keys.
    int act_bits = 0;
};

// The bytes a context appends to its salt, which no NUL-terminated cache_salt can spell: one
// part per act_bits setting (8: none; the default 0 = 9 and 16 each their own), so the
// prefix-cache keys of one activation-code setting never match another's, and one per
// release whose attention arithmetic changed (kReleaseArithmeticSalt), so no block, tier
// entry or saved sequence computed by an earlier release is taken for this one's.
std::string arithmetic_salt_suffix(int act_bits);
// The release part alone (CED contexts, whose activation codes have no setting).
extern const std::string kReleaseArithmeticSalt;

// What one prefill / generate did.
struct RequestStats {
    uint64_t prompt_tokens = 0;
    uint64_t reused_tokens = 0;
    uint64_t reused_from_cache = 0;
    uint64_t computed_tokens = 0;
    uint64_t generated_tokens = 0;
    double ttft_s = 0;
    double prefill_s = 0;
    double decode_s = 0;
    uint64_t kv_bytes = 0;
    int stop_reason = 0;  // kvrt_stop_reason
    uint64_t reused_from_disk = 0;    // of reused_from_cache: loaded back from a disk tier
    uint64_t reused_from_remote = 0;  // ... from a remote tier (Redis)
    double sample_s = 0;  // generate: the sampler's time (not in decode_s)
};

struct GenerateParams {
    uint32_t max_tokens = 256;
    bool stop_at_eog = true;
    Sampler* sampler = nullptr;  // nullptr = greedy
    std::vector<std::string> stop_strings;
    // (token, text completed by it) -> false to stop.
    std::function<bool(int32_t, const char*, size_t)> on_token;
    // Caller buffers (kvrt_generate_config's output fields): the first tokens_capacity
    // generated tokens; the answer's text, NUL-terminated, cut at a character boundary.
    // *_written (when not null) receive the full counts (more than the capacity = truncated).
    int32_t* tokens_out = nullptr;
    size_t tokens_capacity = 0;
    size_t* tokens_written = nullptr;
    char* text_out = nullptr;
    size_t text_capacity = 0;
    size_t* text_written = nullptr;
};

// What a context is doing, readable from any thread while it works (kvrt_context_activity).
struct Activity {
    int32_t phase = 0;  // 0 idle, 1 prefill, 2 decode
    bool cancel_pending = false;
    uint64_t prefill_total = 0;
    uint64_t prefill_done = 0;
    uint64_t generated = 0;
    uint64_t calls = 0;
};

// Default positions per cache block (ContextParams::block_tokens = 0, kvrt_context_config's
// default). Decoder models: 64. A decode step reads each layer's K and V rows block by block, and
// a layer's rows of one block are one contiguous run (its K region, then its V region); 16-token
// blocks made those runs 6-8 KiB, too short for the hardware prefetchers, and decode attention
// beyond the last-level cache took 6-24% longer than with 64-token blocks (AMD EPYC Zen 4,
// bench_attention_decode --keys 131072: src/kernels/README.md, "Block size"). Prefix hits still
// reach the first changed token (KVRT_MATCH_SUB_BLOCK), and a released sequence's partly filled
// last block is kept for them (cache tail blocks), so the larger block costs prefix reuse nothing;
// it costs up to 63 unfilled positions per live sequence.
// CED models: 16 (their prefix hits are whole blocks, and their decode reads selected bank rows,
// not long runs).
inline constexpr int32_t kDefaultBlockTokens = 64;
inline constexpr int32_t kDefaultBlockTokensCed = 16;

// The cache layout a decoder-family model needs (one Full or Window layer per model layer).
// v_dtype: the V rows' type when it differs from kv_dtype (the K rows'); the layers' types
// are kv_layer_types(model, kv_dtype, v_dtype, protect).
cache::CacheConfig cache_config_for(const Model& model, DType kv_dtype, int32_t block_tokens, uint64_t budget,
                                    std::optional<DType> v_dtype = std::nullopt, bool protect = true);

class Context {
public:
    // cache == nullptr: the context creates its own from params. Else the cache
    // must have the model's layout (KVRT_ERR_MISMATCH otherwise).
    Context(std::shared_ptr<const Model> model, const ContextParams& params,
            std::shared_ptr<cache::Cache> cache = nullptr);
    ~Context();
    Context(const Context&) = delete;
    Context& operator=(const Context&) = delete;

    const Model& model() const noexcept { return *model_; }
    const std::shared_ptr<const Model>& model_ptr() const noexcept { return model_; }
    const std::shared_ptr<cache::Cache>& cache() const noexcept { return cache_; }
    const ContextParams& params() const noexcept { return p_; }
    uint32_t n_ctx() const noexcept { return p_.n_ctx; }

    // See the top of this file. all_logits (optional) receives n_tokens x n_vocab
    // logits of every prompt position computed by this call (positions that were
    // reused are not recomputed: the tests disable prefix caching to get them all).
    void prefill(int32_t seq, const int32_t* tokens, size_t n_tokens, RequestStats* stats = nullptr,
                 std::vector<float>* all_logits = nullptr);
    // Prompts of `count` distinct sequences (tokens[i], n[i] tokens for seqs[i]) in shared
    // forward passes: rounds of up to n_batch rows taken from the prompts in order, so the
    // weights are read once per round for all of them. Each sequence ends as prefill() alone
    // would leave it, bit for bit (prefix reuse included). Every argument is checked before
    // any sequence changes; on a later failure each sequence holds a computed prefix of its
    // prompt. stats: NULL or `count` entries.
    void prefill_batch(const int32_t* seqs, const int32_t* const* tokens, const size_t* n, size_t count,
                       RequestStats* stats = nullptr);
    // One token per sequence; all-or-nothing.
    void decode(const int32_t* seqs, const int32_t* tokens, size_t n);
    void generate(int32_t seq, const int32_t* prompt, size_t n_prompt, const GenerateParams& gp,
                  RequestStats* stats = nullptr, std::vector<int32_t>* out_tokens = nullptr);

    // Logits of the sequence's last computed token (n_vocab floats); throws
    // INVALID_STATE when it has none.
    const std::vector<float>& logits(int32_t seq) const;
    bool has_logits(int32_t seq) const;

    // ---- logits at chosen positions (runtime/context_position_logits.cpp) ----
    // prefill() that also computes the logits of positions[0, n_positions) (strictly
    // increasing, each < n_tokens): reuse (kept prefix, prefix cache) stops at positions[0],
    // so every requested row is computed. CED models: only {n_tokens - 1} (UNSUPPORTED else).
    void prefill_positions(int32_t seq, const int32_t* tokens, size_t n_tokens, const uint32_t* positions,
                           size_t n_positions, RequestStats* stats = nullptr);
    // The logits of a position requested by the sequence's last prefill_positions, while the
    // sequence still holds the tokens [0, position] it was computed from (n_vocab floats).
    // NOT_FOUND for a position not requested; INVALID_STATE when the tokens changed since.
    const float* position_logits(int32_t seq, size_t position) const;
    const std::vector<int32_t>& tokens(int32_t seq) const;
    void release(int32_t seq);
    uint64_t kv_bytes(int32_t seq) const;

    // ---- cancellation, re-entrancy, activity (runtime/context_call.cpp) ----
    // Asks the running call to stop (any thread, any time): prefill stops between chunks and
    // between layers, generate between decode steps, with KVRT_ERR_CANCELLED; the sequence
    // keeps what was computed. The flag is cleared when a call is entered (Call below).
    void cancel() noexcept { cancel_.store(true, std::memory_order_relaxed); }
    bool cancel_requested() const noexcept { return cancel_.load(std::memory_order_relaxed); }
    // One public call on this context: marks it busy (a second call while one runs, e.g. from
    // inside a callback, throws INVALID_STATE naming `what`), clears the cancel flag, and
    // counts itself in running_calls(). Every C API call that changes the context holds one.
    class Call {
    public:
        Call(Context& c, const char* what);
        ~Call();
        Call(const Call&) = delete;
        Call& operator=(const Call&) = delete;

    private:
        Context& c_;
    };
    // A snapshot of what the context is doing; any thread.
    Activity activity() const noexcept;
    // Calls running on any context of the process (kvrt_isa_set refuses to switch meanwhile).
    static int running_calls() noexcept;

    // ---- one sequence's state (runtime/context_state.cpp) ----
    // Saves the sequence (tokens, logits, KV rows; CED: also the window rings and tail
    // state) with the model fingerprint, salt, KV dtype and block size, atomically.
    void save_seq(int32_t seq, const std::string& path) const;
    // Replaces the sequence with a saved one. Every check comes first: MISMATCH (another
    // model, dtype, block size, salt, architecture), BAD_FORMAT (truncated, corrupted,
    // foreign), CACHE_FULL: the context is unchanged then.
    void load_seq(int32_t seq, const std::string& path);
    // load_seq where the file's rows fit this context as saved; where only their KV dtype,
    // block size or salt (act_bits, a release's arithmetic) differ, prefills the saved tokens
    // instead (common prefix and prefix cache reused), so the conversation goes on in this
    // context's arithmetic. *recomputed is set true as the recompute starts. stats: as
    // prefill's (loaded as saved: every token reused, none computed).
    void restore_seq(int32_t seq, const std::string& path, RequestStats* stats, bool* recomputed);
    // dst (released first) becomes a copy of src sharing its blocks; src == dst is a no-op.
    void fork_seq(int32_t src, int32_t dst);
    // Keeps positions [0, n) (n <= length); the logits are unset when n < length.
    void truncate_seq(int32_t seq, size_t n);

private:
    // load_seq / restore_seq: the file read and checked (rows_may_differ: see read_seq_file).
    SeqFileContents read_seq_path(const std::string& path, bool rows_may_differ) const;
    // Installs checked contents whose rows fit this context into sequence seq.
    void install_seq(int32_t seq, SeqFileContents&& f, const std::string& path);
    struct Seq {
        cache::SeqId id = 0;        // decoder family: the cache sequence
        ced::CedRuntime::SeqId ced = 0;  // CED: the runtime's sequence
        std::vector<int32_t> tokens;  // == the computed positions
        std::vector<float> logits;
        bool has_logits = false;
        // prefill_positions: the positions asked for, their logits (n_vocab each, in order)
        // and the tokens they were computed from.
        std::vector<uint32_t> pos_list;
        std::vector<float> pos_rows;
        std::vector<int32_t> pos_tokens;
    };
    class CacheKv;
    // What prefill keeps of a sequence before computing: positions [0, start) stay.
    struct PrefillPlan {
        size_t start = 0;
        size_t from_cache = 0;
        bool done = false;  // the sequence already holds the prompt and its logits
        size_t from_disk = 0, from_remote = 0;  // of from_cache: loaded from lower tiers
    };
    // A prompt being computed: positions [pos, n) remain; len is the current round's share.
    struct PromptWork {
        Seq* seq = nullptr;
        const int32_t* tokens = nullptr;
        size_t n = 0;
        size_t start = 0;
        size_t from_cache = 0;
        size_t pos = 0;
        size_t len = 0;
        const uint8_t* want = nullptr;  // prefill_positions: rows [0, n) whose logits go to `rows`
        float* rows = nullptr;          // ... one after another; rows_done written so far
        size_t rows_done = 0;
        size_t from_disk = 0, from_remote = 0;  // of from_cache: loaded from lower tiers
    };
    void check_prompt(const char* what, const int32_t* tokens, size_t n) const;
    // reuse_max: keep (or attach from the prefix cache) at most this many positions.
    PrefillPlan plan_prefill(Seq& s, const int32_t* tokens, size_t n, bool all_logits,
                             size_t reuse_max = SIZE_MAX);
    void compute_prompts(std::span<PromptWork> work, std::vector<float>* all_logits);
    void fill_prefill_stats(RequestStats* stats, const PromptWork& w, int32_t seq, double t0) const;

    Seq& seq_ref(int32_t seq);
    const Seq& seq_ref(int32_t seq) const;
    void check_tokens(const int32_t* tokens, size_t n) const;
    void drop(Seq& s);
    // CED models: prefill through the CED runtime (its resume policy) / one decode step.
    void prefill_ced(Seq& s, const int32_t* tokens, size_t n, RequestStats* stats, double t0);
    void decode_ced(Seq& s, int32_t token);

    std::shared_ptr<const Model> model_;
    ContextParams p_;
    std::shared_ptr<cache::Cache> cache_;       // CED: the runtime's bank cache (its prefix cache)
    std::unique_ptr<ced::CedRuntime> ced_;      // CED models: bank + window caches, tail state
    cache::SeqKeys keys_;
    std::vector<Seq> seqs_;
    ForwardScratch scratch_;
    // n_threads 0: the decode steps' thread count (thread_governor.hpp), and the KV bytes a step
    // reads per token of context (its measure of a step's work; < 0 until the first step).
    ThreadGovernor governor_;
    double kv_bytes_per_token_ = -1;
    // Cancellation and the activity snapshot (context_call.cpp): written by the working
    // thread, read by any.
    void check_cancel(const char* where) const;
    std::atomic<bool> cancel_{false};
    std::atomic<bool> busy_{false};
    std::atomic<int32_t> phase_{0};
    std::atomic<uint64_t> act_total_{0}, act_done_{0}, act_generated_{0}, act_calls_{0};
};

}  // namespace kvrt::runtime
