/* metrics.c -- what /metrics tells beyond the manager's snapshot: per-class
 * counters of processed and failed jobs with a job duration histogram
 * (counted where a job ends, processor.c), the sizes of the retry, schedule
 * and dead sets (read at the heartbeat, heartbeat.c), and the standard
 * process_* metrics from /proc/self. Touches no Redis key itself.
 *
 * The class table is a fixed open-addressed hash under one mutex: a job's
 * end costs one short lock and no allocation once its class is known. At
 * most HH_METRICS_MAX_CLASSES classes are counted apart; further classes
 * go to "__other__", so hostile class names cannot grow memory. */
#include "metrics.h"
#include "util.h"

#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* Prometheus's usual latency buckets, stretched to a minute for jobs. */
static const double bounds[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
static const char *const bound_text[] = {"0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5",
                                         "1",     "2.5",  "5",     "10",   "30",  "60"};
#define NBOUNDS (sizeof(bounds) / sizeof(bounds[0]))
#define NSLOTS 2048 /* a power of two over twice the cap: probes stay short */

typedef struct cls {
    char *name; /* NULL: free slot */
    uint64_t processed, failed;
    uint64_t buckets[NBOUNDS + 1]; /* per bucket, not cumulative; the last is +Inf */
    double sum;
} cls;

struct hh__metrics {
    pthread_mutex_t mu;
    size_t nclasses; /* named ones, "__other__" not counted */
    cls other;
    cls slots[NSLOTS];
    int64_t sets[3]; /* retry, schedule, dead; -1 before the first read */
};

hh__metrics *hh__metrics_new(void) {
    hh__metrics *mx = calloc(1, sizeof(*mx));
    if (!mx) return NULL;
    if (pthread_mutex_init(&mx->mu, NULL) != 0) {
        free(mx);
        return NULL;
    }
    mx->sets[0] = mx->sets[1] = mx->sets[2] = -1;
    return mx;
}

void hh__metrics_free(hh__metrics *mx) {
    if (!mx) return;
    for (size_t i = 0; i < NSLOTS; i++) free(mx->slots[i].name);
    pthread_mutex_destroy(&mx->mu);
    free(mx);
}

static uint64_t hash(const char *s) {
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

/* The class's entry, made if there is room; "__other__" otherwise (and on
 * out of memory, so a job is never left uncounted). Under mx->mu. */
static cls *find(hh__metrics *mx, const char *klass) {
    if (!strcmp(klass, HH_METRICS_OTHER)) return &mx->other;
    for (size_t i = hash(klass) & (NSLOTS - 1);; i = (i + 1) & (NSLOTS - 1)) {
        cls *c = &mx->slots[i];
        if (!c->name) {
            if (mx->nclasses >= HH_METRICS_MAX_CLASSES || !(c->name = strdup(klass))) return &mx->other;
            mx->nclasses++;
            return c;
        }
        if (!strcmp(c->name, klass)) return c;
    }
}

void hh__metrics_job(hh__metrics *mx, const char *klass, double seconds, int failed) {
    if (!mx) return;
    if (!klass) klass = "";
    if (!(seconds >= 0)) seconds = 0; /* NaN or a clock step back */
    size_t b = 0;
    while (b < NBOUNDS && seconds > bounds[b]) b++;
    pthread_mutex_lock(&mx->mu);
    cls *c = find(mx, klass);
    c->processed++;
    if (failed) c->failed++;
    c->buckets[b]++;
    c->sum += seconds;
    pthread_mutex_unlock(&mx->mu);
}

void hh__metrics_set_sizes(hh__metrics *mx, int64_t retry, int64_t scheduled, int64_t dead) {
    if (!mx) return;
    pthread_mutex_lock(&mx->mu);
    mx->sets[0] = retry;
    mx->sets[1] = scheduled;
    mx->sets[2] = dead;
    pthread_mutex_unlock(&mx->mu);
}

/* ------------------------------------------------------------ rendering */

void hh__prom_printf(hh__prom *o, const char *fmt, ...) {
    while (!o->oom) {
        size_t room = o->cap - o->len;
        va_list ap;
        va_start(ap, fmt);
        int n = hh__vsnprintf_c(o->s ? o->s + o->len : NULL, room, fmt, ap); /* "0.5" in any locale */
        va_end(ap);
        if (n < 0) {
            o->oom = 1;
            break;
        }
        if ((size_t)n < room) {
            o->len += (size_t)n;
            break;
        }
        size_t cap = o->cap ? o->cap : 4096;
        while (cap - o->len <= (size_t)n) cap *= 2;
        char *s = realloc(o->s, cap);
        if (!s) {
            o->oom = 1;
            break;
        }
        o->s = s;
        o->cap = cap;
    }
}

char *hh__prom_take(hh__prom *o) {
    if (o->oom || !o->s) {
        free(o->s);
        return o->oom ? NULL : strdup("");
    }
    return o->s;
}

/* A label value as the text format wants it: \\, \" and \n escaped. Bytes
 * that are not UTF-8 become U+FFFD: the format's text is UTF-8 and a
 * scraper rejects the whole page for one bad byte. */
void hh__prom_label(hh__prom *o, const char *v) {
    const unsigned char *p = (const unsigned char *)v;
    while (*p) {
        if (*p == '\\') hh__prom_printf(o, "\\\\");
        else if (*p == '"') hh__prom_printf(o, "\\\"");
        else if (*p == '\n') hh__prom_printf(o, "\\n");
        else if (*p < 0x80) hh__prom_printf(o, "%c", *p);
        else {
            size_t n = *p >= 0xf0 && *p <= 0xf4 ? 4 : *p >= 0xe0 ? 3 : *p >= 0xc2 && *p < 0xe0 ? 2 : 0;
            size_t k = 1;
            while (n && k < n && (p[k] & 0xc0) == 0x80) k++;
            if (n && k == n) {
                hh__prom_printf(o, "%.*s", (int)n, (const char *)p);
                p += n;
            } else {
                hh__prom_printf(o, "\xef\xbf\xbd");
                p++;
            }
            continue;
        }
        p++;
    }
}

void hh__prom_header(hh__prom *o, const char *name, const char *type, const char *help) {
    hh__prom_printf(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A value in Go's float syntax, which the text format uses. */
void hh__prom_value(hh__prom *o, double v) {
    if (isnan(v)) hh__prom_printf(o, " NaN\n");
    else if (isinf(v)) hh__prom_printf(o, v > 0 ? " +Inf\n" : " -Inf\n");
    else if (v == floor(v) && fabs(v) < 1e15) hh__prom_printf(o, " %.0f\n", v);
    else hh__prom_printf(o, " %.15g\n", v); /* 0.07, not 0.070000000000000007 */
}

static void put_class_counter(hh__prom *o, const char *metric, const cls *c, uint64_t v) {
    hh__prom_printf(o, "%s{class=\"", metric);
    hh__prom_label(o, c->name);
    hh__prom_printf(o, "\"} %llu\n", (unsigned long long)v);
}

char *hh__metrics_text(hh__metrics *mx) {
    hh__prom o = {0};
    /* A copy of the table, so the text is built without the lock, and
     * room for the most it can hold, allocated before taking the lock: the
     * processor threads wait for a scrape only while it copies. */
    cls *snap = NULL;
    size_t n = 0;
    int64_t sets[3] = {-1, -1, -1};
    if (mx) {
        snap = malloc((HH_METRICS_MAX_CLASSES + 1) * sizeof(*snap));
        if (!snap) return NULL;
        pthread_mutex_lock(&mx->mu);
        for (size_t i = 0; i < NSLOTS; i++)
            if (mx->slots[i].name) snap[n++] = mx->slots[i];
        if (mx->other.processed) snap[n++] = mx->other;
        memcpy(sets, mx->sets, sizeof(sets));
        pthread_mutex_unlock(&mx->mu);
        /* the names stay: entries are never removed before hh__metrics_free */
        for (size_t i = 0; i < n; i++)
            if (!snap[i].name) snap[i].name = HH_METRICS_OTHER;
    }
    hh__prom_header(
        &o, "hiredhand_class_jobs_processed_total", "counter",
        "Jobs of the class finished by this process since start, failures included (Active Job: the wrapped "
        "class; past 1000 classes, \"__other__\").");
    for (size_t i = 0; i < n; i++)
        put_class_counter(&o, "hiredhand_class_jobs_processed_total", &snap[i], snap[i].processed);
    hh__prom_header(&o, "hiredhand_class_jobs_failed_total", "counter",
                    "Jobs of the class that failed in this process since start.");
    for (size_t i = 0; i < n; i++) put_class_counter(&o, "hiredhand_class_jobs_failed_total", &snap[i], snap[i].failed);
    hh__prom_header(&o, "hiredhand_job_duration_seconds", "histogram", "Time the job's handler ran, by class.");
    for (size_t i = 0; i < n; i++) {
        uint64_t cum = 0;
        for (size_t b = 0; b <= NBOUNDS; b++) {
            cum += snap[i].buckets[b];
            hh__prom_printf(&o, "hiredhand_job_duration_seconds_bucket{class=\"");
            hh__prom_label(&o, snap[i].name);
            hh__prom_printf(&o, "\",le=\"%s\"} %llu\n", b < NBOUNDS ? bound_text[b] : "+Inf", (unsigned long long)cum);
        }
        hh__prom_printf(&o, "hiredhand_job_duration_seconds_sum{class=\"");
        hh__prom_label(&o, snap[i].name);
        hh__prom_printf(&o, "\"}");
        hh__prom_value(&o, snap[i].sum);
        hh__prom_printf(&o, "hiredhand_job_duration_seconds_count{class=\"");
        hh__prom_label(&o, snap[i].name);
        hh__prom_printf(&o, "\"} %llu\n", (unsigned long long)cum);
    }
    free(snap);

    hh__prom_header(&o, "hiredhand_set_size", "gauge",
                    "Jobs in the retry, schedule and dead sets, read at the last heartbeat. The same on every process "
                    "(scope=\"cluster\"): aggregate with max(), not sum().");
    static const char *const set_names[] = {"retry", "schedule", "dead"};
    for (size_t i = 0; i < 3; i++)
        if (sets[i] >= 0)
            hh__prom_printf(&o, "hiredhand_set_size{set=\"%s\",scope=\"cluster\"} %lld\n", set_names[i],
                            (long long)sets[i]);
    return hh__prom_take(&o);
}

/* ----------------------------------------------------- process metrics */

char *hh__metrics_process_text(void) {
    hh__prom o = {0};
    long page = sysconf(_SC_PAGESIZE);
    hh__proc_info pi;
    int have_stat = hh__proc_stat((long)getpid(), &pi) == 0;
    if (have_stat) {
        hh__prom_header(&o, "process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.");
        hh__prom_printf(&o, "process_cpu_seconds_total");
        hh__prom_value(&o, pi.utime + pi.stime);
        hh__prom_header(&o, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.");
        hh__prom_printf(&o, "process_virtual_memory_bytes %llu\n", pi.vsize);
        if (pi.start > 0) {
            hh__prom_header(&o, "process_start_time_seconds", "gauge",
                            "Start time of the process since unix epoch in seconds.");
            hh__prom_printf(&o, "process_start_time_seconds");
            hh__prom_value(&o, pi.start);
        }
    }
    /* statm's resident count is the one the client libraries read */
    unsigned long long vm, res;
    FILE *f = fopen("/proc/self/statm", "re");
    if (f) {
        if (fscanf(f, "%llu %llu", &vm, &res) == 2 && page > 0) {
            hh__prom_header(&o, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
            hh__prom_printf(&o, "process_resident_memory_bytes %llu\n", res * (unsigned long long)page);
        }
        fclose(f);
    } else if (have_stat && page > 0) {
        hh__prom_header(&o, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
        hh__prom_printf(&o, "process_resident_memory_bytes %llu\n", pi.rss);
    }
    DIR *d = opendir("/proc/self/fd");
    if (d) {
        long n = 0;
        struct dirent *e;
        while ((e = readdir(d)) != NULL)
            if (e->d_name[0] != '.') n++;
        closedir(d);
        hh__prom_header(&o, "process_open_fds", "gauge", "Number of open file descriptors.");
        hh__prom_printf(&o, "process_open_fds %ld\n", n - 1); /* not the one reading the directory */
    }
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        hh__prom_header(&o, "process_max_fds", "gauge", "Maximum number of open file descriptors.");
        if (rl.rlim_cur == RLIM_INFINITY) hh__prom_printf(&o, "process_max_fds +Inf\n");
        else hh__prom_printf(&o, "process_max_fds %llu\n", (unsigned long long)rl.rlim_cur);
    }
    return hh__prom_take(&o);
}
