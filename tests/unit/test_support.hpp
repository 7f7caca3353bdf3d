// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Shared helpers for the unit tests.
#pragma once

#include "util/error.hpp"

#include <omp.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace kvrt::test {

// Path of the real model (SmolLM2-135M-Instruct Q4_1) fetched by scripts/setup.sh:
// $KVRT_MODEL, else $KVRT_MODEL_DIR/…, else ~/.cache/kvrt/models/…. Tests that need it
// REQUIRE that it exists: a missing model is a failure, never a skip.
inline std::string model_path() {
    if (const char* p = std::getenv("KVRT_MODEL"); p && *p) return p;
    std::string dir;
    if (const char* d = std::getenv("KVRT_MODEL_DIR"); d && *d) dir = d;
    else if (const char* h = std::getenv("HOME"); h && *h) dir = std::string(h) + "/.cache/kvrt/models";
    else dir = "/root/.cache/kvrt/models";
    return dir + "/SmolLM2-135M-Instruct.Q4_1.gguf";
}

// Path of another model file scripts/setup.sh fetches, by file name (e.g.
// "gemma-3-270m-Q4_K_M.gguf"): $KVRT_MODEL_DIR/name, else ~/.cache/kvrt/models/name
// ($KVRT_MODEL names the SmolLM2 file only and does not apply here).
inline std::string model_path(const std::string& file_name) {
    std::string dir;
    if (const char* d = std::getenv("KVRT_MODEL_DIR"); d && *d) dir = d;
    else if (const char* h = std::getenv("HOME"); h && *h) dir = std::string(h) + "/.cache/kvrt/models";
    else dir = "/root/.cache/kvrt/models";
    return dir + "/" + file_name;
}

// True under CI (the environment has CI=true, as CI services set it): tests whose
// optional model file is missing must then fail rather than skip.
// Runs fn(thread number) on every thread of an OpenMP region of nt threads (a kernel's team
// mode); returns how many threads saw an exception escape fn.
template <class Fn>
int run_team(int nt, Fn&& fn) {
    int failed = 0;
#pragma omp parallel num_threads(nt) reduction(+ : failed)
    {
        try {
            fn(omp_get_thread_num());
        } catch (...) {
            failed = 1;
        }
    }
    return failed;
}

inline bool in_ci() {
    const char* ci = std::getenv("CI");
    return ci && (std::string(ci) == "true" || std::string(ci) == "1");
}

inline std::string data_dir() { return KVRT_TEST_DATA_DIR; }

// The status fn() throws as a kvrt::Error (KVRT_OK when it returns normally).
kvrt_status status_of(auto&& fn) {
    try {
        fn();
    } catch (const Error& e) {
        return e.status();
    }
    return KVRT_OK;
}

}  // namespace kvrt::test
