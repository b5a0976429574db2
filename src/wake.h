/* wake.h -- how the manager's threads wait for an event (stop, quiet,
 * boot, the end of a worker) without polling: a condition variable on the
 * monotonic clock (a wall-clock jump neither cuts a wait short nor stretches
 * it), plus a self-pipe for the async-signal-safe calls (hh_manager_stop,
 * _quiet, _dump may run in a signal handler, where a mutex may not be
 * taken): they write one byte, and the supervisor thread relays it as a
 * broadcast. No Redis keys. */
#ifndef HH_WAKE_H
#define HH_WAKE_H

#include <pthread.h>

typedef struct hh__wake {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int pipe[2]; /* -1 when it could not be made: pokes fall back to the relay's timeout */
} hh__wake;

/* The condition a waiter waits for; checked under the wake's mutex, so a
 * flag set before hh__wake_all() is never missed. */
typedef int (*hh__wake_pred)(const void *arg);

int hh__wake_init(hh__wake *w);
void hh__wake_destroy(hh__wake *w);

/* Wakes every waiter to check its condition. Not async-signal-safe. */
void hh__wake_all(hh__wake *w);

/* Async-signal-safe: asks the relay (hh__wake_relay) to wake every waiter. */
void hh__wake_poke(hh__wake *w);

/* Waits until pred(arg) holds or the monotonic time `until` (hh__mono();
 * negative: no limit) passes. Returns pred(arg)'s last value. */
int hh__wake_wait(hh__wake *w, double until, hh__wake_pred pred, const void *arg);

/* For the one relay thread: waits up to `seconds` (0 or less: does not
 * wait) for a poke, drains the pipe and wakes every waiter. Returns 1 when
 * poked. */
int hh__wake_relay(hh__wake *w, double seconds);

#endif
