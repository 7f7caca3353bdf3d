// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

#include "model/load_tasks.hpp"

#include <omp.h>

#include <algorithm>
#include <exception>

namespace kvrt {

void LoadTasks::add(uint64_t cost, const char* stage, std::function<void(Tick&)> fn, bool on_caller) {
    tasks_.push_back(Task{cost, stage, std::move(fn), on_caller});
    total_ += cost;
}

bool LoadTasks::Tick::advance(uint64_t cost) {
    advanced_ += cost;
    owner_.done_.fetch_add(cost, std::memory_order_relaxed);
    if (reports_) owner_.progress(stage_);  // may throw: the callback cancelled
    return !owner_.stop_.load(std::memory_order_relaxed);
}

void LoadTasks::progress(const char* stage) {
    const double done = static_cast<double>(done_.load(std::memory_order_relaxed));
    const float f = total_ ? from_ + (to_ - from_) * static_cast<float>(std::min(1.0, done / static_cast<double>(total_)))
                           : from_;
    last_ = std::max(last_, f);  // only thread 0 reports, so last_ needs no lock
    (*report_)(last_, stage);
}

void LoadTasks::run_one(Task& t, bool reports, std::exception_ptr& err) {
    if (stop_.load(std::memory_order_relaxed)) return;
    try {
        Tick tick(*this, t.stage, reports);
        t.fn(tick);
        tick.advance(t.cost > tick.advanced_ ? t.cost - tick.advanced_ : 0);
    } catch (...) {
#pragma omp critical(kvrt_load_tasks_err)
        if (!err) err = std::current_exception();
        stop_ = true;
    }
}

void LoadTasks::run(int n_threads, float from, float to, const Report& report) {
    report_ = &report;
    from_ = last_ = from;
    to_ = to;
    done_ = 0;
    stop_ = false;
    std::exception_ptr err;
    std::atomic<size_t> next{0};
    const int nt = n_threads > 0 ? n_threads : omp_get_max_threads();
#pragma omp parallel num_threads(nt)
    {
        const bool caller = omp_get_thread_num() == 0;
        if (caller)
            for (Task& t : tasks_)
                if (t.on_caller) run_one(t, true, err);
        // The rest in order, each to the next thread free (dynamic scheduling).
        for (size_t i = next.fetch_add(1); i < tasks_.size(); i = next.fetch_add(1))
            if (!tasks_[i].on_caller) run_one(tasks_[i], caller, err);
    }
    report_ = nullptr;
    if (err) std::rethrow_exception(err);
}

}  // namespace kvrt
