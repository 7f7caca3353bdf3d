// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The attention core, written once over a vector-operations struct `Ops`
// (simd_avx512.hpp, simd_avx2.hpp, simd_scalar.hpp) and compiled once per ISA
// inside that ISA's namespace (attention_avx512.cpp, ...). Every standard
// header it needs is included by the .cpp before the target pragma.
//
// Determinism: a query row's arithmetic depends only on its own keys.
//   - Keys are processed in tiles of T slots aligned to absolute positions
//     (sparse: to list indices): T = kKeyTileWide (64) on AVX-512, kKeyTile (32) on the
//     16-register paths (see T below). Within a tile the row's score of a
//     key is, in dense attention (prefill and decode), W FMA chains over the
//     dims c = l, l + W, ... (l < W, increasing c) summed by the balanced tree
//     over adjacent l (KeyTile::lanes: the order of a key row read W dims at a
//     time, so decode scores rows in place and prefill its transposed tiles,
//     alike); in sparse attention two chains over even / odd dims, lane-wise;
//     masked to the row's own key range, and its running (m, l, o) updated by
//     online softmax; o accumulates p_j * v_j in increasing j, one FMA per
//     element (masked FMAs for keys outside the row's range; fp8 V:
//     (p_j * scale) * raw). Int8 V: per tile and scale group the weights p_j * scale_j are coded
//     as 8-bit integers against their largest and the exact int32 sums of codes times raw values
//     scaled once (pv_rows_i8; any path, any row block: the same integers). Int8 K (dense attention): the query is quantised per 32 dims
//     and each group's exact int32 dot product is scaled and added in group order (KeyTile::ints,
//     int8 tiles). Pair tiles (bf16
//     KV where Ops::kBf16Dot, see KeyTile): bf16 dot products instead, over
//     pairs of dims (scores, two chains) and pairs of keys (o, increasing).
//   - Tiles belong to chunks of C = kKeyChunk positions; a chunk's partial
//     (m, l, o) starts empty and chunk partials are folded in increasing order.
//   - The number of rows processed together (register blocking), the threads,
//     the other rows, sequences and chunking never enter a row's arithmetic.
// So decode (split-K over chunks in parallel, then an in-order fold) equals
// the prefill row (chunks walked in order), bit for bit.

// Keys per tile. Each tile costs the rows a fixed amount besides its keys (the online-softmax
// update: maxima, exponent of the old maximum, sums; P.V's load, rescale and store of o and,
// for int8 V, the weights' coding; the tile's set-up and prefetch queue), so longer tiles
// spread it over more keys where the registers allow: on AVX-512 a row's 64 scores are 4
// vectors (NV = 4) and 4 rows' score accumulators 16 of the 32 registers. Measured (AMD EPYC
// Zen 4, avx512_bf16 + avx512_vnni, 2 vCPUs, session 39, T = 32 -> 64, alternated runs):
// `bench_attention_decode --only 9/3` beyond the LLC (131,072 keys) int8 5,331-5,403 ->
// 4,527-4,629 us on 1 thread, f16 6,771-6,775 -> 6,140-6,278; in cache (8,192 keys) int8
// 303-307 -> 255-257 us, f16 369-371 -> 336-347; prefill (`bench_attention_prefill --quick`)
// f16, bf16 and int8 +3-20% (with the two-vector score blocks below; without them bf16 lost
// 5-12%). End to end (`kvrt bench`) inside the host's run-to-run spread. On AVX2 (16
// registers, NV = 8) 64-key tiles made f16 prefill 10-13% slower (accumulators spilled), so
// the 16-register paths keep 32. (src/kernels/README.md, "Session 39".) int8 V's weights are
// coded per tile (pv_rows_i8), against the largest of 64 keys here: f16 K + int8 V's KL from
// f16 KV rose 45-55% (4.3e-5 -> 6.3e-5 on SmolLM2; docs/kv_quantisation.md), int8 K and V's
// moved by -6% to +4%.
#if defined(KVRT_ISA_AVX512)
constexpr int T = kKeyTileWide;
#else
constexpr int T = kKeyTile;
#endif
static_assert(kKeyChunk % T == 0, "tiles divide a chunk");
// Vectors of keys per pass of the transposed-tile score loops (lane trees, bf16 pairs): a 64-key
// tile two at a time (its 4 at once would need 32 accumulators at 4 rows, every register, and
// spill; without this bf16 prefill lost 5-12%), a 32-key tile whole (as measured before). Each
// key's chains are the same either way.
constexpr int kScoreVecs = T == kKeyTileWide ? 2 : T / Ops::W;
// Work (multiply-adds) below which a call stays on the calling thread: a parallel region
// costs microseconds, far more than small calls (a one-token prefill chunk, a short decode).
constexpr double kParallelWork = double(1 << 20);
constexpr int C = kKeyChunk;
// Decode prefetches the rows of the tile ~kDecodePrefetchBytes ahead (at least the next tile),
// spread over the current tile's compute (LineStream): 2 tiles of 9/3 heads of 64 f16, 1 tile
// of 32/8 heads of 128 bf16. With the prefetches spread, 1 to 8 tiles ahead measured alike
// (bench_attention_decode, KV beyond the LLC); the next tile into L1 as well added nothing.
constexpr size_t kDecodePrefetchBytes = size_t(64) << 10;
// A decode call reading more K and V than this paces its prefetch stream (LineStream::paced): at
// 1 MiB per layer a 30-layer model's KV is about a last-level cache.
constexpr size_t kPacedBytes = size_t(1) << 20;
constexpr int NV = T / Ops::W;
static_assert(NV % kScoreVecs == 0, "score passes divide a tile");
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();
using V = typename Ops::V;

#if defined(KVRT_ISA_AVX512)
constexpr int kRowsScore = 4;  // rows per register block: 4 x 2 x 2 accumulators
constexpr int kPvCols = 4;     // vectors of o per register block
constexpr int kPvAccMax = 16;  // at most this many o accumulators per P.V block (rows x columns)
constexpr int kVecRegs = 32;   // vector registers
#elif defined(KVRT_ISA_AVX2)
constexpr int kRowsScore = 2;
constexpr int kPvCols = 4;
constexpr int kPvAccMax = 12;
constexpr int kVecRegs = 16;
#else
constexpr int kRowsScore = 2;
constexpr int kPvCols = 8;
constexpr int kPvAccMax = 16;
constexpr int kVecRegs = 32;  // (the compiler's own vectors: no register budget to keep)
#endif
// Rows per block on direct tiles (decode, see KeyTile): each key row is loaded and converted once
// per block, so a GQA group of up to 4 query heads reads its keys and values once.
constexpr int kRowsDirect = 4;
// Rows per block on int8 tiles (prefill and decode) and on direct tiles of fp8 K: on AVX-512 up
// to 8, so that Qwen2.5's GQA group of 7 reads its int8 / fp8 keys and values once (in place of
// 4 + 3; fp8 converts in 5 instructions per 16 elements where f16 takes 2). Measured (session 21,
// Intel Xeon, Sapphire Rapids class, 1 thread): int8 decode 14/2 at 2,048 keys in cache 82-84 ->
// 75-76 us, at 32,768 keys beyond the LLC 1,474-1,508 -> 1,310-1,346 us; int8 prefill 32/8 and
// 11 x 3,661 keys 5-15% faster; fp8 decode 14/2 at 131,072 keys 8,303-8,350 -> 7,213-7,509 us.
// The same blocks on direct f16 tiles (scores then take 2 keys at a time) were 12% faster in
// cache once but no faster beyond the LLC and ~5% slower in Qwen2.5's decode at 32K, so direct
// tiles of other types keep 4.
constexpr int kRowsQuant = kVecRegs == 32 && kRowsScore == 4 ? 8 : kRowsDirect;
constexpr int kMaxRowsBlock = kRowsQuant;
static_assert(kMaxRowsBlock >= kRowsDirect && kMaxRowsBlock >= kRowsScore, "the largest row block");

// No standard-library templates below: their instantiations would be compiled for this ISA
// and could be shared (COMDAT) with baseline code. Scratch comes from thread_scratch().
constexpr int pow2_floor(int x) { return x < 2 ? x : 2 * pow2_floor(x / 2); }
// Register blocks of R rows: how many per-row vectors (accumulators) each row may have when R
// vectors shared by the rows and one streamed vector are live too (more would spill one).
constexpr int vectors_per_row(int R) { return (kVecRegs - 1 - R) / R; }
inline int64_t mx(int64_t a, int64_t b) { return a > b ? a : b; }
inline int64_t mn(int64_t a, int64_t b) { return a < b ? a : b; }
template <class X>
inline X* scratch(int slot, size_t n) {
    return static_cast<X*>(thread_scratch(slot, n * sizeof(X) + 64));
}
inline float* scratch_floats(size_t n) { return scratch<float>(0, n); }

// Prefetches spread over a tile's compute (decode). A burst of prefetches fills the core's miss
// buffers and stalls it until they drain, so memory and compute take turns; issuing a few lines
// at each step of the compute keeps requests in flight while the core computes. (Measured on a
// 12 KiB-per-block read with ~0.5 us of FMAs per block, KV beyond the LLC: 10.7 GB/s with the
// prefetches of a block issued at once, any distance; 19.5 GB/s, the in-cache rate, spread.)
// The hint is prefetcht0: on this machine (AMD Zen 5, virtualised) prefetcht1 left the decode
// at its unprefetched speed in most processes, t0 and nta never did.
struct LineStream {
    static constexpr int kMaxRuns = 2 * (T + 1);
    const uint8_t* at[kMaxRuns];   // first line of each run
    const uint8_t* end[kMaxRuns];  // end of each run
    const uint8_t* cur;             // next line of run r (cur >= cur_end: run r is done)
    const uint8_t* cur_end;         // end of run r
    int n, r;       // runs queued, current run
    int per_step;   // lines per step(): the last tile's lines over its steps, rounded up
    int steps;      // step() calls since the lines were queued
    int64_t lines;  // lines queued
    bool paced;     // space the lines out (see step()): the stream comes from memory
    bool l2;        // prefetcht1 instead of prefetcht0 (attention_prefetch_l2(): per CPU vendor)
    // (The stream lives in raw scratch memory: reset() initialises every field.)
    void reset() {
        n = r = steps = 0;
        lines = 0;
        per_step = 4;
        cur = cur_end = nullptr;
        paced = true;
        l2 = attention_prefetch_l2();
    }
    __attribute__((always_inline)) void line(const uint8_t* c) const {
        if (l2) __builtin_prefetch(c, 0, 2);
        else __builtin_prefetch(c, 0, 3);
    }
    void add(const uint8_t* p, size_t bytes) {
        at[n] = reinterpret_cast<const uint8_t*>(reinterpret_cast<uintptr_t>(p) & ~uintptr_t(63));
        end[n++] = p + bytes;
        lines += int64_t((reinterpret_cast<uintptr_t>(p) + bytes - reinterpret_cast<uintptr_t>(at[n - 1]) + 63) / 64);
        if (n == r + 1) cur = at[r], cur_end = end[r];  // the first run queued: the cursor starts on it
    }
    // (Always inlined: a call from the kernels' inner loops spills every vector register.) The
    // cursor is read into locals and written back once: the kernels' vector stores may alias the
    // stream, so a member updated per line would be a store-to-load chain through memory.
    __attribute__((always_inline)) void step() {
        ++steps;
        const uint8_t* c = cur;
        const uint8_t* e = cur_end;
        for (int i = per_step; i > 0; --i) {
            if (c >= e) {
                if (r + 1 >= n) break;
                ++r;
                c = at[r];
                e = end[r];
            }
            line(c);
            c += 64;
#if defined(__x86_64__) || defined(__i386__)
            // Paced streams put two multiplies' latency (~6 cycles) between the lines. Prefetches
            // issued back to back measured up to 18% slower beyond the LLC (AMD Zen 5, 9/3 heads
            // of 64 f16, 1 and 2 threads: the burst fills the core's miss buffers and, on 2
            // threads, the memory queues), about the spacing the per-line store-to-load chain of
            // the earlier stream gave; from the cache the spacing only costs (10.9 vs 14.4 us).
            if (paced) asm volatile("imul $1, %0, %0\n\timul $1, %0, %0" : "+r"(c));
#endif
        }
        cur = c;
        cur_end = e;
    }
    // Issues what is left of the queued lines, takes the rate for the next tile from this one's
    // steps, and empties the queue.
    void next_tile() {
        if (r < n) {
            for (; cur < cur_end; cur += 64) line(cur);
            for (++r; r < n; ++r)
                for (const uint8_t* c = at[r]; c < end[r]; c += 64) line(c);
        }
        asm volatile("");
        if (steps > 0) per_step = static_cast<int>((lines + steps - 1) / steps) + 1;
        n = r = steps = 0;
        lines = 0;
        cur = cur_end = nullptr;
    }
};

