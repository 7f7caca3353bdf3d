// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

#include "cli_common.hpp"

#include <cctype>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace kvrt_cli {

std::string default_model_path() {
    if (const char* p = std::getenv("KVRT_MODEL"); p && *p) return p;
    std::string dir;
    if (const char* d = std::getenv("KVRT_MODEL_DIR"); d && *d)
        dir = d;
    else if (const char* h = std::getenv("HOME"); h && *h)
        dir = std::string(h) + "/.cache/kvrt/models";
    else
        dir = "/root/.cache/kvrt/models";
    return dir + "/SmolLM2-135M-Instruct.Q4_1.gguf";
}

bool stderr_is_tty() { return isatty(STDERR_FILENO) == 1; }

int report_error(const char* cmd, const std::string& what, kvrt_status s) {
    std::fprintf(stderr, "kvrt %s: %s: %s (%s)\n", cmd, what.c_str(), kvrt_status_string(s), kvrt_last_error());
    return 1;
}

int progress_bar(float fraction, const char* stage, void*) {
    const int width = 30;
    const int fill = static_cast<int>(fraction * width + 0.5f);
    char bar[width + 1];
    for (int i = 0; i < width; ++i) bar[i] = i < fill ? '#' : ' ';
    bar[width] = '\0';
    std::fprintf(stderr, "\r%-8s [%s] %3d%%", stage, bar, static_cast<int>(fraction * 100 + 0.5f));
    if (fraction >= 1.0f) std::fprintf(stderr, "\r%*s\r", width + 20, "");
    std::fflush(stderr);
    return 0;
}

kvrt_model* load_model(const char* cmd, const std::string& path, int n_threads) {
    kvrt_model_config cfg;
    kvrt_model_config_init(&cfg, sizeof cfg);
    cfg.n_threads = n_threads;
    if (stderr_is_tty()) cfg.progress = progress_bar;
    kvrt_model* m = nullptr;
    kvrt_status s = kvrt_model_load(&m, path.c_str(), &cfg);
    if (stderr_is_tty()) std::fprintf(stderr, "\r%60s\r", "");
    if (s != KVRT_OK) {
        report_error(cmd, "cannot load model " + path, s);
        return nullptr;
    }
    return m;
}

bool tokenize(const kvrt_model* m, const std::string& text, bool parse_special, std::vector<int32_t>& out) {
    size_t n = 0;
    const uint32_t flags = KVRT_TOKENIZE_ADD_BOS | (parse_special ? KVRT_TOKENIZE_PARSE_SPECIAL : 0u);
    kvrt_status s = kvrt_model_tokenize(nullptr, 0, &n, m, text.data(), text.size(), flags);
    if (s != KVRT_OK) return report_error("tokenize", "size query", s), false;
    out.resize(n);
    s = kvrt_model_tokenize(out.data(), out.size(), &n, m, text.data(), text.size(), flags);
    if (s != KVRT_OK) return report_error("tokenize", "tokenize", s), false;
    out.resize(n);
    return true;
}

std::string detokenize(const kvrt_model* m, const std::vector<int32_t>& toks) {
    size_t n = 0;
    if (kvrt_model_detokenize(nullptr, 0, &n, m, toks.data(), toks.size(), 0) != KVRT_OK) return {};
    std::string s(n, '\0');
    if (kvrt_model_detokenize(s.data(), s.size(), &n, m, toks.data(), toks.size(), 0) != KVRT_OK) return {};
    s.resize(n - 1);  // text buffers: *written counts the NUL
    return s;
}

bool chat_prompt(const kvrt_model* m, const std::vector<std::pair<std::string, std::string>>& msgs,
                 std::string& out) {
    std::vector<kvrt_chat_message> cm(msgs.size());
    for (size_t i = 0; i < msgs.size(); ++i) cm[i] = {msgs[i].first.c_str(), msgs[i].second.c_str()};
    size_t n = 0;
    kvrt_status s = kvrt_model_chat_apply(nullptr, 0, &n, m, cm.data(), cm.size(), 1);
    if (s != KVRT_OK) return report_error("chat", "chat template", s), false;
    out.assign(n, '\0');
    s = kvrt_model_chat_apply(out.data(), out.size(), &n, m, cm.data(), cm.size(), 1);
    if (s != KVRT_OK) return report_error("chat", "chat template", s), false;
    out.resize(n - 1);  // text buffers: *written counts the NUL
    return true;
}

