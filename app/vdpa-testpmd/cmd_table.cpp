// vdpa-testpmd: DPDK cmdline tokens and instances built at run time.
#include "cmd_table.hpp"

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

namespace vdpa_testpmd {

namespace {

App* g_app = nullptr;  // token ops and instance callbacks carry no context

// A word token: parse accepts any word, completion offers device names or
// the alternatives of a choice.
struct WordToken {
    cmdline_parse_token_hdr_t hdr;
    Tok kind;
    const char* text;
};

bool end_of_word(char c) {
    return c == '\0' || c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '#';
}

int word_parse(cmdline_parse_token_hdr_t* tk, const char* buf, void* res, unsigned ressize) {
    (void)tk;
    if (buf == nullptr)
        return -1;
    unsigned n = 0;
    while (!end_of_word(buf[n]))
        n++;
    if (n == 0)
        return -1;
    if (res != nullptr) {
        if (n >= ressize)
            return -1;
        memcpy(res, buf, n);
        static_cast<char*>(res)[n] = '\0';
    }
    return int(n);
}

// The i-th '#'-separated alternative of text, or false.
bool nth_choice(const char* text, int i, char* dst, unsigned size) {
    const char* s = text;
    for (; i > 0 && s; i--) {
        s = strchr(s, '#');
        if (s)
            s++;
    }
    if (s == nullptr || *s == '\0')
        return false;
    const char* e = strchr(s, '#');
    size_t len = e ? size_t(e - s) : strlen(s);
    if (len + 1 > size)
        return false;
    memcpy(dst, s, len);
    dst[len] = '\0';
    return true;
}

int word_complete_nb(cmdline_parse_token_hdr_t* tk) {
    auto* t = reinterpret_cast<WordToken*>(tk);
    switch (t->kind) {
    case Tok::Dev: return int(g_app->ports.size());
    case Tok::DevAll: return int(g_app->ports.size()) + 1;
    case Tok::Choice: {
        int n = 1;
        for (const char* s = t->text; *s; s++)
            n += *s == '#';
        return n;
    }
    default: return 0;
    }
}

int word_complete_elt(cmdline_parse_token_hdr_t* tk, int idx, char* dst, unsigned size) {
    auto* t = reinterpret_cast<WordToken*>(tk);
    if (t->kind == Tok::Choice)
        return nth_choice(t->text, idx, dst, size) ? 0 : -1;
    const char* name = nullptr;
    if (idx >= 0 && size_t(idx) < g_app->ports.size())
        name = g_app->ports[idx]->name.c_str();
    else if (t->kind == Tok::DevAll && size_t(idx) == g_app->ports.size())
        name = "all";
    if (name == nullptr || strlen(name) + 1 > size)
        return -1;
    snprintf(dst, size, "%s", name);
    return 0;
}

int word_help(cmdline_parse_token_hdr_t* tk, char* dst, unsigned size) {
    auto* t = reinterpret_cast<WordToken*>(tk);
    const char* h = t->kind == Tok::Dev      ? "<device name or index>"
                    : t->kind == Tok::DevAll ? "<device name, index or all>"
                                             : t->text;
    snprintf(dst, size, "%s", h);
    return 0;
}

struct cmdline_token_ops g_word_ops = {
    .parse = word_parse,
    .complete_get_nb = word_complete_nb,
    .complete_get_elt = word_complete_elt,
    .get_help = word_help,
};

void dispatch(void* parsed, struct cmdline* cl, void* data) {
    (void)cl;
    auto* spec = static_cast<const CommandSpec*>(data);
    spec->fn(*g_app, *static_cast<const Words*>(parsed));
    fflush(stdout);
}

}  // namespace

cmdline_parse_token_hdr_t* CommandTable::make_token(const TokSpec& ts) {
    if (ts.kind == Tok::Keyword || ts.kind == Tok::Rest) {
        auto* t = static_cast<cmdline_parse_token_string_t*>(
            calloc(1, sizeof(cmdline_parse_token_string_t)));
        if (t == nullptr)
            throw std::bad_alloc();
        allocs_.push_back(t);
        t->hdr.ops = &cmdline_token_string_ops;
        t->string_data.str = ts.kind == Tok::Rest ? TOKEN_STRING_MULTI : ts.text;
        return &t->hdr;
    }
    auto* t = static_cast<WordToken*>(calloc(1, sizeof(WordToken)));
    if (t == nullptr)
        throw std::bad_alloc();
    allocs_.push_back(t);
    t->hdr.ops = &g_word_ops;
    t->kind = ts.kind;
    t->text = ts.text;
    return &t->hdr;
}

CommandTable::CommandTable(App& app, const std::vector<CommandSpec>& specs) {
    g_app = &app;
    static_assert(sizeof(Words) <= CMDLINE_PARSE_RESULT_BUFSIZE);
    for (const CommandSpec& s : specs) {
        specs_.push_back(s);
        const CommandSpec& spec = specs_.back();
        size_t ntok = spec.toks.size();
        auto* inst = static_cast<cmdline_parse_inst_t*>(
            calloc(1, sizeof(cmdline_parse_inst_t) + (ntok + 1) * sizeof(void*)));
        if (inst == nullptr)
            throw std::bad_alloc();
        allocs_.push_back(inst);
        inst->f = dispatch;
        inst->data = const_cast<CommandSpec*>(&spec);
        inst->help_str = spec.help;
        for (size_t i = 0; i < ntok; i++) {
            const TokSpec& ts = spec.toks[i];
            unsigned offset = ts.kind == Tok::Rest
                                  ? unsigned(offsetof(Words, rest))
                                  : unsigned(offsetof(Words, w) + i * sizeof(cmdline_fixed_string_t));
            cmdline_parse_token_hdr_t* hdr = make_token(ts);
            hdr->offset = offset;
            inst->tokens[i] = hdr;
        }
        inst->tokens[ntok] = nullptr;
        ctx_.push_back(inst);
    }
    ctx_.push_back(nullptr);
}

CommandTable::~CommandTable() {
    for (void* p : allocs_)
        free(p);
}

}  // namespace vdpa_testpmd
