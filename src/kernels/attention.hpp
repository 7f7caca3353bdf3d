// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Attention kernels over paged KV: causal prefill, batched decode, sparse K=V
// global attention, and the log-sum-exp merge of partial results.
//
// Two implementations behind the same signatures:
//   kvrt::ref::*  naive loops, double accumulation: the oracle (src/kernels/ref/).
//   kvrt::cpu::*  the fast path (src/kernels/cpu/): OpenMP threads, AVX-512 /
//                 AVX2 / portable code chosen at run time (kernels/isa.hpp).
// All read K/V in place through kvrt::PagedKV (kernels/paged_kv.hpp): rows of
// positions a call does not need are never touched (blocks before a sliding
// window may be null). KV dtype f32, bf16 or f16; any head_dim (the fast path
// is tuned for 64, 128, 256, 512); MHA/GQA/MQA: query head h reads KV head
// h / (n_heads / n_kv_heads). Queries and outputs are f32, head-major per
// token: [token][n_heads][head_dim].
//
// Bad arguments (null pointers, shapes that disagree with the PagedKV,
// positions past kv.n_tokens, a needed block that is null) throw kvrt::Error
// (KVRT_ERR_INVALID_ARGUMENT) before any output is written.
//
// Determinism (cpu::). The result for one query row (one token, one head) is a
// function of that row's query and keys only: not of how a prefill was cut
// into chunks, of the other sequences in a decode batch or their order, of
// the thread count. The reduction order is fixed by absolute key positions:
//   - keys are taken in tiles of kKeyTile (32) positions aligned to multiples
//     of 32, or kKeyTileWide (64) on the AVX-512 paths (for sparse attention:
//     that many consecutive entries of the row list); each tile updates the
//     row's running (max, sum, output) by online softmax;
//   - tiles are grouped in chunks of kKeyChunk (512) aligned positions; each
//     chunk's partial starts fresh and the chunk partials are folded in
//     increasing order. Decode splits work across threads along these chunks
//     (split-K), prefill walks them in order: both perform the same operations
//     on the same values, so decode of position p is bit-identical to row p of
//     a prefill over the same cache (on the same ISA path).
//   - int8 K: the query is quantised to int8 per 32 dims (query_quant.hpp) and
//     Q.K runs in exact integer sums, in prefill and decode alike; ref:: quantises
//     the query the same way.
#pragma once

#include "kernels/paged_kv.hpp"
#include "util/team_barrier.hpp"

#include <atomic>
#include <cstdint>

