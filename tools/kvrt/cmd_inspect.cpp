// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// kvrt inspect MODEL: metadata, tensor types, KV bytes per token by layer kind,
// and (--at N,M,...) the KV bytes one sequence of N tokens holds: the window
// formula vs every layer full, each checked against the cache's own accounting.
#include "cli_common.hpp"
#include "commands.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

namespace kvrt_cli {

namespace {
// --at: the KV bytes of one sequence at given lengths, from the cache layout the
// context would use (read back from a context's cache: kinds, windows, block
// bytes per manager).
struct KvAt {
    int64_t tokens = 0;
    uint64_t formula = 0, measured = 0;                    // the context's layout
    uint64_t all_full_formula = 0, all_full_measured = 0;  // every layer full
};

struct LayoutSummary {
    int32_t block_tokens = 0;
    int32_t window = 0;        // W of the window layers (0: none)
    uint32_t n_full = 0, n_window = 0;
    uint64_t layer_bytes_per_token = 0;  // K + V of one layer (every decoder layer has the same shape)
    std::vector<kvrt_cache_layer_info> layers;
    // Managers: block bytes and kind.
    std::map<int32_t, std::pair<int32_t, uint64_t>> managers;  // manager -> (kind, block bytes)
    int32_t window_of_manager(int32_t m) const {
        for (const kvrt_cache_layer_info& l : layers)
            if (l.manager == m) return l.window;
        return 0;
    }
};

// types: the context's KV types (nullptr: the default f16). quiet: no error report.
bool read_layout(kvrt_model* m, LayoutSummary& out, const kvrt_context_config* types = nullptr, bool quiet = false) {
    kvrt_context_config cc;
    kvrt_context_config_init(&cc, sizeof cc);
    if (types) {
        cc.kv_dtype = types->kv_dtype;
        cc.k_dtype = types->k_dtype;
        cc.v_dtype = types->v_dtype;
    }
    cc.n_ctx = 1;  // the layout does not depend on n_ctx; keep the context's own cache small
    cc.cache_bytes = 1u << 20;
    kvrt_context* ctx = nullptr;
    kvrt_status s = kvrt_context_create(&ctx, m, &cc);
    if (s != KVRT_OK) return quiet ? false : (report_error("inspect", "context", s), false);
    kvrt_cache* c = nullptr;
    kvrt_context_get_cache(&c, ctx);
    int32_t n = 0;
    for (;; ++n) {
        kvrt_cache_layer_info li{};
        li.struct_size = sizeof li;
        if (kvrt_cache_layer_info_get(&li, c, n) != KVRT_OK) break;
        out.layers.push_back(li);
    }
    kvrt_clear_error();
    kvrt_context_destroy(ctx);
    if (out.layers.empty()) return false;
    out.block_tokens = out.layers[0].rows_per_block;
    for (const kvrt_cache_layer_info& l : out.layers) {
        (l.kind == KVRT_LAYER_WINDOW ? out.n_window : out.n_full)++;
        if (l.kind == KVRT_LAYER_WINDOW) out.window = l.window;
        out.layer_bytes_per_token = l.row_bytes + (l.separate_v ? l.v_row_bytes : 0);
        out.managers[l.manager] = {l.kind, l.block_bytes};
    }
    return true;
}

// A cache of `layers` (optionally all turned FULL) holding one sequence of n
// positions appended as a decode loop leaves it (the last append one token, so
// window layers keep the blocks covering the last W positions), rows never
// computed. Returns the cache's byte count of the sequence, 0 on failure.
uint64_t measure(const LayoutSummary& L, bool all_full, int64_t n, uint64_t budget) {
    kvrt_cache_layout* lay = nullptr;
    if (kvrt_cache_layout_create(&lay, L.block_tokens) != KVRT_OK) return 0;
    for (const kvrt_cache_layer_info& li : L.layers) {
        kvrt_cache_layer_config lc;
        kvrt_cache_layer_config_init(&lc, sizeof lc);
        lc.kind = all_full ? KVRT_LAYER_FULL : li.kind;
        lc.window = all_full ? 0 : li.window;
        lc.n_kv_heads = li.n_kv_heads;
        lc.head_dim = li.head_dim;
        lc.dtype = li.dtype;
        if (li.separate_v && li.v_dtype != li.dtype) lc.v_dtype = li.v_dtype;
        lc.shared_kv = li.separate_v ? 0 : 1;
        if (kvrt_cache_layout_add_layers(nullptr, lay, &lc, 1) != KVRT_OK) {
            kvrt_cache_layout_destroy(lay);
            return 0;
        }
    }
    kvrt_cache_config cc;
    kvrt_cache_config_init(&cc, sizeof cc);
    cc.budget_bytes = budget;
    kvrt_cache* c = nullptr;
    kvrt_status s = kvrt_cache_create(&c, lay, &cc);
    kvrt_cache_layout_destroy(lay);
    if (s != KVRT_OK) return 0;
    uint64_t seq = 0, bytes = 0;
    std::vector<int32_t> toks(static_cast<size_t>(n), 1);
    // The first n - 1 positions in appends of at most 4096 (a window layer drops its old blocks
    // after each, so the cache never holds more than a budget for the final state allows), then
    // one: the state a decode loop leaves (the window rule depends on the last append only).
    bool ok = kvrt_cache_seq_create(&seq, c, nullptr) == KVRT_OK;
    for (int64_t done = 0; ok && done < n - 1; done += 4096)
        ok = kvrt_cache_seq_append(c, seq, toks.data(), static_cast<size_t>(std::min<int64_t>(4096, n - 1 - done))) == KVRT_OK;
    if (ok && kvrt_cache_seq_append(c, seq, toks.data(), 1) == KVRT_OK) {
        kvrt_cache_seq_info si{};
        si.struct_size = sizeof si;
        if (kvrt_cache_seq_info_get(&si, c, seq) == KVRT_OK) bytes = si.bytes;
    }
    kvrt_cache_destroy(c);
    return bytes;
}

// The window manager's rule: a full manager holds ceil(n / bt) blocks; after an
// append starting at `old`, a window(W) manager drops the blocks wholly before
// old - W + 1 (what the first new query reads): it holds ceil(n / bt) -
// floor(max(0, old - W + 1) / bt). A decode step appends at old = n - 1.
uint64_t formula(const LayoutSummary& L, bool all_full, int64_t n) {
    const int64_t bt = L.block_tokens, blocks = (n + bt - 1) / bt;
    uint64_t total = 0;
    if (all_full) {
        for (const kvrt_cache_layer_info& l : L.layers)
            total += static_cast<uint64_t>(blocks) * bt * (l.row_bytes + (l.separate_v ? l.v_row_bytes : 0));
        return total;
    }
    for (const auto& [m, kb] : L.managers) {
        int64_t held = blocks;
        if (kb.first == KVRT_LAYER_WINDOW) held -= std::max<int64_t>(0, n - 1 - L.window_of_manager(m) + 1) / bt;
        total += static_cast<uint64_t>(held) * kb.second;
    }
    return total;
}

// Per KV element type: bytes per token of one full and one window layer (K + V rows, scales
// included, from the cache layout), and the longest sequence whose KV fits `budget` bytes by
// the block formula, checked against the cache's own accounting of a sequence that long.
struct KvTypeRow {
    int32_t type = 0;
    bool ok = false;             // the model's layers can hold this type
    std::string why;             // else the reason
    uint64_t full_layer = 0;     // bytes per token of one full layer
    uint64_t window_layer = 0;   // of one window layer
    uint64_t all_layers = 0;     // every layer, per token (window layers counted as full)
    int64_t longest = 0;         // tokens fitting the budget (formula)
    uint64_t at_longest = 0, measured = 0;  // formula and cache at `longest`
    std::vector<int32_t> k_f16_layers;      // layers whose K rows the cache keeps in f16 instead
};

KvTypeRow kv_type_row(kvrt_model* m, int32_t type, uint64_t budget) {
    KvTypeRow r;
    r.type = type;
    kvrt_context_config t;
    kvrt_context_config_init(&t, sizeof t);
    t.kv_dtype = type;
    LayoutSummary L;
    if (!read_layout(m, L, &t, true)) {
        r.why = kvrt_last_error();
        kvrt_clear_error();
        return r;
    }
    r.ok = true;
    for (size_t i = 0; i < L.layers.size(); ++i) {
        const kvrt_cache_layer_info& l = L.layers[i];
        const uint64_t b = l.row_bytes + (l.separate_v ? l.v_row_bytes : 0);
        if (l.dtype != type) {  // a quantised K type on a layer whose K bias has outliers
            r.k_f16_layers.push_back(static_cast<int32_t>(i));
            continue;  // the columns show the asked type's layers
        }
        (l.kind == KVRT_LAYER_WINDOW ? r.window_layer : r.full_layer) = b;
    }
    for (const kvrt_cache_layer_info& l : L.layers) r.all_layers += l.row_bytes + (l.separate_v ? l.v_row_bytes : 0);
    int64_t lo = 1, hi = int64_t(1) << 30;  // formula(n) grows with n
    if (formula(L, false, lo) > budget) return r;
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo + 1) / 2;
        if (formula(L, false, mid) <= budget) lo = mid;
        else hi = mid - 1;
    }
    r.longest = lo;
    r.at_longest = formula(L, false, lo);
    r.measured = measure(L, false, lo, budget + (1u << 20));
    return r;
}

