// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

#include "runtime/context.hpp"
#include "runtime/thread_scope.hpp"

#include "kvrt/context.h"
#include "model/arch/kv_layer_types.hpp"
#include "model/model.hpp"
#include "runtime/memory_budget.hpp"
#include "util/error.hpp"
#include "util/kv_quant.hpp"
#include "util/log.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace kvrt::runtime {

cache::CacheConfig cache_config_for(const Model& model, DType kv_dtype, int32_t block_tokens, uint64_t budget,
                                    std::optional<DType> v_dtype, bool protect) {
    const DecoderConfig& c = model.config();
    cache::CacheConfig cc;
    cc.block_tokens = block_tokens;
    cc.budget_bytes = budget;
    cc.layers.resize(c.n_layers);
    const KvLayerTypes types = kv_layer_types(model, kv_dtype, v_dtype, protect);
    for (uint32_t l = 0; l < c.n_layers; ++l) {
        cache::LayerSpec& s = cc.layers[l];
        s.kind = c.layer_is_window(l) ? cache::LayerKind::Window : cache::LayerKind::Full;
        s.window = c.layer_is_window(l) ? static_cast<int32_t>(c.sliding_window) : 0;
        s.n_kv_heads = static_cast<int32_t>(c.n_kv_heads);
        s.head_dim = static_cast<int32_t>(c.head_dim);
        s.dtype = types.k[l];
        if (types.v[l] != types.k[l]) s.v_dtype = types.v[l];
    }
    return cc;
}

// The forward's view of one cache sequence.
class Context::CacheKv final : public KvStore {
public:
    CacheKv(cache::Cache& c, cache::SeqId id) : c_(c), id_(id) {}
    DType dtype(int32_t layer) const noexcept override { return c_.layout().geometry[static_cast<size_t>(layer)].dtype; }
    DType v_dtype(int32_t layer) const noexcept override {
        return c_.layout().geometry[static_cast<size_t>(layer)].v_dtype;
    }
    uint8_t* k_row_mut(int32_t layer, int64_t pos) override { return c_.k_row_mut(id_, layer, pos); }
    uint8_t* v_row_mut(int32_t layer, int64_t pos) override { return c_.v_row_mut(id_, layer, pos); }
    PagedKV view(int32_t layer, int64_t n_tokens) override {
        PagedKV v = c_.paged_view(id_, layer);
        KVRT_CHECK(n_tokens <= v.n_tokens, KVRT_ERR_INTERNAL, "cache view shorter than the forward needs");
        v.n_tokens = static_cast<int32_t>(n_tokens);
        return v;
    }

private:
    cache::Cache& c_;
    cache::SeqId id_;
};

static_assert(kActBitsOutliers == KVRT_ACT_BITS_OUTLIERS, "one value for the outlier-residual mode");

// 0.4.1: attention takes keys in tiles of 64 on the AVX-512 paths (32 before; the online
// softmax's steps, and so the bits of every attention output, changed there).
const std::string kReleaseArithmeticSalt("\0kvrt-r0.4.1", 12);

std::string arithmetic_salt_suffix(int act_bits) {
    std::string s;
    if (act_bits == 16) s.assign("\0kvrt-act16", 11);
    // 0 and 9 are one computation. Its name changes with its numerics: "-kv16" (0 before 0.3.3,
    // no residuals), "-kv16-r3" (9 before 0.3.3: the ratio rule alone, none on the head).
    if (act_bits == 0 || act_bits == kActBitsOutliers) s.assign("\0kvrt-act-kv16-r3s20h", 21);
    return s + kReleaseArithmeticSalt;
}

