// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// 4-bit KV rows (util/kv_quant.hpp: e2m1 codes, an f16 scale per 32 on CED bank rows, an e8m0
// scale per 32 on indexer keys): the row format and its quantiser against brute force, the
// sparse attention and indexer kernels against their ref twins on every ISA path (sparse
// attention bit for bit against f32 rows holding the decoded values; the indexer's integer scan
// bit for bit against its definition computed here), the layout's refusals, and the scale
// checks of state files.
#include "cache/layout.hpp"
#include "cache/quant_scale_check.hpp"
#include "kernel_fixtures.hpp"
#include "kernels/attention.hpp"
#include "kernels/indexer.hpp"
#include "kernels/query_quant.hpp"
#include "kernels/onednn/sparse_attention.hpp"
#include "util/error.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <string>

using namespace kvrt;
using kvrt::test::TestKV;

namespace {

// e2m1 from its definition (sign, exponent bias 1, one mantissa bit; exponent 0: subnormal).
double e2m1_value(int code) {
    const int s = code >> 3, e = (code >> 1) & 3, m = code & 1;
    const double mag = e == 0 ? 0.5 * m : (1.0 + 0.5 * m) * std::ldexp(1.0, e - 1);
    return s ? -mag : mag;
}

double scale_of(const uint8_t* head, DType t, int32_t d, int32_t gi) { return kv_scale_i(head, t, d, gi); }

// Brute force: the e2m1 code whose value * s is nearest to x, ties to the even code (mantissa
// bit 0), magnitudes above 6 s saturating; +0 for a zero magnitude.
int nearest_code(float x, double s) {
    const double ax = std::fabs(double(x));
    int best = 0;
    double bd = std::numeric_limits<double>::infinity();
    for (int c = 0; c < 8; ++c) {
        const double dd = std::fabs(ax - e2m1_value(c) * s);
        if (dd < bd || (dd == bd && (c & 1) == 0)) {
            bd = dd;
            best = c;
        }
    }
    return best != 0 && x < 0 ? best | 8 : best;
}

using test::pick_rows;

// The indexer's score of a 4-bit key by its definition (indexer_core.inl, "Integer tiles"), in
// scalar f32 with the kernels' order of operations: each head's query quantised per 32 dims,
// dot_h = ((0 + f32(idot_0) * (qs_0 * hs_0)) + ...) with hs the key's half scale, then
// acc = fma(w_h, ReLU(dot_h), acc) over the heads in order (fused: the SIMD paths; the scalar
// path's fma is a product and a sum, as everywhere in its kernels).
float fp4_index_score(const IndexerQuery& iq, const uint8_t* k, DType dt, int32_t d, bool fused) {
    std::vector<int8_t> qi(static_cast<size_t>(d));
    std::vector<float> qs(static_cast<size_t>(d / 32));
    float acc = 0.0f;
    for (int32_t h = 0; h < iq.n_heads; ++h) {
        quantize_query_i8(iq.q + size_t(h) * d, d, qi.data(), qs.data());
        float s = 0.0f;
        for (int32_t g = 0; g < d / 32; ++g) {
            int32_t idot = 0;
            for (int32_t c = 32 * g; c < 32 * g + 32; ++c) idot += int32_t(qi[size_t(c)]) * kFp4Twice[fp4_code_at(k, c)];
            const float hs = 0.5f * kv_scale_at(k, dt, d, 32 * g);
            s = s + float(idot) * (qs[size_t(g)] * hs);
        }
        const float relu = s > 0.0f ? s : 0.0f;
        acc = fused ? std::fma(iq.w[h], relu, acc) : iq.w[h] * relu + acc;
    }
    return acc;
}

// An f32 copy of a one-head 4-bit TestKV: the same positions, each row the decoded values.
TestKV f32_twin(const TestKV& q, int32_t n, int32_t d) {
    TestKV f(n, 1, d, DType::F32, q.kv.block_tokens, 1, true);
    for (int32_t pos = 0; pos < n; ++pos) {
        float* row = reinterpret_cast<float*>(const_cast<uint8_t*>(f.kv.k_row(pos)));
        for (int32_t c = 0; c < d; ++c) row[c] = kv_load(q.kv.k_row(pos), q.kv.dtype, d, c);
    }
    return f;
}

}  // namespace

