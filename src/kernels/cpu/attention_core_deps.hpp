// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// What attention_core.inl and indexer_core.inl use, for each per-ISA attention translation unit
// (attention_<isa>.cpp) to include before it sets its target ISA: these headers must compile for
// the baseline, and the core files have no includes of their own (they are compiled once per ISA,
// inside that ISA's namespace).
#pragma once

#include "kernels/cpu/attention_isa.hpp"
#include "kernels/cpu/scratch.hpp"
#include "util/dtype.hpp"
#include "kernels/query_quant.hpp"
#include "util/kv_quant.hpp"

#include <immintrin.h>

#include <cmath>
#include <exception>
#include <cstdint>
#include <cstring>
#include <limits>
