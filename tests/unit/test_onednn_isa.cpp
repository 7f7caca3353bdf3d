// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// oneDNN's instruction set follows KVRT_ISA (src/kernels/onednn/onednn_isa.hpp). ctest runs each
// case in a process of its own, so the first case below is the process's first oneDNN use; it
// also runs under KVRT_ISA=avx2 (tests/CMakeLists.txt, onednn.isa_follows_kvrt_isa_avx2).
#include "kernels/onednn/onednn_isa.hpp"

#include "util/isa.hpp"

#include <doctest/doctest.h>
#include <oneapi/dnnl/dnnl.h>

#include <cstdlib>
#include <string>

using namespace kvrt;

TEST_CASE("onednn isa: oneDNN follows KVRT_ISA from its first kernel on") {
    const Isa level = isa_env_limit();
    const int cap = onednn::isa_for(level, cpu_features());
    CAPTURE(isa_name(level));
    CAPTURE(cap);
    const bool theirs = std::getenv("ONEDNN_MAX_CPU_ISA") || std::getenv("DNNL_MAX_CPU_ISA");
    REQUIRE_MESSAGE(onednn::follow_isa_limit(), "oneDNN ran before this case, or its own variable sets it higher");
    REQUIRE(onednn::follow_isa_limit());  // the second call changes nothing
    const unsigned eff = static_cast<unsigned>(dnnl_get_effective_cpu_isa());
    if (cap != dnnl_cpu_isa_all && !theirs) CHECK(eff == static_cast<unsigned>(cap));
    if (const char* e = std::getenv("KVRT_ISA"); e && std::string(e) == "avx2" && isa_detected() > Isa::Avx2 && !theirs)
        CHECK(eff == static_cast<unsigned>(dnnl_cpu_isa_avx2));
    // A GEMM on the capped oneDNN still multiplies: C = A B with A = [1 2; 3 4], B = [5 6; 7 8].
    const float a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8};
    float c[4] = {0, 0, 0, 0};
    REQUIRE(dnnl_sgemm('N', 'N', 2, 2, 2, 1.0f, a, 2, b, 2, 0.0f, c, 2) == dnnl_success);
    CHECK(c[0] == 19.0f);
    CHECK(c[1] == 22.0f);
    CHECK(c[2] == 43.0f);
    CHECK(c[3] == 50.0f);
}

TEST_CASE("onednn isa: each kvrt level maps to oneDNN's highest level within it, and no cap at the CPU's own") {
    CpuFeatures f = cpu_features();
    const Isa top = isa_detected();
    CHECK(onednn::isa_for(top, f) == dnnl_cpu_isa_all);
    CHECK(onednn::isa_for(Isa::Amx, f) == dnnl_cpu_isa_all);
    if (top > Isa::Scalar) CHECK(onednn::isa_for(Isa::Scalar, f) == dnnl_cpu_isa_sse41);
    if (top > Isa::Avx2) CHECK(onednn::isa_for(Isa::Avx2, f) == dnnl_cpu_isa_avx2);
    if (top > Isa::AvxVnni) CHECK(onednn::isa_for(Isa::AvxVnni, f) == dnnl_cpu_isa_avx2_vnni);
    if (top > Isa::Avx512) {
        f.avx512vnni = true;
        CHECK(onednn::isa_for(Isa::Avx512, f) == dnnl_cpu_isa_avx512_core_vnni);
        f.avx512vnni = false;
        CHECK(onednn::isa_for(Isa::Avx512, f) == dnnl_cpu_isa_avx512_core);
    }
    if (top > Isa::Avx512Bf16) CHECK(onednn::isa_for(Isa::Avx512Bf16, f) == dnnl_cpu_isa_avx512_core_bf16);
    // Each cap is a subset of the levels above it (oneDNN's bit masks), so "within" is a mask test.
    const unsigned levels[] = {dnnl_cpu_isa_sse41, dnnl_cpu_isa_avx2, dnnl_cpu_isa_avx512_core, dnnl_cpu_isa_avx512_core_vnni,
                               dnnl_cpu_isa_avx512_core_bf16, dnnl_cpu_isa_avx512_core_amx};
    for (size_t i = 1; i < sizeof levels / sizeof levels[0]; ++i) CHECK((levels[i - 1] & ~levels[i]) == 0u);
    CHECK((unsigned(dnnl_cpu_isa_avx2) & ~unsigned(dnnl_cpu_isa_avx2_vnni)) == 0u);
}