TEST_CASE("kv fp4: the row format: sizes, the e2m1 grid, round to nearest even, smallest scale") {
    CHECK(kv_head_bytes(DType::FP4, 512) == 288);     // CED.md: a 512-wide bank row
    CHECK(kv_head_bytes(DType::FP4_E8, 128) == 68);   // a 128-wide indexer key
    CHECK(kv_head_bytes(DType::FP4, 64) == 36);
    CHECK(kv_scale_group(DType::FP4, 512) == 32);
    CHECK_FALSE(kv_head_dim_ok(DType::FP4, 48));
    CHECK_FALSE(kv_head_dim_ok(DType::FP4_E8, 16));
    for (int c = 0; c < 16; ++c) CHECK(double(fp4_e2m1_to_f32(uint8_t(c))) == e2m1_value(c));

    std::mt19937 rng(5);
    for (DType t : {DType::FP4, DType::FP4_E8}) {
        CAPTURE(std::string(dtype_name(t)));
        const int32_t d = 128;
        std::vector<uint8_t> head(kv_head_bytes(t, d));
        for (int trial = 0; trial < 200; ++trial) {
            // Groups of very different magnitudes, with exact grid midpoints mixed in.
            std::vector<float> x(d);
            const float mag = std::ldexp(1.0f, int(rng() % 36) - 20);  // below f16 scale saturation (2^18.6)
            std::uniform_real_distribution<float> u(-mag, mag);
            for (auto& v : x) v = u(rng);
            if (trial % 3 == 0) x[5] = 0.0f;
            kv_store_head(head.data(), x.data(), t, d);
            for (int32_t gi = 0; gi < d / 32; ++gi) {
                float amax = 0;
                for (int32_t i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[gi * 32 + i]));
                const double s = scale_of(head.data(), t, d, gi);
                // The smallest scale of its kind that leaves no element above 6 s.
                CHECK(6.0 * s >= amax);
                if (t == DType::FP4) {
                    uint16_t h;
                    std::memcpy(&h, head.data() + d / 2 + 2 * gi, 2);
                    CHECK(6.0 * f16_to_f32(uint16_t(h - 1)) < amax);
                } else {
                    CHECK(6.0 * s / 2 < amax);
                }
                for (int32_t i = 0; i < 32; ++i) {
                    const int32_t c = gi * 32 + i;
                    const int code = fp4_code_at(head.data(), c);
                    CHECK(code == nearest_code(x[c], s));
                    CHECK(double(kv_load(head.data(), t, d, c)) == e2m1_value(code) * s);
                }
            }
            // Columns written group by group are the same bytes.
            std::vector<uint8_t> cols(head.size(), 0xAB);
            kv_store_cols(cols.data(), x.data(), 0, 64, t, d);
            kv_store_cols(cols.data(), x.data() + 64, 64, 64, t, d);
            CHECK(cols == head);
        }
        // Ties: with amax 6 the scale is exactly 1 (f16) or 1 (2^0) and the midpoints round to
        // the even code: 0.25 -> 0, 0.75 -> 1, 1.25 -> 1, 1.75 -> 2, 2.5 -> 2, 3.5 -> 4, 5 -> 4.
        std::vector<float> g(d, 0.0f);
        const float mids[] = {6.0f, 0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, -5.0f, -0.25f};
        const float want[] = {6.0f, 0.0f, 1.0f, 1.0f, 2.0f, 2.0f, 4.0f, 4.0f, -4.0f, 0.0f};
        for (size_t i = 0; i < std::size(mids); ++i) g[i] = mids[i];
        kv_store_head(head.data(), g.data(), t, d);
        CHECK(scale_of(head.data(), t, d, 0) == 1.0);
        for (size_t i = 0; i < std::size(mids); ++i) {
            CAPTURE(mids[i]);
            CHECK(kv_load(head.data(), t, d, int32_t(i)) == want[i]);
        }
        CHECK(fp4_code_at(head.data(), 9) == 0);  // -0.25 rounds to +0, not -0
        // A zero group: every element 0.
        CHECK(kv_load(head.data(), t, d, 40) == 0.0f);
        // NaN or inf in a group: its scale is NaN (refused in state files), the others untouched.
        for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
            std::vector<float> y(d, 3.0f);  // amax 3: scale 0.5 exactly in both formats
            y[70] = bad;
            kv_store_head(head.data(), y.data(), t, d);
            CHECK(std::isnan(scale_of(head.data(), t, d, 2)));
            CHECK(std::isnan(kv_load(head.data(), t, d, 64)));
            CHECK(kv_load(head.data(), t, d, 0) == 3.0f);
        }
        // Beyond the largest scale: saturates (f16 65504; e8m0 2^125), never inf.
        std::vector<float> big(d, 1.0f);
        big[1] = t == DType::FP4 ? 1e7f : 3e38f;
        big[2] = -big[1];
        kv_store_head(head.data(), big.data(), t, d);
        const double smax = t == DType::FP4 ? 65504.0 : std::ldexp(1.0, 125);
        CHECK(scale_of(head.data(), t, d, 0) == smax);
        CHECK(double(kv_load(head.data(), t, d, 1)) == 6.0 * smax);
        CHECK(double(kv_load(head.data(), t, d, 2)) == -6.0 * smax);
    }
}

