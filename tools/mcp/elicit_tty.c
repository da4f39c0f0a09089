/*
 * Questions at the terminal.
 */
#include "elicit_tty.h"

#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "schema_value.h"
#include "signals.h"
#include "term.h"

#define MAX_ANSWER 4096

/* Writes a piece of a question on stderr. */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    term_stderr_lock();
    vfprintf(stderr, fmt, ap);
    term_stderr_unlock();
    va_end(ap);
}

/*
 * Reads one line from stdin into buf (without its newline, surrounding
 * blanks removed). 1: a line; -1: end of input or Ctrl-C. The terminal
 * does the line editing; the line is read a byte at a time so that nothing
 * after it is consumed.
 */
static int read_line(char *buf, size_t cap)
{
    size_t len = 0;
    for (;;) {
        struct pollfd p[2] = {{STDIN_FILENO, POLLIN, 0}, {signals_fd(), POLLIN, 0}};
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (p[1].revents)
            return -1;
        char c;
        ssize_t n = read(STDIN_FILENO, &c, 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            say("\n");
            return -1;
        }
        if (c == '\n')
            break;
        if (len + 1 < cap)
            buf[len++] = c;
    }
    while (len > 0 && isspace((unsigned char)buf[len - 1]))
        len--;
    buf[len] = '\0';
    size_t skip = 0;
    while (isspace((unsigned char)buf[skip]))
        skip++;
    memmove(buf, buf + skip, len - skip + 1);
    return 1;
}

static bool is_yes(const char *s)
{
    return strcasecmp(s, "y") == 0 || strcasecmp(s, "yes") == 0;
}

static bool is_no(const char *s)
{
    return strcasecmp(s, "n") == 0 || strcasecmp(s, "no") == 0;
}

int tty_confirm(const char *question, bool default_yes)
{
    char line[MAX_ANSWER];
    for (;;) {
        say("%s%s%s %s ", term_sgr(stderr, TERM_BOLD), question, term_sgr(stderr, TERM_RESET),
            default_yes ? "[Y/n]" : "[y/N]");
        if (read_line(line, sizeof line) < 0)
            return -1;
        if (!line[0])
            return default_yes ? 1 : 0;
        if (is_yes(line))
            return 1;
        if (is_no(line))
            return 0;
        say("  Please answer y or n.\n");
    }
}

int tty_visit_url(const char *url)
{
    say("  %s%s%s\n", term_sgr(stderr, TERM_BOLD), url, term_sgr(stderr, TERM_RESET));
    say("  Open it in your browser; press Enter when you are done there, or n to decline: ");
    char line[MAX_ANSWER];
    if (read_line(line, sizeof line) < 0)
        return -1;
    return is_no(line) ? 0 : 1;
}

int tty_authorize(const char *url, char **redirect_out)
{
    say("The server asks you to sign in. Open this address in your browser:\n");
    say("  %s%s%s\n", term_sgr(stderr, TERM_BOLD), url, term_sgr(stderr, TERM_RESET));
    say("  When you are done, the browser is sent to a local address (its page may not\n"
        "  load). Paste that address here, or press Enter to give up: ");
    char line[MAX_ANSWER];
    if (read_line(line, sizeof line) < 0)
        return -1;
    if (!line[0])
        return 0;
    return (*redirect_out = strdup(line)) ? 1 : -1;
}

/* ------------------------------------------------------------------------
 * Form fields
 * ------------------------------------------------------------------------ */

/* The value the person means by one word: a choice's value or title, or
 * else its number in the list (a value that reads as a number, "1" among
 * "5", "2", "1", means itself). NULL when it is none of them. */
static json_t *pick(const json_t *choices, const char *word)
{
    size_t i;
    const json_t *c;
    json_array_foreach(choices, i, c) {
        const json_t *value = json_object_get(c, "value");
        const char *title = json_string_value(json_object_get(c, "title"));
        if ((json_is_string(value) && strcmp(json_string_value(value), word) == 0) ||
            (title && strcasecmp(title, word) == 0))
            return json_incref((json_t *)value);
    }
    char *end;
    long n = strtol(word, &end, 10);
    if (*word && !*end && n >= 1 && (size_t)n <= json_array_size(choices))
        return json_incref(json_object_get(json_array_get(choices, (size_t)n - 1), "value"));
    return NULL;
}

/* The answer to a choice: one pick, or (for an array) picks separated by
 * commas. NULL with `why` when a word matches nothing. */
static json_t *pick_all(const json_t *schema, const json_t *choices, char *line, char *why,
                        size_t cap)
{
    bool many = schema_value_is_array(schema);
    json_t *picked = many ? json_array() : NULL;
    char *save = NULL;
    for (char *word = many ? strtok_r(line, ",", &save) : line; word;
         word = many ? strtok_r(NULL, ",", &save) : NULL) {
        while (isspace((unsigned char)*word))
            word++;
        size_t len = strlen(word);
        while (len > 0 && isspace((unsigned char)word[len - 1]))
            word[--len] = '\0';
        json_t *value = pick(choices, word);
        if (!value) {
            snprintf(why, cap, "\"%s\" is not one of the choices", word);
            json_decref(picked);
            return NULL;
        }
        if (!many)
            return value;
        json_array_append_new(picked, value);
    }
    return picked;
}

