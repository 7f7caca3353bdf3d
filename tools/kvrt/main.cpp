// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The kvrt program: dispatches to subcommands (one cmd_*.cpp each).
#include "commands.hpp"

#include <kvrt/kvrt.h>

#include <cstdio>
#include <cstring>

namespace kvrt_cli {
int cmd_version(int, char**) {
    std::printf("kvrt %s\n", kvrt_version_string());
    return 0;
}
}  // namespace kvrt_cli

namespace {
struct Command {
    const char* name;
    kvrt_cli::CommandFn fn;
    const char* help;
};

const Command kCommands[] = {
    {"run", kvrt_cli::cmd_run, "generate from a prompt: kvrt run [-m MODEL] -p TEXT [--chat] (streams tokens)"},
    {"chat", kvrt_cli::cmd_chat, "interactive chat on stdin; the conversation stays in the cache"},
    {"inspect", kvrt_cli::cmd_inspect, "metadata, tensor types and KV bytes per token of a GGUF model"},
    {"demo", kvrt_cli::cmd_demo, "prefix caching on a long document: requests A, B (hit), C (edit); B == cold"},
    {"bench", kvrt_cli::cmd_bench, "prefill / decode tokens/s and time to first token (vs llama.cpp with --baseline)"},
    {"version", kvrt_cli::cmd_version, "print the library version"},
    {"cache-demo", kvrt_cli::cmd_cache_demo, "the cache manager through the C API: prefix reuse, fork, eviction, bytes"},
    {"ced-init", kvrt_cli::cmd_ced_init, "write a CED model of deterministic random weights (--preset tiny|base)"},
    {"ced-inspect", kvrt_cli::cmd_ced_inspect, "KV bytes per token of a CED model by component vs dense GQA; cache check"},
    {"perplexity", kvrt_cli::cmd_perplexity, "perplexity of a text (llama-perplexity's windows); --save-logits, --kl FILE"},
};

void usage() {
    std::fprintf(stderr, "usage: kvrt <command> [options]\n\ncommands:\n");
    for (const Command& c : kCommands) std::fprintf(stderr, "  %-10s %s\n", c.name, c.help);
}
}  // namespace

int main(int argc, char** argv) {
    if (argc < 2 || std::strcmp(argv[1], "-h") == 0 || std::strcmp(argv[1], "--help") == 0) {
        usage();
        return argc < 2 ? 2 : 0;
    }
    if (std::strcmp(argv[1], "--version") == 0) return kvrt_cli::cmd_version(argc - 1, argv + 1);
    for (const Command& c : kCommands)
        if (std::strcmp(argv[1], c.name) == 0) return c.fn(argc - 1, argv + 1);
    std::fprintf(stderr, "kvrt: unknown command '%s'\n", argv[1]);
    usage();
    return 2;
}
