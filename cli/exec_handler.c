/* exec_handler.c -- `--exec CLASS=COMMAND`: runs one program per job, so
 * any language can run Sidekiq jobs. The job JSON (exact bytes as stored)
 * goes to its stdin; HIREDHAND_JID, HIREDHAND_CLASS, HIREDHAND_QUEUE and
 * HIREDHAND_RETRY_COUNT are set; exit 0 is success. A non-zero exit, a
 * signal or the timeout fails the job with the status and the last line of
 * stderr. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "cli.h"

extern char **environ;

#define STDERR_TAIL 8192   /* bytes of stderr kept for the error message */
#define BACKTRACE_LINES 20 /* stderr lines offered as error_backtrace */

struct cli_exec {
    char *klass;
    char **argv;
    double timeout; /* 0: none */
};

const char *cli_exec_class(const cli_exec *e) { return e->klass; }

void cli_exec_free(cli_exec *e) {
    if (!e) return;
    for (size_t i = 0; e->argv && e->argv[i]; i++) free(e->argv[i]);
    free(e->argv);
    free(e->klass);
    free(e);
}

static int executable(const char *prog) {
    if (strchr(prog, '/')) return access(prog, X_OK) == 0;
    const char *path = getenv("PATH");
    if (!path) path = "/usr/local/bin:/usr/bin:/bin";
    char buf[4096];
    for (const char *p = path; *p;) {
        size_t n = strcspn(p, ":");
        snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, n ? p : ".", prog);
        struct stat st;
        if (stat(buf, &st) == 0 && S_ISREG(st.st_mode) && access(buf, X_OK) == 0) return 1;
        p += n;
        if (*p == ':') p++;
    }
    return 0;
}

cli_exec *cli_exec_new(const char *spec, double timeout, char *err, size_t errlen) {
    const char *eq = strchr(spec, '=');
    if (!eq || eq == spec) {
        snprintf(err, errlen, "--exec wants CLASS=COMMAND, got '%s'", spec);
        return NULL;
    }
    cli_exec *e = calloc(1, sizeof(*e));
    if (!e) return NULL;
    e->klass = strndup(spec, (size_t)(eq - spec));
    e->timeout = timeout;
    size_t cap = 8, n = 0;
    e->argv = calloc(cap, sizeof(char *));
    for (const char *p = eq + 1; e->argv && *p;) {
        while (*p == ' ' || *p == '\t') p++;
        if (!*p) break;
        size_t l = strcspn(p, " \t");
        if (n + 2 > cap) {
            char **v = realloc(e->argv, (cap *= 2) * sizeof(char *));
            if (!v) break;
            e->argv = v;
        }
        e->argv[n++] = strndup(p, l);
        e->argv[n] = NULL;
        p += l;
    }
    if (!e->argv || n == 0) {
        snprintf(err, errlen, "--exec %s: empty command", e->klass);
        cli_exec_free(e);
        return NULL;
    }
    if (!executable(e->argv[0])) {
        snprintf(err, errlen, "--exec %s: program '%s' not found or not executable", e->klass, e->argv[0]);
        cli_exec_free(e);
        return NULL;
    }
    return e;
}

static double mono(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* environ plus the job's variables; strings in vars[] are owned by caller. */
static char **job_env(hh_job *job, char vars[4][512]) {
    size_t n = 0;
    while (environ[n]) n++;
    char **env = calloc(n + 5, sizeof(char *));
    if (!env) return NULL;
    int rc = hh_job_retry_count(job);
    snprintf(vars[0], 512, "HIREDHAND_JID=%s", hh_job_jid(job));
    snprintf(vars[1], 512, "HIREDHAND_CLASS=%s", hh_job_class(job));
    snprintf(vars[2], 512, "HIREDHAND_QUEUE=%s", hh_job_queue(job));
    if (rc >= 0) snprintf(vars[3], 512, "HIREDHAND_RETRY_COUNT=%d", rc);
    else snprintf(vars[3], 512, "HIREDHAND_RETRY_COUNT=");
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "HIREDHAND_", 10) != 0) env[k++] = environ[i];
    for (int i = 0; i < 4; i++) env[k++] = vars[i];
    env[k] = NULL;
    return env;
}

/* Keeps the last STDERR_TAIL bytes of the child's stderr. */
static void tail_append(char *tail, size_t *len, const char *buf, size_t n) {
    if (n > STDERR_TAIL) {
        buf += n - STDERR_TAIL;
        n = STDERR_TAIL;
    }
    if (*len + n > STDERR_TAIL) {
        size_t drop = *len + n - STDERR_TAIL;
        memmove(tail, tail + drop, *len - drop);
        *len -= drop;
    }
    memcpy(tail + *len, buf, n);
    *len += n;
}

