// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// HandleRegistry: opaque C handles that are checked, never trusted.
//
// A handle is not an address: it encodes a never-reused 56-bit serial and an
// 8-bit type tag, so a NULL, destroyed (even if the memory was reused) or
// foreign handle (another type's, or garbage) is simply absent from the
// registry: lookups return nullptr, never touching the pointer. Lookups hand
// out a std::shared_ptr, so an object stays alive for the duration of a call
// even if another thread destroys its handle meanwhile.
//
// Entries are owning (the handle keeps the object alive until remove()) or
// non-owning (a weak reference; the handle dies with the object, e.g. a cache
// owned by contexts). Internally synchronised; O(1) per call.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace kvrt::api {

template <class T, class Handle>
class HandleRegistry {
public:
    explicit HandleRegistry(uint8_t tag) : tag_(tag) {}

    // Registers obj and returns its new handle.
    Handle* add(std::shared_ptr<T> obj, bool owning = true) {
        std::lock_guard<std::mutex> lock(mu_);
        uintptr_t key = (next_++ << 8) | tag_;
        Entry e;
        e.raw = obj.get();
        e.weak = obj;
        if (owning) e.strong = std::move(obj);
        map_.emplace(key, std::move(e));
        return reinterpret_cast<Handle*>(key);
    }

    // The object behind h, or nullptr for NULL/destroyed/foreign handles.
    std::shared_ptr<T> get(const Handle* h) const {
        if (h == nullptr) return nullptr;
        std::lock_guard<std::mutex> lock(mu_);
        auto it = map_.find(reinterpret_cast<uintptr_t>(h));
        if (it == map_.end()) return nullptr;
        return it->second.weak.lock();
    }

    // Unregisters h. Returns the owning reference (nullptr if h was unknown or
    // non-owning; a non-owning entry is removed only when remove_weak is true).
    std::shared_ptr<T> remove(const Handle* h, bool remove_weak = false) {
        if (h == nullptr) return nullptr;
        std::lock_guard<std::mutex> lock(mu_);
        auto it = map_.find(reinterpret_cast<uintptr_t>(h));
        if (it == map_.end()) return nullptr;
        if (!it->second.strong && !remove_weak) return nullptr;
        std::shared_ptr<T> obj = std::move(it->second.strong);
        map_.erase(it);
        return obj;
    }

    // The live handle already registered for obj, or nullptr. O(entries).
    Handle* find(const T* obj) const {
        std::lock_guard<std::mutex> lock(mu_);
        for (auto it = map_.begin(); it != map_.end(); ++it)
            if (it->second.raw == obj && !it->second.weak.expired()) return reinterpret_cast<Handle*>(it->first);
        return nullptr;
    }

    // The live handle of obj, registering it (with `owning`) if it has none. Atomic.
    Handle* find_or_add(std::shared_ptr<T> obj, bool owning) {
        std::lock_guard<std::mutex> lock(mu_);
        for (auto it = map_.begin(); it != map_.end(); ++it)
            if (it->second.raw == obj.get() && !it->second.weak.expired()) return reinterpret_cast<Handle*>(it->first);
        uintptr_t key = (next_++ << 8) | tag_;
        Entry e;
        e.raw = obj.get();
        e.weak = obj;
        if (owning) e.strong = std::move(obj);
        map_.emplace(key, std::move(e));
        return reinterpret_cast<Handle*>(key);
    }

    bool is_owning(const Handle* h) const {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = map_.find(reinterpret_cast<uintptr_t>(h));
        return it != map_.end() && it->second.strong != nullptr;
    }

private:
    struct Entry {
        const T* raw = nullptr;
        std::shared_ptr<T> strong;
        std::weak_ptr<T> weak;
    };
    const uintptr_t tag_;
    mutable std::mutex mu_;
    uintptr_t next_ = 1;
    std::unordered_map<uintptr_t, Entry> map_;
};

}  // namespace kvrt::api
