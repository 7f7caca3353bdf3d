// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Context::save_seq / load_seq / fork_seq / truncate_seq: one conversation
// saved to a file and restored (in this process or another), forked and cut.
//
// File ("KVRTCTX", the state_file.hpp container: version, XXH3-64 checksum of
// everything, written to a temporary file, fsync'ed, renamed, directory
// fsync'ed):
//   u32 family (0 decoder, 1 CED) | model fingerprint (2 x u64) | u32 KV dtypes (the
//   K rows' type in the low 16 bits; V's type + 1 in the high 16 when V's differs, 0 when
//   not: a file of one type reads as it always did) |
//   u32 block tokens | salt (u64 length + bytes) | tokens (u64 n + n x i32) |
//   u32 has_logits | logits (u64 n + n x f32) | u64 length + the architecture's
//   state: a KVRTSEQ container of the cache sequence (decoders: rows of every
//   layer, its own layout hash and checksum) or a KVRTCED container (CED: bank
//   and window cache sequences plus the tail state).
// Loading checks everything that can be checked before the cache changes, in
// order of what the message should name (model, dtype, block size, salt), and
// installs the new sequence only when its rows were loaded: a failure leaves
// the context's sequence as it was.
#include "cache/state_file.hpp"
#include "model/model.hpp"
#include "runtime/context.hpp"
#include "util/error.hpp"

#include <cstring>
#include <limits>

