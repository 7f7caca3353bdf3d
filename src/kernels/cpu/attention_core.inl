// The attention core, written once over a vector-operations struct `Ops`
// (simd_avx512.hpp, simd_avx2.hpp, simd_scalar.hpp) and compiled once per ISA
// inside that ISA's namespace (attention_avx512.cpp, ...). Every standard
// header it needs is included by the .cpp before the target pragma.
//
// Determinism: a query row's arithmetic depends only on its own keys.
//   - Keys are processed in tiles of T = kKeyTile slots aligned to absolute
//     positions (sparse: to list indices). Within a tile the row's scores are
//     computed lane-wise (lane = key) with two FMA chains over even/odd dims,
//     masked to the row's own key range, and its running (m, l, o) updated by
//     online softmax; o accumulates p_j * v_j in increasing j, one FMA per
//     element (masked FMAs for keys outside the row's range).
//   - Tiles belong to chunks of C = kKeyChunk positions; a chunk's partial
//     (m, l, o) starts empty and chunk partials are folded in increasing order.
//   - The number of rows processed together (register blocking), the threads,
//     the other rows, sequences and chunking never enter a row's arithmetic.
// So decode (split-K over chunks in parallel, then an in-order fold) equals
// the prefill row (chunks walked in order), bit for bit.

constexpr int T = kKeyTile;
// Work (multiply-adds) below which a call stays on the calling thread: a parallel region
// costs microseconds, far more than small calls (a one-token prefill chunk, a short decode).
constexpr double kParallelWork = double(1 << 20);
constexpr int C = kKeyChunk;
constexpr int NV = T / Ops::W;
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();
using V = typename Ops::V;

#if defined(KVRT_ISA_AVX512)
constexpr int kRowsScore = 4;  // rows per register block: 4 x 2 x 2 accumulators
constexpr int kPvCols = 4;     // vectors of o per register block
#elif defined(KVRT_ISA_AVX2)
constexpr int kRowsScore = 2;
constexpr int kPvCols = 4;
#else
constexpr int kRowsScore = 2;
constexpr int kPvCols = 8;
#endif

// No standard-library templates below: their instantiations would be compiled for this ISA
// and could be shared (COMDAT) with baseline code. Scratch comes from thread_scratch().
inline int64_t mx(int64_t a, int64_t b) { return a > b ? a : b; }
inline int64_t mn(int64_t a, int64_t b) { return a < b ? a : b; }
template <class X>
inline X* scratch(int slot, size_t n) {
    return static_cast<X*>(thread_scratch(slot, n * sizeof(X) + 64));
}
inline float* scratch_floats(size_t n) { return scratch<float>(0, n); }

// One tile of keys of one KV head, ready for the row kernels.
struct KeyTile {
    float* kt = nullptr;    // [d][T] transposed keys (f32)
    float* kbuf = nullptr;  // [T][d] converted K rows (non-f32 caches)
    float* vbuf = nullptr;  // [T][d] converted V rows (non-f32 caches)
    const float* zero = nullptr;
    const float* krow[T];
    const float* vrow[T];
    int ja = 0, jb = -1;  // keys present: [ja, jb]
};

inline size_t tile_floats(int d) { return size_t(d) * T * 3 + size_t(d); }

inline void tile_init(KeyTile& t, float* mem, int d) {
    t.kt = mem;
    t.kbuf = mem + size_t(d) * T;
    t.vbuf = t.kbuf + size_t(d) * T;
    float* z = t.vbuf + size_t(d) * T;
    for (int i = 0; i < d; ++i) z[i] = 0.0f;
    t.zero = z;
}

// Prefetches the K and V rows (all heads) of positions [a, b]: paged blocks are scattered, so
// the hardware prefetchers lose the stream at every block boundary.
inline void prefetch_rows(const PagedKV& kv, int64_t a, int64_t b) {
    const size_t lines = (kv.row_bytes + 63) / 64;
    for (int64_t pos = a; pos <= b; ++pos) {
        const uint8_t* k = kv.k_row(pos);
        const uint8_t* v = kv.v_row(pos);
        for (size_t l = 0; l < lines; ++l) __builtin_prefetch(k + l * 64, 0, 2);
        if (v != k)
            for (size_t l = 0; l < lines; ++l) __builtin_prefetch(v + l * 64, 0, 2);
    }
    // GCC's IPA deems a void function of prefetches alone "const" and deletes its calls
    // before inlining; an empty volatile asm is a side effect that keeps them.
    asm volatile("");
}

