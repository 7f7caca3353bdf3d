// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

#include <doctest/doctest.h>

#include "cache/cache.hpp"
#include "cache_test_util.hpp"
#include "util/error.hpp"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace kvrt;
using namespace kvrt::cache;
using kvrt::test::iota_tokens;
using kvrt::test::status_of;

namespace {

std::string temp_path(const char* name) {
    return (std::filesystem::temp_directory_path() / (std::string("kvrt_test_") + std::to_string(::getpid()) + "_" + name))
        .string();
}

CacheConfig mixed_config(uint64_t budget) {
    CacheConfig c = kvrt::test::dense_config(2, 1, 4, 4, budget, DType::F32);
    LayerSpec w = c.layers[0];
    w.kind = LayerKind::Window;
    w.window = 5;
    c.layers.push_back(w);
    return c;
}

// Fills the rows of [from, to) with value(layer, pos) and marks them computed.
void compute(Cache& c, SeqId s, int64_t from, int64_t to) {
    for (int32_t l = 0; l < c.n_layers(); l++) {
        PagedKV v = c.paged_view(s, l);
        for (int64_t p = from; p < to; p++) {
            if (!v.blocks[p / v.block_tokens]) continue;
            float val = float(l * 1000 + p);
            std::memcpy(c.k_row_mut(s, l, p), &val, 4);
            val = -val;
            std::memcpy(c.v_row_mut(s, l, p), &val, 4);
        }
    }
    c.mark_computed(s, to);
}

float k_at(Cache& c, SeqId s, int32_t l, int64_t p) {
    float v;
    std::memcpy(&v, c.row(s, l, p, false), 4);
    return v;
}

void flip_byte(const std::string& path, size_t at) {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(at));
    char ch;
    f.get(ch);
    f.seekp(static_cast<std::streamoff>(at));
    f.put(static_cast<char>(ch ^ 0x5a));
}

}  // namespace

TEST_CASE("cache state: the prefix cache survives a save and a load into a new cache") {
    const std::string path = temp_path("prefixes.kvrt");
    auto t = iota_tokens(23);
    uint64_t saved = 0;
    {
        Cache c(mixed_config(1 << 20));
        SeqId s = c.create_sequence();
        c.append(s, t.data(), 23);
        compute(c, s, 0, 23);
        c.release(s);
        saved = c.save_prefixes(path, 7, 9);
        CHECK(saved == 5 * 2);  // 5 full blocks in the full and window managers (window blocks released, cached)
    }
    Cache d(mixed_config(1 << 20));
    CHECK(status_of([&] { d.load_prefixes(path, 7, 10); }) == KVRT_ERR_MISMATCH);  // another model
    CHECK(d.stats().bytes_cached == 0);
    Cache other(kvrt::test::dense_config(2, 1, 4, 4, 1 << 20, DType::F32));
    CHECK(status_of([&] { other.load_prefixes(path, 7, 9); }) == KVRT_ERR_MISMATCH);  // another layout
    CHECK(d.load_prefixes(path, 7, 9) == saved);
    CHECK(d.load_prefixes(path, 7, 9) == 0);  // already there
    d.check_invariants();
    CHECK(d.lookup_prefix({}, t.data(), 23) == 20);
    SeqId s = d.create_sequence();
    CHECK(d.match_prefix(s, t.data(), 23) == 20);
    CHECK(k_at(d, s, 1, 13) == 1013.0f);
    CHECK(k_at(d, s, 2, 19) == 2019.0f);
    // The file keeps the blocks' tokens: a loaded cache's hits still reach the first changed token.
    std::vector<int32_t> u = t;
    u[18] = -1;
    CHECK(d.lookup_prefix({}, u.data(), 23) == 16);
    CHECK(d.lookup_prefix({}, u.data(), 23, /*sub_block=*/true) == 18);
    SeqId su = d.create_sequence();
    CHECK(d.match_prefix(su, u.data(), 23, true) == 18);
    CHECK(k_at(d, su, 1, 17) == 1017.0f);
    d.release(su);

    // A budget smaller than the file: loads what fits in free bytes, never evicts.
    // Blocks: full manager 2 layers x (K + V) x 64 = 256 bytes, window manager 128.
    Cache small(mixed_config(768));
    SeqId held = small.create_sequence();
    small.append(held, t.data(), 4);  // one block of each manager in use: 384 bytes
    uint64_t loaded = small.load_prefixes(path, 7, 9);
    CHECK(loaded > 0);
    CHECK(loaded < saved);
    CacheStats st = small.stats();
    CHECK(st.bytes_in_use == 384);
    CHECK(st.bytes_cached + st.bytes_in_use <= 768);
    CHECK(st.evictions == 0);
    small.check_invariants();

    // Corruption and truncation are clean misses.
    flip_byte(path, 100);
    Cache e(mixed_config(1 << 20));
    CHECK(status_of([&] { e.load_prefixes(path, 7, 9); }) == KVRT_ERR_BAD_FORMAT);
    std::filesystem::resize_file(path, 50);
    CHECK(status_of([&] { e.load_prefixes(path, 7, 9); }) == KVRT_ERR_BAD_FORMAT);
    CHECK(e.stats().bytes_cached == 0);
    std::filesystem::remove(path);
    CHECK(status_of([&] { e.load_prefixes(path, 7, 9); }) == KVRT_ERR_NOT_FOUND);
}

