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

typedef struct hh_metrics hh_metrics;

hh_metrics *hh_metrics_new(void);
void hh_metrics_free(hh_metrics *mx);
/* A job of klass ended after seconds; failed when its handler failed.
 * Thread-safe; one short lock, no allocation once the class is known. */
void hh_metrics_job(hh_metrics *mx, const char *klass, double seconds, int failed);
/* The sizes of retry, schedule and dead read at the last beat (-1: not read). */
void hh_metrics_set_sizes(hh_metrics *mx, int64_t retry, int64_t scheduled, int64_t dead);
/* The per-class and set-size families as text; free() the result (NULL: out
 * of memory). mx may be NULL: only the families' HELP and TYPE lines. */
char *hh_metrics_text(hh_metrics *mx);
/* The standard process_* families (Prometheus client libraries' names),
 * read from /proc/self and getrlimit; free() the result. */
char *hh_metrics_process_text(void);

#endif
