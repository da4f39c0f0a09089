/*
 * skill_md.h - a skill's SKILL.md as both sides of the Skills extension
 * (io.modelcontextprotocol/skills, SEP-2640) must read it.
 *
 * A skill is a directory of files whose SKILL.md opens with YAML
 * frontmatter:
 *
 *     ---
 *     name: pdf-processing
 *     description: Extract, fill, and assemble PDF documents
 *     ---
 *     The body: instructions for the model.
 *
 * A server publishes that frontmatter, rendered as a JSON object, in every
 * skill entry of skills/list and skills/get; a host that fetches the
 * SKILL.md parses it again and must refuse the skill when the two differ
 * in any field. Both sides therefore need the same conversion, which is
 * YAML 1.2 with its core schema: plain `null`, `~` and the empty value are
 * null, `true`/`false` booleans, integers in decimal, 0o octal or 0x hex,
 * floats; everything else, and every quoted scalar, a string. That is
 * what the `yaml` npm package (the conformance suite's reader) does by
 * default.
 *
 * The YAML is read with libyaml, loaded the first time a frontmatter is
 * parsed (src/lazy_library.h): programs that never touch a skill do not
 * map it.
 */
#ifndef MCP_SKILL_MD_H
#define MCP_SKILL_MD_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "mcp/common.h"

/* Limits on what a frontmatter may hold, checked while it is parsed: a
 * SKILL.md comes from a peer (the client) or from disk (the server). */
#define MCP_SKILL_MD_MAX_FRONTMATTER (64 * 1024) /* bytes between the fences */
#define MCP_SKILL_MD_MAX_DEPTH 32                /* nested mappings/sequences */

/*
 * Parses the frontmatter at the start of the SKILL.md text `text` (`len`
 * bytes, need not be NUL-terminated): an optional UTF-8 byte order mark,
 * a first line "---", the YAML, and a closing line "---" (trailing spaces
 * or tabs allowed after either fence; "\n" or "\r\n" line ends; the
 * closing fence may end the text). The YAML must be one mapping; keys are
 * rendered as strings, as the `yaml` package's JavaScript objects have
 * them ("1.0: x" and "0x1: x" have the key "1", "~: x" the key ""). On
 * success *frontmatter_out is a new JSON object (the caller owns it) and
 * *body_offset_out, when not NULL, the offset of the first byte after the
 * closing fence's line.
 *
 * Refused with MCP_EINVAL and a message saying what and where: no
 * frontmatter block; a YAML syntax error; a document that is not a
 * mapping; a duplicate key; an alias or anchor (refused rather than
 * expanded, so no document can grow by reference); a tag other than the
 * core schema's own (!!str, !!int, !!float, !!bool, !!null, !!map, !!seq);
 * a value JSON cannot carry (.inf, .nan, an integer beyond int64, a float
 * beyond a double); more than MCP_SKILL_MD_MAX_FRONTMATTER bytes or
 * MCP_SKILL_MD_MAX_DEPTH levels; a frontmatter that is not UTF-8 (the body
 * is not read). MCP_EUNSUPPORTED when libyaml cannot be loaded;
 * MCP_ENOMEM. Thread-safe.
 */
int mcp_skill_md_frontmatter(const char *text, size_t len, json_t **frontmatter_out,
                             size_t *body_offset_out, mcp_error_t *err);

/*
 * Are two frontmatter values the same in content? Deep equality of JSON
 * values in which object key order does not matter and numbers compare by
 * value (1 and 1.0 are equal). NULL equals only NULL.
 */
bool mcp_skill_md_frontmatter_equal(const json_t *a, const json_t *b);

/*
 * Is `name` a valid skill name (the Agent Skills naming rules SEP-2640
 * adopts): 1 to 64 characters of lowercase ASCII letters, digits and
 * hyphens, neither starting nor ending with a hyphen, with no two hyphens
 * in a row.
 */
bool mcp_skill_name_valid(const char *name);

#endif /* MCP_SKILL_MD_H */
