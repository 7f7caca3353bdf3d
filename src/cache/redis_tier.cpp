// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// RedisTier: the shared prefix-cache tier over hiredis (see redis_tier.hpp).
//
// Concurrency: a small pool of blocking hiredis connections (one per caller in
// flight, at most kMaxConnections). The mutex guards only the pool, the stats,
// the client-side LRU and the back-off state; no I/O runs under it, so a slow
// server costs each caller at most its own timeout (plus the wait for a free
// connection, itself bounded by the timeout).
//
// Faults: a connection whose context reports an error (I/O, EOF, timeout,
// protocol, OOM in hiredis) is freed, never reused (a timed-out reply may still
// arrive on it). kFailuresBeforeBackoff consecutive connection-level failures
// open a back-off window (kBackoffStartMs, doubling to kBackoffMaxMs) during
// which calls miss at once and count `skipped`; the first call after the window
// tries again and one success closes it. An error REPLY (OOM under maxmemory +
// noeviction, READONLY, ...) is not a connection failure: the connection stays,
// the call is a dropped put or a miss, counted in `errors`.
//
// SIGPIPE: hiredis writes with write(2), which raises SIGPIPE on a socket the
// server has reset. Each command runs with SIGPIPE blocked in the calling thread,
// and a SIGPIPE the command raised is consumed before unblocking, so the
// embedding process never dies of a lost Redis.
#include "cache/redis_tier.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <memory>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <list>
#include <mutex>
#include <unordered_map>

#include <csignal>
#include <ctime>
#include <pthread.h>

#ifdef KVRT_HAVE_HIREDIS
#include <hiredis/hiredis.h>
#endif

namespace kvrt::cache {

namespace {

void append_hex(std::string* s, const Hash128& h) {
    char buf[33];
    std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(h.hi),
                  static_cast<unsigned long long>(h.lo));
    s->append(buf, 32);
}

}  // namespace

std::string redis_tier_key(const std::string& key_prefix, const TierKey& key) {
    std::string s;
    s.reserve(key_prefix.size() + 65);
    s += key_prefix;
    append_hex(&s, key.layout);
    s += ':';
    append_hex(&s, key.block);
    return s;
}

bool parse_redis_url(const std::string& url, std::string* host, int* port, int* db, std::string* error) {
    std::string rest = url;
    const std::string scheme = "redis://";
    if (rest.compare(0, scheme.size(), scheme) == 0) rest = rest.substr(scheme.size());
    else if (rest.find("://") != std::string::npos) {
        *error = "redis URL '" + url + "': only the redis:// scheme is supported";
        return false;
    }
    if (rest.find('@') != std::string::npos) {
        *error = "redis URL '" + url + "': credentials (user:password@) are not supported";
        return false;
    }
    int d = 0;
    size_t slash = rest.find('/');
    if (slash != std::string::npos) {
        std::string dbs = rest.substr(slash + 1);
        rest = rest.substr(0, slash);
        if (!dbs.empty()) {
            char* end = nullptr;
            errno = 0;
            long v = std::strtol(dbs.c_str(), &end, 10);
            if (errno != 0 || *end != '\0' || v < 0 || v > 1000000 || !std::isdigit(static_cast<unsigned char>(dbs[0]))) {
                *error = "redis URL '" + url + "': database '" + dbs + "' is not a non-negative integer";
                return false;
            }
            d = static_cast<int>(v);
        }
    }
    int p = 6379;
    std::string h = rest;
    size_t colon = rest.rfind(':');
    if (colon != std::string::npos) {
        h = rest.substr(0, colon);
        std::string ps = rest.substr(colon + 1);
        char* end = nullptr;
        errno = 0;
        long v = ps.empty() ? -1 : std::strtol(ps.c_str(), &end, 10);
        if (ps.empty() || errno != 0 || *end != '\0' || v <= 0 || v > 65535 || !std::isdigit(static_cast<unsigned char>(ps[0]))) {
            *error = "redis URL '" + url + "': port '" + ps + "' is not in 1..65535";
            return false;
        }
        p = static_cast<int>(v);
    }
    if (h.empty()) {
        *error = "redis URL '" + url + "': no host (expected redis://host:port[/db])";
        return false;
    }
    *host = h;
    *port = p;
    *db = d;
    return true;
}

