// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The C API of what CED models add (include/kvrt/ced.h): their memory report.
// Loading and running go through kvrt_model_load / kvrt_context (model_api.cpp,
// context_api.cpp).
#include "api/boundary.hpp"
#include "api/model_handles.hpp"
#include "api/struct_versions.h"
#include "kvrt/ced.h"
#include "model/arch/ced_memory.hpp"
#include "model/arch/ced_weights.hpp"
#include "model/model.hpp"

#include <cstring>
#include <string>

using kvrt::Error;
using kvrt::api::guard;

namespace {

const kvrt::ced::CedConfig& ced_config_of(const kvrt::Model& m) {
    if (!m.is_ced())
        throw Error(KVRT_ERR_UNSUPPORTED, "model '" + m.name() + "' is a '" + m.architecture() + "' model, not a CED model");
    return m.ced()->cfg;
}

uint32_t elem_bytes_of(int32_t dtype) {
    switch (dtype) {
        case KVRT_DTYPE_F32: return 4;
        case KVRT_DTYPE_F16:
        case KVRT_DTYPE_BF16: return 2;
        case KVRT_DTYPE_I8:
        case KVRT_DTYPE_FP8_E4M3:
        case KVRT_DTYPE_FP4: return 1;  // element bytes (a 4-bit element: half of one), scales on top
        default:
            throw Error(KVRT_ERR_INVALID_ARGUMENT, "dtype " + std::to_string(dtype) +
                                                       " is not one a CED cache holds (KVRT_DTYPE_F32, _F16, _BF16, "
                                                       "_I8 and _FP8_E4M3 for windows, _FP4 for banks)");
    }
}

// The memory of a CED context whose kv_dtype is `dtype` and whose bank_dtype is the default
// (kvrt/context.h), or, for KVRT_DTYPE_FP4, of 4-bit banks beside f16 windows.
kvrt::ced::CedMemory memory_at(const kvrt::ced::CedConfig& c, int32_t dtype) {
    elem_bytes_of(dtype);  // the check
    using kvrt::DType;
    const DType t = static_cast<DType>(dtype);
    auto need32 = [&](int32_t width, const char* what) {
        if (width % 32 != 0)
            throw Error(KVRT_ERR_INVALID_ARGUMENT, std::string("dtype ") + kvrt::dtype_name(t) + ": the model's " + what +
                                                       " width " + std::to_string(width) +
                                                       " is not a multiple of the type's scale group of 32");
    };
    if (t == DType::FP4) {
        need32(c.entry_dim, "bank row");
        need32(c.idx_dim, "indexer key");
        return kvrt::ced::ced_memory(c, DType::FP4, DType::F16);
    }
    if (t == DType::I8) need32(c.entry_dim, "window row");
    if (t == DType::I8 || t == DType::FP8_E4M3) return kvrt::ced::ced_memory(c, DType::F16, t);
    return kvrt::ced::ced_memory(c, t, t);
}

}  // namespace

extern "C" {

KVRT_API kvrt_status kvrt_ced_memory_init(kvrt_ced_memory* out, size_t struct_size) {
    return guard("kvrt_ced_memory_init", [&] {
        kvrt::api::require_non_null(out, "out");
        if (struct_size < KVRT_MIN_SIZE_kvrt_ced_memory || struct_size > sizeof(kvrt_ced_memory))
            throw Error(KVRT_ERR_INVALID_ARGUMENT, "struct_size " + std::to_string(struct_size) +
                                                       " is not one this library knows (" +
                                                       std::to_string(KVRT_MIN_SIZE_kvrt_ced_memory) + ".." +
                                                       std::to_string(sizeof(kvrt_ced_memory)) + ")");
        std::memset(static_cast<void*>(out), 0, struct_size);
        out->struct_size = struct_size;
    });
}

KVRT_API kvrt_status kvrt_ced_memory_get(kvrt_ced_memory* out, const kvrt_model* model, int32_t dtype) {
    return guard("kvrt_ced_memory_get", [&] {
        kvrt::api::require_non_null(out, "out");
        // Any size from the first published one (api/struct_versions.h) to ours: the
        // first struct_size bytes are filled, nothing past them.
        const size_t n = out->struct_size;
        if (n < KVRT_MIN_SIZE_kvrt_ced_memory || n > sizeof(kvrt_ced_memory))
            throw Error(KVRT_ERR_INVALID_ARGUMENT, "out->struct_size " + std::to_string(n) + " is not in [" +
                                                       std::to_string(KVRT_MIN_SIZE_kvrt_ced_memory) + ", " +
                                                       std::to_string(sizeof(kvrt_ced_memory)) +
                                                       "]: set it with kvrt_ced_memory_init");
        const uint32_t eb = elem_bytes_of(dtype);
        const auto m = kvrt::api::model_of(model);
        const kvrt::ced::CedConfig& c = ced_config_of(*m);
        const kvrt::ced::CedMemory mem = memory_at(c, dtype);
        kvrt_ced_memory r{};
        r.struct_size = sizeof r;
        r.n_layers = uint32_t(c.n_layers);
        r.n_sources = uint32_t(c.n_sources());
        r.window = uint32_t(c.window);
        r.elem_bytes = eb;
        r.main_bytes_per_token = mem.main_bytes_per_token;
        r.indexer_bytes_per_token = mem.indexer_bytes_per_token;
        r.global_bytes_per_token = mem.global_bytes_per_token;
        r.window_bytes_per_sequence = mem.window_bytes_per_sequence;
        r.dense_kv_heads = uint32_t(mem.dense_kv_heads);
        r.dense_head_dim = uint32_t(mem.dense_head_dim);
        r.dense_bytes_per_token = mem.dense_bytes_per_token;
        r.struct_size = n;
        std::memcpy(static_cast<void*>(out), &r, n);
    });
}

KVRT_API kvrt_status kvrt_ced_memory_source(int32_t* layer, int32_t* ratio, double* main_bpt, double* idx_bpt,
                                            const kvrt_model* model, uint32_t index, int32_t dtype) {
    return guard("kvrt_ced_memory_source", [&] {
        const auto m = kvrt::api::model_of(model);
        const kvrt::ced::CedMemory mem = memory_at(ced_config_of(*m), dtype);
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

}  // extern "C"
