// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// One instruction-set choice (util/isa.hpp) governs every kernel family: the weight
// matmul's Auto path and the dequantisers follow isa_set_limit (and so KVRT_ISA) as
// the attention kernels do.
#include "formats/tensor_type_dequant.hpp"
#include "kernels/weight_matmul.hpp"
#include "util/isa.hpp"

#include <doctest/doctest.h>

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
