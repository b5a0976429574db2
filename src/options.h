/* options.h -- the check of hh_manager_options (options.c) as the library
 * itself applies it. No Redis keys. */
#ifndef HH_OPTIONS_H
#define HH_OPTIONS_H

#include <stddef.h>
#include "hiredhand.h"

/* hh_manager_options_check(), which passes try_bind 1: the http_bind
 * address is also bound and closed, so a port in use is refused before
 * anything starts. hh_manager_new() passes 0 (the address is parsed only):
 * a manager created early and started later takes its port at start, and
 * the port's state at creation proves nothing then. */
int hh__options_check(const hh_manager_options *caller_opts, int try_bind, char *errbuf, size_t errlen);

#endif
