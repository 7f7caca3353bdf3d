// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// `kvrt cache-demo`: the cache manager through the public C API, without a
// model: two requests that share a long prefix ("[same report] + summarise the
// risks", then "[same report] + list the deadlines"), a fork, eviction under a
// small budget, and the exact byte accounting of a dense and a CED-style layout.
// Token ids are synthetic; K/V rows are written with recognisable values and
// read back through the second request's block table.
#include "commands.hpp"

#include <kvrt/kvrt.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

bool ok(kvrt_status s, const char* what) {
    if (s == KVRT_OK) return true;
    std::fprintf(stderr, "kvrt cache-demo: %s failed: %s (%s)\n", what, kvrt_status_string(s), kvrt_last_error());
    return false;
}

#define TRY(call)                      \
    do {                               \
        if (!ok((call), #call)) {      \
            return 1;                  \
        }                              \
    } while (0)

std::vector<int32_t> words(const char* text, int repeat) {
    // Synthetic token ids: one per word (a hash), the text repeated.
    std::vector<int32_t> out;
    for (int r = 0; r < repeat; r++) {
        uint32_t h = 2166136261u;
        for (const char* p = text;; p++) {
            if (*p == ' ' || *p == '\0') {
                out.push_back(static_cast<int32_t>(h % 49152));
                h = 2166136261u;
                if (*p == '\0') break;
            } else {
                h = (h ^ static_cast<uint8_t>(*p)) * 16777619u;
            }
        }
    }
    return out;
}

void print_stats(kvrt_cache* cache, const char* when) {
    kvrt_cache_stats st;
    st.struct_size = sizeof st;
    if (kvrt_cache_stats_get(&st, cache) != KVRT_OK) return;
    std::printf("  [%s] in use %llu B (%llu blocks), cached %llu B (%llu blocks), free %llu B of %llu; "
                "hit %llu of %llu queried tokens; %llu evictions\n",
                when, (unsigned long long)st.bytes_in_use, (unsigned long long)st.blocks_in_use,
                (unsigned long long)st.bytes_cached, (unsigned long long)st.blocks_cached,
                (unsigned long long)st.bytes_free, (unsigned long long)st.budget_bytes,
                (unsigned long long)st.hit_tokens, (unsigned long long)st.queried_tokens,
                (unsigned long long)st.evictions);
}

// Writes K/V rows of positions [from, to) of every layer: value = position + layer / 100.
int compute(kvrt_cache* cache, uint64_t seq, int32_t n_layers, int64_t from, int64_t to, int32_t row_elems) {
    std::vector<uint16_t> k(static_cast<size_t>(row_elems)), v(static_cast<size_t>(row_elems));
    for (int32_t l = 0; l < n_layers; l++)
        for (int64_t p = from; p < to; p++) {
            for (int32_t i = 0; i < row_elems; i++) {
                k[i] = static_cast<uint16_t>(p);
                v[i] = static_cast<uint16_t>(l);
            }
            TRY(kvrt_cache_write_rows_v2(cache, seq, l, p, 1, k.data(), k.size() * sizeof k[0], v.data(), v.size() * sizeof v[0]));
        }
    TRY(kvrt_cache_seq_mark_computed(cache, seq, to));
    return 0;
}

}  // namespace

