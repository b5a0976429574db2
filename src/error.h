/* error.h -- the reason behind the last failing public call on this thread
 * (hh_last_error() in hiredhand.h). No Redis keys. */
#ifndef HH_ERROR_H
#define HH_ERROR_H

#include <stdarg.h>

/* Records the reason (printf-style) and returns code, so that a failing
 * call can end with `return hh__fail(HH_ERR_INVALID, "...", ...);`. */
int hh__fail(int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* The reason, if the call failed for the reason hh_strerror(code) says and
 * nothing more precise was recorded yet (an allocation failure, say). */
int hh__fail_plain(int code);

#endif
