// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The indexer kernels: scores[s] = sum_h w_h * ReLU(q_h . k_s), the per-query kernel
// (indexer: decode, explicit row lists) and the batched one (indexer_batch: a prefill
// chunk's queries against the same keys, each key tile built once for all of them).
// Compiled once per ISA right after attention_core.inl (whose KeyTile, tile_build_rows,
// tile_scores, tile_scores_i8 and q_pairs it reuses), inside that ISA's namespace.
//
// Arithmetic of one score (both kernels): keys in tiles of T slots (aligned to multiples
// of T: positions, or list indices for explicit rows); per key lane the dot q_h . k (two
// chains over even / odd dims, tile_scores), then acc = fma(w_h, ReLU(dot_h), acc) over
// heads h = 0, 1, ... in order.
//
// Pair tiles (Ops::kBf16Dot, i.e. the avx512bf16 path, and bf16 keys): the keys are
// transposed as 32-bit pairs of dims, kp[i][j] = (k_j[2i], k_j[2i+1]) (K only: the indexer
// has no V), every query head is rounded to bf16 pairs (nearest even) once per call, and
// the dots are bf16 dot products (vdpbf16ps: exact products, f32 accumulation), two chains
// over even / odd pairs (tile_scores_pairs). The indexer's query is low precision by
// design (DeepSeek's lightning indexer runs in FP8); bf16 q moves a dot by at most
// 2^-9 * sum_c |q_c k_c|. f32 and f16 keys, and every other ISA, keep f32 arithmetic.
//
// Integer tiles (4-bit keys, FP4_E8 / FP4, on every ISA path): the keys' codes are integers
// (twice the e2m1 value) times half their group's scale, so the scan runs as int8 attention's
// Q.K does (tile_build_fp4_i8, tile_scores_i8): every query head is quantised to int8 per 32
// dims once per call (quantize_query_i8, as llama.cpp's q8_0 x q8_0 dot and DeepSeek's FP8
// lightning indexer round their operands), the group dot products are exact int32 sums
// (vpdpbusd, vpmaddwd or scalar: one value whatever computes it), and dot_h = ((0 + f32(dot_0) *
// (q's scale_0 * k's half scale_0)) + ...) over the groups in increasing order; then the same
// head fold. The query's rounding moves a dot by at most 2^-8 * sum_g amax_g(q) * sum_(c in g)
// |k_c|: small beside the keys' own 4-bit rounding, and it spares the scan the f32 FMAs that
// bound it (32 heads of 128: 4,096 multiplies per key).
//
// Bits: which rows share a register block (heads of one query, or of several in the
// batch) never enters a lane's arithmetic, and both kernels round q the same way, so
// the batch equals the per-query kernel bit for bit: a prefill chunk's selections equal
// token-by-token decode's.

// True when `dt` keys are scored from pair tiles on this ISA and CPU (tile_build's K-only pair
// tiles; attention_bf16_dot).
inline bool idx_pairs(DType dt) { return Ops::kBf16Dot && dt == DType::BF16 && attention_bf16_dot(); }

// The pairs of n_heads query heads (q: [n_heads][d]) in scratch slot 3 of the calling thread,
// tile_qbuf(d) entries per head, where idx_pairs(dt); else null. Computed once per call,
// before the parallel region, and only read inside it.
inline const uint32_t* idx_q_pairs(const float* q, int32_t n_heads, int d, DType dt) {
    if (!idx_pairs(dt)) return nullptr;
    const size_t qs = tile_qbuf(d);
    uint32_t* out = scratch<uint32_t>(3, size_t(n_heads) * qs);
    for (int32_t h = 0; h < n_heads; ++h) rows_q_pairs(q + size_t(h) * d, d, out + size_t(h) * qs);
    return out;
}

// True when `dt` keys are scored from integer tiles (4-bit keys: see the top of this file).
inline bool idx_ints(DType dt) { return dtype_fp4(dt); }

// The int8 words (q_i8) of n_heads query heads in scratch slot 3 of the calling thread,
// q_i8_words(d) per head, where idx_ints(dt); else null. Once per call, as idx_q_pairs.
inline const uint32_t* idx_q_words(const float* q, int32_t n_heads, int d, DType dt) {
    if (!idx_ints(dt)) return nullptr;
    const size_t qs = q_i8_words(d);
    uint32_t* out = scratch<uint32_t>(3, size_t(n_heads) * qs);
    for (int32_t h = 0; h < n_heads; ++h) q_i8(q + size_t(h) * d, d, out + size_t(h) * qs);
    return out;
}

