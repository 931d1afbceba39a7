// vdpa-testpmd: a small streaming JSON writer (results and trace files).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace vdpa_testpmd {

class JsonWriter {
public:
    explicit JsonWriter(FILE* f) : f_(f) {}

    void begin_object() { open('{'); }
    void end_object() { close('}'); }
    void begin_array() { open('['); }
    void end_array() { close(']'); }
    void key(const char* k) {
        sep();
        string_raw(k);
        fputc(':', f_);
        after_key_ = true;
    }
    void string(const char* s) {
        sep();
        string_raw(s);
    }
    void number(double v) {
        sep();
        if (std::isfinite(v))
            fprintf(f_, "%.6g", v);
        else
            fputs("null", f_);
    }
    void number(uint64_t v) {
        sep();
        fprintf(f_, "%llu", static_cast<unsigned long long>(v));
    }
    void null() {
        sep();
        fputs("null", f_);
    }
    void raw(const char* json) {
        sep();
        fputs(json, f_);
    }
    void field(const char* k, const char* v) { key(k), string(v); }
    void field(const char* k, double v) { key(k), number(v); }
    void field(const char* k, uint64_t v) { key(k), number(v); }
    void field(const char* k, uint32_t v) { key(k), number(uint64_t(v)); }

    // Trace events.
    void metadata(unsigned pid, int tid, const char* what, const char* name) {
        begin_object();
        field("ph", "M");
        field("name", what);
        field("pid", uint64_t(pid));
        field("tid", uint64_t(tid));
        key("args");
        begin_object();
        field("name", name);
        end_object();
        end_object();
    }
    void metadata_sort(unsigned pid, int tid) {
        begin_object();
        field("ph", "M");
        field("name", "thread_sort_index");
        field("pid", uint64_t(pid));
        field("tid", uint64_t(tid));
        key("args");
        begin_object();
        field("sort_index", uint64_t(tid));
        end_object();
        end_object();
    }
    // ts and dur in nanoseconds, written as microseconds with 3 decimals
    // from the integers, so that adjacent spans stay exactly adjacent.
    void complete_event(const char* name, const char* cat, unsigned pid, int tid, int64_t ts_ns,
                        uint64_t dur_ns, const char* args_json) {
        begin_object();
        field("ph", "X");
        field("name", name);
        field("cat", cat);
        field("pid", uint64_t(pid));
        field("tid", uint64_t(tid));
        key("ts");
        micros(ts_ns);
        key("dur");
        micros(int64_t(dur_ns));
        key("args");
        raw(args_json);
        end_object();
    }

    bool finish() {
        fputc('\n', f_);
        return depth_.empty() && !ferror(f_);
    }

private:
    void micros(int64_t ns) {
        sep();
        uint64_t a = ns < 0 ? uint64_t(-ns) : uint64_t(ns);
        fprintf(f_, "%s%llu.%03llu", ns < 0 ? "-" : "", static_cast<unsigned long long>(a / 1000),
                static_cast<unsigned long long>(a % 1000));
    }
    void open(char c) {
        sep();
        fputc(c, f_);
        depth_.push_back(true);
    }
    void close(char c) {
        if (!depth_.empty())
            depth_.pop_back();
        fputc(c, f_);
    }
    // A comma before every value but the first of its container; none
    // between a key and its value.
    void sep() {
        if (after_key_) {
            after_key_ = false;
            return;
        }
        if (!depth_.empty()) {
            if (!depth_.back())
                fputc(',', f_);
            depth_.back() = false;
        }
    }
    void string_raw(const char* s) {
        fputc('"', f_);
        for (; *s; s++) {
            unsigned char c = static_cast<unsigned char>(*s);
            if (c == '"' || c == '\\')
                fprintf(f_, "\\%c", c);
            else if (c < 0x20)
                fprintf(f_, "\\u%04x", c);
            else
                fputc(c, f_);
        }
        fputc('"', f_);
    }
    FILE* f_;
    std::vector<bool> depth_;  // per open container: no value written yet
    bool after_key_ = false;
};

}  // namespace vdpa_testpmd
