// vdpa-testpmd: building DPDK cmdline instances from a command table.
//
// Every argument is taken as a word and checked by the handler, so a bad
// device name or number gets a precise message instead of the library's
// "Bad arguments"; the word tokens still complete device names and choices.
#pragma once

#include <cmdline_parse.h>
#include <cmdline_parse_string.h>

#include <deque>
#include <memory>
#include <vector>

#include "app.hpp"

namespace vdpa_testpmd {

struct Words {
    cmdline_fixed_string_t w[6];   // token i, keywords included
    cmdline_multi_string_t rest;   // Tok::Rest: the rest of the line
};

using Handler = void (*)(App&, const Words&);

enum class Tok {
    Keyword,  // fixed text, "a#b" for alternatives (cmdline string token)
    Dev,      // a device name or index, completes device names
    DevAll,   // the same or "all"
    Word,     // any word; text is its help ("<count>")
    Choice,   // any word, completes the "a#b#c" alternatives in text
    Rest,     // the rest of the line
};

struct TokSpec {
    Tok kind;
    const char* text;
};

struct CommandSpec {
    std::vector<TokSpec> toks;
    const char* help;
    Handler fn;
};

class CommandTable {
public:
    CommandTable(App& app, const std::vector<CommandSpec>& specs);
    ~CommandTable();
    CommandTable(const CommandTable&) = delete;
    CommandTable& operator=(const CommandTable&) = delete;
    cmdline_parse_ctx_t* ctx() { return ctx_.data(); }

private:
    cmdline_parse_token_hdr_t* make_token(const TokSpec& ts);
    std::deque<CommandSpec> specs_;
    std::vector<void*> allocs_;           // tokens and instances (malloc)
    std::vector<cmdline_parse_inst_t*> ctx_;  // null-terminated
};

}  // namespace vdpa_testpmd
