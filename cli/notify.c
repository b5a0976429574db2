/* notify.c -- systemd's service notification protocol for `hiredhand work`
 * (Type=notify units): READY=1 once the worker fetches, STATUS= lines at
 * each heartbeat, STOPPING=1 when a stop begins, and WATCHDOG=1 pings while
 * heartbeats reach Redis. Built on the public API only: the heartbeat hook
 * and hh_manager_get_stats(). The protocol is systemd's, so this speaks it
 * through libsystemd's sd_notify(); built without libsystemd, a set
 * NOTIFY_SOCKET gets a warning and nothing is sent. Keys: none. */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cli.h"
#ifdef HH_HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

static struct {
    int on;              /* NOTIFY_SOCKET was set and libsystemd is in */
    double watchdog;     /* seconds (WATCHDOG_USEC), 0: no watchdog */
    double last_ping;    /* monotonic seconds of the last WATCHDOG=1 */
    atomic_int ready;    /* READY=1 sent */
    atomic_int stopping; /* STOPPING=1 sent */
} nt;

static double now_mono(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double now_real(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void send_state(const char *state) {
#ifdef HH_HAVE_SYSTEMD
    /* 0: keep NOTIFY_SOCKET; unsetting it would race with the threads'
     * getenv(). --exec children that inherit it are ignored by systemd
     * (NotifyAccess=main, the default for Type=notify). */
    (void)sd_notify(0, state);
#else
    (void)state;
#endif
}

/* "STATUS=..." for the state in st: what `systemctl status` shows. */
static void status_line(const hh_manager_stats *st, int ok, char *buf, size_t len) {
    if (st->stopping) snprintf(buf, len, "STATUS=stopping, %d busy", st->busy);
    else if (st->quiet) snprintf(buf, len, "STATUS=quiet, %d busy", st->busy);
    else if (!ok)
        snprintf(buf, len, "STATUS=waiting for Redis: %.200s",
                 st->heartbeat_last_error[0] ? st->heartbeat_last_error : "not connected");
    else
        snprintf(buf, len,
                 "STATUS=fetching %zu queue%s, %d threads, %d busy, %" PRIu64 " processed, %" PRIu64 " failed",
                 st->nqueues, st->nqueues == 1 ? "" : "s", st->concurrency, st->busy, st->processed, st->failed);
}

static void on_beat(int ok, const hh_manager_stats *st, void *udata) {
    (void)udata;
    char line[320];
    status_line(st, ok, line, sizeof(line));
    send_state(line);
}

int cli_notify_init(hh_manager *m, double heartbeat_interval) {
    const char *sock = getenv("NOTIFY_SOCKET");
    if (!sock || !*sock) return 0;
#ifdef HH_HAVE_SYSTEMD
    uint64_t usec = 0;
    if (sd_watchdog_enabled(0, &usec) > 0 && usec > 0) {
        nt.watchdog = usec / 1e6;
        /* a ping needs a beat acknowledged within the last WatchdogSec */
        if (nt.watchdog < 2 * heartbeat_interval)
            hh_manager_log(m, HH_LOG_WARN,
                           "systemd watchdog %.1f s is shorter than 2 x --heartbeat-interval (%g s): "
                           "the worker may be restarted while healthy; raise WatchdogSec",
                           nt.watchdog, heartbeat_interval);
    }
    int e = hh_manager_on_heartbeat(m, on_beat, NULL);
    if (e != HH_OK) {
        hh_manager_log(m, HH_LOG_WARN, "systemd notification off: %s", hh_last_error());
        return 0;
    }
    nt.on = 1;
    nt.last_ping = now_mono();
    send_state("STATUS=starting");
    hh_manager_log(m, HH_LOG_DEBUG, "systemd notification on (watchdog %s)", nt.watchdog > 0 ? "on" : "off");
#else
    (void)heartbeat_interval, (void)on_beat;
    hh_manager_log(m, HH_LOG_WARN,
                   "NOTIFY_SOCKET is set but this hiredhand was built without libsystemd: no READY=1 "
                   "will be sent (use Type=simple, or rebuild with libsystemd-dev)");
#endif
    return 0;
}

void cli_notify_stopping(void) {
    if (!nt.on || atomic_exchange(&nt.stopping, 1)) return;
    send_state("STOPPING=1\nSTATUS=stopping");
}

void cli_notify_tick(hh_manager *m) {
    if (!nt.on) return;
    hh_manager_stats st;
    memset(&st, 0, sizeof(st));
    st.struct_size = sizeof(st);
    if (hh_manager_get_stats(m, &st) != HH_OK) return;
    /* stopped from Redis (the Web UI's Stop) rather than by a signal */
    if (st.stopping) cli_notify_stopping();
    /* An acknowledged beat comes after the boot checks (identity not live
     * elsewhere, own leftovers pushed back): from then on, jobs are fetched. */
    if (!st.quiet && st.heartbeat_last_pushed_at > 0 && st.redis_connected && !atomic_load(&nt.ready)) {
        char line[320], msg[340];
        atomic_store(&nt.ready, 1);
        status_line(&st, 1, line, sizeof(line));
        snprintf(msg, sizeof(msg), "READY=1\n%s", line);
        send_state(msg);
    }
    if (nt.watchdog > 0) {
        double t = now_mono();
        if (t - nt.last_ping < nt.watchdog / 2) return;
        /* Only while beats reach Redis: a worker whose heartbeat is wedged
         * (or cut off from Redis for WatchdogSec) is restarted. A stop is
         * bounded by -t, and TimeoutStopSec covers it. */
        double age = now_real() - st.heartbeat_last_pushed_at;
        if (st.stopping || (st.heartbeat_last_pushed_at > 0 && age < nt.watchdog)) {
            send_state("WATCHDOG=1");
            nt.last_ping = t;
        }
    }
}