Context::Context(std::shared_ptr<const Model> model, const ContextParams& params, std::shared_ptr<cache::Cache> cache)
    : model_(std::move(model)), p_(params), cache_(std::move(cache)) {
    KVRT_CHECK(model_ != nullptr, KVRT_ERR_BAD_HANDLE, "model is NULL");
    const DecoderConfig& c = model_->config();
    const uint32_t n_ctx_asked = p_.n_ctx;
    if (p_.n_ctx == 0) p_.n_ctx = c.n_ctx_train;
    KVRT_CHECK(p_.n_ctx <= c.n_ctx_train, KVRT_ERR_INVALID_ARGUMENT,
               "n_ctx " + std::to_string(p_.n_ctx) + " exceeds the model's context length " +
                   std::to_string(c.n_ctx_train));
    KVRT_CHECK(p_.n_seq_max >= 1 && p_.n_seq_max <= 4096, KVRT_ERR_INVALID_ARGUMENT,
               "n_seq_max must be in [1, 4096], got " + std::to_string(p_.n_seq_max));
    if (p_.n_batch == 0) p_.n_batch = 512;
    KVRT_CHECK(p_.n_batch <= 65536, KVRT_ERR_INVALID_ARGUMENT, "n_batch above 65536");
    if (p_.block_tokens == 0)
        p_.block_tokens = cache_ ? cache_->block_tokens() : model_->is_ced() ? kDefaultBlockTokensCed : kDefaultBlockTokens;
    KVRT_CHECK(p_.block_tokens >= 1 && p_.block_tokens <= 4096, KVRT_ERR_INVALID_ARGUMENT,
               "block_tokens must be in [1, 4096]");
    KVRT_CHECK(p_.n_threads >= 0, KVRT_ERR_INVALID_ARGUMENT, "n_threads is negative");
    KVRT_CHECK(p_.act_bits == 0 || p_.act_bits == 8 || p_.act_bits == kActBitsOutliers || p_.act_bits == 16,
               KVRT_ERR_INVALID_ARGUMENT,
               "act_bits " + std::to_string(p_.act_bits) + " is not 0 (the default), 8, 9 or 16");
    KVRT_CHECK((p_.act_bits != 16 && p_.act_bits != kActBitsOutliers) || !model_->is_ced(), KVRT_ERR_UNSUPPORTED,
               "act_bits " + std::to_string(p_.act_bits) +
                   " is implemented for decoder models (llama, qwen2, gemma3), not CED ones");
    // CED models have 8-bit codes only: their default is that. Decoders: 0 is 9.
    if (p_.act_bits == 0) p_.act_bits = model_->is_ced() ? 8 : kActBitsOutliers;
    if (model_->is_ced()) {
        KVRT_CHECK(!cache_, KVRT_ERR_UNSUPPORTED,
                   "a context over a CED model creates its own bank and window caches; sharing a cache "
                   "between CED contexts is not supported");
        const ced::CedConfig& cc = model_->ced()->cfg;
        ced::CedRuntimeOptions o;
        o.block_tokens = p_.block_tokens;
        KVRT_CHECK(!p_.kv_v_dtype, KVRT_ERR_UNSUPPORTED,
                   "a CED model's window rows serve as K and V (one row): set kv_dtype (or k_dtype), not a "
                   "separate v_dtype");
        o.cache_dtype = p_.kv_dtype;
        o.bank_dtype = p_.ced_bank_dtype;
        o.salt = p_.salt + kReleaseArithmeticSalt;
        o.chunk = static_cast<int32_t>(std::min<uint32_t>(p_.n_batch, 4096));
        // kvrt_context_cancel reaches the CED runtime through its progress hook.
        o.progress = [this](float f, const char* stage) {
            if (cancel_requested()) return false;
            return p_.progress ? p_.progress(f, stage) : true;
        };
        cache::CacheConfig bank_cfg = ced::CedRuntime::bank_layout(
            cc, p_.block_tokens, ced::CedRuntime::bank_dtype_for(p_.kv_dtype, p_.ced_bank_dtype));
        bank_cfg.budget_bytes = 1;  // resolve_layout checks it; only the geometry is used here
        const cache::ResolvedLayout bank = cache::resolve_layout(bank_cfg);
        double bank_per_token = 0;
        for (const cache::LayerGeometry& g : bank.geometry) bank_per_token += cache::layer_bytes_per_token(g);
        // A window sequence holds its last W rows plus the rows of the chunk being computed
        // (rows leave only once the chunk is done), in whole blocks.
        const double win_per_seq = static_cast<double>(cc.n_layers) *
                                   (cc.window + std::max<double>(o.chunk, cc.window) + 2.0 * p_.block_tokens) *
                                   static_cast<double>(kv_head_bytes(p_.kv_dtype, cc.entry_dim));
        if (p_.cache_bytes != 0) {
            // The caller's budget, split in proportion to what full sequences need.
            const double b = bank_per_token * p_.n_ctx, total = b + win_per_seq;
            o.bank_budget_bytes = std::max<uint64_t>(1, static_cast<uint64_t>(p_.cache_bytes * (b / total)));
            o.window_budget_bytes = std::max<uint64_t>(1, p_.cache_bytes - o.bank_budget_bytes);
        } else {
            // As for decoder models: every sequence at full length, plus as much again for cached
            // prefixes (bank) and window checkpoints (window).
            o.bank_budget_bytes = static_cast<uint64_t>(2.0 * p_.n_seq_max * (p_.n_ctx + p_.block_tokens) * bank_per_token) + 1;
            o.window_budget_bytes = static_cast<uint64_t>(2.0 * p_.n_seq_max * win_per_seq) + 1;
        }
        ced_ = std::make_unique<ced::CedRuntime>(model_->ced_ptr(), o, model_->fingerprint().lo,
                                                 model_->fingerprint().hi);
        cache_ = ced_->bank_cache_ptr();
    } else if (!cache_) {
        uint64_t budget = p_.cache_bytes;
        if (budget == 0) {
            // memory_budget.hpp: room for every sequence at full length plus as much again for
            // cached prefixes, capped at a quarter of physical memory; an n_ctx left to kvrt
            // shrinks until the sequences fit the cap. A window layer holds at most its window
            // plus a prefill chunk (the rows the chunk's first query reads stay until the
            // chunk is done), in whole blocks.
            // From the layout (quantised types: their scales included; a layer's K type may
            // differ from the others', kv_layer_types.hpp).
            const cache::ResolvedLayout lay =
                cache::resolve_layout(cache_config_for(*model_, p_.kv_dtype, p_.block_tokens, 1, p_.kv_v_dtype, p_.kv_protect_outlier_layers));
            std::vector<uint64_t> per_token_layer(c.n_layers);
            for (uint32_t l = 0; l < c.n_layers; ++l)
                per_token_layer[l] = static_cast<uint64_t>(std::ceil(cache::layer_bytes_per_token(lay.geometry[l])));
            auto per_seq = [&](uint32_t n_ctx) {
                const uint64_t full_len = n_ctx + static_cast<uint64_t>(p_.block_tokens);
                uint64_t bytes = 0;
                for (uint32_t l = 0; l < c.n_layers; ++l) {
                    uint64_t len = full_len;
                    if (c.layer_is_window(l))
                        len = std::min<uint64_t>(full_len, c.sliding_window + p_.n_batch + 2ull * p_.block_tokens);
                    bytes += len * per_token_layer[l];
                }
                return bytes;
            };
            const DefaultMemory d = choose_default_memory(n_ctx_asked, c.n_ctx_train, p_.n_seq_max,
                                                          static_cast<uint32_t>(p_.block_tokens), physical_memory_bytes(), per_seq);
            if (d.n_ctx != p_.n_ctx)
                log::at(log::Info, [&] {
                    return "context: n_ctx " + std::to_string(d.n_ctx) + " instead of the training context " +
                           std::to_string(p_.n_ctx) + ": " + std::to_string(p_.n_seq_max) +
                           " full sequence(s) would need more than a quarter of physical memory (set n_ctx or "
                           "cache_bytes to choose)";
                });
            p_.n_ctx = d.n_ctx;
            budget = d.budget_bytes;
        }
        cache_ = std::make_shared<cache::Cache>(
            cache_config_for(*model_, p_.kv_dtype, p_.block_tokens, budget, p_.kv_v_dtype, p_.kv_protect_outlier_layers));
    } else {
        // The cache's creator chose the layers' types: the asked ones with or without f16 K on
        // the layers whose K bias has outliers (kv_layer_types.hpp); the forward reads each
        // layer's types from the cache.
        const cache::ResolvedLayout& lay = cache_->layout();
        auto matches = [&](bool protect) {
            const cache::CacheConfig want =
                cache_config_for(*model_, p_.kv_dtype, cache_->block_tokens(), 0, p_.kv_v_dtype, protect);
            if (lay.layers.size() != want.layers.size()) return false;
            for (size_t l = 0; l < want.layers.size(); ++l) {
                const cache::LayerSpec &a = lay.layers[l], &b = want.layers[l];
                if (!(a.kind == b.kind && a.n_kv_heads == b.n_kv_heads && a.head_dim == b.head_dim &&
                      a.window == b.window && a.dtype == b.dtype &&
                      a.v_dtype.value_or(a.dtype) == b.v_dtype.value_or(b.dtype)))
                    return false;
            }
            return true;
        };
        if (!matches(p_.kv_protect_outlier_layers)) {
            KVRT_CHECK(matches(!p_.kv_protect_outlier_layers), KVRT_ERR_MISMATCH,
                       "the shared cache's layout does not match this model and KV dtype (" +
                           std::to_string(lay.layers.size()) + " layers vs " + std::to_string(c.n_layers) +
                           "; kinds, heads, widths, windows and each layer's K/V types must agree)");
            p_.kv_protect_outlier_layers = !p_.kv_protect_outlier_layers;
        }
        p_.block_tokens = cache_->block_tokens();
    }
    keys_.fingerprint_lo = model_->fingerprint().lo;
    keys_.fingerprint_hi = model_->fingerprint().hi;
    keys_.salt = p_.salt;
    // Rows computed with other activation codes, or by a release of other attention arithmetic,
    // differ: the blocks of each act_bits setting and release get their own keys (the salt
    // bytes plus a suffix no NUL-terminated cache_salt can spell), so none ever reuses
    // another's blocks, in RAM or in a tier.
    keys_.salt += arithmetic_salt_suffix(p_.act_bits);
    scratch_.act = ActCodes::from_option(p_.act_bits);
    seqs_.resize(p_.n_seq_max);
    scratch_.cancel = &cancel_;
}

