// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The work of a model load that runs on several threads (model.cpp): the file's fingerprint
// hash, the tokenizer's build and the repacking of every matmul weight, in slices of rows, do
// not depend on one another, so they share one parallel region and no thread waits for another
// while work is left. Internal.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <vector>

namespace kvrt {

class LoadTasks {
public:
    // What a running task sees: advance() adds `cost` of its own to the progress (a task that
    // runs long, such as the hash, reports as it goes; what it has not advanced of its cost by
    // its end is added then) and returns false once the load is stopping (another task failed or
    // the progress callback cancelled): the task should return.
    class Tick {
    public:
        bool advance(uint64_t cost);

    private:
        friend class LoadTasks;
        Tick(LoadTasks& owner, const char* stage, bool reports) : owner_(owner), stage_(stage), reports_(reports) {}
        LoadTasks& owner_;
        const char* stage_;
        bool reports_;
        uint64_t advanced_ = 0;
    };
    using Report = std::function<void(float, const char*)>;

    // A task of `cost` (its share of the progress: e.g. the bytes it reads), reported under
    // `stage` (a static string). Tasks start in the order added: add the long ones first. A task
    // added `on_caller` runs on the calling thread before it takes any other: one that reports as
    // it goes (the hash) then moves the progress however the others fall to the threads.
    void add(uint64_t cost, const char* stage, std::function<void(Tick&)> fn, bool on_caller = false);

    // Runs every task on n_threads OpenMP threads (0: the OpenMP default). `report` is called on
    // the calling thread only (OpenMP's thread 0: progress callbacks run on the thread that made
    // the call), with fractions from `from` to `to`, non-decreasing; if it throws (a cancelled
    // load), or a task does, the tasks not started are skipped, the running ones are told to stop
    // (Tick::advance), and the first exception is rethrown here once every thread has finished.
    void run(int n_threads, float from, float to, const Report& report);

private:
    struct Task {
        uint64_t cost;
        const char* stage;
        std::function<void(Tick&)> fn;
        bool on_caller;
    };
    void progress(const char* stage);
    void run_one(Task& t, bool reports, std::exception_ptr& err);

    std::vector<Task> tasks_;
    uint64_t total_ = 0;
    std::atomic<uint64_t> done_{0};
    std::atomic<bool> stop_{false};
    const Report* report_ = nullptr;
    float from_ = 0.0f, to_ = 1.0f, last_ = 0.0f;
};

}  // namespace kvrt
