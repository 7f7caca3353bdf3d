// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The messages file of `kvrt chat --session` (chat_session.hpp), in the cache's state-file
// container (cache/state_file.hpp: magic, version, checksum, atomic write).
#include "chat_session.hpp"

#include "cache/state_file.hpp"
#include "util/error.hpp"

namespace kvrt_cli {

namespace {
constexpr char kMagic[8] = {'K', 'V', 'R', 'T', 'C', 'H', 'A', 'T'};
constexpr uint64_t kMaxBytes = uint64_t(1) << 30;

void put_string(kvrt::cache::StateWriter& w, const std::string& s) {
    w.u64(s.size());
    w.bytes(s.data(), s.size());
}

std::string get_string(kvrt::cache::StateReader& r, const std::string& path) {
    const uint64_t n = r.u64();
    if (n > r.remaining()) throw kvrt::Error(KVRT_ERR_BAD_FORMAT, path + ": a message exceeds the file");
    const uint8_t* p = r.bytes(n);
    return std::string(reinterpret_cast<const char*>(p), n);
}
}  // namespace

std::string chat_messages_path(const std::string& session) { return session + ".messages"; }

bool read_chat_messages(const std::string& path, ChatMessages& msgs, std::string& err) {
    try {
        kvrt::cache::StateReader r(path, kMagic, kMaxBytes);
        const uint64_t n = r.u64();
        ChatMessages out;
        for (uint64_t i = 0; i < n; ++i) {
            std::string role = get_string(r, path);
            out.emplace_back(std::move(role), get_string(r, path));
        }
        r.expect_end();
        msgs = std::move(out);
        return true;
    } catch (const kvrt::Error& e) {
        err = std::string(e.what()) + " (not a kvrt chat messages file, or a damaged one)";
        return false;
    }
}

bool write_chat_messages(const std::string& path, const ChatMessages& msgs, std::string& err) {
    try {
        kvrt::cache::StateWriter w(kMagic);
        w.u64(msgs.size());
        for (const auto& [role, text] : msgs) {
            put_string(w, role);
            put_string(w, text);
        }
        w.commit(path);
        return true;
    } catch (const kvrt::Error& e) {
        err = e.what();
        return false;
    }
}

}  // namespace kvrt_cli