Context::~Context() {
    for (Seq& s : seqs_) {
        try {
            drop(s);
        } catch (...) {
        }
    }
}

Context::Seq& Context::seq_ref(int32_t seq) {
    KVRT_CHECK(seq >= 0 && static_cast<uint32_t>(seq) < p_.n_seq_max, KVRT_ERR_OUT_OF_RANGE,
               "sequence id " + std::to_string(seq) + " is outside [0, " + std::to_string(p_.n_seq_max) + ")");
    return seqs_[static_cast<size_t>(seq)];
}
const Context::Seq& Context::seq_ref(int32_t seq) const { return const_cast<Context*>(this)->seq_ref(seq); }

void Context::check_tokens(const int32_t* tokens, size_t n) const {
    const uint32_t nv = model_->config().n_vocab;
    for (size_t i = 0; i < n; ++i)
        KVRT_CHECK(tokens[i] >= 0 && static_cast<uint32_t>(tokens[i]) < nv, KVRT_ERR_OUT_OF_RANGE,
                   "token id " + std::to_string(tokens[i]) + " at index " + std::to_string(i) +
                       " is outside the vocabulary [0, " + std::to_string(nv) + ")");
}

void Context::drop(Seq& s) {
    if (s.id != 0) cache_->release(s.id);
    if (s.ced != 0) ced_->release(s.ced);
    s.id = 0;
    s.ced = 0;
    s.tokens.clear();
    s.has_logits = false;
}

