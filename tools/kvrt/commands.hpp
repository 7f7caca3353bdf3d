// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The kvrt program's subcommands: each lives in its own cmd_*.cpp and is
// listed in main.cpp's table.
#pragma once

namespace kvrt_cli {
using CommandFn = int (*)(int argc, char** argv);  // argv[0] is the subcommand name

int cmd_run(int argc, char** argv);
int cmd_chat(int argc, char** argv);
int cmd_inspect(int argc, char** argv);
int cmd_demo(int argc, char** argv);
int cmd_bench(int argc, char** argv);
int cmd_cache_demo(int argc, char** argv);
int cmd_ced_init(int argc, char** argv);
int cmd_ced_inspect(int argc, char** argv);
int cmd_perplexity(int argc, char** argv);
}
