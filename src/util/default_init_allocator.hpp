// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// An allocator whose value-less construct() default-initialises: std::vector<T, it>::resize(n)
// of a trivial T leaves the new elements as they are instead of zeroing them, for buffers that
// are written before they are read and whose size moves a lot between calls (a sampler chain's
// candidates: 4 MiB of zeros per token over Gemma 3's vocabulary, after the previous token's
// stages had cut them to a few hundred).
#pragma once

#include <memory>
#include <new>
#include <type_traits>
#include <utility>

namespace kvrt {

template <class T>
struct DefaultInitAllocator : std::allocator<T> {
    using value_type = T;
    template <class U>
    struct rebind {
        using other = DefaultInitAllocator<U>;
    };
    DefaultInitAllocator() noexcept = default;
    template <class U>
    DefaultInitAllocator(const DefaultInitAllocator<U>&) noexcept {}
    template <class U>
    void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
        ::new (static_cast<void*>(p)) U;
    }
    template <class U, class... A>
    void construct(U* p, A&&... a) {
        ::new (static_cast<void*>(p)) U(std::forward<A>(a)...);
    }
};

}  // namespace kvrt
