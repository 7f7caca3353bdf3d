#include "kernels/isa.hpp"

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace kvrt {

namespace {

Isa detect() noexcept {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
        return __builtin_cpu_supports("avx512bf16") ? Isa::Avx512Bf16 : Isa::Avx512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c"))
        return Isa::Avx2;
    return Isa::Scalar;
}

Isa env_limit() noexcept {
    const char* e = std::getenv("KVRT_ISA");
    if (!e) return Isa::Avx512Bf16;
    if (std::strcmp(e, "scalar") == 0) return Isa::Scalar;
    if (std::strcmp(e, "avx2") == 0) return Isa::Avx2;
    if (std::strcmp(e, "avx512") == 0) return Isa::Avx512;
    return Isa::Avx512Bf16;
}

std::atomic<int>& limit_ref() noexcept {
    static std::atomic<int> limit{static_cast<int>(env_limit())};
    return limit;
}

}  // namespace

Isa isa_detected() noexcept {
    static const Isa d = detect();
    return d;
}

Isa isa_active() noexcept {
    int l = limit_ref().load(std::memory_order_relaxed);
    int d = static_cast<int>(isa_detected());
    return static_cast<Isa>(l < d ? l : d);
}

Isa isa_set_limit(Isa limit) noexcept {
    return static_cast<Isa>(limit_ref().exchange(static_cast<int>(limit), std::memory_order_relaxed));
}

const char* isa_name(Isa isa) noexcept {
    switch (isa) {
        case Isa::Scalar: return "scalar";
        case Isa::Avx2: return "avx2";
        case Isa::Avx512: return "avx512";
        case Isa::Avx512Bf16: return "avx512bf16";
    }
    return "?";
}

}  // namespace kvrt
