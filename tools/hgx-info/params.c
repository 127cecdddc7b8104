/*
 * params.c -- every environment parameter hgx reads (hgx_param_get_info):
 * who reads it, its type, default and range, the value set now, and what it
 * changes.
 */
#include "hgx_info.h"

#include <hgx.h>

#include <stdio.h>
#include <string.h>

/* The default as text: a number, yes/no, or a string (none when NULL). */
static void format_default(const struct hgx_param_info *p, char *buf, size_t size)
{
    if (strcmp(p->type, "string") == 0)
        snprintf(buf, size, "%s", p->def_string ? p->def_string : "(none)");
    else if (strcmp(p->type, "bool") == 0)
        snprintf(buf, size, "%s", p->def ? "yes" : "no");
    else
        snprintf(buf, size, "%lld", p->def);
}

int hgx_info_list_params(void)
{
    struct hgx_param_info p;
    unsigned int i = 0;
    hg_return_t ret;

    printf("parameters (environment variables; \"now\" when set in this environment):\n");
    for (; (ret = hgx_param_get_info(i, &p)) == HG_SUCCESS; i++) {
        char def[64];
        format_default(&p, def, sizeof def);
        printf("  %-28s %-5s %-6s default %s", p.name, p.scope, p.type, def);
        if (strcmp(p.type, "int") == 0 || strcmp(p.type, "size") == 0)
            printf(", range %lld-%lld", p.min, p.max);
        if (p.value)
            printf(", now \"%s\"", p.value);
        printf("\n      %s\n", p.help);
    }
    if (ret != HG_NOENTRY || i == 0) {
        fprintf(stderr, "hgx-info: listing parameters failed after %u: %s\n", i,
                HG_Error_to_string(ret));
        return 1;
    }
    return 0;
}
