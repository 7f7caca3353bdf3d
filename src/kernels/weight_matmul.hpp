// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Weight matmul: Y[M][N] = X[M][K] . W^T for a weight matrix W of N rows of K
// elements as stored in a GGUF file (row-major, quantised in 32-element blocks
// along K). The entry point of the runtime for every linear layer and the
// output head.
//
//   PackedWeight w(TensorType::Q4_1, gguf_data, n_rows, k);  // once, at load time
//   matmul(w, X, M, ldx, Y, ldy);                            // every step
//
// Supported weight types: Q4_0, Q4_1, Q5_0, Q8_0, Q4_K, Q5_K, Q6_K (integer dot
// products against the activations quantised per 32-element block to 8 bits with
// a float scale and the block's integer sum, as llama.cpp's Q8_1 but with f32
// scales; the K-quants' 32-element sub-blocks line up with the activation blocks),
// and F32, F16, BF16 (f32 fused multiply-adds over K on the f32 activations).
//
// Per 32-element block b (activation scale da, integer sum sa, s = da*(float)sa;
// isum = exact integer dot of the weight codes q and the activation codes), the
// float operations of one output element, in increasing b, from acc = 0:
//   Q4_0 / Q5_0 / Q8_0: acc = fma(d*da, (float)(isum - o*sa), acc), o = 8 / 16 / 0
//   Q4_1: acc = fma(d*da, (float)isum, acc); acc = fma(m, s, acc)
//   Q4_K / Q5_K (sub-block b of its super-block, 6-bit sc_b, m_b):
//         acc = fma((d*sc_b)*da, (float)isum, acc); acc = fma(-(dmin*m_b), s, acc)
//         (d*sc_b and dmin*m_b are exact in f32)
//   Q6_K (int8 scales sc_lo, sc_hi of the block's two 16-element groups):
//         I = sc_lo*(isum_lo - 32*sa_lo) + sc_hi*(isum_hi - 32*(sa - sa_lo)) in int32,
//         acc = fma(d*da, (float)I, acc)
// K-quant rows must be whole 256-element super-blocks (as GGUF requires).
//
// Determinism (a contract the runtime relies on for bit-identical logits with
// and without the KV cache): output element Y[m][n] is a function of X row m
// and W row n alone. Its reduction order depends only on K: the block partials
// (or, for float weights, the products) are added in increasing k order with
// the same float operations whatever M is, which other rows share the call,
// how many threads run it, and which ISA path (AMX, AVX-512 VNNI, AVX-VNNI, AVX2,
// scalar) is used: every path produces the same bits (the tests check all of
// this). The one theoretical exception: on the plain AVX2 path a Q8_0 weight of
// -128 against an activation code of -128 (neither ggml's quantiser nor ours
// produces either; an activation is -128 only for a NaN input).
//
// Accuracy: the activation quantisation is the only approximation; on the real
// models' tensors the relative L2 error against f32 math over the dequantised
// weights is ~0.5-0.7% (SmolLM2 Q4_1 / Q8_0; Gemma 3 and Qwen2.5 Q5_0 / Q4_K /
// Q6_K: tests/unit/test_weight_matmul.cpp prints it).
//
// Thread safety: a PackedWeight is immutable after construction; any number of
// threads may call matmul on it concurrently. matmul uses OpenMP threads
// (n_threads = 0: omp_get_max_threads()); K is never split across threads.
#pragma once

#include "formats/tensor_type.hpp"
#include "util/team_barrier.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