namespace {

constexpr int kMaxConnections = 4;
constexpr int kFailuresBeforeBackoff = 2;
constexpr int kBackoffStartMs = 250;
constexpr int kBackoffMaxMs = 8000;

using Clock = std::chrono::steady_clock;

// Counters beyond TierStats, readable through redis_tier_extra_stats().
struct RedisExtra {
    uint64_t skipped = 0;      // calls answered at once during a back-off window
    uint64_t connects = 0;     // connections opened successfully
    uint64_t error_replies = 0;// error replies (OOM, READONLY, ...)
    uint64_t over_budget = 0;  // puts dropped because one payload exceeds the whole budget
};

class RedisTierBase : public BlockTier {
public:
    const char* kind() const noexcept override { return "redis"; }
    virtual RedisExtra extra() const noexcept = 0;
    virtual void reset_backoff() noexcept = 0;
};

#ifndef KVRT_HAVE_HIREDIS

class RedisTierStub final : public RedisTierBase {
public:
    void put(const TierKey&, const uint8_t*, size_t) noexcept override {
        std::lock_guard<std::mutex> l(mu_);
        ++s_.put_failures;
        ++s_.errors;
    }
    bool get(const TierKey&, std::vector<uint8_t>*) noexcept override {
        std::lock_guard<std::mutex> l(mu_);
        ++s_.gets;
        ++s_.errors;
        return false;
    }
    bool contains(const TierKey&) noexcept override {
        std::lock_guard<std::mutex> l(mu_);
        ++s_.errors;
        return false;
    }
    void remove(const TierKey&) noexcept override {}
    TierStats stats() const noexcept override {
        std::lock_guard<std::mutex> l(mu_);
        return s_;
    }
    std::string last_error() const override { return "kvrt was built without Redis support (KVRT_WITH_REDIS=OFF)"; }
    RedisExtra extra() const noexcept override { return {}; }
    void reset_backoff() noexcept override {}

private:
    mutable std::mutex mu_;
    TierStats s_;
};

#else

// Blocks SIGPIPE in this thread for the scope of one command (see the file comment).
class SigpipeGuard {
public:
    SigpipeGuard() {
        sigset_t pipe;
        sigemptyset(&pipe);
        sigaddset(&pipe, SIGPIPE);
        sigset_t pending;
        sigemptyset(&pending);
        sigpending(&pending);
        was_pending_ = sigismember(&pending, SIGPIPE) == 1;
        blocked_ = pthread_sigmask(SIG_BLOCK, &pipe, &old_) == 0;
    }
    ~SigpipeGuard() {
        if (!blocked_) return;
        if (!was_pending_) {
            sigset_t pending;
            sigemptyset(&pending);
            sigpending(&pending);
            if (sigismember(&pending, SIGPIPE) == 1) {
                sigset_t pipe;
                sigemptyset(&pipe);
                sigaddset(&pipe, SIGPIPE);
                timespec zero{0, 0};
                int saved = errno;
                while (sigtimedwait(&pipe, nullptr, &zero) == -1 && errno == EINTR) {
                }
                errno = saved;
            }
        }
        pthread_sigmask(SIG_SETMASK, &old_, nullptr);
    }
    SigpipeGuard(const SigpipeGuard&) = delete;
    SigpipeGuard& operator=(const SigpipeGuard&) = delete;

private:
    sigset_t old_;
    bool blocked_ = false;
    bool was_pending_ = false;
};

struct ReplyDeleter {
    void operator()(redisReply* r) const noexcept {
        if (r) freeReplyObject(r);
    }
};
using ReplyPtr = std::unique_ptr<redisReply, ReplyDeleter>;

class RedisTier final : public RedisTierBase {
public:
    explicit RedisTier(const RedisTierOptions& o) : prefix_(o.key_prefix), budget_(o.budget_bytes) {
        uint32_t ms = o.timeout_ms == 0 ? 1 : o.timeout_ms;
        timeout_ms_ = ms;
        tv_.tv_sec = static_cast<time_t>(ms / 1000);
        tv_.tv_usec = static_cast<suseconds_t>((ms % 1000) * 1000);
        std::string error;
        url_ok_ = parse_redis_url(o.url, &host_, &port_, &db_, &error);
        if (!url_ok_) last_error_ = error;
    }

