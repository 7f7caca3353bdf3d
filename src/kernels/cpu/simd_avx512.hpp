// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// AVX-512 vector operations for the attention core (attention_core.inl).
// Include only from a translation unit compiled for AVX-512 (attention_avx512.cpp),
// inside its ISA namespace, after the standard headers.

struct Ops {
    static constexpr int W = 16;
    using V = __m512;
    static V zero() { return _mm512_setzero_ps(); }
    static V load(const float* p) { return _mm512_loadu_ps(p); }
    static V in_reg(V v) { return v; }  // (see simd_avx2.hpp; not measured on this ISA)
    static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
    static V set1(float x) { return _mm512_set1_ps(x); }
    static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
    static V fma_if(bool on, V a, V b, V c) { return _mm512_mask3_fmadd_ps(a, b, c, on ? 0xFFFF : 0); }
    static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
    static V add(V a, V b) { return _mm512_add_ps(a, b); }
    static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
    static V max(V a, V b) { return _mm512_max_ps(a, b); }
    static float fmas(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
    // Fixed tree: lanes (l, l+8), then (l, l+4), (l, l+2), (l, l+1).
    static float hsum(V v) {
        __m256 a = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
        __m128 b = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
        __m128 c = _mm_add_ps(b, _mm_movehl_ps(b, b));
        __m128 d = _mm_add_ss(c, _mm_shuffle_ps(c, c, 1));
        return _mm_cvtss_f32(d);
    }
    static float hmax(V v) { return _mm512_reduce_max_ps(v); }
    // Lane k = the sum of the 16 floats b[16k .. 16k + 15] by the balanced tree over adjacent
    // elements: (((0+1)+(2+3))+((4+5)+(6+7)))+(((8+9)+...)) (attention_core.inl, KeyTile::lanes).
    static V sum_lanes(const float* b) {
        V h[8];
        for (int i = 0; i < 8; ++i) h[i] = lane_pairs(load(b + 32 * i), load(b + 32 * i + 16));
        return sum_lane_pairs(h);
    }
    // sum_lanes in two parts. Level 1 of two keys' vectors a (key 2i) and c (key 2i + 1): per
    // 128-bit quarter q, (x 4q + 4q+1, x 4q+2 + 4q+3) of a, then of c. A caller holding the keys'
    // vectors in registers stores these (half the vectors, half the stores: 512-bit stores are
    // half rate on AMD Zen 4) and passes the 8 of 16 keys to sum_lane_pairs.
    static constexpr bool kLanePairs = true;
    static V lane_pairs(V a, V c) { return _mm512_add_ps(_mm512_shuffle_ps(a, c, 0x88), _mm512_shuffle_ps(a, c, 0xDD)); }
    static V sum_lane_pairs(const float* hb) {
        V h[8];
        for (int i = 0; i < 8; ++i) h[i] = load(hb + 16 * i);
        return sum_lane_pairs(h);
    }
    static V sum_lane_pairs(const V (&h)[8]) {
        // Level 2: g[i] quarter q, lane m = key 4i + m over elements 4q .. 4q + 3.
        V g[4];
        for (int i = 0; i < 4; ++i)
            g[i] = _mm512_add_ps(_mm512_shuffle_ps(h[2 * i], h[2 * i + 1], 0x88),
                                 _mm512_shuffle_ps(h[2 * i], h[2 * i + 1], 0xDD));
        // Level 3: quarters (0+1), (2+3): e0 = [keys 0-3 over 0..7, keys 0-3 over 8..15, keys 4-7 ..., ...].
        const V e0 = _mm512_add_ps(_mm512_shuffle_f32x4(g[0], g[1], 0x88), _mm512_shuffle_f32x4(g[0], g[1], 0xDD));
        const V e1 = _mm512_add_ps(_mm512_shuffle_f32x4(g[2], g[3], 0x88), _mm512_shuffle_f32x4(g[2], g[3], 0xDD));
        // Level 4: elements 0..7 + 8..15 of keys 0..15, in order.
        return _mm512_add_ps(_mm512_shuffle_f32x4(e0, e1, 0x88), _mm512_shuffle_f32x4(e0, e1, 0xDD));
    }
    // Softmax bookkeeping of 4 rows at once, in "quarter layout": lanes 4k .. 4k+3 hold row k.
    static constexpr int kGroup = 4;
    // Quarter k = op over the 16 lanes of x_k, combining lanes (l, l+8), (l, l+4), (l, l+2),
    // (l, l+1) in that order: for op = add, the pairs and order of hsum, so hsum4 gives hsum's
    // bits for each row (f32 addition is commutative).
    template <class Op>
    static V reduce4(V x0, V x1, V x2, V x3, Op op) {
        V a01 = op(_mm512_shuffle_f32x4(x0, x1, 0x44), _mm512_shuffle_f32x4(x0, x1, 0xEE));
        V a23 = op(_mm512_shuffle_f32x4(x2, x3, 0x44), _mm512_shuffle_f32x4(x2, x3, 0xEE));
        V b = op(_mm512_shuffle_f32x4(a01, a23, 0x88), _mm512_shuffle_f32x4(a01, a23, 0xDD));
        V c = op(b, _mm512_permute_ps(b, 0x4E));
        return op(c, _mm512_permute_ps(c, 0xB1));
    }
    // (Function objects, not lambdas: GCC 12 compiles a lambda without the file's target pragma.)
    struct MaxOp {
        V operator()(V a, V b) const { return _mm512_max_ps(a, b); }
    };
    struct AddOp {
        V operator()(V a, V b) const { return _mm512_add_ps(a, b); }
    };
    static V hmax4(V x0, V x1, V x2, V x3) { return reduce4(x0, x1, x2, x3, MaxOp{}); }
    static V hsum4(V x0, V x1, V x2, V x3) { return reduce4(x0, x1, x2, x3, AddOp{}); }
    // Quarter k = the k-th argument.
    static V quarters(float a, float b, float c, float d) {
        const __m512i idx = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
        return _mm512_permutexvar_ps(idx, _mm512_castps128_ps512(_mm_setr_ps(a, b, c, d)));
    }
    // Every lane = lane 4k of x.
    static V quarter(V x, int k) { return _mm512_permutexvar_ps(_mm512_set1_epi32(4 * k), x); }
    // Lanes where `key` is -inf are set to 0.
    static V zero_where_neginf(V key, V x) {
        return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(key, _mm512_set1_ps(-INFINITY), _CMP_NEQ_OQ), x);
    }
#if defined(KVRT_ISA_BF16_DOT)
    // bf16 dot products (AVX512_BF16), for bf16 KV tiles (attention_core.inl, "pair tiles").
    // A "pair" is two bf16 in one 32-bit lane: element 2i in the low half, 2i + 1 in the high.
    static constexpr bool kBf16Dot = true;
    using P = __m512i;  // 16 pairs
    // acc + a.lo * b.lo + a.hi * b.hi per lane (vdpbf16ps: exact products, f32 accumulation).
    static V dot2(V acc, P a, P b) { return _mm512_dpbf16_ps(acc, (__m512bh)a, (__m512bh)b); }
    // (Not _mm512_mask_dpbf16_ps: GCC 12 applies only the low 8 bits of its mask.)
    static V dot2_if(bool on, V acc, P a, P b) { return on ? dot2(acc, a, b) : acc; }
    static P load_pairs(const uint32_t* p) { return _mm512_loadu_si512(p); }
    // The first n (0..16) lanes from p, the others 0 / stores only the first n lanes.
    static V load_n(const float* p, int n) { return _mm512_maskz_loadu_ps(__mmask16((1u << n) - 1), p); }
    static void store_n(float* p, V v, int n) { _mm512_mask_storeu_ps(p, __mmask16((1u << n) - 1), v); }
    static P set1_pair(uint32_t x) { return _mm512_set1_epi32(static_cast<int>(x)); }
    // 32 f32 (lo = elements 0..15, hi = 16..31) rounded to bf16 (nearest even): 16 pairs.
    static void store_bf16_pairs(uint32_t* out, V lo, V hi) {
        _mm512_storeu_si512(out, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
    }
    // x rounded to bf16 (nearest even) and widened back to f32.
    static V round_bf16(V x) {
        const __m256i h = (__m256i)_mm512_cvtneps_pbh(x);
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    }
    // 16 rows of bf16 x 32 columns from column c, as pairs: out[i * ld + j] = the pair
    // (rows[j][c + 2i], rows[j][c + 2i + 1]) (transpose_pairs without the split).
    static void transpose_pairs_raw(const uint16_t* const* rows, int c, uint32_t* out, int ld) {
        __m512 r[16];
        for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(reinterpret_cast<const float*>(rows[i] + c));
        transpose16x16(r);
        for (int i = 0; i < 16; ++i) _mm512_storeu_ps(reinterpret_cast<float*>(out + size_t(i) * ld), r[i]);
    }
    // Elements [c, c + 32) of bf16 rows a and b interleaved: out[i] = the pair (a[c + i], b[c + i]).
    static void interleave_pairs(const uint16_t* a, const uint16_t* b, int c, uint32_t* out) {
        const __m512i idx_lo = _mm512_set_epi16(  // (highest element first)
            47, 15, 46, 14, 45, 13, 44, 12, 43, 11, 42, 10, 41, 9, 40, 8,
            39, 7, 38, 6, 37, 5, 36, 4, 35, 3, 34, 2, 33, 1, 32, 0);
        const __m512i idx_hi = _mm512_add_epi16(idx_lo, _mm512_set1_epi16(16));
        const __m512i va = _mm512_loadu_si512(a + c), vb = _mm512_loadu_si512(b + c);
        _mm512_storeu_si512(out, _mm512_permutex2var_epi16(va, idx_lo, vb));
        _mm512_storeu_si512(out + 16, _mm512_permutex2var_epi16(va, idx_hi, vb));
    }
#else
    static constexpr bool kBf16Dot = false;
#endif
    // 2^x for x <= 0 (tiny results clamp to ~2^-125: never a denormal, which would cost a
    // microcode assist per lane on every later instruction that touches it).
    static V exp2(V x) {
        x = _mm512_max_ps(x, _mm512_set1_ps(-125.0f));
        V xi = _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        V f = _mm512_sub_ps(x, xi);
        V p = _mm512_set1_ps(1.5403530393381609e-4f);
        p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.3333558146428443e-3f));
        p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.6181291076284772e-3f));
        p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.5504108664821580e-2f));
        p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.4022650695910071e-1f));
        p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.9314718055994531e-1f));
        p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
        return _mm512_scalef_ps(p, xi);
    }
    static float exp2s(float x) { return _mm512_cvtss_f32(exp2(_mm512_set1_ps(x))); }
    // Lanes whose index (lane0 + lane) lies outside [a, b] are replaced by `fill`.
    static V keep_range(V v, int lane0, int a, int b, float fill) {
        __m512i idx = _mm512_add_epi32(_mm512_set1_epi32(lane0),
                                       _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
        __mmask16 in = _mm512_cmpge_epi32_mask(idx, _mm512_set1_epi32(a)) &
                       _mm512_cmple_epi32_mask(idx, _mm512_set1_epi32(b));
        return _mm512_mask_blend_ps(in, _mm512_set1_ps(fill), v);
    }
    // n elements of dtype t at src -> f32 dst.
    static void cvt_row(const uint8_t* src, DType t, int n, float* dst) {
        int i = 0;
        if (t == DType::F32) {
            const float* s = reinterpret_cast<const float*>(src);
            for (; i + 16 <= n; i += 16) _mm512_storeu_ps(dst + i, _mm512_loadu_ps(s + i));
            for (; i < n; ++i) dst[i] = s[i];
        } else if (t == DType::BF16) {
            const uint16_t* s = reinterpret_cast<const uint16_t*>(src);
            for (; i + 16 <= n; i += 16) {
                __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i)));
                _mm512_storeu_ps(dst + i, _mm512_castsi512_ps(_mm512_slli_epi32(w, 16)));
            }
            for (; i < n; ++i) dst[i] = bf16_to_f32(s[i]);
        } else {
            const uint16_t* s = reinterpret_cast<const uint16_t*>(src);
            for (; i + 16 <= n; i += 16)
                _mm512_storeu_ps(dst + i,
                                 _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i))));
            for (; i < n; ++i) dst[i] = f16_to_f32(s[i]);
        }
    }
    static V load_bf16(const uint16_t* p) {  // 16 bf16 -> f32 (exact: a shift)
        __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
        return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
    }
    static V load_f16(const uint16_t* p) {  // 16 f16 -> f32 (exact)
        return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    }
    static float h2f(uint16_t h) { return _cvtsh_ss(h); }  // one f16 -> f32 (F16C, exact)
    // 16 words of two f16 each: lo = their low halves, hi = their high halves, in f32 (exact).
    static void f16_pairs(const uint32_t* p, V& lo, V& hi) { f16_pairs(_mm512_loadu_si512(p), lo, hi); }
    static void f16_pairs(__m512i x, V& lo, V& hi) {
        lo = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(x));
        hi = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(x, 16)));
    }
    // The 32-bit word at byte `off` of each of rows[0 .. 16) (lanes not in m: 0, nothing read), by
    // two gathers over the row pointers (attention_core.inl, tile_scales_gathered).
    static constexpr bool kRowWords = true;
    static __m512i row_words(const uint8_t* const* rows, size_t off, uint32_t m) {
        const __m512i o = _mm512_set1_epi64(static_cast<long long>(off));
        const __m512i p0 = _mm512_add_epi64(_mm512_loadu_si512(rows), o);
        const __m512i p1 = _mm512_add_epi64(_mm512_loadu_si512(rows + 8), o);
        const __m256i z = _mm256_setzero_si256();
        const __m256i w0 = _mm512_mask_i64gather_epi32(z, __mmask8(m), p0, nullptr, 1);
        const __m256i w1 = _mm512_mask_i64gather_epi32(z, __mmask8(m >> 8), p1, nullptr, 1);
        return _mm512_inserti64x4(_mm512_castsi256_si512(w0), w1, 1);
    }
    // 16 int8 -> f32 (exact). 16 fp8 e4m3 -> f32 value / 256 (exact; util/kv_quant.hpp).
    static V load_i8(const uint8_t* p) {
        return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
    }
    // (Sign-extended and shifted up 7: sign, exponent and mantissa where f16 has them; bit 14, a
    // copy of the sign, cleared.)
    static V load_fp8(const uint8_t* p) {
        const __m256i x = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
        return _mm512_cvtph_ps(_mm256_and_si256(_mm256_slli_epi16(x, 7), _mm256_set1_epi16(int16_t(0xBFFF))));
    }
    // 4 x 4 transposes of 32-bit lanes within each 128-bit block of each group of 4 vectors:
    // block b of r[g + e] lane k <- block b of r[g + k] lane e.
    template <int N>
    static void transpose4x4_blocks(__m512 (&r)[N]) {
        __m512 t[N];
        for (int i = 0; i < N; i += 2) {
            t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
            t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
        }
        for (int i = 0; i < N; i += 4) {
            r[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
            r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xEE);
            r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
            r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
        }
    }
    // In-register 16 x 16 transpose of 32-bit lanes: r[i] lane j <- r[j] lane i.
    static void transpose16x16(__m512 (&r)[16]) {
        __m512 t[16];
        transpose4x4_blocks(r);
        for (int i = 0; i < 16; i += 8) {
            for (int k = 0; k < 4; ++k) {
                t[i + k] = _mm512_shuffle_f32x4(r[i + k], r[i + 4 + k], 0x88);
                t[i + 4 + k] = _mm512_shuffle_f32x4(r[i + k], r[i + 4 + k], 0xDD);
            }
        }
        for (int k = 0; k < 8; ++k) {
            r[k] = _mm512_shuffle_f32x4(t[k], t[8 + k], 0x88);
            r[8 + k] = _mm512_shuffle_f32x4(t[k], t[8 + k], 0xDD);
        }
    }
    // 16 rows (pointers) x 8 32-bit columns starting at column c -> r[i] lane j = rows[j][c + i].
    // Loaded as pairs of rows in 256-bit halves, (row k | row k + 4) and (row k + 8 | row k + 12)
    // for k < 4, the in-block 4 x 4 transposes leave r[i] = (column i of rows 0-3 | column i + 4 of
    // rows 0-3 | column i of rows 4-7 | column i + 4 of rows 4-7) for i < 4 (rows 8-15 in r[i + 4]),
    // and one block shuffle per vector finishes: 32 shuffles, where transpose16x16 of half-empty
    // vectors takes 64. Reads exactly 32 bytes per row.
    static void transpose16x8(const float* const* rows, int c, __m512 (&r)[8]) {
        for (int k = 0; k < 8; ++k) {
            const int a = k < 4 ? k : k + 4;
            r[k] = _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps(rows[a] + c)), _mm256_loadu_ps(rows[a + 4] + c), 1);
        }
        transpose4x4_blocks(r);
        __m512 t[8];
        for (int i = 0; i < 4; ++i) {
            t[i] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0x88);
            t[i + 4] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0xDD);
        }
        for (int i = 0; i < 8; ++i) r[i] = t[i];
    }
    // 16 rows (pointers) x 16 columns starting at column c -> out[i * ld + j] = rows[j][c + i].
    static void transpose(const float* const* rows, int c, float* out, int ld) {
        __m512 r[16];
        for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(rows[i] + c);
        transpose16x16(r);
        for (int i = 0; i < 16; ++i) _mm512_storeu_ps(out + size_t(i) * ld, r[i]);
    }
    // Integer Q.K over int8 keys (attention_core.inl, "int8 tiles"). A key tile holds 32-bit
    // words of 4 consecutive dims, transposed: word i of keys j0 .. j0 + 15 in one vector. The
    // query's word i comes three ways (q_i8_words): its 4 codes, and its codes (0, 2) / (1, 3) as
    // int16 pairs. The sums are exact int32, so every ISA path gives the same integers.
    using VI = __m512i;
