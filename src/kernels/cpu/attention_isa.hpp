// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The per-ISA attention implementations (one translation unit per ISA, each compiling
// attention_core.inl for its vector width) and the table the dispatcher picks from.
// Arguments are already validated by the callers in attention.cpp / indexer.cpp.
#pragma once

#include "kernels/attention.hpp"
#include "kernels/indexer.hpp"
#include "util/isa.hpp"
#include "util/team_barrier.hpp"

namespace kvrt::cpu {

struct AttentionImpl {
    void (*prefill)(const PagedKV& kv, const AttnParams& p, const float* q, int32_t n_q, int32_t q_pos0, float* out,
                    float* lse);
    void (*decode)(const DecodeSeq* seqs, int32_t n_seqs, const AttnParams& p);
    void (*sparse)(const PagedKV& bank, const AttnParams& p, const SparseQuery* queries, int32_t n_queries);
    // ids == nullptr: positions 0..n-1.
    void (*indexer)(const PagedKV& keys, const IndexerQuery& q, const int32_t* ids, int32_t n, float* scores);
    // Query i scores positions [0, n_visible[i]) into scores + i * stride (indexer_core.inl).
    void (*indexer_batch)(const PagedKV& keys, const IndexerQuery* qs, const int32_t* n_visible, int32_t n_queries,
                          float* scores, size_t stride);
    // Decode in team mode (attention.hpp attention_decode_team) and the size of its shared buffer.
    void (*decode_team)(const DecodeSeq* seqs, int32_t n_seqs, const AttnParams& p, float* part, float* out,
                        TeamBarrier* barrier);
    size_t (*decode_part_floats)(const DecodeSeq* seqs, int32_t n_seqs, const AttnParams& p);
    // Prefill in team mode (attention.hpp attention_prefill_team).
    void (*prefill_team)(const PagedKV& kv, const AttnParams& p, const float* q, int32_t n_q, int32_t q_pos0,
                         float* out, const PrefillTeam& team);
};

const AttentionImpl& attention_impl_scalar();
const AttentionImpl& attention_impl_avx2();
const AttentionImpl& attention_impl_avxvnni();
const AttentionImpl& attention_impl_avx512();
const AttentionImpl& attention_impl_avx512vnni();
const AttentionImpl& attention_impl_avx512bf16();
// The implementation for isa_active().
const AttentionImpl& attention_impl();

// The body of each attention_impl_<isa>(): the table of the functions that attention_core.inl and
// indexer_core.inl compiled into the ISA's namespace ns (in its translation unit).
#define KVRT_ATTENTION_IMPL_OF(ns)                                                                 \
    static const AttentionImpl impl{&ns::prefill, &ns::decode, &ns::sparse, &ns::indexer,          \
                                    &ns::indexer_batch, &ns::decode_team, &ns::decode_part_floats, \
                                    &ns::prefill_team};                                            \
    return impl

// Where decode's KV prefetch stream (LineStream) brings its lines: true = L2 (prefetcht1), false
// = L1 (prefetcht0). Chosen once from the CPU (prefetch_streams_into_l2, util/isa.hpp;
// KVRT_ATTENTION_PREFETCH=l1 or l2 overrides it, for measurements). Intel: L2 (Sapphire Rapids
// class, 9/3 heads of 64 f16 over 131,072 keys, 1 thread: 1.25-1.45x faster, 2 threads alike);
// AMD Zen 4: L2 (the same shape: 7.7 -> 12.3-12.6 GB/s on 1 thread, 16 -> 24-25 on 2); AMD Zen 3
// / Zen 5: L1 (on Zen 5 prefetcht1 left the stream at its unprefetched speed). Results never
// depend on it.
bool attention_prefetch_l2() noexcept;

// Whether the avx512 level multiplies int8 K and V with AVX512_VNNI (vpdpbusd over the key
// tile's bytes, vpdpwssd / vpdpbusd in P.V: attention_avx512vnni.cpp) rather than vpmaddwd over
// sign-extended int16 pairs (attention_avx512.cpp). The same exact integers, so the same bits.
// Chosen once from the CPU: VNNI wherever it has it (the CPUs at this level rather than
// avx512bf16 are Intel's Cascade Lake, Ice Lake and Tiger Lake; Ice Lake-SP, session 42, int8 KV
// decode: figures in src/kernels/README.md). KVRT_I8_DOT=on|off overrides the rule (on only
// where the CPU has AVX512_VNNI). The avx512bf16 level always has it.
bool attention_avx512_i8_dot() noexcept;
// Tests: 1 takes VNNI (where the CPU has it), 0 vpmaddwd, -1 gives the choice back to the rule.
// Not for use while another thread runs attention.
void attention_avx512_i8_dot_override(int mode) noexcept;

// Whether the avx512bf16 path multiplies bf16 KV (attention: pair tiles) and bf16 keys (the CED
// indexer) in bf16 dot products (vdpbf16ps: the query and the softmax weights rounded to bf16,
// f32 sums), or in f32 products as the avx512 path does (the same bits as that path). Chosen once
// from the CPU's vendor: AMD yes (Zen 5: SmolLM2's bf16-KV prefill ~1.3x f16's, the indexer's
// scores 1.6x), Intel no (Sapphire Rapids class: vdpbf16ps multiplies at the rate of two f32
// FMAs, so the pair tiles' transposes and roundings were pure cost there; f32 products measured
// bf16-KV decode 1.25-1.4x, attention prefill 1.3-1.45x and the indexer's scores 1.5x faster,
// session 21). KVRT_BF16_DOT=on|off overrides the rule (measurements); results are the bits of
// the path chosen, decode == prefill either way.
bool attention_bf16_dot() noexcept;
// Tests: 1 forces bf16 dot products (where the ISA has them), 0 f32 products, -1 gives the choice
// back to the rule above. Not for use while another thread runs attention.
void attention_bf16_dot_override(int mode) noexcept;

// Whether the AVX-512 paths read quantised heads' scales (int8 and fp8 tiles) with masked gathers
// over the tile's row pointers (tile_scales_gathered) or one scalar load per key (tile_scale_words,
// as the AVX2 paths do). The same scales either way, so the same bits. Chosen once from the CPU:
// gathers, except on AMD Zen 4, whose gathers are slow (`bench_attention_decode`, int8, 1 thread:
// in cache 9/3 258-262 -> 250 us, 14/2 276-289 -> 273-278, 4/1 346-348 -> 334-337; beyond the
// LLC 14/2 5,035-5,189 -> 4,848-4,977, on 2 threads 2,715-2,832 -> 2,481-2,485; session 40), and
// on Intel cores before Alder Lake / Sapphire Rapids (cpu_is_intel_before_avxvnni: their gathers
// run under the Gather Data Sampling microcode mitigation; Ice Lake-SP, session 48, int8, 1
// thread, 5 alternated pairs in L2: 32/8 574-592 -> 520-554 us, 14/2 90-98 -> 83-90, 4/1
// 131-136 -> 111-124; beyond the LLC 4-8% faster). On the Intel Xeon (model 207) gathers were 3-5%
// faster in cache (session 27); Zen 5 was not measured and keeps them. KVRT_SCALE_GATHER=on|off
// overrides the rule (measurements).
bool attention_gather_scales() noexcept;
// Tests: 1 gathers, 0 scalar loads, -1 gives the choice back to the rule. Not for use while
// another thread runs attention.
void attention_gather_scales_override(int mode) noexcept;

}  // namespace kvrt::cpu
