// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// libFuzzer harness: the cache's state files (src/cache/state_file.*, cache_state.cpp):
// prefix-cache files (Cache::load_prefixes) and sequence files (Cache::load_sequence).
//
// Input: byte 0 picks the file kind (bit 0: sequence, else prefixes) and whether the
// trailing XXH3-64 checksum is kept as given (bit 1) or recomputed over the rest
// (default, so that mutations reach the body's parser instead of stopping at the
// checksum). The rest is the file, written to a scratch file and loaded into a fresh
// cache with a fixed layout (two full layers and one sliding-window layer, 4-token
// blocks) and fingerprint. A file must load or fail with kvrt::Error; a loaded
// sequence is then read back, extended, forked, truncated and released, and the
// cache's accounting must stay within its budget.
//
// Seeds: run the harness binary with KVRT_FUZZ_WRITE_SEEDS=<dir> to write files the
// cache itself saved (tests/fuzz/corpus/cache_state holds them with the byte-0 prefix).
#include "fuzz_cache_config.hpp"
#include "fuzz_support.hpp"

#include "cache/cache.hpp"
#include "util/error.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

using namespace kvrt;
using namespace kvrt::cache;
using kvrt::fuzz::kFpHi;
using kvrt::fuzz::kFpLo;
using kvrt::fuzz::fill;

namespace {



std::string& scratch() {
    static std::string p = fuzz::scratch_path("cache-state");
    return p;
}


// Writes the seed files: byte 0 (the mode) followed by a file the cache saved.
void write_seeds(const char* dir) {
    Cache c(kvrt::fuzz::small_cache_config());
    std::vector<int32_t> toks(23);
    for (size_t i = 0; i < toks.size(); i++) toks[i] = int32_t(100 + i * 3);
    SeqKeys keys{kFpLo, kFpHi, "", 0};
    SeqId a = c.create_sequence(keys);
    c.append(a, toks.data(), 23);
    fill(c, a, 0, 23);
    SeqKeys salted{kFpLo, kFpHi, "tenant-7", 42};
    SeqId b = c.create_sequence(salted);
    c.append(b, toks.data(), 5);
    fill(c, b, 0, 5);
    SeqId e = c.create_sequence(keys);
    int n = 0;
    auto emit = [&](uint8_t mode, const std::string& file) {
        FILE* in = std::fopen(file.c_str(), "rb");
        std::vector<uint8_t> bytes(1, mode);
        int ch;
        while (in && (ch = std::fgetc(in)) != EOF) bytes.push_back(uint8_t(ch));
        if (in) std::fclose(in);
        const std::string out = std::string(dir) + "/seed-" + std::to_string(n++);
        if (!fuzz::write_file(out, bytes.data(), bytes.size())) fuzz::missing("cannot write " + out);
    };
    const std::string tmp = scratch();
    for (SeqId s : {a, b, e}) {
        c.save_sequence(s, tmp);
        emit(1, tmp);
    }
    c.release(a);
    c.release(b);
    c.save_prefixes(tmp, kFpLo, kFpHi);
    emit(0, tmp);
    std::remove(tmp.c_str());
    std::fprintf(stderr, "fuzz_cache_state: wrote %d seeds to %s\n", n, dir);
}

void check_stats(const Cache& c) {
    CacheStats st = c.stats();
    if (st.bytes_in_use + st.bytes_cached + st.bytes_free != st.budget_bytes ||
        st.bytes_in_use + st.bytes_cached > st.budget_bytes) {
        std::fprintf(stderr, "fuzz_cache_state: accounting broken: in use %llu + cached %llu + free %llu != %llu\n",
                     (unsigned long long)st.bytes_in_use, (unsigned long long)st.bytes_cached,
                     (unsigned long long)st.bytes_free, (unsigned long long)st.budget_bytes);
        std::abort();
    }
}

void exercise(Cache& c, SeqId s) {
    SeqInfo info = c.seq_info(s);
    std::vector<uint8_t> k(2 * 8 * 2), v(2 * 8 * 2);
    for (int32_t l = 0; l < 3; l++)
        for (int64_t p = 0; p < info.length; p++) {
            try {
                c.read_rows(s, l, p, 1, k.data(), v.data());  // window-dropped rows: OUT_OF_RANGE
            } catch (const Error&) {
            }
        }
    try {
        if (info.computed == info.length) {
            SeqId f = c.fork(s);
            const int32_t t = 7;
            c.append(f, &t, 1);
            c.release(f);
        }
        c.truncate(s, info.length / 2);
    } catch (const Error&) {
    }
    c.release(s);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    if (const char* dir = std::getenv("KVRT_FUZZ_WRITE_SEEDS"); dir && *dir) {
        write_seeds(dir);
        std::exit(0);
    }
    return 0;
}

// The cache the inputs load into. Creating one costs ~0.4 ms (its arena), so it is
// kept while inputs fail to load, which must leave it exactly as it was (checked);
// after an input that loaded something it is replaced by a fresh one.
std::unique_ptr<Cache>& cache_slot() {
    static std::unique_ptr<Cache> c;
    return c;
}

bool same_contents(const CacheStats& a, const CacheStats& b) {
    return a.bytes_in_use == b.bytes_in_use && a.bytes_cached == b.bytes_cached && a.n_sequences == b.n_sequences &&
           a.n_pins == b.n_pins && a.blocks_in_use == b.blocks_in_use && a.blocks_cached == b.blocks_cached;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const bool sequence = data[0] & 1, keep_checksum = data[0] & 2;
    std::vector<uint8_t> file(data + 1, data + size);
    if (!keep_checksum && file.size() >= 8) {
        const uint64_t sum = XXH3_64bits(file.data(), file.size() - 8);
        std::memcpy(file.data() + file.size() - 8, &sum, 8);
    }
    if (!fuzz::write_file(scratch(), file.data(), file.size())) fuzz::missing("cannot write " + scratch());
    std::unique_ptr<Cache>& slot = cache_slot();
    if (!slot) slot = std::make_unique<Cache>(kvrt::fuzz::small_cache_config());
    Cache& c = *slot;
    const CacheStats before = c.stats();
    bool loaded = false;
    try {
        if (sequence) {
            SeqId s = c.load_sequence(scratch(), kFpLo, kFpHi);
            loaded = true;
            check_stats(c);
            exercise(c, s);
        } else {
            loaded = c.load_prefixes(scratch(), kFpLo, kFpHi) > 0;
            // The loaded blocks must be usable as prefix hits (or plain misses).
            const int32_t toks[12] = {100, 103, 106, 109, 112, 115, 118, 121, 124, 127, 130, 133};
            SeqId s = c.create_sequence(SeqKeys{kFpLo, kFpHi, "", 0});
            c.match_prefix(s, toks, 12);
            exercise(c, s);
        }
    } catch (const Error& e) {
        if (!loaded && !same_contents(before, c.stats())) {
            std::fprintf(stderr, "fuzz_cache_state: a failed load changed the cache (%s)\n", e.what());
            std::abort();
        }
    }
    check_stats(c);
    if (loaded || !same_contents(before, c.stats())) slot.reset();
    return 0;
}
