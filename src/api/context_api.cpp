// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// kvrt_context_*, kvrt_sampler_*, kvrt_generate_*, kvrt_request_stats_*.
#include "api/cache_handles.hpp"
#include "api/model_handles.hpp"
#include "api/tier_api.hpp"
#include "api/struct_versions.h"
#include "runtime/sampler_chain.hpp"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

using kvrt::Error;
using kvrt::api::guard;
using kvrt::api::require_capacity;
using kvrt::api::require_non_null;

namespace {

// kvrt_context_config as 0.1 shipped it (through progress_user_data): the smallest size accepted.
constexpr size_t kContextConfigV01 = KVRT_MIN_SIZE_kvrt_context_config;

template <class Cfg>
void init_struct(Cfg* cfg, size_t struct_size, size_t min_size, const char* name) {
    require_non_null(cfg, "cfg");
    if (struct_size < min_size || struct_size > sizeof(Cfg))
        throw Error(KVRT_ERR_INVALID_ARGUMENT,
                    "struct_size " + std::to_string(struct_size) + " is not a known size of " + name);
    std::memset(static_cast<void*>(cfg), 0, struct_size);
    cfg->struct_size = struct_size;
}

// Copies a caller's versioned struct over defaults (fields it does not know keep them).
template <class Cfg>
Cfg merged(const Cfg* user, const Cfg& defaults, size_t min_size, const char* name) {
    Cfg c = defaults;
    if (user) {
        kvrt::api::require_config(user, name, min_size);
        std::memcpy(static_cast<void*>(&c), user, user->struct_size);
        c.struct_size = sizeof(Cfg);
    }
    return c;
}

void fill_stats(kvrt_request_stats* out, const kvrt::runtime::RequestStats& s) {
    if (!out) return;
    kvrt::api::require_config(out, "stats", KVRT_MIN_SIZE_kvrt_request_stats);
    kvrt_request_stats r;
    std::memset(&r, 0, sizeof r);
    r.struct_size = out->struct_size;
    r.prompt_tokens = s.prompt_tokens;
    r.reused_tokens = s.reused_tokens;
    r.reused_from_cache = s.reused_from_cache;
    r.computed_tokens = s.computed_tokens;
    r.generated_tokens = s.generated_tokens;
    r.time_to_first_token_s = s.ttft_s;
    r.prefill_s = s.prefill_s;
    r.decode_s = s.decode_s;
    const uint64_t decoded = s.generated_tokens > 0 ? s.generated_tokens - 1 : 0;
    r.decode_tokens_per_s = s.decode_s > 0 ? static_cast<double>(decoded) / s.decode_s : 0.0;
    r.kv_bytes = s.kv_bytes;
    r.stop_reason = s.stop_reason;
    r.reused_from_disk = s.reused_from_disk;
    r.reused_from_remote = s.reused_from_remote;
    r.sample_s = s.sample_s;
    r.reused_from_ram = s.reused_from_cache - std::min(s.reused_from_cache, s.reused_from_disk + s.reused_from_remote);
    std::memcpy(out, &r, out->struct_size);
}

// Runs a computing call; on cancellation the caller's stats still say how far it got.
template <class Fn>
void run_filling(kvrt_request_stats* out, const kvrt::runtime::RequestStats& s, Fn&& fn) {
    try {
        fn();
    } catch (const Error& e) {
        if (e.status() == KVRT_ERR_CANCELLED) fill_stats(out, s);
        throw;
    }
    fill_stats(out, s);
}

// kvrt_generate_config as 0.1 shipped it (through user_data): the smallest size accepted.
constexpr size_t kGenerateConfigV01 = KVRT_MIN_SIZE_kvrt_generate_config;


}  // namespace

