// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Element access for the reference kernels: kv_load (util/kv_quant.hpp) reads element c of a
// head of any KV type (f32, f16, bf16, and the quantised int8 / fp8 with their scales).
#pragma once

#include "util/kv_quant.hpp"