#if defined(KVRT_ISA_I8_DOT)
    // vpdpbusd (AVX512_VNNI) multiplies unsigned by signed bytes: the tile stores k + 128 (k xor
    // 0x80) and each accumulator starts at -128 x the sum of the query's codes it meets.
    static constexpr bool kI8Unsigned = true;
    struct KI {
        __m512i k;
    };
    static KI i8_prep(const uint32_t* p) { return KI{_mm512_loadu_si512(p)}; }
    // (In asm, as pv_i8_dot below: GCC 12 copies the accumulators of the intrinsic.)
    static VI i8_dot(VI acc, const KI& k, const uint32_t* w, int) {
        const __m512i b = _mm512_set1_epi32(static_cast<int>(w[0]));
        asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(k.k), "v"(b));
        return acc;
    }
    static VI i8_init(int32_t code_sum) { return _mm512_set1_epi32(-128 * code_sum); }
#else
    // Without VNNI: the key's bytes (0, 2) and (1, 3) of each word sign-extended to int16 pairs,
    // two vpmaddwd with the query's pairs (products and pair sums exact in int32).
    static constexpr bool kI8Unsigned = false;
    struct KI {
        __m512i lo, hi;
    };
    static KI i8_prep(const uint32_t* p) {
        const __m512i k = _mm512_loadu_si512(p);
        return KI{_mm512_srai_epi16(_mm512_slli_epi16(k, 8), 8), _mm512_srai_epi16(k, 8)};
    }
    static VI i8_dot(VI acc, const KI& k, const uint32_t* w, int nw) {
        acc = _mm512_add_epi32(acc, _mm512_madd_epi16(k.lo, _mm512_set1_epi32(static_cast<int>(w[nw]))));
        return _mm512_add_epi32(acc, _mm512_madd_epi16(k.hi, _mm512_set1_epi32(static_cast<int>(w[2 * nw]))));
    }
    static VI i8_init(int32_t) { return _mm512_setzero_si512(); }
