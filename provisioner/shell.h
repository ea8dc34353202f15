/* shell.h — remote commands are built only from fixed templates. Every variable part is
 * validated against a strict pattern by its caller, then single-quoted here for POSIX sh:
 * the quoted text cannot end the quote, so no character in it is special. */
#ifndef GPUFLEET_SHELL_H
#define GPUFLEET_SHELL_H

#include "common/sbuf.h"

/* Appends 'value' with every ' written as '\''. */
void prov_sh_quote(struct sbuf *b, const char *value);
/* Builds a command from a template in which each %s is replaced by the next argument,
 * quoted. No other % directive is allowed (%% writes %). Caller frees; NULL on error. */
char *prov_sh_template(const char *tmpl, int nargs, const char *const *args);

/* Patterns for values that reach commands. */
int prov_valid_abs_path(const char *s); /* ^/[A-Za-z0-9._/-]+$, no "..", not "/" */
int prov_valid_version(const char *s);  /* digits and dots, 1-32 */
/* A pool's stop_command, run as one command line (not quoted: it is operator-given and
 * may have arguments): 1-512 of [A-Za-z0-9 ._/=:-], starting with a letter, digit or /.
 * No quote, $, ;, |, &, >, <, `, newline or other shell syntax can pass. */
int prov_valid_stop_command(const char *s);

#endif
