// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The three real models of the architecture tests, fetched by scripts/setup.sh
// into $KVRT_MODEL_DIR (default ~/.cache/kvrt/models):
//   llama   SmolLM2-135M-Instruct Q4_1 ($KVRT_MODEL overrides it, as model_path())
//   qwen2   Qwen2.5-Coder-0.5B-Instruct Q4_K_M
//   gemma3  Gemma 3 270M (base) Q4_K_M
// A missing model FAILS the test when CI=true (CI must run every test); outside
// CI the test is skipped with a message naming the file.
#pragma once

#include "model/model.hpp"
#include "test_support.hpp"

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>

namespace kvrt::test {

inline constexpr const char* kRealArchs[] = {"llama", "qwen2", "gemma3"};

inline std::string real_model_file(std::string_view arch) {
    if (arch == "llama") return "SmolLM2-135M-Instruct.Q4_1.gguf";
    if (arch == "qwen2") return "qwen2.5-coder-0.5b-instruct-Q4_K_M.gguf";
    if (arch == "gemma3") return "gemma-3-270m-Q4_K_M.gguf";
    FAIL("no real model for architecture " << arch);
    return {};
}

inline std::string real_model_path(std::string_view arch) {
    if (arch == "llama") return model_path();  // honours $KVRT_MODEL
    std::string dir;
    if (const char* d = std::getenv("KVRT_MODEL_DIR"); d && *d) dir = d;
    else if (const char* h = std::getenv("HOME"); h && *h) dir = std::string(h) + "/.cache/kvrt/models";
    else dir = "/root/.cache/kvrt/models";
    return dir + "/" + real_model_file(arch);
}

inline bool running_in_ci() {
    const char* ci = std::getenv("CI");
    return ci && *ci && std::string_view(ci) != "false" && std::string_view(ci) != "0";
}

// True when the model file exists. Otherwise: a failure under CI, a message outside.
inline bool real_model_available(std::string_view arch) {
    const std::string p = real_model_path(arch);
    if (std::filesystem::exists(p)) return true;
    if (running_in_ci()) FAIL_CHECK("model not found: " << p << " (run scripts/setup.sh)");
    else MESSAGE("skipped: model not found: " << p << " (run scripts/setup.sh; under CI=true this fails)");
    return false;
}

// The model of `arch`, loaded once per process (f32_weights: every matmul weight
// dequantised to f32, a separate instance). Call real_model_available() first.
inline const std::shared_ptr<const Model>& real_model(std::string_view arch, bool f32_weights = false) {
    static std::map<std::string, std::shared_ptr<const Model>> loaded;
    const std::string key = std::string(arch) + (f32_weights ? "/f32" : "");
    auto it = loaded.find(key);
    if (it == loaded.end()) {
        const std::string p = real_model_path(arch);
        REQUIRE_MESSAGE(std::filesystem::exists(p), "model not found: " << p << " (run scripts/setup.sh)");
        ModelLoadOptions o;
        o.f32_weights = f32_weights;
        it = loaded.emplace(key, Model::load(p, o)).first;
        REQUIRE(it->second->architecture() == arch);
    }
    return it->second;
}

}  // namespace kvrt::test
