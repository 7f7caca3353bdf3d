// kvrt_context_*, kvrt_sampler_*, kvrt_generate_*, kvrt_request_stats_*.
#include "api/cache_handles.hpp"
#include "api/model_handles.hpp"

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
constexpr size_t kContextConfigV01 = offsetof(kvrt_context_config, ced_prefill_mode);

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
    kvrt::api::require_config(out, "stats", sizeof(kvrt_request_stats));
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
    std::memcpy(out, &r, out->struct_size);
}


}  // namespace

extern "C" {

KVRT_API kvrt_status kvrt_context_config_init(kvrt_context_config* cfg, size_t struct_size) {
    return guard("kvrt_context_config_init", [&] {
        init_struct(cfg, struct_size, kContextConfigV01, "kvrt_context_config");
        cfg->n_seq_max = 1;
        cfg->n_batch = 512;
        cfg->kv_dtype = KVRT_KV_F16;
        cfg->block_tokens = 16;
        cfg->prefix_caching = 1;
    });
}

KVRT_API kvrt_status kvrt_context_create(kvrt_context** out, kvrt_model* model, const kvrt_context_config* cfg) {
    if (out) *out = nullptr;
    return guard("kvrt_context_create", [&] {
        require_non_null(out, "out");
        auto mp = kvrt::api::model_of(model);
        kvrt_context_config d;
        kvrt_context_config_init(&d, sizeof d);
        const kvrt_context_config c = merged(cfg, d, kContextConfigV01, "cfg");
        if (c.kv_dtype < KVRT_KV_F32 || c.kv_dtype > KVRT_KV_BF16)
            throw Error(KVRT_ERR_INVALID_ARGUMENT, "cfg->kv_dtype " + std::to_string(c.kv_dtype) + " is not a KVRT_KV_* value");
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
        p.kv_dtype = static_cast<kvrt::DType>(c.kv_dtype);
        p.block_tokens = static_cast<int32_t>(c.block_tokens == 0 ? 16 : c.block_tokens);
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
        if (c.progress) {
            kvrt_progress_fn fn = c.progress;
            void* ud = c.progress_user_data;
            p.progress = [fn, ud](float f, const char* stage) { return fn(f, stage, ud) == 0; };
        }
        *out = kvrt::api::contexts().add(std::make_shared<kvrt::runtime::Context>(mp, p, std::move(shared)));
    });
}

KVRT_API void kvrt_context_destroy(kvrt_context* ctx) {
    try {
        kvrt::api::contexts().remove(ctx);  // the Context (and its references) go with it
    } catch (...) {
    }
}

KVRT_API kvrt_status kvrt_context_get_cache(kvrt_cache** out, kvrt_context* ctx) {
    if (out) *out = nullptr;
    return guard("kvrt_context_get_cache", [&] {
        require_non_null(out, "out");
        *out = kvrt::api::cache_handle_for(kvrt::api::context_of(ctx)->cache());
    });
}

KVRT_API kvrt_status kvrt_request_stats_init(kvrt_request_stats* stats, size_t struct_size) {
    return guard("kvrt_request_stats_init",
                 [&] { init_struct(stats, struct_size, sizeof(kvrt_request_stats), "kvrt_request_stats"); });
}

KVRT_API kvrt_status kvrt_context_prefill(kvrt_request_stats* stats, kvrt_context* ctx, int32_t seq_id,
                                          const int32_t* tokens, size_t n_tokens) {
    return guard("kvrt_context_prefill", [&] {
        auto cp = kvrt::api::context_of(ctx);
        kvrt::runtime::Context& c = *cp;
        if (stats) kvrt::api::require_config(stats, "stats", sizeof(kvrt_request_stats));
        require_non_null(tokens, "tokens");
        if (n_tokens == 0) throw Error(KVRT_ERR_INVALID_ARGUMENT, "n_tokens is 0");
        kvrt::runtime::RequestStats s;
        c.prefill(seq_id, tokens, n_tokens, &s);
        fill_stats(stats, s);
    });
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
        if (stats) kvrt::api::require_config(stats, "stats", sizeof(kvrt_request_stats));
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
    return guard("kvrt_context_seq_release", [&] { kvrt::api::context_of(ctx)->release(seq_id); });
}

KVRT_API kvrt_status kvrt_sampler_config_init(kvrt_sampler_config* cfg, size_t struct_size) {
    return guard("kvrt_sampler_config_init", [&] {
        init_struct(cfg, struct_size, sizeof(kvrt_sampler_config), "kvrt_sampler_config");
        cfg->top_p = 1.0f;
    });
}

KVRT_API kvrt_status kvrt_sampler_create(kvrt_sampler** out, const kvrt_sampler_config* cfg) {
    if (out) *out = nullptr;
    return guard("kvrt_sampler_create", [&] {
        require_non_null(out, "out");
        require_non_null(cfg, "cfg");
        kvrt::api::require_config(cfg, "cfg", sizeof(kvrt_sampler_config));
        kvrt::runtime::SamplerParams p;
        p.temperature = cfg->temperature;
        p.top_k = cfg->top_k;
        p.top_p = cfg->top_p;
        p.min_p = cfg->min_p;
        p.seed = cfg->seed;
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
        init_struct(cfg, struct_size, sizeof(kvrt_generate_config), "kvrt_generate_config");
        cfg->max_tokens = 256;
        cfg->stop_at_eog = 1;
    });
}

KVRT_API kvrt_status kvrt_context_generate(kvrt_request_stats* stats, kvrt_context* ctx, int32_t seq_id,
                                           const int32_t* prompt, size_t n_prompt, const kvrt_generate_config* cfg) {
    return guard("kvrt_context_generate", [&] {
        auto cp = kvrt::api::context_of(ctx);
        kvrt::runtime::Context& c = *cp;
        if (stats) kvrt::api::require_config(stats, "stats", sizeof(kvrt_request_stats));
        require_non_null(prompt, "prompt");
        if (n_prompt == 0) throw Error(KVRT_ERR_INVALID_ARGUMENT, "n_prompt is 0");
        kvrt_generate_config d;
        kvrt_generate_config_init(&d, sizeof d);
        const kvrt_generate_config g = merged(cfg, d, sizeof(kvrt_generate_config), "cfg");
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
        kvrt::runtime::RequestStats s;
        c.generate(seq_id, prompt, n_prompt, gp, &s);
        fill_stats(stats, s);
    });
}

}  // extern "C"
