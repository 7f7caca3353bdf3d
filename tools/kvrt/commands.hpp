// The kvrt program's subcommands: each lives in its own cmd_*.cpp and is
// listed in main.cpp's table.
#pragma once

namespace kvrt_cli {
using CommandFn = int (*)(int argc, char** argv);  // argv[0] is the subcommand name
}