// The tile of keys [0, jb] (kr[j]: key j's row): integer tiles for 4-bit keys, else
// tile_build_rows.
inline void idx_tile(KeyTile& t, int d, DType dt, int jb, const uint8_t* const* kr) {
    auto row = [&](int j) { return kr[j]; };
    if (idx_ints(dt)) tile_build_fp4_i8(t, d, dt, 0, jb, row);
    else tile_build_rows(t, d, dt, 0, jb, row, false);
}

// Integer tiles: rows [i, i + R) as one register block.
template <int R, class QWF, class Fold>
inline void idx_score_block_i8(const KeyTile& t, int d, int i, QWF& qw, Fold& fold) {
    const uint32_t* w[R];
    for (int r = 0; r < R; ++r) w[r] = qw(i + r);
    V s[R][NV];
    tile_scores_i8<R>(t, d, w, s);
    for (int r = 0; r < R; ++r) fold(i + r, s[r]);
}

// Lane scores of rows [0, n) against a tile, in register blocks, handed to fold(i, s) for
// i = 0, 1, ... in order. q(i), qp(i), qw(i): row i's query (f32), its bf16 pairs (pair tiles;
// else null) and its int8 words (integer tiles).
template <class QF, class QPF, class QWF, class Fold>
inline void idx_score_rows(const KeyTile& t, int d, int n, QF q, QPF qp, QWF qw, Fold fold) {
    int i = 0;
    if (t.ints) {
        // Blocks of kRowsQuant rows, then the rest in blocks of 4, 2, 1 (the base preset's 4 heads
        // are one block of 4, not four rows alone: one row's latency-bound vpdpbusd chains were
        // the 4 x 64 scan's hottest loop).
        for (; i + kRowsQuant <= n; i += kRowsQuant) idx_score_block_i8<kRowsQuant>(t, d, i, qw, fold);
        if constexpr (kRowsQuant > 4)
            if (n - i >= 4) idx_score_block_i8<4>(t, d, i, qw, fold), i += 4;
        if (n - i >= 2) idx_score_block_i8<2>(t, d, i, qw, fold), i += 2;
        if (n - i >= 1) idx_score_block_i8<1>(t, d, i, qw, fold), i += 1;
        return;
    }
    for (; i + kRowsScore <= n; i += kRowsScore) {
        const float* qr[kRowsScore];
        const uint32_t* pr[kRowsScore];
        for (int r = 0; r < kRowsScore; ++r) {
            qr[r] = q(i + r);
            pr[r] = qp(i + r);
        }
        V s[kRowsScore][NV];
        tile_scores<kRowsScore>(t, d, qr, s, pr);
        for (int r = 0; r < kRowsScore; ++r) fold(i + r, s[r]);
    }
    for (; i < n; ++i) {
        const float* qr[1] = {q(i)};
        const uint32_t* pr[1] = {qp(i)};
        V s[1][NV];
        tile_scores<1>(t, d, qr, s, pr);
        fold(i, s[0]);
    }
}

// The per-query kernel streams its keys once (decode over a long context: the bank's
// blocks are far beyond the caches and scattered, so the hardware prefetchers lose the
// stream at every block boundary). Each tile queues the key rows of the tile
// kIdxPrefetchBytes ahead on a LineStream, issued a few lines at a time over the tile's
// transposes and dots (attention_core.inl); a thread's first tile prefetches the first
// stretch at once. 64 KiB like decode's kDecodePrefetchBytes; 16, 64 and 192 KiB measured
// alike (bench_attention_sparse --quick, the 4 x 64 bf16 scan beyond the LLC: ~18.5 GB/s =
// ~0.45 x STREAM on 1 thread, ~36 GB/s on 2).
constexpr size_t kIdxPrefetchBytes = size_t(64) << 10;

// Queues the K rows of tile `ti` (keys [ti * T, ti * T + T) below n; ids as in indexer()).
inline void idx_queue_tile(LineStream& s, const PagedKV& keys, const int32_t* ids, int32_t n, int ti) {
    const int64_t a = int64_t(ti) * T, b = mn(a + T, n);
    const size_t rb = kv_head_bytes(keys.dtype, keys.head_dim);
    for (int64_t i = a; i < b && s.n < LineStream::kMaxRuns; ++i) {
        // Rows of consecutive positions in one block are one run.
        const int64_t pos = ids ? ids[i] : i;
        int64_t e = i;
        if (!ids) {
            const int64_t blk_end = (pos / keys.block_tokens + 1) * keys.block_tokens;  // first position past the block
            e = mn(b, blk_end) - 1;
        }
        s.add(keys.k_row(pos), size_t(e - i) * keys.row_bytes + rb);
        i = e;
    }
}

