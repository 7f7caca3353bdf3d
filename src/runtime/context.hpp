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

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace kvrt {
class Model;
}

namespace kvrt::runtime {

struct ContextParams {
    uint32_t n_ctx = 0;       // 0 = the model's training context
    uint32_t n_seq_max = 1;
    uint32_t n_batch = 512;
    int n_threads = 0;        // 0 = OpenMP default
    DType kv_dtype = DType::F16;
    int32_t block_tokens = 16;
    uint64_t cache_bytes = 0;  // 0 = n_seq_max x n_ctx x 2 (see kvrt_context_config)
    bool prefix_caching = true;
    std::string salt;
    std::function<bool(float, const char*)> progress;  // long prefills; false = cancel
    // CED models only (ignored otherwise): how a prompt's decoder half runs, and how a
    // prefix-cache hit restores the window state (ced_runtime.hpp).
    ced::PrefillMode ced_prefill = ced::PrefillMode::Exact;
    ced::Resume ced_resume = ced::Resume::Auto;
};

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
};

struct GenerateParams {
    uint32_t max_tokens = 256;
    bool stop_at_eog = true;
    Sampler* sampler = nullptr;  // nullptr = greedy
    std::vector<std::string> stop_strings;
    // (token, text completed by it) -> false to stop.
    std::function<bool(int32_t, const char*, size_t)> on_token;
};

// The cache layout a decoder-family model needs (one Full or Window layer per model layer).
cache::CacheConfig cache_config_for(const Model& model, DType kv_dtype, int32_t block_tokens, uint64_t budget);

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
    const std::vector<int32_t>& tokens(int32_t seq) const;
    void release(int32_t seq);
    uint64_t kv_bytes(int32_t seq) const;

private:
    struct Seq {
        cache::SeqId id = 0;        // decoder family: the cache sequence
        ced::CedRuntime::SeqId ced = 0;  // CED: the runtime's sequence
        std::vector<int32_t> tokens;  // == the computed positions
        std::vector<float> logits;
        bool has_logits = false;
    };
    class CacheKv;
    // What prefill keeps of a sequence before computing: positions [0, start) stay.
    struct PrefillPlan {
        size_t start = 0;
        size_t from_cache = 0;
        bool done = false;  // the sequence already holds the prompt and its logits
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
    };
    void check_prompt(const char* what, const int32_t* tokens, size_t n) const;
    PrefillPlan plan_prefill(Seq& s, const int32_t* tokens, size_t n, bool all_logits);
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
};

}  // namespace kvrt::runtime