static void fail_with_stderr(hh_job *job, const char *status, char *tail, size_t len) {
    tail[len] = '\0';
    while (len && (tail[len - 1] == '\n' || tail[len - 1] == '\r')) tail[--len] = '\0';
    const char *lines[BACKTRACE_LINES];
    size_t nl = 0;
    char *last = NULL;
    for (char *save = NULL, *l = strtok_r(tail, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        if (nl == BACKTRACE_LINES) {
            memmove(lines, lines + 1, (BACKTRACE_LINES - 1) * sizeof(char *));
            nl--;
        }
        lines[nl++] = l;
        last = l;
    }
    if (last) {
        hh_job_fail(job, "hiredhand::ExecFailed", "%s: %.1000s", status, last);
        hh_job_set_backtrace(job, lines, nl);
    } else {
        hh_job_fail(job, "hiredhand::ExecFailed", "%s", status);
    }
}

int cli_exec_handler(hh_job *job, void *udata) {
    cli_exec *e = udata;
    int in[2], errp[2];
    if (pipe2(in, O_CLOEXEC) != 0) {
        hh_job_fail(job, "Errno::EMFILE", "pipe: %s", strerror(errno));
        return -1;
    }
    if (pipe2(errp, O_CLOEXEC) != 0) {
        close(in[0]), close(in[1]);
        hh_job_fail(job, "Errno::EMFILE", "pipe: %s", strerror(errno));
        return -1;
    }
    char vars[4][512];
    char **env = job_env(job, vars);
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, errp[1], 2);
    posix_spawnattr_init(&at);
    sigset_t none, defaults;
    sigemptyset(&none);
    sigfillset(&defaults);
    posix_spawnattr_setsigmask(&at, &none); /* the worker blocks signals for sigwait */
    posix_spawnattr_setsigdefault(&at, &defaults);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&at, 0); /* own group: a timeout kills its children too */
    pid_t pid;
    int rc = env ? posix_spawnp(&pid, e->argv[0], &fa, &at, e->argv, env) : ENOMEM;
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    free(env);
    close(in[0]);
    close(errp[1]);
    if (rc != 0) {
        close(in[1]);
        close(errp[0]);
        hh_job_fail(job, "Errno::ENOENT", "cannot run %s: %s", e->argv[0], strerror(rc));
        return -1;
    }
    size_t plen;
    const char *payload = hh_job_payload(job, &plen);
    size_t off = 0;
    fcntl(in[1], F_SETFL, O_NONBLOCK);
    char tail[STDERR_TAIL + 1];
    size_t tlen = 0;
    int in_open = 1, err_open = 1, killed = 0;
    double start = mono(), kill_at = 0;
    const char *why_killed = NULL;
    while (err_open) {
        if (in_open && off == plen) {
            close(in[1]);
            in_open = 0;
        }
        struct pollfd pf[2];
        int n = 0;
        pf[n].fd = errp[0], pf[n].events = POLLIN, n++;
        if (in_open) pf[n].fd = in[1], pf[n].events = POLLOUT, n++;
        int r = poll(pf, (nfds_t)n, 100);
        if (r < 0 && errno != EINTR) break;
        if (r > 0 && (pf[0].revents & (POLLIN | POLLHUP | POLLERR))) {
            char buf[4096];
            ssize_t got = read(errp[0], buf, sizeof(buf));
            if (got > 0) tail_append(tail, &tlen, buf, (size_t)got);
            else if (got == 0 || (errno != EINTR && errno != EAGAIN)) err_open = 0;
        }
        if (r > 0 && in_open && n > 1 && (pf[1].revents & (POLLOUT | POLLERR | POLLHUP))) {
            ssize_t w = write(in[1], payload + off, plen - off);
            if (w > 0) off += (size_t)w;
            else if (w < 0 && errno != EAGAIN && errno != EINTR) { /* the child closed stdin */
                close(in[1]);
                in_open = 0;
            }
        }
        int over = e->timeout > 0 && mono() - start > e->timeout;
        if ((over || hh_job_cancelled(job)) && !killed) {
            why_killed = over ? "timed out" : "cancelled by shutdown";
            kill(-pid, SIGTERM);
            killed = 1;
            kill_at = mono() + 2;
        } else if (killed == 1 && mono() > kill_at) {
            kill(-pid, SIGKILL);
            killed = 2;
        }
    }
    if (in_open) close(in[1]);
    close(errp[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    char what[128];
    if (why_killed) {
        snprintf(what, sizeof(what), "%s %s after %.1f s", e->argv[0], why_killed, mono() - start);
    } else if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        return 0;
    } else if (WIFEXITED(status)) {
        snprintf(what, sizeof(what), "%s exited with status %d", e->argv[0], WEXITSTATUS(status));
    } else {
        snprintf(what, sizeof(what), "%s killed by signal %d", e->argv[0], WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    }
    fail_with_stderr(job, what, tail, tlen);
    return -1;
}
