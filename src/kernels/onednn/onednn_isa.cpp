// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// oneDNN's instruction set, following KVRT_ISA (see onednn_isa.hpp).
#include "kernels/onednn/onednn_isa.hpp"

#include <oneapi/dnnl/dnnl.h>

#include <cstdlib>

namespace kvrt::onednn {

int isa_for(Isa level, const CpuFeatures& f) noexcept {
    if (static_cast<int>(level) >= static_cast<int>(isa_detected())) return dnnl_cpu_isa_all;
    switch (level) {
        case Isa::Scalar: return dnnl_cpu_isa_sse41;
        case Isa::Avx2: return dnnl_cpu_isa_avx2;
        case Isa::AvxVnni: return dnnl_cpu_isa_avx2_vnni;
        case Isa::Avx512: return f.avx512vnni ? dnnl_cpu_isa_avx512_core_vnni : dnnl_cpu_isa_avx512_core;
        case Isa::Avx512Bf16: return dnnl_cpu_isa_avx512_core_bf16;
        case Isa::Amx: break;
    }
    return dnnl_cpu_isa_all;
}

bool follow_isa_limit() noexcept {
    static const bool within = [] {
        const int cap = isa_for(isa_env_limit(), cpu_features());
        if (cap == dnnl_cpu_isa_all) return true;
        if (!std::getenv("ONEDNN_MAX_CPU_ISA") && !std::getenv("DNNL_MAX_CPU_ISA"))
            (void)dnnl_set_max_cpu_isa(static_cast<dnnl_cpu_isa_t>(cap));  // fails if oneDNN ran before
        // oneDNN's ISA values are bit masks of the features each level adds to the ones below.
        const unsigned eff = static_cast<unsigned>(dnnl_get_effective_cpu_isa());
        return (eff & ~static_cast<unsigned>(cap)) == 0;
    }();
    return within;
}

}  // namespace kvrt::onednn
