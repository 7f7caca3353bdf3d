// The C API of CED models (include/kvrt/ced.h): load, memory report,
// sessions over kvrt::ced::CedRuntime.
#include "api/boundary.hpp"
#include "api/handle_registry.hpp"
#include "kvrt/cache.h"
#include "kvrt/ced.h"
#include "model/arch/ced_memory.hpp"
#include "model/arch/ced_weights.hpp"
#include "model/gguf/gguf.hpp"
#include "runtime/ced_runtime.hpp"

#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

using kvrt::Error;
using kvrt::api::guard;
using kvrt::api::require_non_null;

struct CedModelObj {
    std::unique_ptr<kvrt::GgufFile> file;
    std::shared_ptr<const kvrt::ced::CedWeights> weights;
};

struct CedSessionObj {
    std::shared_ptr<CedModelObj> model;
    std::unique_ptr<kvrt::ced::CedRuntime> rt;
    std::unordered_map<uint64_t, std::vector<float>> logits;
};

namespace {

kvrt::api::HandleRegistry<CedModelObj, kvrt_ced_model>& models() {
    static auto* r = new kvrt::api::HandleRegistry<CedModelObj, kvrt_ced_model>(0xCE);
    return *r;
}
kvrt::api::HandleRegistry<CedSessionObj, kvrt_ced_session>& sessions() {
    static auto* r = new kvrt::api::HandleRegistry<CedSessionObj, kvrt_ced_session>(0xCF);
    return *r;
}

std::shared_ptr<CedModelObj> model_of(const kvrt_ced_model* h) {
    auto m = models().get(h);
    if (!m) throw Error(KVRT_ERR_BAD_HANDLE, h ? "model is not a live kvrt_ced_model" : "model is NULL");
    return m;
}
std::shared_ptr<CedSessionObj> session_of(const kvrt_ced_session* h) {
    auto s = sessions().get(h);
    if (!s) throw Error(KVRT_ERR_BAD_HANDLE, h ? "session is not a live kvrt_ced_session" : "session is NULL");
    return s;
}

template <class Out>
void check_out(const Out* out, const char* name, size_t min_size) {
    require_non_null(out, name);
    if (out->struct_size < min_size || out->struct_size > sizeof(Out))
        throw Error(KVRT_ERR_INVALID_ARGUMENT,
                    std::string(name) + "->struct_size is " + std::to_string(out->struct_size) +
                        "; set it to sizeof(*" + name + ")");
}

void check_tokens(const int32_t* tokens, size_t n) {
    if (n == 0) throw Error(KVRT_ERR_INVALID_ARGUMENT, "n_tokens is 0");
    require_non_null(tokens, "tokens");
    if (n >= (size_t(1) << 31) - 1) throw Error(KVRT_ERR_OVERFLOW, "n_tokens exceeds 2^31 - 2");
}

}  // namespace

