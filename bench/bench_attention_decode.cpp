// bench_attention_decode: paged GQA decode attention (one query per sequence) vs the
// STREAM read bandwidth measured in the same run. Metric: KV bytes read per second
// (K and V rows of every visible position, each read once for the whole query group).
// Goal (issue 3): >= 0.85 x STREAM read when the KV is larger than the last-level cache.
//   bench_attention_decode [--quick]
#include "baselines.hpp"
#include "bench_kv_fixture.hpp"
#include "kernels/attention.hpp"
#include "kernels/isa.hpp"

#include <cmath>
#include <cstring>
#include <string>

using namespace kvrt;
using namespace kvrt::bench;

int main(int argc, char** argv) {
    use_passive_omp_wait(argv);
    const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
    const int max_t = std::min(2, std::max(1, omp_get_max_threads()));
    double stream[3] = {0, 0, 0};
    for (int t = 1; t <= max_t; ++t) {
        stream[t] = stream_read(t, 0, quick ? 2 : 5);
        emit("attention_decode", "stream_read", stream[t] / 1e9, "GB/s", "\"threads\":" + std::to_string(t));
    }
    struct Shape {
        int h, hkv, d;
    };
    const Shape shapes[] = {{9, 3, 64}, {32, 8, 128}};
    const size_t llc = llc_bytes();
    for (const Shape& s : shapes)
        for (DType dt : {DType::BF16, DType::F32}) {
            for (int64_t n : {int64_t(512), int64_t(8192), int64_t(131072)}) {
                if (quick && n > 8192) continue;
                if (dt == DType::F32 && s.h == 32 && n > 8192 && !quick) continue;  // 1 GiB: skip
                BenchKV kv(n, s.hkv, s.d, dt, 16);
                AttnParams p;
                p.n_heads = s.h;
                p.head_dim = s.d;
                p.scale = 1.0f / std::sqrt(float(s.d));
                std::vector<float> q(size_t(s.h) * s.d, 0.01f), out(q.size());
                DecodeSeq seq{&kv.kv, q.data(), out.data(), nullptr, int32_t(n - 1)};
                for (int t = 1; t <= max_t; ++t) {
                    omp_set_num_threads(t);
                    double sec = time_best([&] { cpu::attention_decode(&seq, 1, p); }, quick ? 0.05 : 0.3);
                    double bps = double(kv.payload_bytes) / sec;
                    char extra[256];
                    std::snprintf(extra, sizeof extra,
                                  "\"heads\":\"%d/%d\",\"head_dim\":%d,\"kv\":\"%s\",\"keys\":%lld,\"threads\":%d,"
                                  "\"kv_mib\":%.1f,\"beyond_llc\":%s,\"us\":%.1f,\"isa\":\"%s\"",
                                  s.h, s.hkv, s.d, dtype_name(dt), (long long)n, t, kv.payload_bytes / 1048576.0,
                                  kv.payload_bytes > llc ? "true" : "false", sec * 1e6, isa_name(isa_active()));
                    emit_vs("attention_decode", "kv_read_bandwidth", bps / 1e9, "GB/s", "stream_read", stream[t] / 1e9,
                            extra);
                }
            }
        }
    // A batch of 8 sequences of different lengths (one decode step of a serving batch).
    {
        const Shape s{9, 3, 64};
        std::vector<std::unique_ptr<BenchKV>> kvs;
        std::vector<DecodeSeq> seqs;
        std::vector<float> q(size_t(s.h) * s.d * 8, 0.01f), out(q.size());
        size_t bytes = 0;
        for (int i = 0; i < 8; ++i) {
            int64_t n = quick ? 1000 + 500 * i : 4000 + 3000 * i;
            kvs.emplace_back(new BenchKV(n, s.hkv, s.d, DType::BF16, 16, false, 10 + i));
            bytes += kvs.back()->payload_bytes;
        }
        for (int i = 0; i < 8; ++i)
            seqs.push_back(DecodeSeq{&kvs[i]->kv, q.data() + size_t(i) * s.h * s.d, out.data() + size_t(i) * s.h * s.d,
                                     nullptr, kvs[i]->kv.n_tokens - 1});
        AttnParams p;
        p.n_heads = s.h;
        p.head_dim = s.d;
        p.scale = 0.125f;
        for (int t = 1; t <= max_t; ++t) {
            omp_set_num_threads(t);
            double sec = time_best([&] { cpu::attention_decode(seqs.data(), 8, p); }, quick ? 0.05 : 0.3);
            emit_vs("attention_decode", "batch8_kv_read_bandwidth", double(bytes) / sec / 1e9, "GB/s", "stream_read",
                    stream[t] / 1e9,
                    "\"heads\":\"9/3\",\"head_dim\":64,\"kv\":\"bf16\",\"threads\":" + std::to_string(t) +
                        ",\"kv_mib\":" + std::to_string(bytes >> 20) + ",\"us\":" + std::to_string(sec * 1e6));
        }
    }
    return 0;
}