// Per-query kernel: scores[i] = the score of key ids[i] (ids == nullptr: position i).
inline void indexer(const PagedKV& keys, const IndexerQuery& iq, const int32_t* ids, int32_t n, float* scores) {
    const int d = keys.head_dim;
    const size_t qs = tile_qbuf(d);
    const uint32_t* qp_all = idx_q_pairs(iq.q, iq.n_heads, d, keys.dtype);
    const uint32_t* qw_all = idx_q_words(iq.q, iq.n_heads, d, keys.dtype);
    const size_t qws = q_i8_words(d);
    const int n_tiles = (n + T - 1) / T;
    const size_t tile_bytes = size_t(T) * kv_head_bytes(keys.dtype, d);
    const int ahead = static_cast<int>(mx(1, int64_t(kIdxPrefetchBytes / tile_bytes)));
    RegionError err;  // (scratch memory refused inside the region: rethrown after it)
#pragma omp parallel if (n_tiles > 1 && double(n) * iq.n_heads * d > kParallelWork)
    {
        // This thread's prefetch stream. A static schedule hands each thread one range of tiles:
        // its first tile starts the stream with a burst over the first stretch.
        LineStream* lsp = nullptr;
        int next = -1;
        KeyTile tile;
        try {
            lsp = scratch<LineStream>(2, 1);
            tile_init(tile, scratch_floats(tile_floats(d)), d);
        } catch (...) {
            lsp = nullptr;
            err.capture();
        }
        tile.pf = lsp;
#pragma omp for schedule(static)
        for (int ti = 0; ti < n_tiles; ++ti) {
            if (!lsp) continue;  // this thread's scratch was refused (every thread still meets the loop's end)
            LineStream& ls = *lsp;
            const int64_t base = int64_t(ti) * T;
            const int jb = static_cast<int>(mn(n - 1 - base, T - 1));
            if (ti != next) {
                ls.reset();
                for (int k = ti; k < ti + ahead && k < n_tiles; ++k) {
                    idx_queue_tile(ls, keys, ids, n, k);
                    ls.next_tile();  // issues them now
                }
            }
            next = ti + 1;
            if (ti + ahead < n_tiles) idx_queue_tile(ls, keys, ids, n, ti + ahead);
            // The tile's rows: positions by one division per tile (row_ptrs), listed ids one by one.
            const uint8_t* kr[T];
            const uint8_t* vr[T];
            if (ids) {
                for (int j = 0; j <= jb; ++j) kr[j] = keys.k_row(ids[base + j]);
            } else {
                row_ptrs(keys, base, 0, jb, kr, vr);
            }
            idx_tile(tile, d, keys.dtype, jb, kr);
            V acc[NV];
            for (int v = 0; v < NV; ++v) acc[v] = Ops::zero();
            idx_score_rows(
                tile, d, iq.n_heads, [&](int h) { return iq.q + size_t(h) * d; },
                [&](int h) { return qp_all ? qp_all + size_t(h) * qs : nullptr; },
                [&](int h) { return qw_all ? qw_all + size_t(h) * qws : nullptr; },
                [&](int h, const V(&s)[NV]) {
                    for (int v = 0; v < NV; ++v) acc[v] = Ops::fma(Ops::set1(iq.w[h]), Ops::max(s[v], Ops::zero()), acc[v]);
                });
            ls.next_tile();
            alignas(64) float tmp[T];
            for (int v = 0; v < NV; ++v) Ops::store(tmp + v * Ops::W, acc[v]);
            for (int j = 0; j <= jb; ++j) scores[base + j] = tmp[j];
        }
    }
    err.rethrow();
}

// Rows of one register block in the batched kernel: (query, head) pairs, in
// query-major, head-minor order.
struct IdxRow {
    const float* q;      // the head's query
    const uint32_t* qp;  // pair tiles: the head's query in bf16 pairs, else null
    const uint32_t* qw;  // integer tiles: the head's query's int8 words, else null
    int32_t query;       // index into the batch
    int32_t head;
};