#endif
    static V i8_cvt(VI x) { return _mm512_cvtepi32_ps(x); }
    // Integer P.V over int8 V (attention_core.inl, pv_rows_i8): the int16 weight codes of a pair
    // of keys (j, j + 1) times their values, 32 dims (kPvI8Dims) per step. pv_i8_pairs sign-extends
    // dims [0, 32) of value rows a (key j) and b (key j + 1) and interleaves them as int16 pairs
    // (a[c], b[c]): lo holds dims 8L .. 8L + 3 of each 128-bit lane L, hi dims 8L + 4 .. 8L + 7;
    // pv_i8_cvt puts the two accumulators' int32 sums back in dim order as f32 (dims 0..15, 16..31).
    static constexpr int kPvI8Dims = 32;
    static VI vi_zero() { return _mm512_setzero_si512(); }
    static VI vi_add(VI a, VI b) { return _mm512_add_epi32(a, b); }
    static void pv_i8_pairs(const uint8_t* a, const uint8_t* b, VI& lo, VI& hi) {
        const __m512i x = _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a)));
        const __m512i y = _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b)));
        lo = _mm512_unpacklo_epi16(x, y);
        hi = _mm512_unpackhi_epi16(x, y);
    }
#if defined(KVRT_ISA_I8_DOT)
    // (In asm: GCC 12 gives _mm512_dpwssd_epi32's result a new register and copies the
    // accumulators around the key loop, a vmovdqa per instruction.)
    static VI pv_i8_dot(VI acc, VI pairs, uint32_t w) {
        const __m512i b = _mm512_set1_epi32(static_cast<int>(w));
        asm("vpdpwssd %2, %1, %0" : "+v"(acc) : "v"(pairs), "v"(b));
        return acc;
    }