void Context::release(int32_t seq) {
    Seq& s = seq_ref(seq);
    drop(s);
    s.pos_list.clear();  // prefill_positions' rows (context_position_logits.cpp)
    s.pos_rows = {};
    s.pos_tokens.clear();
}

const std::vector<int32_t>& Context::tokens(int32_t seq) const { return seq_ref(seq).tokens; }
bool Context::has_logits(int32_t seq) const { return seq_ref(seq).has_logits; }
const std::vector<float>& Context::logits(int32_t seq) const {
    const Seq& s = seq_ref(seq);
    KVRT_CHECK(s.has_logits, KVRT_ERR_INVALID_STATE,
               "sequence " + std::to_string(seq) + " has no logits (empty, or its last call failed)");
    return s.logits;
}
uint64_t Context::kv_bytes(int32_t seq) const {
    const Seq& s = seq_ref(seq);
    if (s.ced) return ced_->bytes(s.ced);
    return s.id ? cache_->seq_info(s.id).bytes : 0;
}

void Context::check_prompt(const char* what, const int32_t* tokens, size_t n) const {
    KVRT_CHECK(tokens != nullptr && n > 0, KVRT_ERR_INVALID_ARGUMENT, std::string(what) + ": the prompt is empty");
    KVRT_CHECK(n <= p_.n_ctx, KVRT_ERR_OUT_OF_RANGE,
               std::string(what) + ": the prompt has " + std::to_string(n) +
                   " tokens, more than the context's n_ctx = " + std::to_string(p_.n_ctx));
    check_tokens(tokens, n);
}

Context::PrefillPlan Context::plan_prefill(Seq& s, const int32_t* tokens, size_t n, bool all_logits,
                                           size_t reuse_max) {
    PrefillPlan plan;
    // The common prefix with the sequence's own tokens...
    size_t common = 0;
    while (common < s.tokens.size() && common < n && s.tokens[common] == tokens[common]) ++common;
    if (common == n && s.tokens.size() == n && s.has_logits && !all_logits && reuse_max >= n) {
        plan.start = n;
        plan.done = true;
        return plan;
    }
    if (common == n) common = n - 1;  // the last token's logits must be computed
    common = std::min(common, reuse_max);
    // ... or the shared prefix cache, when it offers more (a hit never covers the last of the
    // tokens it is given, so n_look tokens give at most reuse_max).
    const size_t n_look = std::min(n, reuse_max == SIZE_MAX ? n : reuse_max + 1);
    // Lower tiers (disk, Redis) first: the blocks they hold after RAM's come back into RAM.
    cache::TierFetch fetched;
    if (p_.prefix_caching && !all_logits && cache_->has_tiers())
        fetched = cache_->fetch_from_tiers(keys_, tokens, static_cast<int64_t>(n_look));
    const int64_t hit = p_.prefix_caching && !all_logits
                            ? cache_->lookup_prefix(keys_, tokens, static_cast<int64_t>(n_look), /*sub_block=*/true)
                            : 0;
    s.has_logits = false;
    if (s.id != 0 && static_cast<size_t>(hit) <= common && common > 0) {
        try {
            cache_->truncate(s.id, static_cast<int64_t>(common));
            s.tokens.resize(common);
        } catch (const Error& e) {
            if (e.status() != KVRT_ERR_INVALID_STATE) throw;
            drop(s);  // a window layer no longer holds what position `common` needs
            common = 0;
        }
    } else {
        drop(s);
        common = 0;
    }
    if (s.id == 0) {
        s.id = cache_->create_sequence(keys_);
        if (p_.prefix_caching && !all_logits) {
            plan.from_cache = static_cast<size_t>(cache_->match_prefix(s.id, tokens, static_cast<int64_t>(n_look), /*sub_block=*/true));
            s.tokens.assign(tokens, tokens + plan.from_cache);
            const int64_t hit_blocks = static_cast<int64_t>(plan.from_cache) / p_.block_tokens;
            for (size_t i = 0; i < fetched.loaded_from.size(); ++i)
                if (fetched.ram_blocks + static_cast<int64_t>(i) < hit_blocks)
                    (fetched.loaded_from[i] ? plan.from_remote : plan.from_disk) += static_cast<size_t>(p_.block_tokens);
        }
        common = plan.from_cache;
    }
    plan.start = common;
    return plan;
}

