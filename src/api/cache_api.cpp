// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The C API of the cache manager (include/kvrt/cache.h) over kvrt::cache::Cache.
#include "api/boundary.hpp"
#include "api/cache_handles.hpp"
#include "api/handle_registry.hpp"
#include "api/struct_versions.h"
#include "cache/cache.hpp"
#include "kvrt/cache.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

using kvrt::Error;
using kvrt::api::guard;
using kvrt::api::require_non_null;
using namespace kvrt::cache;

// The C layout handle's object.
struct kvrt_cache_layout_obj {
    int32_t block_tokens = 16;
    std::vector<LayerSpec> layers;
};

namespace kvrt::api {
namespace {

HandleRegistry<Cache, kvrt_cache>& caches() {
    static auto* r = new HandleRegistry<Cache, kvrt_cache>(0xC1);
    return *r;
}
HandleRegistry<kvrt_cache_layout_obj, kvrt_cache_layout>& layouts() {
    static auto* r = new HandleRegistry<kvrt_cache_layout_obj, kvrt_cache_layout>(0xC2);
    return *r;
}

std::shared_ptr<kvrt_cache_layout_obj> layout_from_handle(const kvrt_cache_layout* h) {
    auto l = layouts().get(h);
    if (!l)
        throw Error(KVRT_ERR_BAD_HANDLE, h ? "layout is not a live kvrt_cache_layout (destroyed or foreign)"
                                           : "layout is NULL");
    return l;
}

// Output structs: struct_size must lie between the size at the version that
// introduced the struct (min_size) and the size this library knows, like every
// input struct; the first struct_size bytes are filled. Larger sizes are
// rejected, never zeroed: the library cannot know how big the caller's object
// really is, so writing past sizeof(Out) could corrupt the caller's memory.
template <class Out>
void fill_out(Out* out, const Out& value, size_t min_size, const char* name) {
    require_non_null(out, name);
    const size_t n = out->struct_size;
    if (n < min_size || n > sizeof(Out))
        throw Error(KVRT_ERR_INVALID_ARGUMENT, std::string(name) + "->struct_size is " + std::to_string(n) +
                                                   "; it must be in [" + std::to_string(min_size) + ", " +
                                                   std::to_string(sizeof(Out)) + "]: set it to sizeof(*" + name +
                                                   ")");
    std::memcpy(reinterpret_cast<char*>(out) + sizeof(size_t), reinterpret_cast<const char*>(&value) + sizeof(size_t),
                n - sizeof(size_t));
}

// First published sizes of the size-prefixed output structs: the end of the
// last field they had at the version that introduced them (api/struct_versions.h).
// Fields are only appended, so these stay fixed when a field is added; a caller
// compiled against that older header passes the smaller size.
constexpr size_t kSeqInfoV1 = KVRT_MIN_SIZE_kvrt_cache_seq_info;
constexpr size_t kLayerInfoV1 = KVRT_MIN_SIZE_kvrt_cache_layer_info;
constexpr size_t kStatsV1 = KVRT_MIN_SIZE_kvrt_cache_stats;

// Output struct _init: struct_size in [min_size, sizeof(Out)]; zeroes the first
// struct_size bytes and records the size (nothing past it is written).
template <class Out>
kvrt_status init_out(Out* out, size_t struct_size, size_t min_size, const char* fn) {
    return guard(fn, [&] {
        require_non_null(out, "out");
        if (struct_size < min_size || struct_size > sizeof(Out))
            throw Error(KVRT_ERR_INVALID_ARGUMENT, "struct_size " + std::to_string(struct_size) +
                                                       " is not one this library knows (" + std::to_string(min_size) +
                                                       ".." + std::to_string(sizeof(Out)) + ")");
        std::memset(static_cast<void*>(out), 0, struct_size);
        out->struct_size = struct_size;
    });
}

// Copies a caller's input config: the fields its struct_size covers, the
// defaults (dst as passed in) for fields appended after it.
template <class Cfg>
void read_config(Cfg* dst, const Cfg* src, const char* name, size_t min_size) {
    require_non_null(src, name);
    if (src->struct_size < min_size || src->struct_size > sizeof(Cfg))
        throw Error(KVRT_ERR_INVALID_ARGUMENT, std::string(name) + "->struct_size is " +
                                                   std::to_string(src->struct_size) +
                                                   "; initialise it with the matching _init()");
    std::memcpy(static_cast<void*>(dst), src, src->struct_size);
    dst->struct_size = sizeof(Cfg);
}

// Config init: struct_size between the size of the first version and ours.
template <class Cfg>
kvrt_status init_config(Cfg* cfg, size_t struct_size, size_t min_size, const Cfg& defaults, const char* name) {
    return guard(name, [&] {
        require_non_null(cfg, "cfg");
        if (struct_size < min_size || struct_size > sizeof(Cfg))
            throw Error(KVRT_ERR_INVALID_ARGUMENT,
                        "struct_size " + std::to_string(struct_size) + " is not one this library knows (" +
                            std::to_string(min_size) + ".." + std::to_string(sizeof(Cfg)) + ")");
        std::memcpy(cfg, &defaults, struct_size);
        cfg->struct_size = struct_size;
    });
}

SeqKeys keys_from_c(const kvrt_cache_keys* k) {
    SeqKeys out;
    if (!k) return out;
    kvrt_cache_keys kc{};
    kvrt_cache_keys_init(&kc, sizeof kc);
    read_config(&kc, k, "keys", KVRT_MIN_SIZE_kvrt_cache_keys);
    k = &kc;
    if (k->salt == nullptr && k->salt_len != 0)
        throw Error(KVRT_ERR_INVALID_ARGUMENT, "keys->salt is NULL but salt_len is " + std::to_string(k->salt_len));
    out.fingerprint_lo = k->fingerprint_lo;
    out.fingerprint_hi = k->fingerprint_hi;
    out.adapter_id = k->adapter_id;
    if (k->salt_len) out.salt.assign(static_cast<const char*>(k->salt), k->salt_len);
    return out;
}

int64_t count_from_size(size_t n, const char* name) {
    if (n > static_cast<size_t>(INT32_MAX))
        throw Error(KVRT_ERR_OUT_OF_RANGE, std::string(name) + " is " + std::to_string(n) + "; at most 2^31-1");
    return static_cast<int64_t>(n);
}

// Rows [first_row, first_row + n_rows): the end must be representable (the
// cache computes it), whatever the sequence holds.
void check_row_range(int64_t first_row, int64_t n_rows) {
    if (first_row >= 0 && n_rows > INT64_MAX - first_row)
        throw Error(KVRT_ERR_OUT_OF_RANGE, "rows [" + std::to_string(first_row) + ", +" + std::to_string(n_rows) +
                                               ") end past INT64_MAX");
}

LayerSpec layer_from_c(const kvrt_cache_layer_config* c) {
    LayerSpec s;
    if (c->kind < 0 || c->kind > KVRT_LAYER_INDEXER_KEYS)
        throw Error(KVRT_ERR_INVALID_ARGUMENT, "cfg->kind " + std::to_string(c->kind) + " is not a kvrt_layer_kind");
    if (c->dtype < 0 || c->dtype > KVRT_DTYPE_FP4)
        throw Error(KVRT_ERR_INVALID_ARGUMENT, "cfg->dtype " + std::to_string(c->dtype) + " is not a kvrt_dtype");
    if (c->v_dtype < -1 || c->v_dtype > KVRT_DTYPE_FP4)
        throw Error(KVRT_ERR_INVALID_ARGUMENT, "cfg->v_dtype " + std::to_string(c->v_dtype) + " is not -1 or a kvrt_dtype");
    if (c->v_dtype > KVRT_DTYPE_FP8_E4M3)
        throw Error(KVRT_ERR_UNSUPPORTED, "cfg->v_dtype " + std::to_string(c->v_dtype) +
                                              " (fp4) is for bank and indexer key rows, which have no separate V rows");
    s.kind = static_cast<LayerKind>(c->kind);
    s.n_kv_heads = c->n_kv_heads;
    s.head_dim = c->head_dim;
    s.dtype = static_cast<kvrt::DType>(c->dtype);
    s.window = c->window;
    s.ratio = c->ratio;
    s.source = c->source;
    if (c->shared_kv != 0 && c->shared_kv != 1)
        throw Error(KVRT_ERR_INVALID_ARGUMENT, "cfg->shared_kv must be 0 or 1");
    s.shared_kv = c->shared_kv != 0;
    if (c->v_dtype >= 0 && c->v_dtype != c->dtype) s.v_dtype = static_cast<kvrt::DType>(c->v_dtype);
    return s;
}

}  // namespace

kvrt_cache* cache_handle_for(const std::shared_ptr<Cache>& cache) { return caches().find_or_add(cache, false); }

std::shared_ptr<Cache> cache_from_handle(const kvrt_cache* h, const char* param) {
    auto c = caches().get(h);
    if (!c)
        throw Error(KVRT_ERR_BAD_HANDLE, std::string(param) + (h ? " is not a live kvrt_cache (destroyed or foreign)"
                                                                 : " is NULL"));
    return c;
}

}  // namespace kvrt::api