inline void indexer_batch(const PagedKV& keys, const IndexerQuery* qs, const int32_t* n_visible, int32_t n_queries,
                          float* scores, size_t stride) {
    // One query (a decode step): the per-query kernel, which streams the keys with prefetches;
    // the same bits (see the top of this file).
    if (n_queries == 1) {
        if (n_visible[0] > 0) indexer(keys, qs[0], nullptr, n_visible[0], scores);
        return;
    }
    const int d = keys.head_dim;
    int32_t n_max = 0;
    double work = 0;
    int64_t n_heads_all = 0;
    for (int32_t i = 0; i < n_queries; ++i) {
        n_max = n_visible[i] > n_max ? n_visible[i] : n_max;
        work += double(n_visible[i]) * qs[i].n_heads * d;
        n_heads_all += qs[i].n_heads;
    }
    if (n_max == 0) return;
    // Pair tiles: every (query, head)'s pairs, once per call; query i's heads start at
    // qp_all + first_head(i) * tile_qbuf(d).
    const size_t qstride = tile_qbuf(d);
    uint32_t* qp_all = nullptr;
    if (idx_pairs(keys.dtype)) {
        qp_all = scratch<uint32_t>(3, size_t(n_heads_all) * qstride);
        size_t at = 0;
        for (int32_t i = 0; i < n_queries; ++i)
            for (int32_t h = 0; h < qs[i].n_heads; ++h, at += qstride) rows_q_pairs(qs[i].q + size_t(h) * d, d, qp_all + at);
    }
    // Integer tiles: every (query, head)'s int8 words likewise (slot 3 too: never both).
    const size_t wstride = q_i8_words(d);
    uint32_t* qw_all = nullptr;
    if (idx_ints(keys.dtype)) {
        qw_all = scratch<uint32_t>(3, size_t(n_heads_all) * wstride);
        size_t at = 0;
        for (int32_t i = 0; i < n_queries; ++i)
            for (int32_t h = 0; h < qs[i].n_heads; ++h, at += wstride) q_i8(qs[i].q + size_t(h) * d, d, qw_all + at);
    }
    const int n_tiles = (n_max + T - 1) / T;
    RegionError err;  // (scratch memory refused inside the region: rethrown after it)
    auto run_tile = [&](int ti) {
        const int64_t base = int64_t(ti) * T;
        const int jb = static_cast<int>(mn(n_max - 1 - base, T - 1));
        KeyTile tile;
        tile_init(tile, scratch_floats(tile_floats(d)), d);
        const uint8_t* kr[T];
        const uint8_t* vr[T];
        row_ptrs(keys, base, 0, jb, kr, vr);
        idx_tile(tile, d, keys.dtype, jb, kr);
        // The (query, head) rows of the queries that see this tile, query-major.
        int32_t n_rows = 0;
        for (int32_t i = 0; i < n_queries; ++i)
            if (n_visible[i] > base) n_rows += qs[i].n_heads;
        IdxRow* rows = scratch<IdxRow>(1, size_t(n_rows));  // slot 0 holds the tile
        n_rows = 0;
        size_t at = 0, wat = 0;
        for (int32_t i = 0; i < n_queries; ++i) {
            if (n_visible[i] > base)
                for (int32_t h = 0; h < qs[i].n_heads; ++h)
                    rows[n_rows++] = IdxRow{qs[i].q + size_t(h) * d, qp_all ? qp_all + at + size_t(h) * qstride : nullptr,
                                            qw_all ? qw_all + wat + size_t(h) * wstride : nullptr, i, h};
            at += size_t(qs[i].n_heads) * qstride;
            wat += size_t(qs[i].n_heads) * wstride;
        }
        V acc[NV];
        for (int v = 0; v < NV; ++v) acc[v] = Ops::zero();
        // Folds row r's lane scores into its query's accumulator; stores the query's
        // scores after its last head.
        auto fold_row = [&](const IdxRow& r, const V(&s)[NV]) {
            const IndexerQuery& q = qs[r.query];
            for (int v = 0; v < NV; ++v) acc[v] = Ops::fma(Ops::set1(q.w[r.head]), Ops::max(s[v], Ops::zero()), acc[v]);
            if (r.head == q.n_heads - 1) {
                alignas(64) float tmp[T];
                for (int v = 0; v < NV; ++v) Ops::store(tmp + v * Ops::W, acc[v]);
                const int jq = static_cast<int>(mn(int64_t(n_visible[r.query]) - 1 - base, T - 1));
                float* out = scores + size_t(r.query) * stride + base;
                for (int j = 0; j <= jq; ++j) out[j] = tmp[j];
                for (int v = 0; v < NV; ++v) acc[v] = Ops::zero();
            }
        };
        idx_score_rows(
            tile, d, n_rows, [&](int i) { return rows[i].q; }, [&](int i) { return rows[i].qp; },
            [&](int i) { return rows[i].qw; }, [&](int i, const V(&s)[NV]) { fold_row(rows[i], s); });
    };
#pragma omp parallel for schedule(dynamic, 4) if (n_tiles > 1 && work > kParallelWork)
    for (int ti = 0; ti < n_tiles; ++ti) {
        if (err) continue;
        err.guard([&] { run_tile(ti); });
    }
    err.rethrow();
}