    ~RedisTier() override {
        for (redisContext* c : idle_) redisFree(c);
    }

    void put(const TierKey& key, const uint8_t* framed, size_t n) noexcept override {
        try {
            put_impl(key, framed, n);
        } catch (...) {  // std::bad_alloc from a std::string: a dropped put
            std::lock_guard<std::mutex> l(mu_);
            ++s_.put_failures;
            ++s_.errors;
            last_error_ = "redis put: out of memory in the client";
        }
    }

    void put_many(const TierPut* puts, size_t n) noexcept override {
        if (n <= 1) {
            if (n == 1) put(puts[0].key, puts[0].framed, puts[0].n);
            return;
        }
        try {
            put_many_impl(puts, n);
        } catch (...) {
            std::lock_guard<std::mutex> l(mu_);
            ++s_.errors;
            last_error_ = "redis put: out of memory in the client";
        }
    }

    bool get(const TierKey& key, std::vector<uint8_t>* out) noexcept override {
        try {
            return get_impl(key, out);
        } catch (...) {
            std::lock_guard<std::mutex> l(mu_);
            ++s_.errors;
            last_error_ = "redis get: out of memory in the client";
            return false;
        }
    }

    bool contains(const TierKey& key) noexcept override {
        try {
            std::string k = redis_tier_key(prefix_, key);
            ReplyPtr r = command("EXISTS", [&](redisContext* c) {
                return static_cast<redisReply*>(redisCommand(c, "EXISTS %b", k.data(), k.size()));
            });
            return r && r->type == REDIS_REPLY_INTEGER && r->integer > 0;
        } catch (...) {
            return false;
        }
    }

    void remove(const TierKey& key) noexcept override {
        try {
            std::string k = redis_tier_key(prefix_, key);
            ReplyPtr r = command("DEL", [&](redisContext* c) {
                return static_cast<redisReply*>(redisCommand(c, "DEL %b", k.data(), k.size()));
            });
            if (r) {
                std::lock_guard<std::mutex> l(mu_);
                forget_locked(k);
            }
        } catch (...) {
        }
    }

    TierStats stats() const noexcept override {
        std::lock_guard<std::mutex> l(mu_);
        TierStats s = s_;
        s.bytes_stored = stored_;
        return s;
    }

    std::string last_error() const override {
        std::lock_guard<std::mutex> l(mu_);
        return last_error_;
    }

    RedisExtra extra() const noexcept override {
        std::lock_guard<std::mutex> l(mu_);
        return x_;
    }

    void reset_backoff() noexcept override {
        std::lock_guard<std::mutex> l(mu_);
        failures_ = 0;
        backoff_ms_ = kBackoffStartMs;
        skip_until_ = Clock::time_point{};
    }

private:
    struct Tracked {
        uint64_t bytes;
        std::list<std::string>::iterator lru;
    };

    // Budget for one payload of n bytes under k, with `pending` bytes of the same batch not yet
    // tracked: false (counted) when n alone exceeds the budget; else this process's least
    // recently used keys leave first (appended to *victims, forgotten here).
    bool make_room_locked(const std::string& k, size_t n, uint64_t pending, std::vector<std::string>* victims) {
        if (budget_ > 0 && n > budget_) {
            ++s_.put_failures;
            ++x_.over_budget;
            last_error_ = "redis put: a payload of " + std::to_string(n) + " bytes exceeds the tier budget of " +
                          std::to_string(budget_) + " bytes";
            return false;
        }
        auto it = tracked_.find(k);
        uint64_t already = it == tracked_.end() ? 0 : it->second.bytes;
        while (budget_ > 0 && stored_ + pending - already + n > budget_ && !lru_.empty()) {
            const std::string& victim = lru_.front();
            if (victim == k) {  // the key being replaced: its bytes are already subtracted
                lru_.splice(lru_.end(), lru_, lru_.begin());
                if (lru_.size() == 1) break;
                continue;
            }
            victims->push_back(victim);
            forget_locked(victim);
            ++s_.evictions;
        }
        return true;
    }