// Fills the tile with keys j in [ja, jb]: kp(j) / vp(j) give the head slice of key j.
// need_v = false skips V (indexer). Keys equal to values (K = V) are converted once.
template <class KP, class VP>
inline void tile_build(KeyTile& t, int d, DType dt, int ja, int jb, KP kp, VP vp, bool need_v) {
    t.ja = ja;
    t.jb = jb;
    for (int j = 0; j < T; ++j) {
        if (j < ja || j > jb) {
            t.krow[j] = t.zero;
            t.vrow[j] = t.zero;
            continue;
        }
        const uint8_t* k = kp(j);
        const uint8_t* v = need_v ? vp(j) : nullptr;
        if (dt == DType::F32) {
            t.krow[j] = reinterpret_cast<const float*>(k);
            t.vrow[j] = v ? reinterpret_cast<const float*>(v) : t.zero;
        } else {
            float* kb = t.kbuf + size_t(j) * d;
            Ops::cvt_row(k, dt, d, kb);
            t.krow[j] = kb;
            if (v == k) {
                t.vrow[j] = kb;
            } else if (v) {
                float* vb = t.vbuf + size_t(j) * d;
                Ops::cvt_row(v, dt, d, vb);
                t.vrow[j] = vb;
            } else {
                t.vrow[j] = t.zero;
            }
        }
    }
    // Transpose K into kt[c][j], W keys x W dims at a time; groups without keys are skipped
    // (their lanes are masked out by every row).
    constexpr int W = Ops::W;
    for (int g = 0; g < T; g += W) {
        if (g + W - 1 < ja || g > jb) {  // no keys: zeros, so the masked lanes compute on zeros
            for (int c = 0; c < d; ++c)
                for (int j = 0; j < W; ++j) t.kt[size_t(c) * T + g + j] = 0.0f;
            continue;
        }
        int c = 0;
        for (; c + W <= d; c += W) Ops::transpose(t.krow + g, c, t.kt + size_t(c) * T + g, T);
        for (; c < d; ++c)
            for (int j = 0; j < W; ++j) t.kt[size_t(c) * T + g + j] = t.krow[g + j][c];
    }
}

// Builds the tile from keys already in f32: key j's head slice at kbase + j * stride (values at
// vbase + j * stride), for j in [ja, jb].
inline void tile_build_f32(KeyTile& t, int d, int ja, int jb, const float* kbase, const float* vbase, size_t stride) {
    t.ja = ja;
    t.jb = jb;
    for (int j = 0; j < T; ++j) {
        const bool in = j >= ja && j <= jb;
        t.krow[j] = in ? kbase + j * stride : t.zero;
        t.vrow[j] = in ? vbase + j * stride : t.zero;
    }
    constexpr int W = Ops::W;
    for (int g = 0; g < T; g += W) {
        if (g + W - 1 < ja || g > jb) {  // no keys: zeros, so the masked lanes compute on zeros
            for (int c = 0; c < d; ++c)
                for (int j = 0; j < W; ++j) t.kt[size_t(c) * T + g + j] = 0.0f;
            continue;
        }
        int c = 0;
        for (; c + W <= d; c += W) Ops::transpose(t.krow + g, c, t.kt + size_t(c) * T + g, T);
        for (; c < d; ++c)
            for (int j = 0; j < W; ++j) t.kt[size_t(c) * T + g + j] = t.krow[g + j][c];
    }
}

// One query row's view during a tile: its (pre-scaled) query, its running state, and
// its key range inside the tile.
struct RowRef {
    const float* q;
    float* m;
    float* l;
    float* o;
    int a, b;
};

