/* Text into an HTML page: every character that could open markup or end an
 * attribute escaped (the page quotes attributes with '"' or '\''). One
 * escaper for every section of the page. */
#ifndef CAPGUARD_HTML_TEXT_H
#define CAPGUARD_HTML_TEXT_H

#include <stdio.h>

void cgr_html_text(FILE *o, const char *s);

#endif