void Context::compute_prompts(std::span<PromptWork> work, std::vector<float>* all_logits) {
    const uint32_t V = model_->config().n_vocab;
    size_t total = 0, done = 0;
    for (const PromptWork& w : work) {
        total += w.n - w.pos;
        w.seq->logits.resize(V);
    }
    const size_t first = work.empty() ? 0 : work[0].pos;  // all_logits: single prompt only
    if (all_logits) all_logits->assign(total * V, 0.0f);
    phase_.store(1, std::memory_order_relaxed);
    act_total_.store(total, std::memory_order_relaxed);
    act_done_.store(0, std::memory_order_relaxed);
    std::vector<size_t> members;
    std::vector<std::unique_ptr<CacheKv>> kvs;
    std::vector<SeqStep> steps;
    for (;;) {
        // One round: up to n_batch rows, taken from the prompts in order.
        members.clear();
        size_t budget = p_.n_batch;
        for (size_t i = 0; i < work.size() && budget > 0; ++i)
            if (work[i].pos < work[i].n) {
                work[i].len = std::min(budget, work[i].n - work[i].pos);
                budget -= work[i].len;
                members.push_back(i);
            }
        if (members.empty()) break;
        if (cancel_requested())
            fail(KVRT_ERR_CANCELLED, "prefill cancelled by kvrt_context_cancel after " + std::to_string(done) +
                                         " of " + std::to_string(total) + " tokens");
        size_t appended = 0;
        try {
            for (; appended < members.size(); ++appended) {
                const PromptWork& w = work[members[appended]];
                cache_->append(w.seq->id, w.tokens + w.pos, static_cast<int64_t>(w.len));
            }
            kvs.clear();
            steps.assign(members.size(), SeqStep{});
            for (size_t m = 0; m < members.size(); ++m) {
                PromptWork& w = work[members[m]];
                kvs.push_back(std::make_unique<CacheKv>(*cache_, w.seq->id));
                SeqStep& step = steps[m];
                step.kv = kvs.back().get();
                step.tokens = w.tokens + w.pos;
                step.n_tokens = static_cast<int32_t>(w.len);
                step.pos0 = static_cast<int64_t>(w.pos);
                if (all_logits) {
                    step.logits = all_logits->data() + (w.pos - first) * V;
                    step.logits_all = true;
                } else if (w.want) {
                    step.logits = w.rows + w.rows_done * V;
                    step.logits_all = true;
                    step.logits_mask = w.want + w.pos;
                } else if (w.pos + w.len == w.n) {
                    step.logits = w.seq->logits.data();
                }
            }
            decoder_forward(*model_, std::span<SeqStep>(steps), scratch_, KernelSet::Fast, p_.n_threads);
            for (size_t idx : members) {
                PromptWork& w = work[idx];
                cache_->mark_computed(w.seq->id, static_cast<int64_t>(w.pos + w.len));
            }
        } catch (...) {
            // Never keep rows that were not computed.
            for (size_t m = 0; m < appended; ++m) {
                const PromptWork& w = work[members[m]];
                cache_->truncate(w.seq->id, static_cast<int64_t>(w.pos));
            }
            throw;
        }
        for (size_t idx : members) {
            PromptWork& w = work[idx];
            w.seq->tokens.insert(w.seq->tokens.end(), w.tokens + w.pos, w.tokens + w.pos + w.len);
            if (w.want) w.rows_done += static_cast<size_t>(std::count(w.want + w.pos, w.want + w.pos + w.len, uint8_t{1}));
            w.pos += w.len;
            done += w.len;
            act_done_.store(done, std::memory_order_relaxed);
            if (w.pos == w.n) {
                if (all_logits) std::copy_n(all_logits->data() + (w.n - 1 - first) * V, V, w.seq->logits.data());
                if (w.want) std::copy_n(w.rows + (w.rows_done - 1) * V, V, w.seq->logits.data());  // want[n-1] is set
                w.seq->has_logits = true;
            }
        }
        if (p_.progress && total > p_.n_batch &&
            !p_.progress(static_cast<float>(done) / static_cast<float>(total), "prefill"))
            fail(KVRT_ERR_CANCELLED, "prefill cancelled by the progress callback after " + std::to_string(done) +
                                         " of " + std::to_string(total) + " tokens");
    }
}

void Context::fill_prefill_stats(RequestStats* stats, const PromptWork& w, int32_t seq, double t0) const {
    if (!stats) return;
    *stats = {};
    stats->prompt_tokens = w.n;
    stats->reused_tokens = w.start;
    stats->reused_from_cache = w.from_cache;
    stats->reused_from_disk = w.from_disk;
    stats->reused_from_remote = w.from_remote;
    stats->computed_tokens = w.n - w.start;
    stats->prefill_s = log::now_s() - t0;
    stats->ttft_s = stats->prefill_s;
    stats->kv_bytes = kv_bytes(seq);
}

void Context::prefill(int32_t seq, const int32_t* tokens, size_t n, RequestStats* stats,
                      std::vector<float>* all_logits) {
    const double t0 = log::now_s();
    Seq& s = seq_ref(seq);
    try {
        check_prompt("prefill", tokens, n);
    } catch (...) {
        s.has_logits = false;  // context.h: after a failed prefill the logits are unset
        throw;
    }
    ThreadScope threads(p_.n_threads);
    governor_.interrupt();  // the next decode step follows other work: not measured
    if (ced_) {
        KVRT_CHECK(all_logits == nullptr, KVRT_ERR_UNSUPPORTED,
                   "prefill: logits of every position are not available for CED models yet");
        prefill_ced(s, tokens, n, stats, t0);
        return;
    }
    const PrefillPlan plan = plan_prefill(s, tokens, n, all_logits != nullptr);
    PromptWork w{&s, tokens, n, plan.start, plan.from_cache, plan.start, 0};
    w.from_disk = plan.from_disk;
    w.from_remote = plan.from_remote;
    try {
        if (!plan.done) compute_prompts(std::span<PromptWork>(&w, 1), all_logits);
    } catch (const Error& e) {
        if (e.status() == KVRT_ERR_CANCELLED && stats) {  // how far it got
            fill_prefill_stats(stats, w, seq, t0);
            stats->computed_tokens = w.pos - w.start;
            stats->stop_reason = KVRT_STOP_CANCELLED;
        }
        throw;
    }
    fill_prefill_stats(stats, w, seq, t0);
}

