/* wake.c -- event waits on the monotonic clock (see wake.h). No Redis keys. */
#include "wake.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <time.h>
#include <unistd.h>
#include "util.h"

int hh__wake_init(hh__wake *w) {
    pthread_condattr_t ca;
    if (pthread_mutex_init(&w->mu, NULL) != 0) return -1;
    if (pthread_condattr_init(&ca) != 0) {
        pthread_mutex_destroy(&w->mu);
        return -1;
    }
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(&w->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (rc != 0) {
        pthread_mutex_destroy(&w->mu);
        return -1;
    }
    if (pipe2(w->pipe, O_CLOEXEC | O_NONBLOCK) != 0) w->pipe[0] = w->pipe[1] = -1;
    return 0;
}

void hh__wake_destroy(hh__wake *w) {
    if (w->pipe[0] >= 0) close(w->pipe[0]);
    if (w->pipe[1] >= 0) close(w->pipe[1]);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
}

void hh__wake_all(hh__wake *w) {
    pthread_mutex_lock(&w->mu);
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

void hh__wake_poke(hh__wake *w) {
    int saved = errno; /* a signal handler must leave errno as it found it */
    if (w->pipe[1] >= 0) {
        char b = 1;
        ssize_t n = write(w->pipe[1], &b, 1); /* full pipe: a poke is pending anyway */
        (void)n;
    }
    errno = saved;
}

int hh__wake_wait(hh__wake *w, double until, hh__wake_pred pred, const void *arg) {
    pthread_mutex_lock(&w->mu);
    int ok;
    while (!(ok = pred(arg))) {
        if (until < 0) {
            pthread_cond_wait(&w->cv, &w->mu);
            continue;
        }
        double left = until - hh__mono();
        if (left <= 0) break;
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        double t = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9 + left;
        ts.tv_sec = (time_t)t;
        ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
        if (ts.tv_nsec >= 1000000000L) ts.tv_nsec = 999999999L;
        if (pthread_cond_timedwait(&w->cv, &w->mu, &ts) == ETIMEDOUT) {
            ok = pred(arg);
            break;
        }
    }
    pthread_mutex_unlock(&w->mu);
    return ok;
}

int hh__wake_relay(hh__wake *w, double seconds) {
    if (w->pipe[0] < 0) { /* no pipe: the relay's timeout is all there is */
        hh__sleep(seconds > 0.02 ? 0.02 : seconds);
        hh__wake_all(w);
        return 1;
    }
    /* Callers pass what is left until a deadline, negative once the clock
     * passed it: nothing to wait then, never "no limit" (a stop's grace
     * period would wait for its running handlers to end). Rounded up, since
     * a wait that ends early sends such a caller round again. */
    if (seconds > 86400) seconds = 86400;
    int timeout = seconds > 0 ? (int)(seconds * 1000) + 1 : 0;
    struct pollfd pfd = {w->pipe[0], POLLIN, 0};
    int rc = poll(&pfd, 1, timeout);
    if (rc <= 0) return 0;
    char buf[64];
    while (read(w->pipe[0], buf, sizeof(buf)) > 0) {}
    hh__wake_all(w);
    return 1;
}