// Lane-wise scores of R rows against the tile: s[r][v] = sum_c q_r[c] * kt[c][v*W + lane],
// two chains over even / odd c, added at the end.
template <int R>
inline void tile_scores(const KeyTile& t, int d, const float* const* q, V (&s)[R][NV]) {
    V a0[R][NV], a1[R][NV];
    for (int r = 0; r < R; ++r)
        for (int v = 0; v < NV; ++v) a0[r][v] = a1[r][v] = Ops::zero();
    int c = 0;
    for (; c + 1 < d; c += 2) {
        const float* k0 = t.kt + size_t(c) * T;
        const float* k1 = k0 + T;
        for (int v = 0; v < NV; ++v) {
            V kv0 = Ops::load(k0 + v * Ops::W), kv1 = Ops::load(k1 + v * Ops::W);
            for (int r = 0; r < R; ++r) {
                a0[r][v] = Ops::fma(Ops::set1(q[r][c]), kv0, a0[r][v]);
                a1[r][v] = Ops::fma(Ops::set1(q[r][c + 1]), kv1, a1[r][v]);
            }
        }
    }
    if (c < d) {
        const float* k0 = t.kt + size_t(c) * T;
        for (int v = 0; v < NV; ++v) {
            V kv0 = Ops::load(k0 + v * Ops::W);
            for (int r = 0; r < R; ++r) a0[r][v] = Ops::fma(Ops::set1(q[r][c]), kv0, a0[r][v]);
        }
    }
    for (int r = 0; r < R; ++r)
        for (int v = 0; v < NV; ++v) s[r][v] = Ops::add(a0[r][v], a1[r][v]);
}

inline float tree_sum(V (&p)[NV]) {
    V t[NV];
    for (int v = 0; v < NV; ++v) t[v] = p[v];
    for (int n = NV; n > 1; n /= 2)
        for (int i = 0; i < n / 2; ++i) t[i] = Ops::add(t[i], t[i + n / 2]);
    return Ops::hsum(t[0]);
}

inline void scale_row(float* o, int d, float alpha) {
    int c = 0;
    V a = Ops::set1(alpha);
    for (; c + Ops::W <= d; c += Ops::W) Ops::store(o + c, Ops::mul(Ops::load(o + c), a));
    for (; c < d; ++c) o[c] = o[c] * alpha;
}

// o_r[c0 .. c0 + CB*W) += sum_j p_r[j] * v_j[...] for j in [ja, jb] (masked to each row's range).
template <int R, int CB, bool MASKED>
inline void pv_block(const KeyTile& t, const RowRef* rows, const float* pbuf, int c0, int ja, int jb) {
    V acc[R][CB];
    for (int r = 0; r < R; ++r)
        for (int cb = 0; cb < CB; ++cb) acc[r][cb] = Ops::load(rows[r].o + c0 + cb * Ops::W);
    for (int j = ja; j <= jb; ++j) {
        const float* vr = t.vrow[j] + c0;
        V vv[CB];
        for (int cb = 0; cb < CB; ++cb) vv[cb] = Ops::load(vr + cb * Ops::W);
        for (int r = 0; r < R; ++r) {
            V p = Ops::set1(pbuf[r * T + j]);
            if constexpr (MASKED) {
                bool on = j >= rows[r].a && j <= rows[r].b;
                for (int cb = 0; cb < CB; ++cb) acc[r][cb] = Ops::fma_if(on, p, vv[cb], acc[r][cb]);
            } else {
                for (int cb = 0; cb < CB; ++cb) acc[r][cb] = Ops::fma(p, vv[cb], acc[r][cb]);
            }
        }
    }
    for (int r = 0; r < R; ++r)
        for (int cb = 0; cb < CB; ++cb) Ops::store(rows[r].o + c0 + cb * Ops::W, acc[r][cb]);
}

template <int R, bool MASKED>
inline void pv_rows(const KeyTile& t, int d, const RowRef* rows, const float* pbuf, int ja, int jb) {
    constexpr int W = Ops::W;
    int c = 0;
    for (; c + kPvCols * W <= d; c += kPvCols * W) pv_block<R, kPvCols, MASKED>(t, rows, pbuf, c, ja, jb);
    for (; c + W <= d; c += W) pv_block<R, 1, MASKED>(t, rows, pbuf, c, ja, jb);
    for (; c < d; ++c)  // element tail: the same per-element FMA sequence
        for (int r = 0; r < R; ++r) {
            float o = rows[r].o[c];
            for (int j = ja; j <= jb; ++j)
                if (!MASKED || (j >= rows[r].a && j <= rows[r].b)) o = Ops::fmas(pbuf[r * T + j], t.vrow[j][c], o);
            rows[r].o[c] = o;
        }
}

