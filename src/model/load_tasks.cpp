// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

#include "model/load_tasks.hpp"

#include <omp.h>

#include <algorithm>
#include <exception>

namespace kvrt {

void LoadTasks::add(uint64_t cost, const char* stage, std::function<void(Tick&)> fn) {
    tasks_.push_back(Task{cost, stage, std::move(fn)});
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

void LoadTasks::run(int n_threads, float from, float to, const Report& report) {
    report_ = &report;
    from_ = last_ = from;
    to_ = to;
    done_ = 0;
    stop_ = false;
    std::exception_ptr err;
    const int nt = n_threads > 0 ? n_threads : omp_get_max_threads();
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
    for (size_t i = 0; i < tasks_.size(); ++i) {
        if (stop_.load(std::memory_order_relaxed)) continue;
        try {
            const bool reports = omp_get_thread_num() == 0;
            Tick tick(*this, tasks_[i].stage, reports);
            tasks_[i].fn(tick);
            tick.advance(tasks_[i].cost > tick.advanced_ ? tasks_[i].cost - tick.advanced_ : 0);
        } catch (...) {
#pragma omp critical(kvrt_load_tasks_err)
            if (!err) err = std::current_exception();
            stop_ = true;
        }
    }
    report_ = nullptr;
    if (err) std::rethrow_exception(err);
}

}  // namespace kvrt
