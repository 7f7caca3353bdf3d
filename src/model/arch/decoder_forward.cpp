// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

#include "model/arch/decoder_forward.hpp"
#include "util/kv_quant.hpp"

#include "kernels/activation.hpp"
#include "kernels/attention.hpp"
#include "util/isa.hpp"
#include "kernels/rms_norm.hpp"
#include "kernels/rope.hpp"
#include "kernels/weight_matmul.hpp"
#include "model/model.hpp"
#include "util/error.hpp"
#include "util/region_error.hpp"
#include "util/team_barrier.hpp"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <exception>
#include <memory>
#include <utility>

namespace kvrt {

// ---------------------------------------------------------------------------
ContiguousKv::ContiguousKv(int32_t n_layers, int32_t n_kv_heads, int32_t head_dim, DType dtype, int64_t capacity)
    : ContiguousKv(n_kv_heads, head_dim,
                   KvLayerTypes{std::vector<DType>(static_cast<size_t>(n_layers), dtype),
                                std::vector<DType>(static_cast<size_t>(n_layers), dtype)},
                   capacity) {}

ContiguousKv::ContiguousKv(int32_t n_kv_heads, int32_t head_dim, const KvLayerTypes& types, int64_t capacity)
    : n_kv_heads_(n_kv_heads), head_dim_(head_dim), types_(types), capacity_(capacity) {
    const size_t n_layers = types.k.size();
    KVRT_CHECK(types.v.size() == n_layers, KVRT_ERR_INTERNAL, "ContiguousKv: K and V types of different layer counts");
    row_bytes_.resize(n_layers);
    v_row_bytes_.resize(n_layers);
    at_.resize(n_layers);
    size_t total = 0;
    for (size_t l = 0; l < n_layers; ++l) {
        row_bytes_[l] = static_cast<size_t>(n_kv_heads) * kv_head_bytes(types.k[l], head_dim);
        v_row_bytes_[l] = static_cast<size_t>(n_kv_heads) * kv_head_bytes(types.v[l], head_dim);
        at_[l] = total;
        total += static_cast<size_t>(capacity) * (row_bytes_[l] + v_row_bytes_[l]);
    }
    data_.resize(total);
    ptrs_.resize(n_layers);
    for (size_t l = 0; l < n_layers; ++l) ptrs_[l] = data_.data() + at_[l];
}

uint8_t* ContiguousKv::k_row_mut(int32_t layer, int64_t pos) {
    const size_t l = static_cast<size_t>(layer);
    return data_.data() + at_[l] + static_cast<size_t>(pos) * row_bytes_[l];
}
uint8_t* ContiguousKv::v_row_mut(int32_t layer, int64_t pos) {
    const size_t l = static_cast<size_t>(layer);
    return data_.data() + at_[l] + static_cast<size_t>(capacity_) * row_bytes_[l] + static_cast<size_t>(pos) * v_row_bytes_[l];
}
PagedKV ContiguousKv::view(int32_t layer, int64_t n_tokens) {
    PagedKV v;
    v.blocks = &ptrs_[layer];
    v.n_blocks = 1;
    v.block_tokens = static_cast<int32_t>(std::max<int64_t>(capacity_, 1));
    v.k_offset = 0;
    const size_t l = static_cast<size_t>(layer);
    v.v_offset = static_cast<size_t>(capacity_) * row_bytes_[l];
    v.row_bytes = row_bytes_[l];
    v.v_dtype = types_.v[l];
    v.v_row_bytes = v_row_bytes_[l];
    v.n_kv_heads = n_kv_heads_;
    v.head_dim = head_dim_;
    v.dtype = types_.k[l];
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


// Writes one K or V row into the store in its element type (the same function serves
// the fast and the reference forward, so both see identical rows).
void store_row(uint8_t* dst, const float* src, int64_t n, DType t) {
    switch (t) {
        case DType::I8:
        case DType::FP8_E4M3: break;  // store_cols (needs the head width)
        case DType::FP4:
        case DType::FP4_E8: break;    // CED bank rows only (never a decoder's)
        case DType::F32: std::memcpy(dst, src, static_cast<size_t>(n) * 4); break;
        case DType::F16:
            if (isa_active() >= Isa::Avx2) {  // AVX2 level = AVX2 + FMA + F16C (util/isa.hpp)
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

// Columns [c0, c0 + n) of a row (heads of width d): whole scale groups for the quantised types
// (the forward's K/V column tasks are whole heads).
void store_cols(uint8_t* row, const float* src, int64_t c0, int64_t n, DType t, int64_t d) {
    if (dtype_quantized(t)) kv_store_cols(row, src, c0, n, t, static_cast<int32_t>(d));
    else store_row(row + c0 * static_cast<int64_t>(dtype_size(t)), src, n, t);
}

// gate[i] = act(gate[i]) * up[i] (kernels/activation.hpp): every ISA path and both forward
// paths give the same bits (elementwise, whatever the split); ref: the double oracle.
void gated_act(float* gate, const float* up, int64_t n, FfnAct act, bool ref) {
    if (act == FfnAct::GeluTanh)
        ref ? kvrt::ref::gelu_tanh_mul(gate, up, n) : cpu::gelu_tanh_mul(gate, up, n);
    else
        ref ? kvrt::ref::silu_mul(gate, up, n) : cpu::silu_mul(gate, up, n);
}

// Rows x[m][c0, c0 + n) += bias[c0, c0 + n) for m < M (rows ld floats apart).
void add_bias(float* x, const std::vector<float>& bias, int64_t M, int64_t ld, int64_t c0, int64_t n) {
    if (bias.empty()) return;
    for (int64_t m = 0; m < M; ++m)
        for (int64_t i = 0; i < n; ++i) x[m * ld + c0 + i] += bias[static_cast<size_t>(c0 + i)];
}

// Q/K head RMSNorm (qk_norm) of heads [h0, h0 + nh) of M rows of ld floats: each head is
// its own row of head_dim (the same cpu::rms_norm rows in both forward paths).
void head_norm(float* x, const std::vector<float>& w, float eps, int64_t M, int64_t ld, int64_t h0, int64_t nh,
               int64_t D, bool ref) {
    if (w.empty()) return;
    for (int64_t m = 0; m < M; ++m) {
        float* row = x + m * ld + h0 * D;
        if (ref)
            ref::rms_norm(row, w.data(), eps, static_cast<int32_t>(nh), static_cast<int32_t>(D), row);
        else
            cpu::rms_norm(row, w.data(), eps, static_cast<int32_t>(nh), static_cast<int32_t>(D), row);
    }
}

// ---------------------------------------------------------------------------
// The team forward: decode-sized batches (M <= kTeamRows rows) run in ONE OpenMP parallel
// region when every step is a single token (decode) or every step is a chunk of several
// (a short prefill, e.g. the suffix after a prefix hit), with the attention in team mode
// (a batch that mixes the two: forward_prefill_team). With one thread it runs layer by layer
// without a region (the description below is of that form; the one-region forms put the
// attention call where the region would end, after a wait). Inside, weight
// matmuls are cut into column tasks (matmul_part) handed out dynamically; RoPE and
// the K/V cache write are fused into the Q/K/V tasks, SiLU into the gate/up tasks;
// norms and residual adds are recomputed by every thread on its own copy of the
// residual stream (a few KB) instead of one thread working while the others wait at a
// barrier. Synchronisation per layer: the region's end (before attention), the region
// start after it, and barriers after the output projection, gate/up and down.
// Every element is computed with the same functions and operations as the chunked
// path, so the results are bit-identical (tests/unit/test_runtime_exactness.cpp).
constexpr int64_t kTeamRows = 16;

// Task counters of one team region: a thread takes the next index of a phase until
// none is left (cheaper than a dynamic OpenMP loop's work-share). Between phases the
// threads meet at a TeamBarrier (util/team_barrier.hpp): it spins for a budget that
// shrinks when waits run long, then sleeps, whatever OMP_WAIT_POLICY says, so that the
// five waits per layer are not five futex sleeps and wake-ups under `passive`. (An
// earlier barrier of ours that only spun was dropped: on a loaded machine the thread it
// waited for could be queued on its own CPU; the shrinking budget is for that.) Every
// thread passes every wait, errors included (guard, attention_decode_team).
class TeamTasks {
public:
    static constexpr int kPhases = 4;
    void reset() {  // before the region
        for (auto& c : next_) c.store(0, std::memory_order_relaxed);
    }
    template <class Fn>
    void run(int phase, int64_t n, Fn&& fn) {
        for (int64_t t; (t = next_[phase].fetch_add(1, std::memory_order_relaxed)) < n;) fn(t);
    }

private:
    std::atomic<int64_t> next_[kPhases] = {};
};

// Splits [0, pairs) into n nearly equal ranges aligned to `unit` pairs.
void split_pairs(int64_t pairs, int64_t unit, int64_t n, std::vector<std::pair<int64_t, int64_t>>& out) {
    out.clear();
    const int64_t units = (pairs + unit - 1) / unit;
    n = std::max<int64_t>(1, std::min(n, units));
    for (int64_t i = 0; i < n; ++i) {
        const int64_t a = std::min(pairs, units * i / n * unit), b = std::min(pairs, units * (i + 1) / n * unit);
        if (b > a) out.emplace_back(a, b);
    }
}

}  // namespace

namespace {

// Rows of the batch that want logits, and where each goes.
void logit_rows(std::span<SeqStep> batch, int64_t V, std::vector<int64_t>& rows, std::vector<float*>& dsts) {
    rows.clear();
    dsts.clear();
    int64_t r = 0;
    for (SeqStep& s : batch) {
        if (s.logits) {
            if (s.logits_all) {
                int64_t k = 0;
                for (int32_t t = 0; t < s.n_tokens; ++t) {
                    if (s.logits_mask && !s.logits_mask[t]) continue;
                    rows.push_back(r + t);
                    dsts.push_back(s.logits + k++ * V);
                }
            } else {
                rows.push_back(r + s.n_tokens - 1);
                dsts.push_back(s.logits);
            }
        }
        r += s.n_tokens;
    }
}

// The attention of layer l for the whole batch (new K/V rows already in the stores).
void attend(std::span<SeqStep> batch, ForwardScratch& S, const AttnParams& ap, int64_t QD, uint32_t l, bool ref) {
    int64_t r = 0;
    S.decode.clear();
    for (size_t i = 0; i < batch.size(); ++i) {
        SeqStep& s = batch[i];
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
}

// RoPE's (cos, sin) pairs of the M rows at S.pos, once per distinct base (Gemma 3: its local
// and global layers) into S.rope_cs, rather than once per layer, head slice and call:
// cpu::rope_apply with them gives cpu::rope's bits. Returns each layer's offset in S.rope_cs.
std::vector<size_t> rope_tables(const DecoderConfig& c, const RopeParams& rq, ForwardScratch& S, int64_t M) {
    const size_t per = static_cast<size_t>(M) * static_cast<size_t>(rq.rope_dims);
    std::vector<float> thetas;
    std::vector<size_t> at(c.n_layers);
    for (uint32_t l = 0; l < c.n_layers; ++l) {
        const float th = c.layer_rope_theta(l);
        size_t k = 0;
        while (k < thetas.size() && thetas[k] != th) ++k;
        if (k == thetas.size()) thetas.push_back(th);
        at[l] = k * per;
    }
    S.rope_cs.resize(thetas.size() * per);
    for (size_t k = 0; k < thetas.size(); ++k) {
        RopeParams rp = rq;
        rp.theta = thetas[k];
        cpu::rope_table(S.pos.data(), static_cast<int32_t>(M), rp, false, S.rope_cs.data() + k * per);
    }
    return at;
}

// The cache rows of every (layer, row) of the batch into S.krow / S.vrow (reserved by the
// caller, fixed for the call), their K and V types, and where each step's rows start.
struct BatchRows {
    std::vector<DType> kdt, vdt;  // per (layer, row): index l * M + r
    std::vector<int64_t> first;   // per step
};
BatchRows batch_rows(std::span<SeqStep> batch, ForwardScratch& S, int64_t NL, int64_t M) {
    BatchRows b;
    S.krow.resize(static_cast<size_t>(NL * M));
    S.vrow.resize(static_cast<size_t>(NL * M));
    b.kdt.resize(static_cast<size_t>(NL * M));
    b.vdt.resize(static_cast<size_t>(NL * M));
    b.first.resize(batch.size());
    int64_t r = 0;
    for (size_t i = 0; i < batch.size(); ++i) {
        SeqStep& s = batch[i];
        b.first[i] = r;
        for (int32_t t = 0; t < s.n_tokens; ++t, ++r)
            for (int64_t l = 0; l < NL; ++l) {
                const int32_t l32 = static_cast<int32_t>(l);
                S.krow[l * M + r] = s.kv->k_row_mut(l32, s.pos0 + t);
                S.vrow[l * M + r] = s.kv->v_row_mut(l32, s.pos0 + t);
                b.kdt[l * M + r] = s.kv->dtype(l32);
                b.vdt[l * M + r] = s.kv->v_dtype(l32);
            }
    }
    return b;
}

// The cache views of every (layer, step) into S.views (index l * steps + i), taken before a
// parallel region: the cache is not read concurrently from inside one.
void batch_views(std::span<SeqStep> batch, ForwardScratch& S, int64_t NL) {
    const size_t nb = batch.size();
    S.views.resize(static_cast<size_t>(NL) * nb);
    for (int64_t l = 0; l < NL; ++l)
        for (size_t i = 0; i < nb; ++i)
            S.views[static_cast<size_t>(l) * nb + i] =
                batch[i].kv->view(static_cast<int32_t>(l), batch[i].pos0 + batch[i].n_tokens);
}

// See "The team forward" above. S.x holds the embeddings and S.pos the positions.
void forward_team(const Model& model, std::span<SeqStep> batch, ForwardScratch& S, int n_threads, int64_t M,
                  const RopeParams& rq, const RopeParams& rk, AttnParams ap) {
    const DecoderConfig& c = model.config();
    const int64_t E = c.n_embd, QD = c.q_dim(), KD = c.kv_dim(), F = c.n_ff, V = c.n_vocab, D = c.head_dim;
    const int64_t Hq = c.n_heads, Hkv = c.n_kv_heads, NL = c.n_layers;
    const int nt = std::max(1, n_threads > 0 ? n_threads : omp_get_max_threads());

    const BatchRows br = batch_rows(batch, S, NL, M);
    const std::vector<DType>&row_dt = br.kdt, &row_vdt = br.vdt;
    const int64_t RD = rq.rope_dims;
    const std::vector<size_t> rope_at = rope_tables(c, rq, S, M);
    std::vector<int64_t> rows;
    std::vector<float*> dsts;
    logit_rows(batch, V, rows, dsts);
    const int64_t R = static_cast<int64_t>(rows.size());
    if (R > 1) S.logits_rows.resize(static_cast<size_t>(R * V));

    // Column tasks (pair ranges). Q/K/V: whole heads (head_dim % 32 == 0), so a task can
    // rotate and store what it computed; Q in about nt groups, K and V in about nt/2.
    std::vector<std::pair<int64_t, int64_t>> q_parts, k_parts, wo_parts, ff_parts, down_parts, head_parts;
    const int64_t hp = D / 32;  // pairs per head
    split_pairs(Hq * hp, hp, nt, q_parts);
    split_pairs(Hkv * hp, hp, (nt + 1) / 2, k_parts);
    // The output projection, gate/up and down in up to kTasksPerThread tasks per thread, each of
    // at least kTaskBytes of weights (times M: more rows, more work per byte): the team meets after
    // each, and with 2 per thread a thread slowed for a moment (a shared host) left the other
    // spinning for up to a task's time; tasks much smaller than that pay their start (the weight
    // stream's first lines) more than they balance. Each thread quantises a phase's input once
    // (MatmulPartInput). Measured on an Intel Xeon (model 207, avx512), 2 threads: Qwen2.5-Coder-0.5B
    // decode at 256 positions, TeamBarrier::wait 8-9% -> 5% of the samples and six alternated runs
    // 52.9 -> 57.6 tokens/s (median); 8 tasks per thread regardless of size were no faster for
    // SmolLM2-135M (23-70 KiB tasks) and Gemma 3 270M.
    constexpr int64_t kTasksPerThread = 8;
    constexpr double kTaskBytes = 128 << 10;
    const DecoderLayerWeights* L0 = NL > 0 ? &model.layer(0) : nullptr;  // (its sizes stand for every layer's)
    auto n_tasks = [&](size_t bytes) {
        return std::clamp<int64_t>(static_cast<int64_t>(static_cast<double>(bytes) * static_cast<double>(M) / kTaskBytes),
                                   nt, kTasksPerThread * nt);
    };
    split_pairs((E + 31) / 32, 2, n_tasks(L0 ? L0->wo->bytes() : 0), wo_parts);
    split_pairs((F + 31) / 32, 2, n_tasks(L0 ? L0->w_gate->bytes() + L0->w_up->bytes() : 0), ff_parts);
    split_pairs((E + 31) / 32, 2, n_tasks(L0 ? L0->w_down->bytes() : 0), down_parts);
    split_pairs(matmul_pairs(model.output()), 8, 16 * nt, head_parts);
    const int64_t n_qkv = static_cast<int64_t>(q_parts.size() + 2 * k_parts.size());

    // Per-thread copies of the residual stream and its normalised form.
    S.team.resize(static_cast<size_t>(nt) * 2 * M * E);
    RegionError error;
    auto guard = [&](auto&& fn) { error.guard(fn); };

    // x += out, or x += RMSNorm(out) * w with the architecture's post-sub-layer norm
    // (tmp: M x E floats of the thread's own).
    auto add_residual = [&](float* x, const float* out, const std::vector<float>& w, float* tmp) {
        if (!w.empty()) {
            guard([&] { cpu::rms_norm(out, w.data(), c.rms_eps, static_cast<int32_t>(M), static_cast<int32_t>(E), tmp); });
            out = tmp;
        }
        for (int64_t i = 0; i < M * E; ++i) x[i] += out[i];
    };

    // Where the team's threads meet between phases (util/team_barrier.hpp).
    TeamBarrier bar;

    // Step l: the FFN half of layer l-1 (l > 0), then the attention input of layer l
    // (l < NL), or the output head (l == NL). Run by every thread of a region on its own
    // residual copy xp (and xnp, its normalised form); `sync` hands out the column tasks.
    auto step = [&](int64_t l, TeamTasks& sync, int tid, int team, float* xp, float* xnp, const float* att) {
            if (l > 0) {
                const DecoderLayerWeights& P = model.layer(static_cast<uint32_t>(l - 1));
                const MatmulPartInput in_att(att, M, QD, S.act.other);
                sync.run(0, static_cast<int64_t>(wo_parts.size()), [&](int64_t t) {
                    guard([&] { matmul_part(*P.wo, in_att, S.xn.data(), E, wo_parts[t].first, wo_parts[t].second); });
                });
                bar.wait(team);
                add_residual(xp, S.xn.data(), P.post_attn_norm, xnp);
                guard([&] { cpu::rms_norm(xp, P.ffn_norm.data(), c.rms_eps, static_cast<int32_t>(M), static_cast<int32_t>(E), xnp); });
                const MatmulPartInput in_ff(xnp, M, E, S.act.other);  // (gate and up: one quantisation per thread)
                sync.run(1, static_cast<int64_t>(ff_parts.size()), [&](int64_t t) {
                    guard([&] {
                        const int64_t p0 = ff_parts[t].first, p1 = ff_parts[t].second;
                        matmul_part(*P.w_gate, in_ff, S.gate.data(), F, p0, p1);
                        matmul_part(*P.w_up, in_ff, S.up.data(), F, p0, p1);
                        const int64_t c0 = 32 * p0, c1 = std::min(F, 32 * p1);
                        for (int64_t m = 0; m < M; ++m) gated_act(&S.gate[m * F + c0], &S.up[m * F + c0], c1 - c0, c.ffn_act, false);
                    });
                });
                bar.wait(team);
                // (also: every thread has read S.xn before down overwrites it)
                const MatmulPartInput in_down(S.gate.data(), M, F, S.act.other);
                sync.run(2, static_cast<int64_t>(down_parts.size()), [&](int64_t t) {
                    guard([&] { matmul_part(*P.w_down, in_down, S.xn.data(), E, down_parts[t].first, down_parts[t].second); });
                });
                bar.wait(team);
                add_residual(xp, S.xn.data(), P.post_ffn_norm, xnp);
                if (tid == 0) std::copy_n(xp, M * E, S.x.data());  // read again only by the next region
            }
            if (l < NL) {
                const DecoderLayerWeights& L = model.layer(static_cast<uint32_t>(l));
                guard([&] { cpu::rms_norm(xp, L.attn_norm.data(), c.rms_eps, static_cast<int32_t>(M), static_cast<int32_t>(E), xnp); });
                sync.run(3, n_qkv, [&](int64_t t) {
                    guard([&] {
                        const int64_t nq = static_cast<int64_t>(q_parts.size()), nk = static_cast<int64_t>(k_parts.size());
                        if (t < nq) {  // Q heads: project, bias, norm, rotate
                            const auto [p0, p1] = q_parts[t];
                            matmul_part(*L.wq, xnp, M, E, S.q.data(), QD, p0, p1, KernelIsa::Auto, S.act.other);
                            add_bias(S.q.data(), L.bq, M, QD, 32 * p0, 32 * (p1 - p0));
                            head_norm(S.q.data(), L.q_norm, c.rms_eps, M, QD, p0 / hp, (p1 - p0) / hp, D, false);
                            RopeParams r1 = rq;
                            r1.n_heads = static_cast<int32_t>((p1 - p0) / hp);
                            const float* cs = S.rope_cs.data() + rope_at[static_cast<size_t>(l)];
                            for (int64_t m = 0; m < M; ++m) cpu::rope_apply(&S.q[m * QD + 32 * p0], 1, cs + m * RD, r1);
                            return;
                        }
                        // K heads: project, rotate, store; V heads: project, store.
                        const bool is_k = t < nq + nk;
                        const auto [p0, p1] = k_parts[is_k ? t - nq : t - nq - nk];
                        float* out = is_k ? S.k.data() : S.v.data();
                        matmul_part(is_k ? *L.wk : *L.wv, xnp, M, E, out, KD, p0, p1, KernelIsa::Auto, is_k ? S.act.k : S.act.v);
                        const int64_t c0 = 32 * p0, n = 32 * (p1 - p0);
                        add_bias(out, is_k ? L.bk : L.bv, M, KD, c0, n);
                        if (is_k) head_norm(out, L.k_norm, c.rms_eps, M, KD, p0 / hp, (p1 - p0) / hp, D, false);
                        RopeParams r1 = rk;
                        r1.n_heads = static_cast<int32_t>((p1 - p0) / hp);
                        const float* cs = S.rope_cs.data() + rope_at[static_cast<size_t>(l)];
                        for (int64_t m = 0; m < M; ++m) {
                            if (is_k) cpu::rope_apply(&out[m * KD + c0], 1, cs + m * RD, r1);
                            uint8_t* row = (is_k ? S.krow : S.vrow)[l * M + m];
                            store_cols(row, &out[m * KD + c0], c0, n, is_k ? row_dt[l * M + m] : row_vdt[l * M + m], D);
                        }
                    });
                });
            } else if (R > 0) {
                // Final norm of the rows that want logits, then the head.
                for (int64_t i = 0; i < R; ++i) std::copy_n(&xp[rows[i] * E], E, &xnp[i * E]);
                guard([&] { cpu::rms_norm(xnp, model.output_norm().data(), c.rms_eps, static_cast<int32_t>(R), static_cast<int32_t>(E), xp); });
                float* Y = R == 1 ? dsts[0] : S.logits_rows.data();
                const MatmulPartInput in_head(xp, R, E, S.act.head);
                sync.run(3, static_cast<int64_t>(head_parts.size()), [&](int64_t t) {
                    guard([&] { matmul_part(model.output(), in_head, Y, V, head_parts[t].first, head_parts[t].second); });
                });
            }
    };
    auto layer_params = [&](int64_t l) {
        AttnParams a = ap;
        a.window = c.layer_is_window(static_cast<uint32_t>(l)) ? static_cast<int32_t>(c.sliding_window) : 0;
        return a;
    };

    bool all_decode = nt > 1, all_prefill = nt > 1;
    for (const SeqStep& s : batch) {
        all_decode = all_decode && s.n_tokens == 1;
        all_prefill = all_prefill && s.n_tokens > 1;
    }
    if (all_decode) {
        // Decode batches: ONE parallel region for the whole token. The attention kernel runs
        // in team mode inside it (cpu::attention_decode_team: the chunk items shared out by
        // thread number, each thread folds the chunk partials into its own copy of the
        // attention output), so a layer costs five waits at the TeamBarrier and no fork/join:
        // after Q/K/V, after the attention's chunk items, after the output projection, after
        // gate/up and after down.
        const size_t nb = batch.size();
        S.views.resize(static_cast<size_t>(NL) * nb);
        S.decode.resize(static_cast<size_t>(NL) * nb);
        size_t part_floats = 0;
        for (int64_t l = 0; l < NL; ++l)
            for (size_t i = 0; i < nb; ++i) {
                const SeqStep& s = batch[i];
                PagedKV& v = S.views[static_cast<size_t>(l) * nb + i];
                v = s.kv->view(static_cast<int32_t>(l), s.pos0 + 1);
                DecodeSeq& d = S.decode[static_cast<size_t>(l) * nb + i];
                d = DecodeSeq{};
                d.kv = &v;
                d.q = &S.q[static_cast<int64_t>(i) * QD];
                d.pos = static_cast<int32_t>(s.pos0);
                if (i + 1 == nb)
                    part_floats = std::max(part_floats, cpu::attention_decode_part_floats(
                                                            &S.decode[static_cast<size_t>(l) * nb],
                                                            static_cast<int32_t>(nb), layer_params(l)));
            }
        std::vector<float> part(std::max<size_t>(part_floats, 1));
        std::vector<float> att(static_cast<size_t>(nt) * static_cast<size_t>(M * QD));
        std::unique_ptr<TeamTasks[]> syncs(new TeamTasks[static_cast<size_t>(NL) + 1]);
#pragma omp parallel num_threads(nt)
        {
            const int tid = omp_get_thread_num(), team = omp_get_num_threads();
            float* xp = &S.team[static_cast<size_t>(tid) * 2 * M * E];
            float* xnp = xp + M * E;
            float* my_att = &att[static_cast<size_t>(tid) * static_cast<size_t>(M * QD)];
            std::copy_n(S.x.data(), M * E, xp);
            for (int64_t l = 0; l <= NL; ++l) {
                step(l, syncs[static_cast<size_t>(l)], tid, team, xp, xnp, my_att);
                if (l < NL) {
                    bar.wait(team);
                    // Every thread makes the same call (the kernel's checks throw alike on all).
                    const AttnParams a = layer_params(l);
                    guard([&] {
                        cpu::attention_decode_team(&S.decode[static_cast<size_t>(l) * nb], static_cast<int32_t>(nb), a,
                                                   part.data(), my_att, &bar);
                    });
                }
            }
        }
        error.rethrow();
    } else if (all_prefill) {
        // Prefill chunks of a few rows (the suffix after a prefix hit): ONE parallel region too,
        // the attention in team mode (cpu::attention_prefill_team, into the shared S.att; its
        // last wait makes the output complete for the next step's projection).
        const size_t nb = batch.size();
        const std::vector<int64_t>& first_row = br.first;
        batch_views(batch, S, NL);
        std::unique_ptr<TeamTasks[]> syncs(new TeamTasks[static_cast<size_t>(NL) + 1]);
        std::unique_ptr<std::atomic<int>[]> att_next(new std::atomic<int>[static_cast<size_t>(NL) * nb]());
        float* part_slot = nullptr;
#pragma omp parallel num_threads(nt)
        {
            const int tid = omp_get_thread_num(), team = omp_get_num_threads();
            float* xp = &S.team[static_cast<size_t>(tid) * 2 * M * E];
            float* xnp = xp + M * E;
            std::copy_n(S.x.data(), M * E, xp);
            for (int64_t l = 0; l <= NL; ++l) {
                step(l, syncs[static_cast<size_t>(l)], tid, team, xp, xnp, S.att.data());
                if (l == NL) break;
                bar.wait(team);  // every new K/V row stored and every Q row ready
                const AttnParams a = layer_params(l);
                for (size_t i = 0; i < nb; ++i) {
                    const cpu::PrefillTeam pt{&bar, &att_next[static_cast<size_t>(l) * nb + i], &part_slot};
                    guard([&] {
                        cpu::attention_prefill_team(S.views[static_cast<size_t>(l) * nb + i], a, &S.q[first_row[i] * QD],
                                                    batch[i].n_tokens, static_cast<int32_t>(batch[i].pos0),
                                                    &S.att[first_row[i] * QD], pt);
                    });
                }
            }
        }
        error.rethrow();
    } else {
        TeamTasks sync;
        for (int64_t l = 0; l <= NL; ++l) {
            sync.reset();
#pragma omp parallel num_threads(nt) if (nt > 1)
            {
                const int tid = omp_get_thread_num(), team = omp_get_num_threads();
                float* xp = &S.team[static_cast<size_t>(tid) * 2 * M * E];
                float* xnp = xp + M * E;
                std::copy_n(S.x.data(), M * E, xp);
                step(l, sync, tid, team, xp, xnp, S.att.data());
            }
            error.rethrow();
            if (l < NL) attend(batch, S, layer_params(l), QD, static_cast<uint32_t>(l), false);
        }
    }
    if (R > 1)
        for (int64_t i = 0; i < R; ++i) std::memcpy(dsts[i], &S.logits_rows[i * V], static_cast<size_t>(V) * 4);
}

// ---------------------------------------------------------------------------------------------
// The team prefill: batches of prefill chunks of more than kTeamRows rows, and batches of any
// size that mix chunks with single-token steps (their attention: the decode kernel's team mode,
// one call per layer for all of them), run the whole forward in ONE OpenMP parallel region, as
// decode does, instead of a region per
// weight matmul and per attention call with the norms, RoPE, cache writes and activations on one
// thread between them. Thread i of n owns rows [M*i/n, M*(i+1)/n) for the row-wise work (norms,
// biases, RoPE, cache writes, residual adds, the gated activation), and the matmuls
// (matmul_team) and attention (attention_prefill_team) share their tasks as matmul() and
// attention_prefill() do; matmul_team quantises its input by the same row split, so a thread's
// own rows need no wait before it. The team meets at a TeamBarrier (util/team_barrier.hpp), not
// at OpenMP barriers, so OMP_WAIT_POLICY=passive does not turn each wait into a sleep. Same
// functions, same per-row and per-element operations as the chunked path: the same bits
// (tests/unit/test_runtime_exactness.cpp).
void forward_prefill_team(const Model& model, std::span<SeqStep> batch, ForwardScratch& S, int nt, int64_t M,
                          const RopeParams& rq, const RopeParams& rk, AttnParams ap) {
    const DecoderConfig& c = model.config();
    const int64_t E = c.n_embd, QD = c.q_dim(), KD = c.kv_dim(), F = c.n_ff, V = c.n_vocab, D = c.head_dim;
    const int64_t NL = c.n_layers, RD = rq.rope_dims;
    const size_t nb = batch.size();
    const BatchRows br = batch_rows(batch, S, NL, M);
    const std::vector<DType>&row_dt = br.kdt, &row_vdt = br.vdt;
    const std::vector<int64_t>& first_row = br.first;
    batch_views(batch, S, NL);
    const std::vector<size_t> rope_at = rope_tables(c, rq, S, M);
    std::vector<int64_t> rows;
    std::vector<float*> dsts;
    logit_rows(batch, V, rows, dsts);
    const int64_t R = static_cast<int64_t>(rows.size());
    std::vector<float> head_in(static_cast<size_t>(std::max<int64_t>(R, 1) * E));
    if (R > 1) S.logits_rows.resize(static_cast<size_t>(R * V));
    S.team_act.reserve(M, std::max({E, QD, F}));

    auto layer_params = [&](int64_t l) {
        AttnParams a = ap;
        a.window = c.layer_is_window(static_cast<uint32_t>(l)) ? static_cast<int32_t>(c.sliding_window) : 0;
        return a;
    };
    // Single-token steps among the chunks (a prefill_batch round that gives a prompt one row,
    // continuous batching): one decode call per layer for all of them, in the decode kernel's team
    // mode, as the layer-by-layer path batches them (attend). Each thread folds their rows into
    // its own dec_out and copies the rows it owns (r0..r1 below) into S.att: the rows matmul_team
    // quantises on that thread, so the output projection needs no further wait.
    std::vector<size_t> singles;
    for (size_t i = 0; i < nb; ++i)
        if (batch[i].n_tokens == 1) singles.push_back(i);
    const size_t ns = singles.size();
    S.decode.resize(static_cast<size_t>(NL) * ns);
    size_t dec_part_floats = 0;
    for (int64_t l = 0; l < NL && ns > 0; ++l) {
        DecodeSeq* ds = &S.decode[static_cast<size_t>(l) * ns];
        for (size_t k = 0; k < ns; ++k) {
            const SeqStep& s = batch[singles[k]];
            ds[k] = DecodeSeq{};
            ds[k].kv = &S.views[static_cast<size_t>(l) * nb + singles[k]];
            ds[k].q = &S.q[first_row[singles[k]] * QD];
            ds[k].pos = static_cast<int32_t>(s.pos0);
        }
        dec_part_floats = std::max(dec_part_floats, cpu::attention_decode_part_floats(ds, static_cast<int32_t>(ns), layer_params(l)));
    }
    std::vector<float> dec_part(ns > 0 ? std::max<size_t>(dec_part_floats, 1) : 0);
    std::vector<float> dec_out(static_cast<size_t>(nt) * ns * static_cast<size_t>(QD));
    // Cancellation is read before each layer of a batch of more than kTeamRows rows (context.h:
    // a smaller step runs to its end).
    const bool check_cancel = M > kTeamRows;

    constexpr int64_t kMatmuls = 7;  // per layer: q, k, v, o, gate, up, down
    std::unique_ptr<std::atomic<int64_t>[]> mm_next(new std::atomic<int64_t>[static_cast<size_t>(NL * kMatmuls + 1)]());
    std::unique_ptr<std::atomic<int>[]> att_next(new std::atomic<int>[static_cast<size_t>(NL) * nb]());
    std::vector<uint8_t> stop(static_cast<size_t>(NL), 0);
    float* part_slot = nullptr;
    TeamBarrier bar;
    RegionError error;
    auto guard = [&](auto&& fn) { error.guard(fn); };

#pragma omp parallel num_threads(nt)
    {
        const int tid = omp_get_thread_num(), team = omp_get_num_threads();
        float* my_dec = ns > 0 ? &dec_out[static_cast<size_t>(tid) * ns * static_cast<size_t>(QD)] : nullptr;
        const int64_t r0 = M * tid / team, r1 = M * (tid + 1) / team, n = r1 - r0;
        const int32_t n32 = static_cast<int32_t>(n), E32 = static_cast<int32_t>(E);
        auto mm = [&](const PackedWeight& w, const float* X, int64_t ldx, float* Y, int64_t ldy, ActBits ab, int64_t k) {
            guard([&] { matmul_team(w, X, M, ldx, Y, ldy, ab, S.team_act, mm_next[static_cast<size_t>(k)], bar); });
        };
        bool cancelled = false;
        for (int64_t l = 0; l < NL; ++l) {
            if (tid == 0) stop[static_cast<size_t>(l)] = check_cancel && S.cancel && S.cancel->load(std::memory_order_relaxed);
            bar.wait(team);  // (the flag, read once for the team)
            if (stop[static_cast<size_t>(l)]) {
                cancelled = true;
                break;
            }
            const DecoderLayerWeights& L = model.layer(static_cast<uint32_t>(l));
            const int64_t k0 = l * kMatmuls;
            guard([&] { cpu::rms_norm(&S.x[r0 * E], L.attn_norm.data(), c.rms_eps, n32, E32, &S.xn[r0 * E]); });
            mm(*L.wq, S.xn.data(), E, S.q.data(), QD, S.act.other, k0 + 0);
            mm(*L.wk, S.xn.data(), E, S.k.data(), KD, S.act.k, k0 + 1);
            mm(*L.wv, S.xn.data(), E, S.v.data(), KD, S.act.v, k0 + 2);
            guard([&] {
                add_bias(&S.q[r0 * QD], L.bq, n, QD, 0, QD);
                add_bias(&S.k[r0 * KD], L.bk, n, KD, 0, KD);
                add_bias(&S.v[r0 * KD], L.bv, n, KD, 0, KD);
                head_norm(&S.q[r0 * QD], L.q_norm, c.rms_eps, n, QD, 0, c.n_heads, D, false);
                head_norm(&S.k[r0 * KD], L.k_norm, c.rms_eps, n, KD, 0, c.n_kv_heads, D, false);
                const float* cs = S.rope_cs.data() + rope_at[static_cast<size_t>(l)] + r0 * RD;
                cpu::rope_apply(&S.q[r0 * QD], n32, cs, rq);
                cpu::rope_apply(&S.k[r0 * KD], n32, cs, rk);
                for (int64_t m = r0; m < r1; ++m) {
                    store_cols(S.krow[l * M + m], &S.k[m * KD], 0, KD, row_dt[l * M + m], D);
                    store_cols(S.vrow[l * M + m], &S.v[m * KD], 0, KD, row_vdt[l * M + m], D);
                }
            });
            bar.wait(team);  // every new K/V row stored and every Q row ready
            const AttnParams a = layer_params(l);
            for (size_t i = 0; i < nb; ++i) {
                const SeqStep& s = batch[i];
                if (s.n_tokens == 1) continue;  // (the decode call below)
                const PagedKV& view = S.views[static_cast<size_t>(l) * nb + i];
                const cpu::PrefillTeam pt{&bar, &att_next[static_cast<size_t>(l) * nb + i], &part_slot};
                guard([&] {
                    cpu::attention_prefill_team(view, a, &S.q[first_row[i] * QD], s.n_tokens, static_cast<int32_t>(s.pos0),
                                                &S.att[first_row[i] * QD], pt);
                });
            }
            if (ns > 0) {
                // Every thread makes the same call (the kernel's checks throw alike on all).
                guard([&] {
                    cpu::attention_decode_team(&S.decode[static_cast<size_t>(l) * ns], static_cast<int32_t>(ns), a,
                                               dec_part.data(), my_dec, &bar);
                });
                for (size_t k = 0; k < ns; ++k) {
                    const int64_t row = first_row[singles[k]];
                    if (row >= r0 && row < r1) std::copy_n(my_dec + k * static_cast<size_t>(QD), QD, &S.att[row * QD]);
                }
            }
            mm(*L.wo, S.att.data(), QD, S.xn.data(), E, S.act.other, k0 + 3);
            guard([&] {
                if (!L.post_attn_norm.empty())
                    cpu::rms_norm(&S.xn[r0 * E], L.post_attn_norm.data(), c.rms_eps, n32, E32, &S.xn[r0 * E]);
                for (int64_t i = r0 * E; i < r1 * E; ++i) S.x[i] += S.xn[i];
                cpu::rms_norm(&S.x[r0 * E], L.ffn_norm.data(), c.rms_eps, n32, E32, &S.xn[r0 * E]);
            });
            mm(*L.w_gate, S.xn.data(), E, S.gate.data(), F, S.act.other, k0 + 4);
            mm(*L.w_up, S.xn.data(), E, S.up.data(), F, S.act.other, k0 + 5);
            guard([&] { gated_act(&S.gate[r0 * F], &S.up[r0 * F], n * F, c.ffn_act, false); });
            mm(*L.w_down, S.gate.data(), F, S.xn.data(), E, S.act.other, k0 + 6);
            guard([&] {
                if (!L.post_ffn_norm.empty())
                    cpu::rms_norm(&S.xn[r0 * E], L.post_ffn_norm.data(), c.rms_eps, n32, E32, &S.xn[r0 * E]);
                for (int64_t i = r0 * E; i < r1 * E; ++i) S.x[i] += S.xn[i];
            });
        }
        // The head, for the rows that want logits (unless cancelled).
        if (R > 0 && !cancelled) {
            bar.wait(team);  // every row's residual stream final
            const int64_t h0 = R * tid / team, h1 = R * (tid + 1) / team;
            guard([&] {
                for (int64_t i = h0; i < h1; ++i) std::copy_n(&S.x[rows[static_cast<size_t>(i)] * E], E, &head_in[i * E]);
                cpu::rms_norm(&head_in[h0 * E], model.output_norm().data(), c.rms_eps, static_cast<int32_t>(h1 - h0), E32,
                              &head_in[h0 * E]);
            });
            float* Y = R == 1 ? dsts[0] : S.logits_rows.data();
            guard([&] { matmul_team(model.output(), head_in.data(), R, E, Y, V, S.act.head, S.team_act, mm_next[static_cast<size_t>(NL * kMatmuls)], bar); });
        }
    }
    error.rethrow();
    for (int64_t l = 0; l < NL; ++l)
        if (stop[static_cast<size_t>(l)])
            fail(KVRT_ERR_CANCELLED, "cancelled by kvrt_context_cancel before layer " + std::to_string(l));
    if (R > 1)
        for (int64_t i = 0; i < R; ++i) std::memcpy(dsts[static_cast<size_t>(i)], &S.logits_rows[i * V], static_cast<size_t>(V) * 4);
}

}  // namespace

void decoder_forward(const Model& model, std::span<SeqStep> batch, ForwardScratch& S, KernelSet ks, int n_threads) {
    const DecoderConfig& c = model.config();
    const int64_t E = c.n_embd, QD = c.q_dim(), KD = c.kv_dim(), F = c.n_ff, V = c.n_vocab;
    int64_t M = 0;
    for (const SeqStep& s : batch) {
        KVRT_CHECK(s.n_tokens > 0 && s.kv != nullptr, KVRT_ERR_INTERNAL, "decoder_forward: empty step");
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
    std::vector<size_t> rope_at;  // the fast path's (cos, sin) tables (rope_tables)
    auto rope = [&](float* x, const RopeParams& rp, uint32_t l) {
        if (ref)
            ref::rope(x, static_cast<int32_t>(M), S.pos.data(), rp);
        else
            cpu::rope_apply(x, static_cast<int32_t>(M), S.rope_cs.data() + rope_at[l], rp);
    };
    AttnParams ap;
    ap.n_heads = static_cast<int32_t>(c.n_heads);
    ap.head_dim = static_cast<int32_t>(c.head_dim);
    ap.scale = c.softmax_scale();
    auto mm = [&](const PackedWeight& w, const float* X, int64_t ldx, float* Y, int64_t ldy, ActBits ab) {
        if (ref)
            matmul_ref(w, X, M, ldx, Y, ldy, ab);
        else
            matmul(w, X, M, ldx, Y, ldy, n_threads, KernelIsa::Auto, ab);
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
    // One parallel region per step: batches that mix prefill chunks with single-token steps, and
    // prefill chunks of more than kTeamRows rows, in forward_prefill_team; decode batches and short
    // prefill chunks in forward_team. The layer by layer path below serves the reference kernels
    // and one thread (forward_team's own layer loop, for one thread, has no region).
    if (!ref) {
        const int nt = std::max(1, n_threads > 0 ? n_threads : omp_get_max_threads());
        bool any_single = false, any_chunk = false;
        for (const SeqStep& s : batch) (s.n_tokens == 1 ? any_single : any_chunk) = true;
        if (nt > 1 && any_single && any_chunk) {
            forward_prefill_team(model, batch, S, nt, M, rq, rk, ap);
            return;
        }
        if (M <= kTeamRows && c.head_dim % 32 == 0) {
            forward_team(model, batch, S, n_threads, M, rq, rk, ap);
            return;
        }
        if (nt > 1 && !any_single) {
            forward_prefill_team(model, batch, S, nt, M, rq, rk, ap);
            return;
        }
    }
    if (!ref) rope_at = rope_tables(c, rq, S, M);

    for (uint32_t l = 0; l < c.n_layers; ++l) {
        if (S.cancel && S.cancel->load(std::memory_order_relaxed))
            fail(KVRT_ERR_CANCELLED, "cancelled by kvrt_context_cancel before layer " + std::to_string(l));
        const DecoderLayerWeights& L = model.layer(l);
        rmsnorm(S.x.data(), L.attn_norm.data(), S.xn.data(), M);
        mm(*L.wq, S.xn.data(), E, S.q.data(), QD, S.act.other);
        mm(*L.wk, S.xn.data(), E, S.k.data(), KD, S.act.k);
        mm(*L.wv, S.xn.data(), E, S.v.data(), KD, S.act.v);
        add_bias(S.q.data(), L.bq, M, QD, 0, QD);
        add_bias(S.k.data(), L.bk, M, KD, 0, KD);
        add_bias(S.v.data(), L.bv, M, KD, 0, KD);
        head_norm(S.q.data(), L.q_norm, c.rms_eps, M, QD, 0, c.n_heads, c.head_dim, ref);
        head_norm(S.k.data(), L.k_norm, c.rms_eps, M, KD, 0, c.n_kv_heads, c.head_dim, ref);
        rq.theta = rk.theta = c.layer_rope_theta(l);
        rope(S.q.data(), rq, l);
        rope(S.k.data(), rk, l);
        ap.window = c.layer_is_window(l) ? static_cast<int32_t>(c.sliding_window) : 0;
        // Write the new rows first, then attend (a token attends to itself through the store).
        // Prefill chunks (n > 1) go through the prefill kernel one sequence at a time; single
        // tokens are batched into one decode call (bit-identical to a prefill row, see attention.hpp).
        {
            int64_t r = 0;
            for (SeqStep& s : batch) {
                const DType dt = s.kv->dtype(static_cast<int32_t>(l)), vdt = s.kv->v_dtype(static_cast<int32_t>(l));
                for (int32_t t = 0; t < s.n_tokens; ++t) {
                    store_cols(s.kv->k_row_mut(static_cast<int32_t>(l), s.pos0 + t), &S.k[(r + t) * KD], 0, KD, dt, c.head_dim);
                    store_cols(s.kv->v_row_mut(static_cast<int32_t>(l), s.pos0 + t), &S.v[(r + t) * KD], 0, KD, vdt, c.head_dim);
                }
                r += s.n_tokens;
            }
        }
        attend(batch, S, ap, QD, l, ref);
        // Output projection + residual.
        mm(*L.wo, S.att.data(), QD, S.xn.data(), E, S.act.other);
        if (!L.post_attn_norm.empty()) rmsnorm(S.xn.data(), L.post_attn_norm.data(), S.xn.data(), M);
        for (int64_t i = 0; i < M * E; ++i) S.x[i] += S.xn[i];
        // SwiGLU FFN + residual.
        rmsnorm(S.x.data(), L.ffn_norm.data(), S.xn.data(), M);
        mm(*L.w_gate, S.xn.data(), E, S.gate.data(), F, S.act.other);
        mm(*L.w_up, S.xn.data(), E, S.up.data(), F, S.act.other);
        gated_act(S.gate.data(), S.up.data(), M * F, c.ffn_act, ref);
        mm(*L.w_down, S.gate.data(), F, S.xn.data(), E, S.act.other);
        if (!L.post_ffn_norm.empty()) rmsnorm(S.xn.data(), L.post_ffn_norm.data(), S.xn.data(), M);
        for (int64_t i = 0; i < M * E; ++i) S.x[i] += S.xn[i];
    }

    // Final norm and the head, only for the rows that want logits.
    std::vector<int64_t> rows;
    std::vector<float*> dsts;
    logit_rows(batch, V, rows, dsts);
    if (rows.empty()) return;
    const int64_t R = static_cast<int64_t>(rows.size());
    for (int64_t i = 0; i < R; ++i) std::memcpy(&S.xn[i * E], &S.x[rows[i] * E], static_cast<size_t>(E) * 4);
    rmsnorm(S.xn.data(), model.output_norm().data(), S.x.data(), R);
    S.logits_rows.resize(static_cast<size_t>(R * V));
    if (ref)
        matmul_ref(model.output(), S.x.data(), R, E, S.logits_rows.data(), V, S.act.head);
    else
        matmul(model.output(), S.x.data(), R, E, S.logits_rows.data(), V, n_threads, KernelIsa::Auto, S.act.head);
    for (int64_t i = 0; i < R; ++i) std::memcpy(dsts[i], &S.logits_rows[i * V], static_cast<size_t>(V) * 4);
}

}  // namespace kvrt
