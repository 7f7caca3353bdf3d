// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// One instruction-set choice (util/isa.hpp) governs every kernel family: the weight
// matmul's Auto path and the dequantisers follow isa_set_limit (and so KVRT_ISA) as
// the attention kernels do.
#include "formats/tensor_type_dequant.hpp"
#include "kernels/cpu/attention_isa.hpp"
#include "kernels/weight_matmul.hpp"
#include "util/isa.hpp"

#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

using namespace kvrt;

namespace {
struct Limit {
    explicit Limit(Isa isa) : prev(isa_set_limit(isa)) {}
    ~Limit() { isa_set_limit(prev); }
    Isa prev;
};
}  // namespace

TEST_CASE("isa: the weight matmul and the dequantisers follow the one process-wide limit") {
    const CpuFeatures& f = cpu_features();
    {
        Limit l(Isa::Scalar);
        CHECK(isa_active() == Isa::Scalar);
        CHECK(kernel_isa_detected() == KernelIsa::Scalar);
        CHECK(dequant_best_isa() == DequantIsa::Scalar);
    }
    if (f.avx2) {
        Limit l(Isa::Avx2);
        CHECK(isa_active() == Isa::Avx2);
        CHECK(kernel_isa_detected() == KernelIsa::Avx2);
        CHECK(dequant_best_isa() == DequantIsa::Avx2);
    }
    {
        Limit l(Isa::Amx);  // no limit: the CPU's best
        CHECK(isa_active() == isa_detected());
        const KernelIsa best = f.amx          ? KernelIsa::Amx
                               : f.avx512vnni ? KernelIsa::Avx512
                               : f.avxvnni  ? KernelIsa::AvxVnni
                               : f.avx2     ? KernelIsa::Avx2
                                            : KernelIsa::Scalar;
        CHECK(kernel_isa_detected() == best);
        CHECK(dequant_best_isa() == (f.avx512 ? DequantIsa::Avx512 : f.avx2 ? DequantIsa::Avx2 : DequantIsa::Scalar));
    }
    // The detected level is consistent with the features.
    CHECK((isa_detected() >= Isa::Avx2) == f.avx2);
    CHECK((isa_detected() >= Isa::Avx512) == f.avx512);
    CHECK((isa_detected() == Isa::Amx) == f.amx);
    if (f.amx) {  // the level below AMX keeps the AVX-512 VNNI matmul
        Limit l(Isa::Avx512Bf16);
        CHECK(kernel_isa_detected() == KernelIsa::Avx512);
    }
    CHECK(std::string(isa_name(isa_detected())) != "?");
}

TEST_CASE("isa: the per-CPU tuning rules (prefetch level, scale gathers) on each CPU kind") {
    const CpuFeatures& here = cpu_features();
    CHECK_FALSE((here.intel && here.amd));
    if (here.amd) CHECK(here.family >= 0x17);  // every AMD CPU with AVX2 is Zen or later
    // The per-CPU rule, on the kinds measured (family numbers as CPUID leaf 1 gives them).
    CpuFeatures intel;
    intel.intel = true;
    intel.family = 6;
    intel.avx2 = intel.avx512 = true;
    CpuFeatures zen3;
    zen3.amd = true;
    zen3.family = 0x19;
    zen3.avx2 = true;
    CpuFeatures zen4 = zen3;
    zen4.avx512 = true;
    CpuFeatures zen5 = zen4;
    zen5.family = 0x1A;
    CpuFeatures zen2 = zen3;
    zen2.family = 0x17;
    CpuFeatures unknown;
    CpuFeatures sapphire = intel;  // (Alder Lake / Sapphire Rapids and later: AVX-VNNI)
    sapphire.avxvnni = true;
    CHECK(cpu_is_zen4(zen4));
    for (const CpuFeatures& f : {intel, sapphire, zen3, zen5, zen2, unknown}) CHECK_FALSE(cpu_is_zen4(f));
    CHECK(cpu_is_intel_before_avxvnni(intel));
    for (const CpuFeatures& f : {sapphire, zen3, zen4, zen5, zen2, unknown}) CHECK_FALSE(cpu_is_intel_before_avxvnni(f));
    CHECK(prefetch_streams_into_l2(intel));
    CHECK(prefetch_streams_into_l2(sapphire));
    CHECK(prefetch_streams_into_l2(zen4));
    for (const CpuFeatures& f : {zen3, zen5, zen2, unknown}) CHECK_FALSE(prefetch_streams_into_l2(f));
    // The attention's KV stream takes the rule unless KVRT_ATTENTION_PREFETCH sets it.
    if (std::getenv("KVRT_ATTENTION_PREFETCH") == nullptr)
        CHECK(cpu::attention_prefetch_l2() == prefetch_streams_into_l2(here));
    // Quantised heads' scales: gathered except on Zen 4 and older Intel cores, unless KVRT_SCALE_GATHER sets it (and with
    // the test override given back).
    if (std::getenv("KVRT_SCALE_GATHER") == nullptr) {
        cpu::attention_gather_scales_override(-1);
        CHECK(cpu::attention_gather_scales() == (!cpu_is_zen4(here) && !cpu_is_intel_before_avxvnni(here)));
    }
    // The avx512 level's int8 dot products: VNNI wherever the CPU has it, unless KVRT_I8_DOT sets
    // it; never without it, whatever the override asks.
    if (std::getenv("KVRT_I8_DOT") == nullptr) {
        cpu::attention_avx512_i8_dot_override(-1);
        CHECK(cpu::attention_avx512_i8_dot() == here.avx512vnni);
    }
    cpu::attention_avx512_i8_dot_override(1);
    CHECK(cpu::attention_avx512_i8_dot() == here.avx512vnni);
    cpu::attention_avx512_i8_dot_override(0);
    CHECK_FALSE(cpu::attention_avx512_i8_dot());
    cpu::attention_avx512_i8_dot_override(-1);
}
