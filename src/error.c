/* error.c -- why the last failing public call failed, per thread, as
 * dlerror() does: every public function that returns an error records a
 * human-readable reason here before it returns, and hh_last_error() reads
 * it back. Thread-local so that calls on other threads (a worker's own
 * threads included) never overwrite the caller's reason. hh_strerror()'s
 * fixed text per code lives here as well: hh__fail_plain() falls back on it,
 * and every file above may call it. No Redis keys. */
#include "error.h"

#include <stdio.h>
#include "hiredhand.h"
#include "util.h"

static _Thread_local char last_error[1024];

int hh__fail(int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    hh__vsnprintf_c(last_error, sizeof(last_error), fmt, ap); /* "0.5" in any locale */
    va_end(ap);
    return code;
}

const char *hh_strerror(int err) {
    switch (err) {
    case HH_OK: return "ok";
    case HH_ERR_INVALID: return "invalid argument";
    case HH_ERR_REDIS: return "Redis error";
    case HH_ERR_NOMEM: return "out of memory";
    case HH_ERR_IO: return "system error";
    case HH_ERR_STATE: return "not allowed in this state";
    case HH_ERR_EXISTS: return "already exists";
    case HH_ERR_NOTFOUND: return "not found";
    case HH_ERR_REFUSED: return "Redis refused the connection settings (password, user, db or Sentinel master name)";
    default: return "unknown error";
    }
}

int hh__fail_plain(int code) { return hh__fail(code, "%s", hh_strerror(code)); }

const char *hh_last_error(void) { return last_error; }
