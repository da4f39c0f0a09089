/*
 * Loading keyring keys from text, a file or an environment variable.
 *
 * The format is one key per line, "<key id> <key>", oldest first, where the
 * key is 32 bytes in base64 or base64url, padded or not: whatever
 * `openssl rand -base64 32` or Python's urlsafe_b64encode printed.
 * Blank lines and '#' comments are skipped. One line holding only a key is
 * the common single-key deployment (MCP_STATE_KEY=...): it gets the id "0".
 *
 * Loading is all or nothing: keys are collected in a scratch ring and moved
 * into the caller's ring only when every line is good. Error messages name
 * the line but never echo it, since it may hold a key.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "protocol/base64.h"
#include "server/keyring.h"
#include "server/secrets.h"

/* A keyring file is a few lines; refuse to slurp something huge by mistake
 * (a device, a log file). */
#define KEYRING_FILE_MAX (1024 * 1024)

/* Unpadded base64 of 32 bytes is 43 characters; padded, 44 ending in '='. */
#define KEY_TEXT_LEN 43

static int is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

/* decode_key's answer for a key that decodes but cannot be random. */
#define KEY_CONSTANT 1

/* Is every byte of the key the same (all zeros, "AAAA...")? A placeholder,
 * never a generated key: anyone could forge states with it. */
static bool is_constant(const uint8_t key[MCP_STATE_KEY_BYTES])
{
    for (size_t i = 1; i < MCP_STATE_KEY_BYTES; i++)
        if (key[i] != key[0])
            return false;
    return true;
}

/* Decodes a key in either alphabet, with or without its '=' into out[32];
 * KEY_CONSTANT (after wiping out) for a constant key. */
static int decode_key(const char *text, size_t len, uint8_t out[MCP_STATE_KEY_BYTES])
{
    if (len == KEY_TEXT_LEN + 1 && text[KEY_TEXT_LEN] == '=')
        len = KEY_TEXT_LEN;
    if (len != KEY_TEXT_LEN)
        return MCP_EINVAL;
    /* Both alphabets differ only in two characters: map the standard ones to
     * base64url and let the strict decoder judge the rest. */
    char url[KEY_TEXT_LEN];
    for (size_t i = 0; i < len; i++)
        url[i] = text[i] == '+' ? '-' : text[i] == '/' ? '_' : text[i];
    unsigned char bytes[KEY_TEXT_LEN];
    size_t n = 0;
    int rc = mcp_base64url_decode(url, len, bytes, &n);
    if (rc == MCP_OK && n == MCP_STATE_KEY_BYTES)
        memcpy(out, bytes, MCP_STATE_KEY_BYTES);
    else
        rc = MCP_EINVAL;
    if (rc == MCP_OK && is_constant(out))
        rc = KEY_CONSTANT;
    mcp_secret_wipe(url, sizeof url);
    mcp_secret_wipe(bytes, sizeof bytes);
    return rc;
}

/* One line's words: at most two are meaningful; `count` says how many there
 * were (3 means "too many"). */
typedef struct line_words {
    const char *word[2];
    size_t len[2];
    int count;
} line_words_t;

static line_words_t split_line(const char *p, const char *end)
{
    line_words_t w = {{NULL, NULL}, {0, 0}, 0};
    while (p < end) {
        while (p < end && is_blank(*p))
            p++;
        if (p == end)
            break;
        const char *start = p;
        while (p < end && !is_blank(*p))
            p++;
        if (w.count == 2) {
            w.count = 3;
            break;
        }
        w.word[w.count] = start;
        w.len[w.count] = (size_t)(p - start);
        w.count++;
    }
    return w;
}

/* Parses one non-blank, non-comment line into `scratch`, checking it against
 * the keys already in `ring`. */
static int load_line(mcp_keyring_t *ring, mcp_keyring_t *scratch, const line_words_t *w,
                     unsigned line, mcp_error_t *err)
{
    if (w->count > 2)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL,
                             "keyring line %u: expected \"<key id> <key>\"", line);
    char id[MCP_STATE_KEY_ID_MAX + 1] = "0";
    const char *key_text = w->word[0];
    size_t key_len = w->len[0];
    if (w->count == 2) {
        if (w->len[0] > MCP_STATE_KEY_ID_MAX)
            return mcp_error_set(err, MCP_EINVAL, 0, NULL,
                                 "keyring line %u: the key id is longer than %d characters",
                                 line, MCP_STATE_KEY_ID_MAX);
        memcpy(id, w->word[0], w->len[0]);
        id[w->len[0]] = '\0';
        key_text = w->word[1];
        key_len = w->len[1];
        if (!mcp_keyring_id_is_valid(id))
            return mcp_error_set(err, MCP_EINVAL, 0, NULL,
                                 "keyring line %u: a key id may hold only A-Z a-z 0-9 . _ -",
                                 line);
    }
    if (mcp_keyring_find(ring, (const uint8_t *)id, strlen(id)))
        return mcp_error_set(err, MCP_EINVAL, 0, NULL,
                             "keyring line %u: key id \"%s\" is already in the keyring", line,
                             id);
    uint8_t key[MCP_STATE_KEY_BYTES];
    int decoded = decode_key(key_text, key_len, key);
    if (decoded == KEY_CONSTANT) {
        mcp_secret_wipe(key, sizeof key);
        return mcp_error_set(err, MCP_EINVAL, 0, NULL,
                             "keyring line %u: the key is one byte repeated, a placeholder "
                             "rather than a random key (make one with "
                             "`head -c 32 /dev/urandom | base64`)",
                             line);
    }
    if (decoded != MCP_OK)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL,
                             "keyring line %u: the key is not 32 bytes of base64 or base64url",
                             line);
    int rc = mcp_keyring_add(scratch, id, key);
    mcp_secret_wipe(key, sizeof key);
    if (rc == MCP_EEXIST)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL,
                             "keyring line %u: duplicate key id \"%s\"", line, id);
    if (rc != MCP_OK)
        return mcp_error_set(err, rc, 0, NULL, "keyring line %u: %s", line, mcp_strerror(rc));
    return MCP_OK;
}

