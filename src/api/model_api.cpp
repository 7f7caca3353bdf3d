// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// kvrt_model_*: loading, facts, metadata, tensors, tokenizer, chat template.
#include "api/model_handles.hpp"
#include "api/struct_versions.h"
#include "model/arch/ced_memory.hpp"
#include "model/arch/ced_weights.hpp"
#include "model/tokenizer/chat_template.hpp"
#include "util/isa.hpp"
#include "util/log.hpp"
#include "model/tokenizer/tokenizer.hpp"

#include <cinttypes>
#include <cstdio>
#include <cstring>

using kvrt::Error;
using kvrt::api::model_of;
using kvrt::api::guard;
using kvrt::api::require_capacity;
using kvrt::api::require_non_null;

namespace {

// Writes s NUL-terminated: the one text-buffer convention of kvrt/model.h. *written is
// s.size() + 1 (the NUL counts) after a size query, on BUFFER_TOO_SMALL and on success.
kvrt_status write_cstring(char* dst, size_t capacity, size_t* written, std::string_view s, const char* what) {
    require_non_null(written, "written");
    require_capacity(capacity, dst, s.size() + 1, written, what);  // *written = bytes needed (with the NUL)
    if (dst == nullptr) return KVRT_OK;                             // size query
    std::memcpy(dst, s.data(), s.size());
    dst[s.size()] = '\0';
    return KVRT_OK;
}

std::string value_text(const kvrt::GgufValue& v) {
    using kvrt::GgufType;
    char buf[64];
    switch (v.type()) {
        case GgufType::STRING: return std::string(v.as_string());
        case GgufType::BOOL: return v.as_bool() ? "true" : "false";
        case GgufType::F32:
        case GgufType::F64: std::snprintf(buf, sizeof buf, "%.9g", v.as_f64()); return buf;
        case GgufType::I8:
        case GgufType::I16:
        case GgufType::I32:
        case GgufType::I64: std::snprintf(buf, sizeof buf, "%" PRId64, v.as_i64()); return buf;
        case GgufType::ARRAY:
            return "[array of " + std::to_string(v.array_size()) + " " + kvrt::gguf_type_name(v.array_type()) + "]";
        default: std::snprintf(buf, sizeof buf, "%" PRIu64, v.as_u64()); return buf;
    }
}

}  // namespace

