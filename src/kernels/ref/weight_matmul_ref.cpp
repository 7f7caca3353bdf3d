// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

#include "kernels/ref/weight_matmul_ref.hpp"

#include "formats/tensor_type_dequant.hpp"
#include "kernels/weight_matmul.hpp"
#include "util/dtype.hpp"
#include "util/error.hpp"

#include <cmath>
#include <cstring>
#include <vector>

namespace kvrt::ref {

namespace {

bool is_k(TensorType t) { return t == TensorType::Q4_K || t == TensorType::Q5_K || t == TensorType::Q6_K; }

bool is_quant(TensorType t) {
    return t == TensorType::Q4_0 || t == TensorType::Q4_1 || t == TensorType::Q8_0 || t == TensorType::Q5_0 || is_k(t);
}

size_t row_bytes(TensorType t, int64_t k) {
    KVRT_CHECK(is_quant(t) || t == TensorType::F32 || t == TensorType::F16 || t == TensorType::BF16,
               KVRT_ERR_UNSUPPORTED, "ref weight matmul: unsupported tensor type");
    return static_cast<size_t>(tensor_row_bytes(t, static_cast<uint64_t>(k)));
}

int nibble(const uint8_t* qs, int e) { return e < 16 ? qs[e] & 0xF : qs[e - 16] >> 4; }

// ggml's get_scale_min_k4.
void scale_min_k4(int j, const uint8_t* q, int* d, int* m) {
    if (j < 4) {
        *d = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *d = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
        *m = (q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4);
    }
}

// One Q5_0 block or K-quant super-block in GGUF layout, decoded after ggml's
// dequantize_row_* loops: q[e] = the signed value code (value = scale * q - min),
// dw[s] / mw[s] = scale and min of 32-element block s (as floats: d * sc, dmin * m,
// both exact), and for Q6_K sc16[g] = the int8 scale of 16-element group g.
void decode_new(TensorType t, const uint8_t* p, int32_t* q, float* dw, float* mw, int32_t* sc16) {
    if (t == TensorType::Q5_0) {
        BlockQ5_0 blk;
        std::memcpy(&blk, p, sizeof blk);
        uint32_t qh;
        std::memcpy(&qh, blk.qh, 4);
        for (int j = 0; j < 16; j++) {
            q[j] = ((blk.qs[j] & 0x0F) | (((qh >> j) << 4) & 0x10)) - 16;
            q[j + 16] = ((blk.qs[j] >> 4) | ((qh >> (j + 12)) & 0x10)) - 16;
        }
        dw[0] = f16_to_f32(blk.d);
        mw[0] = 0.0f;
        return;
    }
    if (t == TensorType::Q6_K) {
        BlockQ6_K blk;
        std::memcpy(&blk, p, sizeof blk);
        const uint8_t* ql = blk.ql;
        const uint8_t* qh = blk.qh;
        for (int n = 0; n < 256; n += 128) {
            for (int l = 0; l < 32; ++l) {
                q[n + l + 0] = ((ql[l + 0] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
                q[n + l + 32] = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
                q[n + l + 64] = ((ql[l + 0] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                q[n + l + 96] = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
            }
            ql += 64;
            qh += 32;
        }
        for (int g = 0; g < 16; g++) sc16[g] = blk.scales[g];
        for (int s = 0; s < 8; s++) dw[s] = f16_to_f32(blk.d), mw[s] = 0.0f;
        return;
    }
    // Q4_K / Q5_K
    const bool q5 = t == TensorType::Q5_K;
    uint16_t hd, hm;
    std::memcpy(&hd, p, 2);
    std::memcpy(&hm, p + 2, 2);
    const float d = f16_to_f32(hd), dmin = f16_to_f32(hm);
    const uint8_t* scales = p + 4;
    const uint8_t* qh = p + 16;
    const uint8_t* ql = p + (q5 ? 48 : 16);
    int is = 0;
    unsigned u1 = 1, u2 = 2;
    for (int j = 0; j < 256; j += 64) {
        int sc, m;
        scale_min_k4(is + 0, scales, &sc, &m);
        dw[is] = d * static_cast<float>(sc);
        mw[is] = dmin * static_cast<float>(m);
        scale_min_k4(is + 1, scales, &sc, &m);
        dw[is + 1] = d * static_cast<float>(sc);
        mw[is + 1] = dmin * static_cast<float>(m);
        for (int l = 0; l < 32; ++l) {
            q[j + l] = (ql[l] & 0xF) + (q5 && (qh[l] & u1) ? 16 : 0);
            q[j + 32 + l] = (ql[l] >> 4) + (q5 && (qh[l] & u2) ? 16 : 0);
        }
        ql += 32;
        is += 2;
        u1 <<= 2;
        u2 <<= 2;
    }
}

}  // namespace

void quantize_row_q8(const float* x, int64_t nb, int8_t* qs, float* d, int32_t* sum) {
    for (int64_t b = 0; b < nb; b++) {
        float amax = 0.0f;
        for (int j = 0; j < 32; j++) amax = std::fmax(amax, std::fabs(x[b * 32 + j]));
        const float db = amax / 127.0f;
        const float id = db != 0.0f ? 1.0f / db : 0.0f;
        int32_t s = 0;
        for (int j = 0; j < 32; j++) {
            float r = std::nearbyint(x[b * 32 + j] * id);
            if (!(r == r)) r = -128.0f;  // NaN: the low end, as every kernel path (and not UB)
            if (r > 127.0f) r = 127.0f;
            if (r < -128.0f) r = -128.0f;
            qs[b * 32 + j] = static_cast<int8_t>(r);
            s += static_cast<int32_t>(r);
        }
        d[b] = db;
        sum[b] = s;
    }
}

void quantize_row_q16(const float* x, int64_t nb, int16_t* qs, float* d, int32_t* sum) {
    for (int64_t b = 0; b < nb; b++) {
        float amax = 0.0f;
        for (int j = 0; j < 32; j++) amax = std::fmax(amax, std::fabs(x[b * 32 + j]));
        const float db = amax / 32767.0f;
        const float id = db != 0.0f ? 1.0f / db : 0.0f;
        int32_t s = 0;
        for (int j = 0; j < 32; j++) {
            float r = std::nearbyint(x[b * 32 + j] * id);
            if (!(r == r)) r = -32767.0f;
            if (r > 32767.0f) r = 32767.0f;
            if (r < -32767.0f) r = -32767.0f;
            qs[b * 32 + j] = static_cast<int16_t>(r);
            s += static_cast<int32_t>(r);
        }
        d[b] = db;
        sum[b] = s;
    }
}

void residual_row_q8(const float* x, int64_t nb, const int8_t* qs, const float* d, int32_t* rq, float* rd,
                     int32_t* rsum) {
    // A float sum and an fma chain in block order: the same floats as the fast path's.
    float ftotal = 0.0f, fsquares = 0.0f;
    for (int64_t b = 0; b < nb; b++) {
        ftotal += d[b];
        fsquares = std::fma(d[b], d[b], fsquares);
    }
    const float limit = kOutlierBlockRatio * (ftotal / static_cast<float>(nb));
    const float share = kOutlierBlockShare * fsquares;
    for (int64_t b = 0; b < nb; b++) {
        rd[b] = 0.0f;
        rsum[b] = 0;
        for (int j = 0; j < 32; j++) rq[b * 32 + j] = 0;
        if (!(d[b] > limit) || !(d[b] * d[b] >= share)) continue;
        float r[32], amax = 0.0f;
        for (int j = 0; j < 32; j++) {
            r[j] = std::fma(-d[b], static_cast<float>(qs[b * 32 + j]), x[b * 32 + j]);
            amax = std::fmax(amax, std::fabs(r[j]));
        }
        const float db = amax / 127.0f;
        if (!(db > 0.0f) || !std::isfinite(db)) continue;
        const float id = 1.0f / db;
        int32_t t = 0;
        for (int j = 0; j < 32; j++) {
            float v = std::nearbyint(r[j] * id);
            if (v > 127.0f) v = 127.0f;
            if (v < -128.0f) v = -128.0f;
            rq[b * 32 + j] = static_cast<int32_t>(v);
            t += static_cast<int32_t>(v);
        }
        rd[b] = db;
        rsum[b] = t;
    }
}

void dequantize_row(TensorType type, const void* w, int64_t n, int64_t k, float* out) {
    const uint8_t* row = static_cast<const uint8_t*>(w) + static_cast<size_t>(n) * row_bytes(type, k);
    const int64_t nb = k / 32;
    if (type == TensorType::Q5_0 || is_k(type)) {
        kvrt::ref::dequantize_f32(type, row, out, static_cast<uint64_t>(k));
        return;
    }
    const bool quant = type == TensorType::Q4_0 || type == TensorType::Q4_1 || type == TensorType::Q8_0;
    for (int64_t b = 0; quant && b < nb; b++) {
        if (type == TensorType::Q4_1) {
            BlockQ4_1 blk;
            std::memcpy(&blk, row + b * sizeof blk, sizeof blk);
            for (int e = 0; e < 32; e++)
                out[b * 32 + e] = static_cast<float>(nibble(blk.qs, e)) * f16_to_f32(blk.d) + f16_to_f32(blk.m);
        } else if (type == TensorType::Q4_0) {
            BlockQ4_0 blk;
            std::memcpy(&blk, row + b * sizeof blk, sizeof blk);
            for (int e = 0; e < 32; e++) out[b * 32 + e] = static_cast<float>(nibble(blk.qs, e) - 8) * f16_to_f32(blk.d);
        } else if (type == TensorType::Q8_0) {
            BlockQ8_0 blk;
            std::memcpy(&blk, row + b * sizeof blk, sizeof blk);
            for (int e = 0; e < 32; e++) out[b * 32 + e] = static_cast<float>(blk.qs[e]) * f16_to_f32(blk.d);
        }
    }
    for (int64_t i = 0; !quant && i < k; i++) {
        if (type == TensorType::F32) {
            std::memcpy(&out[i], row + 4 * i, 4);
        } else if (type == TensorType::F16 || type == TensorType::BF16) {
            uint16_t h;
            std::memcpy(&h, row + 2 * i, 2);
            out[i] = type == TensorType::F16 ? f16_to_f32(h) : bf16_to_f32(h);
        }
    }
}

namespace {

// The ref matmul over rows fetched one at a time: row(n) returns W row n in GGUF layout.
// Naive loops: each W row is decoded once into integer codes and block scales, then
// dotted with every quantised X row; block partials are accumulated in double.
template <class RowFn>
void weight_matmul_rows(TensorType type, RowFn&& row, int64_t n_rows, int64_t k, const float* X, int64_t M,
                        int64_t ldx, float* Y, int64_t ldy, ActBits act) {
    const bool quant = is_quant(type);
    if (!quant) {
        std::vector<float> wr(static_cast<size_t>(k));
        for (int64_t n = 0; n < n_rows; n++) {
            dequantize_row(type, row(n), 0, k, wr.data());
            for (int64_t m = 0; m < M; m++) {
                double acc = 0.0;
                for (int64_t i = 0; i < k; i++) acc += static_cast<double>(wr[i]) * X[m * ldx + i];
                Y[m * ldy + n] = static_cast<float>(acc);
            }
        }
        return;
    }
    const int64_t nb = k / 32;
    // Activation codes (8- or 16-bit), widened to int32 for the loops below.
    std::vector<int32_t> qs(static_cast<size_t>(M * nb * 32));
    std::vector<float> d(static_cast<size_t>(M * nb));
    std::vector<int32_t> sum(static_cast<size_t>(M * nb));
    // ActBits::Q8R: the outlier blocks' residual codes (zero elsewhere), scales (0: not marked), sums.
    std::vector<int32_t> rqs(act == ActBits::Q8R ? static_cast<size_t>(M * nb * 32) : 0);
    std::vector<float> rd(rqs.empty() ? 0 : static_cast<size_t>(M * nb), 0.0f);
    std::vector<int32_t> rsum(rd.size(), 0);
    {
        std::vector<int8_t> q8(static_cast<size_t>(nb * 32));
        std::vector<int16_t> q16(static_cast<size_t>(nb * 32));
        for (int64_t m = 0; m < M; m++) {
            int32_t* dst = qs.data() + m * nb * 32;
            if (act == ActBits::Q16) {
                quantize_row_q16(X + m * ldx, nb, q16.data(), d.data() + m * nb, sum.data() + m * nb);
                for (int64_t i = 0; i < nb * 32; i++) dst[i] = q16[i];
            } else {
                quantize_row_q8(X + m * ldx, nb, q8.data(), d.data() + m * nb, sum.data() + m * nb);
                for (int64_t i = 0; i < nb * 32; i++) dst[i] = q8[i];
                if (!rqs.empty())
                    residual_row_q8(X + m * ldx, nb, q8.data(), d.data() + m * nb, rqs.data() + m * nb * 32,
                                    rd.data() + m * nb, rsum.data() + m * nb);
            }
        }
    }
    std::vector<int32_t> q(static_cast<size_t>(k));  // W row codes: nibble (Q4_1), nibble - 8 (Q4_0), int8 (Q8_0)
    std::vector<float> dw(static_cast<size_t>(nb)), mw(static_cast<size_t>(nb), 0.0f);
    std::vector<int32_t> sc16(static_cast<size_t>(2 * nb));  // Q6_K: scale of each 16-element group
    const bool decoded = type == TensorType::Q5_0 || is_k(type);
    const int64_t step = is_k(type) ? 256 : 32;
    const size_t bbytes = tensor_type_traits(type).block_bytes;
    for (int64_t n = 0; n < n_rows; n++) {
        const uint8_t* r = row(n);
        for (int64_t st = 0; decoded && st < k / step; st++)
            decode_new(type, r + st * bbytes, q.data() + st * step, dw.data() + st * (step / 32),
                       mw.data() + st * (step / 32), sc16.data() + st * (step / 16));
        for (int64_t b = 0; !decoded && b < nb; b++) {
            if (type == TensorType::Q4_1) {
                BlockQ4_1 blk;
                std::memcpy(&blk, r + b * sizeof blk, sizeof blk);
                for (int e = 0; e < 32; e++) q[b * 32 + e] = nibble(blk.qs, e);
                dw[b] = f16_to_f32(blk.d);
                mw[b] = f16_to_f32(blk.m);
            } else if (type == TensorType::Q4_0) {
                BlockQ4_0 blk;
                std::memcpy(&blk, r + b * sizeof blk, sizeof blk);
                for (int e = 0; e < 32; e++) q[b * 32 + e] = nibble(blk.qs, e) - 8;
                dw[b] = f16_to_f32(blk.d);
            } else {
                BlockQ8_0 blk;
                std::memcpy(&blk, r + b * sizeof blk, sizeof blk);
                for (int e = 0; e < 32; e++) q[b * 32 + e] = blk.qs[e];
                dw[b] = f16_to_f32(blk.d);
            }
        }
        for (int64_t m = 0; m < M; m++) {
            const int32_t* a = qs.data() + m * nb * 32;
            double acc = 0.0;
            for (int64_t b = 0; b < nb; b++) {
                int64_t isum = 0;
                for (int e = 0; e < 32; e++) isum += static_cast<int64_t>(q[b * 32 + e]) * a[b * 32 + e];
                const float da = d[m * nb + b];
                // The residual of an outlier block (Q8R): the same formula on its codes, no min term;
                // the min term's s covers both parts.
                const float rdb = rd.empty() ? 0.0f : rd[m * nb + b];
                const int32_t* ra = rdb != 0.0f ? rqs.data() + (m * nb + b) * 32 : nullptr;
                const float sa = rdb != 0.0f ? std::fma(rdb, static_cast<float>(rsum[m * nb + b]),
                                                        da * static_cast<float>(sum[m * nb + b]))
                                             : da * static_cast<float>(sum[m * nb + b]);
                if (ra) {
                    int64_t rlo = 0, rhi = 0;
                    for (int e = 0; e < 16; e++) rlo += static_cast<int64_t>(q[b * 32 + e]) * ra[e];
                    for (int e = 16; e < 32; e++) rhi += static_cast<int64_t>(q[b * 32 + e]) * ra[e];
                    const double I = type == TensorType::Q6_K
                                         ? static_cast<double>(sc16[2 * b] * rlo + sc16[2 * b + 1] * rhi)
                                         : static_cast<double>(rlo + rhi);
                    acc += static_cast<double>(dw[b]) * rdb * I;
                }
                if (type == TensorType::Q6_K) {
                    // w = d * sc_g * q with a scale per 16 elements: two integer sums.
                    int64_t lo = 0, hi = 0;
                    for (int e = 0; e < 16; e++) lo += static_cast<int64_t>(q[b * 32 + e]) * a[b * 32 + e];
                    for (int e = 16; e < 32; e++) hi += static_cast<int64_t>(q[b * 32 + e]) * a[b * 32 + e];
                    acc += static_cast<double>(dw[b]) * da *
                           static_cast<double>(sc16[2 * b] * lo + sc16[2 * b + 1] * hi);
                    continue;
                }
                if (type == TensorType::Q4_K || type == TensorType::Q5_K) {
                    // w = (d*sc) q - dmin*m  ->  (d*sc)*da*sum(q*a) - (dmin*m) * (da*sum(a))
                    acc += static_cast<double>(dw[b]) * da * static_cast<double>(isum) -
                           static_cast<double>(mw[b]) * static_cast<double>(sa);
                    continue;
                }
                // w = q*dw (+ mw)  ->  sum w*x ~ dw*da*sum(q*a) (+ mw * (da*sum(a)), the fast path's s)
                double part = static_cast<double>(dw[b]) * da * static_cast<double>(isum);
                if (type == TensorType::Q4_1)
                    part += static_cast<double>(mw[b]) * static_cast<double>(sa);
                acc += part;
            }
            Y[m * ldy + n] = static_cast<float>(acc);
        }
    }
}

}  // namespace

void weight_matmul(TensorType type, const void* w, int64_t n_rows, int64_t k, const float* X, int64_t M, int64_t ldx,
                   float* Y, int64_t ldy, ActBits act) {
    const size_t rb = row_bytes(type, k);
    const auto* W = static_cast<const uint8_t*>(w);
    weight_matmul_rows(type, [&](int64_t n) { return W + static_cast<size_t>(n) * rb; }, n_rows, k, X, M, ldx, Y, ldy,
                       act);
}

void weight_matmul_dequant_f32(TensorType type, const void* w, int64_t n_rows, int64_t k, const float* X, int64_t M,
                               int64_t ldx, float* Y, int64_t ldy) {
    std::vector<float> wr(static_cast<size_t>(k));
    for (int64_t n = 0; n < n_rows; n++) {
        dequantize_row(type, w, n, k, wr.data());
        for (int64_t m = 0; m < M; m++) {
            double acc = 0.0;
            for (int64_t i = 0; i < k; i++) acc += static_cast<double>(wr[i]) * X[m * ldx + i];
            Y[m * ldy + n] = static_cast<float>(acc);
        }
    }
}

}  // namespace kvrt::ref

namespace kvrt {

void matmul_ref(const PackedWeight& w, const float* X, int64_t M, int64_t ldx, float* Y, int64_t ldy, ActBits act) {
    KVRT_CHECK(M >= 0, KVRT_ERR_INVALID_ARGUMENT, "weight matmul: M is negative");
    if (M == 0) return;
    KVRT_CHECK(X != nullptr && Y != nullptr, KVRT_ERR_INVALID_ARGUMENT, "weight matmul: X or Y is NULL");
    KVRT_CHECK(ldx >= w.cols() && ldy >= w.rows(), KVRT_ERR_INVALID_ARGUMENT, "weight matmul: stride too small");
    std::vector<uint8_t> row(w.row_bytes());
    ref::weight_matmul_rows(
        w.type(),
        [&](int64_t n) {
            w.unpack_row(n, row.data());
            return static_cast<const uint8_t*>(row.data());
        },
        w.rows(), w.cols(), X, M, ldx, Y, ldy, act);
}

}  // namespace kvrt
