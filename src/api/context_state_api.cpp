// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// kvrt_context_seq_tokens / _save / _load / _fork / _truncate: one conversation
// saved, restored, branched and cut (runtime/context_state.cpp does the work).
#include "api/model_handles.hpp"

#include <cstring>
#include <string>

using kvrt::Error;
using kvrt::api::guard;
using kvrt::api::require_capacity;
using kvrt::api::require_non_null;

extern "C" {

KVRT_API kvrt_status kvrt_context_seq_tokens(int32_t* dst, size_t capacity, size_t* written, const kvrt_context* ctx,
                                             int32_t seq_id) {
    return guard("kvrt_context_seq_tokens", [&] {
        require_non_null(written, "written");
        const auto cp = kvrt::api::context_of(ctx);
        const std::vector<int32_t>& t = cp->tokens(seq_id);
        require_capacity(capacity, dst, t.size(), written, "dst");
        if (dst && !t.empty()) std::memcpy(dst, t.data(), t.size() * sizeof(int32_t));
    });
}

KVRT_API kvrt_status kvrt_context_seq_save(const kvrt_context* ctx, int32_t seq_id, const char* path) {
    return guard("kvrt_context_seq_save", [&] {
        auto cp = kvrt::api::context_of(ctx);
        require_non_null(path, "path");
        kvrt::runtime::Context::Call call(*cp, "kvrt_context_seq_save");
        cp->save_seq(seq_id, path);
    });
}

KVRT_API kvrt_status kvrt_context_seq_load(kvrt_context* ctx, int32_t seq_id, const char* path) {
    return guard("kvrt_context_seq_load", [&] {
        auto cp = kvrt::api::context_of(ctx);
        require_non_null(path, "path");
        kvrt::runtime::Context::Call call(*cp, "kvrt_context_seq_load");
        cp->load_seq(seq_id, path);
    });
}

KVRT_API kvrt_status kvrt_context_seq_fork(kvrt_context* ctx, int32_t src_seq, int32_t dst_seq) {
    return guard("kvrt_context_seq_fork", [&] {
        auto cp = kvrt::api::context_of(ctx);
        kvrt::runtime::Context::Call call(*cp, "kvrt_context_seq_fork");
        cp->fork_seq(src_seq, dst_seq);
    });
}

KVRT_API kvrt_status kvrt_context_seq_truncate(kvrt_context* ctx, int32_t seq_id, size_t n) {
    return guard("kvrt_context_seq_truncate", [&] {
        auto cp = kvrt::api::context_of(ctx);
        kvrt::runtime::Context::Call call(*cp, "kvrt_context_seq_truncate");
        cp->truncate_seq(seq_id, n);
    });
}

}  // extern "C"