// Online-softmax update of R rows with one tile.
template <int R>
inline void tile_rows_block(const KeyTile& t, int d, const RowRef* rows) {
    alignas(64) float pbuf[R * T];
    const float* q[R];
    for (int r = 0; r < R; ++r) q[r] = rows[r].q;
    V s[R][NV];
    tile_scores<R>(t, d, q, s);
    int ja = T, jb = -1;
    bool uniform = true;
    for (int r = 0; r < R; ++r) {
        const RowRef& row = rows[r];
        float tmax = kNegInf;
        for (int v = 0; v < NV; ++v) {
            s[r][v] = Ops::keep_range(s[r][v], v * Ops::W, row.a, row.b, kNegInf);
            float hm = Ops::hmax(s[r][v]);
            tmax = hm > tmax ? hm : tmax;
        }
        const float m_old = *row.m;
        const float m_new = m_old > tmax ? m_old : tmax;
        const float alpha = m_old == kNegInf ? 0.0f : Ops::exp2s(m_old - m_new);
        V p[NV];
        for (int v = 0; v < NV; ++v)
            p[v] = Ops::keep_range(Ops::exp2(Ops::sub(s[r][v], Ops::set1(m_new))), v * Ops::W, row.a, row.b, 0.0f);
        const float psum = tree_sum(p);
        for (int v = 0; v < NV; ++v) Ops::store(pbuf + r * T + v * Ops::W, p[v]);
        const float l_scaled = *row.l * alpha;
        *row.l = l_scaled + psum;
        if (alpha != 1.0f) scale_row(row.o, d, alpha);
        *row.m = m_new;
        ja = row.a < ja ? row.a : ja;
        jb = row.b > jb ? row.b : jb;
        if (row.a != rows[0].a || row.b != rows[0].b) uniform = false;
    }
    if (uniform) pv_rows<R, false>(t, d, rows, pbuf, ja, jb);
    else pv_rows<R, true>(t, d, rows, pbuf, ja, jb);
}

inline void tile_rows(const KeyTile& t, int d, const RowRef* rows, int n) {
    int i = 0;
    for (; i + kRowsScore <= n; i += kRowsScore) tile_rows_block<kRowsScore>(t, d, rows + i);
    // The remainder in one block (a GQA group of 3 reads the tile once, not three times).
    if constexpr (kRowsScore > 3) {
        if (n - i == 3) return tile_rows_block<3>(t, d, rows + i);
    }
    if constexpr (kRowsScore > 2) {
        if (n - i == 2) return tile_rows_block<2>(t, d, rows + i);
    }
    for (; i < n; ++i) tile_rows_block<1>(t, d, rows + i);
}

// Folds chunk partial (mc, lc, oc) into the running total (mt, lt, ot).
inline void fold(float& mt, float& lt, float* ot, float mc, float lc, const float* oc, int d) {
    if (mc == kNegInf) return;
    if (mt == kNegInf) {
        mt = mc;
        lt = lc;
        for (int c = 0; c < d; ++c) ot[c] = oc[c];
        return;
    }
    const float m = mt > mc ? mt : mc;
    const float a = Ops::exp2s(mt - m), b = Ops::exp2s(mc - m);
    const float la = lt * a, lb = lc * b;
    lt = la + lb;
    const V va = Ops::set1(a), vb = Ops::set1(b);
    int c = 0;
    for (; c + Ops::W <= d; c += Ops::W)
        Ops::store(ot + c, Ops::fma(Ops::load(oc + c), vb, Ops::mul(Ops::load(ot + c), va)));
    for (; c < d; ++c) ot[c] = Ops::fmas(oc[c], b, ot[c] * a);
    mt = m;
}

// out = o / l (with the optional sink in the denominator); lse in natural log.
inline void finalize(float m, float l, const float* o, const float* sink, int d, float* out, float* lse) {
    if (m == kNegInf) {
        for (int c = 0; c < d; ++c) out[c] = 0.0f;
        if (lse) *lse = sink ? *sink : kNegInf;
        return;
    }
    float m2 = m, scale = 1.0f;
    if (sink) {
        const float ms = *sink * kLog2e;
        m2 = m > ms ? m : ms;
        const float a = Ops::exp2s(m - m2);
        const float la = l * a;
        l = la + Ops::exp2s(ms - m2);
        scale = a;
    }
    const float f = scale / l;
    const V vf = Ops::set1(f);
    int c = 0;
    for (; c + Ops::W <= d; c += Ops::W) Ops::store(out + c, Ops::mul(Ops::load(o + c), vf));
    for (; c < d; ++c) out[c] = o[c] * f;
    if (lse) *lse = (m2 + std::log2(l)) * kLn2;
}