#else
    static VI pv_i8_dot(VI acc, VI pairs, uint32_t w) {
        return _mm512_add_epi32(acc, _mm512_madd_epi16(pairs, _mm512_set1_epi32(static_cast<int>(w))));
    }
#endif
    static void pv_i8_cvt(VI lo, VI hi, V& f0, V& f1) {
        const __m512i a = _mm512_shuffle_i32x4(lo, hi, _MM_SHUFFLE(1, 0, 1, 0));  // lo.L0 lo.L1 hi.L0 hi.L1
        const __m512i b = _mm512_shuffle_i32x4(lo, hi, _MM_SHUFFLE(3, 2, 3, 2));  // lo.L2 lo.L3 hi.L2 hi.L3
        f0 = _mm512_cvtepi32_ps(_mm512_shuffle_i32x4(a, a, _MM_SHUFFLE(3, 1, 2, 0)));
        f1 = _mm512_cvtepi32_ps(_mm512_shuffle_i32x4(b, b, _MM_SHUFFLE(3, 1, 2, 0)));
    }
    // W weight codes: x * f rounded to the nearest integer (ties to even; |x * f| <= 255 in
    // pv_rows_i8), saturated to int16, stored at out. True when one of them was inf or NaN (or beyond
    // int32: cvtps2dq's "integer indefinite" 0x80000000).
    static bool pv_i8_codes(V x, float f, int16_t* out) {
        const __m512i c = _mm512_cvtps_epi32(_mm512_mul_ps(x, _mm512_set1_ps(f)));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm512_cvtsepi32_epi16(c));
        return _mm512_cmpeq_epi32_mask(c, _mm512_set1_epi32(INT32_MIN)) != 0;
    }
