// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

#include "sampler_opts.hpp"

#include <cstdio>
#include <cstdlib>

namespace kvrt_cli {

std::vector<std::string> with_sampler_opts(std::vector<std::string> v) {
    for (const char* o : {"--temp", "--top-k", "--top-p", "--min-p", "--seed", "--repeat-penalty", "--repeat-last-n",
                          "--frequency-penalty", "--presence-penalty"})
        v.push_back(o);
    return v;
}

const char* sampler_opts_usage() {
    return "  --temp T           temperature (default 0: greedy)\n"
           "  --top-k K, --top-p P, --min-p M, --seed S   sampling (with --temp > 0)\n"
           "  --repeat-penalty F     divide (multiply when negative) the logits of tokens seen in the last\n"
           "                         --repeat-last-n N tokens (default 64; -1: all) by F (1: off)\n"
           "  --frequency-penalty F  subtract F x count of each such token; --presence-penalty F: F once\n";
}

bool has_penalty_opts(const Args& a) {
    return a.has("--repeat-penalty") || a.has("--frequency-penalty") || a.has("--presence-penalty");
}

bool make_sampler(const char* cmd, const Args& a, bool greedy_is_null, kvrt_sampler** out) {
    *out = nullptr;
    const float temp = static_cast<float>(std::atof(a.get("--temp", "0").c_str()));
    const int32_t top_k = std::atoi(a.get("--top-k", "0").c_str());
    const float top_p = static_cast<float>(std::atof(a.get("--top-p", "1").c_str()));
    const float min_p = static_cast<float>(std::atof(a.get("--min-p", "0").c_str()));
    const uint64_t seed = std::strtoull(a.get("--seed", "0").c_str(), nullptr, 10);
    kvrt_status s = KVRT_OK;
    if (!has_penalty_opts(a)) {
        if (temp <= 0 && greedy_is_null) return true;
        kvrt_sampler_config sc;
        kvrt_sampler_config_init(&sc, sizeof sc);
        sc.temperature = temp;
        sc.top_k = top_k;
        sc.top_p = top_p;
        sc.min_p = min_p;
        sc.seed = seed;
        if ((s = kvrt_sampler_create(out, &sc)) != KVRT_OK) return report_error(cmd, "sampler", s), false;
        return true;
    }
    if ((s = kvrt_sampler_chain_create(out, seed)) != KVRT_OK) return report_error(cmd, "sampler", s), false;
    auto add = [&](kvrt_sampler_stage& st) {
        if ((s = kvrt_sampler_chain_add(*out, &st)) == KVRT_OK) return true;
        report_error(cmd, "sampler", s);
        kvrt_sampler_destroy(*out);
        *out = nullptr;
        return false;
    };
    kvrt_sampler_stage st;
    kvrt_sampler_stage_init(&st, sizeof st);
    st.type = KVRT_SAMPLER_PENALTIES;
    st.penalty_last_n = std::atoi(a.get("--repeat-last-n", "64").c_str());
    st.repeat_penalty = static_cast<float>(std::atof(a.get("--repeat-penalty", "1").c_str()));
    st.frequency_penalty = static_cast<float>(std::atof(a.get("--frequency-penalty", "0").c_str()));
    st.presence_penalty = static_cast<float>(std::atof(a.get("--presence-penalty", "0").c_str()));
    if (!add(st)) return false;
    if (temp > 0) {
        struct {
            int32_t type;
            bool on;
        } stages[] = {{KVRT_SAMPLER_TOP_K, top_k > 0}, {KVRT_SAMPLER_TOP_P, top_p < 1}, {KVRT_SAMPLER_MIN_P, min_p > 0},
                      {KVRT_SAMPLER_TEMPERATURE, true}, {KVRT_SAMPLER_DIST, true}};
        for (const auto& x : stages) {
            if (!x.on) continue;
            kvrt_sampler_stage_init(&st, sizeof st);
            st.type = x.type;
            st.top_k = top_k;
            st.p = x.type == KVRT_SAMPLER_MIN_P ? min_p : top_p;
            st.temperature = temp;
            if (!add(st)) return false;
        }
    } else {
        kvrt_sampler_stage_init(&st, sizeof st);
        st.type = KVRT_SAMPLER_GREEDY;
        if (!add(st)) return false;
    }
    return true;
}

}  // namespace kvrt_cli
