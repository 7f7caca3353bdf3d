#!/bin/sh
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The kvrt authors
#
# cli.chat_session: `kvrt chat --session FILE` keeps a conversation across runs. The
# second run loads it as saved and its turn reuses the saved tokens; a third run with
# int8 KV recomputes it (kvrt_context_seq_restore) and its turn reuses those; a corrupt
# messages file is refused with a message and a failing exit status.
#   chat_session.sh KVRT_BINARY WORK_DIR
set -u
kvrt=$1
f=$2/chat_session.kvrt
fail() {
  echo "chat_session: $1" >&2
  rm -f "$f" "$f.messages"
  exit 1
}
rm -f "$f" "$f.messages"
out=$(printf 'Hello there\n' | "$kvrt" chat --session "$f" -n 6 -t 2 2>&1) || fail "first run failed: $out"
[ -f "$f" ] && [ -f "$f.messages" ] || fail "the first run wrote no session files"
out=$(printf 'Tell me more\n' | "$kvrt" chat --session "$f" -n 6 -t 2 2>&1) || fail "second run failed: $out"
echo "$out" | grep -q "2 messages, [0-9]* tokens loaded as saved" || fail "second run did not load the session: $out"
echo "$out" | grep -Eq "[1-9][0-9]* reused" || fail "second run's turn reused nothing: $out"
out=$(printf 'Once more\n' | "$kvrt" chat --session "$f" -n 6 -t 2 --kv-type int8 2>&1) || fail "int8 run failed: $out"
echo "$out" | grep -q "4 messages, [0-9]* tokens recomputed" || fail "the int8 run did not recompute the session: $out"
echo "$out" | grep -Eq "[1-9][0-9]* reused" || fail "the int8 run's turn reused nothing: $out"
printf 'garbage\n' > "$f.messages"
if out=$(printf 'x\n' | "$kvrt" chat --session "$f" -n 2 2>&1); then fail "a corrupt messages file was accepted: $out"; fi
echo "$out" | grep -q "not a kvrt chat messages file" || fail "no message names the corrupt file: $out"
rm -f "$f" "$f.messages"
echo "chat_session: saved, loaded as saved, recomputed under int8 KV, corrupt file refused"
