/*
 * dynlib.h - libcurl, libarchive and libjose, loaded the first time a
 * feature needs one.
 *
 * Most processes use none of them: a server without --auth jwt or a
 * discovery archive asked for, and most commands. Linked, the three and the
 * ~30 libraries they pull in (krb5, ldap, icu, gnutls, ...) cost every
 * start ~15 ms of loading and relocation and ~6 MB of RSS. The binary names
 * their sonames (the ones it was built against) and loads them with
 * dlopen; the package still depends on them.
 *
 * The rule: a function of one of them is called as DL(name)(args), after
 * dynlib_need() for its library returned 0 in the same call path (it is
 * what orders the loading thread's writes of the table before the reads;
 * its second and later calls are one atomic load).
 */
#ifndef SKILL_DYNLIB_H
#define SKILL_DYNLIB_H

#include <stddef.h>

#include <archive.h>
#include <archive_entry.h>
#include <curl/curl.h>
#include <jose/b64.h>
#include <jose/jws.h>

enum dynlib { DL_CURL, DL_ARCHIVE, DL_JOSE, DL_COUNT };

/* X(library, function): every function the binary calls in them. */
#define DYNLIB_FUNCS(X) \
    X(DL_CURL, curl_easy_cleanup) \
    X(DL_CURL, curl_easy_getinfo) \
    X(DL_CURL, curl_easy_init) \
    X(DL_CURL, curl_easy_perform) \
    X(DL_CURL, curl_easy_setopt) \
    X(DL_CURL, curl_easy_strerror) \
    X(DL_CURL, curl_free) \
    X(DL_CURL, curl_global_cleanup) \
    X(DL_CURL, curl_global_init) \
    X(DL_CURL, curl_slist_append) \
    X(DL_CURL, curl_slist_free_all) \
    X(DL_CURL, curl_url) \
    X(DL_CURL, curl_url_cleanup) \
    X(DL_CURL, curl_url_get) \
    X(DL_CURL, curl_url_set) \
    X(DL_ARCHIVE, archive_entry_copy_pathname) \
    X(DL_ARCHIVE, archive_entry_filetype) \
    X(DL_ARCHIVE, archive_entry_free) \
    X(DL_ARCHIVE, archive_entry_hardlink) \
    X(DL_ARCHIVE, archive_entry_new) \
    X(DL_ARCHIVE, archive_entry_pathname) \
    X(DL_ARCHIVE, archive_entry_pathname_utf8) \
    X(DL_ARCHIVE, archive_entry_perm) \
    X(DL_ARCHIVE, archive_entry_set_filetype) \
    X(DL_ARCHIVE, archive_entry_set_gid) \
    X(DL_ARCHIVE, archive_entry_set_mtime) \
    X(DL_ARCHIVE, archive_entry_set_perm) \
    X(DL_ARCHIVE, archive_entry_set_size) \
    X(DL_ARCHIVE, archive_entry_set_uid) \
    X(DL_ARCHIVE, archive_entry_size) \
    X(DL_ARCHIVE, archive_entry_size_is_set) \
    X(DL_ARCHIVE, archive_errno) \
    X(DL_ARCHIVE, archive_error_string) \
    X(DL_ARCHIVE, archive_read_data) \
    X(DL_ARCHIVE, archive_read_free) \
    X(DL_ARCHIVE, archive_read_new) \
    X(DL_ARCHIVE, archive_read_next_header) \
    X(DL_ARCHIVE, archive_read_open) \
    X(DL_ARCHIVE, archive_read_open_memory) \
    X(DL_ARCHIVE, archive_read_support_filter_gzip) \
    X(DL_ARCHIVE, archive_read_support_format_raw) \
    X(DL_ARCHIVE, archive_read_support_format_tar) \
    X(DL_ARCHIVE, archive_set_error) \
    X(DL_ARCHIVE, archive_write_add_filter_gzip) \
    X(DL_ARCHIVE, archive_write_close) \
    X(DL_ARCHIVE, archive_write_data) \
    X(DL_ARCHIVE, archive_write_free) \
    X(DL_ARCHIVE, archive_write_header) \
    X(DL_ARCHIVE, archive_write_new) \
    X(DL_ARCHIVE, archive_write_open) \
    X(DL_ARCHIVE, archive_write_set_bytes_in_last_block) \
    X(DL_ARCHIVE, archive_write_set_filter_option) \
    X(DL_ARCHIVE, archive_write_set_format_pax_restricted) \
    X(DL_JOSE, jose_b64_dec) \
    X(DL_JOSE, jose_b64_dec_buf) \
    X(DL_JOSE, jose_jws_ver)

/* Member names are the functions' own: a name followed by ')' or ';' is
 * not a call, so curl's checking macros (curl_easy_setopt(h, o, v)) leave
 * them alone. */
struct dynlib_table {
#define DYNLIB_MEMBER(lib, fn) __typeof__(&fn) fn;
    DYNLIB_FUNCS(DYNLIB_MEMBER)
#undef DYNLIB_MEMBER
};

extern struct dynlib_table dynlib_fn;

#define DL(fn) (*dynlib_fn.fn)

/* Loads lib and every function of it in the table: once per process when
 * that works; a failure is remembered for a second, then tried again (the
 * package may have been installed since, or the failure was passing: no
 * descriptor or memory left).
 * 0, or -1 with why (what failed, and the package to install) in err. */
int dynlib_need(enum dynlib lib, char *err, size_t errlen);

/* The soname lib is loaded from, as the binary was built. */
const char *dynlib_soname(enum dynlib lib);

#endif