/* "brief", "42", "true", "a, b": a value as it would be typed. */
static void show_value(const json_t *value, char *buf, size_t cap)
{
    if (json_is_string(value)) {
        snprintf(buf, cap, "%s", json_string_value(value));
    } else if (json_is_array(value)) {
        size_t used = 0, i;
        const json_t *item;
        buf[0] = '\0';
        json_array_foreach(value, i, item) {
            char one[256];
            show_value(item, one, sizeof one);
            int n = snprintf(buf + used, cap - used, "%s%s", i ? ", " : "", one);
            if (n < 0 || (size_t)n >= cap - used)
                break;
            used += (size_t)n;
        }
    } else if (json_is_boolean(value)) {
        snprintf(buf, cap, "%s", json_is_true(value) ? "y" : "n");
    } else {
        char *text = json_dumps(value, JSON_ENCODE_ANY);
        snprintf(buf, cap, "%s", text ? text : "");
        free(text);
    }
}

/* Shows what is asked: the label, the description, the choices. */
static void introduce(const char *key, const json_t *schema, bool required, const json_t *choices)
{
    const char *title = json_string_value(json_object_get(schema, "title"));
    const char *description = json_string_value(json_object_get(schema, "description"));
    say("  %s%s%s", term_sgr(stderr, TERM_BOLD), title ? title : key, term_sgr(stderr, TERM_RESET));
    if (title && strcmp(title, key) != 0)
        say(" (%s)", key);
    if (!required)
        say(" %soptional%s", term_sgr(stderr, TERM_DIM), term_sgr(stderr, TERM_RESET));
    say("\n");
    if (description)
        say("  %s%s%s\n", term_sgr(stderr, TERM_DIM), description, term_sgr(stderr, TERM_RESET));
    size_t i;
    const json_t *c;
    json_array_foreach(choices, i, c) {
        char value[256];
        const char *ctitle = json_string_value(json_object_get(c, "title"));
        show_value(json_object_get(c, "value"), value, sizeof value);
        say("    %zu) %s", i + 1, ctitle ? ctitle : value);
        if (ctitle && strcmp(ctitle, value) != 0)
            say(" %s(%s)%s", term_sgr(stderr, TERM_DIM), value, term_sgr(stderr, TERM_RESET));
        say("\n");
    }
}

/* The hint before the cursor: "[y/n]", "choose 1-3", "an integer from 0
 * to 60", with the default. */
static void hint(const json_t *schema, const json_t *choices, char *buf, size_t cap)
{
    char what[256], shown[256];
    const json_t *def = json_object_get(schema, "default");
    if (choices)
        snprintf(what, sizeof what, "%s 1-%zu%s",
                 schema_value_is_array(schema) ? "choose from" : "choose",
                 json_array_size(choices),
                 schema_value_is_array(schema) ? ", separated by commas" : "");
    else if (schema_value_is_boolean(schema))
        snprintf(what, sizeof what, "y/n");
    else
        schema_value_describe(schema, what, sizeof what);
    if (def) {
        show_value(def, shown, sizeof shown);
        /* A choice's default reads best as its title. */
        size_t i;
        const json_t *c;
        json_array_foreach(choices, i, c)
            if (json_equal(json_object_get(c, "value"), (json_t *)def) &&
                json_is_string(json_object_get(c, "title")))
                snprintf(shown, sizeof shown, "%s", json_string_value(json_object_get(c, "title")));
        snprintf(buf, cap, "[%s; Enter for %s]", what, shown);
    } else {
        snprintf(buf, cap, "[%s]", what);
    }
}

int tty_ask_field(const char *key, const json_t *schema, bool required, json_t **value_out)
{
    *value_out = NULL;
    json_t *choices = schema_value_choices(schema);
    introduce(key, schema, required, choices);
    char prompt[600], line[MAX_ANSWER], why[512];
    hint(schema, choices, prompt, sizeof prompt);
    const json_t *def = json_object_get(schema, "default");
    int result = -1;
    for (;;) {
        say("  %s%s%s ", term_sgr(stderr, TERM_CYAN), prompt, term_sgr(stderr, TERM_RESET));
        if (read_line(line, sizeof line) < 0)
            break;
        json_t *value = NULL;
        if (!line[0] && def) {
            value = json_incref((json_t *)def);
        } else if (!line[0] && !required) {
            result = 0;
            break;
        } else if (!line[0]) {
            say("  An answer is needed.\n");
            continue;
        } else if (choices) {
            value = pick_all(schema, choices, line, why, sizeof why);
            if (value && !schema_value_check(schema, value, why, sizeof why)) {
                json_decref(value);
                value = NULL;
            }
        } else if (!schema_value_parse(schema, line, &value, why, sizeof why)) {
            value = NULL;
        }
        if (!value) {
            say("  %s%s%s\n", term_sgr(stderr, TERM_YELLOW), why, term_sgr(stderr, TERM_RESET));
            continue;
        }
        *value_out = value;
        result = 1;
        break;
    }
    json_decref(choices);
    return result;
}
