/*
 * cli.h - the subcommands (`skill-mcp NAME ...`), one cli_*.c each; main.c
 * lists them in its one table. Each takes argv after NAME and returns the
 * process exit code: 0, 1 (the command found a problem), 2 (usage).
 */
#ifndef SKILL_CLI_H
#define SKILL_CLI_H

#include <stdio.h>

/* skill-mcp export DIR [--skills DIR ...] (cli_export.c): the discovery
 * index and its artifacts written to DIR as static files. */
int cli_export(int argc, char **argv);

/* skill-mcp lock approve|revoke|diff|status|gc ... (cli_lock.c) */
int cli_lock(int argc, char **argv);

/*
 * skill-mcp validate DIR... and skill-mcp list DIR... (cli_validate.c);
 * the _run forms write to out and err (tests). Exit status: validate 0 (no
 * errors), 1 (errors), 2 (usage, unreadable DIR); list 0 or 2.
 */
int cli_validate(int argc, char **argv);
int cli_list(int argc, char **argv);
int cli_validate_run(int argc, char **argv, FILE *out, FILE *err);
int cli_list_run(int argc, char **argv, FILE *out, FILE *err);

/* skill-mcp fetch URL ... (cli_fetch.c); the _run form writes to out and
 * err. Exit status as fetch_install's, 2 on usage. */
int cli_fetch(int argc, char **argv);
int cli_fetch_run(int argc, char **argv, FILE *out, FILE *err);

/*
 * skill-mcp token add NAME [--rpm N] --file FILE (cli_token.c): makes a
 * random token ("smcp_" + 43 base64url characters from 32 bytes of
 * getrandom), appends "NAME sha256hex [rpm]" to FILE (created 0600 when
 * missing; a NAME already present or an invalid NAME is refused) and prints
 * the token once on stdout. Exit 0, 1 on failure, 2 on usage.
 */
int cli_token(int argc, char **argv);

#endif