namespace kvrt_cli {

int cmd_cache_demo(int argc, char** argv) {
    uint64_t budget_mib = 64;
    for (int i = 1; i < argc; i++) {
        if (std::strcmp(argv[i], "--budget-mib") == 0 && i + 1 < argc) budget_mib = std::strtoull(argv[++i], nullptr, 10);
        else {
            std::fprintf(stderr, "usage: kvrt cache-demo [--budget-mib N]\n");
            return 2;
        }
    }
    std::printf("kvrt %s: cache manager demo (C API; no model yet, synthetic token ids)\n\n", kvrt_version_string());

    // A SmolLM2-135M-shaped cache: 30 full layers x 3 KV heads x 64, f16, 16 tokens per block.
    const int32_t n_layers = 30, heads = 3, dim = 64, bt = 16;
    kvrt_cache_layout* layout = nullptr;
    kvrt_cache_layer_config lc;
    TRY(kvrt_cache_layer_config_init(&lc, sizeof lc));
    lc.n_kv_heads = heads;
    lc.head_dim = dim;
    lc.dtype = KVRT_DTYPE_F16;
    TRY(kvrt_cache_layout_create(&layout, bt));
    TRY(kvrt_cache_layout_add_layers(nullptr, layout, &lc, n_layers));
    kvrt_cache_config cc;
    TRY(kvrt_cache_config_init(&cc, sizeof cc));
    cc.budget_bytes = budget_mib << 20;
    kvrt_cache* cache = nullptr;
    TRY(kvrt_cache_create(&cache, layout, &cc));
    kvrt_cache_layout_destroy(layout);

    kvrt_cache_stats st;
    st.struct_size = sizeof st;
    TRY(kvrt_cache_stats_get(&st, cache));
    std::printf("layout: %d full layers x %d KV heads x %d, f16, %d tokens/block\n", n_layers, heads, dim, bt);
    std::printf("  bytes per token %.0f (formula 2 x %d x %d x %d x 2 = %d); block %llu B, padding %llu B; "
                "arena: %s, %llu MiB reserved\n\n",
                st.bytes_per_token, n_layers, heads, dim, 2 * n_layers * heads * dim * 2,
                (unsigned long long)st.block_set_bytes, (unsigned long long)st.padding_bytes,
                st.dedicated_arena ? "dedicated mimalloc arena" : "default heap (fallback)",
                (unsigned long long)(st.arena_reserved_bytes >> 20));

    std::vector<int32_t> report = words("quarterly report on the supply chain risks and the delivery deadlines of all suppliers", 25);
    std::vector<int32_t> q1 = report, q2 = report;
    for (int32_t t : words("summarise the risks", 1)) q1.push_back(t);
    for (int32_t t : words("list the deadlines", 1)) q2.push_back(t);

    // Request 1: nothing cached; compute everything.
    uint64_t s1 = 0, s2 = 0;
    int64_t hit = 0;
    TRY(kvrt_cache_seq_create(&s1, cache, nullptr));
    TRY(kvrt_cache_seq_match_prefix(&hit, cache, s1, q1.data(), q1.size()));
    TRY(kvrt_cache_seq_append(cache, s1, q1.data() + hit, q1.size() - size_t(hit)));
    if (compute(cache, s1, n_layers, hit, int64_t(q1.size()), heads * dim)) return 1;
    std::printf("request 1: %zu prompt tokens, %lld from the prefix cache, %lld computed\n", q1.size(), (long long)hit,
                (long long)(int64_t(q1.size()) - hit));
    print_stats(cache, "after request 1");

    // Request 2: same report, another question: the report's full blocks are reused.
    TRY(kvrt_cache_seq_create(&s2, cache, nullptr));
    TRY(kvrt_cache_seq_match_prefix(&hit, cache, s2, q2.data(), q2.size()));
    TRY(kvrt_cache_seq_append(cache, s2, q2.data() + hit, q2.size() - size_t(hit)));
    if (compute(cache, s2, n_layers, hit, int64_t(q2.size()), heads * dim)) return 1;
    std::printf("request 2: %zu prompt tokens, %lld from the prefix cache (common prefix %zu, whole blocks of %d), "
                "%lld computed\n",
                q2.size(), (long long)hit, report.size(), bt, (long long)(int64_t(q2.size()) - hit));
    // The shared rows are request 1's: position 100 of layer 7 reads back 100 / 7.
    kvrt_cache_layer_info li;
    li.struct_size = sizeof li;
    TRY(kvrt_cache_layer_info_get(&li, cache, 7));
    std::vector<const void*> table(64);
    size_t nb = 0;
    TRY(kvrt_cache_block_table(table.data(), table.size(), &nb, cache, s2, 7));
    const uint8_t* blk = static_cast<const uint8_t*>(table[100 / li.rows_per_block]);
    uint16_t k0, v0;
    std::memcpy(&k0, blk + li.k_offset + (100 % li.rows_per_block) * li.row_bytes, 2);
    std::memcpy(&v0, blk + li.v_offset + (100 % li.rows_per_block) * li.row_bytes, 2);
    std::printf("  request 2 reads request 1's K/V in place: position 100, layer 7 -> K %u, V %u (block table: %zu blocks)\n",
                k0, v0, nb);
    print_stats(cache, "after request 2");

    // A fork shares every block; its first append copies only the partial last block.
    uint64_t f = 0;
    kvrt_cache_seq_info info;
    info.struct_size = sizeof info;
    TRY(kvrt_cache_seq_fork(&f, cache, s2));
    int32_t tok = 42;
    TRY(kvrt_cache_seq_append(cache, f, &tok, 1));
    TRY(kvrt_cache_seq_info_get(&info, cache, f));
    std::printf("fork of request 2 + 1 token: %lld positions, references %llu B (shared by count)\n",
                (long long)info.length, (unsigned long long)info.bytes);
    print_stats(cache, "after fork");

    TRY(kvrt_cache_seq_release(cache, f));
    TRY(kvrt_cache_seq_release(cache, s1));
    TRY(kvrt_cache_seq_release(cache, s2));
    print_stats(cache, "all released: full blocks stay cached");

    // Fill the budget with unrelated sequences: cached blocks are evicted, least recently freed first.
    std::vector<int32_t> other(512);
    for (size_t i = 0; i < other.size(); i++) other[i] = int32_t(40000 + i);
    std::vector<uint64_t> held;
    for (;;) {
        uint64_t s = 0;
        TRY(kvrt_cache_seq_create(&s, cache, nullptr));
        kvrt_status rc = kvrt_cache_seq_append(cache, s, other.data(), other.size());
        if (rc == KVRT_ERR_CACHE_FULL) {
            std::printf("budget exhausted after %zu more sequences of %zu tokens: %s (%s)\n", held.size(),
                        other.size(), kvrt_status_string(rc), kvrt_last_error());
            kvrt_cache_seq_release(cache, s);
            break;
        }
        TRY(rc);
        held.push_back(s);
    }
    TRY(kvrt_cache_lookup_prefix(&hit, cache, nullptr, q2.data(), q2.size()));
    std::printf("  the report's prefix is now %s (lookup hit %lld)\n", hit ? "partly cached" : "evicted", (long long)hit);
    print_stats(cache, "budget full");
    for (uint64_t s : held) kvrt_cache_seq_release(cache, s);
    kvrt_cache_destroy(cache);

    // A CED-style layout (DeepSeek-V4.1-Flash shape, scaled down): per-layer windows,
    // banks with K = V rows compressed by r, indexer keys, readers.
    TRY(kvrt_cache_layout_create(&layout, 16));
    kvrt_cache_layer_config w, b, ix, rd;
    kvrt_cache_layer_config_init(&w, sizeof w);
    w.kind = KVRT_LAYER_WINDOW;
    w.n_kv_heads = 1;
    w.head_dim = 512;
    w.window = 128;
    w.shared_kv = 1;  // one 512-wide vector is both key and value
    w.dtype = KVRT_DTYPE_BF16;
    TRY(kvrt_cache_layout_add_layers(nullptr, layout, &w, 40));
    b = w;
    b.kind = KVRT_LAYER_BANK_SOURCE;
    b.window = 0;
    b.shared_kv = 0;
    b.ratio = 2;
    int32_t src = 0;
    ix = b;
    ix.kind = KVRT_LAYER_INDEXER_KEYS;
    ix.head_dim = 128;
    rd = b;
    rd.kind = KVRT_LAYER_BANK_READER;
    for (int i = 0; i < 3; i++) {
        TRY(kvrt_cache_layout_add_layers(&src, layout, &b, 1));
        ix.source = src;
        TRY(kvrt_cache_layout_add_layers(nullptr, layout, &ix, 1));
    }
    b.ratio = 1;
    TRY(kvrt_cache_layout_add_layers(&src, layout, &b, 1));
    ix.source = src;
    TRY(kvrt_cache_layout_add_layers(nullptr, layout, &ix, 1));
    rd.source = src;
    TRY(kvrt_cache_layout_add_layers(nullptr, layout, &rd, 19));
    cc.budget_bytes = 64ull << 20;
    TRY(kvrt_cache_create(&cache, layout, &cc));
    kvrt_cache_layout_destroy(layout);
    TRY(kvrt_cache_stats_get(&st, cache));
    std::printf("\nCED-style layout (bf16, K = V rows; 40 window-128 layers, banks r=2 x3 + r=1, indexer keys, 19 readers):\n");
    const char* names[] = {"full", "window", "bank", "bank reader", "indexer keys"};
    for (int k = 0; k < 5; k++)
        std::printf("  %-12s %3d layers  %8.1f B/token\n", names[k], st.kinds[k].n_layers, st.kinds[k].bytes_per_token);
    std::printf("  global KV per token (banks + indexer keys): %.1f B; window rows are capped at W per sequence\n",
                st.kinds[KVRT_LAYER_BANK_SOURCE].bytes_per_token + st.kinds[KVRT_LAYER_INDEXER_KEYS].bytes_per_token);
    kvrt_cache_destroy(cache);
    return 0;
}

}  // namespace kvrt_cli
