// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// read_seq_file: the checks Context::load_seq makes on a saved conversation's header
// and records, before anything of the context changes (seq_file.hpp).
#include "runtime/seq_file.hpp"

#include "util/error.hpp"

#include <cstring>

namespace kvrt::runtime {

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

SeqFileContents read_seq_file(cache::StateReader& r, const SeqFileExpect& want, const std::string& path,
                              bool rows_may_differ) {
    SeqFileContents out;
    // A row-format difference: an error, or (rows_may_differ) the first one recorded.
    auto rows_check = [&](bool ok, const std::string& message) {
        if (ok) return;
        if (!rows_may_differ)
            throw Error(KVRT_ERR_MISMATCH, message + "; kvrt_context_seq_restore recomputes the rows from the saved tokens");
        if (out.rows_differ.empty()) out.rows_differ = message;
    };
    const uint32_t family = r.u32();
    KVRT_CHECK(family == kSeqFamilyDecoder || family == kSeqFamilyCed, KVRT_ERR_BAD_FORMAT,
               path + ": unknown model family " + std::to_string(family));
    KVRT_CHECK((family == kSeqFamilyCed) == want.ced, KVRT_ERR_MISMATCH,
               path + " holds a " + (family == kSeqFamilyCed ? "CED" : "decoder") + " sequence; this context runs a " +
                   (want.ced ? "CED" : "decoder") + " model");
    out.fingerprint_lo = r.u64();
    out.fingerprint_hi = r.u64();
    KVRT_CHECK(out.fingerprint_lo == want.fingerprint_lo && out.fingerprint_hi == want.fingerprint_hi,
               KVRT_ERR_MISMATCH, path + " was saved from another model (fingerprint differs)");
    const uint32_t dtype = r.u32();
    rows_check(dtype == want.dtypes_word, path + " holds rows of another KV dtype (" + kv_dtypes_text(dtype) +
                                              "); this context keeps " + kv_dtypes_text(want.dtypes_word));
    const uint32_t bt = r.u32();
    rows_check(bt == want.block_tokens,
               path + " was saved with block_tokens " + std::to_string(bt) + "; this context uses " +
                   std::to_string(want.block_tokens) + " (load it into a context created with block_tokens = " +
                   std::to_string(bt) + (bt == 16 ? ", the default before kvrt 0.3.2)" : ")"));
    const uint64_t salt_len = r.u64();
    KVRT_CHECK(salt_len <= r.remaining(), KVRT_ERR_BAD_FORMAT, path + ": salt length exceeds the file");
    const uint8_t* salt = r.bytes(salt_len);
    rows_check(salt_len == want.salt.size() && std::memcmp(salt, want.salt.data(), salt_len) == 0,
               path + " was saved under another cache salt or act_bits (or by a kvrt release computing them otherwise)");
    const uint64_t n = r.u64();
    KVRT_CHECK(n <= r.remaining() / sizeof(int32_t), KVRT_ERR_BAD_FORMAT, path + ": token count exceeds the file");
    KVRT_CHECK(n <= want.n_ctx, KVRT_ERR_OUT_OF_RANGE,
               path + " holds " + std::to_string(n) + " tokens, more than this context's n_ctx = " +
                   std::to_string(want.n_ctx));
    out.tokens.resize(n);
    if (n) std::memcpy(out.tokens.data(), r.bytes(n * sizeof(int32_t)), n * sizeof(int32_t));
    for (int32_t t : out.tokens)
        KVRT_CHECK(t >= 0 && static_cast<uint32_t>(t) < want.n_vocab, KVRT_ERR_BAD_FORMAT,
                   path + ": a token is outside the vocabulary");
    const uint32_t has_logits = r.u32();
    const uint64_t nl = r.u64();
    KVRT_CHECK(has_logits <= 1 && nl == (has_logits ? want.n_vocab : 0) && (nl == 0 || n > 0), KVRT_ERR_BAD_FORMAT,
               path + ": bad logits record");
    out.has_logits = has_logits != 0;
    KVRT_CHECK(nl <= r.remaining() / sizeof(float), KVRT_ERR_BAD_FORMAT, path + ": the logits exceed the file");
    out.logits.resize(nl);
    if (nl) std::memcpy(out.logits.data(), r.bytes(nl * sizeof(float)), nl * sizeof(float));
    const uint64_t arch_len = r.u64();
    KVRT_CHECK(arch_len <= r.remaining(), KVRT_ERR_BAD_FORMAT, path + ": the saved rows exceed the file");
    const uint8_t* ap = r.bytes(arch_len);
    out.arch.assign(ap, ap + arch_len);
    r.expect_end();
    KVRT_CHECK((arch_len == 0) == (n == 0), KVRT_ERR_BAD_FORMAT, path + ": tokens without rows (or rows without tokens)");
    return out;
}

}  // namespace kvrt::runtime
