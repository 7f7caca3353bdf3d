// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Sampling options shared by `kvrt run` and `kvrt demo`: temperature / top-k / top-p /
// min-p / seed, and the penalties of a sampler chain (kvrt_sampler_chain_create):
// --repeat-penalty F, --repeat-last-n N, --frequency-penalty F, --presence-penalty F.
#pragma once

#include "cli_common.hpp"

#include <string>
#include <vector>

namespace kvrt_cli {

// Appends the value options above to a command's list.
std::vector<std::string> with_sampler_opts(std::vector<std::string> value_opts);
// Usage lines for them.
const char* sampler_opts_usage();
// True when a penalty option is given.
bool has_penalty_opts(const Args& a);
// The sampler the options ask for: a chain (penalties, top-k, top-p, min-p, temperature, then
// dist, or greedy at temperature 0) when a penalty is given, else a plain kvrt_sampler
// (nullptr when `greedy_is_null` and the options ask for greedy). False after printing an error.
bool make_sampler(const char* cmd, const Args& a, bool greedy_is_null, kvrt_sampler** out);

}  // namespace kvrt_cli
