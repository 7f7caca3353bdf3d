// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The unit tests run the avx512bf16 path's bf16 dot products (pair tiles) wherever the CPU has
// the instructions, whatever kvrt's own rule would choose on it (cpu::attention_bf16_dot: off on
// Intel), so that every CI machine with AVX512_BF16 tests them; the f32-product choice at that
// level is checked against the avx512 path, bit for bit (kernels.attention.bf16_dot_path_*).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "kernels/cpu/attention_isa.hpp"

int main(int argc, char** argv) {
    kvrt::cpu::attention_bf16_dot_override(1);
    return doctest::Context(argc, argv).run();
}
