/* metrics.h -- per-class job counters and duration histograms, the
 * cluster-wide set sizes read at the heartbeat, and the standard process
 * metrics, rendered as Prometheus text for /metrics (http.c). Internal:
 * none of it is in the public header. */
#ifndef HH_METRICS_H
#define HH_METRICS_H

#include <stddef.h>
#include <stdint.h>

/* Classes counted apart; the rest share the label "__other__", so hostile
 * class names cannot grow the table without bound. */
#define HH_METRICS_MAX_CLASSES 1000
#define HH_METRICS_OTHER "__other__"

typedef struct hh__metrics hh__metrics;

hh__metrics *hh__metrics_new(void);
void hh__metrics_free(hh__metrics *mx);
/* A job of klass ended after seconds; failed when its handler failed.
 * Thread-safe; one short lock, no allocation once the class is known. */
void hh__metrics_job(hh__metrics *mx, const char *klass, double seconds, int failed);
/* The sizes of retry, schedule and dead read at the last beat (-1: not read). */
void hh__metrics_set_sizes(hh__metrics *mx, int64_t retry, int64_t scheduled, int64_t dead);
/* The per-class and set-size families as text; free() the result (NULL: out
 * of memory). mx may be NULL: only the families' HELP and TYPE lines. */
char *hh__metrics_text(hh__metrics *mx);
/* The standard process_* families (Prometheus client libraries' names),
 * read from /proc/self and getrlimit; free() the result. */
char *hh__metrics_process_text(void);

/* A Prometheus text exposition being written (metrics.c and http.c's
 * /metrics): a growable buffer that, once an allocation failed, keeps
 * failing quietly; hh__prom_take() then returns NULL. Zero-initialise. */
typedef struct hh__prom {
    char *s;
    size_t len, cap;
    int oom;
} hh__prom;

/* Appends printf-formatted text; numbers in the C locale ("0.5"). */
void hh__prom_printf(hh__prom *o, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* A label value: \\, \" and \n escaped, bytes that are not UTF-8 as U+FFFD
 * (a scraper rejects the whole page for one bad byte). */
void hh__prom_label(hh__prom *o, const char *v);
/* The # HELP and # TYPE lines of a family. */
void hh__prom_header(hh__prom *o, const char *name, const char *type, const char *help);
/* " <value>\n" in Go's float syntax (NaN, +Inf, integers without a point). */
void hh__prom_value(hh__prom *o, double v);
/* The text (the caller frees it), "" when empty, NULL after a failed
 * allocation. */
char *hh__prom_take(hh__prom *o);

#endif
