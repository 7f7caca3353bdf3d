// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// kvrt chat --session FILE: the conversation's messages beside its saved sequence.
// FILE is what kvrt_context_seq_save writes (tokens, logits, KV rows); FILE.messages
// holds the messages the chat template renders each turn, so that a later `kvrt chat
// --session FILE` renders the same conversation and kvrt_context_seq_restore gives it
// its KV back (loaded as saved, or recomputed under another KV type or release).
//
// FILE.messages: the message count, then each message's role and text (lengths in bytes),
// in the cache's state-file container (magic "KVRTCHAT", version, checksum), written to a
// temporary file and renamed over the old one.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace kvrt_cli {

using ChatMessages = std::vector<std::pair<std::string, std::string>>;  // (role, text)

// The messages file of a session (FILE.messages).
std::string chat_messages_path(const std::string& session);
// Reads path into msgs; false with err naming the problem (missing, foreign, corrupted, truncated).
bool read_chat_messages(const std::string& path, ChatMessages& msgs, std::string& err);
// Writes msgs to path atomically; false with err naming the step that failed.
bool write_chat_messages(const std::string& path, const ChatMessages& msgs, std::string& err);

}  // namespace kvrt_cli