TEST_CASE("kv fp4: sparse attention over 4-bit banks matches ref on every ISA path, bit for bit the f32 rows") {
    for (Isa isa : test::available_isas()) {
        test::IsaScope scope(isa);
        for (int32_t D : {512, 64}) {
            CAPTURE(std::string(isa_name(isa)));
            CAPTURE(D);
            const int32_t H = D == 512 ? 8 : 9, n_bank = 700;
            TestKV bank(n_bank, 1, D, DType::FP4, 64, 1700 + D, /*kv_shared=*/true);
            const TestKV twin = f32_twin(bank, n_bank, D);
            AttnParams p;
            p.n_heads = H;
            p.head_dim = D;
            p.scale = 1.0f / std::sqrt(float(D));
            auto sinks = test::random_vec(H, 1701, -1.0f, 1.0f);
            p.sinks = sinks.data();
            for (int32_t n_sel : {1, 45, 600}) {
                CAPTURE(n_sel);
                auto rows = pick_rows(n_bank, n_sel, 1702 + n_sel);
                auto q = test::random_vec(size_t(H) * D, 1703 + n_sel);
                std::vector<float> o_ref(q.size()), l_ref(H);
                SparseQuery sq{q.data(), rows.data(), int32_t(rows.size()), o_ref.data(), l_ref.data()};
                ref::attention_sparse(bank.kv, p, &sq, 1);
                // Each path (the hand kernel; oneDNN's GEMMs, which AVX2 takes for 4-bit banks as
                // for f32 ones) against ref, and bit for bit what it gives f32 rows holding the
                // decoded values.
                for (onednn::Mode mode : {onednn::Mode::Off, onednn::Mode::On}) {
                    CAPTURE(std::string(onednn::onednn_mode_name(mode)));
                    const onednn::Mode prev = onednn::onednn_set_mode(mode);
                    std::vector<float> o_cpu(q.size()), o_f32(q.size()), l_cpu(H), l_f32(H);
                    SparseQuery a{q.data(), rows.data(), int32_t(rows.size()), o_cpu.data(), l_cpu.data()};
                    cpu::attention_sparse(bank.kv, p, &a, 1);
                    SparseQuery b{q.data(), rows.data(), int32_t(rows.size()), o_f32.data(), l_f32.data()};
                    cpu::attention_sparse(twin.kv, p, &b, 1);
                    onednn::onednn_set_mode(prev);
                    CHECK(test::max_abs_diff(o_ref, o_cpu) < 2e-5f);
                    CHECK(test::max_abs_diff(l_ref, l_cpu) < 2e-5f);
                    CHECK(test::bit_equal(o_cpu, o_f32));
                    CHECK(test::bit_equal(l_cpu, l_f32));
                }
            }
            // A batch of queries == each alone, bit for bit.
            auto q = test::random_vec(size_t(2) * H * D, 1790);
            auto r0 = pick_rows(n_bank, 300, 1791), r1 = pick_rows(n_bank, 77, 1792);
            std::vector<float> out(q.size()), lse(2 * H), one(size_t(H) * D), lone(H);
            SparseQuery qs[2] = {{q.data(), r0.data(), int32_t(r0.size()), out.data(), lse.data()},
                                 {q.data() + size_t(H) * D, r1.data(), int32_t(r1.size()), out.data() + size_t(H) * D,
                                  lse.data() + H}};
            cpu::attention_sparse(bank.kv, p, qs, 2);
            SparseQuery alone = qs[1];
            alone.out = one.data();
            alone.lse = lone.data();
            cpu::attention_sparse(bank.kv, p, &alone, 1);
            CHECK(std::memcmp(one.data(), out.data() + size_t(H) * D, one.size() * 4) == 0);
        }
    }
}

