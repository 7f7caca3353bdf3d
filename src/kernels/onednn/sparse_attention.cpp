// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Sparse K = V attention by oneDNN GEMMs on gathered tiles (see sparse_attention.hpp).
#include "kernels/onednn/sparse_attention.hpp"

#include "kernels/onednn/onednn_isa.hpp"

#include "util/dtype.hpp"
#include "util/error.hpp"
#include "util/isa.hpp"
#include "util/kv_quant.hpp"

#include <oneapi/dnnl/dnnl.h>
#include <omp.h>

#include <immintrin.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <string>
#include <vector>

namespace kvrt::onednn {

namespace {

std::atomic<int> g_mode{-1};  // -1: not set (environment / Auto)

Mode env_mode() {
    static const Mode m = [] {
        const char* e = std::getenv("KVRT_ONEDNN");
        if (!e) return Mode::Auto;
        if (!std::strcmp(e, "on") || !std::strcmp(e, "1")) return Mode::On;
        if (!std::strcmp(e, "off") || !std::strcmp(e, "0")) return Mode::Off;
        return Mode::Auto;
    }();
    return m;
}

// Per-thread f32 buffers of this file (64-byte aligned, grown on demand).
struct Buf {
    float* p = nullptr;
    size_t n = 0;
    ~Buf() { std::free(p); }
    float* get(size_t need) {
        if (n < need) {
            std::free(p);
            n = 0;
            p = static_cast<float*>(std::aligned_alloc(64, ((need * sizeof(float) + 63) / 64) * 64));
            if (p) n = need;
        }
        return p;
    }
};

}  // namespace

Mode onednn_mode() noexcept {
    const int m = g_mode.load(std::memory_order_relaxed);
    return m < 0 ? env_mode() : static_cast<Mode>(m);
}

Mode onednn_set_mode(Mode m) noexcept {
    const Mode prev = onednn_mode();
    g_mode.store(static_cast<int>(m), std::memory_order_relaxed);
    return prev;
}

const char* onednn_mode_name(Mode m) noexcept {
    switch (m) {
        case Mode::Auto: return "auto";
        case Mode::Off: return "off";
        case Mode::On: return "on";
    }
    return "?";
}

bool sparse_attention_supported(const PagedKV& bank, const AttnParams& p) noexcept {
    if (isa_active() < Isa::Avx2) return false;
    return bank.dtype == DType::F32 || bank.dtype == DType::BF16 || bank.dtype == DType::F16 ||
           (bank.dtype == DType::FP4 && p.head_dim % 32 == 0);
}

bool sparse_attention_use_onednn(const PagedKV& bank, const AttnParams& p) noexcept {
    const Mode m = onednn_mode();
    if (m == Mode::Off || !sparse_attention_supported(bank, p)) return false;
    if (m == Mode::On) return true;
    // Auto: where bench_onednn_sparse measured oneDNN ahead (README.md in this folder). A function
    // of the model's shape alone (never of the batch or the selection), so that every call of a
    // model takes the same path and chunking / decode cannot change the bits.
    // Measured ahead: the AVX2 levels (Zen 3: 1.2-2.0x) and the amx level (a Sapphire-Rapids-class
    // Xeon: 1.13-1.52x, f32 / f16 / bf16 banks). The AVX-512 levels without AMX keep the hand
    // kernel (Zen 5: oneDNN 0.66-1.04x against its bf16 dot products; Zen 4: 0.44-1.03x).
    const Isa isa = isa_active();
    return (isa == Isa::Avx2 || isa == Isa::AvxVnni || isa == Isa::Amx) && int64_t(p.n_heads) * p.head_dim >= 1024;
}

// ---------------------------------------------------------------------------------------------
// Gather, softmax and fold: AVX2 code (the path is only taken at isa_active() >= Avx2). No
// standard-library templates inside the target region (they could be shared as COMDATs with
// baseline code).

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#pragma GCC optimize("fp-contract=off")

namespace avx2 {
#include "kernels/cpu/simd_avx2.hpp"

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;
using V = Ops::V;

#include "kernels/cpu/fp4_decode_avx2.hpp"

// G[j][0..d) = bank row rows[j] as f32 (exact conversions; 4-bit rows decoded as kv_load does), j < n.
void gather(const PagedKV& bank, const int32_t* rows, int n, int d, float* g) {
    const size_t bytes = kv_head_bytes(bank.dtype, d);
    for (int j = 0; j < n; ++j) {
        if (j + 4 < n) {
            const uint8_t* nx = bank.k_row(rows[j + 4]);
            for (size_t o = 0; o < bytes; o += 64) _mm_prefetch(reinterpret_cast<const char*>(nx + o), _MM_HINT_T0);
        }
        const uint8_t* r = bank.k_row(rows[j]);
        float* out = g + size_t(j) * d;
        if (bank.dtype == DType::FP4) {  // codes, then one f16 scale per 32 (bank rows)
            for (int gi = 0; gi < d / 32; ++gi) {
                uint16_t h;
                std::memcpy(&h, r + d / 2 + 2 * gi, 2);
                fp4_decode32_avx2(r + gi * 16, Ops::h2f(h) * 0.5f, out + gi * 32);
            }
        } else {
            Ops::cvt_row(r, bank.dtype, d, out);
        }
    }
}

void prescale(const float* q, size_t n, float s, float* out) {
    for (size_t c = 0; c < n; ++c) out[c] = q[c] * s;
}

// Online-softmax step of one tile for H rows: s[h][0..n) (ld lds) becomes exp2(s - m_new), the
// row's (m, l) are updated and its o[h][0..d) (ld ldo) rescaled by exp2(m_old - m_new).
void softmax_tile(float* s, int lds, int H, int n, float* m, float* l, float* o, int ldo, int d) {
    for (int h = 0; h < H; ++h) {
        float* r = s + size_t(h) * lds;
        int j = 0;
        float mt = kNegInf;
        if (n >= Ops::W) {
            V vm = Ops::load(r);
            for (j = Ops::W; j + Ops::W <= n; j += Ops::W) vm = Ops::max(vm, Ops::load(r + j));
            mt = Ops::hmax(vm);
        }
        for (; j < n; ++j) mt = r[j] > mt ? r[j] : mt;
        const float mo = m[h];
        const float mn = mo > mt ? mo : mt;
        const V vmn = Ops::set1(mn);
        V vs = Ops::zero();
        j = 0;
        for (; j + Ops::W <= n; j += Ops::W) {
            const V e = Ops::exp2(Ops::sub(Ops::load(r + j), vmn));
            Ops::store(r + j, e);
            vs = Ops::add(vs, e);
        }
        float sum = Ops::hsum(vs);
        for (; j < n; ++j) {
            r[j] = Ops::exp2s(r[j] - mn);
            sum += r[j];
        }
        float* orow = o + size_t(h) * ldo;
        if (mo == kNegInf) {
            l[h] = sum;
        } else {
            const float a = Ops::exp2s(mo - mn);
            l[h] = l[h] * a + sum;
            const V va = Ops::set1(a);
            int c = 0;
            for (; c + Ops::W <= d; c += Ops::W) Ops::store(orow + c, Ops::mul(Ops::load(orow + c), va));
            for (; c < d; ++c) orow[c] *= a;
        }
        m[h] = mn;
    }
}

// As cpu:: attention_core.inl fold(): chunk partial (mc, lc, oc) into the running (mt, lt, ot).
void fold(float& mt, float& lt, float* ot, float mc, float lc, const float* oc, int d) {
    if (mc == kNegInf) return;
    if (mt == kNegInf) {
        mt = mc;
        lt = lc;
        for (int c = 0; c < d; ++c) ot[c] = oc[c];
        return;
    }
    const float m = mt > mc ? mt : mc;
    const float a = Ops::exp2s(mt - m), b = Ops::exp2s(mc - m);
    lt = lt * a + lc * b;
    const V va = Ops::set1(a), vb = Ops::set1(b);
    int c = 0;
    for (; c + Ops::W <= d; c += Ops::W)
        Ops::store(ot + c, Ops::fma(Ops::load(oc + c), vb, Ops::mul(Ops::load(ot + c), va)));
    for (; c < d; ++c) ot[c] = Ops::fmas(oc[c], b, ot[c] * a);
    mt = m;
}

// out = o / l (sink in the denominator), lse in natural log; as attention_core.inl finalize().
void finalize(float m, float l, const float* o, const float* sink, int d, float* out, float* lse) {
    if (m == kNegInf) {
        for (int c = 0; c < d; ++c) out[c] = 0.0f;
        *lse = sink ? *sink : kNegInf;
        return;
    }
    float m2 = m, scale = 1.0f;
    if (sink) {
        const float ms = *sink * kLog2e;
        m2 = m > ms ? m : ms;
        const float a = Ops::exp2s(m - m2);
        l = l * a + Ops::exp2s(ms - m2);
        scale = a;
    }
    const float f = scale / l;
    const V vf = Ops::set1(f);
    int c = 0;
    for (; c + Ops::W <= d; c += Ops::W) Ops::store(out + c, Ops::mul(Ops::load(o + c), vf));
    for (; c < d; ++c) out[c] = o[c] * f;
    *lse = (m2 + std::log2(l)) * kLn2;
}
}  // namespace avx2

#pragma GCC pop_options

// ---------------------------------------------------------------------------------------------

namespace {

struct Item {
    int32_t q;       // query
    int32_t part;    // index of its partial
    int32_t lo, hi;  // list entries [lo, hi]
};

// Runs dnnl_sgemm on the calling thread alone: inside an active parallel region oneDNN does
// not open one of its own; outside, the thread's OpenMP thread count is 1 for the call.
struct OneThread {
    int saved = 0;
    bool set = false;
    OneThread() {
        if (!omp_in_parallel()) {
            saved = omp_get_max_threads();
            set = saved != 1;
            if (set) omp_set_num_threads(1);
        }
    }
    ~OneThread() {
        if (set) omp_set_num_threads(saved);
    }
};

// What stopped an item: nothing, its scratch was refused, or a oneDNN call failed.
enum class ItemStatus : int { Ok = 0, NoMemory = 1, OnednnFailed = 2 };

// One (query, chunk) item: its partial (m, l, o) at pp[h * stride + {0, 1, 2..}].
ItemStatus run_item(const PagedKV& bank, const AttnParams& p, const SparseQuery& sq, const Item& it, float* pp,
              size_t stride) {
    constexpr int R = kOnednnSparseTile;
    const int d = p.head_dim, H = p.n_heads;
    thread_local Buf bq, bs, bg, bo, bml;
    float* qs = bq.get(size_t(H) * d);
    float* s = bs.get(size_t(H) * R);
    float* g = bg.get(size_t(R) * d);
    float* o = bo.get(size_t(H) * d);
    float* ml = bml.get(size_t(2) * H);
    if (!qs || !s || !g || !o || !ml) return ItemStatus::NoMemory;
    float* m = ml;
    float* l = ml + H;
    avx2::prescale(sq.q, size_t(H) * d, p.scale * avx2::kLog2e, qs);
    for (int h = 0; h < H; ++h) {
        m[h] = avx2::kNegInf;
        l[h] = 0.0f;
    }
    std::memset(o, 0, sizeof(float) * size_t(H) * d);
    OneThread one;
    for (int32_t base = it.lo; base <= it.hi; base += R) {
        const int n = static_cast<int>(std::min<int64_t>(it.hi - base + 1, R));
        avx2::gather(bank, sq.rows + base, n, d, g);
        if (dnnl_sgemm('N', 'T', H, n, d, 1.0f, qs, d, g, d, 0.0f, s, R) != dnnl_success) return ItemStatus::OnednnFailed;
        avx2::softmax_tile(s, R, H, n, m, l, o, d, d);
        if (dnnl_sgemm('N', 'N', H, d, n, 1.0f, s, R, g, d, 1.0f, o, d) != dnnl_success) return ItemStatus::OnednnFailed;
    }
    for (int h = 0; h < H; ++h) {
        float* st = pp + size_t(h) * stride;
        st[0] = m[h];
        st[1] = l[h];
        std::memcpy(st + 2, o + size_t(h) * d, sizeof(float) * size_t(d));
    }
    return ItemStatus::Ok;
}

}  // namespace

void attention_sparse(const PagedKV& bank, const AttnParams& p, const SparseQuery* queries, int32_t n_queries) {
    follow_isa_limit();  // before the first dnnl_sgemm (onednn_isa.hpp)
    const int d = p.head_dim, H = p.n_heads;
    const size_t stride = size_t(d) + 2;
    std::vector<Item> items;
    std::vector<int32_t> first(size_t(n_queries) + 1);
    double work = 0;
    for (int32_t s = 0; s < n_queries; ++s) {
        first[size_t(s)] = static_cast<int32_t>(items.size());
        const int32_t n = queries[s].n_rows;
        for (int32_t c = 0; c * kKeyChunk < n; ++c)
            items.push_back(Item{s, static_cast<int32_t>(items.size()), c * kKeyChunk,
                                 std::min(n, c * kKeyChunk + kKeyChunk) - 1});
        work += double(n) * H * d;
    }
    first[size_t(n_queries)] = static_cast<int32_t>(items.size());
    const int n_items = static_cast<int>(items.size());
    std::vector<float> part(size_t(n_items) * H * stride);
    // The worst status of any item (an exception may not leave the OpenMP region): refused
    // scratch comes back as std::bad_alloc, as from every other kernel; a oneDNN failure as an
    // internal error.
    std::atomic<int> status{static_cast<int>(ItemStatus::Ok)};
    const bool par = n_items > 1 && work > double(1 << 20) && !omp_in_parallel();
#pragma omp parallel for schedule(dynamic, 1) if (par)
    for (int i = 0; i < n_items; ++i) {
        const Item& it = items[size_t(i)];
        const int st = static_cast<int>(run_item(bank, p, queries[it.q], it, part.data() + size_t(it.part) * H * stride, stride));
        int seen = status.load(std::memory_order_relaxed);
        while (st > seen && !status.compare_exchange_weak(seen, st, std::memory_order_relaxed)) {
        }
    }
    KVRT_CHECK(status.load() != static_cast<int>(ItemStatus::OnednnFailed), KVRT_ERR_INTERNAL,
               "attention_sparse (oneDNN): a oneDNN GEMM call failed");
    if (status.load() == static_cast<int>(ItemStatus::NoMemory)) throw std::bad_alloc();
    std::vector<float> o(static_cast<size_t>(d));
    for (int32_t s = 0; s < n_queries; ++s) {
        const SparseQuery& sq = queries[s];
        for (int h = 0; h < H; ++h) {
            float m = avx2::kNegInf, l = 0.0f;
            std::fill(o.begin(), o.end(), 0.0f);
            for (int32_t it = first[size_t(s)]; it < first[size_t(s) + 1]; ++it) {
                const float* st = part.data() + (size_t(it) * H + h) * stride;
                avx2::fold(m, l, o.data(), st[0], st[1], st + 2, d);
            }
            avx2::finalize(m, l, o.data(), p.sinks ? p.sinks + h : nullptr, d, sq.out + size_t(h) * d, sq.lse + h);
        }
    }
}

}  // namespace kvrt::onednn
