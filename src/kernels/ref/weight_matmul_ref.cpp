#include "kernels/ref/weight_matmul_ref.hpp"

#include "kernels/weight_matmul.hpp"
#include "util/dtype.hpp"
#include "util/error.hpp"

#include <cmath>
#include <cstring>
#include <vector>

namespace kvrt::ref {

namespace {

size_t row_bytes(TensorType t, int64_t k) {
    KVRT_CHECK(t == TensorType::Q4_1 || t == TensorType::Q4_0 || t == TensorType::Q8_0 || t == TensorType::F32 ||
                   t == TensorType::F16 || t == TensorType::BF16,
               KVRT_ERR_UNSUPPORTED, "ref weight matmul: unsupported tensor type");
    return static_cast<size_t>(tensor_row_bytes(t, static_cast<uint64_t>(k)));
}

int nibble(const uint8_t* qs, int e) { return e < 16 ? qs[e] & 0xF : qs[e - 16] >> 4; }

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
            if (r > 127.0f) r = 127.0f;
            if (r < -128.0f) r = -128.0f;
            qs[b * 32 + j] = static_cast<int8_t>(r);
            s += static_cast<int32_t>(r);
        }
        d[b] = db;
        sum[b] = s;
    }
}

void dequantize_row(TensorType type, const void* w, int64_t n, int64_t k, float* out) {
    const uint8_t* row = static_cast<const uint8_t*>(w) + static_cast<size_t>(n) * row_bytes(type, k);
    const int64_t nb = k / 32;
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
                        int64_t ldx, float* Y, int64_t ldy) {
    const bool quant = type == TensorType::Q4_0 || type == TensorType::Q4_1 || type == TensorType::Q8_0;
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
    std::vector<int8_t> qs(static_cast<size_t>(M * nb * 32));
    std::vector<float> d(static_cast<size_t>(M * nb));
    std::vector<int32_t> sum(static_cast<size_t>(M * nb));
    for (int64_t m = 0; m < M; m++)
        quantize_row_q8(X + m * ldx, nb, qs.data() + m * nb * 32, d.data() + m * nb, sum.data() + m * nb);
    std::vector<int32_t> q(static_cast<size_t>(k));  // W row codes: nibble (Q4_1), nibble - 8 (Q4_0), int8 (Q8_0)
    std::vector<float> dw(static_cast<size_t>(nb)), mw(static_cast<size_t>(nb), 0.0f);
    for (int64_t n = 0; n < n_rows; n++) {
        const uint8_t* r = row(n);
        for (int64_t b = 0; b < nb; b++) {
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
            const int8_t* a = qs.data() + m * nb * 32;
            double acc = 0.0;
            for (int64_t b = 0; b < nb; b++) {
                int64_t isum = 0;
                for (int e = 0; e < 32; e++) isum += static_cast<int64_t>(q[b * 32 + e]) * a[b * 32 + e];
                const float da = d[m * nb + b];
                // w = q*dw (+ mw)  ->  sum w*x ~ dw*da*sum(q*a) (+ mw * (da*sum(a)), the fast path's s)
                double part = static_cast<double>(dw[b]) * da * static_cast<double>(isum);
                if (type == TensorType::Q4_1)
                    part += static_cast<double>(mw[b]) * static_cast<double>(da * static_cast<float>(sum[m * nb + b]));
                acc += part;
            }
            Y[m * ldy + n] = static_cast<float>(acc);
        }
    }
}

}  // namespace

void weight_matmul(TensorType type, const void* w, int64_t n_rows, int64_t k, const float* X, int64_t M, int64_t ldx,
                   float* Y, int64_t ldy) {
    const size_t rb = row_bytes(type, k);
    const auto* W = static_cast<const uint8_t*>(w);
    weight_matmul_rows(type, [&](int64_t n) { return W + static_cast<size_t>(n) * rb; }, n_rows, k, X, M, ldx, Y, ldy);
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

void matmul_ref(const PackedWeight& w, const float* X, int64_t M, int64_t ldx, float* Y, int64_t ldy) {
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
        w.rows(), w.cols(), X, M, ldx, Y, ldy);
}

}  // namespace kvrt
