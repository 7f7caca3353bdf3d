// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

#include "cache/disk_tier.hpp"

#include "cache/tier_envelope.hpp"
#include "util/error.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <ctime>
#include <dirent.h>
#include <fcntl.h>
#include <mutex>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace kvrt::cache {

namespace {

constexpr const char* kExt = ".kvb";

bool mkdirs(const std::string& dir) {
    std::string cur;
    size_t i = 0;
    while (i <= dir.size()) {
        size_t j = dir.find('/', i);
        if (j == std::string::npos) j = dir.size();
        cur = dir.substr(0, j);
        if (!cur.empty() && ::mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST) return false;
        i = j + 1;
    }
    struct stat st {};
    return ::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

class DiskTier final : public BlockTier {
public:
    explicit DiskTier(const DiskTierOptions& o) : dir_(o.dir), budget_(o.budget_bytes) {
        KVRT_CHECK(!dir_.empty(), KVRT_ERR_INVALID_ARGUMENT, "disk tier: the directory is empty");
        while (dir_.size() > 1 && dir_.back() == '/') dir_.pop_back();
        KVRT_CHECK(mkdirs(dir_), KVRT_ERR_IO,
                   "disk tier: cannot create directory " + dir_ + ": " + std::strerror(errno));
        KVRT_CHECK(::access(dir_.c_str(), W_OK | R_OK | X_OK) == 0, KVRT_ERR_IO,
                   "disk tier: directory " + dir_ + " is not readable and writable");
        uint64_t total = 0;
        scan([&](const std::string&, const struct stat& st) { total += uint64_t(st.st_size); }, true);
        stored_.store(total);
    }

    const char* kind() const noexcept override { return "disk"; }

    void put(const TierKey& key, const uint8_t* framed, size_t n) noexcept override {
        try {
            const std::string path = path_of(key);
            const std::string tmp = dir_ + "/.tmp." + tier_key_hex(key) + "." + std::to_string(::getpid()) + "." +
                                    std::to_string(counter_++);
            int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
            if (fd < 0) return put_failed("cannot create " + tmp);
            size_t off = 0;
            while (off < n) {
                ssize_t w = ::write(fd, framed + off, n - off);
                if (w < 0 && errno == EINTR) continue;
                if (w <= 0) {
                    std::string why = "cannot write " + tmp;
                    put_failed(why);
                    ::close(fd);
                    ::unlink(tmp.c_str());
                    return;
                }
                off += size_t(w);
            }
            if (::close(fd) != 0 || ::rename(tmp.c_str(), path.c_str()) != 0) {
                put_failed("cannot rename " + tmp + " to " + path);
                ::unlink(tmp.c_str());
                return;
            }
            {
                std::lock_guard<std::mutex> lock(mu_);
                st_.puts++;
                st_.put_bytes += n;
            }
            if (stored_.fetch_add(n) + n > budget_ && budget_ > 0) enforce_budget();
        } catch (...) {
            put_failed("out of memory");
        }
    }

    bool get(const TierKey& key, std::vector<uint8_t>* out) noexcept override {
        try {
            const std::string path = path_of(key);
            {
                std::lock_guard<std::mutex> lock(mu_);
                st_.gets++;
            }
            int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
            if (fd < 0) {
                std::lock_guard<std::mutex> lock(mu_);
                if (errno == ENOENT) st_.misses++;
                else {
                    st_.errors++;
                    err_ = "cannot open " + path + ": " + std::strerror(errno);
                }
                return false;
            }
            struct stat st {};
            bool ok = ::fstat(fd, &st) == 0 && st.st_size >= 0 && uint64_t(st.st_size) < (uint64_t(1) << 36);
            if (ok) {
                out->resize(size_t(st.st_size));
                size_t off = 0;
                while (off < out->size()) {
                    ssize_t r = ::read(fd, out->data() + off, out->size() - off);
                    if (r < 0 && errno == EINTR) continue;
                    if (r <= 0) break;
                    off += size_t(r);
                }
                out->resize(off);
                // Last use, for the LRU budget (explicit: atime is often not kept).
                ::futimens(fd, nullptr);
            }
            ::close(fd);
            const uint8_t* p = nullptr;
            size_t pn = 0;
            std::string why;
            if (!ok || !tier_unframe(key, out->data(), out->size(), &p, &pn, &why)) {
                if (ok) {
                    ::unlink(path.c_str());  // a torn, corrupted or foreign entry: never again
                    stored_.fetch_sub(std::min<uint64_t>(stored_.load(), uint64_t(st.st_size)));
                }
                std::lock_guard<std::mutex> lock(mu_);
                if (ok) st_.corrupt++;
                else st_.errors++;
                err_ = path + ": " + (ok ? why : std::string("cannot read"));
                out->clear();
                return false;
            }
            std::lock_guard<std::mutex> lock(mu_);
            st_.hits++;
            st_.get_bytes += out->size();
            return true;
        } catch (...) {
            std::lock_guard<std::mutex> lock(mu_);
            st_.errors++;
            err_ = "out of memory";
            return false;
        }
    }

    bool contains(const TierKey& key) noexcept override {
        try {
            struct stat st {};
            return ::stat(path_of(key).c_str(), &st) == 0;
        } catch (...) {
            return false;
        }
    }

    void remove(const TierKey& key) noexcept override {
        try {
            struct stat st {};
            const std::string p = path_of(key);
            if (::stat(p.c_str(), &st) == 0 && ::unlink(p.c_str()) == 0)
                stored_.fetch_sub(std::min<uint64_t>(stored_.load(), uint64_t(st.st_size)));
        } catch (...) {
        }
    }

    TierStats stats() const noexcept override {
        std::lock_guard<std::mutex> lock(mu_);
        TierStats s = st_;
        s.bytes_stored = stored_.load();
        return s;
    }

    std::string last_error() const override {
        std::lock_guard<std::mutex> lock(mu_);
        return err_;
    }

private:
    std::string path_of(const TierKey& key) const { return dir_ + "/" + tier_key_hex(key) + kExt; }

    void put_failed(const std::string& why) noexcept {
        try {
            std::lock_guard<std::mutex> lock(mu_);
            st_.put_failures++;
            st_.errors++;
            err_ = why + ": " + std::strerror(errno);
        } catch (...) {
        }
    }

    // Calls f(path, stat) for every entry; with clean_tmp, removes temporary files of dead writers.
    template <class F>
    void scan(F&& f, bool clean_tmp) {
        DIR* d = ::opendir(dir_.c_str());
        if (!d) return;
        while (struct dirent* e = ::readdir(d)) {
            const std::string name = e->d_name;
            const std::string path = dir_ + "/" + name;
            if (name.rfind(".tmp.", 0) == 0) {
                if (!clean_tmp) continue;
                // .tmp.<hex>.<pid>.<n>: remove when the writer is gone.
                const size_t a = name.find('.', 5), b = a == std::string::npos ? a : name.find('.', a + 1);
                if (b == std::string::npos) continue;
                const long pid = std::strtol(name.substr(a + 1, b - a - 1).c_str(), nullptr, 10);
                if (pid > 0 && ::kill(pid_t(pid), 0) != 0 && errno == ESRCH) ::unlink(path.c_str());
                continue;
            }
            if (name.size() != 64 + 4 || name.compare(64, 4, kExt) != 0) continue;
            struct stat st {};
            if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) f(path, st);
        }
        ::closedir(d);
    }

    void enforce_budget() noexcept {
        try {
            std::unique_lock<std::mutex> lock(evict_mu_, std::try_to_lock);
            if (!lock.owns_lock()) return;  // another thread is at it
            struct Entry {
                std::string path;
                struct timespec used;
                uint64_t bytes;
            };
            std::vector<Entry> es;
            uint64_t total = 0;
            scan([&](const std::string& p, const struct stat& st) {
                es.push_back({p, st.st_mtim, uint64_t(st.st_size)});
                total += uint64_t(st.st_size);
            }, true);
            std::sort(es.begin(), es.end(), [](const Entry& a, const Entry& b) {
                return a.used.tv_sec != b.used.tv_sec ? a.used.tv_sec < b.used.tv_sec : a.used.tv_nsec < b.used.tv_nsec;
            });
            const uint64_t target = budget_ - budget_ / 10;
            uint64_t removed = 0;
            for (const Entry& e : es) {
                if (total <= target) break;
                if (::unlink(e.path.c_str()) == 0) removed++;
                total -= e.bytes;
            }
            stored_.store(total);
            std::lock_guard<std::mutex> l2(mu_);
            st_.evictions += removed;
        } catch (...) {
        }
    }

    std::string dir_;
    uint64_t budget_;
    std::atomic<uint64_t> stored_{0};
    std::atomic<uint64_t> counter_{0};
    mutable std::mutex mu_;
    std::mutex evict_mu_;
    TierStats st_;
    std::string err_;
};

}  // namespace

std::unique_ptr<BlockTier> make_disk_tier(const DiskTierOptions& opt) { return std::make_unique<DiskTier>(opt); }

}  // namespace kvrt::cache