inline void prescale(const float* q, int d, float s, float* out) {
    for (int c = 0; c < d; ++c) out[c] = q[c] * s;
}

// ---------------------------------------------------------------------------------------------
// Prefill: work items are (KV head, block of query positions); each walks its key tiles in order.

inline void prefill(const PagedKV& kv, const AttnParams& p, const float* q, int32_t n_q, int32_t q_pos0, float* out,
                    float* lse) {
    const int d = p.head_dim, H = p.n_heads, n_kv = kv.n_kv_heads, G = H / n_kv;
    const size_t es = dtype_size(kv.dtype);
    const int QB = G >= 96 ? 1 : 96 / G;
    const int nqb = (n_q + QB - 1) / QB;
    const int n_items = n_kv * nqb;
    const float qscale = p.scale * kLog2e;
    const double work = double(n_q) * H * d * double(int64_t(q_pos0) + n_q - attn_first_key(p, q_pos0));
#pragma omp parallel for schedule(dynamic, 1) if (n_items > 1 && work > kParallelWork)
    for (int item = 0; item < n_items; ++item) {
        const int qb = nqb - 1 - item / n_kv, g = item % n_kv;
        const int t0 = qb * QB, t1 = static_cast<int>(mn(n_q, t0 + QB)), nr = (t1 - t0) * G;
        // scratch: tile | q[nr][d] | oc[nr][d] | ot[nr][d] | mc, lc, mt, lt [nr]
        const size_t tf = tile_floats(d);
        float* mem = scratch_floats(tf + size_t(nr) * (3 * size_t(d) + 4));
        KeyTile tile;
        tile_init(tile, mem, d);
        float* qs = mem + tf;
        float* oc = qs + size_t(nr) * d;
        float* ot = oc + size_t(nr) * d;
        float* mc = ot + size_t(nr) * d;
        float* lc = mc + nr;
        float* mt = lc + nr;
        float* lt = mt + nr;
        int64_t* lo = scratch<int64_t>(1, size_t(nr) * 2);
        int64_t* hi = lo + nr;
        int32_t* cur = scratch<int32_t>(2, size_t(nr));
        RowRef* rows = scratch<RowRef>(5, size_t(nr));
        for (int r = 0; r < nr; ++r) cur[r] = -1;
        for (int t = t0; t < t1; ++t)
            for (int i = 0; i < G; ++i) {
                const int r = (t - t0) * G + i, h = g * G + i;
                prescale(q + (size_t(t) * H + h) * d, d, qscale, qs + size_t(r) * d);
                hi[r] = int64_t(q_pos0) + t;
                lo[r] = attn_first_key(p, hi[r]);
                mt[r] = kNegInf;
                lt[r] = 0.0f;
                for (int c = 0; c < d; ++c) ot[size_t(r) * d + c] = 0.0f;
                rows[r] = RowRef{qs + size_t(r) * d, mc + r, lc + r, oc + size_t(r) * d, 0, -1};
            }
        const int64_t ulo = lo[0], uhi = hi[nr - 1];
        if (ulo <= uhi) {
            for (int64_t k = ulo / T; k <= uhi / T; ++k) {
                const int64_t base = k * T, last = base + T - 1;
                int r0 = 0, r1 = nr;
                while (r0 < nr && hi[r0] < base) ++r0;
                while (r1 > r0 && (lo[r1 - 1] > last || lo[r1 - 1] > hi[r1 - 1])) --r1;
                // Rows whose own range is empty (window floor past them) never become active.
                while (r0 < r1 && lo[r0] > hi[r0]) ++r0;
                if (r0 >= r1) continue;
                const int32_t chunk = static_cast<int32_t>(base / C);
                const int ja = static_cast<int>(mx(lo[r0], base) - base);
                const int jb = static_cast<int>(mn(hi[r1 - 1], last) - base);
                if (last < uhi) prefetch_rows(kv, last + 1, mn(uhi, last + T));
                tile_build(
                    tile, d, kv.dtype, ja, jb, [&](int j) { return kv.k_row(base + j) + size_t(g) * d * es; },
                    [&](int j) { return kv.v_row(base + j) + size_t(g) * d * es; }, true);
                for (int r = r0; r < r1; ++r) {
                    if (cur[r] != chunk) {
                        if (cur[r] >= 0) fold(mt[r], lt[r], ot + size_t(r) * d, mc[r], lc[r], oc + size_t(r) * d, d);
                        mc[r] = kNegInf;
                        lc[r] = 0.0f;
                        for (int c = 0; c < d; ++c) oc[size_t(r) * d + c] = 0.0f;
                        cur[r] = chunk;
                    }
                    rows[r].a = static_cast<int>(mx(lo[r], base) - base);
                    rows[r].b = static_cast<int>(mn(hi[r], last) - base);
                }
                tile_rows(tile, d, rows + r0, r1 - r0);
            }
        }
        for (int t = t0; t < t1; ++t)
            for (int i = 0; i < G; ++i) {
                const int r = (t - t0) * G + i, h = g * G + i;
                if (cur[r] >= 0) fold(mt[r], lt[r], ot + size_t(r) * d, mc[r], lc[r], oc + size_t(r) * d, d);
                finalize(mt[r], lt[r], ot + size_t(r) * d, p.sinks ? p.sinks + h : nullptr, d,
                         out + (size_t(t) * H + h) * d, lse ? lse + size_t(t) * H + h : nullptr);
            }
    }
}

