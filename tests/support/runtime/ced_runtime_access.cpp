// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// See ced_runtime_access.hpp.
#include "runtime/ced_runtime_access.hpp"

#include "model/arch/ced_runtime_seq.hpp"
#include "util/error.hpp"

#include <algorithm>
#include <string>
#include <vector>

namespace kvrt::ced {

void CedRuntimeAccess::fill_random(CedRuntime& rt, CedRuntime::SeqId id, int64_t n, uint64_t seed) {
    CedRuntime::Seq& s = rt.get(id);
    const CedConfig& c_ = rt.c_;
    auto& banks_ = rt.banks_;
    auto& windows_ = rt.windows_;
    KVRT_CHECK(s.tokens.empty() && n >= 1, KVRT_ERR_INVALID_STATE, "ced fill_random: needs an empty sequence");
    uint64_t st = seed * 0x9E3779B97F4A7C15ull + 1;
    auto rnd = [&] {  // uniform in [-sqrt(3), sqrt(3)): unit RMS
        st ^= st << 13;
        st ^= st >> 7;
        st ^= st << 17;
        return float((double(st >> 11) * (1.0 / 9007199254740992.0) * 2 - 1) * 1.7320508);
    };
    s.tokens.resize(n);
    for (auto& t : s.tokens) t = int32_t((st = st * 6364136223846793005ull + 1442695040888963407ull) >> 33) % c_.n_vocab;
    if (!s.bank) s.bank = banks_->create_sequence(rt.keys("ced/bank"));
    if (!s.win) s.win = windows_->create_sequence(rt.keys("ced/bench/" + std::to_string(++rt.replay_salt_counter_)));
    banks_->append(s.bank, s.tokens.data(), n);
    s.bank_len = n;
    std::vector<float> buf;
    const int64_t piece = 4096;
    for (int32_t si = 0; si < c_.n_sources(); si++) {
        const int64_t rows = n / c_.source_ratios[si];
        for (int32_t which = 0; which < 2; which++) {
            const size_t w = which ? c_.idx_dim : c_.entry_dim;
            for (int64_t r0 = 0; r0 < rows; r0 += piece) {
                const int64_t m = std::min(piece, rows - r0);
                buf.resize(size_t(m) * w);
                for (auto& v : buf) v = rnd();
                rt.put_rows(*banks_, s.bank, which ? CedRuntime::idx_layer(si) : CedRuntime::bank_layer(si), r0, m, buf.data(), w);
            }
        }
    }
    rt.ensure_appended(s, n);
    const int64_t lo = std::max<int64_t>(0, n - c_.window);
    for (int32_t l = 0; l < c_.n_layers; l++) {
        const size_t w = c_.entry_dim;
        buf.resize(size_t(n - lo) * w);
        for (auto& v : buf) v = rnd();
        rt.put_rows(*windows_, s.win, l, lo, n - lo, buf.data(), w);
    }
    banks_->mark_computed(s.bank, n);
    windows_->mark_computed(s.win, n);
    for (int32_t i = 0; i < c_.n_sources(); i++) {
        s.fixed[i] = 0;
        s.tail_kv[i].clear();
        s.tail_gate[i].clear();
        const int64_t r = c_.source_ratios[i];
        // An open group's raw rows: random too.
        for (int64_t p = (n / r) * r; p < n; p++)
            for (int32_t d = 0; d < c_.entry_dim; d++) {
                s.tail_kv[i].push_back(rnd());
                s.tail_gate[i].push_back(rnd());
            }
    }
    s.dec_start = s.dec_floor = s.enc_floor = 0;
    s.dec_next = n;
}

void CedRuntimeAccess::record_selections(CedRuntime& rt, bool on) { rt.record_selection_ = on; }

const std::vector<int32_t>& CedRuntimeAccess::last_selection(const CedRuntime& rt, int32_t layer) {
    KVRT_CHECK(rt.record_selection_, KVRT_ERR_INVALID_STATE, "ced: selections are not being recorded");
    return rt.last_sel_[static_cast<size_t>(layer)];
}

}  // namespace kvrt::ced
