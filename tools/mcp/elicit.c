/*
 * Answering elicitation requests (the policy is described in elicit.h).
 */
#include "elicit.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "args_typing.h"
#include "elicit_tty.h"
#include "progress.h"
#include "schema_value.h"
#include "term.h"

static json_t *action(const char *what)
{
    return json_pack("{s:s}", "action", what);
}

/* Tells what the server asks, before it is answered one way or another. */
static void announce(const json_t *params)
{
    const char *message = json_string_value(json_object_get(params, "message"));
    progress_done(); /* a bar would tear the question */
    term_stderr_lock();
    fprintf(stderr, "%s?%s %sThe server asks:%s %s\n", term_sgr(stderr, TERM_GREEN),
            term_sgr(stderr, TERM_RESET), term_sgr(stderr, TERM_BOLD),
            term_sgr(stderr, TERM_RESET), message ? message : "(no message)");
    term_stderr_unlock();
}

/* Says which site a URL leads to, so that a look-alike stands out. */
static void show_site(const char *url)
{
    const char *start = strstr(url, "://");
    if (!start)
        return;
    start += 3;
    size_t len = strcspn(start, "/?#");
    const char *at = memchr(start, '@', len); /* user@host: the host is what counts */
    if (at) {
        len -= (size_t)(at + 1 - start);
        start = at + 1;
    }
    char host[256];
    snprintf(host, sizeof host, "%.*s", (int)len, start);
    term_notef("the page is on %s%s%s%s", term_sgr(stderr, TERM_BOLD), host,
               term_sgr(stderr, TERM_RESET),
               strstr(host, "xn--") ? " (an internationalized name: check it letter by letter)"
                                    : "");
}

static int answer_url(const elicit_policy_t *p, const json_t *params, json_t **result_out)
{
    const char *url = json_string_value(json_object_get(params, "url"));
    if (url)
        show_site(url);
    if (p->yes) {
        term_notef("accepted with --yes; continue at %s", url ? url : "(no URL)");
        *result_out = action("accept");
        return 0;
    }
    if (!p->interactive) {
        term_errorf("the server asks you to visit %s; there is no terminal to ask on: "
                    "pass --yes (to accept) or --decline",
                    url ? url : "(no URL)");
        return -1;
    }
    int visited = tty_visit_url(url ? url : "(no URL)");
    if (visited < 0)
        return -1;
    *result_out = action(visited ? "accept" : "decline");
    return 0;
}

/* Fills `content` from the --answer flags that name fields of the form.
 * False (after saying why) when one does not fit its field and there is no
 * terminal to ask instead. */
static bool apply_answers(const elicit_policy_t *p, const json_t *properties, json_t *content)
{
    for (size_t i = 0; i < p->n_answers; i++) {
        char key[256], why[512];
        const char *text;
        bool raw;
        if (!args_split(p->answers[i], key, sizeof key, &text, &raw))
            continue; /* checked when the command line was read */
        const json_t *field = json_object_get(properties, key);
        if (!field)
            continue;
        json_t *value = NULL;
        if (raw) {
            value = json_loads(text, JSON_DECODE_ANY, NULL);
            if (value && !schema_value_check(field, value, why, sizeof why)) {
                json_decref(value);
                value = NULL;
            } else if (!value) {
                snprintf(why, sizeof why, "not JSON");
            }
        } else {
            schema_value_parse(field, text, &value, why, sizeof why);
        }
        if (!value) {
            term_errorf("--answer %s: %s", key, why);
            if (!p->interactive)
                return false;
            continue; /* asked at the terminal instead */
        }
        json_object_set_new(content, key, value);
    }
    return true;
}

static bool is_required(const json_t *schema, const char *key)
{
    size_t i;
    const json_t *name;
    json_array_foreach(json_object_get(schema, "required"), i, name)
        if (json_is_string(name) && strcmp(json_string_value(name), key) == 0)
            return true;
    return false;
}

/* What a field gets without being asked: its default, and with --yes a
 * yes for a yes/no question that has none. NULL when nothing. */
static json_t *unasked(const json_t *field, bool yes)
{
    const json_t *def = json_object_get(field, "default");
    if (def)
        return json_incref((json_t *)def);
    return yes && schema_value_is_boolean(field) ? json_true() : NULL;
}

static int answer_form(const elicit_policy_t *p, const json_t *params, json_t **result_out)
{
    const json_t *schema = json_object_get(params, "requestedSchema");
    const json_t *properties = json_object_get(schema, "properties");
    json_t *content = json_object();
    if (!content || !apply_answers(p, properties, content)) {
        json_decref(content);
        return -1;
    }
    bool decided = p->yes || p->n_answers > 0; /* the command line answers */
    if (!decided && !p->interactive) {
        term_errorf("there is no terminal to ask on: pass --yes, --answer KEY=VALUE or --decline");
        json_decref(content);
        return -1;
    }
    bool asked = false;
    const char *key;
    const json_t *field;
    json_object_foreach((json_t *)properties, key, field) {
        if (json_object_get(content, key))
            continue;
        bool required = is_required(schema, key);
        json_t *value = NULL;
        if (p->yes || !p->interactive) {
            value = unasked(field, p->yes);
        } else {
            asked = true;
            if (tty_ask_field(key, field, required, &value) < 0) {
                json_decref(content);
                return -1;
            }
        }
        if (!value && required) {
            char want[256];
            term_errorf("the form needs \"%s\" (%s): pass --answer %s=VALUE", key,
                        schema_value_describe(field, want, sizeof want), key);
            json_decref(content);
            return -1;
        }
        if (value)
            json_object_set_new(content, key, value);
    }
    int send = asked ? tty_confirm("  Send this answer?", true) : 1;
    if (send < 0) {
        json_decref(content);
        return -1;
    }
    if (send == 0) {
        json_decref(content);
        *result_out = action("decline");
        return 0;
    }
    *result_out = json_pack("{s:s, s:o}", "action", "accept", "content", content);
    return *result_out ? 0 : -1;
}

/* A legacy server's requests are answered on threads of their own: one
 * question at a time. */
static pthread_mutex_t one_at_a_time = PTHREAD_MUTEX_INITIALIZER;

static int answer(const elicit_policy_t *p, const json_t *params, json_t **result_out)
{
    announce(params);
    if (p->decline) {
        term_notef("declined with --decline");
        *result_out = action("decline");
        return 0;
    }
    const char *mode = json_string_value(json_object_get(params, "mode"));
    if (mode && strcmp(mode, "url") == 0)
        return answer_url(p, params, result_out);
    return answer_form(p, params, result_out);
}

int elicit_answer(void *user, const json_t *params, json_t **result_out)
{
    pthread_mutex_lock(&one_at_a_time);
    int rc = answer(user, params, result_out);
    pthread_mutex_unlock(&one_at_a_time);
    return rc;
}
