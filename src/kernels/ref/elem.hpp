// Element access for the reference kernels: element c of a row of `dtype`, as double.
#pragma once

#include "util/dtype.hpp"

#include <cstdint>
#include <cstring>

namespace kvrt::ref {

inline double load_elem(const uint8_t* row, DType t, int64_t c) {
    switch (t) {
        case DType::F32: {
            float f;
            std::memcpy(&f, row + c * 4, 4);
            return f;
        }
        case DType::F16: {
            uint16_t h;
            std::memcpy(&h, row + c * 2, 2);
            return f16_to_f32(h);
        }
        case DType::BF16: {
            uint16_t h;
            std::memcpy(&h, row + c * 2, 2);
            return bf16_to_f32(h);
        }
    }
    return 0;
}

}  // namespace kvrt::ref