bool has_vocabulary(const kvrt_model* m) {
    size_t n = 0;
    const kvrt_status s = kvrt_model_tokenize(nullptr, 0, &n, m, "", 0, 0);
    kvrt_clear_error();
    return s != KVRT_ERR_UNSUPPORTED;
}

bool text_tokens(const kvrt_model* m, const std::string& text, bool parse_special, std::vector<int32_t>& out) {
    if (has_vocabulary(m)) return tokenize(m, text, parse_special, out);
    kvrt_model_info info;
    kvrt_model_info_init(&info, sizeof info);
    if (kvrt_model_get_info(&info, m) != KVRT_OK || info.n_vocab == 0) return report_error("tokenize", "model info", KVRT_ERR_INTERNAL), false;
    // One id per word (a run of non-space bytes with the spaces after it), FNV-1a hashed.
    out.clear();
    for (size_t i = 0; i < text.size();) {
        uint32_t h = 2166136261u;
        size_t j = i;
        while (j < text.size() && !std::isspace(static_cast<unsigned char>(text[j]))) h = (h ^ static_cast<unsigned char>(text[j++])) * 16777619u;
        while (j < text.size() && std::isspace(static_cast<unsigned char>(text[j]))) h = (h ^ static_cast<unsigned char>(text[j++])) * 16777619u;
        out.push_back(static_cast<int32_t>(h % info.n_vocab));
        i = j;
    }
    return true;
}

bool conversation_tokens(const kvrt_model* m, const std::vector<std::pair<std::string, std::string>>& msgs,
                         std::vector<int32_t>& out, bool* templated) {
    if (templated) *templated = false;
    std::vector<kvrt_chat_message> cm(msgs.size());
    for (size_t i = 0; i < msgs.size(); ++i) cm[i] = {msgs[i].first.c_str(), msgs[i].second.c_str()};
    size_t n = 0;
    if (has_vocabulary(m) && kvrt_model_chat_apply(nullptr, 0, &n, m, cm.data(), cm.size(), 1) == KVRT_OK) {
        std::string text;
        if (!chat_prompt(m, msgs, text)) return false;
        if (templated) *templated = true;
        return tokenize(m, text, true, out);
    }
    kvrt_clear_error();
    std::string text;
    for (const auto& [role, content] : msgs) text += (text.empty() ? "" : "\n\n") + content;
    return text_tokens(m, text, false, out);
}

std::string tokens_text(const kvrt_model* m, const std::vector<int32_t>& toks) {
    if (has_vocabulary(m)) return detokenize(m, toks);
    std::string s = "[";
    for (size_t i = 0; i < toks.size(); ++i) s += (i ? " " : "") + std::to_string(toks[i]);
    return s + "]";
}

std::string json_escape(const std::string& s) {
    std::string o;
    o.reserve(s.size() + 8);
    for (unsigned char c : s) {
        switch (c) {
            case '"': o += "\\\""; break;
            case '\\': o += "\\\\"; break;
            case '\n': o += "\\n"; break;
            case '\r': o += "\\r"; break;
            case '\t': o += "\\t"; break;
            default:
                if (c < 0x20) {
                    char b[8];
                    std::snprintf(b, sizeof b, "\\u%04x", c);
                    o += b;
                } else {
                    o += static_cast<char>(c);
                }
        }
    }
    return o;
}

double now_seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

bool Args::has(const std::string& name) const {
    for (const auto& o : opts)
        if (o.first == name) return true;
    return false;
}
std::string Args::get(const std::string& name, const std::string& def) const {
    std::string v = def;
    for (const auto& o : opts)
        if (o.first == name) v = o.second;
    return v;
}
std::vector<std::string> Args::all(const std::string& name) const {
    std::vector<std::string> v;
    for (const auto& o : opts)
        if (o.first == name) v.push_back(o.second);
    return v;
}

Args parse_args(int argc, char** argv, const std::vector<std::string>& value_opts) {
    Args a;
    for (int i = 1; i < argc; ++i) {
        std::string s = argv[i];
        if (s.size() > 1 && s[0] == '-') {
            std::string val;
            const size_t eq = s.find('=');
            if (s.rfind("--", 0) == 0 && eq != std::string::npos) {
                val = s.substr(eq + 1);
                s = s.substr(0, eq);
                a.opts.emplace_back(s, val);
                continue;
            }
            bool takes = false;
            for (const auto& v : value_opts) takes |= v == s;
            if (takes && i + 1 < argc) val = argv[++i];
            a.opts.emplace_back(s, val);
        } else {
            a.positional.push_back(s);
        }
    }
    return a;
}