// ---------------------------------------------------------------------------------------------
// Decode: work items are (sequence, chunk of C aligned positions); partials folded in order.

struct ChunkItem {
    int32_t seq;
    int32_t part;      // index of this chunk's partial in the partial buffer
    int64_t lo, hi;    // keys [lo, hi] of this chunk
};

inline void decode(const DecodeSeq* seqs, int32_t n_seqs, const AttnParams& p) {
    const int d = p.head_dim, H = p.n_heads;
    const size_t stride = size_t(d) + 2;  // per head: m, l, o[d]
    size_t total = 0;
    for (int32_t s = 0; s < n_seqs; ++s) {
        const int64_t lo = attn_first_key(p, seqs[s].pos), hi = seqs[s].pos;
        if (lo <= hi) total += size_t(hi / C - lo / C + 1);
    }
    ChunkItem* items = scratch<ChunkItem>(3, total);
    int32_t* first = scratch<int32_t>(4, size_t(n_seqs) + 1);
    int n_items = 0;
    for (int32_t s = 0; s < n_seqs; ++s) {
        first[s] = n_items;
        const int64_t lo = attn_first_key(p, seqs[s].pos), hi = seqs[s].pos;
        if (lo <= hi)
            for (int64_t c = lo / C; c <= hi / C; ++c, ++n_items)
                items[n_items] = ChunkItem{s, n_items, mx(lo, c * C), mn(hi, c * C + C - 1)};
    }
    first[n_seqs] = n_items;
    float* part = scratch<float>(6, size_t(n_items) * H * stride);
    const float qscale = p.scale * kLog2e;
    double work = 0;
    for (int it = 0; it < n_items; ++it) work += double(items[it].hi - items[it].lo + 1) * H * d;
#pragma omp parallel for schedule(dynamic, 1) if (n_items > 1 && work > kParallelWork)
    for (int it = 0; it < n_items; ++it) {
        const ChunkItem& ci = items[it];
        const DecodeSeq& sq = seqs[ci.seq];
        const PagedKV& kv = *sq.kv;
        const int n_kv = kv.n_kv_heads, G = H / n_kv;
        const size_t tf = tile_floats(d);
        const size_t row_el = size_t(n_kv) * d;  // elements of one position's K (or V) row
        const bool shared = kv.k_offset == kv.v_offset;
        float* mem = scratch_floats(tf + size_t(H) * d + row_el * T * 2);
        KeyTile tile;
        tile_init(tile, mem, d);
        float* qs = mem + tf;
        float* kall = qs + size_t(H) * d;  // [T][n_kv * d]: the tile's K rows, all heads, in f32
        float* vall = kall + row_el * T;
        float* pp = part + size_t(ci.part) * H * stride;
        RowRef* rw = scratch<RowRef>(5, size_t(G));
        for (int h = 0; h < H; ++h) {
            prescale(sq.q + size_t(h) * d, d, qscale, qs + size_t(h) * d);
            float* st = pp + size_t(h) * stride;
            st[0] = kNegInf;
            st[1] = 0.0f;
            for (int c = 0; c < d; ++c) st[2 + c] = 0.0f;
        }
        for (int64_t k = ci.lo / T; k <= ci.hi / T; ++k) {
            const int64_t base = k * T;
            const int ja = static_cast<int>(mx(ci.lo, base) - base);
            const int jb = static_cast<int>(mn(ci.hi, base + T - 1) - base);
            if (base + 4 * T <= ci.hi) prefetch_rows(kv, base + 4 * T, mn(ci.hi, base + 5 * T - 1));
            // One sequential pass over the tile's rows (every head's bytes read once, in address
            // order: what the hardware prefetchers stream best), converted to f32.
            for (int j = ja; j <= jb; ++j) {
                Ops::cvt_row(kv.k_row(base + j), kv.dtype, static_cast<int>(row_el), kall + size_t(j) * row_el);
                if (!shared)
                    Ops::cvt_row(kv.v_row(base + j), kv.dtype, static_cast<int>(row_el), vall + size_t(j) * row_el);
            }
            const float* vsrc = shared ? kall : vall;
            for (int g = 0; g < n_kv; ++g) {
                tile_build_f32(tile, d, ja, jb, kall + size_t(g) * d, vsrc + size_t(g) * d, row_el);
                for (int i = 0; i < G; ++i) {
                    const int h = g * G + i;
                    float* st = pp + size_t(h) * stride;
                    rw[i] = RowRef{qs + size_t(h) * d, st, st + 1, st + 2, ja, jb};
                }
                tile_rows(tile, d, rw, G);
            }
        }
    }
    // Fold each (sequence, head)'s chunk partials in chunk order.
    const int n_rows = n_seqs * H;
#pragma omp parallel for schedule(static) if (n_rows >= 256)
    for (int rh = 0; rh < n_rows; ++rh) {
        const int s = rh / H, h = rh % H;
        const DecodeSeq& sq = seqs[s];
        float* o = scratch<float>(7, size_t(d));
        float m = kNegInf, l = 0.0f;
        for (int c = 0; c < d; ++c) o[c] = 0.0f;
        for (int32_t it = first[s]; it < first[s + 1]; ++it) {
            const float* st = part + (size_t(it) * H + h) * stride;
            fold(m, l, o, st[0], st[1], st + 2, d);
        }
        finalize(m, l, o, p.sinks ? p.sinks + h : nullptr, d, sq.out + size_t(h) * d, sq.lse ? sq.lse + h : nullptr);
    }
}

