// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// What a tier load checks about the KV element types (issue 13, with issue 15's separate
// K/V types and int8 / fp8 rows): the tier key names the V rows' type as well as K's, so a
// block set of another V type (even one of the same byte size: bf16 vs f16) is never
// loaded; and the scales of quantised rows read back from a tier must be finite, else the
// set is a counted corrupt entry, removed, and computed instead.
#include <doctest/doctest.h>

#include "cache/cache.hpp"
#include "cache/disk_tier.hpp"
#include "cache/tier_envelope.hpp"
#include "cache_test_util.hpp"
#include "util/kv_quant.hpp"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace kvrt;
using namespace kvrt::cache;
using kvrt::test::iota_tokens;
namespace fs = std::filesystem;

namespace {

std::string temp_dir(const char* name) { return kvrt::test::fresh_temp_dir("kvrt_tier_dtypes_", name); }

// 2 full layers, 2 KV heads of width 32 (int8's scale group), 4 positions per block.
CacheConfig config(DType k, std::optional<DType> v) {
    CacheConfig c = kvrt::test::dense_config(2, 2, 32, 4, 64u << 20, k);
    for (LayerSpec& s : c.layers) s.v_dtype = v;
    return c;
}

// Writes every row of [0, n) through kv_store_head (finite scales for int8 / fp8) and marks it computed.
void compute(Cache& c, SeqId s, int64_t n) {
    for (int32_t l = 0; l < c.n_layers(); l++) {
        const LayerGeometry& g = c.geometry(l);
        std::vector<float> x(size_t(g.head_dim));
        for (int64_t p = 0; p < n; p++)
            for (int32_t h = 0; h < g.n_kv_heads; h++) {
                for (int32_t i = 0; i < g.head_dim; i++) x[size_t(i)] = float((l * 7 + p * 3 + h * 5 + i) % 23) / 7.0f - 1.5f;
                kv_store_head(c.k_row_mut(s, l, p) + size_t(h) * kv_head_bytes(g.dtype, g.head_dim), x.data(), g.dtype,
                              g.head_dim);
                kv_store_head(c.v_row_mut(s, l, p) + size_t(h) * kv_head_bytes(g.v_dtype, g.head_dim), x.data(),
                              g.v_dtype, g.head_dim);
            }
    }
    c.mark_computed(s, n);
}

// A cache of cfg on dir that computes doc and persists its block sets; returns how many.
uint64_t write_doc(const CacheConfig& cfg, const std::string& dir, const std::vector<int32_t>& doc) {
    Cache c(cfg);
    c.add_tier(make_disk_tier(DiskTierOptions{dir, 0}));
    SeqId s = c.create_sequence();
    c.append(s, doc.data(), int64_t(doc.size()));
    compute(c, s, int64_t(doc.size()));
    c.release(s);
    return c.persist();
}

size_t loaded(const CacheConfig& cfg, const std::string& dir, const std::vector<int32_t>& doc, uint64_t* corrupt = nullptr) {
    Cache c(cfg);
    c.add_tier(make_disk_tier(DiskTierOptions{dir, 0}));
    const size_t n = c.fetch_from_tiers({}, doc.data(), int64_t(doc.size())).loaded_from.size();
    if (corrupt) *corrupt = c.tier_reports().at(0).corrupt;
    c.check_invariants();
    return n;
}

std::vector<fs::path> entries(const std::string& dir) {
    std::vector<fs::path> v;
    for (const auto& e : fs::directory_iterator(dir))
        if (e.path().extension() == ".kvb") v.push_back(e.path());
    return v;
}

std::vector<uint8_t> slurp(const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

// Rewrites the entry at p with the f16 scale at payload offset `at` set to bits, re-framed with a
// valid envelope (a writer that framed bad rows, not a torn file): only the scale check can catch it.
void set_scale(const fs::path& p, size_t at, uint16_t bits) {
    std::vector<uint8_t> f = slurp(p);
    REQUIRE(f.size() > kTierEnvelopeOverhead);
    TierKey key;
    std::memcpy(&key.block.lo, f.data() + 16, 8);
    std::memcpy(&key.block.hi, f.data() + 24, 8);
    std::memcpy(&key.layout.lo, f.data() + 32, 8);
    std::memcpy(&key.layout.hi, f.data() + 40, 8);
    const uint8_t* payload = nullptr;
    size_t pn = 0;
    REQUIRE(tier_unframe(key, f.data(), f.size(), &payload, &pn, nullptr));
    std::vector<uint8_t> body(payload, payload + pn);
    REQUIRE(at + 2 <= body.size());
    std::memcpy(body.data() + at, &bits, 2);
    const std::vector<uint8_t> out = tier_frame(key, body.data(), body.size());
    std::ofstream(p, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(out.data()), std::streamsize(out.size()));
}

}  // namespace

TEST_CASE("tier key: the V rows' type is part of the layout hash, and one type spelled twice is one type") {
    const Hash128 f16 = tier_layout_hash(resolve_layout(config(DType::F16, std::nullopt)));
    const Hash128 f16_explicit = tier_layout_hash(resolve_layout(config(DType::F16, DType::F16)));
    const Hash128 v_bf16 = tier_layout_hash(resolve_layout(config(DType::F16, DType::BF16)));
    const Hash128 v_i8 = tier_layout_hash(resolve_layout(config(DType::F16, DType::I8)));
    const Hash128 v_fp8 = tier_layout_hash(resolve_layout(config(DType::F16, DType::FP8_E4M3)));
    const Hash128 k_i8 = tier_layout_hash(resolve_layout(config(DType::I8, DType::F16)));
    CHECK(f16 == f16_explicit);
    CHECK_FALSE(f16 == v_bf16);
    CHECK_FALSE(f16 == v_i8);
    CHECK_FALSE(v_i8 == v_fp8);
    CHECK_FALSE(v_i8 == k_i8);  // K int8 + V f16 is not K f16 + V int8
}

TEST_CASE("cache tiers: a block set of another V type is never loaded, even one of the same byte size") {
    const std::string dir = temp_dir("vtype");
    const auto doc = iota_tokens(33, 100);  // 8 full blocks + 1 token
    const CacheConfig f16 = config(DType::F16, std::nullopt);
    REQUIRE(write_doc(f16, dir, doc) == 8);
    // bf16 V rows have f16's size: before the V type was in the key these loaded as garbage.
    REQUIRE(resolve_layout(config(DType::F16, DType::BF16)).managers[0].block_bytes ==
            resolve_layout(f16).managers[0].block_bytes);
    uint64_t corrupt = 0;
    CHECK(loaded(config(DType::F16, DType::BF16), dir, doc, &corrupt) == 0);
    CHECK(corrupt == 0);  // another key: a plain miss, nothing removed
    CHECK(loaded(config(DType::F16, DType::I8), dir, doc) == 0);
    CHECK(loaded(config(DType::F16, DType::FP8_E4M3), dir, doc) == 0);
    CHECK(entries(dir).size() == 8);
    CHECK(loaded(f16, dir, doc) == 8);  // the writer's own types still hit

    // And the other way: sets written with int8 V are hits only for int8 V.
    const std::string dir2 = temp_dir("vtype2");
    REQUIRE(write_doc(config(DType::F16, DType::I8), dir2, doc) == 8);
    CHECK(loaded(f16, dir2, doc) == 0);
    CHECK(loaded(config(DType::F16, DType::FP8_E4M3), dir2, doc) == 0);
    CHECK(loaded(config(DType::F16, DType::I8), dir2, doc) == 8);
    fs::remove_all(dir);
    fs::remove_all(dir2);
}

TEST_CASE("cache tiers: int8 and fp8 rows with a non-finite scale are refused, counted corrupt and removed") {
    const auto doc = iota_tokens(33, 100);
    for (DType vt : {DType::I8, DType::FP8_E4M3}) {
        for (uint16_t bits : {uint16_t(0x7c00) /* +inf */, uint16_t(0x7e00) /* NaN */, uint16_t(0xfc00) /* -inf */}) {
            CAPTURE(dtype_name(vt));
            CAPTURE(bits);
            const std::string dir = temp_dir("scales");
            const CacheConfig cfg = config(DType::F16, vt);
            REQUIRE(write_doc(cfg, dir, doc) == 8);
            REQUIRE(loaded(cfg, dir, doc) == 8);  // finite scales: every set loads
            // Payload: u32 managers | u32 present | u64 bytes | the block. Layer 1's V region,
            // row 2, head 1: its last scale.
            const ResolvedLayout l = resolve_layout(cfg);
            const LayerGeometry& g = l.geometry[1];
            const size_t hb = kv_head_bytes(vt, g.head_dim);
            const size_t n_scales = size_t(g.head_dim / kv_scale_group(vt, g.head_dim));
            const size_t at = 16 + g.v_offset + 2 * g.v_row_bytes + hb + size_t(g.head_dim) + 2 * (n_scales - 1);
            const std::vector<fs::path> es = entries(dir);
            REQUIRE(es.size() == 8);
            for (const fs::path& e : es) set_scale(e, at, bits);
            uint64_t corrupt = 0;
            CHECK(loaded(cfg, dir, doc, &corrupt) == 0);  // block 0 is refused: nothing after it loads
            CHECK(corrupt == 1);
            CHECK(entries(dir).size() == 7);  // the refused entry is gone
            fs::remove_all(dir);
        }
    }
}

TEST_CASE("cache tiers: a K scale that is not finite is refused as well") {
    const auto doc = iota_tokens(33, 100);
    const std::string dir = temp_dir("kscale");
    const CacheConfig cfg = config(DType::I8, DType::F16);
    REQUIRE(write_doc(cfg, dir, doc) == 8);
    const ResolvedLayout l = resolve_layout(cfg);
    const LayerGeometry& g = l.geometry[0];
    const size_t at = 16 + g.k_offset + size_t(g.head_dim);  // row 0, head 0, first scale
    for (const fs::path& e : entries(dir)) set_scale(e, at, 0x7c01);
    uint64_t corrupt = 0;
    CHECK(loaded(cfg, dir, doc, &corrupt) == 0);
    CHECK(corrupt == 1);
    fs::remove_all(dir);
}