int32_t kv_type_from_name(const std::string& s) {
    if (s == "f32") return KVRT_KV_F32;
    if (s == "f16") return KVRT_KV_F16;
    if (s == "bf16") return KVRT_KV_BF16;
    if (s == "int8" || s == "q8" || s == "i8") return KVRT_KV_I8;
    if (s == "fp8" || s == "fp8_e4m3") return KVRT_KV_FP8_E4M3;
    if (s == "fp4") return KVRT_DTYPE_FP4;
    return -1;
}

const char* kv_type_name(int32_t t) {
    switch (t) {
        case KVRT_KV_F32: return "f32";
        case KVRT_KV_F16: return "f16";
        case KVRT_KV_BF16: return "bf16";
        case KVRT_KV_I8: return "int8";
        case KVRT_KV_FP8_E4M3: return "fp8";
        case KVRT_DTYPE_FP4: return "fp4";
        default: return "?";
    }
}

std::vector<std::string> with_kv_type_opts(std::vector<std::string> value_opts) {
    for (const char* o : {"--kv-type", "--k-type", "--v-type", "--act-bits", "--bank-type"}) value_opts.emplace_back(o);
    return value_opts;
}

bool parse_act_bits(const char* cmd, const Args& a, int32_t& bits) {
    if (!a.has("--act-bits")) return true;
    const std::string v = a.get("--act-bits");
    if (v != "default" && v != "0" && v != "8" && v != "9" && v != "outliers" && v != "16") {
        std::fprintf(stderr, "kvrt %s: --act-bits '%s' is not default, 8, outliers (9) or 16\n", cmd, v.c_str());
        return false;
    }
    bits = v == "8" ? 8 : v == "16" ? 16 : v == "9" || v == "outliers" ? KVRT_ACT_BITS_OUTLIERS : 0;
    return true;
}

const char* act_bits_name(int32_t bits) {
    return bits == 8 ? "8" : bits == 16 ? "16" : bits == KVRT_ACT_BITS_OUTLIERS ? "outliers" : "default";
}

bool apply_kv_types(const char* cmd, const Args& a, kvrt_context_config& cc) {
    struct {
        const char* opt;
        int32_t* field;
    } const opts[] = {{"--kv-type", &cc.kv_dtype},
                      {"--k-type", &cc.k_dtype},
                      {"--v-type", &cc.v_dtype},
                      {"--bank-type", &cc.bank_dtype}};
    for (const auto& o : opts) {
        if (!a.has(o.opt)) continue;
        const int32_t t = kv_type_from_name(a.get(o.opt));
        if (t < 0) {
            std::fprintf(stderr, "kvrt %s: %s '%s' is not a KV type (f32, f16, bf16, int8, fp8; fp4 for CED banks)\n",
                         cmd, o.opt, a.get(o.opt).c_str());
            return false;
        }
        *o.field = t;
    }
    return parse_act_bits(cmd, a, cc.act_bits);
}

std::vector<std::string> with_tier_opts(std::vector<std::string> value_opts) {
    value_opts.insert(value_opts.end(), {"--cache-dir", "--cache-redis"});
    return value_opts;
}

void apply_tiers(const Args& a, std::vector<kvrt_tier_config>& tiers, std::vector<std::string>& strings,
                 kvrt_context_config& cc) {
    tiers.clear();
    strings.clear();
    strings.reserve(2);  // the configs point into these strings: no reallocation
    auto add = [&](int32_t kind, const std::string& loc) {
        kvrt_tier_config t;
        kvrt_tier_config_init(&t, sizeof t);
        t.kind = kind;
        strings.push_back(loc);
        t.location = strings.back().c_str();
        tiers.push_back(t);
    };
    if (a.has("--cache-dir")) add(KVRT_TIER_DISK, a.get("--cache-dir"));
    if (a.has("--cache-redis")) add(KVRT_TIER_REDIS, a.get("--cache-redis"));
    cc.tiers = tiers.empty() ? nullptr : tiers.data();
    cc.n_tiers = tiers.size();
}

std::string tier_reuse_text(const kvrt_request_stats& st) {
    if (st.reused_from_disk == 0 && st.reused_from_remote == 0) return "";
    std::string s = " (";
    if (st.reused_from_disk) s += std::to_string(st.reused_from_disk) + " from the disk tier";
    if (st.reused_from_disk && st.reused_from_remote) s += ", ";
    if (st.reused_from_remote) s += std::to_string(st.reused_from_remote) + " from the redis tier";
    return s + ")";
}

}  // namespace kvrt_cli
