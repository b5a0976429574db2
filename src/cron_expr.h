/* cron_expr.h -- cron expressions as fugit (sidekiq-cron's parser) reads
 * them: 5 fields (minute precision) or 6 (a leading seconds field), names,
 * ranges, lists, steps, `@hourly`-style aliases, `L` and `#n`, and an
 * optional trailing IANA time zone. Ticks are computed in the expression's
 * zone from the system's tz database, with fugit's rules for
 * daylight-saving gaps and repeats. Touches no Redis key: cron.c polls and
 * enqueues.
 *
 * Times are integer Unix seconds (UTC epoch). Thread safety: a parsed
 * expression is immutable; any thread may call next/prev on it at once. */
#ifndef HH_CRON_EXPR_H
#define HH_CRON_EXPR_H

#include <stddef.h>
#include <stdint.h>

typedef struct hh__cron_expr hh__cron_expr;

/* Parses `text`. `default_zone` is the zone of an expression that names
 * none (an IANA name such as "Europe/Berlin", "UTC", or an offset "+09:00"
 * as fugit takes them); NULL (or "") means the process's local zone (TZ,
 * else /etc/localtime, read now, at parse time), which is what fugit uses
 * in a Ruby process. Returns a new expression the caller frees with
 * hh__cron_expr_free, or NULL with a reason in err (NUL-terminated,
 * truncated to errlen) naming the part that is wrong or unsupported, e.g.
 * "minute field \"61\": out of range 0-59". */
hh__cron_expr *hh__cron_expr_parse(const char *text, const char *default_zone, char *err, size_t errlen);
void hh__cron_expr_free(hh__cron_expr *e);

/* The first tick strictly after `t`, as fugit's next_time(t) with `t`
 * given in the expression's zone (fugit's fall-back rule compares a
 * candidate's wall time and offset with t's there: the same wall time is
 * never yielded twice in a row); -1 if there is none within fugit's 2,048
 * cursor steps or where fugit raises (a midnight missing or repeated in the
 * zone). Costs a few dozen steps, no allocation. */
int64_t hh__cron_expr_next(const hh__cron_expr *e, int64_t t);

/* The last tick strictly before `t`, as fugit's previous_time(t) (which
 * starts its search at t - 1; sidekiq-cron's enqueue check uses it); -1 if
 * there is none, as for next. On a fall-back day both occurrences of a
 * repeated wall time are found. */
int64_t hh__cron_expr_prev(const hh__cron_expr *e, int64_t t);

/* The zone ticks are computed in (the expression's own, or the default it
 * was parsed with; "" for the process's local zone). Owned by e. */
const char *hh__cron_expr_zone(const hh__cron_expr *e);

#endif