void Context::prefill_batch(const int32_t* seqs, const int32_t* const* tokens, const size_t* n, size_t count,
                            RequestStats* stats) {
    const double t0 = log::now_s();
    KVRT_CHECK(seqs != nullptr && tokens != nullptr && n != nullptr && count > 0, KVRT_ERR_INVALID_ARGUMENT,
               "prefill_batch: empty batch");
    // Each id at most once: a count above n_seq_max is wrong before any array is read.
    KVRT_CHECK(count <= p_.n_seq_max, KVRT_ERR_INVALID_ARGUMENT,
               "prefill_batch: " + std::to_string(count) + " sequences, more than n_seq_max = " + std::to_string(p_.n_seq_max));
    // Every check before any sequence changes.
    std::vector<PromptWork> work(count);
    for (size_t i = 0; i < count; ++i) {
        work[i].seq = &seq_ref(seqs[i]);
        for (size_t j = 0; j < i; ++j)
            KVRT_CHECK(seqs[j] != seqs[i], KVRT_ERR_INVALID_ARGUMENT,
                       "prefill_batch: sequence " + std::to_string(seqs[i]) + " appears twice in the batch");
        check_prompt("prefill_batch", tokens[i], n[i]);
        work[i].tokens = tokens[i];
        work[i].n = n[i];
    }
    ThreadScope threads(p_.n_threads);
    governor_.interrupt();
    if (ced_) {  // the CED runtime runs one sequence at a time
        for (size_t i = 0; i < count; ++i) prefill_ced(*work[i].seq, work[i].tokens, work[i].n, stats ? stats + i : nullptr, t0);
        return;
    }
    for (PromptWork& w : work) {
        const PrefillPlan plan = plan_prefill(*w.seq, w.tokens, w.n, false);
        w.start = w.pos = plan.start;
        w.from_cache = plan.from_cache;
        w.from_disk = plan.from_disk;
        w.from_remote = plan.from_remote;
    }
    compute_prompts(work, nullptr);
    if (stats)
        for (size_t i = 0; i < count; ++i) fill_prefill_stats(stats + i, work[i], seqs[i], t0);
}

void Context::decode(const int32_t* seqs, const int32_t* toks, size_t n) {
    KVRT_CHECK(seqs != nullptr && toks != nullptr && n > 0, KVRT_ERR_INVALID_ARGUMENT, "decode: empty batch");
    KVRT_CHECK(n <= p_.n_seq_max, KVRT_ERR_INVALID_ARGUMENT,
               "decode: " + std::to_string(n) + " sequences, more than n_seq_max = " + std::to_string(p_.n_seq_max));
    check_tokens(toks, n);
    std::vector<Seq*> ss(n);
    for (size_t i = 0; i < n; ++i) {
        ss[i] = &seq_ref(seqs[i]);
        for (size_t j = 0; j < i; ++j)
            KVRT_CHECK(seqs[j] != seqs[i], KVRT_ERR_INVALID_ARGUMENT,
                       "decode: sequence " + std::to_string(seqs[i]) + " appears twice in the batch");
        KVRT_CHECK((ss[i]->id != 0 || ss[i]->ced != 0) && !ss[i]->tokens.empty(), KVRT_ERR_INVALID_ARGUMENT,
                   "decode: sequence " + std::to_string(seqs[i]) + " is empty (prefill it first)");
        KVRT_CHECK(ss[i]->tokens.size() < p_.n_ctx, KVRT_ERR_OUT_OF_RANGE,
                   "decode: sequence " + std::to_string(seqs[i]) + " is full (n_ctx = " + std::to_string(p_.n_ctx) + ")");
    }
    // n_threads 0: the governor picks this step's count (the same bits on any count) from the
    // measured times of earlier steps, per byte the step reads (weights + KV).
    const bool governed = p_.n_threads <= 0;
    if (governed && governor_.max_threads() != std::max(1, omp_get_max_threads()))
        governor_ = ThreadGovernor(omp_get_max_threads());
    const int nt = governed ? governor_.pick() : p_.n_threads;
    double work = 0;
    if (governed) {
        if (kv_bytes_per_token_ < 0) kv_bytes_per_token_ = ced_ ? 0.0 : cache_->stats().bytes_per_token;
        work = static_cast<double>(model_->decode_weight_bytes());
        for (size_t i = 0; i < n; ++i) work += kv_bytes_per_token_ * static_cast<double>(ss[i]->tokens.size());
    }
    const double t_step = log::now_s();
    ThreadScope threads(nt);
    if (ced_) {
        // One sequence at a time. Every argument was checked above, so a failure here is a
        // resource error (memory, cache budget); sequences decoded before it keep their token.
        for (size_t i = 0; i < n; ++i) decode_ced(*ss[i], toks[i]);
        if (governed) governor_.record(nt, log::now_s() - t_step, work);
        return;
    }
    // Reserve every row first; undo on failure (all-or-nothing).
    size_t appended = 0;
    try {
        for (; appended < n; ++appended) cache_->append(ss[appended]->id, &toks[appended], 1);
    } catch (...) {
        for (size_t i = 0; i < appended; ++i)
            cache_->truncate(ss[i]->id, static_cast<int64_t>(ss[i]->tokens.size()));
        throw;
    }
    const uint32_t V = model_->config().n_vocab;
    std::vector<std::unique_ptr<CacheKv>> kvs(n);
    std::vector<SeqStep> steps(n);
    for (size_t i = 0; i < n; ++i) {
        kvs[i] = std::make_unique<CacheKv>(*cache_, ss[i]->id);
        ss[i]->logits.resize(V);
        ss[i]->has_logits = false;
        steps[i].kv = kvs[i].get();
        steps[i].tokens = &toks[i];
        steps[i].n_tokens = 1;
        steps[i].pos0 = static_cast<int64_t>(ss[i]->tokens.size());
        steps[i].logits = ss[i]->logits.data();
    }
    try {
        decoder_forward(*model_, std::span<SeqStep>(steps), scratch_, KernelSet::Fast, nt);
    } catch (...) {
        for (size_t i = 0; i < n; ++i) cache_->truncate(ss[i]->id, static_cast<int64_t>(ss[i]->tokens.size()));
        throw;
    }
    if (governed) governor_.record(nt, log::now_s() - t_step, work);
    for (size_t i = 0; i < n; ++i) {
        ss[i]->tokens.push_back(toks[i]);
        cache_->mark_computed(ss[i]->id, static_cast<int64_t>(ss[i]->tokens.size()));
        ss[i]->has_logits = true;
    }
}