using kvrt::api::cache_from_handle;

static_assert(KVRT_DTYPE_F32 == static_cast<int>(kvrt::DType::F32));
static_assert(KVRT_DTYPE_F16 == static_cast<int>(kvrt::DType::F16));
static_assert(KVRT_DTYPE_BF16 == static_cast<int>(kvrt::DType::BF16));
static_assert(KVRT_DTYPE_I8 == static_cast<int>(kvrt::DType::I8));
static_assert(KVRT_DTYPE_FP8_E4M3 == static_cast<int>(kvrt::DType::FP8_E4M3));
static_assert(KVRT_DTYPE_FP4 == static_cast<int>(kvrt::DType::FP4));
static_assert(KVRT_LAYER_FULL == static_cast<int>(LayerKind::Full));
static_assert(KVRT_LAYER_WINDOW == static_cast<int>(LayerKind::Window));
static_assert(KVRT_LAYER_BANK_SOURCE == static_cast<int>(LayerKind::BankSource));
static_assert(KVRT_LAYER_BANK_READER == static_cast<int>(LayerKind::BankReader));
static_assert(KVRT_LAYER_INDEXER_KEYS == static_cast<int>(LayerKind::IndexerKeys));
static_assert(kNumLayerKinds <= KVRT_CACHE_KIND_SLOTS);

