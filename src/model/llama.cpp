#include "model/llama.hpp"

#include "kernels/attention.hpp"
#include "kernels/rms_norm.hpp"
#include "kernels/rope.hpp"
#include "kernels/weight_matmul.hpp"
#include "model/model.hpp"
#include "util/error.hpp"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace kvrt {

// ---------------------------------------------------------------------------
ContiguousKv::ContiguousKv(int32_t n_layers, int32_t n_kv_heads, int32_t head_dim, DType dtype, int64_t capacity)
    : n_layers_(n_layers), n_kv_heads_(n_kv_heads), head_dim_(head_dim), dtype_(dtype), capacity_(capacity) {
    row_bytes_ = static_cast<size_t>(n_kv_heads) * head_dim * dtype_size(dtype);
    data_.resize(static_cast<size_t>(n_layers) * 2 * capacity * row_bytes_);
    ptrs_.resize(n_layers);
    for (int32_t l = 0; l < n_layers; ++l) ptrs_[l] = data_.data() + static_cast<size_t>(l) * 2 * capacity * row_bytes_;
}

uint8_t* ContiguousKv::k_row_mut(int32_t layer, int64_t pos) {
    return data_.data() + (static_cast<size_t>(layer) * 2 * capacity_ + pos) * row_bytes_;
}
uint8_t* ContiguousKv::v_row_mut(int32_t layer, int64_t pos) {
    return data_.data() + (static_cast<size_t>(layer) * 2 * capacity_ + capacity_ + pos) * row_bytes_;
}
PagedKV ContiguousKv::view(int32_t layer, int64_t n_tokens) {
    PagedKV v;
    v.blocks = &ptrs_[layer];
    v.n_blocks = 1;
    v.block_tokens = static_cast<int32_t>(std::max<int64_t>(capacity_, 1));
    v.k_offset = 0;
    v.v_offset = static_cast<size_t>(capacity_) * row_bytes_;
    v.row_bytes = row_bytes_;
    v.n_kv_heads = n_kv_heads_;
    v.head_dim = head_dim_;
    v.dtype = dtype_;
    v.n_tokens = static_cast<int32_t>(n_tokens);
    return v;
}

// ---------------------------------------------------------------------------
namespace {



// f32 -> f16 with the F16C instruction (round to nearest even, as f32_to_f16).
__attribute__((target("avx2,f16c"))) void f32_to_f16_row_f16c(uint8_t* dst, const float* src, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 2 * i), h);
    }
    for (; i < n; ++i) {
        const uint16_t h = f32_to_f16(src[i]);
        std::memcpy(dst + 2 * i, &h, 2);
    }
}

const bool kHasF16c = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");

// Writes one K or V row into the store in its element type (the same function serves
// the fast and the reference forward, so both see identical rows).
void store_row(uint8_t* dst, const float* src, int64_t n, DType t) {
    switch (t) {
        case DType::F32: std::memcpy(dst, src, static_cast<size_t>(n) * 4); break;
        case DType::F16:
            if (kHasF16c) {
                f32_to_f16_row_f16c(dst, src, n);
                break;
            }
            for (int64_t i = 0; i < n; ++i) {
                const uint16_t h = f32_to_f16(src[i]);
                std::memcpy(dst + 2 * i, &h, 2);
            }
            break;
        case DType::BF16:
            for (int64_t i = 0; i < n; ++i) {
                const uint16_t h = f32_to_bf16(src[i]);
                std::memcpy(dst + 2 * i, &h, 2);
            }
            break;
    }
}

inline float silu(float x) { return x / (1.0f + std::exp(-x)); }

}  // namespace

