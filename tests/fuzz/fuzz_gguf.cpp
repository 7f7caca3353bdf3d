// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// libFuzzer harness: the GGUF reader (src/model/gguf) and what reads its metadata
// first (the tokenizer's GGUF keys, the chat template's detection).
//
// The input is a whole GGUF file, parsed in place by GgufFile::from_buffer. A
// hostile file must end as kvrt::Error (any status), never as a crash, a sanitizer
// report, an exception of another type, a huge allocation or a hang. When it
// parses, every value is described and every getter the loaders use is called, and
// the tensors' data ranges are touched (they must lie inside the input).
#include "model/gguf/gguf.hpp"
#include "model/tokenizer/chat_template.hpp"
#include "model/tokenizer/tokenizer_gguf.hpp"
#include "util/error.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

using namespace kvrt;

namespace {

void walk(const GgufFile& f) {
    volatile uint64_t sink = 0;
    size_t i = 0;
    for (const GgufKV& kv : f.metadata()) {
        sink = sink + kv.value.describe().size() + kv.key.size();
        if (kv.value.type() == GgufType::ARRAY) {
            const uint64_t n = kv.value.array_size() < 64 ? kv.value.array_size() : 64;
            for (uint64_t i = 0; i < n && kv.value.array_type() != GgufType::STRING &&
                                 kv.value.array_type() != GgufType::ARRAY;
                 i++) {
                int64_t iv = 0;
                double dv = 0;
                if (kv.value.array_int(i, &iv)) sink = sink + uint64_t(iv);
                if (kv.value.array_float(i, &dv)) sink = sink + uint64_t(dv != 0);
            }
        }
        // The typed getters the loaders use: those of the value's own type family on every
        // key, and one other (turn by turn) for the type-mismatch path. A mismatch throws,
        // and a throw costs ~0.5 ms under ASan: calling all nine on every key made one
        // input of a real model's metadata take over a second.
        const GgufType t = kv.value.type(), et = kv.value.array_type();
        const bool arr = t == GgufType::ARRAY;
        const unsigned other = unsigned(i++ % 9);
        auto want = [&](unsigned k, bool own) { return own || k == other; };
        try { if (want(0, kv.value.is_integer())) sink = sink + f.get_u32(kv.key, 0); } catch (const Error&) {}
        try { if (want(1, kv.value.is_integer())) sink = sink + uint64_t(f.get_i32(kv.key, 0)); } catch (const Error&) {}
        try { if (want(2, kv.value.is_integer())) sink = sink + f.get_u64(kv.key, 0); } catch (const Error&) {}
        try { if (want(3, kv.value.is_float())) sink = sink + uint64_t(f.get_f32(kv.key, 0) != 0); } catch (const Error&) {}
        try { if (want(4, t == GgufType::BOOL)) sink = sink + f.get_bool(kv.key, false); } catch (const Error&) {}
        try { if (want(5, t == GgufType::STRING)) sink = sink + f.get_string(kv.key, "").size(); } catch (const Error&) {}
        try { if (want(6, arr && et == GgufType::STRING)) sink = sink + f.get_string_array(kv.key).size(); } catch (const Error&) {}
        try {
            if (want(7, arr && et != GgufType::STRING && et != GgufType::ARRAY && et != GgufType::F32 && et != GgufType::F64))
                sink = sink + f.get_i32_array(kv.key).size();
        } catch (const Error&) {}
        try { if (want(8, arr && (et == GgufType::F32 || et == GgufType::F64))) sink = sink + f.get_f32_array(kv.key).size(); } catch (const Error&) {}
    }
    for (const GgufTensor& t : f.tensors()) {
        sink = sink + t.shape_string().size();
        if (t.n_bytes > 0) sink = sink + t.data[0] + t.data[t.n_bytes - 1];  // ASan checks the range
        if (f.find_tensor(t.name) != &t) std::abort();  // names are unique: the index finds this one
    }
    try { sink = sink + f.architecture().size() + f.arch_key("block_count").size(); } catch (const Error&) {}
    (void)sink;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    // from_buffer keeps a view: copy into an exact-size heap block so ASan sees any
    // read past the end of the file.
    std::vector<uint8_t> buf(data, data + size);
    try {
        GgufFile f = GgufFile::from_buffer(buf.data(), buf.size(), "fuzz.gguf");
        walk(f);
        if (f.has("tokenizer.ggml.model")) {
            TokenizerData td = tokenizer_data_from_gguf(f);
            // Building the tables is O(vocabulary + merges): bounded by the input size.
            Tokenizer tok(td);
            std::vector<int32_t> ids = tok.encode("Hello, world! 123 <|im_start|>", EncodeOptions{true, true, {}});
            (void)tok.decode(ids, true);
            try {
                ChatTemplate ct = chat_template_of(tok);
                ChatMessage msgs[] = {{"system", "s"}, {"user", "u"}, {"assistant", "a"}, {"user", "v"}};
                (void)ct.render(msgs, true);
            } catch (const Error&) {
            }
        }
    } catch (const Error&) {
    }
    return 0;
}