    void put_impl(const TierKey& key, const uint8_t* framed, size_t n) {
        std::string k = redis_tier_key(prefix_, key);
        std::vector<std::string> victims;
        {
            std::lock_guard<std::mutex> l(mu_);
            if (!make_room_locked(k, n, 0, &victims)) return;
        }
        for (const std::string& v : victims) {
            command("DEL", [&](redisContext* c) {
                return static_cast<redisReply*>(redisCommand(c, "DEL %b", v.data(), v.size()));
            });
        }
        ReplyPtr r = command("SET", [&](redisContext* c) {
            return static_cast<redisReply*>(redisCommand(c, "SET %b %b EX %d", k.data(), k.size(), framed, n,
                                                         kRedisTierTtlSeconds));
        });
        std::lock_guard<std::mutex> l(mu_);
        if (!r) {
            ++s_.put_failures;
            return;
        }
        if (r->type == REDIS_REPLY_STATUS) {
            ++s_.puts;
            s_.put_bytes += n;
            track_locked(k, n);
            return;
        }
        ++s_.put_failures;  // error replies are counted by command()
    }

    // One connection, every command appended before the first reply is read: the victims'
    // DELs, then the SETs (a victim that is also in the batch is deleted, then stored again).
    void put_many_impl(const TierPut* puts, size_t n) {
        std::vector<std::string> keys(n), victims;
        std::vector<char> send(n, 0);
        size_t n_send = 0;
        {
            std::lock_guard<std::mutex> l(mu_);
            uint64_t pending = 0;
            for (size_t i = 0; i < n; ++i) {
                keys[i] = redis_tier_key(prefix_, puts[i].key);
                if (!make_room_locked(keys[i], puts[i].n, pending, &victims)) continue;
                send[i] = 1;
                ++n_send;
                pending += puts[i].n;
            }
        }
        if (n_send == 0 && victims.empty()) return;
        redisContext* c = acquire("SET (pipelined)");
        if (!c) {
            std::lock_guard<std::mutex> l(mu_);
            s_.put_failures += n_send;
            return;
        }
        size_t appended = 0, replies = 0;
        bool broken = false;
        int saved = 0;
        std::vector<char> stored(n, 0);
        size_t error_replies = 0;
        std::string first_error;
        {
            SigpipeGuard guard;
            errno = 0;
            for (const std::string& v : victims) {
                if (redisAppendCommand(c, "DEL %b", v.data(), v.size()) != REDIS_OK) broken = true;
                else ++appended;
            }
            for (size_t i = 0; i < n && !broken; ++i) {
                if (!send[i]) continue;
                if (redisAppendCommand(c, "SET %b %b EX %d", keys[i].data(), keys[i].size(), puts[i].framed, puts[i].n,
                                       kRedisTierTtlSeconds) != REDIS_OK)
                    broken = true;
                else ++appended;
            }
            // Replies in order: victims' DELs first, then the SETs.
            size_t i = 0;
            while (!broken && replies < appended) {
                void* raw = nullptr;
                if (redisGetReply(c, &raw) != REDIS_OK || raw == nullptr) {
                    broken = true;
                    break;
                }
                ReplyPtr r(static_cast<redisReply*>(raw));
                const size_t k = replies++;
                if (k < victims.size()) continue;
                while (!send[i]) ++i;
                if (r->type == REDIS_REPLY_STATUS) stored[i] = 1;
                else if (r->type == REDIS_REPLY_ERROR) {
                    ++error_replies;
                    if (first_error.empty()) first_error.assign(r->str, r->len);
                }
                ++i;
            }
            saved = errno;
        }
        const bool timed_out = broken && is_timeout(c, saved);
        std::string msg;
        if (broken) {
            msg = std::string("redis SET (pipelined): ") + (c->err ? c->errstr : "no reply");
            if (timed_out) msg += " (timeout " + std::to_string(timeout_ms_) + " ms)";
        }
        release(c, !broken);
        std::lock_guard<std::mutex> l(mu_);
        if (broken) fail_locked(timed_out, std::move(msg));
        else {
            failures_ = 0;
            backoff_ms_ = kBackoffStartMs;
        }
        if (error_replies) {
            s_.errors += error_replies;
            x_.error_replies += error_replies;
            last_error_ = "redis SET (pipelined): " + first_error;
        }
        for (size_t i = 0; i < n; ++i) {
            if (!send[i]) continue;
            if (!stored[i]) {
                ++s_.put_failures;
                continue;
            }
            ++s_.puts;
            s_.put_bytes += puts[i].n;
            track_locked(keys[i], puts[i].n);
        }
    }

