// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

#include "model/arch/architecture.hpp"

namespace kvrt {

namespace {
const Architecture* const kArchitectures[] = {&kArchLlama, &kArchQwen2, &kArchGemma3, &kArchCed};
}

const Architecture* find_architecture(std::string_view name) noexcept {
    for (const Architecture* a : kArchitectures)
        if (name == a->name) return a;
    return nullptr;
}

std::string supported_architectures() {
    std::string s;
    for (const Architecture* a : kArchitectures) {
        if (!s.empty()) s += ", ";
        s += a->name;
    }
    return s;
}

}  // namespace kvrt