#if defined(KVRT_ISA_I8_DOT)
    // P.V with 8-bit weight codes (attention_core.inl, pv_rows_u8): a group's 4 quads (ymm) as 2
    // zmm, (q0 | q1) and (q2 | q3), each multiplied by the broadcast codes of 4 keys.
    static constexpr bool kPvU8 = true;
#include "kernels/cpu/pv_u8_quads.inl"
    using VU = __m512i;
    static constexpr int kPvU8Vecs = 2;
    static VU vu_zero() { return _mm512_setzero_si512(); }
    static VU vu_load(const __m256i* p) { return _mm512_loadu_si512(p); }
    static void pv_u8_store(const __m256i* q, __m256i* out) {
        _mm512_storeu_si512(out, _mm512_inserti64x4(_mm512_castsi256_si512(q[0]), q[1], 1));
        _mm512_storeu_si512(out + 2, _mm512_inserti64x4(_mm512_castsi256_si512(q[2]), q[3], 1));
    }
    // W weight codes x * f rounded to the nearest integer (ties to even) as bytes at out (x * f is
    // at most 255 in magnitude). True when one of them is negative, or inf or NaN (cvtps2dq's
    // 0x80000000): then the tile takes the int16 codes (pv_i8_codes) instead.
    static bool pv_u8_codes(V x, float f, uint8_t* out) {
        const __m512i c = _mm512_cvtps_epi32(_mm512_mul_ps(x, _mm512_set1_ps(f)));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm512_cvtepi32_epi8(c));
        return _mm512_movepi32_mask(c) != 0;
    }
    static VU pv_u8_dot(VU acc, VU quads, uint32_t w) {
        const __m512i b = _mm512_set1_epi32(static_cast<int>(w));
        asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(b), "v"(quads));  // (asm: see pv_i8_dot)
        return acc;
    }
    // A group's 2 accumulators (128-bit lanes: dims 0-3, 16-19, 4-7, 20-23 | 8-11, 24-27, 12-15,
    // 28-31) -> f[0] (dims 0..15), f[1] (16..31) as f32.
    static void pv_u8_cvt(const VU* acc, V* f) {
        f[0] = _mm512_cvtepi32_ps(_mm512_shuffle_i32x4(acc[0], acc[1], _MM_SHUFFLE(2, 0, 2, 0)));
        f[1] = _mm512_cvtepi32_ps(_mm512_shuffle_i32x4(acc[0], acc[1], _MM_SHUFFLE(3, 1, 3, 1)));
    }