// One tile of keys of one KV head, ready for the row kernels. K is transposed into kt (f32,
// converted while transposing); V rows stay where they are, in the cache's dtype, and are
// converted as P.V loads them (conversions to f32 are exact: where they happen changes no bit),
// except where many row blocks will read the tile (prefill: tile_build's v_f32) on AVX-512, which
// converts 16-bit V rows once into vbuf and hands P.V an f32 tile (one conversion per key instead
// of one per key and row block: the P.V loop was one vcvtph2ps per 4 FMAs at 4 rows).
//
// Pair tiles (Ops::kBf16Dot, bf16 KV, attention): the bf16 dot-product layout instead. K is
// transposed as 32-bit pairs of dims, kp[i][j] = (k_j[2i], k_j[2i+1]); V as pairs of keys,
// vp[i][c] = (v_2i[c], v_2i+1[c]) (row stride vstride, columns past d zero). Q.K and P.V are
// then bf16 dot products (Ops::dot2) of these with the query's and the probabilities' pairs.
struct KeyTile {
    float* kt = nullptr;    // [d][T] transposed keys (f32)
    float* kbuf = nullptr;  // [T][d] spare f32 rows (not used by the kernels here)
    float* vbuf = nullptr;  // [T][d + 16] spare (pair tiles: vp)
    uint32_t* qbuf = nullptr;  // [kRowsScore][d / 2 + 16] pair tiles: the rows' queries in bf16 pairs
    const float* zero = nullptr;
    const float* krow[T];   // f32 tiles: key j's row (absent keys: zero); 16-bit tiles: zero
    const float* vrow[T];   // f32 tiles: value j's row (absent keys: zero); 16-bit tiles: zero
    const uint8_t* vraw[T]; // value j's row in the dtype vdt (absent keys: zero)
    DType vdt = DType::F32;
    // Quantised V (util/kv_quant.hpp): vsc below holds the values' scales (times kv_raw_unit),
    // which P.V multiplies into the probabilities. Quantised K is dequantised into kbuf rows (raw
    // * scale, exact in f32) and transposed from there like f32 keys (direct tiles: see below).
    float* pq = nullptr;  // [kMaxRowsBlock][d / 32 + 1][T]: P.V's probabilities times V's scales
    float* vsc = nullptr;  // quantised V: [vng][T], vsc[g * T + j] = value j's scale of group g
    int vng = 0;
    float* ksc = nullptr;  // direct tiles, quantised K: [kng][T], as vsc
    int kng = 0;
    int ja = 0, jb = -1;  // keys present: [ja, jb]
    bool pairs = false;   // a pair tile (see above)
    const uint32_t* kp = nullptr;  // pair tiles: [(d + 1) / 2][T] (in kt's memory)
    const uint32_t* vp = nullptr;  // pair tiles: [T / 2][vstride] (in vbuf's memory)
    int vstride = 0;
    LineStream* pf = nullptr;  // decode: prefetches to spread over this tile's compute
    // Score order (dense attention: prefill and decode; not the sparse path or the indexer, which
    // keep the even / odd chains): lane chains. A row's score of key j is, for each l < W, the FMA
    // chain over dims c = l, l + W, l + 2W, ... in increasing c (the dot product of lane l when
    // the key row is read W dims at a time), and the W chains are summed by the balanced tree over
    // adjacent lanes ((0+1)+(2+3))+... (Ops::sum_lanes). Transposed tiles compute the chains
    // lane-wise over keys (tile_scores); direct tiles compute them straight from the rows.
    bool lanes = false;
    // Direct tiles (decode, non-pair KV, head_dim a multiple of W; tile_build_direct): K is not
    // transposed (kt unused): kraw[j] is key j's head slice in the dtype kdt, converted in
    // registers (quantised: times its group's scale, exact) and dotted with each row's query W
    // dims at a time, then the lanes summed (Ops::sum_lanes): the same chains and tree. V is read
    // as on every tile, its scales (quantised) from the rows (vsc is not filled).
    bool direct = false;
    DType kdt = DType::F32;
    const uint8_t* kraw[T];
    // Int8 tiles (dense attention over int8 K, prefill and decode alike; tile_build_i8): Q.K in
    // integers. kti (in kt's memory) holds K transposed as 32-bit words of 4 dims, kti[i][j] =
    // word i of key j (Ops::i8_transpose: per byte + 128 where Ops::kI8Unsigned), and ksc the
    // keys' group scales (as direct tiles). A row's query is quantised to int8 per group of 32
    // (quantize_query_i8, RowRef::qw). The score of key j is, over the groups g in increasing
    // order, the sum of f32(the exact int32 dot product of the group's codes) * (q's scale * k's
    // scale): an integer sum has one value whatever order computes it, so decode and prefill, and
    // every ISA path, agree. V is read as on direct tiles.
    bool ints = false;
    uint32_t* kti = nullptr;
    // Int8 V on the VNNI paths (pv_rows_u8): the tile's values as quads (pv_u8_quads.inl, in vbuf's
    // memory: [group][T / 4][4]), built by the first row block that takes them.
    mutable bool vq_built = false;
};

inline size_t tile_qbuf(int d) { return size_t(d) / 2 + 16; }
inline size_t tile_floats(int d) {
    return size_t(d) * T * 2 + size_t(d + 16) * T + size_t(d) + size_t(kRowsScore) * tile_qbuf(d) +
           size_t(kMaxRowsBlock + 2) * size_t(d / 32 + 1) * T;
}

inline void tile_init(KeyTile& t, float* mem, int d) {
    t.kt = mem;
    t.kbuf = mem + size_t(d) * T;
    t.vbuf = t.kbuf + size_t(d) * T;
    float* z = t.vbuf + size_t(d + 16) * T;
    for (int i = 0; i < d; ++i) z[i] = 0.0f;
    t.zero = z;
    t.qbuf = reinterpret_cast<uint32_t*>(z + d);
    t.pq = reinterpret_cast<float*>(t.qbuf + size_t(kRowsScore) * tile_qbuf(d));
    t.vsc = t.pq + size_t(kMaxRowsBlock) * size_t(d / 32 + 1) * T;
    t.ksc = t.vsc + size_t(d / 32 + 1) * T;
}

// NH words of two f16 scales per key (int8 heads of 64, 128, 256, 512: NH = 1, 2, 4, 8), gathered
// key by key: one row pointer and one load per key (a pointer and a 16-bit load per key and group
// had been 7% of an in-cache int8 decode, 9/3 d 64), stored as whole words (one store per word,
// not per scale) and split W keys at a time (Ops::f16_pairs). NH is a template parameter: with a
// run-time count the per-key loop measured 6% slower at 9/3 (d 64).
template <int NH>
inline void tile_scale_words(const uint8_t* const* rows, int d, DType dt, int ja, int jb, float* out) {
    alignas(64) uint32_t w32[NH][T];
    for (int h = 0; h < NH; ++h) {
        for (int j = 0; j < ja; ++j) w32[h][j] = 0;
        for (int j = jb + 1; j < T; ++j) w32[h][j] = 0;
    }
    for (int j = ja; j <= jb; ++j) {
        uint32_t w[NH];
        std::memcpy(w, rows[j] + d, sizeof w);
        for (int h = 0; h < NH; ++h) w32[h][j] = w[h];
    }
    const V unit = Ops::set1(kv_raw_unit(dt));
    for (int h = 0; h < NH; ++h)
        for (int v = 0; v < NV; ++v) {
            V lo, hi;
            Ops::f16_pairs(w32[h] + v * Ops::W, lo, hi);
            Ops::store(out + (2 * h) * T + v * Ops::W, Ops::mul(lo, unit));
            Ops::store(out + (2 * h + 1) * T + v * Ops::W, Ops::mul(hi, unit));
        }
}

// Lanes [ja, jb] of the tile's vector v (row_words' mask).
inline uint32_t present_lanes(int v, int ja, int jb) {
    const int a = mx(ja - v * Ops::W, 0), b = mn(jb - v * Ops::W, Ops::W - 1);
    return a > b ? 0u : ((2u << b) - 1u) & ~((1u << a) - 1u);
}

// Every group count where Ops::kRowWords (AVX-512): the scales of W keys by two masked gathers
// over the row pointers (Ops::row_words), scales g and g + 1 as the halves of the word at byte
// d + 2 g, an odd last one as the high half of the word at d + 2 g - 2 (every byte read belongs to
// the head: its scales, or its last two elements and the scale after them). The scalar loops'
// 2- and 4-byte stores, which the vector load after them cannot forward from, and their 3
// instructions per key had made tile_scales 9-16% of an in-cache int8 decode (Intel Xeon model
// 207, `perf`); gathered, in-cache int8 decode is 3-5% faster at 9/3 and 14/2 heads of 64, ~3% at
// 32/8 of 128, unchanged at 4/1 of 256, fp8 1-3%. The same scales, so the same bits. Returns false
// where the loops below must do it (the AVX2 paths keep them: a gather was 10% slower there in the
// 4-bit indexer's scale build; and AMD Zen 4's gathers are slow: attention_gather_scales).
template <class O = Ops>  // (O: row_words is looked up only where it exists)
inline bool tile_scales_gathered(const uint8_t* const* rows, int d, DType dt, int ja, int jb, int ng, float* out) {
    if constexpr (O::kRowWords) {
        if (d < 2 || !attention_gather_scales()) return false;
        const V unit = Ops::set1(kv_raw_unit(dt));
        for (int v = 0; v < NV; ++v) {
            const uint32_t m = present_lanes(v, ja, jb);
            const uint8_t* const* r = rows + v * Ops::W;
            float* o = out + v * Ops::W;
            int g = 0;
            for (; g + 1 < ng; g += 2) {
                V lo, hi;
                O::f16_pairs(O::row_words(r, size_t(d) + 2 * size_t(g), m), lo, hi);
                Ops::store(o + g * T, Ops::mul(lo, unit));
                Ops::store(o + (g + 1) * T, Ops::mul(hi, unit));
            }
            if (g < ng) {
                V lo, hi;
                O::f16_pairs(O::row_words(r, size_t(d) + 2 * size_t(g) - 2, m), lo, hi);
                Ops::store(o + g * T, Ops::mul(hi, unit));
            }
        }
        return true;
    }
    return false;
}

// The scales of the tile's quantised heads rows[j] (j in [ja, jb]; absent keys: 0) into out
// ([groups][T]), times kv_raw_unit (the value head_scale gives). Returns the number of groups.
// AVX-512: tile_scales_gathered, any count. Elsewhere 2, 4, 8 or 16 groups: tile_scale_words;
// otherwise (fp8's one scale per head, other widths) the scales one group at a time.
inline int tile_scales(const uint8_t* const* rows, int d, DType dt, int ja, int jb, float* out) {
    const int ng = d / kv_scale_group(dt, d);
    if (tile_scales_gathered(rows, d, dt, ja, jb, ng, out)) return ng;
    switch (ng) {
        case 2: tile_scale_words<1>(rows, d, dt, ja, jb, out); return ng;
        case 4: tile_scale_words<2>(rows, d, dt, ja, jb, out); return ng;
        case 8: tile_scale_words<4>(rows, d, dt, ja, jb, out); return ng;
        case 16: tile_scale_words<8>(rows, d, dt, ja, jb, out); return ng;
        default: break;
    }
    const V unit = Ops::set1(kv_raw_unit(dt));
    alignas(64) uint16_t s16[T];
    for (int g = 0; g < ng; ++g) {
        for (int j = 0; j < T; ++j) s16[j] = 0;
        for (int j = ja; j <= jb; ++j) std::memcpy(s16 + j, rows[j] + d + 2 * g, 2);
        for (int v = 0; v < NV; ++v) Ops::store(out + g * T + v * Ops::W, Ops::mul(Ops::load_f16(s16 + v * Ops::W), unit));
    }
    return ng;
}
inline void tile_value_scales(KeyTile& t, int d, DType vdt, int ja, int jb) {
    t.vng = tile_scales(t.vraw, d, vdt, ja, jb, t.vsc);
    t.vq_built = false;
}

// True when a tile of K type kdt and V type vdt is a pair tile (bf16 both, where Ops has bf16
// dot products and the CPU takes them: attention_bf16_dot). need_v = false: K only.
inline bool pair_tile(DType kdt, DType vdt, bool need_v) {
    return Ops::kBf16Dot && kdt == DType::BF16 && (!need_v || vdt == DType::BF16) && attention_bf16_dot();
}

// Raw elements of a quantised head (kv_quant.hpp): W of them from h, or one.
inline V load_raw(const uint8_t* h, DType t) { return t == DType::I8 ? Ops::load_i8(h) : Ops::load_fp8(h); }
inline float raw_elem(uint8_t b, DType t) {
    return t == DType::I8 ? float(static_cast<int8_t>(b)) : f16_to_f32(fp8_e4m3_raw_f16(b));
}

// Scale i of a quantised head of width d (f16 after the elements), times kv_raw_unit(t).
inline float head_scale(const uint8_t* h, DType t, int d, int i) {
    uint16_t s;
    std::memcpy(&s, h + d + 2 * i, 2);
    return Ops::h2f(s) * kv_raw_unit(t);
}

// A quantised head of width d -> d f32 (raw * scale: exact, the value kv_load gives).
inline void dequant_head(const uint8_t* h, DType t, int d, float* out, LineStream* pf) {
    const int g = kv_scale_group(t, d);
    for (int c0 = 0, gi = 0; c0 < d; c0 += g, ++gi) {
        if (pf) pf->step();
        const float sc = head_scale(h, t, d, gi);
        const V vs = Ops::set1(sc);
        int c = c0;
        for (; c + Ops::W <= c0 + g; c += Ops::W) Ops::store(out + c, Ops::mul(load_raw(h + c, t), vs));
        for (; c < c0 + g; ++c) out[c] = raw_elem(h[c], t) * sc;
    }
}

// The pair layout of a bf16 tile (KeyTile): kr[j] / t.vraw[j] are key j's K / V rows (absent
// keys: the zero row); need_v = false (indexer keys) builds K only. O is Ops (a template
// parameter: only compiled where Ops::kBf16Dot).
template <class O>
inline void tile_build_pairs(KeyTile& t, int d, const uint8_t* const* kr, int ja, int jb, bool need_v) {
    constexpr int W = O::W;
    const int dp = (d + 1) / 2;
    uint32_t* kp = reinterpret_cast<uint32_t*>(t.kt);
    for (int g = 0; g < T; g += W) {
        if (g + W - 1 < ja || g > jb) {  // no keys: zero (masked out by every row)
            for (int i = 0; i < dp; ++i)
                for (int j = 0; j < W; ++j) kp[size_t(i) * T + g + j] = 0;
            continue;
        }
        const uint16_t* r16[W];
        for (int j = 0; j < W; ++j) r16[j] = reinterpret_cast<const uint16_t*>(kr[g + j]);
        int c = 0;
        for (; c + 2 * W <= d; c += 2 * W) {
            if (t.pf) t.pf->step();
            O::transpose_pairs_raw(r16, c, kp + size_t(c / 2) * T + g, T);
        }
        for (; c < d; c += 2)
            for (int j = 0; j < W; ++j)
                kp[size_t(c / 2) * T + g + j] = uint32_t(r16[j][c]) | (c + 1 < d ? uint32_t(r16[j][c + 1]) << 16 : 0u);
    }
    t.kp = kp;
    if (!need_v) return;
    const int vs = (d + W - 1) / W * W;
    uint32_t* vp = reinterpret_cast<uint32_t*>(t.vbuf);
    for (int i = ja / 2; i <= jb / 2; ++i) {
        const uint16_t* a = reinterpret_cast<const uint16_t*>(t.vraw[2 * i]);
        const uint16_t* b = reinterpret_cast<const uint16_t*>(t.vraw[2 * i + 1]);
        uint32_t* o = vp + size_t(i) * vs;
        if (t.pf && (i & 1) == 0) t.pf->step();
        int c = 0;
        for (; c + 2 * W <= d; c += 2 * W) O::interleave_pairs(a, b, c, o + c);
        for (; c < d; ++c) o[c] = uint32_t(a[c]) | uint32_t(b[c]) << 16;
        for (; c < vs; ++c) o[c] = 0;
    }
    t.vp = vp;
    t.vstride = vs;
}

// HINT: 2 (prefetcht1: toward L2, for rows needed later) or 3 (prefetcht0: into L1, next tile).
template <int HINT>
inline void prefetch_range(const uint8_t* p, size_t bytes) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(p) & ~uintptr_t(63), e = reinterpret_cast<uintptr_t>(p) + bytes;
    for (uintptr_t x = a; x < e; x += 64) __builtin_prefetch(reinterpret_cast<const void*>(x), 0, HINT);
}

// Prefetches the K and V rows (all heads) of positions [a, b], block by block (a block's rows
// are contiguous): paged blocks are scattered, so the hardware prefetchers lose the stream at
// every block boundary.
template <int HINT = 2>
inline void prefetch_rows(const PagedKV& kv, int64_t a, int64_t b) {
    const int64_t bt = kv.block_tokens;
    while (a <= b) {
        const int64_t blk = a / bt, e = mn(b, blk * bt + bt - 1);
        const uint8_t* base = kv.blocks[blk];
        const size_t off = size_t(a - blk * bt) * kv.row_bytes, bytes = size_t(e - a + 1) * kv.row_bytes;
        prefetch_range<HINT>(base + kv.k_offset + off, bytes);
        if (kv.v_offset != kv.k_offset)
            prefetch_range<HINT>(base + kv.v_offset + size_t(a - blk * bt) * kv.vrb(), size_t(e - a + 1) * kv.vrb());
        a = e + 1;
    }
    // GCC's IPA deems a void function of prefetches alone "const" and deletes its calls
    // before inlining; an empty volatile asm is a side effect that keeps them.
    asm volatile("");
}