namespace kvrt {

// Instruction-set paths of the CPU kernels, in increasing order. Auto = the
// best the CPU has. AvxVnni = AVX2 + AVX-VNNI (vpdpbusd on ymm: Intel client
// CPUs since Alder Lake, which lack AVX-512). Avx512 = AVX-512 F/BW/VL/DQ + VNNI.
// Amx = Avx512 + AMX-INT8 (Sapphire Rapids and later): 8-bit activation codes against Q5_0,
// Q8_0, Q4_K and Q5_K weights in tiles of 16 rows x 16 columns (tdpbsud, the exact integer
// block dots), with the AVX-512 float operations of the contract above; the other types, rows
// past the last whole tile of 16, 16-bit codes and float weights take the Avx512 kernels
// (cpu/weight_matmul_amx.cpp says why). Same bits as every path.
enum class KernelIsa : uint8_t { Auto = 0, Scalar = 1, Avx2 = 2, AvxVnni = 3, Avx512 = 4, Amx = 5 };

// The path Auto takes (never Auto): the best this CPU supports at the process-wide
// level of util/isa.hpp (KVRT_ISA, isa_set_limit), so it follows that one choice.
KernelIsa kernel_isa_detected() noexcept;
// True when the CPU can run `isa` (Auto and Scalar always).
bool kernel_isa_supported(KernelIsa isa) noexcept;
const char* kernel_isa_name(KernelIsa isa) noexcept;

// Width of the activation codes the quantised weight types are multiplied with
// (the context option kvrt_context_config.act_bits). Q8: 8-bit codes per 32-element
// block, d = amax/127 (the contract above). Q16: 16-bit codes per 32-element block,
// d = amax/32767, |q| <= 32767 (a NaN becomes -32767), the same integer dot products
// ~256x finer: the activation error falls from ~0.5% to ~0.002% of a dot product.
// Float operations per output element in Q16 are those of Q8 except Q6_K, whose two
// 16-element group products are added as two fmas (they need not fit int32 together):
//   acc = fma(d*da, (float)(sc_lo*(isum_lo - 32*sa_lo)), acc);
//   acc = fma(d*da, (float)(sc_hi*(isum_hi - 32*(sa - sa_lo))), acc)
// Every ISA path gives the same bits in Q16 too (AVX-512 and AVX-VNNI: vpdpwssd; AVX2:
// vpmaddwd). Float weight types ignore it (no activation quantisation).
//
// Q8R: 8-bit codes plus a residual on the row's outlier blocks. A block whose scale d is more
// than kOutlierBlockRatio times the mean scale of its row (an outlier channel makes every other
// element of its block coarse) and whose d^2 is at least kOutlierBlockShare of the row's sum of
// d^2 (its share of the row's rounding error: at most 1 / kOutlierBlockShare blocks per row; the
// sum an fma chain in block order, the comparison d * d >= kOutlierBlockShare * sum) also gets
// the 8-bit codes of its rounding error
// r_j = fma(-d, q_j, x_j) (scale rd = max|r| / 127), and the matmul adds, after the 8-bit pass,
// a second pass over those blocks only (their codes as ~15-bit ones): per output element and
// marked block, in increasing block order, y += (the block's Q8 formula on the residual codes,
// from 0, without Q4_1's / the K-quants' min term, which the row's s covers: s = fma(rd,
// (float)rsum, d * (float)sum)). Which blocks are marked is a function of the row alone, so every
// guarantee of Q8 holds; every path gives the same bits. The blocks marked are ~0.4-3% of a real
// model's (src/kernels/README.md, "Outlier blocks"). The AVX-512, AVX2 and AVX-VNNI kernels make
// those additions themselves after each panel pair's (panel's) row tiles, while its weights are
// hot, and AMX after its tiles through the AVX-512 one (cpu/weight_matmul_fused_residual.hpp);
// the scalar path runs the separate pass (cpu/weight_matmul_residual.cpp).
// kvrt_context_config.act_bits 9, the default's computation since 0.3.3.
enum class ActBits : uint8_t { Q8 = 8, Q8R = 9, Q16 = 16 };
inline constexpr float kOutlierBlockRatio = 3.0f;
// The share rule (since 0.3.3) marks 14-77% fewer blocks than the ratio alone on the three real
// models at about the same precision (scripts/reference/README.md, "The default since 0.3.3").
inline constexpr float kOutlierBlockShare = 0.2f;

// Rows of one source tensor (GGUF layout) for a stacked PackedWeight.
struct WeightRows {
    const void* data = nullptr;
    int64_t rows = 0;
};

// A weight matrix repacked once (at model load) into the layout the kernels
// stream: panels of 16 consecutive rows of W, interleaved so that one 64-byte
// load feeds 16 output columns. Owns its memory (64-byte aligned); the source
// data may be unmapped after construction. The packing is lossless:
// unpack_row() returns the original GGUF bytes.
class PackedWeight {
public:
    static constexpr int kPanelRows = 16;

    // `data` holds n_rows rows of k elements of `type` in GGUF layout.
    // Throws kvrt::Error: KVRT_ERR_UNSUPPORTED for a type other than F32, F16,
    // BF16, Q4_0, Q4_1, Q5_0, Q8_0, Q4_K, Q5_K, Q6_K; KVRT_ERR_INVALID_ARGUMENT for
    // a null pointer, n_rows or k < 1, or k not a multiple of the type's block
    // (32; 256 for the K-quants); KVRT_ERR_OVERFLOW when the size overflows.
    // Cost: one pass over the data (O(n_rows * k)).
    PackedWeight(TensorType type, const void* data, int64_t n_rows, int64_t k);

    // Several tensors of the same type and row length stacked along N, in
    // order (e.g. Q, K and V projections, or FFN gate and up): one matmul then
    // writes their outputs side by side in each Y row, with the same bits as
    // separate calls (each output element only depends on its own W row).
    // Same errors as above (every part needs data and rows >= 1).
    PackedWeight(TensorType type, std::span<const WeightRows> parts, int64_t k);

