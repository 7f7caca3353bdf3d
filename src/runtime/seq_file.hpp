// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The file of one saved conversation (kvrt_context_seq_save / _load), parsed and
// checked apart from any Context: the header's model family, fingerprint, KV dtypes,
// block size and salt against what the loading context expects, then the tokens, the
// logits and the architecture's state blob (read by the cache or the CED runtime).
// Context::load_seq (context_state.cpp) and the fuzz harness tests/fuzz/fuzz_seq_file.cpp
// call the same code.
#pragma once

#include "cache/state_file.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "util/dtype.hpp"

namespace kvrt::runtime {

inline constexpr char kSeqFileMagic[8] = {'K', 'V', 'R', 'T', 'C', 'T', 'X', '\0'};
inline constexpr uint32_t kSeqFamilyDecoder = 0, kSeqFamilyCed = 1;

// The header's KV dtype word: K's type, and V's type + 1 above it when V's differs.
uint32_t kv_dtypes_word(DType k, const std::optional<DType>& v);
// "K and V rows of f16", "K rows of f16 and V rows of f32", "type 9" for unknown values.
std::string kv_dtypes_text(uint32_t word);

// What the loading context requires of a file.
struct SeqFileExpect {
    bool ced = false;            // the context runs a CED model
    uint64_t fingerprint_lo = 0, fingerprint_hi = 0;
    uint32_t dtypes_word = 0;    // kv_dtypes_word of the context's K and V types
    uint32_t block_tokens = 0;
    std::string salt;            // the cache keys' salt bytes
    uint64_t n_ctx = 0;          // most tokens a sequence may hold
    uint32_t n_vocab = 0;
};

struct SeqFileContents {
    uint64_t fingerprint_lo = 0, fingerprint_hi = 0;
    std::vector<int32_t> tokens;
    bool has_logits = false;
    std::vector<float> logits;   // n_vocab floats when has_logits
    std::vector<uint8_t> arch;   // the KVRTSEQ (decoder) or KVRTCED container; empty iff no tokens
    // Rows saved under another KV dtype, block size or salt (read with rows_may_differ only):
    // what differs, as the strict read's message would name it; empty when the rows fit.
    std::string rows_differ;
};

// Reads the body of a verified "KVRTCTX" container (r: magic, version and checksum
// already checked) and checks it against `want`, in the order a message should name a
// problem: family, model, dtypes, block size, salt. Throws kvrt::Error: MISMATCH (saved
// for another model, dtype, block size, salt or architecture), OUT_OF_RANGE (more tokens
// than n_ctx), BAD_FORMAT (anything malformed); `path` names the file in messages.
// rows_may_differ (kvrt_context_seq_restore): a KV dtype, block size or salt other than
// `want`'s is not an error but recorded in rows_differ (the tokens are still checked
// against the vocabulary and n_ctx; another model or family still throws).
SeqFileContents read_seq_file(cache::StateReader& r, const SeqFileExpect& want, const std::string& path,
                              bool rows_may_differ = false);

}  // namespace kvrt::runtime
