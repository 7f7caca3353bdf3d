// The C API of the CED generator (include/kvrt/ced.h).
#include "api/boundary.hpp"
#include "kvrt/ced.h"
#include "model/arch/ced_generator.hpp"

#include <cstddef>
#include <cstring>
#include <string>

using kvrt::Error;
using kvrt::api::guard;
using kvrt::api::require_non_null;

namespace {

constexpr size_t kMinInitSize = offsetof(kvrt_ced_init_config, n_vocab) + sizeof(int32_t);

kvrt::ced::GeneratorOptions options_of(const kvrt_ced_init_config* cfg) {
    kvrt_ced_init_config c;
    kvrt_ced_init_config_init(&c, sizeof c);
    if (cfg) {
        kvrt::api::require_config(cfg, "cfg", kMinInitSize);
        std::memcpy(&c, cfg, cfg->struct_size);
    }
    kvrt::ced::GeneratorOptions o;
    try {
        o.cfg = kvrt::ced::preset(c.preset ? c.preset : "tiny");
        if (c.window) o.cfg.window = c.window;
        if (c.top_k) o.cfg.top_k = c.top_k;
        if (c.n_vocab) o.cfg.n_vocab = c.n_vocab;
        o.cfg.validate();
    } catch (const Error& e) {
        throw Error(KVRT_ERR_INVALID_ARGUMENT, e.what());
    }
    o.seed = c.seed;
    switch (c.weight_type) {
        case KVRT_CED_WEIGHTS_F32: o.weight_type = kvrt::TensorType::F32; break;
        case KVRT_CED_WEIGHTS_F16: o.weight_type = kvrt::TensorType::F16; break;
        case KVRT_CED_WEIGHTS_BF16: o.weight_type = kvrt::TensorType::BF16; break;
        case KVRT_CED_WEIGHTS_Q8_0: o.weight_type = kvrt::TensorType::Q8_0; break;
        case KVRT_CED_WEIGHTS_Q4_0: o.weight_type = kvrt::TensorType::Q4_0; break;
        case KVRT_CED_WEIGHTS_Q4_1: o.weight_type = kvrt::TensorType::Q4_1; break;
        default:
            throw Error(KVRT_ERR_INVALID_ARGUMENT,
                        "cfg->weight_type is " + std::to_string(c.weight_type) + "; use a kvrt_ced_weight_type");
    }
    return o;
}

}  // namespace

extern "C" {

KVRT_API kvrt_status kvrt_ced_init_config_init(kvrt_ced_init_config* cfg, size_t struct_size) {
    return guard("kvrt_ced_init_config_init", [&] {
        require_non_null(cfg, "cfg");
        if (struct_size < kMinInitSize || struct_size > sizeof(kvrt_ced_init_config))
            throw Error(KVRT_ERR_INVALID_ARGUMENT,
                        "struct_size is " + std::to_string(struct_size) + "; pass sizeof(kvrt_ced_init_config)");
        kvrt_ced_init_config d{};
        d.struct_size = struct_size;
        d.preset = "tiny";
        d.seed = 1;
        d.weight_type = KVRT_CED_WEIGHTS_F32;
        std::memcpy(cfg, &d, struct_size);
    });
}

KVRT_API kvrt_status kvrt_ced_param_count(uint64_t* out, const kvrt_ced_init_config* cfg) {
    return guard("kvrt_ced_param_count", [&] {
        require_non_null(out, "out");
        require_non_null(cfg, "cfg");
        *out = options_of(cfg).cfg.n_params();
    });
}

KVRT_API kvrt_status kvrt_ced_write_gguf(const char* path, const kvrt_ced_init_config* cfg) {
    return guard("kvrt_ced_write_gguf", [&] {
        require_non_null(path, "path");
        kvrt::ced::write_random_gguf(path, options_of(cfg));
    });
}

}  // extern "C"
