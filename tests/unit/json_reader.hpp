// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// A minimal JSON reader for the tests' committed reference files (objects,
// arrays, strings with escapes incl. \uXXXX surrogate pairs, numbers,
// booleans, null). Throws std::runtime_error on malformed input.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace kvrt::test {

struct JsonValue {
    enum Kind { Null, Bool, Number, String, Array, Object } kind = Null;
    bool b = false;
    double num = 0;
    std::string str;
    std::vector<JsonValue> arr;
    std::map<std::string, JsonValue> obj;

    const JsonValue& operator[](const std::string& k) const {
        auto it = obj.find(k);
        if (it == obj.end()) throw std::runtime_error("JSON: no key " + k);
        return it->second;
    }
    const JsonValue& operator[](size_t i) const { return arr.at(i); }
    bool has(const std::string& k) const { return obj.count(k) != 0; }
    size_t size() const { return kind == Array ? arr.size() : obj.size(); }
    int64_t as_int() const { return static_cast<int64_t>(num); }
    std::vector<int32_t> as_i32_vector() const {
        std::vector<int32_t> v;
        for (const JsonValue& e : arr) v.push_back(static_cast<int32_t>(e.num));
        return v;
    }
};

class JsonReader {
public:
    static JsonValue parse(const std::string& s) {
        JsonReader r(s);
        JsonValue v = r.value();
        r.ws();
        if (r.i_ != s.size()) throw std::runtime_error("JSON: trailing characters");
        return v;
    }
    static JsonValue parse_file(const std::string& path) {
        std::ifstream f(path, std::ios::binary);
        if (!f) throw std::runtime_error("cannot open " + path);
        std::stringstream ss;
        ss << f.rdbuf();
        return parse(ss.str());
    }

private:
    explicit JsonReader(const std::string& s) : s_(s) {}
    void ws() {
        while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\t')) ++i_;
    }
    char next() {
        if (i_ >= s_.size()) throw std::runtime_error("JSON: unexpected end");
        return s_[i_++];
    }
    void expect(const char* lit) {
        for (const char* p = lit; *p; ++p)
            if (next() != *p) throw std::runtime_error(std::string("JSON: expected ") + lit);
    }
    static void utf8(std::string& o, uint32_t cp) {
        if (cp < 0x80) {
            o += static_cast<char>(cp);
        } else if (cp < 0x800) {
            o += static_cast<char>(0xC0 | (cp >> 6));
            o += static_cast<char>(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            o += static_cast<char>(0xE0 | (cp >> 12));
            o += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            o += static_cast<char>(0x80 | (cp & 0x3F));
        } else {
            o += static_cast<char>(0xF0 | (cp >> 18));
            o += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
            o += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            o += static_cast<char>(0x80 | (cp & 0x3F));
        }
    }
    uint32_t hex4() {
        uint32_t v = 0;
        for (int k = 0; k < 4; ++k) {
            const char c = next();
            v <<= 4;
            if (c >= '0' && c <= '9') v |= static_cast<uint32_t>(c - '0');
            else if (c >= 'a' && c <= 'f') v |= static_cast<uint32_t>(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F') v |= static_cast<uint32_t>(c - 'A' + 10);
            else throw std::runtime_error("JSON: bad \\u escape");
        }
        return v;
    }
    std::string string() {
        std::string o;
        if (next() != '"') throw std::runtime_error("JSON: expected string");
        for (;;) {
            char c = next();
            if (c == '"') return o;
            if (c != '\\') {
                o += c;
                continue;
            }
            c = next();
            switch (c) {
                case '"': o += '"'; break;
                case '\\': o += '\\'; break;
                case '/': o += '/'; break;
                case 'b': o += '\b'; break;
                case 'f': o += '\f'; break;
                case 'n': o += '\n'; break;
                case 'r': o += '\r'; break;
                case 't': o += '\t'; break;
                case 'u': {
                    uint32_t cp = hex4();
                    if (cp >= 0xD800 && cp < 0xDC00 && i_ + 1 < s_.size() && s_[i_] == '\\' && s_[i_ + 1] == 'u') {
                        i_ += 2;
                        const uint32_t lo = hex4();
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    }
                    utf8(o, cp);
                    break;
                }
                default: throw std::runtime_error("JSON: bad escape");
            }
        }
    }
    JsonValue value() {
        ws();
        JsonValue v;
        if (i_ >= s_.size()) throw std::runtime_error("JSON: unexpected end");
        const char c = s_[i_];
        if (c == '{') {
            ++i_;
            v.kind = JsonValue::Object;
            ws();
            if (s_[i_] == '}') {
                ++i_;
                return v;
            }
            for (;;) {
                ws();
                std::string k = string();
                ws();
                if (next() != ':') throw std::runtime_error("JSON: expected ':'");
                v.obj[k] = value();
                ws();
                const char d = next();
                if (d == '}') return v;
                if (d != ',') throw std::runtime_error("JSON: expected ',' or '}'");
            }
        }
        if (c == '[') {
            ++i_;
            v.kind = JsonValue::Array;
            ws();
            if (s_[i_] == ']') {
                ++i_;
                return v;
            }
            for (;;) {
                v.arr.push_back(value());
                ws();
                const char d = next();
                if (d == ']') return v;
                if (d != ',') throw std::runtime_error("JSON: expected ',' or ']'");
            }
        }
        if (c == '"') {
            v.kind = JsonValue::String;
            v.str = string();
            return v;
        }
        if (c == 't') {
            expect("true");
            v.kind = JsonValue::Bool;
            v.b = true;
            return v;
        }
        if (c == 'f') {
            expect("false");
            v.kind = JsonValue::Bool;
            return v;
        }
        if (c == 'n') {
            expect("null");
            return v;
        }
        const char* begin = s_.c_str() + i_;
        char* end = nullptr;
        v.num = std::strtod(begin, &end);
        if (end == begin) throw std::runtime_error("JSON: bad value");
        v.kind = JsonValue::Number;
        i_ += static_cast<size_t>(end - begin);
        return v;
    }
    const std::string& s_;
    size_t i_ = 0;
};

}  // namespace kvrt::test
