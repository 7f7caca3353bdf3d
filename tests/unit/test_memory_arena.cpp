// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// memory::Arena: which pages back it (transparent 2 MiB pages by default, 4 KiB on request,
// hugetlb falling back when the pool is empty) and that its blocks are usable.
#include "memory/arena.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

using kvrt::memory::Arena;
using kvrt::memory::PageKind;

namespace {

// The THP mode the kernel runs in ("always", "madvise" or "never"; "" if unknown).
std::string thp_mode() {
    std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
    std::string s;
    std::getline(f, s);
    const size_t a = s.find('['), b = s.find(']');
    return a == std::string::npos || b == std::string::npos ? "" : s.substr(a + 1, b - a - 1);
}

// "THPeligible" of the mapping holding p in /proc/self/smaps (-1 if not found).
int thp_eligible(const void* p) {
    std::ifstream f("/proc/self/smaps");
    std::string line;
    const uintptr_t x = reinterpret_cast<uintptr_t>(p);
    bool in = false;
    while (std::getline(f, line)) {
        unsigned long lo = 0, hi = 0;
        if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find('-') < line.find(' ')) {
            in = x >= lo && x < hi;
            continue;
        }
        if (in && line.rfind("THPeligible:", 0) == 0) return std::stoi(line.substr(12));
    }
    return -1;
}

void use(Arena& a, size_t bytes) {
    void* p = a.allocate(bytes);
    REQUIRE(p != nullptr);
    CHECK(reinterpret_cast<uintptr_t>(p) % kvrt::memory::kBlockAlign == 0);
    std::memset(p, 0x5A, bytes);
    CHECK(static_cast<unsigned char*>(p)[bytes - 1] == 0x5A);
    a.release(p);
}

}  // namespace

TEST_CASE("memory arena: transparent 2 MiB pages by default, 4 KiB on request") {
    const std::string mode = thp_mode();
    Arena thp(64ull << 20, false);
    REQUIRE(thp.dedicated());
    CHECK_FALSE(thp.large_pages());
    use(thp, 3u << 20);
    if (mode == "madvise" || mode == "always") {
        CHECK(thp.page_kind() == PageKind::Transparent);
        void* p = thp.allocate(4u << 20);
        REQUIRE(p != nullptr);
        CHECK(thp_eligible(p) == 1);  // the range is advised: faults may take 2 MiB pages
        thp.release(p);
    }
    Arena base(64ull << 20, false, /*transparent_huge_pages=*/false);
    REQUIRE(base.dedicated());
    CHECK(base.page_kind() == PageKind::Base);
    use(base, 1u << 20);
    if (mode == "madvise") {
        void* p = base.allocate(4u << 20);
        REQUIRE(p != nullptr);
        CHECK(thp_eligible(p) == 0);
        base.release(p);
    }
}

TEST_CASE("memory arena: large_pages tries hugetlb, else falls back to transparent pages") {
    Arena a(32ull << 20, true);
    REQUIRE(a.dedicated());
    CHECK(a.large_pages());
    CHECK(a.page_kind() != PageKind::Base);  // hugetlb when the pool holds the reservation, else THP
    use(a, 2u << 20);
}