void llama_forward(const Model& model, std::span<SeqStep> batch, ForwardScratch& S, KernelSet ks, int n_threads) {
    const LlamaConfig& c = model.config();
    const int64_t E = c.n_embd, QD = c.q_dim(), KD = c.kv_dim(), F = c.n_ff, V = c.n_vocab;
    int64_t M = 0;
    for (const SeqStep& s : batch) {
        KVRT_CHECK(s.n_tokens > 0 && s.kv != nullptr, KVRT_ERR_INTERNAL, "llama_forward: empty step");
        M += s.n_tokens;
    }
    if (M == 0) return;
    const bool ref = ks == KernelSet::Reference;
    auto rmsnorm = [&](const float* x, const float* w, float* y, int64_t rows) {
        if (ref)
            ref::rms_norm(x, w, c.rms_eps, static_cast<int32_t>(rows), static_cast<int32_t>(E), y);
        else
            cpu::rms_norm(x, w, c.rms_eps, static_cast<int32_t>(rows), static_cast<int32_t>(E), y);
    };
    RopeParams rq;
    rq.n_heads = static_cast<int32_t>(c.n_heads);
    rq.head_dim = static_cast<int32_t>(c.head_dim);
    rq.rope_dims = static_cast<int32_t>(c.n_rot);
    rq.theta = c.rope_theta;
    rq.mode = c.rope_type == RopeType::Neox ? RopeMode::Neox : RopeMode::Interleaved;
    RopeParams rk = rq;
    rk.n_heads = static_cast<int32_t>(c.n_kv_heads);
    auto rope = [&](float* x, const RopeParams& rp) {
        if (ref)
            ref::rope(x, static_cast<int32_t>(M), S.pos.data(), rp);
        else
            cpu::rope(x, static_cast<int32_t>(M), S.pos.data(), rp);
    };
    AttnParams ap;
    ap.n_heads = static_cast<int32_t>(c.n_heads);
    ap.head_dim = static_cast<int32_t>(c.head_dim);
    ap.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
    auto mm = [&](const PackedWeight& w, const float* X, int64_t ldx, float* Y, int64_t ldy) {
        if (ref)
            matmul_ref(w, X, M, ldx, Y, ldy);
        else
            matmul(w, X, M, ldx, Y, ldy, n_threads);
    };

    S.x.resize(M * E);
    S.xn.resize(M * E);
    S.q.resize(M * QD);
    S.k.resize(M * KD);
    S.v.resize(M * KD);
    S.att.resize(M * QD);
    S.gate.resize(M * F);
    S.up.resize(M * F);
    S.pos.resize(M);
    S.views.resize(batch.size());
    S.decode.clear();

    // Embeddings and positions.
    {
        int64_t r = 0;
        for (const SeqStep& s : batch)
            for (int32_t t = 0; t < s.n_tokens; ++t, ++r) {
                model.embed(s.tokens[t], &S.x[r * E]);
                S.pos[r] = static_cast<int32_t>(s.pos0 + t);
            }
    }

    for (uint32_t l = 0; l < c.n_layers; ++l) {
        const LlamaLayerWeights& L = model.layer(l);
        rmsnorm(S.x.data(), L.attn_norm.data(), S.xn.data(), M);
        mm(*L.wq, S.xn.data(), E, S.q.data(), QD);
        mm(*L.wk, S.xn.data(), E, S.k.data(), KD);
        mm(*L.wv, S.xn.data(), E, S.v.data(), KD);
        rope(S.q.data(), rq);
        rope(S.k.data(), rk);
        ap.window = c.layer_is_window(l) ? static_cast<int32_t>(c.sliding_window) : 0;
        // Write the new rows first, then attend (a token attends to itself through the store).
        // Prefill chunks (n > 1) go through the prefill kernel one sequence at a time; single
        // tokens are batched into one decode call (bit-identical to a prefill row, see attention.hpp).
        int64_t r = 0;
        S.decode.clear();
        for (size_t i = 0; i < batch.size(); ++i) {
            SeqStep& s = batch[i];
            const DType dt = s.kv->dtype();
            for (int32_t t = 0; t < s.n_tokens; ++t) {
                store_row(s.kv->k_row_mut(static_cast<int32_t>(l), s.pos0 + t), &S.k[(r + t) * KD], KD, dt);
                store_row(s.kv->v_row_mut(static_cast<int32_t>(l), s.pos0 + t), &S.v[(r + t) * KD], KD, dt);
            }
            S.views[i] = s.kv->view(static_cast<int32_t>(l), s.pos0 + s.n_tokens);
            if (s.n_tokens == 1) {
                DecodeSeq d;
                d.kv = &S.views[i];
                d.q = &S.q[r * QD];
                d.out = &S.att[r * QD];
                d.pos = static_cast<int32_t>(s.pos0);
                S.decode.push_back(d);
            } else if (ref) {
                ref::attention_prefill(S.views[i], ap, &S.q[r * QD], s.n_tokens, static_cast<int32_t>(s.pos0),
                                       &S.att[r * QD]);
            } else {
                cpu::attention_prefill(S.views[i], ap, &S.q[r * QD], s.n_tokens, static_cast<int32_t>(s.pos0),
                                       &S.att[r * QD]);
            }
            r += s.n_tokens;
        }
        if (!S.decode.empty()) {
            if (ref)
                ref::attention_decode(S.decode.data(), static_cast<int32_t>(S.decode.size()), ap);
            else
                cpu::attention_decode(S.decode.data(), static_cast<int32_t>(S.decode.size()), ap);
        }
        // Output projection + residual.
        mm(*L.wo, S.att.data(), QD, S.xn.data(), E);
        for (int64_t i = 0; i < M * E; ++i) S.x[i] += S.xn[i];
        // SwiGLU FFN + residual.
        rmsnorm(S.x.data(), L.ffn_norm.data(), S.xn.data(), M);
        mm(*L.w_gate, S.xn.data(), E, S.gate.data(), F);
        mm(*L.w_up, S.xn.data(), E, S.up.data(), F);
        for (int64_t i = 0; i < M * F; ++i) S.gate[i] = silu(S.gate[i]) * S.up[i];
        mm(*L.w_down, S.gate.data(), F, S.xn.data(), E);
        for (int64_t i = 0; i < M * E; ++i) S.x[i] += S.xn[i];
    }

    // Final norm and the head, only for the rows that want logits.
    std::vector<int64_t> rows;
    std::vector<float*> dsts;
    {
        int64_t r = 0;
        for (SeqStep& s : batch) {
            if (s.logits) {
                if (s.logits_all) {
                    for (int32_t t = 0; t < s.n_tokens; ++t) {
                        rows.push_back(r + t);
                        dsts.push_back(s.logits + static_cast<int64_t>(t) * V);
                    }
                } else {
                    rows.push_back(r + s.n_tokens - 1);
                    dsts.push_back(s.logits);
                }
            }
            r += s.n_tokens;
        }
    }
    if (rows.empty()) return;
    const int64_t R = static_cast<int64_t>(rows.size());
    for (int64_t i = 0; i < R; ++i) std::memcpy(&S.xn[i * E], &S.x[rows[i] * E], static_cast<size_t>(E) * 4);
    rmsnorm(S.xn.data(), model.output_norm().data(), S.x.data(), R);
    S.logits_rows.resize(static_cast<size_t>(R * V));
    if (ref)
        matmul_ref(model.output(), S.x.data(), R, E, S.logits_rows.data(), V);
    else
        matmul(model.output(), S.x.data(), R, E, S.logits_rows.data(), V, n_threads);
    for (int64_t i = 0; i < R; ++i) std::memcpy(dsts[i], &S.logits_rows[i * V], static_cast<size_t>(V) * 4);
}

}  // namespace kvrt
