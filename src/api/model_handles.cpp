// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

#include "api/model_handles.hpp"

namespace kvrt::api {

// Leaked on purpose: handles may be destroyed from static destructors of the caller.
ModelRegistry& models() {
    static auto* r = new ModelRegistry(0xA1);
    return *r;
}
ContextRegistry& contexts() {
    static auto* r = new ContextRegistry(0xA2);
    return *r;
}
SamplerRegistry& samplers() {
    static auto* r = new SamplerRegistry(0xA3);
    return *r;
}

namespace {
template <class R, class H>
auto lookup(R& reg, const H* h, const char* param, const char* type) {
    auto obj = reg.get(h);
    if (!obj)
        throw Error(KVRT_ERR_BAD_HANDLE,
                    std::string(param) + (h ? std::string(" is not a live ") + type + " (destroyed or foreign)"
                                            : std::string(" is NULL")));
    return obj;
}
}  // namespace

std::shared_ptr<const Model> model_of(const kvrt_model* h, const char* param) {
    return lookup(models(), h, param, "kvrt_model");
}
std::shared_ptr<runtime::Context> context_of(const kvrt_context* h, const char* param) {
    return lookup(contexts(), h, param, "kvrt_context");
}
std::shared_ptr<runtime::Sampler> sampler_of(const kvrt_sampler* h, const char* param) {
    return lookup(samplers(), h, param, "kvrt_sampler");
}

}  // namespace kvrt::api
