// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The messages file of `kvrt chat --session` (chat_session.hpp).
#include "chat_session.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace kvrt_cli {

namespace {
constexpr const char* kHeader = "kvrt-chat-messages 1";
}  // namespace

std::string chat_messages_path(const std::string& session) { return session + ".messages"; }

bool read_chat_messages(const std::string& path, ChatMessages& msgs, std::string& err) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        err = path + ": " + std::strerror(errno);
        return false;
    }
    std::string line;
    if (!std::getline(in, line) || line != kHeader) {
        err = path + ": not a kvrt chat messages file (first line is not \"" + kHeader + "\")";
        return false;
    }
    ChatMessages out;
    while (std::getline(in, line)) {
        std::istringstream head(line);
        std::string role;
        long long n = -1;
        std::string rest;
        if (!(head >> role >> n) || (head >> rest) || n < 0 || n > (1LL << 30)) {
            err = path + ": bad message header \"" + line.substr(0, 80) + "\" (message " + std::to_string(out.size() + 1) + ")";
            return false;
        }
        std::string text(static_cast<size_t>(n), '\0');
        if (n > 0 && !in.read(&text[0], n)) {
            err = path + ": message " + std::to_string(out.size() + 1) + " is truncated";
            return false;
        }
        if (in.get() != '\n') {
            err = path + ": message " + std::to_string(out.size() + 1) + " does not end where its length says";
            return false;
        }
        out.emplace_back(role, std::move(text));
    }
    msgs = std::move(out);
    return true;
}

bool write_chat_messages(const std::string& path, const ChatMessages& msgs, std::string& err) {
    const std::string tmp = path + ".tmp." + std::to_string(getpid());
    FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f) {
        err = tmp + ": " + std::strerror(errno);
        return false;
    }
    bool ok = std::fprintf(f, "%s\n", kHeader) > 0;
    for (const auto& [role, text] : msgs) {
        ok = ok && std::fprintf(f, "%s %zu\n", role.c_str(), text.size()) > 0;
        ok = ok && (text.empty() || std::fwrite(text.data(), 1, text.size(), f) == text.size());
        ok = ok && std::fputc('\n', f) != EOF;
    }
    ok = ok && std::fflush(f) == 0 && fsync(fileno(f)) == 0;
    ok = (std::fclose(f) == 0) && ok;
    if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
        err = path + ": writing the messages failed (" + std::strerror(errno) + ")";
        std::remove(tmp.c_str());
        return false;
    }
    return true;
}

}  // namespace kvrt_cli
