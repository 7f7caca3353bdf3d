// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

#include "util/isa.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace kvrt {

namespace {

CpuFeatures probe() noexcept {
    CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    f.avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
    // AVX-VNNI is CPUID leaf 7 sub-leaf 1, EAX bit 4 (GCC 12's __builtin_cpu_supports
    // does not report it on every CPU that has it).
    unsigned a = 0, b = 0, c = 0, d = 0;
    f.avxvnni = f.avx2 && __get_cpuid_count(7, 1, &a, &b, &c, &d) && ((a >> 4) & 1u) != 0;
    f.avx512 = f.avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
    f.avx512vnni = f.avx512 && __builtin_cpu_supports("avx512vnni");
    f.avx512bf16 = f.avx512 && __builtin_cpu_supports("avx512bf16");
#endif
    return f;
}

Isa detect() noexcept {
    const CpuFeatures& f = cpu_features();
    if (f.avx512) return f.avx512bf16 && f.avx512vnni ? Isa::Avx512Bf16 : Isa::Avx512;
    if (f.avxvnni) return Isa::AvxVnni;
    if (f.avx2) return Isa::Avx2;
    return Isa::Scalar;
}

const char*& env_ignored_ref() noexcept {
    static const char* v = nullptr;
    return v;
}

Isa env_limit() noexcept {
    const char* e = std::getenv("KVRT_ISA");
    if (!e) return Isa::Avx512Bf16;
    if (std::strcmp(e, "scalar") == 0) return Isa::Scalar;
    if (std::strcmp(e, "avx2") == 0) return Isa::Avx2;
    if (std::strcmp(e, "avxvnni") == 0) return Isa::AvxVnni;
    if (std::strcmp(e, "avx512") == 0) return Isa::Avx512;
    if (std::strcmp(e, "avx512bf16") != 0) env_ignored_ref() = e;
    return Isa::Avx512Bf16;
}

std::atomic<int>& limit_ref() noexcept {
    static std::atomic<int> limit{static_cast<int>(env_limit())};
    return limit;
}

}  // namespace

const CpuFeatures& cpu_features() noexcept {
    static const CpuFeatures f = probe();
    return f;
}

Isa isa_detected() noexcept {
    static const Isa d = detect();
    return d;
}

Isa isa_active() noexcept {
    int l = limit_ref().load(std::memory_order_relaxed);
    int d = static_cast<int>(isa_detected());
    return static_cast<Isa>(l < d ? l : d);
}

const char* isa_env_ignored() noexcept {
    (void)limit_ref();  // reads KVRT_ISA once
    return env_ignored_ref();
}

Isa isa_set_limit(Isa limit) noexcept {
    return static_cast<Isa>(limit_ref().exchange(static_cast<int>(limit), std::memory_order_relaxed));
}

const char* isa_name(Isa isa) noexcept {
    switch (isa) {
        case Isa::Scalar: return "scalar";
        case Isa::Avx2: return "avx2";
        case Isa::AvxVnni: return "avxvnni";
        case Isa::Avx512: return "avx512";
        case Isa::Avx512Bf16: return "avx512bf16";
    }
    return "?";
}

}  // namespace kvrt