// Queues the K and V rows (all heads) of positions [a, b] on the stream.
inline void add_rows(LineStream& s, const PagedKV& kv, int64_t a, int64_t b) {
    const int64_t bt = kv.block_tokens;
    while (a <= b && s.n + 2 <= LineStream::kMaxRuns) {
        const int64_t blk = a / bt, e = mn(b, blk * bt + bt - 1);
        const uint8_t* base = kv.blocks[blk];
        const size_t off = size_t(a - blk * bt) * kv.row_bytes, bytes = size_t(e - a + 1) * kv.row_bytes;
        s.add(base + kv.k_offset + off, bytes);
        if (kv.v_offset != kv.k_offset) s.add(base + kv.v_offset + size_t(a - blk * bt) * kv.vrb(), size_t(e - a + 1) * kv.vrb());
        a = e + 1;
    }
}

// kr[j] / vr[j] = the K / V row (all heads) of position base + j, for j in [ja, jb]
// (one division per tile, not one per row).
inline void row_ptrs(const PagedKV& kv, int64_t base, int ja, int jb, const uint8_t** kr, const uint8_t** vr) {
    const int64_t bt = kv.block_tokens;
    int64_t blk = (base + ja) / bt, o = base + ja - blk * bt;
    for (int j = ja; j <= jb; ++j) {
        const uint8_t* b = kv.blocks[blk];
        kr[j] = b + kv.k_offset + size_t(o) * kv.row_bytes;
        vr[j] = b + kv.v_offset + size_t(o) * kv.vrb();
        if (++o == bt) {
            o = 0;
            ++blk;
        }
    }
}

inline float cvt16(uint16_t h, DType dt) { return dt == DType::BF16 ? bf16_to_f32(h) : f16_to_f32(h); }

// Fills the tile with keys j in [ja, jb]: kp(j) / vp(j) give the head slice of key j (K in the
// dtype dt, V in vdt). need_v = false skips V (indexer).
template <class KP, class VP>
inline void tile_build(KeyTile& t, int d, DType dt, DType vdt, int ja, int jb, KP kp, VP vp, bool need_v,
                       bool v_f32 = false) {
    t.ja = ja;
    t.jb = jb;
    t.vdt = vdt;
    // Pair tiles for bf16 KV (and bf16 indexer keys) where the CPU has bf16 dot products.
    t.pairs = pair_tile(dt, vdt, need_v);
    t.ints = false;
    const bool kq = dtype_quantized(dt);
    const uint8_t* zero = reinterpret_cast<const uint8_t*>(t.zero);
    const uint8_t* kr[T];
    for (int j = 0; j < T; ++j) {
        const bool in = j >= ja && j <= jb;
        kr[j] = in ? kp(j) : zero;
        t.vraw[j] = in && need_v ? vp(j) : zero;
        if (kq && in) {
            float* row = t.kbuf + size_t(j) * d;
            dequant_head(kr[j], dt, d, row, t.pf);
            t.krow[j] = row;
        } else {
            t.krow[j] = dt == DType::F32 ? reinterpret_cast<const float*>(kr[j]) : t.zero;
        }
        t.vrow[j] = vdt == DType::F32 ? reinterpret_cast<const float*>(t.vraw[j]) : t.zero;
    }
    if (need_v && dtype_quantized(vdt)) tile_value_scales(t, d, vdt, ja, jb);
    if constexpr (Ops::kBf16Dot) {
        if (t.pairs) return tile_build_pairs<Ops>(t, d, kr, ja, jb, need_v);
    }
    // AVX-512 only: on AVX2 (Zen 3 in session 13, the Xeon's AVX2 path in session 20) the
    // conversion once per tile measured no faster, and 5-10% slower at d 256.
    if constexpr (Ops::W == 16) {
        if (need_v && v_f32 && (vdt == DType::F16 || vdt == DType::BF16)) {
            constexpr int W = Ops::W;
            const bool bf = vdt == DType::BF16;
            for (int j = ja; j <= jb; ++j) {
                const uint16_t* src = reinterpret_cast<const uint16_t*>(t.vraw[j]);
                float* row = t.vbuf + size_t(j) * (d + 16);
                int c = 0;
                for (; c + W <= d; c += W) Ops::store(row + c, bf ? Ops::load_bf16(src + c) : Ops::load_f16(src + c));
                for (; c < d; ++c) row[c] = cvt16(src[c], vdt);
                t.vraw[j] = reinterpret_cast<const uint8_t*>(row);
                t.vrow[j] = row;
            }
            t.vdt = DType::F32;
        }
    }
    // Transpose K into kt[c][j], W keys at a time; groups without keys are zeroed (their lanes
    // are masked out by every row).
    constexpr int W = Ops::W;
    for (int g = 0; g < T; g += W) {
        if (g + W - 1 < ja || g > jb) {
            for (int c = 0; c < d; ++c)
                for (int j = 0; j < W; ++j) t.kt[size_t(c) * T + g + j] = 0.0f;
            continue;
        }
        int c = 0;
        if (dt == DType::F32 || kq) {
            for (; c + W <= d; c += W) {
                if (t.pf) t.pf->step();
                Ops::transpose(t.krow + g, c, t.kt + size_t(c) * T + g, T);
            }
            for (; c < d; ++c)
                for (int j = 0; j < W; ++j) t.kt[size_t(c) * T + g + j] = t.krow[g + j][c];
        } else {
            const uint16_t* r16[W];
            for (int j = 0; j < W; ++j) r16[j] = reinterpret_cast<const uint16_t*>(kr[g + j]);
            for (; c + 2 * W <= d; c += 2 * W) {
                if (t.pf) t.pf->step();
                Ops::transpose_pairs(r16, c, dt, t.kt + size_t(c) * T + g, T);
            }
            for (; c < d; ++c)
                for (int j = 0; j < W; ++j) t.kt[size_t(c) * T + g + j] = cvt16(r16[j][c], dt);
        }
    }
}

// True when decode reads K of type kdt / V of type vdt as a direct tile (KeyTile): not a pair
// tile, and whole vectors of every head.
inline bool direct_tile(DType kdt, DType vdt, int d) { return !pair_tile(kdt, vdt, true) && d % Ops::W == 0; }

// A direct tile (KeyTile) of keys j in [ja, jb]: kp(j) / vp(j) give the head slice of key j (K in
// the dtype dt, V in vdt; absent keys: a zero head). Nothing is converted or transposed here:
// the scores and P.V read the rows as they go; the scales of quantised heads are gathered
// (tile_scales).
template <class KP, class VP>
inline void tile_build_direct(KeyTile& t, int d, DType dt, DType vdt, int ja, int jb, KP kp, VP vp) {
    t.ja = ja;
    t.jb = jb;
    t.vdt = vdt;
    t.kdt = dt;
    t.pairs = false;
    t.direct = true;
    t.ints = false;
    t.lanes = true;
    const uint8_t* zero = reinterpret_cast<const uint8_t*>(t.zero);  // d floats: a zero head of any type
    for (int j = 0; j < T; ++j) {
        const bool in = j >= ja && j <= jb;
        t.kraw[j] = in ? kp(j) : zero;
        t.vraw[j] = in ? vp(j) : zero;
    }
    if (dtype_quantized(vdt)) tile_value_scales(t, d, vdt, ja, jb);
    if (dtype_quantized(dt)) t.kng = tile_scales(t.kraw, d, dt, ja, jb, t.ksc);
}