    // Two-step construction, for a loader that packs one large tensor on several threads: the
    // first allocates a weight of n_rows x k whose rows are not packed yet (the padding rows of the
    // last panel pair are zeroed; the rest is left as allocated unless `fill` is 0..255, which
    // tests use to see that packing writes every byte), and pack_rows then packs rows
    // [first, first + n) from `rows` (n rows in GGUF layout). Calls on disjoint ranges whose first
    // row is a multiple of kPackRowAlign (a panel pair: no byte, nor cache line, is shared) may
    // run concurrently; every row must be packed before the weight is used. Same errors as above,
    // and KVRT_ERR_OUT_OF_RANGE for a range outside [0, rows()) or a misaligned first row.
    static constexpr int64_t kPackRowAlign = 2 * kPanelRows;
    struct Unpacked {
        int fill = -1;
    };
    PackedWeight(TensorType type, int64_t n_rows, int64_t k, Unpacked how);
    void pack_rows(int64_t first, int64_t n, const void* rows);

    // True when `type` packs natively (the types listed above): a loader expands
    // the others to f32 first.
    static bool supports(TensorType type) noexcept;

    PackedWeight(PackedWeight&&) noexcept = default;
    PackedWeight& operator=(PackedWeight&&) noexcept = default;
    PackedWeight(const PackedWeight&) = delete;
    PackedWeight& operator=(const PackedWeight&) = delete;

    TensorType type() const noexcept { return type_; }
    int64_t rows() const noexcept { return n_; }  // N
    int64_t cols() const noexcept { return k_; }  // K
    // Bytes of W one matmul reads (the packed buffer, padding included).
    size_t bytes() const noexcept { return bytes_; }
    // Bytes of one row in GGUF layout.
    size_t row_bytes() const noexcept { return row_bytes_; }

    // Writes row n (0 <= n < rows()) in its original GGUF layout (row_bytes() bytes).
    void unpack_row(int64_t n, void* out) const;
    // Writes row n dequantised to k floats (e.g. an embedding lookup on a tied head).
    void dequantize_row(int64_t n, float* out) const;

