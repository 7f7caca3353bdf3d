// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Helpers shared by the kvrt subcommands: argument parsing, the default model
// path, model loading with progress, status checks, JSON escaping, timing.
#pragma once

#include <kvrt/kvrt.h>

#include <cstdint>
#include <string>
#include <vector>

namespace kvrt_cli {

// $KVRT_MODEL, else $KVRT_MODEL_DIR/SmolLM2-135M-Instruct.Q4_1.gguf, else
// ~/.cache/kvrt/models/SmolLM2-135M-Instruct.Q4_1.gguf.
std::string default_model_path();

// True when stderr is a terminal (progress bars go there only then).
bool stderr_is_tty();

// Prints "kvrt <cmd>: <what>: <status> (<last error>)" to stderr; returns 1.
int report_error(const char* cmd, const std::string& what, kvrt_status s);

// Loads a model, with a progress bar on stderr when it is a terminal. Returns
// nullptr after reporting the error.
kvrt_model* load_model(const char* cmd, const std::string& path, int n_threads);

// A progress callback drawing "stage [#####     ] 42%" on stderr.
int progress_bar(float fraction, const char* stage, void* user_data);

// Text -> tokens / tokens -> text through the C API (throws nothing; empty on error after reporting).
bool tokenize(const kvrt_model* m, const std::string& text, bool parse_special, std::vector<int32_t>& out);
std::string detokenize(const kvrt_model* m, const std::vector<int32_t>& toks);
// Renders messages with the model's chat template (assistant turn opened).
bool chat_prompt(const kvrt_model* m, const std::vector<std::pair<std::string, std::string>>& msgs,
                 std::string& out);

// Prompts for every architecture. A model whose GGUF has no vocabulary (a CED
// file from `kvrt ced-init`) runs on token ids: its "tokens" of a text are one
// hashed id per word (a deterministic stand-in, so the demo and bench scenarios
// run on it too), and its detokenised text is the ids in brackets.
bool has_vocabulary(const kvrt_model* m);
// The tokens of a text (BOS as the model says; special tokens parsed when asked).
bool text_tokens(const kvrt_model* m, const std::string& text, bool parse_special, std::vector<int32_t>& out);
// The tokens of a conversation: the chat template when the model has one, else
// the messages' contents joined by blank lines (a base model such as Gemma 3 270M
// has no template); *templated tells which.
bool conversation_tokens(const kvrt_model* m, const std::vector<std::pair<std::string, std::string>>& msgs,
                         std::vector<int32_t>& out, bool* templated = nullptr);
// Text of generated tokens (ids in brackets for a model without a vocabulary).
std::string tokens_text(const kvrt_model* m, const std::vector<int32_t>& toks);

std::string json_escape(const std::string& s);
double now_seconds();

// Minimal option parsing: "--name value" / "-n value" pairs and flags.
struct Args {
    std::vector<std::string> positional;
    std::vector<std::pair<std::string, std::string>> opts;  // name -> value ("" for flags)
    bool has(const std::string& name) const;
    std::string get(const std::string& name, const std::string& def = "") const;
    std::vector<std::string> all(const std::string& name) const;
};
// value_opts lists the options that take a value (e.g. {"-m","--model","-p"}).
Args parse_args(int argc, char** argv, const std::vector<std::string>& value_opts);

// KV element types by name: f32, f16, bf16, int8 (also q8), fp8 (also fp8_e4m3), fp4 (CED
// banks only): a KVRT_DTYPE_* value, or -1 for an unknown name. kv_type_name: the inverse ("?" if none).
int32_t kv_type_from_name(const std::string& s);
const char* kv_type_name(int32_t t);
// The value options --kv-type T (K and V), --k-type T, --v-type T, --bank-type T (CED bank rows
// and indexer keys: f32, f16, bf16, fp4) (append to a command's list).
std::vector<std::string> with_kv_type_opts(std::vector<std::string> value_opts);
// Sets cc.kv_dtype / k_dtype / v_dtype / bank_dtype from them; false after printing an unknown name.
// The list also carries --act-bits default|8|outliers|16 (kvrt_context_config.act_bits), which
// apply_kv_types sets too (parse_act_bits: false after printing a bad value).
bool apply_kv_types(const char* cmd, const Args& a, kvrt_context_config& cc);
bool parse_act_bits(const char* cmd, const Args& a, int32_t& bits);
// "default" (act_bits 0: 16-bit codes for the K/V projections, 8-bit elsewhere), "8" or "16".
const char* act_bits_name(int32_t bits);

// Lower tiers of the prefix cache: --cache-dir DIR (a disk tier) and --cache-redis URL (a Redis
// tier), appended to a command's value options; apply_tiers builds their configs into `tiers`
// (which must outlive the kvrt_context_create calls) and points cc.tiers at them.
std::vector<std::string> with_tier_opts(std::vector<std::string> value_opts);
void apply_tiers(const Args& a, std::vector<kvrt_tier_config>& tiers, std::vector<std::string>& strings,
                 kvrt_context_config& cc);
// "  (N from disk, M from redis)" when a request reused tokens from tiers, else "".
std::string tier_reuse_text(const kvrt_request_stats& st);

}  // namespace kvrt_cli