TEST_CASE("kv fp4: the indexer scan over 4-bit keys matches ref, per-query == batch == its integer definition, bit for bit") {
    for (Isa isa : test::available_isas()) {
        test::IsaScope scope(isa);
        for (int32_t n : {1, 33, 700})
        for (DType dt : {DType::FP4_E8, DType::FP4})  // (indexer keys have e8m0 scales; f16 ones score alike)
        for (int shape = 0; shape < 3; ++shape) {  // the public 32 heads of 128; 5 of 64 (a partial row block); 3 of 256
            CAPTURE(std::string(isa_name(isa)));
            CAPTURE(n);
            CAPTURE(std::string(dtype_name(dt)));
            CAPTURE(shape);
            const int32_t Hi = shape == 0 ? 32 : shape == 1 ? 5 : 3, Di = shape == 0 ? 128 : shape == 1 ? 64 : 256;
            TestKV keys(n, 1, Di, dt, 64, 1900 + n, true);
            const TestKV twin = f32_twin(keys, n, Di);
            auto q = test::random_vec(size_t(3) * Hi * Di, 1901);
            auto w = test::random_vec(size_t(3) * Hi, 1902, 0.0f, 1.0f);
            IndexerQuery iq{q.data(), w.data(), Hi};
            std::vector<float> s_ref(n), s_cpu(n), s_def(n), s_f32(n);
            ref::indexer_scores(keys.kv, iq, n, s_ref.data());
            cpu::indexer_scores(keys.kv, iq, n, s_cpu.data());
            CHECK(test::max_abs_diff(s_ref, s_cpu) < 1e-3f);  // f32 accumulation (see test_kernels_sparse.cpp)
            for (int32_t i = 0; i < n; ++i) s_def[size_t(i)] = fp4_index_score(iq, keys.kv.k_row(i), dt, Di, isa != Isa::Scalar);
            CHECK(test::bit_equal(s_cpu, s_def));
            // The int8 query moves the scores from the f32 scan of the decoded values (the f32
            // rows' path) by little: 2^-8 of a group's largest |q| per dim at most.
            cpu::indexer_scores(twin.kv, iq, n, s_f32.data());
            double worst = 0, scale = 0;
            for (int32_t i = 0; i < n; ++i) {
                worst = std::max(worst, std::fabs(double(s_cpu[size_t(i)]) - s_f32[size_t(i)]));
                scale = std::max(scale, std::fabs(double(s_f32[size_t(i)])));
            }
            CHECK(worst <= 0.01 * scale + 1e-6);
            if (n > 1) CHECK_FALSE(test::bit_equal(s_cpu, s_f32));  // (the integer path ran: some score differs)
            auto rows = pick_rows(n, 20, 1903);
            std::vector<float> r_cpu(rows.size());
            cpu::indexer_scores_rows(keys.kv, iq, rows.data(), int32_t(rows.size()), r_cpu.data());
            for (size_t i = 0; i < rows.size(); ++i) CHECK(r_cpu[i] == s_cpu[rows[i]]);
            // A batch of three queries seeing different prefixes == each query alone.
            IndexerQuery b[3];
            for (int i = 0; i < 3; ++i) b[i] = {q.data() + size_t(i) * Hi * Di, w.data() + size_t(i) * Hi, Hi};
            const int32_t nv[3] = {n, std::max(1, n / 2), 1};
            std::vector<float> batch(size_t(3) * n, -7.0f);
            cpu::indexer_scores_batch(keys.kv, b, nv, 3, batch.data(), size_t(n));
            for (int i = 0; i < 3; ++i) {
                std::vector<float> alone(nv[i]);
                cpu::indexer_scores(keys.kv, b[i], nv[i], alone.data());
                CHECK(std::memcmp(alone.data(), batch.data() + size_t(i) * n, alone.size() * 4) == 0);
            }
        }
    }
}

