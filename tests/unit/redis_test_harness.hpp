// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Redis for the tests of the shared prefix-cache tier.
//
//  - The shared test server: $KVRT_TEST_REDIS_URL (ctest sets it from the CMake
//    variable KVRT_TEST_REDIS_URL; scripts/test.sh starts a redis-server there).
//    KVRT_REDIS_OR_NOT_RUN() at the top of a test: when that server is not
//    reachable the test FAILS if CI=true or KVRT_REQUIRE_REDIS=1, and otherwise
//    prints the marker "KVRT_TEST_NOT_RUN" and returns; ctest's
//    SKIP_REGULAR_EXPRESSION turns that marker into "not run" (never a pass).
//  - PrivateRedis: a redis-server of the test's own (free port, no persistence,
//    optional extra flags) for the fault tests that kill it or fill it; killed
//    (SIGKILL) and reaped by its destructor.
//  - SilentServer: a listening TCP socket that never accepts or answers (a hung
//    Redis: the client's command times out).
#pragma once

#include "cache/redis_tier.hpp"
#include "test_support.hpp"

#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <netinet/in.h>
#include <memory>
#include <random>
#include <spawn.h>
#include <string>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

extern char** environ;

namespace kvrt::test {

inline std::string redis_test_url() {
    if (const char* u = std::getenv("KVRT_TEST_REDIS_URL"); u && *u) return u;
    return "redis://127.0.0.1:6390";
}

inline bool redis_required() {
    const char* r = std::getenv("KVRT_REQUIRE_REDIS");
    return in_ci() || (r && std::string(r) == "1");
}

// Whether a Redis answers at url: one EXISTS through a fresh tier.
inline bool redis_reachable(const std::string& url, std::string* why = nullptr) {
    if (!cache::redis_tier_available()) {
        if (why) *why = "kvrt was built without Redis support (KVRT_WITH_REDIS=OFF)";
        return false;
    }
    cache::RedisTierOptions o;
    o.url = url;
    o.timeout_ms = 1000;
    auto t = cache::make_redis_tier(o);
    if (!t) return false;
    t->contains(cache::TierKey{});
    cache::TierStats s = t->stats();
    if (s.errors == 0 && s.timeouts == 0) return true;
    if (why) *why = t->last_error();
    return false;
}

// A key prefix of this test run alone (parallel ctest processes share the server).
inline std::string unique_key_prefix(const char* tag) {
    std::random_device rd;
    return std::string("kvrt-test:") + tag + ":" + std::to_string(getpid()) + ":" + std::to_string(rd()) + ":";
}

// A TCP port nothing listens on right now (bound to port 0, then released).
inline int free_tcp_port() {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    socklen_t len = sizeof a;
    REQUIRE(getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
    int port = ntohs(a.sin_port);
    close(fd);
    return port;
}

inline std::string redis_server_binary() {
    if (const char* b = std::getenv("KVRT_TEST_REDIS_SERVER"); b && *b) return b;
    for (const char* p : {"/usr/bin/redis-server", "/usr/local/bin/redis-server"})
        if (access(p, X_OK) == 0) return p;
    return "";
}

class PrivateRedis {
public:
    // Starts redis-server on a free port with extra flags (e.g. {"--maxmemory", "1mb"}).
    // ok() false (and why()) when redis-server is missing or did not answer in 10 s.
    explicit PrivateRedis(std::vector<std::string> extra = {}, int port = 0) : extra_(std::move(extra)) {
        port_ = port ? port : free_tcp_port();
        start();
    }
    ~PrivateRedis() { kill(); }
    PrivateRedis(const PrivateRedis&) = delete;
    PrivateRedis& operator=(const PrivateRedis&) = delete;

    bool ok() const { return pid_ > 0; }
    const std::string& why() const { return why_; }
    int port() const { return port_; }
    std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }

    // SIGKILL, as a crashed server; waits for it to exit.
    void kill() {
        if (pid_ <= 0) return;
        ::kill(pid_, SIGKILL);
        int st = 0;
        waitpid(pid_, &st, 0);
        pid_ = -1;
    }
    // Starts it again on the same port.
    bool restart() {
        kill();
        start();
        return ok();
    }

private:
    void start() {
        std::string bin = redis_server_binary();
        if (bin.empty()) {
            why_ = "redis-server not found (install redis-server; scripts/setup.sh does)";
            return;
        }
        std::vector<std::string> args = {bin, "--port", std::to_string(port_), "--bind", "127.0.0.1",
                                         "--save", "", "--appendonly", "no", "--daemonize", "no",
                                         "--loglevel", "warning", "--logfile", "/dev/null"};
        for (auto& e : extra_) args.push_back(e);
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        pid_t pid = -1;
        if (posix_spawn(&pid, bin.c_str(), nullptr, nullptr, argv.data(), environ) != 0) {
            why_ = "posix_spawn(redis-server) failed";
            return;
        }
        pid_ = pid;
        for (int i = 0; i < 200; ++i) {  // up to ~10 s for the server to answer
            if (redis_reachable(url())) return;
            int st = 0;
            if (waitpid(pid_, &st, WNOHANG) == pid_) {
                pid_ = -1;
                why_ = "redis-server exited at start (port " + std::to_string(port_) + " taken?)";
                return;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        kill();
        why_ = "redis-server did not answer on port " + std::to_string(port_);
    }

    std::vector<std::string> extra_;
    int port_ = 0;
    pid_t pid_ = -1;
    std::string why_;
};

// Accepts TCP connections into its backlog and never reads or answers.
class SilentServer {
public:
    SilentServer() {
        fd_ = socket(AF_INET, SOCK_STREAM, 0);
        REQUIRE(fd_ >= 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = 0;
        REQUIRE(bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
        REQUIRE(listen(fd_, 64) == 0);
        socklen_t len = sizeof a;
        REQUIRE(getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0);
        port_ = ntohs(a.sin_port);
    }
    ~SilentServer() { close(fd_); }
    SilentServer(const SilentServer&) = delete;
    SilentServer& operator=(const SilentServer&) = delete;
    std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }

private:
    int fd_ = -1;
    int port_ = 0;
};

// A Redis tier on `url` under key prefix `prefix` (REQUIRE'd to construct).
inline std::unique_ptr<cache::BlockTier> redis_tier_at(const std::string& url, const std::string& prefix,
                                                       uint64_t budget = 0, uint32_t timeout_ms = 1000) {
    cache::RedisTierOptions o;
    o.url = url;
    o.key_prefix = prefix;
    o.budget_bytes = budget;
    o.timeout_ms = timeout_ms;
    auto t = cache::make_redis_tier(o);
    REQUIRE(t != nullptr);
    return t;
}

// n bytes of a pattern picked by `seed`, with an embedded NUL (values are binary-safe).
inline std::vector<uint8_t> tier_payload(size_t n, uint8_t seed) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed * 31 + i * 7 + (i >> 8));
    if (n > 2) v[1] = 0;
    return v;
}

}  // namespace kvrt::test

// At the top of a test that needs the shared test server: binds `url` to it, or
// fails (CI / KVRT_REQUIRE_REDIS=1) or reports the test as not run.
#define KVRT_REDIS_OR_NOT_RUN(url)                                                                    \
    const std::string url = ::kvrt::test::redis_test_url();                                           \
    do {                                                                                              \
        std::string why_;                                                                             \
        if (!::kvrt::test::redis_reachable(url, &why_)) {                                             \
            if (::kvrt::test::redis_required())                                                       \
                FAIL("Redis test server " << url << " is not reachable (" << why_                     \
                                          << ") and CI=true or KVRT_REQUIRE_REDIS=1");                \
            std::printf("KVRT_TEST_NOT_RUN: Redis test server %s is not reachable: %s\n", url.c_str(), why_.c_str()); \
            return;                                                                                   \
        }                                                                                             \
    } while (0)

// For a test that needs a private redis-server: fails when required, else not run.
#define KVRT_PRIVATE_REDIS_OR_NOT_RUN(server)                                                                   \
    do {                                                                                                        \
        if (!(server).ok()) {                                                                                   \
            if (::kvrt::test::redis_required())                                                                 \
                FAIL("cannot start a private redis-server: " << (server).why());                                \
            std::printf("KVRT_TEST_NOT_RUN: cannot start a private redis-server: %s\n", (server).why().c_str());   \
            return;                                                                                             \
        }                                                                                                       \
    } while (0)
