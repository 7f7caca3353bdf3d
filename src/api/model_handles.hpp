// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The C handles of the model runtime (kvrt_model, kvrt_context, kvrt_sampler):
// checked handles from api/handle_registry.hpp, so a NULL, destroyed or
// foreign handle is KVRT_ERR_BAD_HANDLE, never a dereference. Only src/api/
// sees them.
#pragma once

#include "api/boundary.hpp"
#include "api/handle_registry.hpp"
#include "kvrt/context.h"
#include "kvrt/model.h"
#include "model/model.hpp"
#include "runtime/context.hpp"
#include "runtime/sampler.hpp"

#include <memory>

namespace kvrt::api {

using ModelRegistry = HandleRegistry<const Model, kvrt_model>;
using ContextRegistry = HandleRegistry<runtime::Context, kvrt_context>;
using SamplerRegistry = HandleRegistry<runtime::Sampler, kvrt_sampler>;

ModelRegistry& models();
ContextRegistry& contexts();
SamplerRegistry& samplers();

// The object behind a handle (kept alive for the call); BAD_HANDLE names the parameter.
std::shared_ptr<const Model> model_of(const kvrt_model* h, const char* param = "model");
std::shared_ptr<runtime::Context> context_of(const kvrt_context* h, const char* param = "ctx");
std::shared_ptr<runtime::Sampler> sampler_of(const kvrt_sampler* h, const char* param = "sampler");

// Buffer convention of kvrt/model.h: *written = needed; a size query (dst NULL,
// capacity 0) returns normally; a short buffer throws BUFFER_TOO_SMALL.
inline void require_capacity(size_t capacity, const void* dst, size_t needed, size_t* written, const char* what) {
    *written = needed;
    if (dst == nullptr && capacity == 0) return;
    if (dst == nullptr) throw Error(KVRT_ERR_INVALID_ARGUMENT, std::string(what) + ": dst is NULL with capacity > 0");
    if (capacity < needed)
        throw Error(KVRT_ERR_BUFFER_TOO_SMALL, std::string(what) + ": needs " + std::to_string(needed) +
                                                   ", capacity is " + std::to_string(capacity));
}

}  // namespace kvrt::api
