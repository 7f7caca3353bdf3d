// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

#include "runtime/ced_reference.hpp"

#include "util/error.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

namespace kvrt::ced {
namespace {

using Row = std::vector<float>;

Row matvec(const PackedWeight& w, const float* x) {
    Row y(static_cast<size_t>(w.rows()));
    matmul_ref(w, x, 1, w.cols(), y.data(), w.rows());
    return y;
}

Row rms_norm(const float* x, size_t n, const std::vector<float>& w, float eps) {
    double ss = 0;
    for (size_t i = 0; i < n; i++) ss += double(x[i]) * x[i];
    const double inv = 1.0 / std::sqrt(ss / double(n) + double(eps));
    Row y(n);
    for (size_t i = 0; i < n; i++) y[i] = float(double(x[i]) * inv * double(w[i]));
    return y;
}

// NeoX rotation of the last R dims of each of n_heads heads of width dim.
void rope_tail(float* v, int32_t n_heads, int32_t dim, int32_t R, double theta, int64_t pos, bool inverse) {
    const int32_t half = R / 2;
    for (int32_t h = 0; h < n_heads; h++) {
        float* t = v + size_t(h) * dim + (dim - R);
        for (int32_t i = 0; i < half; i++) {
            double ang = double(pos) * std::pow(theta, -2.0 * i / double(R));
            if (inverse) ang = -ang;
            const double c = std::cos(ang), s = std::sin(ang);
            const double a = t[i], b = t[i + half];
            t[i] = float(a * c - b * s);
            t[i + half] = float(a * s + b * c);
        }
    }
}

bool better(float sa, int32_t ia, float sb, int32_t ib) {
    const bool na = std::isnan(sa), nb = std::isnan(sb);
    if (na != nb) return nb;
    if (!na && sa != sb) return sa > sb;
    return ia < ib;
}

// The k best of (scores[i], ids[i]), returned as ascending ids.
std::vector<int32_t> top_k(const std::vector<float>& scores, const std::vector<int32_t>& ids, int32_t k) {
    std::vector<size_t> o(scores.size());
    std::iota(o.begin(), o.end(), size_t(0));
    std::sort(o.begin(), o.end(), [&](size_t a, size_t b) { return better(scores[a], ids[a], scores[b], ids[b]); });
    std::vector<int32_t> out;
    for (size_t i = 0; i < o.size() && out.size() < size_t(k); i++) out.push_back(ids[o[i]]);
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace

CedReference::CedReference(std::shared_ptr<const CedWeights> w) : w_(std::move(w)), c_(w_->cfg) { reset(); }

void CedReference::reset() {
    tokens_.clear();
    win_.assign(c_.n_layers, {});
    main_.assign(c_.n_sources(), {});
    idxk_.assign(c_.n_sources(), {});
    raw_kv_.assign(c_.n_sources(), {});
    raw_gate_.assign(c_.n_sources(), {});
    fixed_groups_.assign(c_.n_sources(), 0);
    sel_.assign(c_.n_layers, {});
    published_.clear();
    candidates_.clear();
    layer_rms_.assign(c_.n_layers + 1, 0.0);
    enc_floor_ = dec_floor_ = 0;
}

std::vector<float> CedReference::prefill(const int32_t* tokens, int64_t n, PrefillMode mode, int64_t hit) {
    KVRT_CHECK(tokens && n >= 1, KVRT_ERR_INVALID_ARGUMENT, "ced reference: empty prompt");
    KVRT_CHECK(hit >= 0 && hit < n, KVRT_ERR_OUT_OF_RANGE, "ced reference: hit outside [0, n)");
    for (int32_t r : c_.source_ratios)
        KVRT_CHECK(hit % r == 0, KVRT_ERR_INVALID_ARGUMENT, "ced reference: hit is not a multiple of every ratio");
    for (int64_t i = 0; i < n; i++)
        KVRT_CHECK(tokens[i] >= 0 && tokens[i] < c_.n_vocab, KVRT_ERR_OUT_OF_RANGE,
                   "ced reference: token id " + std::to_string(tokens[i]) + " is outside the vocabulary");
    reset();
    tokens_.assign(tokens, tokens + n);
    const int64_t W = c_.window;
    if (hit > 0) {
        // Phase A: the cold encoder pass that built the cached bank rows.
        for (int64_t p = 0; p < hit; p++) run_position(p, false, nullptr);
        for (int32_t s = 0; s < c_.n_sources(); s++) fixed_groups_[s] = hit / c_.source_ratios[s];
        // Window rows, tail state and hidden states are not part of the prefix cache.
        win_.assign(c_.n_layers, {});
        raw_kv_.assign(c_.n_sources(), {});
        raw_gate_.assign(c_.n_sources(), {});
        published_.clear();
        candidates_.clear();
    }
    const int64_t start = hit - std::min(W, hit);
    const int64_t dec_start = mode == PrefillMode::Exact ? start : std::max<int64_t>(0, n - W);
    enc_floor_ = start;
    dec_floor_ = dec_start;
    std::vector<float> out;
    for (int64_t p = start; p < n; p++) run_position(p, p >= dec_start, p == n - 1 ? &out : nullptr);
    return out;
}

std::vector<float> CedReference::decode(int32_t token) {
    KVRT_CHECK(!tokens_.empty(), KVRT_ERR_INVALID_STATE, "ced reference: decode before prefill");
    KVRT_CHECK(token >= 0 && token < c_.n_vocab, KVRT_ERR_OUT_OF_RANGE,
               "ced reference: token id " + std::to_string(token) + " is outside the vocabulary");
    tokens_.push_back(token);
    std::vector<float> out;
    run_position(length() - 1, true, &out);
    return out;
}

void CedReference::run_position(int64_t p, bool run_decoder, std::vector<float>* logits_out) {
    const size_t E = c_.n_embd;
    std::vector<float> x(E);
    w_->tok_embd->dequantize_row(tokens_[p], x.data());
    auto rms = [&](const std::vector<float>& v) {
        double ss = 0;
        for (float f : v) ss += double(f) * f;
        return std::sqrt(ss / double(v.size()));
    };
    layer_rms_[0] = rms(x);
    const int32_t last = run_decoder ? c_.n_layers : c_.n_encoder;
    for (int32_t l = 0; l < last; l++) {
        layer(l, p, x);
        layer_rms_[l + 1] = rms(x);
    }
    if (!run_decoder) {
        // CED prefill: the decoder source still projects its bank row from the
        // final encoder hidden state (the input of layer L/2).
        const int32_t l = c_.decoder_source();
        const int32_t s = c_.bank_of[l];
        if (p >= fixed_groups_[s]) {
            const CedLayerWeights& L = w_->layers[l];
            Row h = rms_norm(x.data(), E, L.attn_norm, c_.rms_eps);
            Row kv = matvec(*L.bank_kv, h.data());
            Row latent = rms_norm(kv.data(), kv.size(), L.bank_norm, c_.rms_eps);
            Row ik = matvec(*L.idx_k, latent.data());
            Row key = rms_norm(ik.data(), ik.size(), L.idx_k_norm, c_.rms_eps);
            rope_tail(key.data(), 1, c_.idx_dim, c_.rope_dims, c_.rope_theta, p, false);
            rope_tail(latent.data(), 1, c_.entry_dim, c_.rope_dims, c_.rope_theta, p, false);
            if (main_[s].size() <= size_t(p)) main_[s].resize(p + 1), idxk_[s].resize(p + 1);
            main_[s][p] = std::move(latent);
            idxk_[s][p] = std::move(key);
        }
    }
    if (logits_out) *logits_out = logits(x);
}

void CedReference::layer(int32_t l, int64_t p, std::vector<float>& x) {
    const CedLayerWeights& L = w_->layers[l];
    const size_t E = c_.n_embd;
    const int32_t H = c_.n_heads, D = c_.entry_dim, R = c_.rope_dims;
    const double theta = c_.rope_theta;
    Row h = rms_norm(x.data(), E, L.attn_norm, c_.rms_eps);

    // ---- bank rows (source layers)
    const int32_t s = c_.bank_of[l];
    if (c_.is_source[l]) {
        const int32_t r = c_.source_ratios[s];
        const int64_t g = p / r;
        if (g >= fixed_groups_[s]) {
            Row kv = matvec(*L.bank_kv, h.data());
            Row latent;
            if (r == 1) {
                latent = rms_norm(kv.data(), D, L.bank_norm, c_.rms_eps);
            } else {
                if (raw_kv_[s].size() <= size_t(p)) raw_kv_[s].resize(p + 1), raw_gate_[s].resize(p + 1);
                raw_kv_[s][p] = kv;
                raw_gate_[s][p] = matvec(*L.bank_gate, h.data());
                if ((p + 1) % r == 0) {
                    Row pooled(D);
                    for (int32_t d = 0; d < D; d++) {
                        double m = -std::numeric_limits<double>::infinity();
                        for (int64_t q = g * r; q <= p; q++) m = std::max(m, double(raw_gate_[s][q][d]));
                        double den = 0, num = 0;
                        for (int64_t q = g * r; q <= p; q++) {
                            const double e = std::exp(double(raw_gate_[s][q][d]) - m);
                            den += e;
                            num += e * raw_kv_[s][q][d];
                        }
                        pooled[d] = float(num / den);
                    }
                    latent = rms_norm(pooled.data(), D, L.bank_norm, c_.rms_eps);
                }
            }
            if (!latent.empty()) {
                Row ik = matvec(*L.idx_k, latent.data());
                Row key = rms_norm(ik.data(), ik.size(), L.idx_k_norm, c_.rms_eps);
                rope_tail(key.data(), 1, c_.idx_dim, R, theta, g * r, false);
                rope_tail(latent.data(), 1, D, R, theta, g * r, false);
                if (main_[s].size() <= size_t(g)) main_[s].resize(g + 1), idxk_[s].resize(g + 1);
                main_[s][g] = std::move(latent);
                idxk_[s][g] = std::move(key);
            }
        }
    }

    // ---- window row
    {
        Row kv = matvec(*L.wkv, h.data());
        Row row = rms_norm(kv.data(), D, L.kv_norm, c_.rms_eps);
        rope_tail(row.data(), 1, D, R, theta, p, false);
        if (win_[l].size() <= size_t(p)) win_[l].resize(p + 1);
        win_[l][p] = std::move(row);
    }

    // ---- selection
    std::vector<int32_t> sel;
    if (s >= 0) {
        const int32_t r = c_.source_ratios[s];
        const int32_t n_vis = static_cast<int32_t>((p + 1) / r);
        if (c_.is_index[l]) {
            const int32_t Hi = c_.idx_heads, Di = c_.idx_dim;
            Row iq = matvec(*L.idx_q, h.data());
            rope_tail(iq.data(), Hi, Di, R, theta, p, false);
            Row iw = matvec(*L.idx_w, h.data());
            auto score = [&](int32_t row) {
                const Row& k = idxk_[s][row];
                KVRT_CHECK(!k.empty(), KVRT_ERR_INTERNAL, "ced reference: indexer key missing");
                double total = 0;
                for (int32_t hh = 0; hh < Hi; hh++) {
                    double dot = 0;
                    for (int32_t d = 0; d < Di; d++) dot += double(iq[size_t(hh) * Di + d]) * k[d];
                    total += double(iw[hh]) * (dot > 0 ? dot : 0);
                }
                return float(total);
            };
            std::vector<int32_t> rows;
            if (l > c_.decoder_source()) {
                rows = candidates_;
            } else {
                rows.resize(n_vis);
                std::iota(rows.begin(), rows.end(), 0);
            }
            std::vector<float> sc(rows.size());
            for (size_t i = 0; i < rows.size(); i++) sc[i] = score(rows[i]);
            if (l == c_.decoder_source()) {
                // Block-max candidates over every visible position; the newest block always kept.
                const int32_t B = c_.cand_block;
                const int32_t n_blocks = (n_vis + B - 1) / B;
                std::vector<int32_t> blocks;
                if (n_blocks <= c_.cand_blocks) {
                    for (int32_t b = 0; b < n_blocks; b++) blocks.push_back(b);
                } else {
                    std::vector<float> bmax(n_blocks - 1);
                    std::vector<int32_t> ids(n_blocks - 1);
                    for (int32_t b = 0; b + 1 < n_blocks; b++) {
                        float m = -std::numeric_limits<float>::infinity();
                        for (int32_t i = b * B; i < (b + 1) * B; i++) m = std::max(m, sc[i]);
                        bmax[b] = m;
                        ids[b] = b;
                    }
                    blocks = top_k(bmax, ids, c_.cand_blocks - 1);
                    blocks.push_back(n_blocks - 1);
                }
                candidates_.clear();
                std::vector<float> csc;
                for (int32_t b : blocks)
                    for (int32_t i = b * B; i < std::min((b + 1) * B, n_vis); i++) {
                        candidates_.push_back(i);
                        csc.push_back(sc[i]);
                    }
                sel = top_k(csc, candidates_, c_.top_k);
            } else {
                sel = top_k(sc, rows, c_.top_k);
            }
            published_ = sel;
        } else {
            sel = published_;
        }
    }
    sel_[l] = sel;

    // ---- attention: window rows + selected bank rows (K = V), sinks, inverse RoPE
    Row q = matvec(*L.wq, h.data());
    rope_tail(q.data(), H, D, R, theta, p, false);
    const int64_t floor = l < c_.n_encoder ? enc_floor_ : dec_floor_;
    const int64_t lo = std::max<int64_t>(floor, p - c_.window + 1);
    std::vector<const Row*> keys;
    for (int64_t j = lo; j <= p; j++) {
        KVRT_CHECK(!win_[l][j].empty(), KVRT_ERR_INTERNAL, "ced reference: window row missing");
        keys.push_back(&win_[l][j]);
    }
    for (int32_t g : sel) {
        KVRT_CHECK(size_t(g) < main_[s].size() && !main_[s][g].empty(), KVRT_ERR_INTERNAL,
                   "ced reference: bank row missing");
        keys.push_back(&main_[s][g]);
    }
    const double scale = 1.0 / std::sqrt(double(D));
    Row att(size_t(H) * D);
    for (int32_t hh = 0; hh < H; hh++) {
        const float* qh = q.data() + size_t(hh) * D;
        std::vector<double> lg(keys.size());
        double m = L.sinks[hh];
        for (size_t j = 0; j < keys.size(); j++) {
            double dot = 0;
            for (int32_t d = 0; d < D; d++) dot += double(qh[d]) * (*keys[j])[d];
            lg[j] = dot * scale;
            m = std::max(m, lg[j]);
        }
        double den = std::exp(double(L.sinks[hh]) - m);
        std::vector<double> acc(D, 0.0);
        for (size_t j = 0; j < keys.size(); j++) {
            const double e = std::exp(lg[j] - m);
            den += e;
            for (int32_t d = 0; d < D; d++) acc[d] += e * (*keys[j])[d];
        }
        for (int32_t d = 0; d < D; d++) att[size_t(hh) * D + d] = float(acc[d] / den);
    }
    rope_tail(att.data(), H, D, R, theta, p, true);
    Row o = matvec(*L.wo, att.data());
    for (size_t i = 0; i < E; i++) x[i] += o[i];

    // ---- SwiGLU FFN
    Row h2 = rms_norm(x.data(), E, L.ffn_norm, c_.rms_eps);
    Row gt = matvec(*L.ffn_gate, h2.data());
    Row up = matvec(*L.ffn_up, h2.data());
    for (size_t i = 0; i < gt.size(); i++) {
        const double g = gt[i];
        gt[i] = float(g / (1.0 + std::exp(-g)) * double(up[i]));
    }
    Row dn = matvec(*L.ffn_down, gt.data());
    for (size_t i = 0; i < E; i++) x[i] += dn[i];
}

std::vector<float> CedReference::logits(const std::vector<float>& x) const {
    Row h = rms_norm(x.data(), x.size(), w_->output_norm, c_.rms_eps);
    return matvec(*w_->output, h.data());
}

}  // namespace kvrt::ced
