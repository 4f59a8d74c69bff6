/* XML (and HTML) text: the one escaper of the JUnit report and the HTML
 * benchmark report. */
#ifndef HS_XML_H
#define HS_XML_H

#include <stdio.h>

/* Write `s` as element text or an attribute value: markup characters as
 * entities, control characters other than tab and newline (which XML 1.0
 * does not allow even escaped) as spaces. */
void hs__xml_write_text(FILE *f, const char *s);

#endif