TEST_CASE("kv fp4: refused where it cannot be read, with a message") {
    // Dense attention over a 4-bit PagedKV: refused by the argument checks.
    TestKV kv(40, 1, 64, DType::FP4, 16, 3, true);
    AttnParams p;
    p.n_heads = 1;
    p.head_dim = 64;
    p.scale = 0.125f;
    auto q = test::random_vec(64, 4);
    std::vector<float> out(64), lse(1);
    try {
        cpu::attention_prefill(kv.kv, p, q.data(), 1, 39, out.data(), lse.data());
        FAIL("a 4-bit PagedKV reached dense attention");
    } catch (const Error& e) {
        CHECK(e.status() == KVRT_ERR_INVALID_ARGUMENT);
        CHECK(std::string(e.what()).find("4-bit") != std::string::npos);
    }
    // Layouts: fp4 on a full or window layer, a width the group does not divide.
    auto layout_status = [](cache::LayerKind kind, DType t, int32_t head_dim, std::string* msg) {
        cache::CacheConfig c;
        c.block_tokens = 16;
        c.budget_bytes = 1 << 20;
        cache::LayerSpec b;
        b.kind = cache::LayerKind::BankSource;
        b.n_kv_heads = 1;
        b.head_dim = 64;
        b.dtype = DType::F16;
        b.ratio = 2;
        if (kind == cache::LayerKind::BankSource) {
            b.dtype = t;
            b.head_dim = head_dim;
        }
        c.layers.push_back(b);
        if (kind != cache::LayerKind::BankSource) {
            cache::LayerSpec s;
            s.kind = kind;
            s.n_kv_heads = 1;
            s.head_dim = head_dim;
            s.dtype = t;
            s.window = 8;
            s.source = 0;
            c.layers.push_back(s);
        }
        try {
            const cache::ResolvedLayout l = cache::resolve_layout(c);
            if (msg) *msg = std::to_string(l.geometry.back().row_bytes) + " " + dtype_name(l.geometry.back().dtype);
            return KVRT_OK;
        } catch (const Error& e) {
            if (msg) *msg = e.what();
            return e.status();
        }
    };
    std::string msg;
    CHECK(layout_status(cache::LayerKind::Full, DType::FP4, 64, &msg) == KVRT_ERR_UNSUPPORTED);
    CHECK(msg.find("fp4") != std::string::npos);
    CHECK(layout_status(cache::LayerKind::Window, DType::FP4, 64, &msg) == KVRT_ERR_UNSUPPORTED);
    CHECK(layout_status(cache::LayerKind::BankSource, DType::FP4, 48, &msg) == KVRT_ERR_INVALID_ARGUMENT);
    CHECK(msg.find("multiple of") != std::string::npos);
    CHECK(layout_status(cache::LayerKind::IndexerKeys, DType::FP4, 16, &msg) == KVRT_ERR_INVALID_ARGUMENT);
    CHECK(layout_status(cache::LayerKind::IndexerKeys, DType::I8, 64, &msg) == KVRT_ERR_UNSUPPORTED);
    // Accepted: bank rows keep f16 scales, indexer keys e8m0 ones.
    CHECK(layout_status(cache::LayerKind::BankSource, DType::FP4, 512, &msg) == KVRT_OK);
    CHECK(msg == "288 fp4");
    CHECK(layout_status(cache::LayerKind::IndexerKeys, DType::FP4, 128, &msg) == KVRT_OK);
    CHECK(msg == "68 fp4-e8m0");
}

TEST_CASE("kv fp4: a block with a NaN scale is refused, naming the layer and the scale") {
    cache::CacheConfig c;
    c.block_tokens = 4;
    c.budget_bytes = 1 << 20;
    cache::LayerSpec b;
    b.kind = cache::LayerKind::BankSource;
    b.n_kv_heads = 1;
    b.head_dim = 64;
    b.dtype = DType::FP4;
    b.ratio = 1;
    c.layers.push_back(b);
    cache::LayerSpec k;
    k.kind = cache::LayerKind::IndexerKeys;
    k.n_kv_heads = 1;
    k.head_dim = 32;
    k.dtype = DType::FP4;
    k.source = 0;
    c.layers.push_back(k);
    const cache::ResolvedLayout l = cache::resolve_layout(c);
    auto rows = test::random_vec(64, 8);
    for (int layer : {0, 1}) {
        const cache::LayerGeometry& g = l.geometry[layer];
        std::vector<uint8_t> block(l.managers[g.manager].block_bytes, 0);
        for (int r = 0; r < 4; ++r)
            kv_store_head(block.data() + g.k_offset + r * g.row_bytes, rows.data(), g.dtype, g.head_dim);
        CHECK_NOTHROW(cache::check_quant_scales(l, g.manager, block.data(), "test"));
        std::vector<uint8_t> bad = block;
        uint8_t* sc = bad.data() + g.k_offset + 2 * g.row_bytes + kv_elem_bytes(g.dtype, g.head_dim);
        if (layer == 0) {
            const uint16_t inf = 0x7c00;
            std::memcpy(sc + 2, &inf, 2);
        } else {
            sc[0] = 0xff;  // e8m0 NaN
        }
        try {
            cache::check_quant_scales(l, g.manager, bad.data(), "test");
            FAIL("a non-finite scale passed");
        } catch (const Error& e) {
            CHECK(e.status() == KVRT_ERR_BAD_FORMAT);
            const std::string m = e.what();
            CHECK(m.find("layer " + std::to_string(layer)) != std::string::npos);
            CHECK(m.find(layer == 0 ? "infinite fp4 scale" : "NaN fp4-e8m0 scale") != std::string::npos);
        }
    }
}