void Context::prefill_ced(Seq& s, const int32_t* tokens, size_t n, RequestStats* stats, double t0) {
    // The common prefix with what the sequence holds: extend it when the prompt continues it
    // (a chat turn), cut it at the first changed token when the CED runtime can (its ratios and
    // windows allow the cut), else start over through the prefix caches.
    size_t common = 0;
    while (common < s.tokens.size() && common < n && s.tokens[common] == tokens[common]) ++common;
    RequestStats st;
    st.prompt_tokens = n;
    if (common == n && s.tokens.size() == n && s.has_logits) {
        st.reused_tokens = n;
    } else {
        if (common == n) common = n - 1;  // the last token's logits must be computed
        s.has_logits = false;
        bool kept = false;
        if (s.ced != 0 && common > 0) {
            try {
                ced_->truncate(s.ced, static_cast<int64_t>(common));
                s.tokens.resize(common);
                kept = true;
            } catch (const Error& e) {
                if (e.status() != KVRT_ERR_INVALID_STATE) throw;
            }
        }
        if (kept) {
            s.logits = ced_->extend(s.ced, tokens + common, static_cast<int64_t>(n - common));
            s.tokens.assign(tokens, tokens + n);
            st.reused_tokens = common;
            st.computed_tokens = n - common;
        } else {
            drop(s);
            s.ced = ced_->create();
            const ced::Resume resume = p_.prefix_caching ? p_.ced_resume : ced::Resume::Cold;
            ced::PrefillResult r = ced_->prefill(s.ced, tokens, static_cast<int64_t>(n), p_.ced_prefill, resume);
            s.logits = std::move(r.logits);
            s.tokens.assign(tokens, tokens + n);
            st.reused_tokens = st.reused_from_cache = static_cast<uint64_t>(r.hit);
            st.computed_tokens = static_cast<uint64_t>(r.computed);
        }
        s.has_logits = true;
    }
    if (stats) {
        st.prefill_s = st.ttft_s = log::now_s() - t0;
        st.kv_bytes = ced_->bytes(s.ced);
        *stats = st;
    }
}

void Context::decode_ced(Seq& s, int32_t token) {
    s.has_logits = false;
    s.logits = ced_->extend(s.ced, &token, 1);
    s.tokens.push_back(token);
    s.has_logits = true;
}

namespace {
// Bytes at the end of s that form an incomplete UTF-8 character.
size_t incomplete_utf8_tail(const std::string& s) {
    const size_t n = s.size();
    for (size_t back = 1; back <= 3 && back <= n; ++back) {
        const unsigned char c = static_cast<unsigned char>(s[n - back]);
        if ((c & 0xC0) == 0x80) continue;  // continuation byte: keep looking for the lead
        size_t need = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 1;
        return need > back ? back : 0;
    }
    return 0;
}
}  // namespace