// ---------------------------------------------------------------------------------------------
// Sparse K = V attention over selected bank rows: items are (query, chunk of C list entries).

inline void sparse(const PagedKV& bank, const AttnParams& p, const SparseQuery* queries, int32_t n_queries) {
    const int d = p.head_dim, H = p.n_heads;
    const size_t stride = size_t(d) + 2;
    size_t total = 0;
    for (int32_t s = 0; s < n_queries; ++s) total += size_t((queries[s].n_rows + C - 1) / C);
    ChunkItem* items = scratch<ChunkItem>(3, total);
    int32_t* first = scratch<int32_t>(4, size_t(n_queries) + 1);
    int n_items = 0;
    for (int32_t s = 0; s < n_queries; ++s) {
        first[s] = n_items;
        const int64_t n = queries[s].n_rows;
        for (int64_t c = 0; c * C < n; ++c, ++n_items) items[n_items] = ChunkItem{s, n_items, c * C, mn(n, c * C + C) - 1};
    }
    first[n_queries] = n_items;
    float* part = scratch<float>(6, size_t(n_items) * H * stride);
    const float qscale = p.scale * kLog2e;
    const size_t row_lines = (size_t(d) * dtype_size(bank.dtype) + 63) / 64;
    double work = 0;
    for (int it = 0; it < n_items; ++it) work += double(items[it].hi - items[it].lo + 1) * H * d;
#pragma omp parallel for schedule(dynamic, 1) if (n_items > 1 && work > kParallelWork)
    for (int it = 0; it < n_items; ++it) {
        const ChunkItem& ci = items[it];
        const SparseQuery& sq = queries[ci.seq];
        const size_t tf = tile_floats(d);
        float* mem = scratch_floats(tf + size_t(H) * d);
        KeyTile tile;
        tile_init(tile, mem, d);
        float* qs = mem + tf;
        float* pp = part + size_t(ci.part) * H * stride;
        RowRef* rows = scratch<RowRef>(5, size_t(H));
        for (int h = 0; h < H; ++h) {
            prescale(sq.q + size_t(h) * d, d, qscale, qs + size_t(h) * d);
            float* st = pp + size_t(h) * stride;
            st[0] = kNegInf;
            st[1] = 0.0f;
            for (int c = 0; c < d; ++c) st[2 + c] = 0.0f;
        }
        for (int64_t base = ci.lo; base <= ci.hi; base += T) {
            const int jb = static_cast<int>(mn(ci.hi - base, T - 1));
            // Prefetch the next tile's rows: the selection is scattered, no hardware prefetcher helps.
            const int64_t nb = base + T;
            if (nb <= ci.hi) {
                const int64_t ne = mn(ci.hi, nb + T - 1);
                for (int64_t j = nb; j <= ne; ++j) {
                    const uint8_t* r = bank.k_row(sq.rows[j]);
                    for (size_t ln = 0; ln < row_lines; ++ln) __builtin_prefetch(r + ln * 64);
                }
            }
            auto row = [&](int j) { return bank.k_row(sq.rows[base + j]); };
            tile_build(tile, d, bank.dtype, 0, jb, row, row, true);
            for (int h = 0; h < H; ++h) {
                float* st = pp + size_t(h) * stride;
                rows[h] = RowRef{qs + size_t(h) * d, st, st + 1, st + 2, 0, jb};
            }
            tile_rows(tile, d, rows, H);
        }
    }
    const int n_rows = n_queries * H;
#pragma omp parallel for schedule(static) if (n_rows >= 256)
    for (int rh = 0; rh < n_rows; ++rh) {
        const int s = rh / H, h = rh % H;
        const SparseQuery& sq = queries[s];
        float* o = scratch<float>(7, size_t(d));
        float m = kNegInf, l = 0.0f;
        for (int c = 0; c < d; ++c) o[c] = 0.0f;
        for (int32_t it = first[s]; it < first[s + 1]; ++it) {
            const float* st = part + (size_t(it) * H + h) * stride;
            fold(m, l, o, st[0], st[1], st + 2, d);
        }
        finalize(m, l, o, p.sinks ? p.sinks + h : nullptr, d, sq.out + size_t(h) * d, sq.lse + h);
    }
}

