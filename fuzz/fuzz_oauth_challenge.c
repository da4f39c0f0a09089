/*
 * WWW-Authenticate values from the wire. What parses must be whole C
 * strings of the characters a quoted-string can carry, and must survive
 * being written back as a Bearer challenge of quoted parameters. What does
 * not parse fills nothing; a parse keeps its scheme (Bearer or DPoP)
 * through the write-back. ASCII case changes no verdict: schemes,
 * parameter names and the character classes of the grammar ignore it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/oauth/oauth_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *field(const oauth_challenge_t *c, size_t i)
{
    const char *fields[] = {c->resource_metadata, c->scope, c->error, c->error_description};
    return fields[i];
}

static const char *const NAMES[] = {"resource_metadata", "scope", "error", "error_description"};
enum { FIELDS = sizeof NAMES / sizeof NAMES[0] };

/* A field holds no control character but HTAB (the NUL that ends it is
 * its only NUL), and is no longer than the value it came from. */
static void check_field(const char *value, size_t value_len)
{
    if (!value)
        return;
    size_t len = strlen(value);
    if (len > value_len)
        abort();
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)value[i];
        if ((c < 0x20 && c != '\t') || c == 0x7f)
            abort();
    }
}

/* "Bearer name="value", ..." (or "DPoP ...") with '"' and '\' escaped. */
static char *write_back(const oauth_challenge_t *c, size_t value_len)
{
    size_t cap = 16 + 2 * value_len + FIELDS * 32, len = 0;
    char *out = malloc(cap);
    if (!out)
        abort();
    const char *scheme = c->dpop ? "DPoP" : "Bearer";
    size_t scheme_len = strlen(scheme);
    len += (size_t)snprintf(out, cap, "%s", scheme);
    for (size_t i = 0; i < FIELDS; i++) {
        const char *v = field(c, i);
        if (!v)
            continue;
        len += (size_t)snprintf(out + len, cap - len, "%s %s=\"", len > scheme_len ? "," : "",
                                NAMES[i]);
        for (; *v; v++) {
            if (*v == '"' || *v == '\\')
                out[len++] = '\\';
            out[len++] = *v;
        }
        out[len++] = '"';
    }
    out[len] = '\0';
    return out;
}

static void check_same(const oauth_challenge_t *a, const oauth_challenge_t *b)
{
    for (size_t i = 0; i < FIELDS; i++) {
        const char *x = field(a, i), *y = field(b, i);
        if (!x != !y || (x && strcmp(x, y) != 0))
            abort();
    }
    if (a->dpop != b->dpop)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *value = malloc(size + 1);
    if (!value)
        abort();
    memcpy(value, data, size);
    value[size] = '\0';

    oauth_challenge_t c;
    int rc = oauth_challenge_parse(value, &c);
    if (rc != MCP_OK && rc != MCP_ENOTFOUND && rc != MCP_EPROTO)
        abort();
    if (rc != MCP_OK) {
        for (size_t i = 0; i < FIELDS; i++)
            if (field(&c, i))
                abort();
    } else {
        for (size_t i = 0; i < FIELDS; i++)
            check_field(field(&c, i), size);
        char *again_text = write_back(&c, size);
        oauth_challenge_t again;
        if (oauth_challenge_parse(again_text, &again) != MCP_OK)
            abort();
        check_same(&c, &again);
        oauth_challenge_free(&again);
        free(again_text);
    }

    /* The same verdict, and the same fields found, in upper case. */
    for (size_t i = 0; i < size; i++)
        if (value[i] >= 'a' && value[i] <= 'z')
            value[i] = (char)(value[i] - 'a' + 'A');
    oauth_challenge_t upper;
    if (oauth_challenge_parse(value, &upper) != rc)
        abort();
    for (size_t i = 0; i < FIELDS; i++)
        if (!field(&c, i) != !field(&upper, i))
            abort();
    if (c.dpop != upper.dpop)
        abort();

    oauth_challenge_free(&upper);
    oauth_challenge_free(&c);
    free(value);
    return 0;
}