static int load_lines(mcp_keyring_t *ring, mcp_keyring_t *scratch, const char *text,
                      mcp_error_t *err)
{
    unsigned line = 0, bare_key_line = 0;
    for (const char *p = text; *p;) {
        const char *end = strchr(p, '\n');
        if (!end)
            end = p + strlen(p);
        line++;
        line_words_t w = split_line(p, end);
        p = *end ? end + 1 : end;
        if (w.count == 0 || w.word[0][0] == '#')
            continue;
        if (w.count == 1)
            bare_key_line = line;
        int rc = load_line(ring, scratch, &w, line, err);
        if (rc != MCP_OK)
            return rc;
    }
    if (mcp_keyring_count(scratch) == 0)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL, "the keyring text holds no key");
    if (bare_key_line && mcp_keyring_count(scratch) > 1)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL,
                             "keyring line %u: a key without an id is allowed only when it is "
                             "the only key",
                             bare_key_line);
    return MCP_OK;
}

int mcp_keyring_load_text(mcp_keyring_t *ring, const char *text, mcp_error_t *err)
{
    if (!ring || !text)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL, "no keyring or no text");
    mcp_keyring_t *scratch = mcp_keyring_new();
    if (!scratch)
        return mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
    int rc = load_lines(ring, scratch, text, err);
    if (rc == MCP_OK && (rc = mcp_keyring_move_keys(ring, scratch)) != MCP_OK)
        mcp_error_set(err, rc, 0, NULL, "out of memory");
    mcp_keyring_free(scratch); /* wipes whatever was not moved */
    return rc;
}

int mcp_keyring_load_file(mcp_keyring_t *ring, const char *path, mcp_error_t *err)
{
    if (!ring || !path)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL, "no keyring or no path");
    FILE *f = fopen(path, "rb");
    if (!f)
        return mcp_error_set(err, MCP_EIO, 0, NULL, "cannot open keyring file \"%s\"", path);
    /* Whoever can read the keys can forge any state for any principal, and
     * whoever can write them can plant their own: like ssh with a private
     * key, refuse a file that others may read or write, or that belongs to
     * someone else (root aside). */
    struct stat st;
    if (fstat(fileno(f), &st) != 0) {
        fclose(f);
        return mcp_error_set(err, MCP_EIO, 0, NULL, "cannot stat keyring file \"%s\"", path);
    }
    if (S_ISREG(st.st_mode) && (st.st_mode & (S_IRWXG | S_IRWXO))) {
        fclose(f);
        return mcp_error_set(err, MCP_EINVAL, 0, NULL,
                             "keyring file \"%s\" is open to others (mode %03o): "
                             "chmod 600 it",
                             path, (unsigned)(st.st_mode & 0777));
    }
    if (st.st_uid != geteuid() && st.st_uid != 0) {
        fclose(f);
        return mcp_error_set(err, MCP_EINVAL, 0, NULL,
                             "keyring file \"%s\" belongs to another user (uid %u)", path,
                             (unsigned)st.st_uid);
    }
    char *text = malloc(KEYRING_FILE_MAX + 1);
    if (!text) {
        fclose(f);
        return mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
    }
    size_t n = fread(text, 1, KEYRING_FILE_MAX + 1, f);
    int rc;
    if (ferror(f))
        rc = mcp_error_set(err, MCP_EIO, 0, NULL, "cannot read keyring file \"%s\"", path);
    else if (n > KEYRING_FILE_MAX)
        rc = mcp_error_set(err, MCP_EINVAL, 0, NULL,
                           "keyring file \"%s\" is larger than %d bytes", path,
                           KEYRING_FILE_MAX);
    else if (memchr(text, '\0', n))
        rc = mcp_error_set(err, MCP_EINVAL, 0, NULL,
                           "keyring file \"%s\" is not text (it holds a NUL byte)", path);
    else {
        text[n] = '\0';
        rc = mcp_keyring_load_text(ring, text, err);
    }
    fclose(f);
    mcp_secret_wipe(text, n); /* it held keys */
    free(text);
    return rc;
}

int mcp_keyring_load_env(mcp_keyring_t *ring, const char *var, mcp_error_t *err)
{
    if (!ring || !var)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL, "no keyring or no variable name");
    const char *text = getenv(var);
    if (!text || !*text)
        return mcp_error_set(err, MCP_ENOTFOUND, 0, NULL,
                             "environment variable %s is unset or empty", var);
    return mcp_keyring_load_text(ring, text, err);
}
