/* init.c -- `hiredhand work` as PID 1 (a container started without an
 * init). PID 1 inherits every orphan in its PID namespace: a --exec
 * handler that backgrounds a process and exits leaves that process to it,
 * and whoever is PID 1 must reap it or it stays a zombie.
 *
 * The process splits in two, as tini does: PID 1 stays a minimal init that
 * forwards signals to the worker, reaps whatever ends up as its child, and
 * exits with the worker's status; the worker runs as its child and waits
 * only for its own children. A reaper inside the worker would race the
 * --exec handlers' own waits (and a plug-in's waits for its children) for
 * exit statuses; here nobody's child is anybody else's to reap.
 *
 * Only as PID 1: elsewhere orphans go to the system's init, which reaps
 * them, so PR_SET_CHILD_SUBREAPER would only make the worker responsible
 * for processes it has no use for. Touches no Redis key. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "cli.h"

int cli_init_split(void) {
    if (getpid() != 1) return 0;
    sigset_t all, old;
    sigfillset(&all);
    /* Blocked from before the fork: a signal that arrives in between is
     * queued for sigwaitinfo below, not lost (PID 1 ignores signals that
     * have neither a handler nor a block). */
    sigprocmask(SIG_BLOCK, &all, &old);
    fflush(NULL);
    pid_t worker = fork();
    if (worker < 0) {
        fprintf(stderr, "hiredhand: running as PID 1 without a reaper (fork: %s)\n", strerror(errno));
        sigprocmask(SIG_SETMASK, &old, NULL);
        return 0;
    }
    if (worker == 0) {
        sigprocmask(SIG_SETMASK, &old, NULL);
        return 0;
    }
    for (;;) {
        siginfo_t si;
        int sig = sigwaitinfo(&all, &si);
        if (sig < 0) continue; /* EINTR */
        if (sig != SIGCHLD) {
            kill(worker, sig);
            continue;
        }
        int status;
        pid_t pid;
        while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
            if (pid != worker) continue; /* an orphan: reaped, nothing else to do */
            /* The rest of the namespace dies with PID 1. */
            if (WIFEXITED(status)) _exit(WEXITSTATUS(status));
            _exit(128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0));
        }
    }
}
