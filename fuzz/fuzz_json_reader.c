/*
 * Differential fuzzing of json_read against jansson's json_loadb with the
 * flags it stands in for. For every input the two must agree:
 *   - on the verdict;
 *   - when both accept, on the tree (json_equal) and on its compact text
 *     (which also compares member order and the sign of zero);
 *   - when both reject, on the error: code, text, line, column, position.
 * The one difference json_reader.h documents, jansson skipping a NUL byte
 * right after a number or a literal, is checked as such: when only jansson
 * accepts, the input must hold NUL bytes, and without them json_read must
 * accept it and build jansson's tree.
 *
 * json_read_memo, with a memo of params._meta kept from one input to the
 * next (and read twice, so that the second read may share what the first
 * remembered), is held to json_read too: the same verdict, tree and error.
 *
 * json_read_nested, with a small limit, is held to json_read: the same tree
 * when the text nests within the limit, "too deep" when it does not (at a
 * bracket that is indeed one too deep, and no later than json_read's own
 * error), and json_read's error otherwise.
 */
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/jsonrpc.h"
#include "protocol/json_reader.h"
#include "protocol/json_writer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FLAGS (JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL | JSON_DECODE_ANY)

static void require(bool ok)
{
    if (!ok)
        abort();
}

static void require_same_tree(const json_t *ours, const json_t *theirs)
{
    require(json_equal(ours, theirs));
    size_t ours_len, theirs_len;
    char *ours_text = json_write(ours, JSON_WRITE_COMPACT, &ours_len);
    char *theirs_text = json_write(theirs, JSON_WRITE_COMPACT, &theirs_len);
    require(ours_text && theirs_text && ours_len == theirs_len &&
            memcmp(ours_text, theirs_text, ours_len) == 0);
    free(ours_text);
    free(theirs_text);
}

static void require_same_error(const json_error_t *ours, const json_error_t *theirs)
{
    require(json_error_code(ours) == json_error_code(theirs));
    require(strcmp(ours->text, theirs->text) == 0);
    require(ours->line == theirs->line && ours->column == theirs->column &&
            ours->position == theirs->position);
}

/* A NUL byte after a letter or digit, which jansson may have skipped (and
 * then counted positions one short after it). */
static bool may_skip_nul(const char *buf, size_t size)
{
    for (size_t i = 1; i < size; i++) {
        char before = buf[i - 1];
        if (buf[i] == '\0' && ((before >= '0' && before <= '9') ||
                               (before >= 'a' && before <= 'z') ||
                               (before >= 'A' && before <= 'Z')))
            return true;
    }
    return false;
}

/* jansson accepted what json_read rejected: only its skipped NULs may
 * explain it (any other NUL byte fails jansson too). */
static void require_skipped_nul(const char *buf, size_t size, const json_t *theirs)
{
    require(may_skip_nul(buf, size));
    char *stripped = malloc(size);
    require(stripped != NULL);
    size_t n = 0;
    for (size_t i = 0; i < size; i++)
        if (buf[i] != '\0')
            stripped[n++] = buf[i];
    json_t *ours = json_read(stripped, n, NULL);
    require(ours != NULL);
    require_same_tree(ours, theirs);
    json_decref(ours);
    free(stripped);
}

/* How deep arrays and objects nest in a tree (a scalar is 0). */
static int nesting(const json_t *j)
{
    int deepest = 0;
    if (json_is_object(j)) {
        const char *key;
        json_t *value;
        json_object_foreach((json_t *)j, key, value) {
            int d = nesting(value);
            deepest = d > deepest ? d : deepest;
        }
        return deepest + 1;
    }
    if (json_is_array(j)) {
        size_t i;
        json_t *value;
        json_array_foreach(j, i, value) {
            int d = nesting(value);
            deepest = d > deepest ? d : deepest;
        }
        return deepest + 1;
    }
    return 0;
}

static void check_nested(const char *buf, size_t size, const json_t *plain,
                         const json_error_t *plain_err)
{
    enum { LIMIT = 3 };
    bool too_deep;
    json_error_t err;
    json_t *got = json_read_nested(buf, size, LIMIT, &too_deep, &err);
    if (got) {
        require(!too_deep && plain && nesting(plain) <= LIMIT);
        require_same_tree(got, plain);
    } else if (too_deep) {
        /* The text up to the error opens a bracket one too deep... */
        require(json_error_code(&err) == json_error_stack_overflow);
        require(mcp_json_depth(buf, (size_t)err.position, LIMIT) == LIMIT + 1);
        /* ...before anything json_read rejects. */
        require(plain ? nesting(plain) > LIMIT : err.position <= plain_err->position);
    } else {
        require(!plain);
        require(json_error_code(&err) == json_error_code(plain_err));
        require(strcmp(err.text, plain_err->text) == 0 && err.position == plain_err->position);
    }
    json_decref(got);
}

/* Kept across inputs: an input may meet what an earlier one left. */
static json_read_memo_t memo = {.parent_key = "params", .key = "_meta"};

static void check_memo(const char *buf, size_t size, const json_t *plain,
                       const json_error_t *plain_err)
{
    for (int round = 0; round < 2; round++) {
        bool too_deep;
        json_error_t err;
        json_t *got = json_read_memo(buf, size, INT_MAX, &too_deep, &err, &memo);
        if (got) {
            require(plain != NULL);
            require_same_tree(got, plain);
        } else {
            require(!plain);
            require(json_error_code(&err) == json_error_code(plain_err));
            require(strcmp(err.text, plain_err->text) == 0 && err.line == plain_err->line &&
                    err.column == plain_err->column && err.position == plain_err->position);
        }
        json_decref(got);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *buf = (const char *)data;
    json_error_t ours_err, theirs_err;
    json_t *ours = json_read(buf, size, &ours_err);
    json_t *theirs = json_loadb(buf, size, FLAGS, &theirs_err);

    if (ours && theirs)
        require_same_tree(ours, theirs);
    else if (theirs)
        require_skipped_nul(buf, size, theirs);
    else if (ours)
        abort(); /* json_read is never the more lenient */
    else if (!may_skip_nul(buf, size))
        require_same_error(&ours_err, &theirs_err);
    check_nested(buf, size, ours, &ours_err);
    check_memo(buf, size, ours, &ours_err);

    json_decref(ours);
    json_decref(theirs);
    return 0;
}