TEST_CASE("cache state: a sequence survives a save and a load, keys and window drops included") {
    const std::string path = temp_path("seq.kvrt");
    auto t = iota_tokens(30);
    Cache c(mixed_config(1 << 20));
    SeqKeys k;
    k.fingerprint_lo = 11;
    k.fingerprint_hi = 12;
    k.salt = "salt";
    SeqId s = c.create_sequence(k);
    c.append(s, t.data(), 14);
    compute(c, s, 0, 14);
    c.append(s, t.data() + 14, 16);  // window 5: blocks before 10 dropped
    compute(c, s, 14, 27);           // 3 positions appended, not computed
    CHECK(c.paged_view(s, 2).blocks[0] == nullptr);
    c.save_sequence(s, path);
    CHECK(status_of([&] { c.load_sequence(path, 11, 13); }) == KVRT_ERR_MISMATCH);
    SeqId r = c.load_sequence(path, 11, 12);
    SeqInfo a = c.seq_info(s), b = c.seq_info(r);
    CHECK(b.length == 30);
    CHECK(b.computed == 27);
    CHECK(b.bytes == a.bytes);
    for (int64_t p = 0; p < 27; p++) CHECK(k_at(c, r, 0, p) == float(p));
    CHECK(k_at(c, r, 2, 20) == 2020.0f);
    CHECK(c.paged_view(r, 2).blocks[0] == nullptr);
    // The loaded copy published nothing new (same hashes), and is independent.
    c.release(s);
    c.check_invariants();
    SeqKeys other = k;
    other.salt = "other";
    CHECK(c.lookup_prefix(other, t.data(), 30) == 0);
    CHECK(c.lookup_prefix(k, t.data(), 30) == 24);

    // CACHE_FULL: nothing changes.
    Cache tiny(mixed_config(4 * 192));
    CacheStats before = tiny.stats();
    CHECK(status_of([&] { tiny.load_sequence(path, 11, 12); }) == KVRT_ERR_CACHE_FULL);
    CHECK(tiny.stats().bytes_in_use == before.bytes_in_use);
    CHECK(tiny.stats().n_sequences == 0);
    // A prefix file is not a sequence file.
    const std::string ppath = temp_path("p2.kvrt");
    c.save_prefixes(ppath, 11, 12);
    CHECK(status_of([&] { c.load_sequence(ppath, 11, 12); }) == KVRT_ERR_MISMATCH);
    flip_byte(path, 40);
    CHECK(status_of([&] { c.load_sequence(path, 11, 12); }) == KVRT_ERR_BAD_FORMAT);
    std::filesystem::remove(path);
    std::filesystem::remove(ppath);
    CHECK(status_of([&] { c.save_sequence(12345, path); }) == KVRT_ERR_NOT_FOUND);
    CHECK(status_of([&] { c.save_sequence(r, "/nonexistent-dir/x.kvrt"); }) == KVRT_ERR_IO);
    c.check_invariants();
}
