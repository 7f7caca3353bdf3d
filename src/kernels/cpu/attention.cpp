// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// cpu:: attention entry points: argument checks, then the implementation of the active ISA.
#include "kernels/attention.hpp"
#include "kernels/cpu/attention_isa.hpp"
#include "kernels/kv_checks.hpp"
#include "kernels/onednn/sparse_attention.hpp"
#include "util/error.hpp"

#include <atomic>
#include <cstdlib>
#include <string>

namespace kvrt::cpu {

const AttentionImpl& attention_impl() {
    switch (isa_active()) {
        case Isa::Amx:  // attention has no AMX path: the avx512bf16 one
        case Isa::Avx512Bf16: return attention_impl_avx512bf16();
        case Isa::Avx512: return attention_avx512_i8_dot() ? attention_impl_avx512vnni() : attention_impl_avx512();
        // (The level may be asked for, by KVRT_ISA, on a CPU with AVX-512 but not AVX-VNNI.)
        case Isa::AvxVnni: return cpu_features().avxvnni ? attention_impl_avxvnni() : attention_impl_avx2();
        case Isa::Avx2: return attention_impl_avx2();
        case Isa::Scalar: break;
    }
    return attention_impl_scalar();
}

bool attention_prefetch_l2() noexcept {
    static const bool l2 = [] {
        if (const char* e = std::getenv("KVRT_ATTENTION_PREFETCH")) {
            if (std::string(e) == "l1") return false;
            if (std::string(e) == "l2") return true;
        }
        return prefetch_streams_into_l2(cpu_features());
    }();
    return l2;
}

namespace {
// A choice made once from the CPU (rule), which the environment variable `env` (on|off) replaces
// for measurements and a test override (1, 0; -1: none) replaces in turn.
bool env_on_off(const char* env, bool rule) {
    if (const char* e = std::getenv(env)) {
        if (std::string(e) == "on") return true;
        if (std::string(e) == "off") return false;
    }
    return rule;
}
bool overridden(const std::atomic<int>& o, bool rule) {
    const int v = o.load(std::memory_order_relaxed);
    return v < 0 ? rule : v != 0;
}
void set_override(std::atomic<int>& o, int mode) {
    o.store(mode < 0 ? -1 : mode != 0 ? 1 : 0, std::memory_order_relaxed);
}
std::atomic<int> g_bf16_dot_override{-1};
std::atomic<int> g_gather_scales_override{-1};
std::atomic<int> g_avx512_i8_dot_override{-1};
}  // namespace

bool attention_bf16_dot() noexcept {
    static const bool rule = env_on_off("KVRT_BF16_DOT", !cpu_features().intel);
    return overridden(g_bf16_dot_override, rule);
}

void attention_bf16_dot_override(int mode) noexcept { set_override(g_bf16_dot_override, mode); }

bool attention_avx512_i8_dot() noexcept {
    const bool vnni = cpu_features().avx512vnni;
    static const bool rule = env_on_off("KVRT_I8_DOT", vnni);
    return vnni && overridden(g_avx512_i8_dot_override, rule);
}

void attention_avx512_i8_dot_override(int mode) noexcept { set_override(g_avx512_i8_dot_override, mode); }

bool attention_gather_scales() noexcept {
    static const bool rule = [] {
        const CpuFeatures& f = cpu_features();
        return env_on_off("KVRT_SCALE_GATHER", !cpu_is_zen4(f) && !cpu_is_intel_before_avxvnni(f));
    }();
    return overridden(g_gather_scales_override, rule);
}

void attention_gather_scales_override(int mode) noexcept { set_override(g_gather_scales_override, mode); }

void attention_prefill(const PagedKV& kv, const AttnParams& p, const float* q, int32_t n_q, int32_t q_pos0,
                       float* out, float* lse) {
    const char* what = "attention_prefill";
    kernels::check_attn_params(kv, p, what);
    KVRT_CHECK(n_q >= 0 && q_pos0 >= 0, KVRT_ERR_INVALID_ARGUMENT, "attention_prefill: negative n_q or q_pos0");
    if (n_q == 0) return;
    KVRT_CHECK(q && out, KVRT_ERR_INVALID_ARGUMENT, "attention_prefill: null q or out");
    kernels::check_rows_present(kv, attn_first_key(p, q_pos0), int64_t(q_pos0) + n_q - 1, what);
    attention_impl().prefill(kv, p, q, n_q, q_pos0, out, lse);
}

namespace {
void check_decode(const DecodeSeq* seqs, int32_t n_seqs, const AttnParams& p, bool team) {
    const char* what = "attention_decode";
    KVRT_CHECK(n_seqs >= 0 && (n_seqs == 0 || seqs), KVRT_ERR_INVALID_ARGUMENT, "attention_decode: null seqs");
    for (int32_t i = 0; i < n_seqs; ++i) {
        const DecodeSeq& s = seqs[i];
        KVRT_CHECK(s.kv && s.q && (team || s.out), KVRT_ERR_INVALID_ARGUMENT,
                   "attention_decode: sequence " + std::to_string(i) + " has a null kv, q or out");
        kernels::check_attn_params(*s.kv, p, what);
        KVRT_CHECK(s.pos >= 0, KVRT_ERR_INVALID_ARGUMENT, "attention_decode: negative pos");
        kernels::check_rows_present(*s.kv, attn_first_key(p, s.pos), s.pos, what);
    }
}
}  // namespace

void attention_decode(const DecodeSeq* seqs, int32_t n_seqs, const AttnParams& p) {
    check_decode(seqs, n_seqs, p, false);
    if (n_seqs == 0) return;
    attention_impl().decode(seqs, n_seqs, p);
}

void attention_decode_team(const DecodeSeq* seqs, int32_t n_seqs, const AttnParams& p, float* part, float* out,
                           TeamBarrier* barrier) {
    check_decode(seqs, n_seqs, p, true);
    if (n_seqs == 0) return;
    KVRT_CHECK(part && out, KVRT_ERR_INVALID_ARGUMENT, "attention_decode_team: null part or out");
    attention_impl().decode_team(seqs, n_seqs, p, part, out, barrier);
}

void attention_prefill_team(const PagedKV& kv, const AttnParams& p, const float* q, int32_t n_q, int32_t q_pos0,
                            float* out, const PrefillTeam& team) {
    const char* what = "attention_prefill_team";
    kernels::check_attn_params(kv, p, what);
    KVRT_CHECK(n_q >= 0 && q_pos0 >= 0, KVRT_ERR_INVALID_ARGUMENT, "attention_prefill_team: negative n_q or q_pos0");
    KVRT_CHECK(team.barrier && team.next && team.part, KVRT_ERR_INVALID_ARGUMENT,
               "attention_prefill_team: null barrier, counter or partial slot");
    if (n_q == 0) return;
    KVRT_CHECK(q && out, KVRT_ERR_INVALID_ARGUMENT, "attention_prefill_team: null q or out");
    kernels::check_rows_present(kv, attn_first_key(p, q_pos0), int64_t(q_pos0) + n_q - 1, what);
    attention_impl().prefill_team(kv, p, q, n_q, q_pos0, out, team);
}

size_t attention_decode_part_floats(const DecodeSeq* seqs, int32_t n_seqs, const AttnParams& p) {
    return attention_impl().decode_part_floats(seqs, n_seqs, p);
}

void attention_sparse(const PagedKV& bank, const AttnParams& p, const SparseQuery* queries, int32_t n_queries) {
    const char* what = "attention_sparse";
    kernels::check_sparse_args(bank, p, queries, n_queries, what);
    if (n_queries == 0) return;
    // oneDNN GEMMs per query and gathered tile where they measured faster (KVRT_ONEDNN, onednn/).
    if (onednn::sparse_attention_use_onednn(bank, p)) return onednn::attention_sparse(bank, p, queries, n_queries);
    attention_impl().sparse(bank, p, queries, n_queries);
}

}  // namespace kvrt::cpu