    // For the kernels (layout in kernels/cpu/weight_matmul_layout.hpp): the
    // number of panels (even: padded with a zero panel), the first step of
    // panel p, and the distance between its consecutive steps (blocks, K-quant super-blocks or k).
    int64_t panels() const noexcept { return panels_; }
    const uint8_t* panel(int64_t p) const noexcept {
        return data_.get() + static_cast<size_t>(p / 2) * group_bytes_ + static_cast<size_t>(p % 2) * (stride_ / 2);
    }
    size_t panel_stride() const noexcept { return stride_; }

private:
    struct Free {
        void operator()(uint8_t* p) const noexcept;
    };
    TensorType type_;
    int64_t n_ = 0;
    int64_t k_ = 0;
    int64_t panels_ = 0;
    size_t group_bytes_ = 0;  // two interleaved panels
    size_t stride_ = 0;
    size_t bytes_ = 0;
    size_t row_bytes_ = 0;
    std::unique_ptr<uint8_t[], Free> data_;
};

// Y[m][n] = sum_k X[m][k] * W[n][k] for 0 <= m < M, 0 <= n < w.rows().
// X rows are ldx floats apart (ldx >= K), Y rows ldy floats apart (ldy >= N).
// M = 0 is a no-op. n_threads = 0 uses omp_get_max_threads(); isa = Auto uses
// the best path (forcing one the CPU lacks throws KVRT_ERR_UNSUPPORTED);
// the level of util/isa.hpp ($KVRT_ISA = scalar | avx2 | avxvnni | avx512 | amx, or
// isa_set_limit) caps what Auto picks.
// Throws kvrt::Error(KVRT_ERR_INVALID_ARGUMENT) on a null pointer, M < 0 or a
// stride too small. X and Y must not overlap.
// Cost: 2*M*N*K operations; W is read once per call (from L1 for every row
// block of a panel), X quantised once per call for the quantised types.
// act: the activation code width (ActBits above).
void matmul(const PackedWeight& w, const float* X, int64_t M, int64_t ldx, float* Y, int64_t ldy,
            int n_threads = 0, KernelIsa isa = KernelIsa::Auto, ActBits act = ActBits::Q8);

// Column pairs of w: the unit of matmul_part (32 output columns each; the last
// may be partial). = ceil(rows() / 32).
inline int64_t matmul_pairs(const PackedWeight& w) noexcept { return w.panels() / 2; }

// One share of a matmul, for a caller that runs its own OpenMP team (e.g. a whole
// decode layer in one parallel region): output columns [32*pair0, min(32*pair1, N))
// of all M rows, computed on the calling thread alone; no OpenMP region is opened.
// Calls over disjoint pair ranges that cover [0, matmul_pairs(w)) produce exactly the
// bits of one matmul() (same kernels, same per-element operations). X is quantised
// by every call (into the calling thread's buffer; MatmulPartInput below quantises once for
// many calls): meant for small M (decode).
// Throws as matmul(), and KVRT_ERR_INVALID_ARGUMENT for a bad pair range.
void matmul_part(const PackedWeight& w, const float* X, int64_t M, int64_t ldx, float* Y, int64_t ldy,
                 int64_t pair0, int64_t pair1, KernelIsa isa = KernelIsa::Auto, ActBits act = ActBits::Q8);

// The input of a thread's matmul_part calls over one X (M rows, ldx floats apart) with `act` codes,
// quantised once: a caller that cuts one or more matmuls over the same X into many column tasks
// (a decode layer's gate and up) passes its thread's MatmulPartInput to each of that thread's calls.
// The first call with quantised weights quantises X into the calling thread's part buffer and
// later calls with the same K reuse it, until another MatmulPartInput of the thread quantises
// (then this one quantises again when next used: correct whatever the order, fastest with one live
// per thread). X must not change while the object is in use; it belongs to one thread. The same
// bits as matmul_part(w, X, M, ldx, ...).
class MatmulPartInput {
public:
    MatmulPartInput(const float* X, int64_t M, int64_t ldx, ActBits act = ActBits::Q8) noexcept
        : X_(X), M_(M), ldx_(ldx), act_(act) {}

private:
    friend void matmul_part(const PackedWeight&, const MatmulPartInput&, float*, int64_t, int64_t, int64_t, KernelIsa);
    const float* X_;
    int64_t M_, ldx_;
    ActBits act_;
    mutable int64_t blocks_ = -1;  // K / 32 of the codes in the thread's part buffer (-1: none)
    mutable uint64_t ticket_ = 0;  // the part buffer's quantisation count when they were written
};
void matmul_part(const PackedWeight& w, const MatmulPartInput& in, float* Y, int64_t ldy, int64_t pair0, int64_t pair1,
                 KernelIsa isa = KernelIsa::Auto);

// Team mode, for a caller that runs a whole forward (many rows: prefill) in one OpenMP
// parallel region: EVERY thread of the region calls matmul_team with the same arguments.
// Thread i of n quantises rows [M*i/n, M*(i+1)/n) of X into `buf` (shared by the team, sized by
// reserve() before the region; float weights read X itself), the team meets at `barrier`, the
// threads take the tasks of
// matmul() (the same split, the same kernels: the bits of one matmul()) from `next` (zero
// before the call, one counter per call), and meet again: Y is complete when any thread
// returns. So a thread that wrote rows [M*i/n, M*(i+1)/n) of X needs no barrier before the
// call. Throws as matmul(), on every thread alike (the checks come first).
class MatmulTeamBuffer {
public:
    MatmulTeamBuffer();
    ~MatmulTeamBuffer();
    MatmulTeamBuffer(const MatmulTeamBuffer&) = delete;
    MatmulTeamBuffer& operator=(const MatmulTeamBuffer&) = delete;
    MatmulTeamBuffer(MatmulTeamBuffer&&) noexcept;
    MatmulTeamBuffer& operator=(MatmulTeamBuffer&&) noexcept;
    // Room for the quantised activations of M rows of K elements, 16-bit codes (call before
    // the region: matmul_team never grows it).
    void reserve(int64_t M, int64_t K);
    size_t bytes() const noexcept;

private:
    friend void matmul_team(const PackedWeight&, const float*, int64_t, int64_t, float*, int64_t, ActBits,
                            MatmulTeamBuffer&, std::atomic<int64_t>&, TeamBarrier&);
    struct Impl;
    std::unique_ptr<Impl> impl_;
};
void matmul_team(const PackedWeight& w, const float* X, int64_t M, int64_t ldx, float* Y, int64_t ldy, ActBits act,
                 MatmulTeamBuffer& buf, std::atomic<int64_t>& next, TeamBarrier& barrier);

// The reference twin (src/kernels/ref/): the same math with naive loops over
// the original GGUF layout — the same activation quantisation, exact integer
// block dot products, block partials accumulated in double. Single-threaded.
void matmul_ref(const PackedWeight& w, const float* X, int64_t M, int64_t ldx, float* Y, int64_t ldy,
                ActBits act = ActBits::Q8);

}  // namespace kvrt
