// kvrt inspect MODEL: metadata, tensor types, KV bytes per token by layer kind.
#include "cli_common.hpp"
#include "commands.hpp"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

namespace kvrt_cli {

namespace {
// True when path is a CED model (its loader rejects any other architecture as soon as it
// has read the metadata, so probing a llama file costs no weight loading).
bool is_ced_model(const std::string& path) {
    kvrt_ced_model* m = nullptr;
    if (kvrt_ced_model_load(&m, path.c_str()) != KVRT_OK) {
        kvrt_clear_error();
        return false;
    }
    kvrt_ced_model_destroy(m);
    return true;
}
}  // namespace

int cmd_inspect(int argc, char** argv) {
    Args a = parse_args(argc, argv, {"-m", "--model"});
    if (a.has("-h") || a.has("--help")) {
        std::fprintf(stderr, "usage: kvrt inspect [MODEL] [--tensors] [--json]\n");
        return 0;
    }
    std::string path = a.positional.empty() ? a.get("-m", a.get("--model", default_model_path())) : a.positional[0];
    const bool json = a.has("--json");
    if (is_ced_model(path)) {  // CED models have their own loader and report
        char* ced_argv[] = {argv[0], path.data(), nullptr};
        return cmd_ced_inspect(2, ced_argv);
    }
    kvrt_model* m = load_model("inspect", path, 0);
    if (!m) return 1;
    kvrt_model_info info;
    kvrt_model_info_init(&info, sizeof info);
    kvrt_status s = kvrt_model_get_info(&info, m);
    if (s != KVRT_OK) {
        kvrt_model_destroy(m);
        return report_error("inspect", "info", s);
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
        key.resize(w);
        if (kvrt_model_meta_string(nullptr, 0, &w, m, key.c_str()) != KVRT_OK) continue;
        val.assign(w, '\0');
        if (kvrt_model_meta_string(val.data(), val.size(), &w, m, key.c_str()) != KVRT_OK) continue;
        val.resize(w);
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
            std::printf("  window layers: %3u  %8llu bytes/token  (W = %u: at most %llu bytes per sequence)\n",
                        info.n_layers_window, (unsigned long long)info.kv_bytes_per_token_window, info.sliding_window,
                        (unsigned long long)info.kv_bytes_per_token_window * info.sliding_window);
        else
            std::printf("  window layers:   0         0 bytes/token  (no sliding window)\n");
        std::printf("  total:              %8llu bytes/token; %.1f MiB for %u tokens\n",
                    (unsigned long long)info.kv_bytes_per_token, info.kv_bytes_per_token * (double)info.n_ctx_train / 1048576.0,
                    info.n_ctx_train);
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
    return 0;
}

}  // namespace kvrt_cli
