// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

#include "util/isa.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>
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
    // Vendor string (leaf 0: EBX EDX ECX) "GenuineIntel".
    f.intel = __get_cpuid(0, &a, &b, &c, &d) && b == 0x756e6547u && d == 0x49656e69u && c == 0x6c65746eu;
    f.amd = b == 0x68747541u && d == 0x69746e65u && c == 0x444d4163u;  // "AuthenticAMD"
    if (__get_cpuid(1, &a, &b, &c, &d)) {
        const int base = static_cast<int>((a >> 8) & 0xFu);
        f.family = base == 0xF ? base + static_cast<int>((a >> 20) & 0xFFu) : base;
    }
    f.avxvnni = f.avx2 && __get_cpuid_count(7, 1, &a, &b, &c, &d) && ((a >> 4) & 1u) != 0;
    f.avx512 = f.avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
    f.avx512vnni = f.avx512 && __builtin_cpu_supports("avx512vnni");
    f.avx512bf16 = f.avx512 && __builtin_cpu_supports("avx512bf16");
    // AMX: CPUID leaf 7 sub-leaf 0, EDX bits 24 (AMX-TILE) and 25 (AMX-INT8); Linux hands out the
    // 8 KB tile state only to a process that asks for it (arch_prctl ARCH_REQ_XCOMP_PERM for
    // XFEATURE_XTILEDATA, once per process, for every thread), and refuses on kernels or VMs
    // without it: a refusal means no AMX.
    a = b = c = d = 0;
    const bool amx_cpu = f.avx512vnni && __get_cpuid_count(7, 0, &a, &b, &c, &d) && ((d >> 24) & 1u) && ((d >> 25) & 1u);
#if defined(__linux__) && defined(__x86_64__)
    constexpr long kArchReqXcompPerm = 0x1023;
    constexpr long kXfeatureXtiledata = 18;
    f.amx = amx_cpu && syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
    (void)amx_cpu;
#endif
#endif
    return f;
}

Isa detect() noexcept {
    const CpuFeatures& f = cpu_features();
    if (f.avx512 && f.avx512bf16 && f.avx512vnni) return f.amx ? Isa::Amx : Isa::Avx512Bf16;
    if (f.avx512) return Isa::Avx512;
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
    if (!e) return Isa::Amx;
    if (std::strcmp(e, "scalar") == 0) return Isa::Scalar;
    if (std::strcmp(e, "avx2") == 0) return Isa::Avx2;
    if (std::strcmp(e, "avxvnni") == 0) return Isa::AvxVnni;
    if (std::strcmp(e, "avx512") == 0) return Isa::Avx512;
    if (std::strcmp(e, "avx512bf16") == 0) return Isa::Avx512Bf16;
    if (std::strcmp(e, "amx") != 0) env_ignored_ref() = e;
    return Isa::Amx;
}

std::atomic<int>& limit_ref() noexcept {
    static std::atomic<int> limit{static_cast<int>(isa_env_limit())};
    return limit;
}

}  // namespace

const CpuFeatures& cpu_features() noexcept {
    static const CpuFeatures f = probe();
    return f;
}

bool cpu_is_zen4(const CpuFeatures& f) noexcept { return f.amd && f.family == 0x19 && f.avx512; }

bool cpu_is_intel_before_avxvnni(const CpuFeatures& f) noexcept { return f.intel && !f.avxvnni; }

bool prefetch_streams_into_l2(const CpuFeatures& f) noexcept { return f.intel || cpu_is_zen4(f); }

Isa isa_detected() noexcept {
    static const Isa d = detect();
    return d;
}

Isa isa_active() noexcept {
    int l = limit_ref().load(std::memory_order_relaxed);
    int d = static_cast<int>(isa_detected());
    return static_cast<Isa>(l < d ? l : d);
}

Isa isa_env_limit() noexcept {
    static const Isa l = env_limit();
    return l;
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
        case Isa::Amx: return "amx";
    }
    return "?";
}

}  // namespace kvrt