// ---------------------------------------------------------------------------------------------
// Indexer: scores[i] = sum_h w_h * ReLU(q_h . k_i), tiles of T keys, heads in order.

inline void indexer(const PagedKV& keys, const IndexerQuery& iq, const int32_t* ids, int32_t n, float* scores) {
    const int d = keys.head_dim;
    const int n_tiles = (n + T - 1) / T;
#pragma omp parallel for schedule(static) if (n_tiles > 1 && double(n) * iq.n_heads * d > kParallelWork)
    for (int ti = 0; ti < n_tiles; ++ti) {
        const int64_t base = int64_t(ti) * T;
        const int jb = static_cast<int>(mn(n - 1 - base, T - 1));
        KeyTile tile;
        tile_init(tile, scratch_floats(tile_floats(d)), d);
        auto row = [&](int j) { return keys.k_row(ids ? ids[base + j] : base + j); };
        tile_build(tile, d, keys.dtype, 0, jb, row, row, false);
        V acc[NV];
        for (int v = 0; v < NV; ++v) acc[v] = Ops::zero();
        int h = 0;
        for (; h + kRowsScore <= iq.n_heads; h += kRowsScore) {
            const float* q[kRowsScore];
            for (int r = 0; r < kRowsScore; ++r) q[r] = iq.q + size_t(h + r) * d;
            V s[kRowsScore][NV];
            tile_scores<kRowsScore>(tile, d, q, s);
            for (int r = 0; r < kRowsScore; ++r)
                for (int v = 0; v < NV; ++v)
                    acc[v] = Ops::fma(Ops::set1(iq.w[h + r]), Ops::max(s[r][v], Ops::zero()), acc[v]);
        }
        for (; h < iq.n_heads; ++h) {
            const float* q[1] = {iq.q + size_t(h) * d};
            V s[1][NV];
            tile_scores<1>(tile, d, q, s);
            for (int v = 0; v < NV; ++v) acc[v] = Ops::fma(Ops::set1(iq.w[h]), Ops::max(s[0][v], Ops::zero()), acc[v]);
        }
        alignas(64) float tmp[T];
        for (int v = 0; v < NV; ++v) Ops::store(tmp + v * Ops::W, acc[v]);
        for (int j = 0; j <= jb; ++j) scores[base + j] = tmp[j];
    }
}
