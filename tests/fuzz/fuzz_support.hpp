// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Helpers shared by the libFuzzer harnesses (tests/fuzz/README.md).
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <unistd.h>

namespace kvrt::fuzz {

// The directory of the real models (as tests/unit/test_models.hpp: $KVRT_MODEL_DIR,
// else ~/.cache/kvrt/models).
inline std::string model_dir() {
    if (const char* d = std::getenv("KVRT_MODEL_DIR"); d && *d) return d;
    if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/kvrt/models";
    return "/root/.cache/kvrt/models";
}

inline constexpr const char* kSmolLM2 = "SmolLM2-135M-Instruct.Q4_1.gguf";  // gpt2 BPE, "smollm" pre
inline constexpr const char* kQwen25 = "qwen2.5-coder-0.5b-instruct-Q4_K_M.gguf";  // gpt2 BPE, "qwen2" pre
inline constexpr const char* kGemma3 = "gemma-3-270m-Q4_K_M.gguf";  // SentencePiece ("llama")

// A harness that needs a real model and cannot find it stops the run loudly: a
// fuzzer that silently fuzzes nothing would pass CI.
[[noreturn]] inline void missing(const std::string& what) {
    std::fprintf(stderr, "fuzz harness: cannot start: %s (run scripts/setup.sh)\n", what.c_str());
    std::abort();
}

// A per-process scratch file (on /dev/shm when it exists) for parsers that read a path.
inline std::string scratch_path(std::string_view tag) {
    const char* dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    return std::string(dir) + "/kvrt-fuzz-" + std::string(tag) + "-" + std::to_string(getpid()) + ".bin";
}

inline bool write_file(const std::string& path, const void* data, size_t size) {
    FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) return false;
    bool ok = std::fwrite(data, 1, size, f) == size;
    return std::fclose(f) == 0 && ok;
}

}  // namespace kvrt::fuzz