    bool get_impl(const TierKey& key, std::vector<uint8_t>* out) {
        std::string k = redis_tier_key(prefix_, key);
        {
            std::lock_guard<std::mutex> l(mu_);
            ++s_.gets;
        }
        ReplyPtr r = command("GET", [&](redisContext* c) {
            return static_cast<redisReply*>(redisCommand(c, "GET %b", k.data(), k.size()));
        });
        if (!r) return false;  // counted by command()
        if (r->type == REDIS_REPLY_STRING) {
            out->assign(reinterpret_cast<const uint8_t*>(r->str), reinterpret_cast<const uint8_t*>(r->str) + r->len);
            std::lock_guard<std::mutex> l(mu_);
            ++s_.hits;
            s_.get_bytes += static_cast<uint64_t>(r->len);
            auto it = tracked_.find(k);
            if (it != tracked_.end()) lru_.splice(lru_.end(), lru_, it->second.lru);
            return true;
        }
        std::lock_guard<std::mutex> l(mu_);
        if (r->type == REDIS_REPLY_NIL) {
            ++s_.misses;
            forget_locked(k);  // expired or evicted by the server
        }
        // An error reply was counted by command(); any other type (WRONGTYPE is
        // an error reply) cannot come from GET.
        return false;
    }

    void track_locked(const std::string& k, uint64_t n) {
        auto it = tracked_.find(k);
        if (it != tracked_.end()) {
            stored_ -= it->second.bytes;
            it->second.bytes = n;
            lru_.splice(lru_.end(), lru_, it->second.lru);
        } else {
            lru_.push_back(k);
            tracked_.emplace(k, Tracked{n, std::prev(lru_.end())});
        }
        stored_ += n;
    }

    void forget_locked(const std::string& k) {
        auto it = tracked_.find(k);
        if (it == tracked_.end()) return;
        stored_ -= it->second.bytes;
        lru_.erase(it->second.lru);
        tracked_.erase(it);
    }

    static bool is_timeout(const redisContext* c, int saved_errno) {
        if (saved_errno == EAGAIN || saved_errno == EWOULDBLOCK || saved_errno == ETIMEDOUT) return true;
        return std::strstr(c->errstr, "timed out") != nullptr || std::strstr(c->errstr, "temporarily unavailable") != nullptr;
    }

    // A connection from the pool, or a new one; nullptr (counted) on failure or back-off.
    redisContext* acquire(const char* what) {
        std::unique_lock<std::mutex> l(mu_);
        if (!url_ok_) {
            ++s_.errors;  // last_error_ already names the bad URL
            return nullptr;
        }
        if (failures_ >= kFailuresBeforeBackoff && Clock::now() < skip_until_) {
            ++x_.skipped;
            ++s_.errors;
            return nullptr;
        }
        auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms_);
        while (idle_.empty() && open_ >= kMaxConnections) {
            if (cv_.wait_until(l, deadline) == std::cv_status::timeout && idle_.empty() && open_ >= kMaxConnections) {
                ++s_.timeouts;
                last_error_ = std::string("redis ") + what + ": no free connection within " + std::to_string(timeout_ms_) + " ms";
                return nullptr;
            }
        }
        if (!idle_.empty()) {
            redisContext* c = idle_.back();
            idle_.pop_back();
            return c;
        }
        ++open_;
        l.unlock();

        std::string err;
        bool timed_out = false;
        redisContext* c = nullptr;
        {
            SigpipeGuard guard;
            errno = 0;
            c = redisConnectWithTimeout(host_.c_str(), port_, tv_);
            int saved = errno;
            if (c == nullptr) {
                err = "cannot allocate a hiredis context";
            } else if (c->err) {
                timed_out = is_timeout(c, saved);
                err = c->errstr;
            } else if (redisSetTimeout(c, tv_) != REDIS_OK) {
                err = c->errstr[0] ? c->errstr : "redisSetTimeout failed";
            } else if (db_ != 0) {
                ReplyPtr r(static_cast<redisReply*>(redisCommand(c, "SELECT %d", db_)));
                if (!r || r->type == REDIS_REPLY_ERROR) {
                    err = r ? std::string("SELECT ") + std::to_string(db_) + ": " + std::string(r->str, r->len)
                            : std::string(c->errstr);
                    if (!r) timed_out = is_timeout(c, errno);
                }
            }
        }
        if (err.empty()) {
            std::lock_guard<std::mutex> g(mu_);
            ++x_.connects;
            return c;
        }
        if (c) redisFree(c);
        std::lock_guard<std::mutex> g(mu_);
        --open_;
        cv_.notify_one();
        fail_locked(timed_out, std::string("redis connect to ") + host_ + ":" + std::to_string(port_) + ": " + err);
        return nullptr;
    }