// An int8 tile (KeyTile::ints) of keys j in [ja, jb]: kp(j) / vp(j) give the head slice of key j
// (K int8, V in vdt; absent keys: a zero head). K's words are transposed W keys at a time (groups
// of W keys without any key present are left as they are: every row skips them); V is read in
// place as on direct tiles.
template <class KP, class VP>
inline void tile_build_i8(KeyTile& t, int d, DType vdt, int ja, int jb, KP kp, VP vp) {
    constexpr int W = Ops::W;
    t.ja = ja;
    t.jb = jb;
    t.vdt = vdt;
    t.kdt = DType::I8;
    t.pairs = false;
    t.direct = false;
    t.ints = true;
    t.lanes = true;
    t.kti = reinterpret_cast<uint32_t*>(t.kt);
    const uint8_t* zero = reinterpret_cast<const uint8_t*>(t.zero);  // d floats: a zero head of any type
    for (int j = 0; j < T; ++j) {
        const bool in = j >= ja && j <= jb;
        t.kraw[j] = in ? kp(j) : zero;
        t.vraw[j] = in ? vp(j) : zero;
    }
    if (dtype_quantized(vdt)) tile_value_scales(t, d, vdt, ja, jb);
    t.kng = tile_scales(t.kraw, d, DType::I8, ja, jb, t.ksc);
    const int nw = d / 4;
    const uint32_t flip = Ops::kI8Unsigned ? 0x80808080u : 0u;
    for (int g = 0; g < T; g += W) {
        if (g + W - 1 < ja || g > jb) continue;
        int c = 0;
        for (; c + W <= nw; c += W) {
            if (t.pf) t.pf->step();
            Ops::i8_transpose(t.kraw + g, c, t.kti + size_t(c) * T + g, T);
        }
        for (; c < nw; ++c)  // d = 32 on AVX-512: 8 words
            for (int j = 0; j < W; ++j) {
                uint32_t w;
                std::memcpy(&w, t.kraw[g + j] + 4 * c, 4);
                t.kti[size_t(c) * T + g + j] = w ^ flip;
            }
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
    // Optional: q already in bf16 pairs (q_pairs; pair tiles), else converted tile by tile.
    const uint32_t* qp = nullptr;
    // Int8 tiles: the query quantised (q_i8), q_i8_words(d) words.
    const uint32_t* qw = nullptr;
};

// A row's query for int8 tiles, from q (f32, pre-scaled): quantize_query_i8's codes as words of
// 4 dims (nw = d / 4 of them: raw), the same as int16 pairs of codes (0, 2) (even) and (1, 3)
// (odd; vpmaddwd paths), then per group of 32 its scale (f32 bits) and the sum of its codes
// (vpdpbusd path): out[0 .. nw) raw,
// [nw .. 2 nw) even, [2 nw .. 3 nw) odd, [3 nw .. 3 nw + ng) scales, [3 nw + ng .. + 2 ng) sums.
inline size_t q_i8_words(int d) { return size_t(d) / 4 * 3 + size_t(d / kQueryI8Group) * 2; }
inline void q_i8(const float* q, int d, uint32_t* out) {
    const int nw = d / 4, ng = d / kQueryI8Group;
    int8_t* codes = reinterpret_cast<int8_t*>(out);  // the raw words are the codes in order
    float* sc = reinterpret_cast<float*>(out + 3 * nw);
    quantize_query_i8(q, d, codes, sc);
    // Only what this path's Ops::i8_dot / i8_init read: the code sums (vpdpbusd's correction) or
    // the int16 pairs (vpmaddwd).
    if constexpr (Ops::kI8Unsigned) {
        int32_t* sums = reinterpret_cast<int32_t*>(out + 3 * nw + ng);
        for (int g = 0; g < ng; ++g) {
            int32_t sum = 0;
            for (int c = g * kQueryI8Group; c < (g + 1) * kQueryI8Group; ++c) sum += codes[c];
            sums[g] = sum;
        }
    } else {
        for (int i = 0; i < nw; ++i) {
            const int8_t* b = codes + 4 * i;
            out[nw + i] = uint32_t(uint16_t(int16_t(b[0]))) | uint32_t(uint16_t(int16_t(b[2]))) << 16;
            out[2 * nw + i] = uint32_t(uint16_t(int16_t(b[1]))) | uint32_t(uint16_t(int16_t(b[3]))) << 16;
        }
    }
}

// The pairs of a pair tile's query: q (f32, pre-scaled) rounded to bf16 (nearest even),
// out[i] = (q[2i], q[2i + 1]), zero-padded to a whole vector (tile_qbuf(d) entries).
template <class O>
inline void q_pairs(const float* q, int d, uint32_t* out) {
    constexpr int W = O::W;
    int c = 0;
    for (; c + 2 * W <= d; c += 2 * W) O::store_bf16_pairs(out + c / 2, O::load(q + c), O::load(q + c + W));
    if (c < d) {
        const int n = d - c;
        O::store_bf16_pairs(out + c / 2, O::load_n(q + c, n < W ? n : W), O::load_n(q + c + W, n > W ? n - W : 0));
    }
}

template <int R, class O>
inline void tile_scores_pairs(const KeyTile& t, int d, const float* const* q, const uint32_t* const* qp,
                              V (&s)[R][NV]);

// Lane-chain scores (KeyTile::lanes) of R rows against a transposed tile: for each lane l < W the
// chain over dims c = l, l + W, ... (lane-wise over keys), the chains summed by the balanced tree
// over adjacent l (the same pairs as Ops::sum_lanes). The tree is unrolled at compile time
// (LaneTree<LV>: the sum of the 2^LV chains from l0), so every chain and partial sum has a fixed
// register (or spill slot); a run-time binary counter kept them in stack memory with branches.
template <int R, int NVB, int LV>
struct LaneTree {
    // The sum of chains [l0, l0 + 2^LV) of R rows for the keys of vectors [v0, v0 + NVB) of the tile.
    __attribute__((always_inline)) static void run(const KeyTile& t, int d, const float* const* q, int l0, int v0,
                                                   V (&out)[R][NVB]) {
        if constexpr (LV == 0) {
            if (t.pf && l0 % 2 == 0) t.pf->step();
            for (int r = 0; r < R; ++r)
                for (int v = 0; v < NVB; ++v) out[r][v] = Ops::zero();
            for (int c = l0; c < d; c += Ops::W) {
                const float* k = t.kt + size_t(c) * T + v0 * Ops::W;
                for (int r = 0; r < R; ++r) {
                    const V qc = Ops::set1(q[r][c]);
                    for (int v = 0; v < NVB; ++v) out[r][v] = Ops::fma(qc, Ops::load(k + v * Ops::W), out[r][v]);
                }
            }
        } else {
            V right[R][NVB];
            LaneTree<R, NVB, LV - 1>::run(t, d, q, l0, v0, out);
            LaneTree<R, NVB, LV - 1>::run(t, d, q, l0 + (1 << (LV - 1)), v0, right);
            for (int r = 0; r < R; ++r)
                for (int v = 0; v < NVB; ++v) out[r][v] = Ops::add(out[r][v], right[r][v]);
        }
    }
};

// Short chains (d <= 4 W: each a few FMAs) leave the tree's partial sums most of the registers,
// so the tile's key vectors go one at a time there (9/3 d 64 on AVX-512: 149 -> 163-169 GFLOP/s);
// longer chains share each query broadcast between the vectors (32/8 d 128, 4/1 d 256: 3-5%
// faster that way). Same chains, same tree, same bits either way.
template <int R>
inline void tile_scores_lanes(const KeyTile& t, int d, const float* const* q, V (&s)[R][NV]) {
    constexpr int W = Ops::W;
    constexpr int L = __builtin_ctz(unsigned(W));
    static_assert((W & (W - 1)) == 0, "W is a power of two");
    if (d <= 4 * W) {
        for (int v = 0; v < NV; ++v) {
            V sv[R][1];
            LaneTree<R, 1, L>::run(t, d, q, 0, v, sv);
            for (int r = 0; r < R; ++r) s[r][v] = sv[r][0];
        }
    } else {
        constexpr int NB = kScoreVecs;
        for (int v0 = 0; v0 < NV; v0 += NB) {
            V sv[R][NB];
            LaneTree<R, NB, L>::run(t, d, q, 0, v0, sv);
            for (int r = 0; r < R; ++r)
                for (int v = 0; v < NB; ++v) s[r][v0 + v] = sv[r][v];
        }
    }
}

// Key j's elements [c, c + W) of a direct tile in f32 (quantised: raw * scale, exact; sc = the
// scale of their group).
template <DType KD>
inline V load_k(const uint8_t* row, int c, float sc) {
    if constexpr (KD == DType::F32) return Ops::load(reinterpret_cast<const float*>(row) + c);
    else if constexpr (KD == DType::BF16) return Ops::load_bf16(reinterpret_cast<const uint16_t*>(row) + c);
    else if constexpr (KD == DType::F16) return Ops::load_f16(reinterpret_cast<const uint16_t*>(row) + c);
    else return Ops::mul(load_raw(row + c, KD), Ops::set1(sc));
}

// Ops::lane_pairs / sum_lane_pairs where Ops has them (O: looked up only there).
template <class O = Ops>
inline V lane_pairs_of(V a, V c) {
    if constexpr (O::kLanePairs) return O::lane_pairs(a, c);
    else return O::add(a, c);  // (never called)
}
template <class O = Ops>
inline V sum_lane_pairs_of(const float* h) {
    if constexpr (O::kLanePairs) return O::sum_lane_pairs(h);
    else return O::sum_lanes(h);  // (never called)
}

// Lane-chain scores of R rows against a direct tile (KeyTile): per key, the W lane chains over its
// row (KB keys at a time, each row's accumulators stored: on AVX-512 after the first level of the
// lane tree, two keys to a vector), then the rest of Ops::sum_lanes for each W keys.
template <int R, DType KD>
inline void tile_scores_direct(const KeyTile& t, int d, const float* const* q, V (&s)[R][NV]) {
    constexpr int W = Ops::W;
    // Keys per block: on AVX2 the KB x R accumulators, the R query vectors and the key vector in
    // hand fill its 16 registers (R = 3 gets 4 keys, 2 before: 7% more KV read per second at 9/3,
    // Zen 3); AVX-512 takes 4 keys for 3 and 4 rows (8 / R = 2 before: 4-8% faster at 9/3, 14/2
    // and 32/8 with the KV in cache, Zen 5; 8 keys for 3 rows measured no better than 4), 8 / R
    // for 1 and 2.
    // R > 4 (fp8 K's blocks of up to 8 rows): 2 keys (2 x R accumulators, R queries, one key).
    constexpr int KB_regs = kVecRegs == 16 ? pow2_floor(vectors_per_row(R)) : (R > 4 ? 2 : R >= 3 ? 4 : 8 / R);
    constexpr int KB0 = KB_regs < 1 ? 1 : KB_regs;
    constexpr int KB = KB0 > W ? W : KB0;  // keys per block: KB x R accumulators
    static_assert(W % KB == 0, "key blocks divide a vector");
    const int g = dtype_quantized(KD) ? kv_scale_group(KD, d) : d;
    const int ng = d / g;
    // Where Ops splits sum_lanes (AVX-512), each pair of keys' accumulators is stored after its
    // first level (Ops::lane_pairs): half the stores and loads, the same operations and bits.
    constexpr bool kPairKeys = Ops::kLanePairs && KB % 2 == 0;
    alignas(64) float acc_buf[R][W * W];
    for (int v = 0; v < NV; ++v) {
        const int j0 = v * W;
        if (j0 + W - 1 < t.ja || j0 > t.jb) {  // no keys (masked out by every row)
            for (int r = 0; r < R; ++r) s[r][v] = Ops::zero();
            continue;
        }
        for (int k0 = 0; k0 < W; k0 += KB) {
            if (t.pf) t.pf->step();
            const uint8_t* kr[KB];
            for (int k = 0; k < KB; ++k) kr[k] = t.kraw[j0 + k0 + k];
            V a[KB][R];
            for (int k = 0; k < KB; ++k)
                for (int r = 0; r < R; ++r) a[k][r] = Ops::zero();
            for (int gi = 0; gi < ng; ++gi) {
                float sc[KB];
                for (int k = 0; k < KB; ++k) sc[k] = dtype_quantized(KD) ? t.ksc[gi * T + j0 + k0 + k] : 1.0f;
                for (int c = gi * g; c < gi * g + g; c += W) {
                    V qv[R];
                    for (int r = 0; r < R; ++r) qv[r] = Ops::in_reg(Ops::load(q[r] + c));
                    for (int k = 0; k < KB; ++k) {
                        const V kv = load_k<KD>(kr[k], c, sc[k]);
                        for (int r = 0; r < R; ++r) a[k][r] = Ops::fma(qv[r], kv, a[k][r]);
                    }
                }
            }
            if constexpr (kPairKeys) {  // sum_lanes' first level here, in registers
                for (int k = 0; k < KB; k += 2)
                    for (int r = 0; r < R; ++r) Ops::store(acc_buf[r] + (k0 + k) / 2 * W, lane_pairs_of(a[k][r], a[k + 1][r]));
            } else {
                for (int k = 0; k < KB; ++k)
                    for (int r = 0; r < R; ++r) Ops::store(acc_buf[r] + (k0 + k) * W, a[k][r]);
            }
        }
        for (int r = 0; r < R; ++r) {
            if constexpr (kPairKeys) s[r][v] = sum_lane_pairs_of(acc_buf[r]);
            else s[r][v] = Ops::sum_lanes(acc_buf[r]);
        }
    }
}

// Integer scores of R rows against an int8 tile (KeyTile::ints): per group of 32 dims the exact
// int32 dot products of the rows' codes (qw[r], q_i8) with the keys' words, then
// s = ((0 + f32(dot_0) * (q's scale_0 * k's scale_0)) + ...), groups in increasing order.
//
// Each row's group sum runs as C chains over the group's words (word i to chain i mod C), added
// after: the sums are exact int32, so the chains change no bit, and on VNNI paths they hide
// vpdpbusd's latency where a block has few rows (the indexer's 4 heads of the base preset, GQA
// groups of 2-4 query heads): about 8 accumulators in all (16 measured no faster; blocks of 5 or
// more rows keep one chain each).
template <int R>
inline void tile_scores_i8(const KeyTile& t, int d, const uint32_t* const* qw, V (&s)[R][NV]) {
    constexpr int W = Ops::W;
    constexpr int G4 = kQueryI8Group / 4;  // words per group
    constexpr int kAcc = 8;  // accumulators to aim for
    constexpr int C = !Ops::kI8Unsigned ? 1 : kAcc / R >= 4 ? 4 : kAcc / R >= 2 ? 2 : 1;
    static_assert(G4 % C == 0, "chains divide a group's words");
    const int nw = d / 4, ng = d / kQueryI8Group;
    const float* qsc[R];
    const int32_t* qsum[R];
    for (int r = 0; r < R; ++r) {
        qsc[r] = reinterpret_cast<const float*>(qw[r] + 3 * nw);
        qsum[r] = reinterpret_cast<const int32_t*>(qw[r] + 3 * nw + ng);
    }
    for (int v = 0; v < NV; ++v) {
        const int j0 = v * W;
        if (j0 + W - 1 < t.ja || j0 > t.jb) {  // no keys (masked out by every row)
            for (int r = 0; r < R; ++r) s[r][v] = Ops::zero();
            continue;
        }
        V sv[R];
        for (int r = 0; r < R; ++r) sv[r] = Ops::zero();  // 0 + f = f: the first group's term exactly
        for (int g = 0; g < ng; ++g) {
            if (t.pf) t.pf->step();
            typename Ops::VI acc[R][C];
            for (int r = 0; r < R; ++r) {
                acc[r][0] = Ops::i8_init(Ops::kI8Unsigned ? qsum[r][g] : 0);  // (sums: q_i8)
                for (int c = 1; c < C; ++c) acc[r][c] = Ops::vi_zero();
            }
            for (int i0 = g * G4; i0 < g * G4 + G4; i0 += C) {
#pragma GCC unroll 4
                for (int c = 0; c < C; ++c) {
                    const typename Ops::KI k = Ops::i8_prep(t.kti + size_t(i0 + c) * T + j0);
                    for (int r = 0; r < R; ++r) acc[r][c] = Ops::i8_dot(acc[r][c], k, qw[r] + i0 + c, nw);
                }
            }
            const V ks = Ops::load(t.ksc + g * T + j0);
            for (int r = 0; r < R; ++r) {
                typename Ops::VI a = acc[r][0];
                for (int c = 1; c < C; ++c) a = Ops::vi_add(a, acc[r][c]);  // exact: int32 sums
                const V f = Ops::mul(Ops::i8_cvt(a), Ops::mul(Ops::set1(qsc[r][g]), ks));
                sv[r] = Ops::add(sv[r], f);
            }
        }
        for (int r = 0; r < R; ++r) s[r][v] = sv[r];
    }
}

// Lane-wise scores of R rows against the tile: s[r][v] = sum_c q_r[c] * kt[c][v*W + lane],
// two chains over even / odd c, added at the end (pair tiles: tile_scores_pairs).
// qp: optional per row, its query in bf16 pairs (pair tiles; q_pairs), or null.
template <int R>
inline void tile_scores(const KeyTile& t, int d, const float* const* q, V (&s)[R][NV],
                        const uint32_t* const* qp = nullptr) {
    if constexpr (Ops::kBf16Dot && R <= kRowsScore) {  // (pair tiles: blocks of kRowsScore rows at most)
        if (t.pairs) return tile_scores_pairs<R, Ops>(t, d, q, qp, s);
    }
    if (t.direct) {
        switch (t.kdt) {
            case DType::F32: return tile_scores_direct<R, DType::F32>(t, d, q, s);
            case DType::BF16: return tile_scores_direct<R, DType::BF16>(t, d, q, s);
            case DType::F16: return tile_scores_direct<R, DType::F16>(t, d, q, s);
            case DType::FP8_E4M3: return tile_scores_direct<R, DType::FP8_E4M3>(t, d, q, s);
            case DType::I8:  // int8 K: int8 tiles (tile_scores_i8)
            case DType::FP4:
            case DType::FP4_E8: break;  // never direct: tile_build_rows decodes 4-bit rows into f32 ones
        }
    }
    if (t.lanes) return tile_scores_lanes<R>(t, d, q, s);
    V a0[R][NV], a1[R][NV];
    for (int r = 0; r < R; ++r)
        for (int v = 0; v < NV; ++v) a0[r][v] = a1[r][v] = Ops::zero();
    int c = 0;
    for (; c + 1 < d; c += 2) {
        if (t.pf && c % 8 == 0) t.pf->step();
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

// tile_scores of a pair tile: the rows' queries in bf16 pairs (given, or converted into qbuf),
// then per key lane two chains of bf16 dot products over even / odd pairs of dims, added at the end.
template <int R, class O>
inline void tile_scores_pairs(const KeyTile& t, int d, const float* const* q, const uint32_t* const* qpr,
                              V (&s)[R][NV]) {
    constexpr int W = O::W;
    static_assert(R <= kRowsScore, "qbuf holds kRowsScore rows");
    const int dp = (d + 1) / 2;
    const uint32_t* qrow[R];
    for (int r = 0; r < R; ++r) {
        if (qpr && qpr[r]) {
            qrow[r] = qpr[r];
        } else {
            uint32_t* b = t.qbuf + r * tile_qbuf(d);
            q_pairs<O>(q[r], d, b);
            qrow[r] = b;
        }
    }
    constexpr int NB = kScoreVecs;  // R x NB x 2 accumulators
    for (int vb = 0; vb < NV; vb += NB) {
        V a0[R][NB], a1[R][NB];
        for (int r = 0; r < R; ++r)
            for (int v = 0; v < NB; ++v) a0[r][v] = a1[r][v] = O::zero();
        int i = 0;
        for (; i + 1 < dp; i += 2) {
            if (t.pf && i % 8 == 0 && vb == 0) t.pf->step();
            const uint32_t* k0 = t.kp + size_t(i) * T + vb * W;
            const uint32_t* k1 = k0 + T;
            for (int v = 0; v < NB; ++v) {
                const auto kv0 = O::load_pairs(k0 + v * W), kv1 = O::load_pairs(k1 + v * W);
                for (int r = 0; r < R; ++r) {
                    a0[r][v] = O::dot2(a0[r][v], kv0, O::set1_pair(qrow[r][i]));
                    a1[r][v] = O::dot2(a1[r][v], kv1, O::set1_pair(qrow[r][i + 1]));
                }
            }
        }
        if (i < dp) {
            const uint32_t* k0 = t.kp + size_t(i) * T + vb * W;
            for (int v = 0; v < NB; ++v) {
                const auto kv0 = O::load_pairs(k0 + v * W);
                for (int r = 0; r < R; ++r) a0[r][v] = O::dot2(a0[r][v], kv0, O::set1_pair(qrow[r][i]));
            }
        }
        for (int r = 0; r < R; ++r)
            for (int v = 0; v < NB; ++v) s[r][vb + v] = O::add(a0[r][v], a1[r][v]);
    }
}

// The vector level of tree_sum: t[i] += t[i + n/2] while n > 1 (one vector of lane sums).
__attribute__((always_inline)) inline V tree_vec(const V (&p)[NV]) {
    V t[NV];
    for (int v = 0; v < NV; ++v) t[v] = p[v];
    for (int n = NV; n > 1; n /= 2)
        for (int i = 0; i < n / 2; ++i) t[i] = Ops::add(t[i], t[i + n / 2]);
    return t[0];
}
__attribute__((always_inline)) inline float tree_sum(V (&p)[NV]) { return Ops::hsum(tree_vec(p)); }

// Value j's elements [c, c + W) (or element c) in f32.
template <DType VD>
inline V load_v(const uint8_t* row, int c) {
    if constexpr (VD == DType::F32) return Ops::load(reinterpret_cast<const float*>(row) + c);
    else if constexpr (VD == DType::BF16) return Ops::load_bf16(reinterpret_cast<const uint16_t*>(row) + c);
    else if constexpr (VD == DType::I8) return Ops::load_i8(row + c);     // raw: times the row's scale
    else if constexpr (VD == DType::FP8_E4M3) return Ops::load_fp8(row + c);
    else return Ops::load_f16(reinterpret_cast<const uint16_t*>(row) + c);
}
// The scale group of element c of a quantised head (util/kv_quant.hpp: int8 per 32, fp8 per head).
template <DType VD>
constexpr int scale_index(int c) {
    static_assert(dtype_quantized(VD), "quantised types only");
    return VD == DType::I8 ? c / kv_scale_group(DType::I8, 0) : 0;
}

template <DType VD>
inline float elem_v(const uint8_t* row, int c) {
    if constexpr (VD == DType::F32) return reinterpret_cast<const float*>(row)[c];
    else if constexpr (dtype_quantized(VD)) return raw_elem(row[c], VD);
    else return cvt16(reinterpret_cast<const uint16_t*>(row)[c], VD);
}
// p * value j's element c, added to o (one FMA), as the vector path computes it: p is the
// probability (quantised values: times the element's group scale, pv_rows_dt's pq) and the element
// is in f32 (quantised: raw).
template <DType VD>
inline float pv_elem(const KeyTile& t, int j, int c, float p, float o) {
    return Ops::fmas(p, elem_v<VD>(t.vraw[j], c), o);
}

// o_r[c0 .. c0 + CB*W) = alpha_r * o_r[...] + sum_j p_r[j] * v_j[...] for j in [ja, jb] (masked to
// each row's range): the online-softmax rescale (one multiply, exact when alpha is 1) and then one
// FMA per key in increasing j. Quantised V: the FMA multiplies the raw elements by p_r[j] times
// their group's scale (one multiply per row and group instead of one per vector of elements).
// pbuf: [R][ng][T] the rows' probabilities (quantised V: times the group's scale; else ng = 1).
template <int R, int CB, bool MASKED, DType VD>
inline void pv_block(const KeyTile& t, const RowRef* rows, const float* pbuf, int ng, const float* alpha, int c0,
                     int ja, int jb) {
    V acc[R][CB];
    for (int r = 0; r < R; ++r) {
        const V a = Ops::set1(alpha[r]);
        for (int cb = 0; cb < CB; ++cb) acc[r][cb] = Ops::mul(Ops::load(rows[r].o + c0 + cb * Ops::W), a);
    }
    for (int j = ja; j <= jb; ++j) {
        if (t.pf && (j & 7) == 0) t.pf->step();
        const uint8_t* vr = t.vraw[j];
        bool on[R];
        for (int r = 0; r < R; ++r) on[r] = !MASKED || (j >= rows[r].a && j <= rows[r].b);
        // The probabilities of the group of column c0 (quantised V: times its scale), reloaded
        // when a later column block starts another group.
        int gprev = 0;
        if constexpr (dtype_quantized(VD)) gprev = scale_index<VD>(c0);  // W divides the group
        V p[R];
        for (int r = 0; r < R; ++r) p[r] = Ops::set1(pbuf[(r * ng + gprev) * T + j]);
        for (int cb = 0; cb < CB; ++cb) {
            const int c = c0 + cb * Ops::W;
            int gi = 0;
            if constexpr (dtype_quantized(VD)) gi = scale_index<VD>(c);
            if (gi != gprev) {
                for (int r = 0; r < R; ++r) p[r] = Ops::set1(pbuf[(r * ng + gi) * T + j]);
                gprev = gi;
            }
            const V vv = load_v<VD>(vr, c);
            for (int r = 0; r < R; ++r) acc[r][cb] = MASKED ? Ops::fma_if(on[r], p[r], vv, acc[r][cb]) : Ops::fma(p[r], vv, acc[r][cb]);
        }
    }
    for (int r = 0; r < R; ++r)
        for (int cb = 0; cb < CB; ++cb) Ops::store(rows[r].o + c0 + cb * Ops::W, acc[r][cb]);
}

template <int R, bool MASKED, DType VD>
inline void pv_rows_dt(const KeyTile& t, int d, const RowRef* rows, const float* pbuf, const float* alpha, int ja,
                       int jb) {
    constexpr int W = Ops::W;
    // R x CB accumulators, the R rows' broadcast probabilities and one vector of values must fit
    // the registers: one more spills an accumulator, and every FMA of the block then waits on a
    // store-to-load round trip (AVX2, R = 4, CB = 3 did: a third of a GQA-7 decode's time).
    constexpr int CB_regs = vectors_per_row(R) < kPvAccMax / R ? vectors_per_row(R) : kPvAccMax / R;
    constexpr int CB0 = CB_regs < 1 ? 1 : CB_regs;
    constexpr int CB = CB0 > kPvCols ? kPvCols : CB0;
    // Quantised V: pq[r][g][j] = p_r[j] * value j's scale of group g (vsc; every FMA of the group's
    // elements multiplies the raw element by it).
    int ng = 1;
    const float* pp = pbuf;
    float* pq = t.pq;  // [R][ng][T]
    static_assert(R <= kMaxRowsBlock, "tile_floats holds kMaxRowsBlock rows of pq");
    if constexpr (dtype_quantized(VD)) {
        ng = t.vng;
        for (int g = 0; g < ng; ++g)
            for (int v = 0; v < NV; ++v) {
                const V sv = Ops::load(t.vsc + g * T + v * W);
                for (int r = 0; r < R; ++r)
                    Ops::store(pq + (r * ng + g) * T + v * W, Ops::mul(Ops::load(pbuf + r * T + v * W), sv));
            }
        pp = pq;
    }
    int c = 0;
    for (; c + CB * W <= d; c += CB * W) pv_block<R, CB, MASKED, VD>(t, rows, pp, ng, alpha, c, ja, jb);
    for (; c + W <= d; c += W) pv_block<R, 1, MASKED, VD>(t, rows, pp, ng, alpha, c, ja, jb);
    for (; c < d; ++c) {  // element tail: the same per-element sequence
        int gi = 0;
        if constexpr (dtype_quantized(VD)) gi = scale_index<VD>(c);
        for (int r = 0; r < R; ++r) {
            float o = rows[r].o[c] * alpha[r];
            for (int j = ja; j <= jb; ++j)
                if (!MASKED || (j >= rows[r].a && j <= rows[r].b)) o = pv_elem<VD>(t, j, c, pp[(r * ng + gi) * T + j], o);
            rows[r].o[c] = o;
        }
    }
}

// Integer P.V over int8 V (every tile whose V is int8: prefill, decode and sparse alike). Per row
// r and V scale group g (32 dims) the weights w_j = p_r[j] * (value j's scale of group g) of the
// tile's keys are coded as 8-bit integers against their largest magnitude: with amax = max_j |w_j|,
// f = 255 / amax and code_j = w_j * f rounded to the nearest integer (ties to even; |w_j| <=
// amax, so |code_j| <= 255 with no clamp), so the largest weight is coded 255. The group's dims then accumulate sum_j code_j
// * raw_j[c] as exact int32 (32 keys x 255 x 128 < 2^31), and the tile ends with o[c] = o[c] *
// alpha + f32(sum) * (amax * (1 / 255)) (a multiply and an add, no FMA: the same bits on every
// path, the scalar one included). An integer sum has one value whatever computes it: vpdpbusd over
// quads of keys where every code of the row block is >= 0 (the VNNI paths, pv_rows_u8), int16
// pairs of keys otherwise (vpdpwssd / vpmaddwd; a negative code comes only from a negative V
// scale, which a caller's rows may carry), so the paths agree, the keys outside a row's range (p =
// 0: code 0) change nothing, and decode and prefill agree. A group whose amax is below 2^-100
// adds nothing (codes and scale 0: far below an f32 ulp of the row's running sum); one holding
// inf or NaN gets scale NaN (as f32 would). A weight moves by at most amax / 510: one key alone
// (w = amax, code 255) gives the dequantised row within 2 ulp.
inline constexpr float kPvI8Tiny = 0x1p-100f;
inline constexpr int kPvCodeMax = 255;  // the largest weight's code

template <int R, int CB>
inline void pv_block_i8(const KeyTile& t, const RowRef* rows, const int16_t* codes, const float* wsc, int ng,
                        const float* alpha, int c0, int ia, int ib) {
    constexpr int CD = Ops::kPvI8Dims;
    constexpr int W = Ops::W;
    static_assert(CD == 2 * W, "a step covers two vectors of o");
    static_assert(kv_scale_group(DType::I8, 0) % CD == 0, "a step stays inside one scale group");
    using VI = typename Ops::VI;
    VI acc[R][CB][2];
    for (int r = 0; r < R; ++r)
        for (int cb = 0; cb < CB; ++cb) acc[r][cb][0] = acc[r][cb][1] = Ops::vi_zero();
    const uint32_t* wq = reinterpret_cast<const uint32_t*>(codes);  // [R][ng][T / 2] pairs of keys
    for (int i = ia; i <= ib; ++i) {
        if (t.pf && (i & 3) == 0) t.pf->step();
        const uint8_t* va = t.vraw[2 * i];
        const uint8_t* vb = t.vraw[2 * i + 1];
        for (int cb = 0; cb < CB; ++cb) {
            const int c = c0 + cb * CD;
            const int g = scale_index<DType::I8>(c);
            VI lo, hi;
            Ops::pv_i8_pairs(va + c, vb + c, lo, hi);
            for (int r = 0; r < R; ++r) {
                const uint32_t w = wq[(r * ng + g) * (T / 2) + i];
                acc[r][cb][0] = Ops::pv_i8_dot(acc[r][cb][0], lo, w);
                acc[r][cb][1] = Ops::pv_i8_dot(acc[r][cb][1], hi, w);
            }
        }
    }
    for (int r = 0; r < R; ++r) {
        const V a = Ops::set1(alpha[r]);
        for (int cb = 0; cb < CB; ++cb) {
            const int c = c0 + cb * CD;
            const V sc = Ops::set1(wsc[r * ng + scale_index<DType::I8>(c)]);
            V f0, f1;
            Ops::pv_i8_cvt(acc[r][cb][0], acc[r][cb][1], f0, f1);
            float* o = rows[r].o + c;
            Ops::store(o, Ops::add(Ops::mul(Ops::load(o), a), Ops::mul(f0, sc)));
            Ops::store(o + W, Ops::add(Ops::mul(Ops::load(o + W), a), Ops::mul(f1, sc)));
        }
    }
}

// Rows from which the VNNI paths take pv_rows_u8: with fewer, building the quads (once per tile)
// costs more than the int16 pairs' extra vpdpwssd (in cache, Intel Xeon model 207: 9/3 heads of 64,
// 3 rows, 5% slower; 4 rows of 128 and 256 dims 2-3% faster, 7 rows of 64 3-6%).
constexpr int kPvU8MinRows = 4;
// Rows per pass of pv_block_u8: R x 2 accumulators (AVX-512; AVX-VNNI R x 4 on ymm), the quad
// vectors and the weights in registers.
constexpr int kPvU8Rows = kVecRegs == 32 ? 8 : 2;

// The tile's int8 values as quads (pv_u8_quads.inl) into vbuf: [group][T / 4][4 ymm], every key
// of the tile (absent keys: the zero head), once per tile (KeyTile::vq_built).
template <class O>
inline void tile_value_quads(const KeyTile& t, int ng) {
    __m256i* vq = reinterpret_cast<__m256i*>(t.vbuf);
    for (int g = 0; g < ng; ++g)
        for (int i = 0; i < T / 4; ++i) {
            const uint8_t* const* v = t.vraw + 4 * i;
            __m256i q[4];
            O::pv_u8_quads(v[0] + 32 * g, v[1] + 32 * g, v[2] + 32 * g, v[3] + 32 * g, q);
            O::pv_u8_store(q, vq + (size_t(g) * (T / 4) + i) * 4);
        }
    t.vq_built = true;
}

// P.V of RB rows over group g (dims 32 g ..) with 8-bit weight codes (w8: [R][ng][T / 4] words of
// 4 keys' codes), quads qa .. qb of the tile: kPvU8Vecs vpdpbusd per row and quad, then as
// pv_block_i8.
template <int RB, class O>
inline void pv_block_u8(const KeyTile& t, const RowRef* rows, const uint32_t* w8, const float* wsc, int ng,
                        const float* alpha, int g, int qa, int qb) {
    using VU = typename O::VU;
    constexpr int W = O::W, NU = O::kPvU8Vecs;
    const __m256i* vq = reinterpret_cast<const __m256i*>(t.vbuf) + size_t(g) * (T / 4) * 4;
    VU acc[RB][NU];
    for (int r = 0; r < RB; ++r)
        for (int k = 0; k < NU; ++k) acc[r][k] = O::vu_zero();
    for (int i = qa; i <= qb; ++i) {
        if (t.pf && (i & 1) == 0) t.pf->step();
        VU q[NU];
        for (int k = 0; k < NU; ++k) q[k] = O::vu_load(vq + 4 * i + k * (4 / NU));
        for (int r = 0; r < RB; ++r) {
            const uint32_t w = w8[(r * ng + g) * (T / 4) + i];
            for (int k = 0; k < NU; ++k) acc[r][k] = O::pv_u8_dot(acc[r][k], q[k], w);
        }
    }
    for (int r = 0; r < RB; ++r) {
        V f[32 / W];
        O::pv_u8_cvt(acc[r], f);
        const V a = O::set1(alpha[r]), sc = O::set1(wsc[r * ng + g]);
        float* o = rows[r].o + 32 * g;
        for (int v = 0; v < 32 / W; ++v) O::store(o + v * W, O::add(O::mul(O::load(o + v * W), a), O::mul(f[v], sc)));
    }
}

// The R rows in passes of at most kPvU8Rows (AVX-512: one pass, R <= kMaxRowsBlock = 8).
template <int R, class O>
inline void pv_rows_u8(const KeyTile& t, int ng, const RowRef* rows, const uint32_t* w8, const float* wsc,
                       const float* alpha, int qa, int qb) {
    constexpr int RB = R <= kPvU8Rows ? R : kPvU8Rows;
    for (int g = 0; g < ng; ++g) pv_block_u8<RB, O>(t, rows, w8, wsc, ng, alpha, g, qa, qb);
    if constexpr (R > RB)
        pv_rows_u8<R - RB, O>(t, ng, rows + RB, w8 + size_t(RB) * ng * (T / 4), wsc + RB * ng, alpha + RB, qa, qb);
}

template <int R, class O = Ops>  // (O: so that hmax4 and the u8 path are looked up only where they exist)
inline void pv_rows_i8(const KeyTile& t, int d, const RowRef* rows, const float* pbuf, const float* alpha, int ja,
                       int jb) {
    constexpr int W = Ops::W;
    constexpr int CD = Ops::kPvI8Dims;
    static_assert(R <= kMaxRowsBlock, "tile_floats holds kMaxRowsBlock rows of pq");
    const int ng = t.vng, n = R * ng;
    int16_t* codes = reinterpret_cast<int16_t*>(t.pq);  // [R][ng][T] (half of pq's floats), then
    float* wsc = t.pq + size_t(n) * T / 2;              // [R][ng] the groups' scales,
    uint32_t* w8 = reinterpret_cast<uint32_t*>(wsc + n);  // [R][ng][T / 4] 8-bit codes (pv_rows_u8)
    // Weight vector v of (row r, group g): p_r times the values' scales (0 where p is: a key
    // outside the row's range adds nothing even if its scale is NaN, as the f32 path skips it).
    auto weights = [&](int r, int g, V* w) {
        for (int v = 0; v < NV; ++v) w[v] = Ops::mul_nz(Ops::load(pbuf + r * T + v * W), Ops::load(t.vsc + g * T + v * W));
    };
    auto absmax = [&](const V* w) {  // ([&]: a captureless lambda would get its own, baseline ABI)
        V m = Ops::abs(w[0]);
        for (int v = 1; v < NV; ++v) m = Ops::max(m, Ops::abs(w[v]));
        return m;
    };
    // Codes and scale of each (r, g), k = r * ng + g, by code(k, w, amax) in one pass: amax is the
    // largest |w| (max is exact: any reduction order gives the same value); where Ops::kGroup == 4
    // the maxima of 4 of them come from one reduction.
    auto code_all = [&](auto code) {
        int k0 = 0, r0 = 0, g0 = 0;
        if constexpr (O::kGroup == 4) {
            for (; k0 + 4 <= n; k0 += 4) {
                V w[4][NV];
                for (int i = 0; i < 4; ++i) {
                    weights(r0, g0, w[i]);
                    if (++g0 == ng) g0 = 0, ++r0;
                }
                alignas(64) float q[O::W];
                O::store(q, O::hmax4(absmax(w[0]), absmax(w[1]), absmax(w[2]), absmax(w[3])));
                for (int i = 0; i < 4; ++i) code(k0 + i, w[i], q[4 * i]);
            }
        }
        for (; k0 < n; ++k0) {
            V w[NV];
            weights(r0, g0, w);
            if (++g0 == ng) g0 = 0, ++r0;
            code(k0, w, Ops::hmax(absmax(w)));
        }
    };
    // The codes' factor f = kPvCodeMax / amax (correctly rounded: the same on every path) and the
    // scale of the group's sums, amax * f32(1 / kPvCodeMax); 0 for a tiny or non-finite amax.
    auto factor = [](float a) {
        return a >= kPvI8Tiny && a <= std::numeric_limits<float>::max() ? float(kPvCodeMax) / a : 0.0f;
    };
    auto scale = [](float a, float f) { return f != 0.0f ? a * (1.0f / float(kPvCodeMax)) : 0.0f; };
    if constexpr (O::kPvU8 && R >= kPvU8MinRows) {
        // The codes as bytes; a negative one (a negative V scale) or a non-finite weight sends the
        // tile to the int16 codes below, which give the same sums (and flag the non-finite).
        uint8_t* wb = reinterpret_cast<uint8_t*>(w8);
        bool neg = false;
        code_all([&](int k, const V* w, float a) {
            const float f = factor(a);
            for (int v = 0; v < NV; ++v) neg |= O::pv_u8_codes(w[v], f, wb + k * T + v * W);
            wsc[k] = scale(a, f);
        });
        if (!neg) {
            if (!t.vq_built) tile_value_quads<O>(t, ng);
            pv_rows_u8<R, O>(t, ng, rows, w8, wsc, alpha, ja / 4, jb / 4);
            return;
        }
    }
    code_all([&](int k, const V* w, float a) {
        const float f = factor(a);
        bool bad = false;  // an inf or NaN weight (f = 0 too: NaN * 0)
        for (int v = 0; v < NV; ++v) bad |= Ops::pv_i8_codes(w[v], f, codes + k * T + v * W);
        wsc[k] = bad ? std::numeric_limits<float>::quiet_NaN() : scale(a, f);
    });
    // R x CB x 2 int32 accumulators plus two vectors of pairs fit the registers.
    constexpr int CB0 = (kVecRegs == 32 ? 8 : 4) / R;
    constexpr int CB = CB0 < 1 ? 1 : CB0;
    const int ia = ja / 2, ib = jb / 2;
    int c = 0;
    for (; c + CB * CD <= d; c += CB * CD) pv_block_i8<R, CB>(t, rows, codes, wsc, ng, alpha, c, ia, ib);
    for (; c < d; c += CD) pv_block_i8<R, 1>(t, rows, codes, wsc, ng, alpha, c, ia, ib);  // d % 32 == 0
}

// pv_block of a pair tile: o_r[c0 .. c0 + CB*W) = alpha_r * o_r[...] + the bf16 dot products of
// the probability pairs pp_r[i] with the value pairs vp[i][...], i in [ia, ib] in increasing order.
// MASKED: pairs with neither key in the row's range are skipped; a pair with one key in range
// adds 0 * v for the other (exact for finite v: o is never -0). n: valid lanes of the last vector.
template <int R, int CB, bool MASKED, class O>
inline void pv_block_pairs(const KeyTile& t, const RowRef* rows, const uint32_t* pp, const float* alpha, int c0,
                           int ia, int ib, int n) {
    constexpr int W = O::W;
    V acc[R][CB];
    for (int r = 0; r < R; ++r) {
        const V a = O::set1(alpha[r]);
        for (int cb = 0; cb < CB; ++cb)
            acc[r][cb] = O::mul(cb == CB - 1 ? O::load_n(rows[r].o + c0 + cb * W, n) : O::load(rows[r].o + c0 + cb * W), a);
    }
    for (int i = ia; i <= ib; ++i) {
        if (t.pf) t.pf->step();
        const uint32_t* vr = t.vp + size_t(i) * t.vstride + c0;
        typename O::P vv[CB];
        for (int cb = 0; cb < CB; ++cb) vv[cb] = O::load_pairs(vr + cb * W);
        for (int r = 0; r < R; ++r) {
            const auto p = O::set1_pair(pp[r * (T / 2) + i]);
            if constexpr (MASKED) {
                const bool on = 2 * i + 1 >= rows[r].a && 2 * i <= rows[r].b;
                for (int cb = 0; cb < CB; ++cb) acc[r][cb] = O::dot2_if(on, acc[r][cb], vv[cb], p);
            } else {
                for (int cb = 0; cb < CB; ++cb) acc[r][cb] = O::dot2(acc[r][cb], vv[cb], p);
            }
        }
    }
    for (int r = 0; r < R; ++r)
        for (int cb = 0; cb < CB; ++cb) {
            if (cb == CB - 1) O::store_n(rows[r].o + c0 + cb * W, acc[r][cb], n);
            else O::store(rows[r].o + c0 + cb * W, acc[r][cb]);
        }
}

template <int R, bool MASKED, class O>
inline void pv_rows_pairs(const KeyTile& t, int d, const RowRef* rows, const float* pbuf, const float* alpha, int ja,
                          int jb) {
    constexpr int W = O::W;
    static_assert(T % (2 * W) == 0, "a row's probabilities are whole vectors of pairs");
    alignas(64) uint32_t pp[R * (T / 2)];  // the probabilities (already bf16 values) as pairs
    for (int r = 0; r < R; ++r)
        for (int j = 0; j < T; j += 2 * W)
            O::store_bf16_pairs(pp + (r * T + j) / 2, O::load(pbuf + r * T + j), O::load(pbuf + r * T + j + W));
    const int ia = ja / 2, ib = jb / 2;
    int c = 0;
    for (; c + kPvCols * W <= d; c += kPvCols * W) pv_block_pairs<R, kPvCols, MASKED, O>(t, rows, pp, alpha, c, ia, ib, W);
    for (; c < d; c += W) pv_block_pairs<R, 1, MASKED, O>(t, rows, pp, alpha, c, ia, ib, d - c < W ? d - c : W);
}

template <int R, bool MASKED>
inline void pv_rows(const KeyTile& t, int d, const RowRef* rows, const float* pbuf, const float* alpha, int ja, int jb) {
    if constexpr (Ops::kBf16Dot) {
        if (t.pairs) return pv_rows_pairs<R, MASKED, Ops>(t, d, rows, pbuf, alpha, ja, jb);
    }
    switch (t.vdt) {
        case DType::F32: return pv_rows_dt<R, MASKED, DType::F32>(t, d, rows, pbuf, alpha, ja, jb);
        case DType::BF16: return pv_rows_dt<R, MASKED, DType::BF16>(t, d, rows, pbuf, alpha, ja, jb);
        case DType::F16: return pv_rows_dt<R, MASKED, DType::F16>(t, d, rows, pbuf, alpha, ja, jb);
        case DType::I8: return pv_rows_i8<R>(t, d, rows, pbuf, alpha, ja, jb);  // masked keys: p = 0
        case DType::FP8_E4M3: return pv_rows_dt<R, MASKED, DType::FP8_E4M3>(t, d, rows, pbuf, alpha, ja, jb);
        case DType::FP4:
        case DType::FP4_E8: return;  // never: tile_build_rows decodes 4-bit rows into f32 ones
    }
}

// The online-softmax step of R rows whose masked scores are s: per row, m_new = max(m, max_j s_j),
// alpha = 2^(m - m_new) (0 for an empty row), p_j = 2^(s_j - m_new) (0 outside the row's keys)
// into pbuf, l = l * alpha + sum_j p_j (the fixed tree of tree_sum), m = m_new. o is rescaled
// by PV (pv_block). With Ops::kGroup == 4 the max, alpha and sum of 4 rows are computed in one
// vector (Ops::hmax4 / hsum4: the same lanes and pairs as one row at a time, so the same bits).
// (O is Ops: a template parameter so that the branch not taken is not compiled.)
// round_p (pair tiles): p_j is rounded to bf16, the weight P.V multiplies by; l sums those.
template <int R, class O = Ops>
inline void softmax_rows(const RowRef* rows, V (&s)[R][NV], float* pbuf, float* alpha, bool round_p) {
    if constexpr (Ops::kGroup == 1) {
        for (int r = 0; r < R; ++r) {
            const RowRef& row = rows[r];
            float tmax = kNegInf;
            for (int v = 0; v < NV; ++v) {
                float hm = Ops::hmax(s[r][v]);
                tmax = hm > tmax ? hm : tmax;
            }
            const float m_old = *row.m;
            const float m_new = m_old > tmax ? m_old : tmax;
            alpha[r] = m_old == kNegInf ? 0.0f : Ops::exp2s(m_old - m_new);
            V p[NV];
            for (int v = 0; v < NV; ++v)
                p[v] = Ops::keep_range(Ops::exp2(Ops::sub(s[r][v], Ops::set1(m_new))), v * Ops::W, row.a, row.b, 0.0f);
            const float psum = tree_sum(p);
            for (int v = 0; v < NV; ++v) Ops::store(pbuf + r * T + v * Ops::W, p[v]);
            const float l_scaled = *row.l * alpha[r];
            *row.l = l_scaled + psum;
            *row.m = m_new;
        }
    } else {
        static_assert(O::kGroup == 4, "the grouped softmax takes 4 rows at a time");
        for (int g0 = 0; g0 < R; g0 += 4) {
            const int n = R - g0 < 4 ? R - g0 : 4;
            int ri[4];
            for (int k = 0; k < 4; ++k) ri[k] = g0 + (k < n ? k : 0);  // missing rows: repeat the first
            V x[4];
            for (int k = 0; k < 4; ++k) {  // (max is exact: any order gives the same value)
                x[k] = s[ri[k]][0];
                for (int v = 1; v < NV; ++v) x[k] = O::max(x[k], s[ri[k]][v]);
            }
            const V tm = O::hmax4(x[0], x[1], x[2], x[3]);
            const V mo = O::quarters(*rows[ri[0]].m, *rows[ri[1]].m, *rows[ri[2]].m, *rows[ri[3]].m);
            const V mn = O::max(mo, tm);  // mo > tm ? mo : tm
            const V al = O::zero_where_neginf(mo, O::exp2(O::sub(mo, mn)));
            V ps[4];
            for (int k = 0; k < n; ++k) {
                const int r = g0 + k;
                const RowRef& row = rows[r];
                const V m = O::quarter(mn, k);
                V p[NV];
                for (int v = 0; v < NV; ++v) {
                    p[v] = O::exp2(O::sub(s[r][v], m));
                    if constexpr (O::kBf16Dot) {
                        if (round_p) p[v] = O::round_bf16(p[v]);
                    }
                    if (row.a > 0 || row.b < T - 1) p[v] = O::keep_range(p[v], v * O::W, row.a, row.b, 0.0f);
                    O::store(pbuf + r * T + v * O::W, p[v]);
                }
                ps[k] = tree_vec(p);  // tree_sum's vector level (its lane level: hsum4)
            }
            for (int k = n; k < 4; ++k) ps[k] = ps[0];
            const V lo = O::quarters(*rows[ri[0]].l, *rows[ri[1]].l, *rows[ri[2]].l, *rows[ri[3]].l);
            const V ln = O::add(O::mul(lo, al), O::hsum4(ps[0], ps[1], ps[2], ps[3]));
            alignas(64) float mv[16], lv[16], av[16];
            O::store(mv, mn);
            O::store(lv, ln);
            O::store(av, al);
            for (int k = 0; k < n; ++k) {
                *rows[g0 + k].m = mv[4 * k];
                *rows[g0 + k].l = lv[4 * k];
                alpha[g0 + k] = av[4 * k];
            }
        }
    }
}

// Online-softmax update of R rows with one tile.
template <int R>
inline void tile_rows_block(const KeyTile& t, int d, const RowRef* rows) {
    alignas(64) float pbuf[R * T];
    float alpha[R];
    const float* q[R];
    const uint32_t* qp[R];
    for (int r = 0; r < R; ++r) {
        q[r] = rows[r].q;
        qp[r] = rows[r].qp;
    }
    V s[R][NV];
    if (t.ints) {
        const uint32_t* qw[R];
        for (int r = 0; r < R; ++r) qw[r] = rows[r].qw;
        tile_scores_i8<R>(t, d, qw, s);
    } else {
        tile_scores<R>(t, d, q, s, qp);
    }
    int ja = T, jb = -1;
    bool uniform = true;
    for (int r = 0; r < R; ++r) {
        const RowRef& row = rows[r];
        if (row.a > 0 || row.b < T - 1)  // keys outside the row's range: -inf (a no-op on the others)
            for (int v = 0; v < NV; ++v) s[r][v] = Ops::keep_range(s[r][v], v * Ops::W, row.a, row.b, kNegInf);
        ja = row.a < ja ? row.a : ja;
        jb = row.b > jb ? row.b : jb;
        if (row.a != rows[0].a || row.b != rows[0].b) uniform = false;
    }
    softmax_rows<R>(rows, s, pbuf, alpha, t.pairs);
    if (uniform) pv_rows<R, false>(t, d, rows, pbuf, alpha, ja, jb);
    else pv_rows<R, true>(t, d, rows, pbuf, alpha, ja, jb);
}

// Rows in blocks of B, the remainder in one block (a GQA group of 3 reads the tile once, not
// three times).
template <int B>
inline void tile_rows_blocks(const KeyTile& t, int d, const RowRef* rows, int n) {
    int i = 0;
    for (; i + B <= n; i += B) tile_rows_block<B>(t, d, rows + i);
    switch (n - i) {
        case 0: return;
        case 1: return tile_rows_block<1>(t, d, rows + i);
        case 2: if constexpr (B > 2) return tile_rows_block<2>(t, d, rows + i); break;
        case 3: if constexpr (B > 3) return tile_rows_block<3>(t, d, rows + i); break;
        case 4: if constexpr (B > 4) return tile_rows_block<4>(t, d, rows + i); break;
        case 5: if constexpr (B > 5) return tile_rows_block<5>(t, d, rows + i); break;
        case 6: if constexpr (B > 6) return tile_rows_block<6>(t, d, rows + i); break;
        case 7: if constexpr (B > 7) return tile_rows_block<7>(t, d, rows + i); break;
        default: break;
    }
    for (; i < n; ++i) tile_rows_block<1>(t, d, rows + i);
}

inline void tile_rows(const KeyTile& t, int d, const RowRef* rows, int n) {
    // Quantised K (int8 tiles, fp8 direct tiles): each key's conversion is costly, so the larger
    // blocks (kRowsQuant).
    if (t.ints || (t.direct && t.kdt == DType::FP8_E4M3)) return tile_rows_blocks<kRowsQuant>(t, d, rows, n);
    if (t.direct) return tile_rows_blocks<kRowsDirect>(t, d, rows, n);
    tile_rows_blocks<kRowsScore>(t, d, rows, n);
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
// With few items (a few new tokens after a long cached prefix: 11 queries x 3 KV heads are 3
// items), each item is split into its key chunks, computed in parallel, and the chunk partials
// fold in chunk order afterwards: the same partials folded in the same order as the walk folds
// them, so the bits do not change.

// q_pairs of a row's query into out (returned) where Ops has bf16 dot products, else null.
template <class O = Ops>
inline const uint32_t* rows_q_pairs(const float* q, int d, uint32_t* out) {
    if constexpr (O::kBf16Dot) {
        q_pairs<O>(q, d, out);
        return out;
    } else {
        return nullptr;
    }
}

// Below this many (KV head, query block) items, prefill splits items into key chunks.
constexpr int kPrefillSplitItems = 16;
// Rows (query tokens x heads of a KV group) per prefill query block: at most kPrefillRowsMax,
// at most kPrefillRowFloats / head_dim, at least kPrefillRowsMin (measured with
// bench_attention_prefill: 384 rows against 96 read the keys 4x fewer times: +5-10% at 512
// keys, +20% at 32K keys, 9/3 and 32/8 heads).
constexpr int64_t kPrefillRowsMax = 384, kPrefillRowsMin = 96, kPrefillRowFloats = 65536;

struct PrefillItem {
    int32_t qb, g;
    int32_t chunk;  // -1: all the block's keys, finalized; else one chunk, partial written at `off`
    size_t off;
};

inline void prefill_impl(const PagedKV& kv, const AttnParams& p, const float* q, int32_t n_q, int32_t q_pos0,
                         float* out, float* lse, const PrefillTeam* team) {
    const int d = p.head_dim, H = p.n_heads, n_kv = kv.n_kv_heads, G = H / n_kv;
    const size_t es = kv_head_bytes(kv.dtype, d), ves = kv_head_bytes(kv.vdt(), d);  // bytes per head
    const size_t stride = size_t(d) + 2;  // a partial per row: m, l, o[d]
    const float qscale = p.scale * kLog2e;
    const double work = double(n_q) * H * d * double(int64_t(q_pos0) + n_q - attn_first_key(p, q_pos0));
    // Query blocks of QB tokens (G rows each): every key tile is built once per block and
    // serves all its rows, so larger blocks read the keys fewer times (long contexts are
    // bound by that); kPrefillRowsMax rows at most, fewer for wide heads (the rows' q and o
    // stay in L2) or where large blocks would leave too few items for the threads and force
    // the split along key chunks below.
    int QB = 1, nqb = 0;
    size_t n_chunks = 0;
    // Keys of query block qb: [qlo(qb), qhi(qb)] (the union of its rows' ranges).
    auto qlo = [&](int qb) { return attn_first_key(p, int64_t(q_pos0) + int64_t(qb) * QB); };
    auto qhi = [&](int qb) { return int64_t(q_pos0) + mn(n_q, int64_t(qb + 1) * QB) - 1; };
    for (int rows_blk = static_cast<int>(mn(kPrefillRowsMax, mx(kPrefillRowsMin, kPrefillRowFloats / d)));;
         rows_blk /= 2) {
        QB = G >= rows_blk ? 1 : rows_blk / G;
        nqb = (n_q + QB - 1) / QB;
        n_chunks = 0;
        for (int qb = 0; qb < nqb; ++qb)
            if (qlo(qb) <= qhi(qb)) n_chunks += size_t(qhi(qb) / C - qlo(qb) / C + 1);
        const bool few = n_kv * nqb < kPrefillSplitItems && n_chunks > size_t(nqb);
        if (!few || rows_blk / 2 < kPrefillRowsMin) break;
    }
    const bool split = n_kv * nqb < kPrefillSplitItems && n_chunks > size_t(nqb) && work > kParallelWork;
    PrefillItem* items = scratch<PrefillItem>(3, split ? n_chunks * n_kv : size_t(nqb) * n_kv);
    int32_t* first = scratch<int32_t>(4, size_t(nqb) * n_kv);  // items of (qb, g) start at first[qb * n_kv + g]
    int n_items = 0;
    size_t part_floats = 0;
    for (int qb = nqb - 1; qb >= 0; --qb)  // longest key ranges first
        for (int g = 0; g < n_kv; ++g) {
            first[qb * n_kv + g] = n_items;
            if (!split) {
                items[n_items++] = PrefillItem{qb, g, -1, 0};
                continue;
            }
            const size_t nr = size_t(mn(n_q, int64_t(qb + 1) * QB) - int64_t(qb) * QB) * G;
            if (qlo(qb) <= qhi(qb))
                for (int64_t c = qlo(qb) / C; c <= qhi(qb) / C; ++c) {
                    items[n_items++] = PrefillItem{qb, g, static_cast<int32_t>(c), part_floats};
                    part_floats += nr * stride;
                }
        }
    // Team mode (attention.hpp attention_prefill_team): thread 0's partial buffer serves the team.
    const int nth = team ? mx(1, team_threads()) : 1, tid = nth > 1 ? team_thread() : 0;
    float* part = nullptr;
    if (split && (!team || tid == 0)) part = scratch<float>(6, part_floats);
    if (team && split) {
        if (tid == 0) *team->part = part;
        team->barrier->wait(nth);
        part = *team->part;
    }
    auto run_item = [&](int item) {
        const PrefillItem& pi = items[item];
        const int qb = pi.qb, g = pi.g;
        const int t0 = qb * QB, t1 = static_cast<int>(mn(n_q, t0 + QB)), nr = (t1 - t0) * G;
        // scratch: tile | q[nr][d] | oc[nr][d] | ot[nr][d] | mc, lc, mt, lt [nr] | q pairs [nr][qbuf]
        const size_t tf = tile_floats(d);
        const bool pairs = pair_tile(kv.dtype, kv.vdt(), true);  // tile_build's pair tiles
        const size_t qps = tile_qbuf(d);
        const bool ints = kv.dtype == DType::I8;  // int8 tiles (KeyTile::ints)
        const size_t qws = ints ? q_i8_words(d) : 0;
        float* mem = scratch_floats(tf + size_t(nr) * (3 * size_t(d) + 4) + (pairs ? size_t(nr) * qps : 0) +
                                    size_t(nr) * qws);
        KeyTile tile;
        tile_init(tile, mem, d);
        float* qs = mem + tf;
        float* oc = qs + size_t(nr) * d;
        float* ot = oc + size_t(nr) * d;
        float* mc = ot + size_t(nr) * d;
        float* lc = mc + nr;
        float* mt = lc + nr;
        float* lt = mt + nr;
        uint32_t* qpb = reinterpret_cast<uint32_t*>(lt + nr);
        uint32_t* qwb = qpb + (pairs ? size_t(nr) * qps : 0);
        tile.lanes = true;  // dense attention's score order (KeyTile::lanes), as decode
        int64_t* lo = scratch<int64_t>(1, size_t(nr) * 2);
        int64_t* hi = lo + nr;
        int32_t* cur = scratch<int32_t>(2, size_t(nr));
        RowRef* rows = scratch<RowRef>(5, size_t(nr));
        const uint8_t* kr[T];
        const uint8_t* vr[T];
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
                if (pairs) rows[r].qp = rows_q_pairs(qs + size_t(r) * d, d, qpb + size_t(r) * qps);
                if (ints) {
                    q_i8(qs + size_t(r) * d, d, qwb + size_t(r) * qws);
                    rows[r].qw = qwb + size_t(r) * qws;
                }
            }
        // The keys this item walks: all of the block's, or one chunk of them.
        int64_t ulo = lo[0], uhi = hi[nr - 1];
        if (pi.chunk >= 0) {
            ulo = mx(ulo, int64_t(pi.chunk) * C);
            uhi = mn(uhi, int64_t(pi.chunk) * C + C - 1);
        }
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
                row_ptrs(kv, base, ja, jb, kr, vr);
                const size_t off = size_t(g) * es, voff = size_t(g) * ves;
                if (ints)
                    tile_build_i8(
                        tile, d, kv.vdt(), ja, jb, [&](int j) { return kr[j] + off; },
                        [&](int j) { return vr[j] + voff; });
                else
                    tile_build(
                        tile, d, kv.dtype, kv.vdt(), ja, jb, [&](int j) { return kr[j] + off; },
                        [&](int j) { return vr[j] + voff; }, true, r1 - r0 > kRowsScore);
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
                if (pi.chunk >= 0) {  // the chunk's partial (a fold into an empty total copies it exactly)
                    float* st = part + pi.off + size_t(r) * stride;
                    st[0] = mt[r];
                    st[1] = lt[r];
                    for (int c = 0; c < d; ++c) st[2 + c] = ot[size_t(r) * d + c];
                } else {
                    finalize(mt[r], lt[r], ot + size_t(r) * d, p.sinks ? p.sinks + h : nullptr, d,
                             out + (size_t(t) * H + h) * d, lse ? lse + size_t(t) * H + h : nullptr);
                }
            }
    };
    // Fold each row's chunk partials in chunk order (items of one (qb, g) are in chunk order).
    const int n_rows = n_q * H;
    auto merge_row = [&](int th) {
        const int t = th / H, h = th % H, qb = t / QB, g = h / G;
        const int r = (t - qb * QB) * G + h % G;
        const int32_t i0 = first[qb * n_kv + g];
        float* o = scratch<float>(7, size_t(d));
        float m = kNegInf, l = 0.0f;
        for (int c = 0; c < d; ++c) o[c] = 0.0f;
        for (int32_t it = i0; it < n_items && items[it].qb == qb && items[it].g == g; ++it) {
            const float* st = part + items[it].off + size_t(r) * stride;
            fold(m, l, o, st[0], st[1], st + 2, d);
        }
        finalize(m, l, o, p.sinks ? p.sinks + h : nullptr, d, out + (size_t(t) * H + h) * d,
                 lse ? lse + size_t(t) * H + h : nullptr);
    };
    if (team) {
        // Items from the team's counter; a thread whose items throw (scratch memory refused)
        // still passes every wait, then rethrows. The last wait: the outputs are complete (and
        // thread 0's partial buffer is free) when any thread returns.
        std::exception_ptr error;
        try {
            for (int it; (it = team->next->fetch_add(1, std::memory_order_relaxed)) < n_items;) run_item(it);
        } catch (...) {
            error = std::current_exception();
        }
        team->barrier->wait(nth);
        if (split && !error) {
            for (int th = n_rows * tid / nth; th < n_rows * (tid + 1) / nth; ++th) merge_row(th);
        }
        if (split) team->barrier->wait(nth);
        if (error) std::rethrow_exception(error);
        return;
    }
    RegionError err;  // (scratch memory refused inside the region: rethrown after it)
#pragma omp parallel for schedule(dynamic, 1) if (n_items > 1 && work > kParallelWork)
    for (int item = 0; item < n_items; ++item) {
        if (err) continue;
        err.guard([&] { run_item(item); });
    }
    err.rethrow();
    if (!split) return;
#pragma omp parallel for schedule(static) if (n_rows >= 256)
    for (int th = 0; th < n_rows; ++th) {
        if (err) continue;
        err.guard([&] { merge_row(th); });
    }
    err.rethrow();
}

inline void prefill(const PagedKV& kv, const AttnParams& p, const float* q, int32_t n_q, int32_t q_pos0, float* out,
                    float* lse) {
    prefill_impl(kv, p, q, n_q, q_pos0, out, lse, nullptr);
}
inline void prefill_team(const PagedKV& kv, const AttnParams& p, const float* q, int32_t n_q, int32_t q_pos0, float* out,
                         const PrefillTeam& team) {
    prefill_impl(kv, p, q, n_q, q_pos0, out, nullptr, &team);
}

// ---------------------------------------------------------------------------------------------
// Decode: work items are (sequence, chunk of C aligned positions); partials folded in order.

struct ChunkItem {
    int32_t seq;
    int32_t part;      // index of this chunk's partial in the partial buffer
    int64_t lo, hi;    // keys [lo, hi] of this chunk
    int64_t mid2 = 0;  // decode: twice the key offset of this chunk's middle among all the items' keys
};

// The query heads [h0, h1) of decode item ci that thread tid of n runs (h0 == h1: none; H heads,
// total2: twice the keys of all the call's items). The cells, in item then head order, each
// weighing its keys, are cut into n contiguous spans of about equal weight: a cell goes to the
// thread whose share [t * total / n, (t + 1) * total / n) holds its middle. A cell is a whole item
// where the call has at least n items (4,160 keys, eight full chunks and one of 64, split 2,048 /
// 2,112, where equal item counts gave 2,560 / 1,600 and left a thread waiting a third of the
// attention), else an (item, head) pair (by_heads): a context of one chunk, up to C keys, had left
// every thread but one waiting (a 2-thread SmolLM2 decode at ~300 positions: 4% of its samples in
// the attention's barrier). Whole items where there are enough: a split item is read by two
// threads. Which thread runs a (chunk, head) changes no bit.
inline void item_heads(const ChunkItem& ci, int H, int64_t total2, bool by_heads, int tid, int n, int& h0, int& h1) {
    h0 = h1 = 0;
    if (n <= 1 || total2 <= 0) {
        if (tid == 0) h1 = H;
        return;
    }
    const int cells = by_heads ? H : 1;
    const int64_t keys = ci.hi - ci.lo + 1, before2 = ci.mid2 - keys;  // twice the keys before the item
    for (int c = 0; c < cells; ++c) {
        const int64_t t = (before2 * cells + (2 * int64_t(c) + 1) * keys) * n / (total2 * cells);
        if ((t < n - 1 ? t : n - 1) != tid) continue;
        if (h1 == h0) h0 = c;
        h1 = c + 1;
    }
    if (!by_heads && h1 > h0) h1 = H;
}

// The decode items (sequence, chunk of C keys) in sequence then key order; first[s] = the first
// item of sequence s. Returns the number of items (their partials: items x H x (d + 2) floats).
inline int decode_plan(const DecodeSeq* seqs, int32_t n_seqs, const AttnParams& p, ChunkItem** items_out,
                       int32_t** first_out) {
    size_t total = 0;
    for (int32_t s = 0; s < n_seqs; ++s) {
        const int64_t lo = attn_first_key(p, seqs[s].pos), hi = seqs[s].pos;
        if (lo <= hi) total += size_t(hi / C - lo / C + 1);
    }
    ChunkItem* items = scratch<ChunkItem>(3, total);
    int32_t* first = scratch<int32_t>(4, size_t(n_seqs) + 1);
    int n_items = 0;
    int64_t keys = 0;
    for (int32_t s = 0; s < n_seqs; ++s) {
        first[s] = n_items;
        const int64_t lo = attn_first_key(p, seqs[s].pos), hi = seqs[s].pos;
        if (lo <= hi)
            for (int64_t c = lo / C; c <= hi / C; ++c, ++n_items) {
                const int64_t a = mx(lo, c * C), b = mn(hi, c * C + C - 1);
                items[n_items] = ChunkItem{s, n_items, a, b, 2 * keys + (b - a + 1)};
                keys += b - a + 1;
            }
    }
    first[n_seqs] = n_items;
    *items_out = items;
    *first_out = first;
    return n_items;
}

inline size_t decode_part_floats(const DecodeSeq* seqs, int32_t n_seqs, const AttnParams& p) {
    size_t n = 0;
    for (int32_t s = 0; s < n_seqs; ++s) {
        const int64_t lo = attn_first_key(p, seqs[s].pos), hi = seqs[s].pos;
        if (lo <= hi) n += size_t(hi / C - lo / C + 1);
    }
    return n * size_t(p.n_heads) * (size_t(p.head_dim) + 2);
}

// team_part == nullptr: the plain call (a parallel region of its own when the work is large).
// Else team mode (every thread of the caller's region makes the same call): each thread plans
// the items on its own (the same plan), the items are shared out by an orphaned work-sharing
// loop of the caller's region (no fork/join) writing their partials into team_part (the team's
// one buffer), and after that loop's barrier every thread folds every (sequence, head) itself
// into team_out (its own buffer; sequence s at team_out + s * H * d; lse not written), so the
// call ends without a barrier. Same items, same arithmetic, same bits either way.
inline void decode_impl(const DecodeSeq* seqs, int32_t n_seqs, const AttnParams& p, float* team_part,
                        float* team_out, TeamBarrier* barrier) {
    const int d = p.head_dim, H = p.n_heads;
    const size_t stride = size_t(d) + 2;  // per head: m, l, o[d]
    ChunkItem* items;
    int32_t* first;
    const int n_items = decode_plan(seqs, n_seqs, p, &items, &first);
    const bool team = team_part != nullptr;
    float* part = team ? team_part : scratch<float>(6, size_t(n_items) * H * stride);
    const float qscale = p.scale * kLog2e;
    double work = 0;
    for (int it = 0; it < n_items; ++it) work += double(items[it].hi - items[it].lo + 1) * H * d;
    // Each thread takes one contiguous span of (item, head) cells (a sequence's chunks in key order;
    // spans of about equal keys, item_heads), so its prefetch stream runs on from one chunk into the
    // next instead of restarting at every chunk.
    const bool par = work > kParallelWork;
    // K and V bytes the call reads: below kPacedBytes they are taken to come from the caches and
    // the prefetch stream runs unpaced (LineStream::paced).
    double kv_bytes = 0;
    for (int it = 0; it < n_items; ++it) {
        const PagedKV& kv = *seqs[items[it].seq].kv;
        kv_bytes += double(items[it].hi - items[it].lo + 1) * double(kv.row_bytes + (kv.v_offset == kv.k_offset ? 0 : kv.vrb()));
    }
    const bool paced = kv_bytes > double(kPacedBytes);
    int64_t total2 = 0;  // twice the keys of all items (item_heads)
    for (int it = 0; it < n_items; ++it) total2 += 2 * (items[it].hi - items[it].lo + 1);
    // Thread tid of nth runs its heads of item it (item_heads; none: returns). Its prefetch stream
    // continues into its next item.
    auto run_item = [&](int it, int tid, int nth) {
        const ChunkItem& ci = items[it];
        const bool by_heads = n_items < nth;
        int h0, h1;
        item_heads(ci, H, total2, by_heads, tid, nth, h0, h1);
        if (h0 == h1) return;
        auto mine = [&](int i) {
            int a, b;
            item_heads(items[i], H, total2, by_heads, tid, nth, a, b);
            return a < b;
        };
        const DecodeSeq& sq = seqs[ci.seq];
        const PagedKV& kv = *sq.kv;
        const int n_kv = kv.n_kv_heads, G = H / n_kv;
        const size_t tf = tile_floats(d);
        const size_t es = kv_head_bytes(kv.dtype, d), ves = kv_head_bytes(kv.vdt(), d);
        // Int8 K: int8 tiles (KeyTile::ints), as prefill.
        const bool ints = kv.dtype == DType::I8;
        const size_t qws = ints ? q_i8_words(d) : 0;
        float* mem = scratch_floats(tf + size_t(H) * d + size_t(H) * qws);
        KeyTile tile;
        tile_init(tile, mem, d);
        tile.lanes = true;  // dense attention's score order (KeyTile::lanes), as prefill
        // Direct tiles (no transpose of K) where the KV types allow; else transposed tiles with
        // the same score order.
        const bool direct = direct_tile(kv.dtype, kv.vdt(), d);
        float* qs = mem + tf;
        uint32_t* qwb = reinterpret_cast<uint32_t*>(qs + size_t(H) * d);
        float* pp = part + size_t(ci.part) * H * stride;
        RowRef* rw = scratch<RowRef>(5, size_t(G));
        const uint8_t* kr[T];
        const uint8_t* vr[T];
        // The keys this thread reads next: this chunk's, then the next chunk's when that is the
        // thread's next item of the same sequence (it starts at ci.hi + 1). prev_mine: this thread
        // ran heads of the item before, of the same sequence, just before this one (its cells are
        // one contiguous span, item_heads).
        const bool next_mine = it + 1 < n_items && items[it + 1].seq == ci.seq && mine(it + 1);
        const bool prev_mine = it > 0 && items[it - 1].seq == ci.seq && mine(it - 1);
        // The sequence's queries (pre-scaled; int8 K: quantised), every head's (the thread's heads
        // may differ from item to item), are prepared by the thread's first item of the sequence
        // and kept for the next ones (the same scratch request returns the same memory, and only
        // the tile, below qs, is written in between): quantising every head per chunk of 512 keys
        // had been ~7% of an int8 decode's kernel time.
        if (!prev_mine)
            for (int h = 0; h < H; ++h) {
                prescale(sq.q + size_t(h) * d, d, qscale, qs + size_t(h) * d);
                if (ints) q_i8(qs + size_t(h) * d, d, qwb + size_t(h) * qws);
            }
        for (int h = h0; h < h1; ++h) {
            float* st = pp + size_t(h) * stride;
            st[0] = kNegInf;
            st[1] = 0.0f;
            for (int c = 0; c < d; ++c) st[2 + c] = 0.0f;
        }
        const size_t tile_bytes = (kv.row_bytes + (kv.v_offset == kv.k_offset ? 0 : kv.vrb())) * T;
        const int64_t ahead = mx(1, int64_t(kDecodePrefetchBytes / tile_bytes));
        const int64_t stream_hi = next_mine ? items[it + 1].hi : ci.hi;
        // At the start of a thread's stream nothing was prefetched yet: request the first
        // `ahead` tiles at once.
        if (!prev_mine) prefetch_rows<3>(kv, ci.lo, mn(stream_hi, (ci.lo / T + ahead) * T - 1));
        // The thread's prefetch stream (raw scratch: reset when this item starts the stream).
        LineStream& stream = *scratch<LineStream>(2, 1);
        if (!prev_mine) stream.reset();
        stream.paced = paced;
        tile.pf = &stream;
        for (int64_t k = ci.lo / T; k <= ci.hi / T; ++k) {
            const int64_t base = k * T;
            const int ja = static_cast<int>(mx(ci.lo, base) - base);
            const int jb = static_cast<int>(mn(ci.hi, base + T - 1) - base);
            // The rows `ahead` tiles on (this thread's next chunk's, past the end of this one).
            const int64_t pf = base + ahead * T, pfe = mn(stream_hi, pf + T - 1);
            row_ptrs(kv, base, ja, jb, kr, vr);
            // Their lines are spread over this tile's steps; lines still queued from the last tile
            // go now, and its step count sets the rate for this one.
            stream.next_tile();
            if (pf <= pfe) add_rows(stream, kv, pf, pfe);
            // The KV heads of the thread's query heads [h0, h1), and of each its rows [i0, i1).
            for (int g = h0 / G; g <= (h1 - 1) / G; ++g) {
                const size_t off = size_t(g) * es, voff = size_t(g) * ves;
                const int i0 = int(mx(h0 - g * G, 0)), i1 = int(mn(h1 - g * G, G));
                if (ints)
                    tile_build_i8(
                        tile, d, kv.vdt(), ja, jb, [&](int j) { return kr[j] + off; },
                        [&](int j) { return vr[j] + voff; });
                else if (direct)
                    tile_build_direct(
                        tile, d, kv.dtype, kv.vdt(), ja, jb, [&](int j) { return kr[j] + off; },
                        [&](int j) { return vr[j] + voff; });
                else
                    tile_build(
                        tile, d, kv.dtype, kv.vdt(), ja, jb, [&](int j) { return kr[j] + off; },
                        [&](int j) { return vr[j] + voff; }, true);
                for (int i = i0; i < i1; ++i) {
                    const int h = g * G + i;
                    float* st = pp + size_t(h) * stride;
                    rw[i - i0] = RowRef{qs + size_t(h) * d, st, st + 1, st + 2, ja, jb};
                    if (ints) rw[i - i0].qw = qwb + size_t(h) * qws;
                }
                tile_rows(tile, d, rw, i1 - i0);
            }
        }
    };
    // Fold each (sequence, head)'s chunk partials in chunk order.
    const int n_rows = n_seqs * H;
    auto fold_row = [&](int rh) {
        const int s = rh / H, h = rh % H;
        const DecodeSeq& sq = seqs[s];
        float* o = scratch<float>(7, size_t(d));
        float m = kNegInf, l = 0.0f;
        for (int c = 0; c < d; ++c) o[c] = 0.0f;
        for (int32_t it = first[s]; it < first[s + 1]; ++it) {
            const float* st = part + (size_t(it) * H + h) * stride;
            fold(m, l, o, st[0], st[1], st + 2, d);
        }
        if (team)
            finalize(m, l, o, p.sinks ? p.sinks + h : nullptr, d, team_out + (size_t(s) * H + h) * d, nullptr);
        else
            finalize(m, l, o, p.sinks ? p.sinks + h : nullptr, d, sq.out + size_t(h) * d, sq.lse ? sq.lse + h : nullptr);
    };
    if (team) {
        // Thread i takes the (item, head) cells item_heads gives it; the barrier: every partial is written
        // before any thread folds.
        // A thread whose items throw (scratch memory refused) still meets the others, then
        // rethrows: every thread of the team passes every barrier of the step.
        const int nth = mx(1, team_threads());
        const int tid = team_threads() > 0 ? team_thread() : 0;
        std::exception_ptr error;
        try {
            for (int it = 0; it < n_items; ++it) run_item(it, tid, nth);
        } catch (...) {
            error = std::current_exception();
        }
        if (barrier) {
            barrier->wait(team_threads());
        } else {
#pragma omp barrier
        }
        if (error) std::rethrow_exception(error);
        for (int rh = 0; rh < n_rows; ++rh) fold_row(rh);
        return;
    }
    if (par) {
        RegionError err;  // (scratch memory refused inside the region: rethrown after it)
#pragma omp parallel num_threads(region_threads())
        {
            const int nth = team_threads() > 0 ? team_threads() : 1, tid = team_thread();
            err.guard([&] {
                for (int it = 0; it < n_items && !err; ++it) run_item(it, tid, nth);
            });
        }
        err.rethrow();
    } else {
        for (int it = 0; it < n_items; ++it) run_item(it, 0, 1);
    }
    RegionError err;
#pragma omp parallel for schedule(static) if (n_rows >= 256)
    for (int rh = 0; rh < n_rows; ++rh) {
        if (err) continue;
        err.guard([&] { fold_row(rh); });
    }
    err.rethrow();
}

inline void decode(const DecodeSeq* seqs, int32_t n_seqs, const AttnParams& p) {
    decode_impl(seqs, n_seqs, p, nullptr, nullptr, nullptr);
}
inline void decode_team(const DecodeSeq* seqs, int32_t n_seqs, const AttnParams& p, float* part, float* out,
                        TeamBarrier* barrier) {
    decode_impl(seqs, n_seqs, p, part, out, barrier);
}

#include "kernels/cpu/fp4_core.inl"

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
    const size_t row_bytes = kv_head_bytes(bank.dtype, d);
    double work = 0;
    for (int it = 0; it < n_items; ++it) work += double(items[it].hi - items[it].lo + 1) * H * d;
    auto run_item = [&](int it) {
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
        // The selection is scattered, so no hardware prefetcher helps: the next tile's rows are
        // prefetched, spread over this tile's compute (LineStream), the first tile's at once.
        LineStream& stream = *scratch<LineStream>(2, 1);
        stream.reset();
        tile.pf = &stream;
        for (int64_t j = ci.lo; j <= mn(ci.hi, ci.lo + T - 1); ++j) prefetch_range<3>(bank.k_row(sq.rows[j]), row_bytes);
        asm volatile("");
        for (int64_t base = ci.lo; base <= ci.hi; base += T) {
            const int jb = static_cast<int>(mn(ci.hi - base, T - 1));
            stream.next_tile();
            for (int64_t j = base + T; j <= mn(ci.hi, base + 2 * T - 1); ++j) stream.add(bank.k_row(sq.rows[j]), row_bytes);
            auto row = [&](int j) { return bank.k_row(sq.rows[base + j]); };
            tile_build_rows(tile, d, bank.dtype, 0, jb, row, true);
            for (int h = 0; h < H; ++h) {
                float* st = pp + size_t(h) * stride;
                rows[h] = RowRef{qs + size_t(h) * d, st, st + 1, st + 2, 0, jb};
            }
            tile_rows(tile, d, rows, H);
        }
    };
    RegionError err;  // (scratch memory refused inside the region: rethrown after it)
#pragma omp parallel for schedule(dynamic, 1) if (n_items > 1 && work > kParallelWork)
    for (int it = 0; it < n_items; ++it) {
        if (err) continue;
        err.guard([&] { run_item(it); });
    }
    err.rethrow();
    const int n_rows = n_queries * H;
#pragma omp parallel for schedule(static) if (n_rows >= 256)
    for (int rh = 0; rh < n_rows; ++rh) {
        if (err) continue;
        err.guard([&] {
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
        });
    }
    err.rethrow();
}