std::vector<int64_t> parse_lengths(const std::string& s) {
    std::vector<int64_t> v;
    size_t i = 0;
    while (i < s.size()) {
        size_t j = s.find(',', i);
        if (j == std::string::npos) j = s.size();
        const std::string part = s.substr(i, j - i);
        char* end = nullptr;
        long long x = std::strtoll(part.c_str(), &end, 10);
        if (end && (*end == 'k' || *end == 'K')) {
            x *= 1024;
            ++end;
        }
        if (part.empty() || !end || *end != '\0' || x < 1 || x > (1ll << 30)) return {};
        v.push_back(x);
        i = j + 1;
    }
    return v;
}

}  // namespace

int cmd_inspect(int argc, char** argv) {
    Args a = parse_args(argc, argv, with_kv_type_opts({"-m", "--model", "--at"}));
    if (a.has("-h") || a.has("--help")) {
        std::fprintf(stderr,
                     "usage: kvrt inspect [MODEL | -m MODEL] [--tensors] [--json] [--at N[,M...]]\n"
                     "  --at N,M  KV bytes of one sequence of N (M, ...) tokens (f16 K/V, 16-token blocks):\n"
                     "            the window formula vs every layer full, checked against a cache holding it\n"
                     "            (K suffix = x1024, e.g. --at 8K,32K)\n"
                     "  --kv-type T, --k-type T, --v-type T  the K/V element types of --at (f32 f16 bf16 int8 fp8)\n"
                     "  --bank-type T  CED models: the bank rows' and indexer keys' type (f32 f16 bf16 fp4)\n"
                     "  The table 'KV bytes per token by element type' (every type, scales included, and the\n"
                     "  longest sequence a 1 GiB KV budget holds, checked against the cache's accounting)\n"
                     "  is always printed.\n");
        return 0;
    }
    std::vector<int64_t> at;
    if (a.has("--at")) {
        at = parse_lengths(a.get("--at"));
        if (at.empty()) {
            std::fprintf(stderr, "kvrt inspect: --at wants positive token counts separated by commas, got '%s'\n",
                         a.get("--at").c_str());
            return 2;
        }
    }
    std::string path = a.positional.empty() ? a.get("-m", a.get("--model", default_model_path())) : a.positional[0];
    const bool json = a.has("--json");
    kvrt_model* m = load_model("inspect", path, 0);
    if (!m) return 1;
    kvrt_model_info info;
    kvrt_model_info_init(&info, sizeof info);
    kvrt_status s = kvrt_model_get_info(&info, m);
    if (s != KVRT_OK) {
        kvrt_model_destroy(m);
        return report_error("inspect", "info", s);
    }
    if (std::string(info.architecture) == "ced") {  // CED: bytes per token by component
        kvrt_model_destroy(m);
        std::vector<std::string> args = {argv[0], path};
        for (const char* o : {"--kv-type", "--bank-type"})
            if (a.has(o)) args.insert(args.end(), {o, a.get(o)});
        std::vector<char*> ced_argv;
        for (std::string& x : args) ced_argv.push_back(x.data());
        ced_argv.push_back(nullptr);
        return cmd_ced_inspect(static_cast<int>(args.size()), ced_argv.data());
    }
    // --at: formula and measurement per length (decoder models).
    LayoutSummary lay;
    std::vector<KvAt> kv_at;
    bool kv_at_ok = true;
    kvrt_context_config types;
    kvrt_context_config_init(&types, sizeof types);
    if (!apply_kv_types("inspect", a, types)) {
        kvrt_model_destroy(m);
        return 2;
    }
    const uint64_t kGiB = uint64_t(1) << 30;
    std::vector<KvTypeRow> type_rows;
    for (int32_t t : {KVRT_KV_F32, KVRT_KV_F16, KVRT_KV_BF16, KVRT_KV_I8, KVRT_KV_FP8_E4M3}) {
        type_rows.push_back(kv_type_row(m, t, kGiB));
        const KvTypeRow& r = type_rows.back();
        // measured 0: the cache could not be built at that length (reported, not a mismatch).
        if (r.ok && r.longest > 0 && r.measured != 0 && r.measured != r.at_longest) kv_at_ok = false;
    }
    if (!at.empty()) {
        if (!read_layout(m, lay, &types)) {
            kvrt_model_destroy(m);
            std::fprintf(stderr, "kvrt inspect: --at: could not read the cache layout of %s\n", path.c_str());
            return 1;
        }
        for (int64_t n : at) {
            KvAt k;
            k.tokens = n;
            k.formula = formula(lay, false, n);
            k.all_full_formula = formula(lay, true, n);
            const uint64_t budget = k.all_full_formula + 4 * (lay.layer_bytes_per_token * lay.layers.size() * lay.block_tokens) + (1u << 20);
            k.measured = measure(lay, false, n, budget);
            k.all_full_measured = measure(lay, true, n, budget);
            if (k.measured != k.formula || k.all_full_measured != k.all_full_formula) kv_at_ok = false;
            kv_at.push_back(k);
        }
    }
    char fp[33];
    for (int i = 0; i < 16; ++i) std::snprintf(fp + 2 * i, 3, "%02x", info.fingerprint[15 - i]);

    // Metadata, in file order.
    size_t n_meta = 0;
    kvrt_model_meta_count(&n_meta, m);
    std::vector<std::pair<std::string, std::string>> meta;
    for (size_t i = 0; i < n_meta; ++i) {
        size_t w = 0;
        std::string key(256, '\0'), val;
        if (kvrt_model_meta_key(key.data(), key.size(), &w, m, i) != KVRT_OK) continue;
        key.resize(w - 1);  // text buffers: *written counts the NUL
        if (kvrt_model_meta_string(nullptr, 0, &w, m, key.c_str()) != KVRT_OK) continue;
        val.assign(w, '\0');
        if (kvrt_model_meta_string(val.data(), val.size(), &w, m, key.c_str()) != KVRT_OK) continue;
        val.resize(w - 1);
        meta.emplace_back(key, val);
    }
    // Tensors: per type counts and bytes.
    size_t n_t = 0;
    kvrt_model_tensor_count(&n_t, m);
    struct Agg {
        uint64_t count = 0, elements = 0, bytes = 0;
    };
    std::map<std::string, Agg> by_type;
    std::vector<std::string> tensor_lines;
    for (size_t i = 0; i < n_t; ++i) {
        char name[256];
        size_t w = 0;
        const char* type = nullptr;
        uint64_t ne = 0, nb = 0;
        if (kvrt_model_tensor_info(name, sizeof name, &w, &type, &ne, &nb, m, i) != KVRT_OK) continue;
        Agg& g = by_type[type];
        g.count++;
        g.elements += ne;
        g.bytes += nb;
        char line[400];
        std::snprintf(line, sizeof line, "  %-32s %-6s %12llu elements %12llu bytes", name, type,
                      (unsigned long long)ne, (unsigned long long)nb);
        tensor_lines.push_back(line);
    }

    if (json) {
        std::printf("{\"path\":\"%s\",\"architecture\":\"%s\",\"name\":\"%s\",\"fingerprint\":\"%s\",", json_escape(path).c_str(),
                    json_escape(info.architecture).c_str(), json_escape(info.name).c_str(), fp);
        std::printf("\"n_layers\":%u,\"n_vocab\":%u,\"n_embd\":%u,\"n_ff\":%u,\"n_heads\":%u,\"n_kv_heads\":%u,"
                    "\"head_dim\":%u,\"n_ctx_train\":%u,\"sliding_window\":%u,\"rope_theta\":%g,\"n_params\":%llu,"
                    "\"weight_bytes\":%llu,",
                    info.n_layers, info.n_vocab, info.n_embd, info.n_ff, info.n_heads, info.n_kv_heads, info.head_dim,
                    info.n_ctx_train, info.sliding_window, info.rope_theta, (unsigned long long)info.n_params,
                    (unsigned long long)info.weight_bytes);
        std::printf("\"kv_bytes_per_token\":{\"full\":%llu,\"window\":%llu,\"total\":%llu,\"layers_full\":%u,"
                    "\"layers_window\":%u,\"element_bytes\":2},",
                    (unsigned long long)info.kv_bytes_per_token_full, (unsigned long long)info.kv_bytes_per_token_window,
                    (unsigned long long)info.kv_bytes_per_token, info.n_layers_full, info.n_layers_window);
        std::printf("\"kv_types\":[");
        for (size_t i = 0; i < type_rows.size(); ++i) {
            const KvTypeRow& r = type_rows[i];
            if (!r.ok) {
                std::printf("%s{\"type\":\"%s\",\"supported\":false,\"why\":\"%s\"}", i ? "," : "",
                            kv_type_name(r.type), json_escape(r.why).c_str());
                continue;
            }
            std::printf("%s{\"type\":\"%s\",\"supported\":true,\"full_layer_bytes_per_token\":%llu,"
                        "\"window_layer_bytes_per_token\":%llu,\"all_layers_bytes_per_token\":%llu,"
                        "\"longest_tokens_1gib\":%lld,\"formula_bytes\":%llu,\"cache_bytes\":%llu,\"k_f16_layers\":[",
                        i ? "," : "", kv_type_name(r.type), (unsigned long long)r.full_layer,
                        (unsigned long long)r.window_layer, (unsigned long long)r.all_layers, (long long)r.longest,
                        (unsigned long long)r.at_longest, (unsigned long long)r.measured);
            for (size_t j = 0; j < r.k_f16_layers.size(); ++j) std::printf("%s%d", j ? "," : "", r.k_f16_layers[j]);
            std::printf("]}");
        }
        std::printf("],");
        if (!kv_at.empty()) {
            std::printf("\"kv_at\":{\"block_tokens\":%d,\"window\":%d,\"layers_full\":%u,\"layers_window\":%u,"
                        "\"layer_bytes_per_token\":%llu,\"lengths\":[",
                        lay.block_tokens, lay.window, lay.n_full, lay.n_window, (unsigned long long)lay.layer_bytes_per_token);
            for (size_t i = 0; i < kv_at.size(); ++i)
                std::printf("%s{\"tokens\":%lld,\"formula\":%llu,\"measured\":%llu,\"all_full_formula\":%llu,"
                            "\"all_full_measured\":%llu}",
                            i ? "," : "", (long long)kv_at[i].tokens, (unsigned long long)kv_at[i].formula,
                            (unsigned long long)kv_at[i].measured, (unsigned long long)kv_at[i].all_full_formula,
                            (unsigned long long)kv_at[i].all_full_measured);
            std::printf("],\"ok\":%s},", kv_at_ok ? "true" : "false");
        }
        std::printf("\"tensor_types\":{");
        bool first = true;
        for (const auto& [t, g] : by_type) {
            std::printf("%s\"%s\":{\"tensors\":%llu,\"elements\":%llu,\"bytes\":%llu}", first ? "" : ",", t.c_str(),
                        (unsigned long long)g.count, (unsigned long long)g.elements, (unsigned long long)g.bytes);
            first = false;
        }
        std::printf("},\"metadata\":{");
        for (size_t i = 0; i < meta.size(); ++i)
            std::printf("%s\"%s\":\"%s\"", i ? "," : "", json_escape(meta[i].first).c_str(),
                        json_escape(meta[i].second).c_str());
        std::printf("}}\n");
    } else {
        std::printf("model        %s\n", path.c_str());
        std::printf("architecture %s (%s)\n", info.architecture, info.name);
        std::printf("fingerprint  %s\n", fp);
        std::printf("layers %u, width %u, FFN %u, heads %u query / %u KV of %u, vocabulary %u, context %u, RoPE theta %g\n",
                    info.n_layers, info.n_embd, info.n_ff, info.n_heads, info.n_kv_heads, info.head_dim, info.n_vocab,
                    info.n_ctx_train, info.rope_theta);
        std::printf("parameters %.1f M, tensor data %.1f MiB\n", info.n_params / 1e6, info.weight_bytes / 1048576.0);
        std::printf("\nKV bytes per token (16-bit K/V elements):\n");
        std::printf("  full   layers: %3u  %8llu bytes/token  (2 x %u KV heads x %u x 2 bytes x %u layers)\n",
                    info.n_layers_full, (unsigned long long)info.kv_bytes_per_token_full, info.n_kv_heads, info.head_dim,
                    info.n_layers_full);
        if (info.sliding_window)
            std::printf("  window layers: %3u  %8llu bytes/token  (W = %u: ~%llu bytes per sequence once longer than W,\n"
                        "                                        in whole blocks: see --at)\n",
                        info.n_layers_window, (unsigned long long)info.kv_bytes_per_token_window, info.sliding_window,
                        (unsigned long long)info.kv_bytes_per_token_window * info.sliding_window);
        else
            std::printf("  window layers:   0         0 bytes/token  (no sliding window)\n");
        std::printf("  total:              %8llu bytes/token; %.1f MiB for %u tokens\n",
                    (unsigned long long)info.kv_bytes_per_token, info.kv_bytes_per_token * (double)info.n_ctx_train / 1048576.0,
                    info.n_ctx_train);
        std::printf("\nKV bytes per token by element type (K + V rows of one layer, scales included; from the\n"
                    "cache layout), and the longest sequence a 1 GiB KV budget holds (block formula, checked\n"
                    "against the cache's accounting of a sequence that long):\n");
        std::printf("  %-5s %12s %12s %12s %14s  %s\n", "type", "full layer", "window layer", "all layers", "1 GiB holds",
                    "cache check");
        for (const KvTypeRow& r : type_rows) {
            if (!r.ok) {
                std::printf("  %-5s not supported: %s\n", kv_type_name(r.type), r.why.c_str());
                continue;
            }
            std::printf("  %-5s %12llu %12llu %12llu %14lld  %s (%llu bytes)\n", kv_type_name(r.type),
                        (unsigned long long)r.full_layer, (unsigned long long)r.window_layer,
                        (unsigned long long)r.all_layers, (long long)r.longest,
                        r.measured == r.at_longest ? "ok" : r.measured == 0 ? "not measured" : "MISMATCH",
                        (unsigned long long)r.measured);
        }
        for (const KvTypeRow& r : type_rows) {
            if (r.k_f16_layers.empty()) continue;
            std::string list;
            for (int32_t l : r.k_f16_layers) list += (list.empty() ? "" : ",") + std::to_string(l);
            std::printf("  %s: K rows stay f16 on layer%s %s (their K bias has outliers; all layers counts them)\n",
                        kv_type_name(r.type), r.k_f16_layers.size() > 1 ? "s" : "", list.c_str());
        }
        if (!kv_at.empty()) {
            const double mib = 1048576.0;
            std::printf("\nKV bytes of one sequence (f16 K/V, %d-token blocks, as a decode loop leaves it):\n", lay.block_tokens);
            std::printf("  per layer and token: %llu bytes (2 x %u KV heads x %u x 2 bytes)\n",
                        (unsigned long long)lay.layer_bytes_per_token, info.n_kv_heads, info.head_dim);
            if (lay.n_window)
                std::printf("  formula: %u full layers x ceil(n/%d) x %d x %llu  +  %u window layers x (ceil(n/%d) - "
                            "floor(max(0, n-%d)/%d)) x %d x %llu\n"
                            "           (a window layer keeps the blocks covering its last W = %d positions; blocks wholly\n"
                            "           before them return to the pool; right after a prefill in n_batch chunks it also\n"
                            "           holds what the last chunk's first query read, until the next decode step)\n",
                            lay.n_full, lay.block_tokens, lay.block_tokens, (unsigned long long)lay.layer_bytes_per_token,
                            lay.n_window, lay.block_tokens, lay.window, lay.block_tokens, lay.block_tokens,
                            (unsigned long long)lay.layer_bytes_per_token, lay.window);
            else
                std::printf("  formula: %u full layers x ceil(n/%d) x %d x %llu (no window layers)\n", lay.n_full,
                            lay.block_tokens, lay.block_tokens, (unsigned long long)lay.layer_bytes_per_token);
            std::printf("  %10s %16s %16s %16s %16s %8s  %s\n", "tokens", "formula", "cache holds", "all-full formula",
                        "all-full cache", "ratio", "check");
            for (const KvAt& k : kv_at)
                std::printf("  %10lld %10.2f MiB %10.2f MiB %10.2f MiB %10.2f MiB %7.2fx  %s\n", (long long)k.tokens,
                            k.formula / mib, k.measured / mib, k.all_full_formula / mib, k.all_full_measured / mib,
                            k.formula ? (double)k.all_full_formula / (double)k.formula : 0.0,
                            k.measured == k.formula && k.all_full_measured == k.all_full_formula ? "ok" : "MISMATCH");
            for (const KvAt& k : kv_at)
                std::printf("  %lld tokens: %llu bytes (cache: %llu), all layers full %llu bytes (cache: %llu)\n",
                            (long long)k.tokens, (unsigned long long)k.formula, (unsigned long long)k.measured,
                            (unsigned long long)k.all_full_formula, (unsigned long long)k.all_full_measured);
        }
        std::printf("\ntensor types:\n");
        for (const auto& [t, g] : by_type)
            std::printf("  %-6s %4llu tensors %12llu elements %10.2f MiB\n", t.c_str(), (unsigned long long)g.count,
                        (unsigned long long)g.elements, g.bytes / 1048576.0);
        std::printf("\nmetadata (%zu keys):\n", meta.size());
        for (const auto& [k, v] : meta) {
            std::string shown = v.size() > 100 ? v.substr(0, 97) + "..." : v;
            for (char& ch : shown)
                if (ch == '\n') ch = ' ';
            std::printf("  %-40s %s\n", k.c_str(), shown.c_str());
        }
        if (a.has("--tensors")) {
            std::printf("\ntensors (%zu):\n", tensor_lines.size());
            for (const auto& l : tensor_lines) std::printf("%s\n", l.c_str());
        }
    }
    kvrt_model_destroy(m);
    if (!kv_at_ok) {
        std::fprintf(stderr, "kvrt inspect: --at: the cache's accounting differs from the formula\n");
        return 1;
    }
    return 0;
}

}  // namespace kvrt_cli
