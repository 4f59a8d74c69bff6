/* XML text (hs_xml.h). */
#include "hs_xml.h"

void hs__xml_write_text(FILE *f, const char *s) {
  for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
    switch (*c) {
      case '<': fputs("&lt;", f); break;
      case '>': fputs("&gt;", f); break;
      case '&': fputs("&amp;", f); break;
      case '"': fputs("&quot;", f); break;
      case '\'': fputs("&apos;", f); break;
      default:
        /* XML 1.0 allows no other control characters, even escaped. */
        if (*c < 0x20 && *c != '\n' && *c != '\t') fputc(' ', f);
        else fputc(*c, f);
    }
  }
}