namespace kvrt {

inline constexpr int32_t kKeyTile = 32;      // AVX2, AVX-VNNI and scalar paths
inline constexpr int32_t kKeyTileWide = 64;  // AVX-512 paths (cpu/attention_core.inl says why)
inline constexpr int32_t kKeyChunk = 512;

// Shape and options shared by the attention kernels.
struct AttnParams {
    int32_t n_heads = 0;     // query heads; a multiple of kv.n_kv_heads
    int32_t head_dim = 0;    // must equal kv.head_dim
    float scale = 0;         // logits = scale * q.k (typically 1/sqrt(head_dim))
    // Sliding window: query at position p sees keys [max(window_floor, p - window + 1, 0), p].
    // window <= 0: no window (keys [window_floor, p]).
    int32_t window = 0;
    int32_t window_floor = 0;
    // Optional per-head sink logits [n_heads] (nullptr: none): exp(sink_h) is added to the
    // softmax denominator of head h (it attends to "nothing"). The lse output includes it.
    const float* sinks = nullptr;
};

// First key position visible to a query at position p.
inline int64_t attn_first_key(const AttnParams& p, int64_t pos) {
    int64_t lo = p.window_floor > 0 ? p.window_floor : 0;
    if (p.window > 0 && pos - p.window + 1 > lo) lo = pos - p.window + 1;
    return lo;
}

// One sequence of a decode batch: one query token at position `pos`.
struct DecodeSeq {
    const PagedKV* kv = nullptr;  // rows [0, pos] must be valid (pos < kv->n_tokens)
    const float* q = nullptr;     // [n_heads][head_dim]
    float* out = nullptr;         // [n_heads][head_dim]
    float* lse = nullptr;         // optional [n_heads]: natural log-sum-exp of the scaled logits
    int32_t pos = 0;              // the query's position (keys up to and including pos)
};

// Selected rows of a K=V bank for one query token (sparse global attention).
struct SparseQuery {
    const float* q = nullptr;       // [n_heads][head_dim], RoPE already applied at the query position
    const int32_t* rows = nullptr;  // bank positions, any order (the order is the reduction order;
                                    // callers pass them ascending, as topk_rows returns them)
    int32_t n_rows = 0;             // 0 allowed: output 0 (or the sink alone), lse = sink or -inf
    float* out = nullptr;           // [n_heads][head_dim]
    float* lse = nullptr;           // [n_heads] (required: the partial is meant to be merged)
};

namespace ref {
// Causal prefill of one sequence: n_q queries at positions [q_pos0, q_pos0 + n_q), their K/V
// already in `kv` (q_pos0 + n_q <= kv.n_tokens). Query at position p attends to keys
// [attn_first_key(p), p]. q, out: [n_q][n_heads][head_dim]; lse: optional [n_q][n_heads].
void attention_prefill(const PagedKV& kv, const AttnParams& p, const float* q, int32_t n_q, int32_t q_pos0,
                       float* out, float* lse = nullptr);
// Decode: one query per sequence, each with its own PagedKV and position.
void attention_decode(const DecodeSeq* seqs, int32_t n_seqs, const AttnParams& p);
// Sparse global attention over selected rows of a bank where one vector is both key and value
// (bank.n_kv_heads == 1, bank.head_dim == head_dim, all heads read it: MQA, K = V; the K rows
// are read, v_offset is ignored). p.window/window_floor are ignored; p.sinks apply. The output
// is NOT rotated back: the caller merges it with the window partial (merge_attention) and then
// applies rope(..., inverse = true) to the last R dims at the query position.
void attention_sparse(const PagedKV& bank, const AttnParams& p, const SparseQuery* queries, int32_t n_queries);
}  // namespace ref

namespace cpu {
void attention_prefill(const PagedKV& kv, const AttnParams& p, const float* q, int32_t n_q, int32_t q_pos0,
                       float* out, float* lse = nullptr);
void attention_decode(const DecodeSeq* seqs, int32_t n_seqs, const AttnParams& p);
// Decode in team mode, for a caller that runs a whole decode step in one parallel region: EVERY
// thread of the region makes this same call (same arguments). The chunk items are shared out by
// thread number in the caller's region (no region of its own), their partials
// go to `part` (one buffer for the team, attention_decode_part_floats floats, not touched by
// the caller until every thread has returned), and each thread then folds every (sequence,
// head) into its OWN `out` (sequence s's heads at out + s * n_heads * head_dim; DecodeSeq::out
// and ::lse are not used), so the call ends without a barrier. Bit-identical to
// attention_decode. Outside a parallel region it runs on the calling thread. The threads meet
// once, between the items and the folds: at `barrier` when given (the caller's TeamBarrier,
// the same object on every thread), else at an OpenMP barrier.
void attention_decode_team(const DecodeSeq* seqs, int32_t n_seqs, const AttnParams& p, float* part, float* out,
                           TeamBarrier* barrier = nullptr);
size_t attention_decode_part_floats(const DecodeSeq* seqs, int32_t n_seqs, const AttnParams& p);
// Prefill in team mode, for a caller that runs a whole forward in one parallel region: EVERY
// thread of the region makes this same call. The work items of attention_prefill (the same
// plan) are taken from `next` (zero before the call, one counter per call); when the plan
// splits items along key chunks, thread 0's partial buffer is handed to the team through
// `part` and the rows' partials are folded by thread number after a wait at `barrier`. The team
// meets at `barrier` before returning: `out` is complete when any thread returns. Bit-identical
// to attention_prefill (no lse). Outside a parallel region it runs on the calling thread.
struct PrefillTeam {
    TeamBarrier* barrier = nullptr;
    std::atomic<int>* next = nullptr;
    float** part = nullptr;
};
void attention_prefill_team(const PagedKV& kv, const AttnParams& p, const float* q, int32_t n_q, int32_t q_pos0,
                            float* out, const PrefillTeam& team);
void attention_sparse(const PagedKV& bank, const AttnParams& p, const SparseQuery* queries, int32_t n_queries);
}  // namespace cpu

// Merges partial attention B into A (same query rows, disjoint key sets), in place:
// out_a = (e^lse_a out_a + e^lse_b out_b) / (e^lse_a + e^lse_b), lse_a = log(e^lse_a + e^lse_b).
// n_rows rows (e.g. heads) of width head_dim. An empty partial has lse = -inf. Sinks must be
// counted in exactly one of the two partials. Deterministic (plain f32 arithmetic, row by row).
void merge_attention(float* out_a, float* lse_a, const float* out_b, const float* lse_b, int32_t n_rows,
                     int32_t head_dim);

}  // namespace kvrt