extern "C" {

KVRT_API kvrt_status kvrt_model_config_init(kvrt_model_config* cfg, size_t struct_size) {
    return guard("kvrt_model_config_init", [&] {
        require_non_null(cfg, "cfg");
        if (struct_size < KVRT_MIN_SIZE_kvrt_model_config || struct_size > sizeof(kvrt_model_config))
            throw Error(KVRT_ERR_INVALID_ARGUMENT, "struct_size " + std::to_string(struct_size) + " is not a known size of kvrt_model_config");
        std::memset(cfg, 0, struct_size);
        cfg->struct_size = struct_size;
    });
}

KVRT_API kvrt_status kvrt_model_load(kvrt_model** out, const char* path, const kvrt_model_config* cfg) {
    if (out) *out = nullptr;
    return guard("kvrt_model_load", [&] {
        require_non_null(out, "out");
        require_non_null(path, "path");
        kvrt_model_config c;
        kvrt_model_config_init(&c, sizeof c);
        if (cfg) {
            kvrt::api::require_config(cfg, "cfg", KVRT_MIN_SIZE_kvrt_model_config);
            std::memcpy(&c, cfg, cfg->struct_size);
            kvrt::api::require_thread_count(c.n_threads, "cfg->n_threads");
            if (c.reserved0 != 0) throw Error(KVRT_ERR_INVALID_ARGUMENT, "cfg->reserved0 must be 0");
        }
        kvrt::ModelLoadOptions opts;
        opts.n_threads = c.n_threads;
        if (c.progress) {
            kvrt_progress_fn fn = c.progress;
            void* ud = c.progress_user_data;
            opts.progress = [fn, ud](float f, const char* stage) { return fn(f, stage, ud) == 0; };
        }
        kvrt::log::at(kvrt::log::Debug, [&] { return std::string("loading model ") + path; });
        const double t0 = kvrt::log::enabled(kvrt::log::Info) ? kvrt::log::now_s() : 0.0;
        auto mp = kvrt::Model::load(path, opts);
        kvrt::log::at(kvrt::log::Info, [&] {
            return std::string("loaded ") + path + ": " + mp->architecture() + " '" + mp->name() + "', " +
                   std::to_string(mp->config().n_layers) + " layers, " + std::to_string(mp->n_params()) +
                   " parameters, " + std::to_string(mp->weight_bytes() >> 20) + " MiB of weights, in " +
                   std::to_string(kvrt::log::now_s() - t0) + " s; kernels use ISA " + kvrt::isa_name(kvrt::isa_active()) +
                   " (CPU: " + kvrt::isa_name(kvrt::isa_detected()) + ")";
        });
        if (const char* bad = kvrt::isa_env_ignored())
            kvrt::log::at(kvrt::log::Warn, [&] {
                return std::string("KVRT_ISA=") + bad + " names no level (scalar, avx2, avxvnni, avx512, avx512bf16, amx): ignored";
            });
        *out = kvrt::api::models().add(std::move(mp));
    });
}

KVRT_API void kvrt_model_destroy(kvrt_model* model) {
    // Drops the handle's reference; contexts hold their own, so the weights live on while they do.
    kvrt::api::models().remove(model);
}

KVRT_API kvrt_status kvrt_model_retain(kvrt_model** out, kvrt_model* model) {
    if (out) *out = nullptr;
    return guard("kvrt_model_retain", [&] {
        require_non_null(out, "out");
        *out = kvrt::api::models().add(kvrt::api::model_of(model));
    });
}

KVRT_API kvrt_status kvrt_model_info_init(kvrt_model_info* info, size_t struct_size) {
    return guard("kvrt_model_info_init", [&] {
        require_non_null(info, "info");
        if (struct_size < KVRT_MIN_SIZE_kvrt_model_info || struct_size > sizeof(kvrt_model_info))
            throw Error(KVRT_ERR_INVALID_ARGUMENT, "struct_size " + std::to_string(struct_size) + " is not a known size of kvrt_model_info");
        std::memset(info, 0, struct_size);
        info->struct_size = struct_size;
    });
}

KVRT_API kvrt_status kvrt_model_get_info(kvrt_model_info* info, const kvrt_model* model) {
    return guard("kvrt_model_get_info", [&] {
        require_non_null(info, "info");
        auto mp = model_of(model);
        kvrt::api::require_config(info, "info", KVRT_MIN_SIZE_kvrt_model_info);
        const kvrt::Model& m = *mp;
        const kvrt::DecoderConfig& c = m.config();
        kvrt_model_info r;
        std::memset(&r, 0, sizeof r);
        r.struct_size = info->struct_size;
        r.architecture = m.architecture().c_str();
        r.name = m.name().c_str();
        r.n_layers = c.n_layers;
        r.n_vocab = c.n_vocab;
        r.n_embd = c.n_embd;
        r.n_ff = c.n_ff;
        r.n_heads = c.n_heads;
        r.n_kv_heads = c.n_kv_heads;
        r.head_dim = c.head_dim;
        r.n_ctx_train = c.n_ctx_train;
        r.sliding_window = c.sliding_window;
        for (uint32_t l = 0; l < c.n_layers; ++l) (c.layer_is_window(l) ? r.n_layers_window : r.n_layers_full)++;
        r.rope_theta = c.rope_theta;
        r.rms_eps = c.rms_eps;
        r.bos_token = r.eos_token = r.eot_token = -1;
        if (m.has_tokenizer()) {
            const kvrt::Tokenizer& t = m.tokenizer();
            r.bos_token = t.bos_id();
            r.eos_token = t.eos_id();
            r.eot_token = t.eot_id();
        }
        r.n_params = m.n_params();
        r.weight_bytes = m.weight_bytes();
        if (m.is_ced()) {
            // The global banks (main rows + indexer keys) per token; one K = V window row per layer.
            r.kv_bytes_per_token_full = static_cast<uint64_t>(kvrt::ced::ced_memory(m.ced()->cfg, 2).global_bytes_per_token + 0.5);
            r.kv_bytes_per_token_window = 2ull * c.head_dim * c.n_layers;
        } else {
            const uint64_t per_layer = m.kv_bytes_per_token_layer(2);
            r.kv_bytes_per_token_full = per_layer * r.n_layers_full;
            r.kv_bytes_per_token_window = per_layer * r.n_layers_window;
        }
        r.kv_bytes_per_token = r.kv_bytes_per_token_full + r.kv_bytes_per_token_window;
        const auto fp = m.fingerprint().bytes();
        std::memcpy(r.fingerprint, fp.data(), 16);
        std::memcpy(info, &r, info->struct_size);
    });
}

KVRT_API kvrt_status kvrt_model_meta_string(char* dst, size_t capacity, size_t* written, const kvrt_model* model,
                                            const char* key) {
    return guard("kvrt_model_meta_string", [&]() -> kvrt_status {
        require_non_null(written, "written");
        auto mp = model_of(model);
        require_non_null(key, "key");
        const kvrt::GgufValue* v = mp->file().find(key);
        if (!v) throw Error(KVRT_ERR_NOT_FOUND, std::string("no metadata key '") + key + "'");
        return write_cstring(dst, capacity, written, value_text(*v), "kvrt_model_meta_string");
    });
}

KVRT_API kvrt_status kvrt_model_meta_count(size_t* out, const kvrt_model* model) {
    return guard("kvrt_model_meta_count", [&] {
        require_non_null(out, "out");
        auto mp = model_of(model);
        *out = mp->file().metadata().size();
    });
}

KVRT_API kvrt_status kvrt_model_meta_key(char* dst, size_t capacity, size_t* written, const kvrt_model* model,
                                         size_t index) {
    return guard("kvrt_model_meta_key", [&]() -> kvrt_status {
        require_non_null(written, "written");
        auto mp = model_of(model);
        const auto md = mp->file().metadata();
        if (index >= md.size())
            throw Error(KVRT_ERR_OUT_OF_RANGE, "metadata index " + std::to_string(index) + " >= count " + std::to_string(md.size()));
        return write_cstring(dst, capacity, written, md[index].key, "kvrt_model_meta_key");
    });
}

KVRT_API kvrt_status kvrt_model_tensor_count(size_t* out, const kvrt_model* model) {
    return guard("kvrt_model_tensor_count", [&] {
        require_non_null(out, "out");
        auto mp = model_of(model);
        *out = mp->file().tensors().size();
    });
}

KVRT_API kvrt_status kvrt_model_tensor_info(char* name, size_t name_capacity, size_t* name_written,
                                            const char** type_name, uint64_t* n_elements, uint64_t* n_bytes,
                                            const kvrt_model* model, size_t index) {
    return guard("kvrt_model_tensor_info", [&]() -> kvrt_status {
        auto mp = model_of(model);
        const auto ts = mp->file().tensors();
        if (index >= ts.size())
            throw Error(KVRT_ERR_OUT_OF_RANGE, "tensor index " + std::to_string(index) + " >= count " + std::to_string(ts.size()));
        const kvrt::GgufTensor& t = ts[index];
        if (name_written || name) {
            require_non_null(name_written, "name_written");
            kvrt_status s = write_cstring(name, name_capacity, name_written, t.name, "kvrt_model_tensor_info");
            if (s != KVRT_OK) return s;
        }
        if (type_name) *type_name = kvrt::tensor_type_name(t.type);
        if (n_elements) *n_elements = t.n_elements;
        if (n_bytes) *n_bytes = t.n_bytes;
        return KVRT_OK;
    });
}

KVRT_API kvrt_status kvrt_model_tokenize(int32_t* dst, size_t capacity, size_t* written, const kvrt_model* model,
                                         const char* text, size_t text_len, uint32_t flags) {
    return guard("kvrt_model_tokenize", [&] {
        require_non_null(written, "written");
        auto mp = model_of(model);
        if (text == nullptr && text_len > 0) throw Error(KVRT_ERR_INVALID_ARGUMENT, "text is NULL with text_len > 0");
        if (flags & ~(KVRT_TOKENIZE_ADD_BOS | KVRT_TOKENIZE_PARSE_SPECIAL))
            throw Error(KVRT_ERR_INVALID_ARGUMENT, "unknown tokenize flags " + std::to_string(flags));
        kvrt::EncodeOptions o;
        o.add_special = (flags & KVRT_TOKENIZE_ADD_BOS) != 0;
        o.parse_special = (flags & KVRT_TOKENIZE_PARSE_SPECIAL) != 0;
        const std::vector<int32_t> ids =
            mp->tokenizer().encode(std::string_view(text ? text : "", text_len), o);
        require_capacity(capacity, dst, ids.size(), written, "kvrt_model_tokenize");
        if (dst) std::memcpy(dst, ids.data(), ids.size() * sizeof(int32_t));
    });
}

KVRT_API kvrt_status kvrt_model_detokenize(char* dst, size_t capacity, size_t* written, const kvrt_model* model,
                                           const int32_t* tokens, size_t n_tokens, uint32_t flags) {
    return guard("kvrt_model_detokenize", [&]() -> kvrt_status {
        require_non_null(written, "written");
        auto mp = model_of(model);
        if (tokens == nullptr && n_tokens > 0) throw Error(KVRT_ERR_INVALID_ARGUMENT, "tokens is NULL with n_tokens > 0");
        if (flags & ~KVRT_DETOKENIZE_SPECIAL)
            throw Error(KVRT_ERR_INVALID_ARGUMENT, "unknown detokenize flags " + std::to_string(flags));
        const std::string s = mp->tokenizer().decode(std::span<const int32_t>(tokens, n_tokens),
                                                               (flags & KVRT_DETOKENIZE_SPECIAL) != 0);
        return write_cstring(dst, capacity, written, s, "kvrt_model_detokenize");
    });
}

KVRT_API kvrt_status kvrt_model_token_is_eog(int* out, const kvrt_model* model, int32_t token) {
    return guard("kvrt_model_token_is_eog", [&] {
        require_non_null(out, "out");
        auto mp = model_of(model);
        const uint32_t nv = mp->config().n_vocab;
        if (token < 0 || static_cast<uint32_t>(token) >= nv)
            throw Error(KVRT_ERR_OUT_OF_RANGE, "token id " + std::to_string(token) + " is outside [0, " + std::to_string(nv) + ")");
        *out = mp->is_eog(token) ? 1 : 0;
    });
}

KVRT_API kvrt_status kvrt_model_chat_apply(char* dst, size_t capacity, size_t* written, const kvrt_model* model,
                                           const kvrt_chat_message* messages, size_t n_messages, int add_assistant) {
    return guard("kvrt_model_chat_apply", [&]() -> kvrt_status {
        require_non_null(written, "written");
        auto mp = model_of(model);
        if (messages == nullptr && n_messages > 0) throw Error(KVRT_ERR_INVALID_ARGUMENT, "messages is NULL with n_messages > 0");
        std::vector<kvrt::ChatMessage> msgs(n_messages);  // views into the caller's strings
        for (size_t i = 0; i < n_messages; ++i) {
            if (!messages[i].role || !messages[i].content)
                throw Error(KVRT_ERR_INVALID_ARGUMENT, "message " + std::to_string(i) + " has a NULL role or content");
            msgs[i].role = messages[i].role;
            msgs[i].content = messages[i].content;
        }
        const std::string s = mp->apply_chat(msgs, add_assistant != 0);
        return write_cstring(dst, capacity, written, s, "kvrt_model_chat_apply");
    });
}

KVRT_API kvrt_status kvrt_model_chat_apply_template(char* dst, size_t capacity, size_t* written,
                                                    const kvrt_model* model, const char* chat_template,
                                                    const kvrt_chat_message* messages, size_t n_messages,
                                                    int add_assistant) {
    if (!chat_template) return kvrt_model_chat_apply(dst, capacity, written, model, messages, n_messages, add_assistant);
    return guard("kvrt_model_chat_apply_template", [&]() -> kvrt_status {
        require_non_null(written, "written");
        auto mp = model_of(model);
        if (messages == nullptr && n_messages > 0) throw Error(KVRT_ERR_INVALID_ARGUMENT, "messages is NULL with n_messages > 0");
        std::vector<kvrt::ChatMessage> msgs(n_messages);
        for (size_t i = 0; i < n_messages; ++i) {
            if (!messages[i].role || !messages[i].content)
                throw Error(KVRT_ERR_INVALID_ARGUMENT, "message " + std::to_string(i) + " has a NULL role or content");
            msgs[i].role = messages[i].role;
            msgs[i].content = messages[i].content;
        }
        // BOS / EOS text for families whose templates write them: the model's, when it has a vocabulary.
        std::string_view bos = "<s>", eos = "</s>";
        if (mp->has_tokenizer()) {
            const kvrt::Tokenizer& t = mp->tokenizer();
            if (t.bos_id() >= 0) bos = t.token_text(t.bos_id());
            if (t.eos_id() >= 0) eos = t.token_text(t.eos_id());
        }
        const std::string_view tmpl(chat_template);
        if (tmpl.empty()) throw Error(KVRT_ERR_INVALID_ARGUMENT, "chat_template is empty (NULL means the model's own)");
        const auto family = kvrt::ChatTemplate::family_from_name(tmpl);
        const kvrt::ChatTemplate ct =
            family ? kvrt::ChatTemplate::of_family(*family, bos, eos) : kvrt::ChatTemplate::detect(tmpl, bos, eos);
        const std::string s = ct.render(msgs, add_assistant != 0);
        return write_cstring(dst, capacity, written, s, "kvrt_model_chat_apply_template");
    });
}

}  // extern "C"
