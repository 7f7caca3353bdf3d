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

void weight_matmul(TensorType type, const void* w, int64_t n_rows, int64_t k, const float* X, int64_t M, int64_t ldx,
                   float* Y, int64_t ldy) {
    const size_t rb = row_bytes(type, k);
    const auto* W = static_cast<const uint8_t*>(w);
    const bool quant = type == TensorType::Q4_0 || type == TensorType::Q4_1 || type == TensorType::Q8_0;
    if (!quant) {
        std::vector<float> wr(static_cast<size_t>(k));
        for (int64_t n = 0; n < n_rows; n++) {
            dequantize_row(type, w, n, k, wr.data());
            for (int64_t m = 0; m < M; m++) {
                double acc = 0.0;
                for (int64_t i = 0; i < k; i++) acc += static_cast<double>(wr[i]) * X[m * ldx + i];
                Y[m * ldy + n] = static_cast<float>(acc);
            }
        }
        return;
    }
    const int64_t nb = k / 32;
    std::vector<int8_t> qs(static_cast<size_t>(nb * 32));
    std::vector<float> d(static_cast<size_t>(nb));
    std::vector<int32_t> sum(static_cast<size_t>(nb));
    for (int64_t m = 0; m < M; m++) {
        quantize_row_q8(X + m * ldx, nb, qs.data(), d.data(), sum.data());
        for (int64_t n = 0; n < n_rows; n++) {
            const uint8_t* row = W + static_cast<size_t>(n) * rb;
            double acc = 0.0;
            for (int64_t b = 0; b < nb; b++) {
                const int8_t* a = qs.data() + b * 32;
                int64_t isum = 0;
                double part = 0.0;
                if (type == TensorType::Q4_1) {
                    BlockQ4_1 blk;
                    std::memcpy(&blk, row + b * sizeof blk, sizeof blk);
                    for (int e = 0; e < 32; e++) isum += nibble(blk.qs, e) * a[e];
                    // w = q*dw + mw  ->  sum w*x = dw*da*sum(q*a) + mw*da*sum(a)
                    part = static_cast<double>(f16_to_f32(blk.d)) * d[b] * static_cast<double>(isum) +
                           static_cast<double>(f16_to_f32(blk.m)) * static_cast<double>(d[b] * static_cast<float>(sum[b]));
                } else if (type == TensorType::Q4_0) {
                    BlockQ4_0 blk;
                    std::memcpy(&blk, row + b * sizeof blk, sizeof blk);
                    for (int e = 0; e < 32; e++) isum += (nibble(blk.qs, e) - 8) * a[e];
                    part = static_cast<double>(f16_to_f32(blk.d)) * d[b] * static_cast<double>(isum);
                } else {
                    BlockQ8_0 blk;
                    std::memcpy(&blk, row + b * sizeof blk, sizeof blk);
                    for (int e = 0; e < 32; e++) isum += static_cast<int64_t>(blk.qs[e]) * a[e];
                    part = static_cast<double>(f16_to_f32(blk.d)) * d[b] * static_cast<double>(isum);
                }
                acc += part;
            }
            Y[m * ldy + n] = static_cast<float>(acc);
        }
    }
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
    std::vector<uint8_t> raw(w.row_bytes() * static_cast<size_t>(w.rows()));
    for (int64_t n = 0; n < w.rows(); n++) w.unpack_row(n, raw.data() + static_cast<size_t>(n) * w.row_bytes());
    ref::weight_matmul(w.type(), raw.data(), w.rows(), w.cols(), X, M, ldx, Y, ldy);
}

}  // namespace kvrt