extern "C" {

KVRT_API kvrt_status kvrt_context_config_init(kvrt_context_config* cfg, size_t struct_size) {
    return guard("kvrt_context_config_init", [&] {
        init_struct(cfg, struct_size, kContextConfigV01, "kvrt_context_config");
        cfg->n_seq_max = 1;
        cfg->n_batch = 512;
        cfg->kv_dtype = KVRT_DTYPE_F16;
        cfg->block_tokens = 0;  // the model's default (runtime/context.hpp kDefaultBlockTokens)
        cfg->prefix_caching = 1;
        if (struct_size >= offsetof(kvrt_context_config, v_dtype) + sizeof(int32_t)) {
            cfg->k_dtype = -1;
            cfg->v_dtype = -1;
        }
        if (struct_size >= offsetof(kvrt_context_config, act_bits) + sizeof(int32_t)) cfg->act_bits = 0;
        if (struct_size >= offsetof(kvrt_context_config, bank_dtype) + sizeof(int32_t)) cfg->bank_dtype = -1;
    });
}

KVRT_API kvrt_status kvrt_context_create(kvrt_context** out, const kvrt_model* model, const kvrt_context_config* cfg) {
    if (out) *out = nullptr;
    return guard("kvrt_context_create", [&] {
        require_non_null(out, "out");
        auto mp = kvrt::api::model_of(model);
        kvrt_context_config d;
        kvrt_context_config_init(&d, sizeof d);
        const kvrt_context_config c = merged(cfg, d, kContextConfigV01, "cfg");
        if (c.kv_dtype == KVRT_DTYPE_FP4 || c.k_dtype == KVRT_DTYPE_FP4 || c.v_dtype == KVRT_DTYPE_FP4)
            throw Error(KVRT_ERR_INVALID_ARGUMENT, "cfg->kv_dtype / k_dtype / v_dtype 5 (fp4): 4-bit rows are CED bank "
                                                   "rows and indexer keys only; set cfg->bank_dtype");
        if (c.kv_dtype < KVRT_DTYPE_F32 || c.kv_dtype > KVRT_DTYPE_FP8_E4M3)
            throw Error(KVRT_ERR_INVALID_ARGUMENT, "cfg->kv_dtype " + std::to_string(c.kv_dtype) +
                                                       " is not a context's kvrt_dtype (KVRT_DTYPE_F32..FP8_E4M3)");
        if (c.k_dtype < -1 || c.k_dtype > KVRT_DTYPE_FP8_E4M3)
            throw Error(KVRT_ERR_INVALID_ARGUMENT, "cfg->k_dtype " + std::to_string(c.k_dtype) +
                                                       " is not -1 or a context's kvrt_dtype (KVRT_DTYPE_F32..FP8_E4M3)");
        if (c.v_dtype < -1 || c.v_dtype > KVRT_DTYPE_FP8_E4M3)
            throw Error(KVRT_ERR_INVALID_ARGUMENT, "cfg->v_dtype " + std::to_string(c.v_dtype) +
                                                       " is not -1 or a context's kvrt_dtype (KVRT_DTYPE_F32..FP8_E4M3)");
        if (c.reserved0 != 0) throw Error(KVRT_ERR_INVALID_ARGUMENT, "cfg->reserved0 must be 0");
        kvrt::api::require_thread_count(c.n_threads, "cfg->n_threads");
        if (c.prefix_caching != 0 && c.prefix_caching != 1)
            throw Error(KVRT_ERR_INVALID_ARGUMENT, "cfg->prefix_caching must be 0 or 1");
        std::shared_ptr<kvrt::cache::Cache> shared;
        if (c.cache != nullptr) shared = kvrt::api::cache_from_handle(c.cache, "cfg->cache");
        kvrt::runtime::ContextParams p;
        p.n_ctx = c.n_ctx;
        p.n_seq_max = c.n_seq_max;
        p.n_batch = c.n_batch;
        p.n_threads = c.n_threads;
        p.kv_dtype = static_cast<kvrt::DType>(c.k_dtype >= 0 ? c.k_dtype : c.kv_dtype);
        {
            const auto vdt = static_cast<kvrt::DType>(c.v_dtype >= 0 ? c.v_dtype : c.kv_dtype);
            if (vdt != p.kv_dtype) p.kv_v_dtype = vdt;
        }
        p.block_tokens = static_cast<int32_t>(c.block_tokens);  // 0: the default, resolved by the context
        if (c.block_tokens > 4096) throw Error(KVRT_ERR_INVALID_ARGUMENT, "cfg->block_tokens above 4096");
        p.cache_bytes = c.cache_bytes;
        p.prefix_caching = c.prefix_caching != 0;
        p.salt = c.cache_salt ? c.cache_salt : "";
        if (c.ced_prefill_mode != KVRT_CED_PREFILL_EXACT && c.ced_prefill_mode != KVRT_CED_PREFILL_CED)
            throw Error(KVRT_ERR_INVALID_ARGUMENT, "cfg->ced_prefill_mode " + std::to_string(c.ced_prefill_mode) +
                                                       " is not a kvrt_ced_prefill_mode value");
        if (c.ced_resume < KVRT_CED_RESUME_AUTO || c.ced_resume > KVRT_CED_RESUME_COLD)
            throw Error(KVRT_ERR_INVALID_ARGUMENT,
                        "cfg->ced_resume " + std::to_string(c.ced_resume) + " is not a kvrt_ced_resume value");
        p.ced_prefill = static_cast<kvrt::ced::PrefillMode>(c.ced_prefill_mode);
        p.ced_resume = static_cast<kvrt::ced::Resume>(c.ced_resume);
        if (c.act_bits != 0 && c.act_bits != 8 && c.act_bits != KVRT_ACT_BITS_OUTLIERS && c.act_bits != 16)
            throw Error(KVRT_ERR_INVALID_ARGUMENT,
                        "cfg->act_bits " + std::to_string(c.act_bits) + " is not 0 (the default), 8, 9 or 16");
        p.act_bits = c.act_bits;
        if (c.bank_dtype != -1 && c.bank_dtype != KVRT_DTYPE_F32 && c.bank_dtype != KVRT_DTYPE_F16 &&
            c.bank_dtype != KVRT_DTYPE_BF16 && c.bank_dtype != KVRT_DTYPE_FP4)
            throw Error(KVRT_ERR_INVALID_ARGUMENT, "cfg->bank_dtype " + std::to_string(c.bank_dtype) +
                                                       " is not -1 or a bank row type (KVRT_DTYPE_F32, _F16, _BF16, _FP4)");
        if (c.bank_dtype >= 0) p.ced_bank_dtype = static_cast<kvrt::DType>(c.bank_dtype);
        if (c.progress) {
            kvrt_progress_fn fn = c.progress;
            void* ud = c.progress_user_data;
            p.progress = [fn, ud](float f, const char* stage) { return fn(f, stage, ud) == 0; };
        }
        if (c.n_tiers > 0 && c.cache != nullptr)
            throw Error(KVRT_ERR_INVALID_ARGUMENT,
                        "cfg->tiers with cfg->cache: give the shared cache its tiers with kvrt_cache_add_tier");
        std::vector<std::shared_ptr<kvrt::cache::BlockTier>> tiers;  // made first: all or nothing
        if (c.n_tiers > 0) require_non_null(c.tiers, "cfg->tiers");
        for (size_t i = 0; i < c.n_tiers; ++i)
            tiers.push_back(kvrt::api::make_tier(
                reinterpret_cast<const kvrt_tier_config*>(reinterpret_cast<const char*>(c.tiers) + i * c.tiers[0].struct_size),
                ("cfg->tiers[" + std::to_string(i) + "]").c_str()));
        auto context = std::make_shared<kvrt::runtime::Context>(mp, p, std::move(shared));
        for (auto& t : tiers) context->cache()->add_tier(std::move(t));
        *out = kvrt::api::contexts().add(std::move(context));
    });
}

KVRT_API void kvrt_context_destroy(kvrt_context* ctx) {
    try {
        kvrt::api::contexts().remove(ctx);  // the Context (and its references) go with it
    } catch (...) {
    }
}

KVRT_API kvrt_status kvrt_context_get_cache(kvrt_cache** out, const kvrt_context* ctx) {
    if (out) *out = nullptr;
    return guard("kvrt_context_get_cache", [&] {
        require_non_null(out, "out");
        *out = kvrt::api::cache_handle_for(kvrt::api::context_of(ctx)->cache());
    });
}

KVRT_API kvrt_status kvrt_request_stats_init(kvrt_request_stats* stats, size_t struct_size) {
    return guard("kvrt_request_stats_init",
                 [&] { init_struct(stats, struct_size, KVRT_MIN_SIZE_kvrt_request_stats, "kvrt_request_stats"); });
}

KVRT_API kvrt_status kvrt_context_prefill(kvrt_request_stats* stats, kvrt_context* ctx, int32_t seq_id,
                                          const int32_t* tokens, size_t n_tokens) {
    return guard("kvrt_context_prefill", [&] {
        auto cp = kvrt::api::context_of(ctx);
        kvrt::runtime::Context& c = *cp;
        if (stats) kvrt::api::require_config(stats, "stats", KVRT_MIN_SIZE_kvrt_request_stats);
        require_non_null(tokens, "tokens");
        if (n_tokens == 0) throw Error(KVRT_ERR_INVALID_ARGUMENT, "n_tokens is 0");
        kvrt::runtime::Context::Call call(c, "kvrt_context_prefill");
        kvrt::runtime::RequestStats s;
        run_filling(stats, s, [&] { c.prefill(seq_id, tokens, n_tokens, &s); });
    });
}

KVRT_API kvrt_status kvrt_context_seq_restore(kvrt_request_stats* stats, int32_t* recomputed, kvrt_context* ctx,
                                              int32_t seq_id, const char* path) {
    // (Here beside prefill, whose stats it fills; the file work is Context::restore_seq's.)
    bool re = false;
    const kvrt_status st = guard("kvrt_context_seq_restore", [&] {
        auto cp = kvrt::api::context_of(ctx);
        if (stats) kvrt::api::require_config(stats, "stats", KVRT_MIN_SIZE_kvrt_request_stats);
        require_non_null(path, "path");
        kvrt::runtime::Context::Call call(*cp, "kvrt_context_seq_restore");
        kvrt::runtime::RequestStats s;
        run_filling(stats, s, [&] { cp->restore_seq(seq_id, path, &s, &re); });
    });
    if (recomputed) *recomputed = re ? 1 : 0;  // (also after a failed recompute)
    return st;
}

KVRT_API kvrt_status kvrt_context_prefill_batch(kvrt_request_stats* stats, kvrt_context* ctx, const int32_t* seq_ids,
                                                const int32_t* const* tokens, const size_t* n_tokens, size_t n_seqs) {
    return guard("kvrt_context_prefill_batch", [&] {
        auto cp = kvrt::api::context_of(ctx);
        kvrt::runtime::Context& c = *cp;
        require_non_null(seq_ids, "seq_ids");
        require_non_null(tokens, "tokens");
        require_non_null(n_tokens, "n_tokens");
        if (n_seqs == 0) throw Error(KVRT_ERR_INVALID_ARGUMENT, "n_seqs is 0");
        // Stats entries are stats->struct_size bytes apart (the caller's struct version).
        if (stats) kvrt::api::require_config(stats, "stats", KVRT_MIN_SIZE_kvrt_request_stats);
        auto entry = [&](size_t i) {
            return reinterpret_cast<kvrt_request_stats*>(reinterpret_cast<char*>(stats) + i * stats->struct_size);
        };
        for (size_t i = 0; i < n_seqs; ++i) {
            // Built by appending: GCC 12's -Wrestrict misfires on "[" + std::string&&.
            std::string at = std::to_string(i);
            at.insert(at.begin(), '[');
            at.push_back(']');
            if (stats && entry(i)->struct_size != stats->struct_size)
                throw Error(KVRT_ERR_INVALID_ARGUMENT, "stats" + at + ".struct_size differs from stats[0].struct_size");
            if (!tokens[i]) throw Error(KVRT_ERR_INVALID_ARGUMENT, "tokens" + at + " is NULL");
            if (n_tokens[i] == 0) throw Error(KVRT_ERR_INVALID_ARGUMENT, "n_tokens" + at + " is 0");
        }
        kvrt::runtime::Context::Call call(c, "kvrt_context_prefill_batch");
        std::vector<kvrt::runtime::RequestStats> s(n_seqs);
        c.prefill_batch(seq_ids, tokens, n_tokens, n_seqs, s.data());
        if (stats)
            for (size_t i = 0; i < n_seqs; ++i) fill_stats(entry(i), s[i]);
    });
}

KVRT_API kvrt_status kvrt_context_decode(kvrt_context* ctx, const int32_t* seq_ids, const int32_t* tokens, size_t n) {
    return guard("kvrt_context_decode", [&] {
        auto cp = kvrt::api::context_of(ctx);
        kvrt::runtime::Context& c = *cp;
        require_non_null(seq_ids, "seq_ids");
        require_non_null(tokens, "tokens");
        if (n == 0) throw Error(KVRT_ERR_INVALID_ARGUMENT, "n is 0");
        kvrt::runtime::Context::Call call(c, "kvrt_context_decode");
        c.decode(seq_ids, tokens, n);
    });
}

KVRT_API kvrt_status kvrt_context_get_logits(float* dst, size_t capacity, size_t* written, const kvrt_context* ctx,
                                             int32_t seq_id) {
    return guard("kvrt_context_get_logits", [&] {
        require_non_null(written, "written");
        const auto cp = kvrt::api::context_of(ctx);
        kvrt::runtime::Context& c = *cp;
        const std::vector<float>& l = c.logits(seq_id);
        require_capacity(capacity, dst, l.size(), written, "kvrt_context_get_logits");
        if (dst) std::memcpy(dst, l.data(), l.size() * sizeof(float));
    });
}

KVRT_API kvrt_status kvrt_context_prefill_logits(kvrt_request_stats* stats, kvrt_context* ctx, int32_t seq_id,
                                                 const int32_t* tokens, size_t n_tokens, const uint32_t* positions,
                                                 size_t n_positions) {
    return guard("kvrt_context_prefill_logits", [&] {
        auto cp = kvrt::api::context_of(ctx);
        kvrt::runtime::Context& c = *cp;
        if (stats) kvrt::api::require_config(stats, "stats", KVRT_MIN_SIZE_kvrt_request_stats);
        require_non_null(tokens, "tokens");
        if (n_tokens == 0) throw Error(KVRT_ERR_INVALID_ARGUMENT, "n_tokens is 0");
        require_non_null(positions, "positions");
        if (n_positions == 0) throw Error(KVRT_ERR_INVALID_ARGUMENT, "n_positions is 0");
        kvrt::runtime::Context::Call call(c, "kvrt_context_prefill_logits");
        kvrt::runtime::RequestStats s;
        c.prefill_positions(seq_id, tokens, n_tokens, positions, n_positions, &s);
        fill_stats(stats, s);
    });
}

KVRT_API kvrt_status kvrt_context_get_logits_at(float* dst, size_t capacity, size_t* written, const kvrt_context* ctx,
                                                int32_t seq_id, size_t position) {
    return guard("kvrt_context_get_logits_at", [&] {
        require_non_null(written, "written");
        const auto cp = kvrt::api::context_of(ctx);
        const kvrt::runtime::Context& c = *cp;
        const float* row = c.position_logits(seq_id, position);
        const size_t V = c.model().config().n_vocab;
        require_capacity(capacity, dst, V, written, "kvrt_context_get_logits_at");
        if (dst) std::memcpy(dst, row, V * sizeof(float));
    });
}

KVRT_API kvrt_status kvrt_context_seq_length(size_t* out, const kvrt_context* ctx, int32_t seq_id) {
    return guard("kvrt_context_seq_length", [&] {
        require_non_null(out, "out");
        *out = kvrt::api::context_of(ctx)->tokens(seq_id).size();
    });
}

KVRT_API kvrt_status kvrt_context_seq_kv_bytes(uint64_t* out, const kvrt_context* ctx, int32_t seq_id) {
    return guard("kvrt_context_seq_kv_bytes", [&] {
        require_non_null(out, "out");
        *out = kvrt::api::context_of(ctx)->kv_bytes(seq_id);
    });
}

KVRT_API kvrt_status kvrt_context_seq_release(kvrt_context* ctx, int32_t seq_id) {
    return guard("kvrt_context_seq_release", [&] {
        auto cp = kvrt::api::context_of(ctx);
        kvrt::runtime::Context::Call call(*cp, "kvrt_context_seq_release");
        cp->release(seq_id);
    });
}

KVRT_API kvrt_status kvrt_sampler_config_init(kvrt_sampler_config* cfg, size_t struct_size) {
    return guard("kvrt_sampler_config_init", [&] {
        init_struct(cfg, struct_size, KVRT_MIN_SIZE_kvrt_sampler_config, "kvrt_sampler_config");
        cfg->top_p = 1.0f;
    });
}

KVRT_API kvrt_status kvrt_sampler_create(kvrt_sampler** out, const kvrt_sampler_config* cfg) {
    if (out) *out = nullptr;
    return guard("kvrt_sampler_create", [&] {
        require_non_null(out, "out");
        kvrt::runtime::SamplerParams p;  // NULL cfg: the defaults of kvrt_sampler_config_init (greedy)
        if (cfg) {
            kvrt::api::require_config(cfg, "cfg", KVRT_MIN_SIZE_kvrt_sampler_config);
            p.temperature = cfg->temperature;
            p.top_k = cfg->top_k;
            p.top_p = cfg->top_p;
            p.min_p = cfg->min_p;
            p.seed = cfg->seed;
        }
        *out = kvrt::api::samplers().add(std::make_shared<kvrt::runtime::Sampler>(p));
    });
}

KVRT_API void kvrt_sampler_destroy(kvrt_sampler* sampler) {
    try {
        kvrt::api::samplers().remove(sampler);
    } catch (...) {
    }
}

KVRT_API kvrt_status kvrt_sampler_sample(int32_t* out, kvrt_sampler* sampler, const float* logits, size_t n_logits) {
    return guard("kvrt_sampler_sample", [&] {
        require_non_null(out, "out");
        auto sp = kvrt::api::sampler_of(sampler);
        require_non_null(logits, "logits");
        if (n_logits == 0) throw Error(KVRT_ERR_INVALID_ARGUMENT, "n_logits is 0");
        if (n_logits > static_cast<size_t>(INT32_MAX)) throw Error(KVRT_ERR_OVERFLOW, "n_logits above INT32_MAX");
        *out = sp->sample(logits, n_logits);
    });
}

KVRT_API kvrt_status kvrt_generate_config_init(kvrt_generate_config* cfg, size_t struct_size) {
    return guard("kvrt_generate_config_init", [&] {
        init_struct(cfg, struct_size, kGenerateConfigV01, "kvrt_generate_config");
        cfg->max_tokens = 256;
        cfg->stop_at_eog = 1;
    });
}

KVRT_API kvrt_status kvrt_context_generate(kvrt_request_stats* stats, kvrt_context* ctx, int32_t seq_id,
                                           const int32_t* prompt, size_t n_prompt, const kvrt_generate_config* cfg) {
    return guard("kvrt_context_generate", [&] {
        auto cp = kvrt::api::context_of(ctx);
        kvrt::runtime::Context& c = *cp;
        if (stats) kvrt::api::require_config(stats, "stats", KVRT_MIN_SIZE_kvrt_request_stats);
        require_non_null(prompt, "prompt");
        if (n_prompt == 0) throw Error(KVRT_ERR_INVALID_ARGUMENT, "n_prompt is 0");
        kvrt_generate_config d;
        kvrt_generate_config_init(&d, sizeof d);
        const kvrt_generate_config g = merged(cfg, d, kGenerateConfigV01, "cfg");
        kvrt::runtime::GenerateParams gp;
        gp.max_tokens = g.max_tokens;
        gp.stop_at_eog = g.stop_at_eog != 0;
        std::shared_ptr<kvrt::runtime::Sampler> sp;
        if (g.sampler) gp.sampler = (sp = kvrt::api::sampler_of(g.sampler, "cfg->sampler")).get();
        if (g.stop_strings == nullptr && g.n_stop_strings > 0)
            throw Error(KVRT_ERR_INVALID_ARGUMENT, "cfg->stop_strings is NULL with n_stop_strings > 0");
        for (size_t i = 0; i < g.n_stop_strings; ++i) {
            if (!g.stop_strings[i]) throw Error(KVRT_ERR_INVALID_ARGUMENT, "cfg->stop_strings[" + std::to_string(i) + "] is NULL");
            gp.stop_strings.emplace_back(g.stop_strings[i]);
        }
        if (g.on_token) {
            kvrt_token_fn fn = g.on_token;
            void* ud = g.user_data;
            gp.on_token = [fn, ud](int32_t t, const char* s, size_t n) { return fn(t, s, n, ud) == 0; };
        }
        if (g.tokens_out == nullptr && g.tokens_capacity > 0)
            throw Error(KVRT_ERR_INVALID_ARGUMENT, "cfg->tokens_out is NULL with tokens_capacity > 0");
        if (g.text_out == nullptr && g.text_capacity > 0)
            throw Error(KVRT_ERR_INVALID_ARGUMENT, "cfg->text_out is NULL with text_capacity > 0");
        gp.tokens_out = g.tokens_out;
        gp.tokens_capacity = g.tokens_out ? g.tokens_capacity : 0;
        gp.tokens_written = g.tokens_written;
        gp.text_out = g.text_out;
        gp.text_capacity = g.text_out ? g.text_capacity : 0;
        gp.text_written = g.text_written;
        kvrt::runtime::Context::Call call(c, "kvrt_context_generate");
        kvrt::runtime::RequestStats s;
        run_filling(stats, s, [&] { c.generate(seq_id, prompt, n_prompt, gp, &s); });
    });
}

KVRT_API kvrt_status kvrt_sampler_stage_init(kvrt_sampler_stage* stage, size_t struct_size) {
    return guard("kvrt_sampler_stage_init", [&] {
        init_struct(stage, struct_size, KVRT_MIN_SIZE_kvrt_sampler_stage, "kvrt_sampler_stage");
        stage->top_k = 40;
        stage->p = 1.0f;
        stage->temperature = 0.8f;
        stage->penalty_last_n = 64;
        stage->repeat_penalty = 1.0f;
    });
}

KVRT_API kvrt_status kvrt_sampler_chain_create(kvrt_sampler** out, uint64_t seed) {
    if (out) *out = nullptr;
    return guard("kvrt_sampler_chain_create", [&] {
        require_non_null(out, "out");
        *out = kvrt::api::samplers().add(
            std::make_shared<kvrt::runtime::Sampler>(std::make_unique<kvrt::runtime::SamplerChain>(seed)));
    });
}

KVRT_API kvrt_status kvrt_sampler_chain_add(kvrt_sampler* sampler, const kvrt_sampler_stage* stage) {
    return guard("kvrt_sampler_chain_add", [&] {
        auto sp = kvrt::api::sampler_of(sampler);
        kvrt::api::require_config(stage, "stage", KVRT_MIN_SIZE_kvrt_sampler_stage);
        kvrt::runtime::SamplerChain* chain = sp->chain();
        if (!chain)
            throw Error(KVRT_ERR_INVALID_STATE,
                        "the sampler was made by kvrt_sampler_create, not kvrt_sampler_chain_create: it has no stages");
        kvrt::runtime::SamplerStage st;
        if (stage->type < KVRT_SAMPLER_PENALTIES || stage->type > KVRT_SAMPLER_GREEDY)
            throw Error(KVRT_ERR_INVALID_ARGUMENT,
                        "stage->type " + std::to_string(stage->type) + " is not a kvrt_sampler_stage_type");
        st.type = static_cast<kvrt::runtime::StageType>(stage->type);
        st.top_k = stage->top_k;
        st.p = stage->p;
        st.temperature = stage->temperature;
        st.last_n = stage->penalty_last_n;
        st.repeat = stage->repeat_penalty;
        st.frequency = stage->frequency_penalty;
        st.presence = stage->presence_penalty;
        if (stage->type == KVRT_SAMPLER_LOGIT_BIAS && stage->n_bias > 0) {
            require_non_null(stage->bias_tokens, "stage->bias_tokens");
            require_non_null(stage->bias_values, "stage->bias_values");
            if (stage->n_bias > (size_t{1} << 24))
                throw Error(KVRT_ERR_INVALID_ARGUMENT, "stage->n_bias " + std::to_string(stage->n_bias) + " is above 2^24");
            st.bias.reserve(stage->n_bias);
            for (size_t i = 0; i < stage->n_bias; ++i) st.bias.emplace_back(stage->bias_tokens[i], stage->bias_values[i]);
        }
        chain->add(std::move(st));
    });
}

KVRT_API kvrt_status kvrt_sampler_accept(kvrt_sampler* sampler, int32_t token) {
    return guard("kvrt_sampler_accept", [&] {
        auto sp = kvrt::api::sampler_of(sampler);
        if (token < 0) throw Error(KVRT_ERR_OUT_OF_RANGE, "token " + std::to_string(token) + " is negative");
        sp->accept(token);
    });
}

KVRT_API kvrt_status kvrt_sampler_reset(kvrt_sampler* sampler) {
    return guard("kvrt_sampler_reset", [&] { kvrt::api::sampler_of(sampler)->reset(); });
}

KVRT_API kvrt_status kvrt_context_cancel(kvrt_context* ctx) {
    return guard("kvrt_context_cancel", [&] { kvrt::api::context_of(ctx)->cancel(); });
}

KVRT_API kvrt_status kvrt_context_activity_init(kvrt_context_activity* out, size_t struct_size) {
    return guard("kvrt_context_activity_init",
                 [&] { init_struct(out, struct_size, KVRT_MIN_SIZE_kvrt_context_activity, "kvrt_context_activity"); });
}

KVRT_API kvrt_status kvrt_context_activity_get(kvrt_context_activity* out, const kvrt_context* ctx) {
    return guard("kvrt_context_activity_get", [&] {
        kvrt::api::require_config(out, "out", KVRT_MIN_SIZE_kvrt_context_activity);
        const kvrt::runtime::Activity a = kvrt::api::context_of(ctx)->activity();
        kvrt_context_activity r;
        std::memset(&r, 0, sizeof r);
        r.struct_size = out->struct_size;
        r.phase = a.phase;
        r.cancel_pending = a.cancel_pending ? 1 : 0;
        r.prefill_total = a.prefill_total;
        r.prefill_done = a.prefill_done;
        r.generated_tokens = a.generated;
        r.calls = a.calls;
        std::memcpy(out, &r, out->struct_size);
    });
}

}  // extern "C"
