/* shell.c — see shell.h. */
#include "provisioner/shell.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

void prov_sh_quote(struct sbuf *b, const char *value)
{
    sbuf_add(b, "'", 1);
    for (const char *p = value; *p; p++) {
        if (*p == '\'')
            sbuf_adds(b, "'\\''");
        else
            sbuf_add(b, p, 1);
    }
    sbuf_add(b, "'", 1);
}

char *prov_sh_template(const char *tmpl, int nargs, const char *const *args)
{
    struct sbuf b;
    sbuf_init(&b, strlen(tmpl) + 64);
    int used = 0;
    for (const char *p = tmpl; *p; p++) {
        if (*p != '%') {
            sbuf_add(&b, p, 1);
            continue;
        }
        p++;
        if (*p == '%') {
            sbuf_add(&b, "%", 1);
        } else if (*p == 's' && used < nargs && args[used] != NULL) {
            prov_sh_quote(&b, args[used++]);
        } else {
            free(sbuf_take(&b, NULL));
            return NULL;
        }
    }
    if (used != nargs) {
        free(sbuf_take(&b, NULL));
        return NULL;
    }
    return sbuf_take(&b, NULL);
}

int prov_valid_abs_path(const char *s)
{
    size_t n = strlen(s);
    if (n < 2 || n > 512 || s[0] != '/')
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && strchr("._/-", s[i]) == NULL)
            return 0;
    return strstr(s, "/../") == NULL && strcmp(s + n - 3 > s ? s + n - 3 : s, "/..") != 0 &&
           strstr(s, "//") == NULL;
}

int prov_valid_version(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 32 || !isdigit((unsigned char)s[0]))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!isdigit((unsigned char)s[i]) && s[i] != '.')
            return 0;
    return 1;
}

int prov_valid_stop_command(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 512 || !(isalnum((unsigned char)s[0]) || s[0] == '/'))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && strchr(" ._/=:-", s[i]) == NULL)
            return 0;
    return 1;
}
