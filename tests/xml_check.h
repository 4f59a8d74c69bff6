/* A strict little XML well-formedness check for the tests: every tag
 * closed in order, attributes quoted, only the five predefined entities
 * (or numeric ones), no '<' or '&' left raw in text or attribute values.
 * Counts elements by name. Header-only. */
#ifndef HS_TEST_XML_CHECK_H
#define HS_TEST_XML_CHECK_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

typedef struct xml_counts {
  int elements;
  int by_name[8]; /* counts of names[i] */
  const char *names[8];
  int n_names;
} xml_counts;

static inline bool xml_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         c == '-' || c == '_' || c == ':' || c == '.';
}

/* Text between markup: entities must be known. */
static inline const char *xml_text_ok(const char *s, const char *end) {
  for (; s < end; s++) {
    if (*s == '>') continue; /* allowed raw in text, though we escape it */
    if (*s != '&') continue;
    const char *semi = memchr(s, ';', (size_t)(end - s));
    if (!semi) return "'&' without ';'";
    size_t n = (size_t)(semi - s - 1);
    const char *e = s + 1;
    bool ok = (n == 2 && (!strncmp(e, "lt", 2) || !strncmp(e, "gt", 2))) ||
              (n == 3 && !strncmp(e, "amp", 3)) ||
              (n == 4 && (!strncmp(e, "quot", 4) || !strncmp(e, "apos", 4))) ||
              (n >= 2 && e[0] == '#');
    if (!ok) return "unknown entity";
    s = semi;
  }
  return NULL;
}

/* NULL when well-formed; else a description (static buffer). */
static inline const char *xml_check(const char *doc, xml_counts *c) {
  static char msg[256];
  const char *stack[64];
  size_t stack_len[64];
  int depth = 0, roots = 0;
  const char *s = doc;
  if (!strncmp(s, "<?xml", 5)) {
    const char *e = strstr(s, "?>");
    if (!e) return "unterminated XML declaration";
    s = e + 2;
  }
  while (*s) {
    const char *lt = strchr(s, '<');
    const char *text_end = lt ? lt : s + strlen(s);
    const char *why = xml_text_ok(s, text_end);
    if (why) return why;
    if (depth == 0)
      for (const char *p = s; p < text_end; p++)
        if (*p != ' ' && *p != '\n' && *p != '\t' && *p != '\r') return "text outside the root";
    if (!lt) break;
    s = lt + 1;
    bool closing = *s == '/';
    if (closing) s++;
    const char *name = s;
    while (xml_name_char(*s)) s++;
    size_t nlen = (size_t)(s - name);
    if (nlen == 0) return "empty tag name";
    if (closing) {
      while (*s == ' ') s++;
      if (*s != '>') return "bad closing tag";
      if (depth == 0) return "closing tag without an open one";
      depth--;
      if (stack_len[depth] != nlen || strncmp(stack[depth], name, nlen) != 0) {
        snprintf(msg, sizeof msg, "</%.*s> closes <%.*s>", (int)nlen, name, (int)stack_len[depth],
                 stack[depth]);
        return msg;
      }
      s++;
      continue;
    }
    /* attributes */
    for (;;) {
      while (*s == ' ' || *s == '\n' || *s == '\t') s++;
      if (*s == '>' || (*s == '/' && s[1] == '>')) break;
      const char *an = s;
      while (xml_name_char(*s)) s++;
      if (s == an) return "bad attribute name";
      if (*s++ != '=') return "attribute without '='";
      char q = *s++;
      if (q != '"' && q != '\'') return "unquoted attribute";
      const char *v = s;
      while (*s && *s != q) {
        if (*s == '<') return "raw '<' in an attribute";
        s++;
      }
      if (!*s) return "unterminated attribute";
      why = xml_text_ok(v, s);
      if (why) return why;
      s++;
    }
    c->elements++;
    for (int i = 0; i < c->n_names; i++)
      if (strlen(c->names[i]) == nlen && !strncmp(c->names[i], name, nlen)) c->by_name[i]++;
    if (depth == 0) roots++;
    if (*s == '/') {
      s += 2;
      continue;
    }
    s++;
    if (depth == 64) return "nesting too deep";
    stack[depth] = name;
    stack_len[depth] = nlen;
    depth++;
  }
  if (depth) return "unclosed element";
  if (roots != 1) return "not exactly one root element";
  return NULL;
}

#endif