TEST_CASE("kv fp4: the indexer scan reads no byte past a 4-bit key's head (keys at the end of their allocation)") {
    // One block whose memory ends with its last key's head, in its own heap allocation, so that
    // AddressSanitizer sees any vector load that runs past the codes and scales.
    for (Isa isa : test::available_isas()) {
        test::IsaScope scope(isa);
        for (int32_t d : {64, 128, 256}) {
            CAPTURE(std::string(isa_name(isa)));
            CAPTURE(d);
            const int32_t n = 16, H = 3;
            const size_t rb = kv_head_bytes(DType::FP4_E8, d);
            std::vector<uint8_t> block(size_t(n) * rb);
            auto x = test::random_vec(size_t(n) * d, 2100 + d);
            for (int32_t i = 0; i < n; ++i) kv_store_head(block.data() + size_t(i) * rb, x.data() + size_t(i) * d, DType::FP4_E8, d);
            const uint8_t* blocks[1] = {block.data()};
            PagedKV kv;
            kv.blocks = blocks;
            kv.n_blocks = 1;
            kv.block_tokens = n;
            kv.row_bytes = rb;
            kv.n_kv_heads = 1;
            kv.head_dim = d;
            kv.dtype = DType::FP4_E8;
            kv.n_tokens = n;
            auto q = test::random_vec(size_t(H) * d, 2101);
            auto w = test::random_vec(size_t(H), 2102, 0.0f, 1.0f);
            const IndexerQuery iq{q.data(), w.data(), H};
            std::vector<float> s_ref(n), s_cpu(n);
            ref::indexer_scores(kv, iq, n, s_ref.data());
            cpu::indexer_scores(kv, iq, n, s_cpu.data());
            CHECK(test::max_abs_diff(s_ref, s_cpu) < 1e-3f);
            for (int32_t i = 0; i < n; ++i)
                CHECK(s_cpu[size_t(i)] == fp4_index_score(iq, block.data() + size_t(i) * rb, DType::FP4_E8, d, isa != Isa::Scalar));
        }
    }
}

TEST_CASE("kv fp4: every e8m0 scale byte (0 and 1: denormals, 255: NaN) scores as its definition on every ISA path") {
    // The vector paths build half scales from the exponent bits (fp4_e8_half_scales); the scalar
    // path and the definition (fp4_index_score) from fp4_half_scale and the format's decoder.
    for (Isa isa : test::available_isas()) {
        test::IsaScope scope(isa);
        for (int32_t d : {64, 128, 192, 256}) {
            CAPTURE(std::string(isa_name(isa)));
            CAPTURE(d);
            // Key i's groups all get byte i (a tiny scale beside a large one would vanish in the
            // score's sum), the last keys a partial tile; keys past 256 mix bytes across groups.
            const int32_t ng = d / 32, n = 256 + 7 + 16;
            TestKV keys(n, 1, d, DType::FP4_E8, 16, 2200 + d, true);
            for (int32_t i = 0; i < n; ++i) {
                uint8_t* sc = const_cast<uint8_t*>(keys.kv.k_row(i)) + d / 2;
                for (int32_t g = 0; g < ng; ++g) sc[g] = static_cast<uint8_t>(i < 256 ? i : (i * ng + g) * 37 % 256);
            }
            const int32_t H = 3;
            auto q = test::random_vec(size_t(H) * d, 2201);
            auto w = test::random_vec(size_t(H), 2202, 0.0f, 1.0f);
            const IndexerQuery iq{q.data(), w.data(), H};
            std::vector<float> s_cpu(n), s_def(n);
            cpu::indexer_scores(keys.kv, iq, n, s_cpu.data());
            for (int32_t i = 0; i < n; ++i) s_def[size_t(i)] = fp4_index_score(iq, keys.kv.k_row(i), DType::FP4_E8, d, isa != Isa::Scalar);
            CHECK(test::bit_equal(s_cpu, s_def));
        }
    }
}