void Context::generate(int32_t seq, const int32_t* prompt, size_t n_prompt, const GenerateParams& gp,
                       RequestStats* stats, std::vector<int32_t>* out_tokens) {
    const double t0 = log::now_s();
    RequestStats st;
    try {
        prefill(seq, prompt, n_prompt, &st);
    } catch (const Error& e) {
        if (e.status() == KVRT_ERR_CANCELLED && stats) *stats = st;
        throw;
    }
    Sampler greedy_sampler(SamplerParams{});
    Sampler& sampler = gp.sampler ? *gp.sampler : greedy_sampler;
    const uint32_t V = model_->config().n_vocab;
    std::string text;     // everything generated so far
    size_t emitted = 0;   // bytes of text passed to on_token
    size_t max_stop = 0;
    for (const std::string& ss : gp.stop_strings) max_stop = std::max(max_stop, ss.size());
    int reason = KVRT_STOP_NONE;
    double decode_s = 0;
    uint64_t decoded = 0;
    // The caller's buffers (kvrt_generate_config's output fields), kept current after every
    // token so that they hold what was produced even when a later step fails.
    size_t text_in_buf = 0;
    if (gp.tokens_written) *gp.tokens_written = 0;
    if (gp.text_written) *gp.text_written = 1;  // the text-buffer convention: the NUL counts
    if (gp.text_out && gp.text_capacity > 0) gp.text_out[0] = '\0';
    auto emit_text = [&](size_t upto) {  // text[0, upto) is the answer so far
        if (gp.text_written) *gp.text_written = upto + 1;
        if (!gp.text_out || gp.text_capacity == 0) return;
        size_t n = std::min(upto, gp.text_capacity - 1);
        while (n > text_in_buf && n < upto && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;
        if (n > text_in_buf) {
            std::memcpy(gp.text_out + text_in_buf, text.data() + text_in_buf, n - text_in_buf);
            text_in_buf = n;
            gp.text_out[n] = '\0';
        }
    };
    // Penalty stages see the prompt, then every token sampled (sampler_chain.hpp).
    sampler.begin(prompt, n_prompt);
    phase_.store(2, std::memory_order_relaxed);
    auto cancelled = [&] {
        st.decode_s = decode_s;
        st.stop_reason = KVRT_STOP_CANCELLED;
        st.kv_bytes = kv_bytes(seq);
        if (stats) *stats = st;
        fail(KVRT_ERR_CANCELLED, "generate cancelled by kvrt_context_cancel after " +
                                     std::to_string(st.generated_tokens) + " tokens");
    };
    for (uint32_t i = 0;; ++i) {
        if (i >= gp.max_tokens) {
            reason = KVRT_STOP_MAX_TOKENS;
            break;
        }
        if (cancel_requested()) cancelled();
        const double ts = log::now_s();
        const int32_t tok = sampler.sample(logits(seq).data(), V);
        sampler.accept(tok);
        st.sample_s += log::now_s() - ts;
        if (i == 0) st.ttft_s = log::now_s() - t0;
        if (gp.stop_at_eog && model_->is_eog(tok)) {
            reason = KVRT_STOP_EOG;
            break;
        }
        st.generated_tokens++;
        act_generated_.store(st.generated_tokens, std::memory_order_relaxed);
        if (out_tokens) out_tokens->push_back(tok);
        if (gp.tokens_out && st.generated_tokens <= gp.tokens_capacity) gp.tokens_out[st.generated_tokens - 1] = tok;
        if (gp.tokens_written) *gp.tokens_written = st.generated_tokens;
        text += model_->token_piece(tok);
        // Stop strings: cut the text before the first occurrence.
        size_t stop_at = std::string::npos;
        for (const std::string& ss : gp.stop_strings) {
            if (ss.empty()) continue;
            const size_t from = emitted >= ss.size() ? emitted - ss.size() + 1 : 0;
            const size_t f = text.find(ss, from);
            if (f != std::string::npos) stop_at = std::min(stop_at, f);
        }
        size_t safe = text.size();
        if (stop_at != std::string::npos) {
            safe = std::max(stop_at, emitted);
        } else {
            // Hold back a tail that could start a stop string, and an incomplete UTF-8 character.
            for (const std::string& ss : gp.stop_strings)
                for (size_t k = std::min(ss.size() - (ss.empty() ? 0 : 1), text.size() - emitted); k > 0; --k)
                    if (text.compare(text.size() - k, k, ss, 0, k) == 0) {
                        safe = std::min(safe, text.size() - k);
                        break;
                    }
            safe = std::min(safe, text.size() - incomplete_utf8_tail(text));
            safe = std::max(safe, emitted);
        }
        bool go_on = true;
        emit_text(safe);
        if (gp.on_token) go_on = gp.on_token(tok, text.data() + emitted, safe - emitted);
        emitted = safe;
        if (stop_at != std::string::npos) {
            reason = KVRT_STOP_STRING;
            break;
        }
        if (!go_on) {
            reason = KVRT_STOP_CALLBACK;
            break;
        }
        if (i + 1 >= gp.max_tokens) {
            reason = KVRT_STOP_MAX_TOKENS;
            break;
        }
        if (tokens(seq).size() >= p_.n_ctx) {
            reason = KVRT_STOP_CONTEXT_FULL;
            break;
        }
        if (cancel_requested()) cancelled();
        const double td = log::now_s();
        decode(&seq, &tok, 1);
        decode_s += log::now_s() - td;
        decoded++;
    }
    // Flush text held back for a stop string that never came.
    if (reason != KVRT_STOP_STRING && emitted < text.size() && !text.empty()) {
        emit_text(text.size());
        if (gp.on_token) gp.on_token(-1, text.data() + emitted, text.size() - emitted);
    }
    (void)max_stop;
    st.decode_s = decode_s;
    st.stop_reason = reason;
    st.kv_bytes = kv_bytes(seq);
    if (stats) *stats = st;
    (void)decoded;
}

}  // namespace kvrt::runtime