extern "C" {

// ---- layout -----------------------------------------------------------------

KVRT_API kvrt_status kvrt_cache_layer_config_init(kvrt_cache_layer_config* cfg, size_t struct_size) {
    kvrt_cache_layer_config d{};
    d.struct_size = sizeof d;
    d.kind = KVRT_LAYER_FULL;
    d.dtype = KVRT_DTYPE_F16;
    d.ratio = 1;
    d.source = -1;
    d.v_dtype = -1;
    return kvrt::api::init_config(cfg, struct_size, KVRT_MIN_SIZE_kvrt_cache_layer_config, d, "kvrt_cache_layer_config_init");
}

KVRT_API kvrt_status kvrt_cache_layout_create(kvrt_cache_layout** out, int32_t block_tokens) {
    return guard("kvrt_cache_layout_create", [&] {
        require_non_null(out, "out");
        *out = nullptr;
        if (block_tokens < 1 || block_tokens > 65536)
            throw Error(KVRT_ERR_INVALID_ARGUMENT,
                        "block_tokens is " + std::to_string(block_tokens) + "; it must be in [1, 65536]");
        auto l = std::make_shared<kvrt_cache_layout_obj>();
        l->block_tokens = block_tokens;
        *out = kvrt::api::layouts().add(std::move(l));
    });
}

KVRT_API void kvrt_cache_layout_destroy(kvrt_cache_layout* layout) {
    guard("kvrt_cache_layout_destroy", [&] { kvrt::api::layouts().remove(layout); });
}

KVRT_API kvrt_status kvrt_cache_layout_add_layers(int32_t* out_first, kvrt_cache_layout* layout,
                                                  const kvrt_cache_layer_config* cfg, int32_t count) {
    return guard("kvrt_cache_layout_add_layers", [&] {
        auto l = kvrt::api::layout_from_handle(layout);
        kvrt_cache_layer_config lc{};
        kvrt_cache_layer_config_init(&lc, sizeof lc);
        kvrt::api::read_config(&lc, cfg, "cfg", KVRT_MIN_SIZE_kvrt_cache_layer_config);
        cfg = &lc;
        if (count < 1) throw Error(KVRT_ERR_INVALID_ARGUMENT, "count is " + std::to_string(count));
        if (l->layers.size() + static_cast<size_t>(count) > 65536)
            throw Error(KVRT_ERR_OVERFLOW, "a layout holds at most 65536 layers");
        LayerSpec s = kvrt::api::layer_from_c(cfg);
        // Validate now, with the layers before it, so that the error points at this call.
        CacheConfig probe;
        probe.block_tokens = l->block_tokens;
        probe.budget_bytes = 1;
        if (s.kind == LayerKind::BankReader || s.kind == LayerKind::IndexerKeys) {
            if (s.source < 0 || static_cast<size_t>(s.source) >= l->layers.size() ||
                l->layers[s.source].kind != LayerKind::BankSource)
                throw Error(KVRT_ERR_INVALID_ARGUMENT,
                            "cfg->source " + std::to_string(s.source) + " is not an earlier bank source layer");
            probe.layers.push_back(l->layers[s.source]);
            s.source = 0;
        }
        probe.layers.push_back(s);
        kvrt::cache::resolve_layout(probe);  // throws naming the problem
        int32_t first = static_cast<int32_t>(l->layers.size());
        LayerSpec real = kvrt::api::layer_from_c(cfg);
        l->layers.insert(l->layers.end(), static_cast<size_t>(count), real);
        if (out_first) *out_first = first;
    });
}

KVRT_API kvrt_status kvrt_cache_layout_n_layers(int32_t* out, const kvrt_cache_layout* layout) {
    return guard("kvrt_cache_layout_n_layers", [&] {
        require_non_null(out, "out");
        *out = static_cast<int32_t>(kvrt::api::layout_from_handle(layout)->layers.size());
    });
}

// ---- cache --------------------------------------------------------------------

KVRT_API kvrt_status kvrt_cache_config_init(kvrt_cache_config* cfg, size_t struct_size) {
    kvrt_cache_config d{};
    d.struct_size = sizeof d;
    d.budget_bytes = 256ull << 20;
    return kvrt::api::init_config(cfg, struct_size, KVRT_MIN_SIZE_kvrt_cache_config, d, "kvrt_cache_config_init");
}

KVRT_API kvrt_status kvrt_cache_create(kvrt_cache** out, const kvrt_cache_layout* layout,
                                       const kvrt_cache_config* cfg) {
    return guard("kvrt_cache_create", [&] {
        require_non_null(out, "out");
        *out = nullptr;
        auto l = kvrt::api::layout_from_handle(layout);
        kvrt_cache_config c{};
        kvrt_cache_config_init(&c, sizeof c);
        if (cfg) kvrt::api::read_config(&c, cfg, "cfg", KVRT_MIN_SIZE_kvrt_cache_config);
        if (c.reserved0 != 0) throw Error(KVRT_ERR_INVALID_ARGUMENT, "cfg->reserved0 must be 0");
        if (c.large_pages != 0 && c.large_pages != 1)
            throw Error(KVRT_ERR_INVALID_ARGUMENT, "cfg->large_pages must be 0 or 1");
        CacheConfig cc;
        cc.block_tokens = l->block_tokens;
        cc.layers = l->layers;
        cc.budget_bytes = c.budget_bytes;
        cc.large_pages = c.large_pages != 0;
        auto cache = std::make_shared<Cache>(cc);
        *out = kvrt::api::caches().add(std::move(cache), true);
    });
}

KVRT_API void kvrt_cache_destroy(kvrt_cache* cache) {
    guard("kvrt_cache_destroy", [&] { kvrt::api::caches().remove(cache); });
}

// ---- sequences ------------------------------------------------------------------

KVRT_API kvrt_status kvrt_cache_keys_init(kvrt_cache_keys* keys, size_t struct_size) {
    kvrt_cache_keys d{};
    d.struct_size = sizeof d;
    return kvrt::api::init_config(keys, struct_size, KVRT_MIN_SIZE_kvrt_cache_keys, d, "kvrt_cache_keys_init");
}

KVRT_API kvrt_status kvrt_cache_seq_create(uint64_t* out_seq, kvrt_cache* cache, const kvrt_cache_keys* keys) {
    return guard("kvrt_cache_seq_create", [&] {
        auto c = cache_from_handle(cache);
        require_non_null(out_seq, "out_seq");
        *out_seq = c->create_sequence(kvrt::api::keys_from_c(keys));
    });
}

KVRT_API kvrt_status kvrt_cache_seq_release(kvrt_cache* cache, uint64_t seq) {
    return guard("kvrt_cache_seq_release", [&] {
        auto c = cache_from_handle(cache);
        try {
            c->release(seq);
        } catch (const Error& e) {
            // A pin id is "not a sequence": report it as not found, with the reason.
            if (e.status() == KVRT_ERR_INVALID_ARGUMENT) throw Error(KVRT_ERR_NOT_FOUND, e.what());
            throw;
        }
    });
}

KVRT_API kvrt_status kvrt_cache_seq_fork(uint64_t* out_child, kvrt_cache* cache, uint64_t parent) {
    return guard("kvrt_cache_seq_fork", [&] {
        auto c = cache_from_handle(cache);
        require_non_null(out_child, "out_child");
        *out_child = c->fork(parent);
    });
}

KVRT_API kvrt_status kvrt_cache_seq_truncate(kvrt_cache* cache, uint64_t seq, int64_t pos) {
    return guard("kvrt_cache_seq_truncate", [&] { cache_from_handle(cache)->truncate(seq, pos); });
}

KVRT_API kvrt_status kvrt_cache_seq_append(kvrt_cache* cache, uint64_t seq, const int32_t* tokens, size_t n) {
    return guard("kvrt_cache_seq_append", [&] {
        auto c = cache_from_handle(cache);
        // A NULL array is wrong whatever n is: report it before the size.
        if (tokens == nullptr && n > 0)
            throw Error(KVRT_ERR_INVALID_ARGUMENT, "tokens is NULL with n = " + std::to_string(n));
        if (n > static_cast<size_t>(INT32_MAX))
            throw Error(KVRT_ERR_OVERFLOW, "n is " + std::to_string(n) + "; a sequence holds at most 2^31-1 positions");
        c->append(seq, tokens, static_cast<int64_t>(n));
    });
}

KVRT_API kvrt_status kvrt_cache_seq_mark_computed(kvrt_cache* cache, uint64_t seq, int64_t n_positions) {
    return guard("kvrt_cache_seq_mark_computed", [&] { cache_from_handle(cache)->mark_computed(seq, n_positions); });
}

KVRT_API kvrt_status kvrt_cache_seq_match_prefix(int64_t* out_hit, kvrt_cache* cache, uint64_t seq,
                                                 const int32_t* tokens, size_t n) {
    return guard("kvrt_cache_seq_match_prefix", [&] {
        auto c = cache_from_handle(cache);
        require_non_null(out_hit, "out_hit");
        *out_hit = c->match_prefix(seq, tokens, kvrt::api::count_from_size(n, "n"));
    });
}

namespace {
bool sub_block_flag(uint32_t flags) {
    KVRT_CHECK((flags & ~uint32_t(KVRT_MATCH_SUB_BLOCK)) == 0, KVRT_ERR_INVALID_ARGUMENT,
               "flags has unknown bits (" + std::to_string(flags) + "); known: KVRT_MATCH_SUB_BLOCK");
    return (flags & KVRT_MATCH_SUB_BLOCK) != 0;
}
}  // namespace

KVRT_API kvrt_status kvrt_cache_seq_match_prefix_v2(int64_t* out_hit, kvrt_cache* cache, uint64_t seq,
                                                    const int32_t* tokens, size_t n, uint32_t flags) {
    return guard("kvrt_cache_seq_match_prefix_v2", [&] {
        auto c = cache_from_handle(cache);
        require_non_null(out_hit, "out_hit");
        const bool sub = sub_block_flag(flags);
        *out_hit = c->match_prefix(seq, tokens, kvrt::api::count_from_size(n, "n"), sub);
    });
}

KVRT_API kvrt_status kvrt_cache_seq_info_init(kvrt_cache_seq_info* out, size_t struct_size) {
    return kvrt::api::init_out(out, struct_size, kvrt::api::kSeqInfoV1, "kvrt_cache_seq_info_init");
}

KVRT_API kvrt_status kvrt_cache_seq_info_get(kvrt_cache_seq_info* out, const kvrt_cache* cache, uint64_t seq) {
    return guard("kvrt_cache_seq_info_get", [&] {
        auto c = cache_from_handle(cache);
        SeqInfo i = c->seq_info(seq);
        kvrt_cache_seq_info v{};
        v.length = i.length;
        v.computed = i.computed;
        v.n_blocks = i.n_blocks;
        v.bytes = i.bytes;
        v.is_pin = i.is_pin ? 1 : 0;
        kvrt::api::fill_out(out, v, kvrt::api::kSeqInfoV1, "out");
    });
}

// ---- prefix cache -------------------------------------------------------------------

KVRT_API kvrt_status kvrt_cache_lookup_prefix(int64_t* out_hit, const kvrt_cache* cache, const kvrt_cache_keys* keys,
                                              const int32_t* tokens, size_t n) {
    return guard("kvrt_cache_lookup_prefix", [&] {
        auto c = cache_from_handle(cache);
        require_non_null(out_hit, "out_hit");
        *out_hit = c->lookup_prefix(kvrt::api::keys_from_c(keys), tokens, kvrt::api::count_from_size(n, "n"));
    });
}

KVRT_API kvrt_status kvrt_cache_lookup_prefix_v2(int64_t* out_hit, const kvrt_cache* cache,
                                                 const kvrt_cache_keys* keys, const int32_t* tokens, size_t n,
                                                 uint32_t flags) {
    return guard("kvrt_cache_lookup_prefix_v2", [&] {
        auto c = cache_from_handle(cache);
        require_non_null(out_hit, "out_hit");
        const bool sub = sub_block_flag(flags);
        *out_hit = c->lookup_prefix(kvrt::api::keys_from_c(keys), tokens, kvrt::api::count_from_size(n, "n"), sub);
    });
}

KVRT_API kvrt_status kvrt_cache_pin_prefix(uint64_t* out_pin, int64_t* out_pinned, kvrt_cache* cache,
                                           const kvrt_cache_keys* keys, const int32_t* tokens, size_t n) {
    return guard("kvrt_cache_pin_prefix", [&] {
        auto c = cache_from_handle(cache);
        require_non_null(out_pin, "out_pin");
        int64_t pinned = 0;
        *out_pin = c->pin_prefix(kvrt::api::keys_from_c(keys), tokens, kvrt::api::count_from_size(n, "n"), &pinned);
        if (out_pinned) *out_pinned = pinned;
    });
}

KVRT_API kvrt_status kvrt_cache_unpin(kvrt_cache* cache, uint64_t pin) {
    return guard("kvrt_cache_unpin", [&] {
        auto c = cache_from_handle(cache);
        try {
            c->unpin(pin);
        } catch (const Error& e) {
            if (e.status() == KVRT_ERR_INVALID_ARGUMENT) throw Error(KVRT_ERR_NOT_FOUND, e.what());
            throw;
        }
    });
}

// ---- rows -----------------------------------------------------------------------------

KVRT_API kvrt_status kvrt_cache_layer_info_init(kvrt_cache_layer_info* out, size_t struct_size) {
    return kvrt::api::init_out(out, struct_size, kvrt::api::kLayerInfoV1, "kvrt_cache_layer_info_init");
}

KVRT_API kvrt_status kvrt_cache_layer_info_get(kvrt_cache_layer_info* out, const kvrt_cache* cache, int32_t layer) {
    return guard("kvrt_cache_layer_info_get", [&] {
        auto c = cache_from_handle(cache);
        const LayerGeometry& g = c->geometry(layer);
        kvrt_cache_layer_info v{};
        v.kind = static_cast<int32_t>(g.kind);
        v.row_layer = g.row_layer;
        v.ratio = g.ratio;
        v.rows_per_block = g.rows_per_block;
        v.n_kv_heads = g.n_kv_heads;
        v.head_dim = g.head_dim;
        v.dtype = g.dtype == kvrt::DType::FP4_E8 ? KVRT_DTYPE_FP4 : static_cast<int32_t>(g.dtype);  // e8m0 keys: fp4
        v.window = g.window;
        v.row_bytes = g.row_bytes;
        v.k_offset = g.k_offset;
        v.v_offset = g.v_offset;
        v.block_bytes = c->layout().managers[g.manager].block_bytes;
        v.separate_v = g.separate_v ? 1 : 0;
        v.manager = g.manager;
        v.v_dtype = g.v_dtype == kvrt::DType::FP4_E8 ? KVRT_DTYPE_FP4 : static_cast<int32_t>(g.v_dtype);
        v.v_row_bytes = g.v_row_bytes;
        kvrt::api::fill_out(out, v, kvrt::api::kLayerInfoV1, "out");
    });
}

KVRT_API kvrt_status kvrt_cache_write_rows(kvrt_cache* cache, uint64_t seq, int32_t layer, int64_t first_row,
                                           int64_t n_rows, const void* k, const void* v) {
    return guard("kvrt_cache_write_rows", [&] {
        auto c = cache_from_handle(cache);
        kvrt::api::check_row_range(first_row, n_rows);
        c->write_rows(seq, layer, first_row, n_rows, k, v);
    });
}

KVRT_API kvrt_status kvrt_cache_read_rows(void* k_dst, void* v_dst, const kvrt_cache* cache, uint64_t seq,
                                          int32_t layer, int64_t first_row, int64_t n_rows) {
    return guard("kvrt_cache_read_rows", [&] {
        auto c = cache_from_handle(cache);
        kvrt::api::check_row_range(first_row, n_rows);
        c->read_rows(seq, layer, first_row, n_rows, k_dst, v_dst);
    });
}

KVRT_API kvrt_status kvrt_cache_block_table(const void** dst, size_t capacity, size_t* written,
                                            const kvrt_cache* cache, uint64_t seq, int32_t layer) {
    return guard("kvrt_cache_block_table", [&] {
        auto c = cache_from_handle(cache);
        require_non_null(written, "written");
        if (capacity > 0) require_non_null(dst, "dst");
        std::vector<const uint8_t*> table = c->block_table(seq, layer);
        *written = table.size();
        if (dst == nullptr && capacity == 0) return;  // a size query (the buffer convention, kvrt/model.h)
        if (capacity < table.size())
            throw Error(KVRT_ERR_BUFFER_TOO_SMALL, "the block table has " + std::to_string(table.size()) +
                                                       " entries; capacity is " + std::to_string(capacity));
        for (size_t i = 0; i < table.size(); i++) dst[i] = table[i];
    });
}

// ---- state files --------------------------------------------------------------------------

KVRT_API kvrt_status kvrt_cache_save_prefixes(uint64_t* out_blocks, const kvrt_cache* cache, const char* path,
                                              uint64_t fingerprint_lo, uint64_t fingerprint_hi) {
    return guard("kvrt_cache_save_prefixes", [&] {
        auto c = cache_from_handle(cache);
        require_non_null(path, "path");
        uint64_t n = c->save_prefixes(path, fingerprint_lo, fingerprint_hi);
        if (out_blocks) *out_blocks = n;
    });
}

KVRT_API kvrt_status kvrt_cache_load_prefixes(uint64_t* out_blocks, kvrt_cache* cache, const char* path,
                                              uint64_t fingerprint_lo, uint64_t fingerprint_hi) {
    return guard("kvrt_cache_load_prefixes", [&] {
        auto c = cache_from_handle(cache);
        require_non_null(path, "path");
        uint64_t n = c->load_prefixes(path, fingerprint_lo, fingerprint_hi);
        if (out_blocks) *out_blocks = n;
    });
}

KVRT_API kvrt_status kvrt_cache_seq_save(const kvrt_cache* cache, uint64_t seq, const char* path) {
    return guard("kvrt_cache_seq_save", [&] {
        auto c = cache_from_handle(cache);
        require_non_null(path, "path");
        try {
            c->save_sequence(seq, path);
        } catch (const Error& e) {
            if (e.status() == KVRT_ERR_INVALID_ARGUMENT) throw Error(KVRT_ERR_NOT_FOUND, e.what());
            throw;
        }
    });
}

KVRT_API kvrt_status kvrt_cache_seq_load(uint64_t* out_seq, kvrt_cache* cache, const char* path,
                                         uint64_t fingerprint_lo, uint64_t fingerprint_hi) {
    return guard("kvrt_cache_seq_load", [&] {
        auto c = cache_from_handle(cache);
        require_non_null(out_seq, "out_seq");
        require_non_null(path, "path");
        *out_seq = c->load_sequence(path, fingerprint_lo, fingerprint_hi);
    });
}

// ---- statistics -------------------------------------------------------------------------

KVRT_API kvrt_status kvrt_cache_stats_init(kvrt_cache_stats* out, size_t struct_size) {
    return kvrt::api::init_out(out, struct_size, kvrt::api::kStatsV1, "kvrt_cache_stats_init");
}

KVRT_API kvrt_status kvrt_cache_stats_get(kvrt_cache_stats* out, const kvrt_cache* cache) {
    return guard("kvrt_cache_stats_get", [&] {
        auto c = cache_from_handle(cache);
        CacheStats s = c->stats();
        kvrt_cache_stats v{};
        v.budget_bytes = s.budget_bytes;
        v.bytes_in_use = s.bytes_in_use;
        v.bytes_cached = s.bytes_cached;
        v.bytes_free = s.bytes_free;
        v.blocks_in_use = s.blocks_in_use;
        v.blocks_cached = s.blocks_cached;
        v.blocks_free = s.blocks_free;
        v.block_set_bytes = s.block_set_bytes;
        for (const ManagerStats& m : s.managers) v.padding_bytes += m.padding_bytes;
        v.n_sequences = s.n_sequences;
        v.n_pins = s.n_pins;
        v.queried_tokens = s.queried_tokens;
        v.hit_tokens = s.hit_tokens;
        v.evictions = s.evictions;
        v.bytes_per_token = s.bytes_per_token;
        v.arena_reserved_bytes = s.arena_reserved_bytes;
        v.dedicated_arena = s.dedicated_arena ? 1 : 0;
        v.large_pages = s.large_pages ? 1 : 0;
        v.n_managers = static_cast<int32_t>(s.managers.size());
        v.block_tokens = c->block_tokens();
        for (int k = 0; k < kNumLayerKinds; k++) {
            const KindStats& ks = s.kinds[k];
            v.kinds[k].n_layers = ks.n_layers;
            v.kinds[k].blocks_in_use = ks.blocks_in_use;
            v.kinds[k].bytes_in_use = ks.bytes_in_use;
            v.kinds[k].blocks_cached = ks.blocks_cached;
            v.kinds[k].bytes_cached = ks.bytes_cached;
            v.kinds[k].bytes_per_token = ks.bytes_per_token;
        }
        v.n_kinds = KVRT_CACHE_KIND_SLOTS;
        v.kind_stats_size = static_cast<int32_t>(sizeof(kvrt_cache_kind_stats));
        for (const kvrt::cache::TierReport& t : c->tier_reports()) {  // lower tiers (cache_tiers.cpp)
            (t.kind == "disk" ? v.tier_loaded_tokens_disk : v.tier_loaded_tokens_remote) +=
                t.loaded_blocks * static_cast<uint64_t>(c->block_tokens());
            v.n_tiers++;
        }
        kvrt::api::fill_out(out, v, kvrt::api::kStatsV1, "out");
    });
}

KVRT_API kvrt_status kvrt_cache_set_budget(kvrt_cache* cache, uint64_t budget_bytes) {
    return guard("kvrt_cache_set_budget", [&] { cache_from_handle(cache)->set_budget(budget_bytes); });
}

KVRT_API kvrt_status kvrt_cache_trim(uint64_t* released, kvrt_cache* cache, uint64_t keep_bytes) {
    if (released) *released = 0;
    return guard("kvrt_cache_trim", [&] {
        const uint64_t n = cache_from_handle(cache)->trim(keep_bytes);
        if (released) *released = n;
    });
}

}  // extern "C"