#else
    static constexpr bool kPvU8 = false;
#endif
    static V abs(V x) { return _mm512_abs_ps(x); }
    // p * s where p != 0, else 0 (a key outside the row's range: p = 0, whatever s holds).
    static V mul_nz(V p, V s) { return _mm512_maskz_mul_ps(_mm512_cmp_ps_mask(p, _mm512_setzero_ps(), _CMP_NEQ_UQ), p, s); }
    // Words [c, c + 16) of 16 int8 heads (rows[j]: the head's bytes) -> out[i * ld + j] = word c + i
    // of row j (xor 0x80 per byte where kI8Unsigned).
    static void i8_transpose(const uint8_t* const* rows, int c, uint32_t* out, int ld) {
        __m512 r[16];
        for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(reinterpret_cast<const float*>(rows[i] + 4 * c));
        transpose16x16(r);
        for (int i = 0; i < 16; ++i) {
            __m512i x = _mm512_castps_si512(r[i]);
            if constexpr (kI8Unsigned) x = _mm512_xor_si512(x, _mm512_set1_epi32(int(0x80808080u)));
            _mm512_storeu_si512(out + size_t(i) * ld, x);
        }
    }
    // 16 rows of 16-bit elements (t: BF16 or F16) x 32 columns from column c, converted:
    // out[i * ld + j] = f32(rows[j][c + i]). Transposes 32-bit pairs (dims c + 2i, c + 2i + 1),
    // then splits each pair: half the shuffles of transposing converted f32 rows.
    static void transpose_pairs(const uint16_t* const* rows, int c, DType t, float* out, int ld) {
        __m512 r[16];
        for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(reinterpret_cast<const float*>(rows[i] + c));
        transpose16x16(r);
        for (int i = 0; i < 16; ++i) {
            const __m512i w = _mm512_castps_si512(r[i]);
            V lo, hi;
            if (t == DType::BF16) {
                lo = _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
                hi = _mm512_castsi512_ps(_mm512_and_si512(w, _mm512_set1_epi32(int(0xFFFF0000u))));
            } else {
                lo = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(w));
                hi = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(w, 16)));
            }
            _mm512_storeu_ps(out + size_t(2 * i) * ld, lo);
            _mm512_storeu_ps(out + size_t(2 * i + 1) * ld, hi);
        }
    }
};