    void release(redisContext* c, bool healthy) {
        std::lock_guard<std::mutex> l(mu_);
        if (healthy) {
            idle_.push_back(c);
        } else {
            redisFree(c);
            --open_;
        }
        cv_.notify_one();
    }

    void fail_locked(bool timed_out, std::string message) {
        if (timed_out) ++s_.timeouts;
        else ++s_.errors;
        last_error_ = std::move(message);
        if (++failures_ >= kFailuresBeforeBackoff) {
            skip_until_ = Clock::now() + std::chrono::milliseconds(backoff_ms_);
            backoff_ms_ = std::min(backoff_ms_ * 2, kBackoffMaxMs);
        }
    }

    // Runs one command on a pooled connection. nullptr: a connection-level fault
    // (counted). An error reply is counted here and returned to the caller.
    template <class F>
    ReplyPtr command(const char* what, F&& issue) {
        redisContext* c = acquire(what);
        if (!c) return nullptr;
        ReplyPtr r;
        int saved = 0;
        {
            SigpipeGuard guard;
            errno = 0;
            r.reset(issue(c));
            saved = errno;
        }
        if (!r || c->err) {
            bool timed_out = is_timeout(c, saved);
            std::string msg = std::string("redis ") + what + ": " + (c->err ? c->errstr : "no reply");
            if (timed_out) msg += " (timeout " + std::to_string(timeout_ms_) + " ms)";
            release(c, false);
            std::lock_guard<std::mutex> l(mu_);
            fail_locked(timed_out, std::move(msg));
            return nullptr;
        }
        release(c, true);
        std::lock_guard<std::mutex> l(mu_);
        failures_ = 0;
        backoff_ms_ = kBackoffStartMs;
        if (r->type == REDIS_REPLY_ERROR) {
            ++s_.errors;
            ++x_.error_replies;
            last_error_ = std::string("redis ") + what + ": " + std::string(r->str, r->len);
        }
        return r;
    }

    const std::string prefix_;
    const uint64_t budget_;
    uint32_t timeout_ms_ = 200;
    timeval tv_{};
    std::string host_;
    int port_ = 6379;
    int db_ = 0;
    bool url_ok_ = false;

    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::vector<redisContext*> idle_;
    int open_ = 0;  // connections in idle_ or in use
    int failures_ = 0;
    int backoff_ms_ = kBackoffStartMs;
    Clock::time_point skip_until_{};
    TierStats s_;
    RedisExtra x_;
    std::string last_error_;
    // Client-side accounting of this process's stored keys (budget, LRU).
    std::list<std::string> lru_;
    std::unordered_map<std::string, Tracked> tracked_;
    uint64_t stored_ = 0;
};

#endif  // KVRT_HAVE_HIREDIS

}  // namespace

std::unique_ptr<BlockTier> make_redis_tier(const RedisTierOptions& options) {
    try {
#ifdef KVRT_HAVE_HIREDIS
        return std::make_unique<RedisTier>(options);
#else
        return std::make_unique<RedisTierStub>();
#endif
    } catch (...) {
        return nullptr;
    }
}

RedisTierCounters redis_tier_counters(const BlockTier& tier) noexcept {
    RedisTierCounters out;
    if (const auto* t = dynamic_cast<const RedisTierBase*>(&tier)) {
        RedisExtra x = t->extra();
        out.skipped = x.skipped;
        out.connects = x.connects;
        out.error_replies = x.error_replies;
        out.over_budget = x.over_budget;
    }
    return out;
}

void redis_tier_reset_backoff(BlockTier& tier) noexcept {
    if (auto* t = dynamic_cast<RedisTierBase*>(&tier)) t->reset_backoff();
}

bool redis_tier_available() noexcept {
#ifdef KVRT_HAVE_HIREDIS
    return true;
#else
    return false;
#endif
}

}  // namespace kvrt::cache