extern "C" {

KVRT_API kvrt_status kvrt_ced_model_load(kvrt_ced_model** out, const char* path) {
    return guard("kvrt_ced_model_load", [&] {
        require_non_null(out, "out");
        *out = nullptr;
        require_non_null(path, "path");
        auto m = std::make_shared<CedModelObj>();
        m->file = std::make_unique<kvrt::GgufFile>(kvrt::GgufFile::open(path));
        m->weights = kvrt::ced::CedWeights::load(*m->file);
        *out = models().add(std::move(m));
    });
}

KVRT_API void kvrt_ced_model_destroy(kvrt_ced_model* model) {
    guard("kvrt_ced_model_destroy", [&] { models().remove(model); });
}

KVRT_API kvrt_status kvrt_ced_memory_get(kvrt_ced_memory* out, const kvrt_ced_model* model) {
    return guard("kvrt_ced_memory_get", [&] {
        check_out(out, "out", sizeof(kvrt_ced_memory));
        auto m = model_of(model);
        const kvrt::ced::CedConfig& c = m->weights->cfg;
        const kvrt::ced::CedMemory mem = kvrt::ced::ced_memory(c, 4);
        kvrt_ced_memory r{};
        r.struct_size = out->struct_size;
        r.n_layers = uint32_t(c.n_layers);
        r.n_sources = uint32_t(c.n_sources());
        r.window = uint32_t(c.window);
        r.elem_bytes = 4;
        r.main_bytes_per_token = mem.main_bytes_per_token;
        r.indexer_bytes_per_token = mem.indexer_bytes_per_token;
        r.global_bytes_per_token = mem.global_bytes_per_token;
        r.window_bytes_per_sequence = mem.window_bytes_per_sequence;
        r.dense_kv_heads = uint32_t(mem.dense_kv_heads);
        r.dense_head_dim = uint32_t(mem.dense_head_dim);
        r.dense_bytes_per_token = mem.dense_bytes_per_token;
        *out = r;
    });
}

KVRT_API kvrt_status kvrt_ced_memory_source(int32_t* layer, int32_t* ratio, double* main_bpt, double* idx_bpt,
                                            const kvrt_ced_model* model, uint32_t index) {
    return guard("kvrt_ced_memory_source", [&] {
        auto m = model_of(model);
        const kvrt::ced::CedMemory mem = kvrt::ced::ced_memory(m->weights->cfg, 4);
        if (index >= mem.sources.size())
            throw Error(KVRT_ERR_OUT_OF_RANGE, "index " + std::to_string(index) + " >= n_sources " +
                                                   std::to_string(mem.sources.size()));
        const auto& s = mem.sources[index];
        if (layer) *layer = s.layer;
        if (ratio) *ratio = s.ratio;
        if (main_bpt) *main_bpt = s.main_bytes_per_token;
        if (idx_bpt) *idx_bpt = s.indexer_bytes_per_token;
    });
}

namespace {
// The first version of kvrt_ced_session_config ended at window_budget_bytes.
constexpr size_t kSessionConfigV1 = offsetof(kvrt_ced_session_config, cache_dtype);
}  // namespace

KVRT_API kvrt_status kvrt_ced_session_config_init(kvrt_ced_session_config* cfg, size_t struct_size) {
    return guard("kvrt_ced_session_config_init", [&] {
        require_non_null(cfg, "cfg");
        if (struct_size < kSessionConfigV1 || struct_size > sizeof(kvrt_ced_session_config))
            throw Error(KVRT_ERR_INVALID_ARGUMENT,
                        "struct_size is " + std::to_string(struct_size) + "; pass sizeof(kvrt_ced_session_config)");
        kvrt_ced_session_config d{};
        d.struct_size = struct_size;
        d.block_tokens = 16;
        d.chunk = 256;
        d.bank_budget_bytes = 256ull << 20;
        d.window_budget_bytes = 256ull << 20;
        d.cache_dtype = KVRT_DTYPE_F32;
        std::memcpy(cfg, &d, struct_size);
    });
}

KVRT_API kvrt_status kvrt_ced_session_create(kvrt_ced_session** out, const kvrt_ced_model* model,
                                             const kvrt_ced_session_config* cfg) {
    return guard("kvrt_ced_session_create", [&] {
        require_non_null(out, "out");
        *out = nullptr;
        auto m = model_of(model);
        kvrt_ced_session_config c;
        kvrt_ced_session_config_init(&c, sizeof c);
        if (cfg) {
            kvrt::api::require_config(cfg, "cfg", kSessionConfigV1);
            std::memcpy(&c, cfg, cfg->struct_size);  // fields past an older struct_size keep their defaults
            c.struct_size = sizeof c;
        }
        if (c.block_tokens < 1 || c.block_tokens > 4096)
            throw Error(KVRT_ERR_INVALID_ARGUMENT, "cfg->block_tokens must be in [1, 4096]");
        if (c.chunk < 1) throw Error(KVRT_ERR_INVALID_ARGUMENT, "cfg->chunk must be >= 1");
        if (c.bank_budget_bytes == 0 || c.window_budget_bytes == 0)
            throw Error(KVRT_ERR_INVALID_ARGUMENT, "cfg budgets must be > 0");
        if (c.cache_dtype != KVRT_DTYPE_F32 && c.cache_dtype != KVRT_DTYPE_F16 && c.cache_dtype != KVRT_DTYPE_BF16)
            throw Error(KVRT_ERR_INVALID_ARGUMENT, "cfg->cache_dtype " + std::to_string(c.cache_dtype) +
                                                       " is not KVRT_DTYPE_F32, KVRT_DTYPE_F16 or KVRT_DTYPE_BF16");
        if (c.reserved0 != 0) throw Error(KVRT_ERR_INVALID_ARGUMENT, "cfg->reserved0 must be 0");
        kvrt::ced::CedRuntimeOptions o;
        o.block_tokens = c.block_tokens;
        o.chunk = c.chunk;
        o.bank_budget_bytes = c.bank_budget_bytes;
        o.window_budget_bytes = c.window_budget_bytes;
        o.cache_dtype = c.cache_dtype == KVRT_DTYPE_BF16 ? kvrt::DType::BF16
                        : c.cache_dtype == KVRT_DTYPE_F16 ? kvrt::DType::F16
                                                          : kvrt::DType::F32;
        auto s = std::make_shared<CedSessionObj>();
        s->model = m;
        s->rt = std::make_unique<kvrt::ced::CedRuntime>(m->weights, o);
        *out = sessions().add(std::move(s));
    });
}

KVRT_API void kvrt_ced_session_destroy(kvrt_ced_session* session) {
    guard("kvrt_ced_session_destroy", [&] { sessions().remove(session); });
}

KVRT_API kvrt_status kvrt_ced_seq_create(uint64_t* out_seq, kvrt_ced_session* session) {
    return guard("kvrt_ced_seq_create", [&] {
        auto s = session_of(session);
        require_non_null(out_seq, "out_seq");
        *out_seq = s->rt->create();
    });
}

KVRT_API kvrt_status kvrt_ced_seq_release(kvrt_ced_session* session, uint64_t seq) {
    return guard("kvrt_ced_seq_release", [&] {
        auto s = session_of(session);
        s->rt->release(seq);
        s->logits.erase(seq);
    });
}

KVRT_API kvrt_status kvrt_ced_seq_fork(uint64_t* out_seq, kvrt_ced_session* session, uint64_t seq) {
    return guard("kvrt_ced_seq_fork", [&] {
        auto s = session_of(session);
        require_non_null(out_seq, "out_seq");
        uint64_t id = s->rt->fork(seq);
        auto it = s->logits.find(seq);
        if (it != s->logits.end()) s->logits[id] = it->second;
        *out_seq = id;
    });
}

KVRT_API kvrt_status kvrt_ced_seq_truncate(kvrt_ced_session* session, uint64_t seq, int64_t pos) {
    return guard("kvrt_ced_seq_truncate", [&] {
        auto s = session_of(session);
        const int64_t before = s->rt->length(seq);
        s->rt->truncate(seq, pos);
        if (pos != before) s->logits.erase(seq);  // the last position's logits are gone
    });
}

KVRT_API kvrt_status kvrt_ced_seq_length(int64_t* out, const kvrt_ced_session* session, uint64_t seq) {
    return guard("kvrt_ced_seq_length", [&] {
        auto s = session_of(session);
        require_non_null(out, "out");
        *out = s->rt->length(seq);
    });
}

KVRT_API kvrt_status kvrt_ced_prefill(kvrt_ced_prefill_info* info, kvrt_ced_session* session, uint64_t seq,
                                      const int32_t* tokens, size_t n_tokens, int32_t mode, int32_t resume) {
    return guard("kvrt_ced_prefill", [&] {
        auto s = session_of(session);
        if (info) check_out(info, "info", sizeof(kvrt_ced_prefill_info));
        check_tokens(tokens, n_tokens);
        if (mode != KVRT_CED_PREFILL_EXACT && mode != KVRT_CED_PREFILL_CED)
            throw Error(KVRT_ERR_INVALID_ARGUMENT, "mode is " + std::to_string(mode) + "; use kvrt_ced_prefill_mode");
        if (resume < KVRT_CED_RESUME_AUTO || resume > KVRT_CED_RESUME_COLD)
            throw Error(KVRT_ERR_INVALID_ARGUMENT, "resume is " + std::to_string(resume) + "; use kvrt_ced_resume");
        kvrt::ced::PrefillResult r =
            s->rt->prefill(seq, tokens, int64_t(n_tokens), static_cast<kvrt::ced::PrefillMode>(mode),
                           static_cast<kvrt::ced::Resume>(resume));
        s->logits[seq] = std::move(r.logits);
        if (info) {
            kvrt_ced_prefill_info o{};
            o.struct_size = info->struct_size;
            o.hit = r.hit;
            o.exact_resume = r.exact_resume ? 1 : 0;
            o.replayed = r.replayed;
            o.computed = r.computed;
            o.decoded = r.decoded;
            *info = o;
        }
    });
}

KVRT_API kvrt_status kvrt_ced_extend(kvrt_ced_session* session, uint64_t seq, const int32_t* tokens,
                                     size_t n_tokens) {
    return guard("kvrt_ced_extend", [&] {
        auto s = session_of(session);
        check_tokens(tokens, n_tokens);
        s->logits[seq] = s->rt->extend(seq, tokens, int64_t(n_tokens));
    });
}

KVRT_API kvrt_status kvrt_ced_logits(float* dst, size_t capacity, size_t* written, const kvrt_ced_session* session,
                                     uint64_t seq) {
    return guard("kvrt_ced_logits", [&]() -> kvrt_status {
        auto s = session_of(session);
        require_non_null(written, "written");
        (void)s->rt->length(seq);  // NOT_FOUND for an unknown sequence
        auto it = s->logits.find(seq);
        if (it == s->logits.end())
            throw Error(KVRT_ERR_INVALID_STATE, "sequence " + std::to_string(seq) + " has no logits (prefill it)");
        const size_t n = it->second.size();
        *written = n;
        if (dst == nullptr && capacity == 0) return KVRT_OK;
        if (capacity < n)
            return kvrt::api::set_error(KVRT_ERR_BUFFER_TOO_SMALL,
                                        "kvrt_ced_logits: capacity " + std::to_string(capacity) + " < " +
                                            std::to_string(n));
        require_non_null(dst, "dst");
        std::memcpy(dst, it->second.data(), n * sizeof(float));
        return KVRT_OK;
    });
}

KVRT_API kvrt_status kvrt_ced_session_bytes(double* bank_bpt, uint64_t* bank_in_use, uint64_t* win_in_use,
                                            const kvrt_ced_session* session) {
    return guard("kvrt_ced_session_bytes", [&] {
        auto s = session_of(session);
        const auto bs = s->rt->bank_cache().stats();
        if (bank_bpt) *bank_bpt = bs.bytes_per_token;
        if (bank_in_use) *bank_in_use = bs.bytes_in_use;
        if (win_in_use) *win_in_use = s->rt->window_cache().stats().bytes_in_use;
    });
}

}  // extern "C"