namespace kvrt::runtime {

namespace {
const char kCtxMagic[8] = {'K', 'V', 'R', 'T', 'C', 'T', 'X', '\0'};
constexpr uint32_t kFamilyDecoder = 0, kFamilyCed = 1;

// The header's KV dtype word: K's type, and V's type + 1 above it when V's differs.
uint32_t kv_dtypes_word(DType k, const std::optional<DType>& v) {
    const uint32_t vw = v && *v != k ? static_cast<uint32_t>(*v) + 1 : 0;
    return static_cast<uint32_t>(k) | (vw << 16);
}

std::string kv_dtypes_text(uint32_t w) {
    const uint32_t k = w & 0xffffu, v = w >> 16;
    auto name = [](uint32_t t) {
        return t <= static_cast<uint32_t>(DType::FP8_E4M3) ? std::string(dtype_name(static_cast<DType>(t)))
                                                      : "type " + std::to_string(t);
    };
    return v == 0 ? "K and V rows of " + name(k) : "K rows of " + name(k) + " and V rows of " + name(v - 1);
}
}  // namespace

void Context::save_seq(int32_t seq, const std::string& path) const {
    const Seq& s = seq_ref(seq);
    cache::StateWriter w(kCtxMagic);
    w.u32(ced_ ? kFamilyCed : kFamilyDecoder);
    w.u64(model_->fingerprint().lo);
    w.u64(model_->fingerprint().hi);
    w.u32(kv_dtypes_word(p_.kv_dtype, p_.kv_v_dtype));
    w.u32(static_cast<uint32_t>(p_.block_tokens));
    w.u64(keys_.salt.size());  // the salt, plus act_bits 16's suffix (Context::Context)
    w.bytes(keys_.salt.data(), keys_.salt.size());
    w.u64(s.tokens.size());
    w.bytes(s.tokens.data(), s.tokens.size() * sizeof(int32_t));
    w.u32(s.has_logits ? 1 : 0);
    const size_t nl = s.has_logits ? s.logits.size() : 0;
    w.u64(nl);
    w.bytes(s.logits.data(), nl * sizeof(float));
    std::vector<uint8_t> arch;
    if (ced_ && s.ced) arch = ced_->save_state(s.ced);
    else if (!ced_ && s.id) arch = cache_->save_sequence_blob(s.id);
    w.u64(arch.size());
    w.bytes(arch.data(), arch.size());
    w.commit(path);
}

void Context::load_seq(int32_t seq, const std::string& path) {
    Seq& s = seq_ref(seq);
    // Largest file this context could have written: its cache budget, twice, plus headers.
    const uint64_t budget = ced_ ? ced_->bank_cache().stats().budget_bytes + ced_->window_cache().stats().budget_bytes
                                 : cache_->stats().budget_bytes;
    cache::StateReader r(path, kCtxMagic, 2 * budget + (uint64_t(1) << 34));
    const uint32_t family = r.u32();
    KVRT_CHECK(family == kFamilyDecoder || family == kFamilyCed, KVRT_ERR_BAD_FORMAT,
               path + ": unknown model family " + std::to_string(family));
    KVRT_CHECK((family == kFamilyCed) == (ced_ != nullptr), KVRT_ERR_MISMATCH,
               path + " holds a " + (family == kFamilyCed ? "CED" : "decoder") + " sequence; this context runs a " +
                   (ced_ ? "CED" : "decoder") + " model");
    const uint64_t fp_lo = r.u64(), fp_hi = r.u64();
    KVRT_CHECK(fp_lo == model_->fingerprint().lo && fp_hi == model_->fingerprint().hi, KVRT_ERR_MISMATCH,
               path + " was saved from another model (fingerprint differs)");
    const uint32_t dtype = r.u32(), want = kv_dtypes_word(p_.kv_dtype, p_.kv_v_dtype);
    KVRT_CHECK(dtype == want, KVRT_ERR_MISMATCH,
               path + " holds rows of another KV dtype (" + kv_dtypes_text(dtype) + "); this context keeps " +
                   kv_dtypes_text(want));
    const uint32_t bt = r.u32();
    KVRT_CHECK(bt == static_cast<uint32_t>(p_.block_tokens), KVRT_ERR_MISMATCH,
               path + " was saved with block_tokens " + std::to_string(bt) + "; this context uses " +
                   std::to_string(p_.block_tokens));
    const uint64_t salt_len = r.u64();
    KVRT_CHECK(salt_len <= r.remaining(), KVRT_ERR_BAD_FORMAT, path + ": salt length exceeds the file");
    const uint8_t* salt = r.bytes(salt_len);
    KVRT_CHECK(salt_len == keys_.salt.size() && std::memcmp(salt, keys_.salt.data(), salt_len) == 0, KVRT_ERR_MISMATCH,
               path + " was saved under another cache salt or act_bits");
    const uint64_t n = r.u64();
    KVRT_CHECK(n <= r.remaining() / sizeof(int32_t), KVRT_ERR_BAD_FORMAT, path + ": token count exceeds the file");
    KVRT_CHECK(n <= p_.n_ctx, KVRT_ERR_OUT_OF_RANGE,
               path + " holds " + std::to_string(n) + " tokens, more than this context's n_ctx = " + std::to_string(p_.n_ctx));
    std::vector<int32_t> tokens(n);
    if (n) std::memcpy(tokens.data(), r.bytes(n * sizeof(int32_t)), n * sizeof(int32_t));
    const uint32_t nv = model_->config().n_vocab;
    for (int32_t t : tokens)
        KVRT_CHECK(t >= 0 && static_cast<uint32_t>(t) < nv, KVRT_ERR_BAD_FORMAT, path + ": a token is outside the vocabulary");
    const uint32_t has_logits = r.u32();
    const uint64_t nl = r.u64();
    KVRT_CHECK(has_logits <= 1 && nl == (has_logits ? nv : 0) && (nl == 0 || n > 0), KVRT_ERR_BAD_FORMAT,
               path + ": bad logits record");
    std::vector<float> logits(nl);
    if (nl) std::memcpy(logits.data(), r.bytes(nl * sizeof(float)), nl * sizeof(float));
    const uint64_t arch_len = r.u64();
    KVRT_CHECK(arch_len <= r.remaining(), KVRT_ERR_BAD_FORMAT, path + ": the saved rows exceed the file");
    const uint8_t* ap = r.bytes(arch_len);
    std::vector<uint8_t> arch(ap, ap + arch_len);
    r.expect_end();
    KVRT_CHECK((arch_len == 0) == (n == 0), KVRT_ERR_BAD_FORMAT, path + ": tokens without rows (or rows without tokens)");

    // Load the rows into a new cache sequence; install it only when that worked.
    Seq fresh;
    if (n > 0) {
        if (ced_) {
            fresh.ced = ced_->load_state(std::move(arch), path);
            if (ced_->tokens(fresh.ced) != tokens) {
                ced_->release(fresh.ced);
                fail(KVRT_ERR_BAD_FORMAT, path + ": the CED state's tokens differ from the file's");
            }
        } else {
            fresh.id = cache_->load_sequence_blob(std::move(arch), fp_lo, fp_hi, path);
            const cache::SeqInfo info = cache_->seq_info(fresh.id);
            if (info.length != int64_t(n) || info.computed != int64_t(n)) {
                cache_->release(fresh.id);
                fail(KVRT_ERR_BAD_FORMAT, path + ": the saved rows do not cover the saved tokens");
            }
        }
    }
    fresh.tokens = std::move(tokens);
    fresh.logits = std::move(logits);
    fresh.has_logits = has_logits != 0;
    drop(s);
    s = std::move(fresh);
}

void Context::fork_seq(int32_t src, int32_t dst) {
    Seq& a = seq_ref(src);
    Seq& b = seq_ref(dst);
    if (src == dst) return;
    Seq c;
    if (a.ced) c.ced = ced_->fork(a.ced);
    else if (a.id) c.id = cache_->fork(a.id);
    c.tokens = a.tokens;
    c.logits = a.logits;
    c.has_logits = a.has_logits;
    drop(b);
    b = std::move(c);
}

void Context::truncate_seq(int32_t seq, size_t n) {
    Seq& s = seq_ref(seq);
    KVRT_CHECK(n <= s.tokens.size(), KVRT_ERR_OUT_OF_RANGE,
               "truncate: " + std::to_string(n) + " is more than the " + std::to_string(s.tokens.size()) +
                   " tokens sequence " + std::to_string(seq) + " holds");
    if (n == s.tokens.size()) return;
    if (n == 0) {
        drop(s);
        return;
    }
    if (s.ced) ced_->truncate(s.ced, static_cast<int64_t>(n));  // INVALID_STATE: nothing changed
    else cache_->truncate(s.id, static_cast<int64_t>(n));
    s.tokens.resize(n);
    s.has_logits = false;
}

}  // namespace kvrt::runtime
