/* serve.c -- `--serve CLASS=COMMAND`: long-lived handler processes. Where
 * --exec starts one process per job (for Python, Node or Ruby the
 * interpreter's start-up is then the whole cost), --serve keeps a pool of
 * COMMAND processes per class, each running many jobs one at a time over a
 * line protocol on its stdin and stdout (docs/handlers.md):
 *
 *   process -> hiredhand   {"hiredhand":1}                      once, at start
 *   hiredhand -> process   {"jid":..,"class":..,"queue":..,"retry_count":..,"job":{payload}}
 *   process -> hiredhand   {"ok":true}
 *                       or {"ok":false,"error_class":..,"error_message":..,"backtrace":[..]}
 *
 * Processes start lazily (the first job that finds no idle one starts one,
 * up to the pool size), or with --serve-pool all at once on the pool's
 * keeper thread, which reads their hellos while the worker runs: a slow
 * or mute process delays neither the worker's start nor other classes'
 * jobs, and one past its hello deadline is killed and started again after
 * the backoff. The keeper also reads idle processes' stderr and stdout
 * (out of protocol there: logged, the process replaced before its next
 * job), so none blocks writing either between jobs. They run with the --exec conventions:
 * no shell, the filtered environment, their own process group, killed
 * with the worker. A process
 * that dies, closes its stdout, answers anything but one such line or runs
 * past the timeout is killed; the job it held fails through the retry path
 * like any failure, and the next start waits a backoff; but a process that
 * ended without reading any of the job's line (it exited right after its
 * last answer) never had the job, which goes to a new process instead. The
 * timeout counts from the job's start, the start of its process and that
 * process's hello included, but not a wait behind other jobs for a busy
 * pool; a process whose hello a job stopped waiting for is not killed (its
 * hello deadline is its own) and the next job waits on for it. No Redis
 * I/O here: the library writes every outcome. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "cli.h"

#define SERVE_PROTOCOL 1
#define ANSWER_MAX (16 * 1024 * 1024) /* longest answer (or hello) line taken: docs/handlers.md's 16 MiB */
#define ERR_LINE_MAX 4096             /* a longer stderr line is logged in pieces */
#define TAIL_LINES 20                 /* stderr lines kept for a failure's backtrace */
#define NFDS_NONE ((nfds_t)-1)        /* the keeper's "not polled" */
#define BACKOFF_MIN 0.1
#define BACKOFF_MAX 5.0
#define KILL_GRACE 2.0 /* SIGTERM to SIGKILL, and a recycled process's exit */
/* Abnormal ends in a row (no job done, no hello since) after which the
 * worker says it is not ready (/readyz): one crash may be one bad job,
 * three in a row with nothing working between them is the program. */
#define UNREADY_AFTER 3

typedef struct {
    pid_t pid; /* 0: not running */
    int in_fd, out_fd, err_fd;
    int busy;  /* held by a worker thread (one job at a time) */
    long jobs; /* jobs answered */
    char *out; /* stdout bytes not yet consumed */
    size_t outlen, outcap;
    cli_lines err;   /* partial stderr line */
    cli_lines outl;  /* partial stdout line read between jobs */
    int out_between; /* wrote to stdout between jobs: replaced before its next job */
    int out_eof;     /* its stdout ended between jobs: the keeper stops polling it */
    char *tail[TAIL_LINES];
    size_t ntail; /* the job's last stderr lines, for its failure */
    int status;   /* wait status once reaped */
    int reaped;
    int starting;        /* held by the starter thread until its hello (busy too) */
    int draining;        /* held by the keeper thread reading its stderr between jobs (busy too) */
    double hello_by;     /* the deadline for its hello (monotonic), set at spawn */
    int hello_due;       /* started, no hello read yet: a job's timeout cut
                          * the wait short; the next job reads it first */
    cli_log_budget logb; /* stderr logged for the job (or between jobs) */
} srv_proc;

struct cli_serve {
    char *klass;
    char **argv;
    double timeout;
    long max_jobs;
    int pool;
    hh_manager *m;
    pthread_mutex_t mu;
    pthread_cond_t cv;  /* a process became free */
    pthread_cond_t kcv; /* for the keeper thread: a process became idle, or the stop */
    srv_proc *procs;
    int failures;      /* abnormal ends in a row: the backoff's exponent */
    int unready;       /* hh_manager_set_unready() holds our problem; mu */
    double next_start; /* no start before (monotonic) */
    double hello_timeout;
    size_t log_max; /* --exec-log-max */
    /* the keeper thread reads idle processes' stderr; with --serve-pool it
     * also keeps procs[0 .. eager) running (the starter) */
    int eager;
    int stopping; /* the keeper ends; mu */
    int starter_running;
    pthread_t starter;
};

const char *cli_serve_class(const cli_serve *s) { return s->klass; }
void cli_serve_set_hello_timeout(cli_serve *s, double seconds) {
    if (seconds > 0) s->hello_timeout = seconds;
}
void cli_serve_set_manager(cli_serve *s, hh_manager *m) { s->m = m; }
void cli_serve_set_log_max(cli_serve *s, size_t bytes) { s->log_max = bytes; }

#define SLOG(s, level, ...)                                     \
    do {                                                        \
        if ((s)->m) hh_manager_log((s)->m, level, __VA_ARGS__); \
    } while (0)

cli_serve *cli_serve_new(const char *spec, double timeout, int pool, long max_jobs, char *err, size_t errlen) {
    const char *eq = strchr(spec, '=');
    if (!eq || eq == spec) {
        snprintf(err, errlen, "--serve wants CLASS=COMMAND, got '%s'", spec);
        return NULL;
    }
    cli_serve *s = calloc(1, sizeof(*s));
    if (!s || !(s->procs = calloc((size_t)(pool > 0 ? pool : 1), sizeof(srv_proc)))) {
        free(s);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    for (int i = 0; i < (pool > 0 ? pool : 1); i++) s->procs[i].in_fd = s->procs[i].out_fd = s->procs[i].err_fd = -1;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    pthread_cond_init(&s->kcv, NULL);
    s->klass = strndup(spec, (size_t)(eq - spec));
    s->timeout = timeout;
    s->hello_timeout = CLI_SERVE_HELLO_TIMEOUT_DEFAULT;
    s->log_max = CLI_LOG_MAX_DEFAULT;
    s->max_jobs = max_jobs;
    s->pool = pool > 0 ? pool : 1;
    size_t n = 0;
    s->argv = cli_exec_split(eq + 1, &n);
    if (!s->klass || !s->argv || n == 0) {
        snprintf(err, errlen, "--serve %s: empty command", s->klass ? s->klass : "");
        cli_serve_free(s);
        return NULL;
    }
    char why[600];
    if (cli_exec_shell_syntax(s->argv, why, sizeof(why))) {
        snprintf(err, errlen, "--serve %s: %s", s->klass, why);
        cli_serve_free(s);
        return NULL;
    }
    if (!cli_executable(s->argv[0])) {
        snprintf(err, errlen, "--serve %s: program '%s' not found or not executable", s->klass, s->argv[0]);
        cli_serve_free(s);
        return NULL;
    }
    return s;
}

static void tail_clear(srv_proc *p) {
    for (size_t i = 0; i < p->ntail; i++) free(p->tail[i]);
    p->ntail = 0;
}

static void tail_push(srv_proc *p, const char *line, size_t len) {
    if (p->ntail == TAIL_LINES) {
        free(p->tail[0]);
        memmove(p->tail, p->tail + 1, (TAIL_LINES - 1) * sizeof(char *));
        p->ntail--;
    }
    char *l = cli_output_text(line, len, NULL);
    if (l) p->tail[p->ntail++] = l;
}

/* The job a stderr line came during, for err_line. */
typedef struct err_ctx {
    cli_serve *s;
    srv_proc *p;
    hh_job *job;
} err_ctx;

/* One stderr line: logged with the job it came during, kept for its failure. */
static void err_line(void *udata, const char *line, size_t len) {
    err_ctx *c = udata;
    cli_log_handler_line(&c->p->logb, c->s->m, c->job, c->s->klass, (int)c->p->pid, "stderr", line, len);
    tail_push(c->p, line, len);
}

/* One stdout line an idle process wrote: out of protocol, logged as its
 * stderr lines between jobs are (jid=-), within the same budget. */
static void out_line(void *udata, const char *line, size_t len) {
    err_ctx *c = udata;
    cli_log_handler_line(&c->p->logb, c->s->m, NULL, c->s->klass, (int)c->p->pid, "stdout", line, len);
}

/* Reads what an idle process's stdout has, max bytes at most; 0 at EOF or
 * error, 1 otherwise. No job is waiting for an answer (the slot is not
 * busy): whatever comes is out of protocol. */
static int read_out_idle(cli_serve *s, srv_proc *p, size_t max) {
    err_ctx c = {s, p, NULL};
    for (size_t total = 0; total < max;) {
        char buf[ERR_LINE_MAX];
        ssize_t got = read(p->out_fd, buf, sizeof(buf));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
            if (got == 0 || errno != EAGAIN) {
                cli_lines_end(&p->outl, out_line, &c);
                return 0;
            }
            return 1;
        }
        p->out_between = 1;
        cli_lines_feed(&p->outl, buf, (size_t)got, out_line, &c);
        total += (size_t)got;
    }
    return 1;
}

/* Reads what stderr has, max bytes at most (0: all); 0 at EOF or error,
 * 1 otherwise. */
static int read_err_max(cli_serve *s, srv_proc *p, hh_job *job, size_t max) {
    err_ctx c = {s, p, job};
    for (size_t total = 0; !max || total < max;) {
        char buf[ERR_LINE_MAX];
        ssize_t got = read(p->err_fd, buf, sizeof(buf));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
            if (got == 0 || errno != EAGAIN) {
                cli_lines_end(&p->err, err_line, &c);
                return 0;
            }
            return 1;
        }
        cli_lines_feed(&p->err, buf, (size_t)got, err_line, &c);
        total += (size_t)got;
    }
    return 1;
}

static int read_err(cli_serve *s, srv_proc *p, hh_job *job) { return read_err_max(s, p, job, 0); }

/* One read of stdout into p->out (the caller loops: a job costs as few
 * system calls as can be); 0 at EOF or error, 1 otherwise. */
static int read_out(srv_proc *p) {
    if (p->outcap - p->outlen < 65536) {
        size_t cap = p->outcap ? p->outcap * 2 : 65536 * 2;
        char *b = realloc(p->out, cap);
        if (!b) return 0;
        p->out = b;
        p->outcap = cap;
    }
    ssize_t got = read(p->out_fd, p->out + p->outlen, p->outcap - p->outlen - 1);
    if (got > 0) p->outlen += (size_t)got;
    return got > 0 || (got < 0 && (errno == EAGAIN || errno == EINTR));
}

/* Takes one line out of p->out (NUL-terminated, malloc'd); NULL if none. */
static char *take_line(srv_proc *p) {
    char *nl = p->out ? memchr(p->out, '\n', p->outlen) : NULL;
    if (!nl) return NULL;
    size_t l = (size_t)(nl - p->out);
    char *line = strndup(p->out, l);
    memmove(p->out, nl + 1, p->outlen - l - 1);
    p->outlen -= l + 1;
    return line;
}

static int reap(srv_proc *p, int block) {
    if (p->reaped) return 1;
    pid_t r;
    while ((r = waitpid(p->pid, &p->status, block ? 0 : WNOHANG)) < 0 && errno == EINTR) {}
    if (r == p->pid || (r < 0 && errno == ECHILD)) p->reaped = 1;
    return p->reaped;
}

static void close_fd(int *fd) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
}

/* Ends a process: its stdin closed, then (unless it exits by itself within
 * wait seconds) its whole group killed, TERM then KILL; always reaped. */
static void end_proc(cli_serve *s, srv_proc *p, double wait) {
    if (p->pid <= 0) return;
    close_fd(&p->in_fd);
    double until = cli_mono() + wait;
    while (!reap(p, 0) && cli_mono() < until) {
        struct timespec ts = {0, 20 * 1000000L};
        nanosleep(&ts, NULL);
    }
    if (!p->reaped) {
        kill(-p->pid, SIGTERM);
        until = cli_mono() + KILL_GRACE;
        while (!reap(p, 0) && cli_mono() < until) {
            struct timespec ts = {0, 20 * 1000000L};
            nanosleep(&ts, NULL);
        }
    }
    kill(-p->pid, SIGKILL); /* also what it left behind in its group */
    reap(p, 1);
    close_fd(&p->out_fd);
    close_fd(&p->err_fd);
    tail_clear(p);
    cli_log_budget_end(&p->logb, s->m, NULL, s->klass, (int)p->pid);
    p->pid = 0;
    p->outlen = 0;
    p->err.len = 0;
    p->jobs = 0;
    p->hello_due = 0;
}

static void describe_exit(const cli_serve *s, const srv_proc *p, char *buf, size_t len) {
    if (!p->reaped) snprintf(buf, len, "%s closed its stdout", s->argv[0]);
    else if (WIFEXITED(p->status)) snprintf(buf, len, "%s exited with status %d", s->argv[0], WEXITSTATUS(p->status));
    else snprintf(buf, len, "%s killed by signal %d", s->argv[0], WIFSIGNALED(p->status) ? WTERMSIG(p->status) : 0);
}

/* The last stderr line with something to say (cli_error_text), or NULL. */
static const char *last_words(const srv_proc *p) {
    for (size_t i = p->ntail; i > 0; i--) {
        const char *t = cli_error_text(p->tail[i - 1]);
        if (t) return t;
    }
    return NULL;
}

/* Fails the job with what + its last words on stderr, its stderr lines as
 * the backtrace (as --exec does). */
static void fail_proc(hh_job *job, srv_proc *p, const char *error_class, const char *what) {
    const char *last = last_words(p);
    if (last) hh_job_fail(job, error_class, "%s: %.1000s", what, last);
    else hh_job_fail(job, error_class, "%s", what);
    if (p->ntail) hh_job_set_backtrace(job, (const char *const *)p->tail, p->ntail);
}

/* The worker's readiness as this class sees it: not ready after
 * UNREADY_AFTER abnormal ends in a row, ready again once a process says
 * hello or a job is done. Called without mu (never the manager's lock
 * under ours). */
static void report_health(cli_serve *s, int failing) {
    pthread_mutex_lock(&s->mu);
    int change = failing ? !s->unready && s->failures >= UNREADY_AFTER : s->unready;
    int n = s->failures;
    if (change) s->unready = failing;
    pthread_mutex_unlock(&s->mu);
    if (!change || !s->m) return;
    char source[200], reason[160];
    snprintf(source, sizeof(source), "--serve %s", s->klass);
    snprintf(reason, sizeof(reason), "%s ended abnormally %d times in a row (see the log)", s->argv[0], n);
    hh_manager_set_unready(s->m, source, failing ? reason : NULL);
    SLOG(s, failing ? HH_LOG_ERROR : HH_LOG_INFO, "%s: %s", source,
         failing ? "not ready (/readyz) until a process says hello or runs a job" : "ready again");
}

/* An abnormal end: the next start waits BACKOFF_MIN, doubling to BACKOFF_MAX. */
static void backoff(cli_serve *s) {
    pthread_mutex_lock(&s->mu);
    double b = BACKOFF_MIN;
    for (int i = 0; i < s->failures && b < BACKOFF_MAX; i++) b *= 2;
    s->failures++;
    s->next_start = cli_mono() + (b < BACKOFF_MAX ? b : BACKOFF_MAX);
    pthread_mutex_unlock(&s->mu);
    report_health(s, 1);
}

enum { IO_LINE, IO_EOF, IO_TIMEOUT, IO_CANCELLED, IO_TOO_LONG, IO_ERROR };

/* Writes data (may be NULL) to the process's stdin while reading its stdout
 * and stderr, until one line came on stdout. Returns IO_* (*line malloc'd
 * with IO_LINE); *sent (may be NULL) gets how many bytes of data went into
 * the pipe. */
static int converse(cli_serve *s, srv_proc *p, hh_job *job, const char *data, size_t len, double deadline, char **line,
                    size_t *sent) {
    size_t off = 0;
    int out_open = 1;
    if (sent) *sent = 0;
    if (data && p->in_fd >= 0) { /* the pipe has room for a usual job line: no poll first */
        ssize_t w = write(p->in_fd, data, len);
        if (w > 0) off = (size_t)w;
    }
    for (;;) {
        if (sent) *sent = off;
        if ((*line = take_line(p))) return IO_LINE;
        if (p->outlen > ANSWER_MAX) return IO_TOO_LONG;
        if (!out_open) return IO_EOF;
        if (job && hh_job_cancelled(job)) return IO_CANCELLED;
        if (deadline > 0 && cli_mono() > deadline) return IO_TIMEOUT;
        struct pollfd pf[3];
        int n = 0, io = -1, ie = -1, ii = -1;
        io = n, pf[n].fd = p->out_fd, pf[n].events = POLLIN, n++;
        if (p->err_fd >= 0) ie = n, pf[n].fd = p->err_fd, pf[n].events = POLLIN, n++;
        if (data && off < len && p->in_fd >= 0) ii = n, pf[n].fd = p->in_fd, pf[n].events = POLLOUT, n++;
        int r = poll(pf, (nfds_t)n, 100);
        if (r < 0 && errno != EINTR) return IO_ERROR;
        if (r <= 0) {
            /* a process that died leaving a child holding its stdout */
            if (reap(p, 0)) {
                read_out(p); /* what it wrote last */
                out_open = 0;
            }
            continue;
        }
        if (ie >= 0 && (pf[ie].revents & (POLLIN | POLLHUP | POLLERR)) && !read_err(s, p, job)) close_fd(&p->err_fd);
        if (ii >= 0 && (pf[ii].revents & (POLLOUT | POLLERR | POLLHUP))) {
            ssize_t w = write(p->in_fd, data + off, len - off);
            if (w > 0) off += (size_t)w;
            else if (w < 0 && errno != EAGAIN && errno != EINTR) out_open = 0; /* it closed stdin: gone or broken */
        }
        if (pf[io].revents & (POLLIN | POLLHUP | POLLERR)) {
            if (!read_out(p)) out_open = 0;
        }
    }
}

/* Starts COMMAND in slot p (not waiting for its hello). 0 or an errno. */
static int spawn_proc(cli_serve *s, srv_proc *p) {
    int in[2] = {-1, -1}, out[2] = {-1, -1}, errp[2] = {-1, -1};
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(errp, O_CLOEXEC) != 0) {
        int e = errno;
        for (int i = 0; i < 2; i++) close_fd(&in[i]), close_fd(&out[i]), close_fd(&errp[i]);
        return e;
    }
    char *vars[2] = {NULL, NULL};
    int bad = asprintf(&vars[0], "HIREDHAND_SERVE=%d", SERVE_PROTOCOL) < 0;
    bad |= asprintf(&vars[1], "HIREDHAND_CLASS=%s", s->klass) < 0;
    char **env = bad ? NULL : cli_exec_environ(vars, 2);
    pid_t pid = 0;
    int rc = env ? cli_exec_spawn(s->argv, env, in[0], out[1], errp[1], &pid) : ENOMEM;
    free(env);
    free(vars[0]);
    free(vars[1]);
    close(in[0]), close(out[1]), close(errp[1]);
    if (rc != 0) {
        close(in[1]), close(out[0]), close(errp[0]);
        return rc;
    }
    p->pid = pid;
    p->reaped = 0;
    p->jobs = 0;
    p->hello_by = cli_mono() + s->hello_timeout;
    p->hello_due = 0;
    p->logb = (cli_log_budget){.max = s->log_max};
    p->outlen = 0;
    p->err.len = 0;
    p->outl.len = 0, p->outl.cut = 0;
    p->out_between = p->out_eof = 0;
    p->in_fd = in[1], p->out_fd = out[0], p->err_fd = errp[0];
    fcntl(p->in_fd, F_SETFL, O_NONBLOCK);
    fcntl(p->out_fd, F_SETFL, O_NONBLOCK);
    fcntl(p->err_fd, F_SETFL, O_NONBLOCK);
    return 0;
}

/* A hello line: 0 when it is ours (logged), else -2 with why in what. */
static int check_hello(cli_serve *s, srv_proc *p, const char *line, char *what, size_t wlen) {
    json_t *hello = json_loads(line, 0, NULL);
    json_t *v = json_object_get(hello, "hiredhand");
    int ok = json_is_integer(v) && json_integer_value(v) == SERVE_PROTOCOL;
    json_decref(hello);
    if (!ok) {
        snprintf(what, wlen, "%s: bad hello (want {\"hiredhand\":%d}): %.200s", s->argv[0], SERVE_PROTOCOL, line);
        return -2;
    }
    SLOG(s, HH_LOG_INFO, "--serve %s: started pid=%d", s->klass, (int)p->pid);
    report_health(s, 0);
    return 0;
}

/* The exit of a process whose stdout ended, once seen (a moment), with
 * its last words on stderr: a process that fails before its hello has no
 * job to carry them as a backtrace, so the message does. */
static void describe_end(cli_serve *s, srv_proc *p, char *what, size_t wlen) {
    for (double until = cli_mono() + 1; !reap(p, 0) && cli_mono() < until;) {
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    if (p->err_fd >= 0 && !read_err(s, p, NULL)) close_fd(&p->err_fd);
    describe_exit(s, p, what, wlen);
    const char *last = last_words(p);
    size_t n = strlen(what);
    if (last && n + 2 < wlen) snprintf(what + n, wlen - n, ": %s", last);
}

/* Reads the hello of the process in slot p (job: the one waiting, or
 * NULL) until its hello deadline, or the job's (deadline, 0: none) if
 * sooner. 0; -3 when the job's deadline came first (the process keeps
 * its own, hello_due set: the next job goes on waiting); or with why in
 * what and the process ended: -2 out of protocol (a bad or too long
 * hello), -1 otherwise. */
static int await_hello(cli_serve *s, srv_proc *p, hh_job *job, double deadline, char *what, size_t wlen) {
    char *line = NULL;
    double until = deadline > 0 && deadline < p->hello_by ? deadline : p->hello_by;
    int io = converse(s, p, job, NULL, 0, until, &line, NULL), rc = -1;
    p->hello_due = 0;
    if (io == IO_TIMEOUT && cli_mono() < p->hello_by) {
        p->hello_due = 1;
        return -3;
    }
    if (io == IO_LINE) {
        rc = check_hello(s, p, line, what, wlen);
        free(line);
        if (rc == 0) return 0;
    } else if (io == IO_CANCELLED) {
        snprintf(what, wlen, "cancelled by shutdown before %s said hello", s->argv[0]);
    } else if (io == IO_TIMEOUT) {
        snprintf(what, wlen, "%s said no hello within %g s", s->argv[0], s->hello_timeout);
    } else if (io == IO_TOO_LONG) {
        snprintf(what, wlen, "%s: hello line longer than 16 MiB, the --serve protocol's limit", s->argv[0]);
        rc = -2;
    } else {
        describe_end(s, p, what, wlen);
    }
    end_proc(s, p, 0);
    return rc;
}

/* One look at a starting process's hello (the starter's, never blocking):
 * 1 said it, 0 not yet, -1 failed with why in what (process not ended). */
static int hello_step(cli_serve *s, srv_proc *p, char *what, size_t wlen) {
    if (p->err_fd >= 0 && !read_err(s, p, NULL)) close_fd(&p->err_fd);
    int open = read_out(p);
    char *line = take_line(p);
    if (line) {
        int rc = check_hello(s, p, line, what, wlen);
        free(line);
        return rc == 0 ? 1 : -1;
    }
    if (p->outlen > ANSWER_MAX) {
        snprintf(what, wlen, "%s: hello line longer than 16 MiB, the --serve protocol's limit", s->argv[0]);
        return -1;
    }
    if (!open || reap(p, 0)) {
        describe_end(s, p, what, wlen);
        return -1;
    }
    if (cli_mono() > p->hello_by) {
        snprintf(what, wlen, "%s said no hello within %g s", s->argv[0], s->hello_timeout);
        return -1;
    }
    return 0;
}

/* Once the worker is quiet or stopping no job needs a new process: the
 * starter leaves empty slots empty then. */
static int worker_quiet(cli_serve *s) {
    hh_manager_stats st;
    memset(&st, 0, sizeof(st));
    st.struct_size = sizeof(st);
    return s->m && hh_manager_get_stats(s->m, &st) == HH_OK && st.quiet;
}

/* Reads what an idle process (slot p, pid as seen when its fd was polled)
 * wrote to stderr (out: to stdout), holding the slot meanwhile (draining):
 * a handler's background threads log between jobs too, and a process
 * whose pipe fills up would block in its write until its next job, or
 * forever. Lines are logged with jid=- up to --exec-log-max, the rest
 * read and dropped. Stdout between jobs is out of protocol: the process
 * is replaced before its next job, as it was when that job found the
 * output, but no longer blocked until then, and what it wrote is in the
 * log. Only an idle slot is read, so no job's answer is ever taken here.
 * Skipped when a job took the slot since. */
static void drain_idle(cli_serve *s, srv_proc *p, pid_t pid, int fd, int out) {
    pthread_mutex_lock(&s->mu);
    int mine = !p->busy && p->pid == pid && (out ? p->out_fd : p->err_fd) == fd;
    if (mine) p->busy = p->draining = 1;
    pthread_mutex_unlock(&s->mu);
    if (!mine) return;
    /* a pipe's worth at a time: a process that never stops writing still
     * lets a job take it */
    if (out) {
        /* the end of stdout: left open for the next job to see it (and
         * replace the process), only no longer polled */
        if (!read_out_idle(s, p, 65536)) p->out_eof = 1;
    } else if (!read_err_max(s, p, NULL, 65536)) {
        close_fd(&p->err_fd); /* it ended: the next job sees it */
    }
    pthread_mutex_lock(&s->mu);
    p->busy = p->draining = 0;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

/* The keeper thread of a --serve class: reads the stderr of every idle
 * process (drain_idle), and with --serve-pool is the starter too, keeping
 * procs[0 .. eager) started, reading every hello at once with poll, so no
 * process waits for another and nobody waits for it but the jobs of its
 * class (a starting process is busy: acquire() passes it by). A process
 * that fails its hello is killed and started again after the backoff.
 * With nothing to watch it sleeps until a process becomes idle. Ends on
 * s->stopping. */
static void *starter_main(void *arg) {
    cli_serve *s = arg;
    struct pollfd *pf = calloc((size_t)s->pool * 2, sizeof(*pf));
    pid_t *idle = calloc((size_t)s->pool, sizeof(*idle));  /* the pid whose stderr and stdout are polled, per slot */
    nfds_t *at = calloc((size_t)s->pool * 2, sizeof(*at)); /* and where in pf (NFDS_NONE: not polled) */
    pthread_mutex_lock(&s->mu);
    while (!s->stopping && pf && idle && at) {
        pthread_mutex_unlock(&s->mu); /* never the manager's lock under ours */
        int quiet = !s->eager || worker_quiet(s);
        pthread_mutex_lock(&s->mu);
        for (int i = 0; i < s->eager && !s->stopping && !quiet; i++) {
            srv_proc *p = &s->procs[i];
            if (p->busy || p->pid > 0 || cli_mono() < s->next_start) continue;
            p->busy = p->starting = 1;
            pthread_mutex_unlock(&s->mu);
            int rc = spawn_proc(s, p);
            if (rc != 0) {
                SLOG(s, HH_LOG_ERROR, "--serve %s: cannot run %s: %s", s->klass, s->argv[0], strerror(rc));
                backoff(s);
            }
            pthread_mutex_lock(&s->mu);
            if (rc != 0) p->busy = p->starting = 0;
        }
        nfds_t n = 0;
        for (int i = 0; i < s->pool; i++) { /* idle processes: their stderr and stdout, as they are now */
            srv_proc *p = &s->procs[i];
            /* not the stdout of one whose hello is due: that hello is the
             * protocol's, read by its next job */
            int err = p->err_fd >= 0, out = p->out_fd >= 0 && !p->out_eof && !p->hello_due;
            idle[i] = !p->busy && p->pid > 0 && (err || out) ? p->pid : 0;
            at[2 * i] = at[2 * i + 1] = NFDS_NONE;
            if (idle[i] && err) at[2 * i] = n, pf[n].fd = p->err_fd, pf[n].events = POLLIN, pf[n].revents = 0, n++;
            if (idle[i] && out) at[2 * i + 1] = n, pf[n].fd = p->out_fd, pf[n].events = POLLIN, pf[n].revents = 0, n++;
        }
        /* only this thread sets or clears `starting`: read without mu below */
        pthread_mutex_unlock(&s->mu);
        for (int i = 0; i < s->pool; i++) {
            srv_proc *p = &s->procs[i];
            if (!p->starting) continue;
            pf[n].fd = p->out_fd, pf[n].events = POLLIN, pf[n].revents = 0, n++;
            if (p->err_fd >= 0) pf[n].fd = p->err_fd, pf[n].events = POLLIN, pf[n].revents = 0, n++;
        }
        /* a process that becomes idle meanwhile is watched from the next
         * round, 100 ms at most later: the pipe holds 64 KiB until then */
        if (n) poll(pf, n, 100);
        else if (s->eager) {
            struct timespec ts = {0, 50 * 1000000L}; /* a backoff, or every slot running */
            nanosleep(&ts, NULL);
        } else {
            struct timespec ts; /* no process: until one is idle (release), or the stop */
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += 1;
            pthread_mutex_lock(&s->mu);
            if (!s->stopping) pthread_cond_timedwait(&s->kcv, &s->mu, &ts);
            pthread_mutex_unlock(&s->mu);
        }
        for (int i = 0; i < s->pool; i++)
            for (int out = 0; out < 2; out++)
                if (idle[i] && at[2 * i + out] != NFDS_NONE && pf[at[2 * i + out]].revents)
                    drain_idle(s, &s->procs[i], idle[i], pf[at[2 * i + out]].fd, out);
        for (int i = 0; i < s->pool; i++) {
            srv_proc *p = &s->procs[i];
            char what[300];
            int r = p->starting ? hello_step(s, p, what, sizeof(what)) : 0;
            if (r == 0) continue;
            if (r < 0) {
                SLOG(s, HH_LOG_ERROR, "--serve %s: pid=%d %s; killed, started again after a backoff", s->klass,
                     (int)p->pid, what);
                end_proc(s, p, 0);
                backoff(s);
            }
            pthread_mutex_lock(&s->mu);
            p->starting = p->busy = 0;
            pthread_cond_broadcast(&s->cv);
            pthread_mutex_unlock(&s->mu);
        }
        pthread_mutex_lock(&s->mu);
    }
    pthread_mutex_unlock(&s->mu);
    for (int i = 0; i < s->pool; i++) { /* the stop: what has not said hello goes */
        srv_proc *p = &s->procs[i];
        if (!p->starting) continue;
        end_proc(s, p, 0);
        pthread_mutex_lock(&s->mu);
        p->starting = p->busy = 0;
        pthread_cond_broadcast(&s->cv);
        pthread_mutex_unlock(&s->mu);
    }
    free(pf);
    free(idle);
    free(at);
    return NULL;
}

/* Ends the keeper thread (its starting processes killed); idempotent. */
static void starter_stop(cli_serve *s) {
    pthread_mutex_lock(&s->mu);
    s->stopping = 1;
    int running = s->starter_running;
    s->starter_running = 0;
    pthread_cond_signal(&s->kcv);
    pthread_mutex_unlock(&s->mu);
    if (running) pthread_join(s->starter, NULL);
}

int cli_serve_start(cli_serve *s, int eager) {
    if (s->starter_running) return 0;
    s->eager = eager < 0 ? 0 : eager > s->pool ? s->pool : eager;
    s->stopping = 0;
    /* the thread takes no signal: the worker waits for them synchronously */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int rc = pthread_create(&s->starter, NULL, starter_main, s);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        SLOG(s, HH_LOG_WARN,
             "--serve %s: no keeper thread (%s): processes start as jobs need them, and stderr between jobs is "
             "read at the next job",
             s->klass, strerror(rc));
        return rc;
    }
    s->starter_running = 1;
    return 0;
}

/* Fails a job whose --exec-timeout ran out before its line was sent. */
static void fail_timed_out(cli_serve *s, hh_job *job, double start, const char *waiting) {
    hh_job_fail(job, "hiredhand::ExecFailed", "%s timed out after %.1f s waiting for %s", s->argv[0],
                cli_mono() - start, waiting);
}

/* Starts the process in slot p, unless it was started for an earlier job
 * that gave up waiting for its hello, and reads its hello, both within the
 * job's deadline (0: none) counted from start. 0, or -1 with the job failed
 * (the slot is then empty again, but for a process still due to say hello
 * in time). */
static int start_proc(cli_serve *s, srv_proc *p, hh_job *job, double start, double deadline) {
    if (!p->hello_due) {
        /* the backoff after an abnormal end, cut short by a stop */
        for (;;) {
            pthread_mutex_lock(&s->mu);
            double wait = s->next_start - cli_mono();
            pthread_mutex_unlock(&s->mu);
            if (wait <= 0) break;
            if (hh_job_cancelled(job)) {
                hh_job_fail(job, "hiredhand::ServeFailed", "cancelled by shutdown before %s started", s->argv[0]);
                return -1;
            }
            if (deadline > 0 && cli_mono() > deadline) {
                fail_timed_out(s, job, start, "a process to start");
                return -1;
            }
            struct timespec ts = {0, (long)((wait < 0.05 ? wait : 0.05) * 1e9)};
            nanosleep(&ts, NULL);
        }
        int rc = spawn_proc(s, p);
        if (rc != 0) {
            hh_job_fail(job, cli_errno_class(rc), "cannot run %s: %s", s->argv[0], strerror(rc));
            backoff(s);
            return -1;
        }
    }
    char what[300];
    int hello = await_hello(s, p, job, deadline, what, sizeof(what));
    if (hello == 0) return 0;
    if (hello == -3) {
        fail_timed_out(s, job, start, "its hello");
        return -1;
    }
    hh_job_fail(job, hello == -2 ? "hiredhand::ServeProtocolError" : "hiredhand::ServeFailed", "%s", what);
    backoff(s);
    return -1;
}

/* Whether the integer token t[0..n) ('-' and digits; JSON allows no
 * leading zero) is beyond 64 bits, as jansson judges it (strtoll's range). */
static int beyond_64_bits(const char *t, size_t n) {
    int neg = *t == '-';
    t += neg, n -= (size_t)neg;
    return n > 19 || (n == 19 && memcmp(t, neg ? "9223372036854775808" : "9223372036854775807", 19) > 0);
}

/* The payload parsed for the job line, each integer beyond 64 bits (Ruby
 * has them, jansson has not) as a real and every other value as written;
 * *big says whether there was one. jansson reads either every integer as
 * a real or none (JSON_DECODE_INT_AS_REAL), which turned a job's 7 into
 * 7.0 beside one bignum: so such a payload, which jansson has already
 * accepted as JSON (hh__job_adopt), is copied with ".0" after each of its
 * bignums, and only they become reals. In valid JSON a number is the one
 * token outside strings that holds digits, and a string ends at the
 * first '"' that no backslash escapes: that is all the copy needs to
 * know; jansson parses the result. */
static json_t *load_payload(const char *payload, size_t len, int *big) {
    json_error_t err;
    *big = 0;
    /* \u0000 in a string (a class "T\u0000Evil") is data like any other:
     * the line carries it escaped */
    json_t *item = json_loadb(payload, len, JSON_ALLOW_NUL, &err);
    if (item || !strstr(err.text, "too big ")) return item; /* "too big (negative) integer" */
    *big = 1;
    /* a bignum has 20 characters at least, and gets 2 more */
    char *copy = malloc(len + len / 10 + 3);
    size_t n = 0;
    for (size_t i = 0; copy && i < len;) {
        if (payload[i] == '"') {
            size_t j = i + 1;
            while (j < len && payload[j] != '"') j += payload[j] == '\\' ? 2 : 1;
            j = j < len ? j + 1 : len;
            memcpy(copy + n, payload + i, j - i);
            n += j - i, i = j;
        } else if (payload[i] == '-' || (payload[i] >= '0' && payload[i] <= '9')) {
            size_t j = i + 1;
            while (j < len && payload[j] && strchr("0123456789+-.eE", payload[j])) j++;
            memcpy(copy + n, payload + i, j - i);
            n += j - i;
            if (!memchr(payload + i, '.', j - i) && !memchr(payload + i, 'e', j - i) &&
                !memchr(payload + i, 'E', j - i) && beyond_64_bits(payload + i, j - i))
                copy[n++] = '.', copy[n++] = '0';
            i = j;
        } else {
            copy[n++] = payload[i++];
        }
    }
    item = copy ? json_loadb(copy, n, JSON_ALLOW_NUL, NULL) : NULL;
    free(copy);
    /* never less than before: every integer a real */
    return item ? item : json_loadb(payload, len, JSON_ALLOW_NUL | JSON_DECODE_INT_AS_REAL, NULL);
}

/* The job line: the payload (parsed) and the variables --exec sets. */
static char *job_line(hh_job *job, size_t *len) {
    size_t plen;
    const char *payload = hh_job_payload(job, &plen);
    int big;
    json_t *item = load_payload(payload, plen, &big);
    /* a bignum's digits: the exact text beside */
    json_t *exact = big ? json_stringn(payload, plen) : NULL;
    json_t *msg = json_object();
    /* retry_count as stored when it is a number (a count beyond int, or
     * beyond 64 bits, keeps its digits: a placeholder here, the text put in
     * its place below); null when absent or not a number */
    char *rc = hh_job_get(job, "retry_count");
    if (rc && !(rc[0] == '-' || (rc[0] >= '0' && rc[0] <= '9'))) {
        free(rc);
        rc = NULL;
    }
    if (!msg || !item) {
        json_decref(msg), json_decref(item), json_decref(exact);
        free(rc);
        return NULL;
    }
    json_object_set_new(msg, "jid", json_string(hh_job_jid(job)));
    size_t cl;
    const char *klass = hh_job_handler_class(job, &cl);
    json_object_set_new(msg, "class", json_stringn(klass, cl));
    json_object_set_new(msg, "queue", json_string(hh_job_queue(job)));
    json_object_set_new(msg, "retry_count", json_null());
    json_object_set_new(msg, "job", item);
    if (exact) json_object_set_new(msg, "payload", exact);
    /* jansson's default 17 digits: each real of the payload reads back as
     * the same double (job data, not a report: CLI_JSON_FLAGS rounds) */
    char *s = json_dumps(msg, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(msg);
    /* the members before it are strings, whose quotes are escaped: the first
     * match is the member itself */
    char *at = s && rc ? strstr(s, ",\"retry_count\":null,\"job\":") : NULL;
    if (at) {
        at += strlen(",\"retry_count\":");
        size_t head = (size_t)(at - s), tail = strlen(at + 4), n = strlen(rc);
        char *w = malloc(head + n + tail + 1);
        if (w) {
            memcpy(w, s, head);
            memcpy(w + head, rc, n);
            memcpy(w + head + n, at + 4, tail + 1);
        }
        free(s);
        s = w;
    }
    free(rc);
    if (!s) return NULL;
    *len = strlen(s);
    char *l = realloc(s, *len + 2);
    if (!l) {
        free(s);
        return NULL;
    }
    l[(*len)++] = '\n';
    l[*len] = '\0';
    return l;
}

/* A member of a failure answer as text: a string as it is, null as NULL
 * (absent), anything else (a number, a list) as its JSON text, logged: a
 * handler's mistake keeps what it said rather than vanish. Free with
 * free(). */
static char *answer_text(cli_serve *s, const srv_proc *p, hh_job *job, const json_t *v, const char *name) {
    if (!v || json_is_null(v)) return NULL;
    if (json_is_string(v)) return strndup(json_string_value(v), json_string_length(v));
    char *t = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_PRESERVE_ORDER);
    SLOG(s, HH_LOG_WARN, "--serve %s: pid=%d jid=%s: %s is %s, not a string: kept as its JSON text", s->klass,
         (int)p->pid, hh_job_jid(job), name,
         json_is_number(v)        ? "a number"
             : json_is_boolean(v) ? "a boolean"
             : json_is_array(v)   ? "a list"
                                  : "an object");
    return t;
}

/* Applies an answer line. 0 success, -1 failure (job failed), -2 garbage. */
static int apply_answer(cli_serve *s, const srv_proc *p, hh_job *job, const char *line) {
    json_t *a = json_loads(line, 0, NULL);
    json_t *ok = json_object_get(a, "ok");
    if (!json_is_boolean(ok)) {
        json_decref(a);
        return -2;
    }
    if (json_is_true(ok)) {
        json_decref(a);
        return 0;
    }
    char *cls = answer_text(s, p, job, json_object_get(a, "error_class"), "error_class");
    char *msg = answer_text(s, p, job, json_object_get(a, "error_message"), "error_message");
    hh_job_fail(job, cls && *cls ? cls : "StandardError", "%s", msg ? msg : "");
    free(cls);
    free(msg);
    /* a list of lines; a line that is no string, or a backtrace that is
     * no list, as its JSON text */
    json_t *bt = json_object_get(a, "backtrace");
    size_t n = json_is_array(bt) ? json_array_size(bt) : bt && !json_is_null(bt) ? 1 : 0;
    char **lines = n ? calloc(n, sizeof(char *)) : NULL;
    size_t k = 0;
    for (size_t i = 0; lines && i < n; i++) {
        json_t *l = json_is_array(bt) ? json_array_get(bt, i) : bt;
        if ((lines[k] = answer_text(s, p, job, l, "a backtrace line"))) k++;
    }
    if (k) hh_job_set_backtrace(job, (const char *const *)lines, k);
    for (size_t i = 0; i < k; i++) free(lines[i]);
    free(lines);
    json_decref(a);
    return -1;
}

/* Takes an idle slot (one with a running process first, else an empty one),
 * waiting while every slot is held. Only the time spent while some slot is
 * starting (the starter reading its hello) counts towards the job's
 * --exec-timeout, in *counted: a wait behind other jobs is a queue, not
 * this job's run, and each of those jobs is bounded by its own timeout.
 * NULL when the job is cancelled or its counted wait passes timeout (0:
 * none). */
static srv_proc *acquire(cli_serve *s, hh_job *job, double timeout, double *counted) {
    *counted = 0;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        srv_proc *empty = NULL;
        int starting = 0, draining = 0;
        for (int i = 0; i < s->pool; i++) {
            srv_proc *p = &s->procs[i];
            if (p->busy) {
                starting |= p->starting;
                draining |= p->draining;
                continue;
            }
            if (p->pid > 0) {
                p->busy = 1;
                pthread_mutex_unlock(&s->mu);
                return p;
            }
            if (!empty) empty = p;
        }
        if (empty && !draining) { /* a process being drained is idle in a moment: no new one for it */
            empty->busy = 1;
            pthread_mutex_unlock(&s->mu);
            return empty;
        }
        if (hh_job_cancelled(job) || (timeout > 0 && *counted > timeout)) break;
        double t0 = cli_mono();
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 100 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&s->cv, &s->mu, &ts);
        if (starting) *counted += cli_mono() - t0;
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

static void release(cli_serve *s, srv_proc *p) {
    pthread_mutex_lock(&s->mu);
    p->busy = 0;
    pthread_cond_signal(&s->cv);
    pthread_cond_signal(&s->kcv); /* an idle process for the keeper to watch */
    pthread_mutex_unlock(&s->mu);
}

/* Whether a process that ended during a job never took any of its line:
 * sent bytes went into its stdin and every one of them is still in the
 * pipe (FIONREAD on our end counts what the reader has not read), or none
 * went in at all. Such a job never reached the handler. */
static int job_unread(const srv_proc *p, size_t sent) {
    if (sent == 0) return 1;
    int unread = 0;
    return p->in_fd >= 0 && ioctl(p->in_fd, FIONREAD, &unread) == 0 && unread >= 0 && (size_t)unread >= sent;
}

/* Attempts at handing one job to a process that ends without reading it
 * (it exited right after its previous answer): a program that does so
 * every time fails the job after this many. */
#define UNREAD_TRIES 3

int cli_serve_handler(hh_job *job, void *udata) {
    cli_serve *s = udata;
    /* --exec-timeout covers the job's run as under --exec, its process's
     * start and hello included; a wait behind other jobs for a busy pool
     * does not count (acquire) */
    double counted, t0 = cli_mono();
    srv_proc *p = acquire(s, job, s->timeout, &counted);
    double start = cli_mono() - counted, deadline = s->timeout > 0 ? start + s->timeout : 0;
    if (!p && hh_job_cancelled(job)) {
        hh_job_fail(job, "hiredhand::ServeFailed", "cancelled by shutdown while waiting for a %s process", s->argv[0]);
        return -1;
    }
    if (!p) {
        hh_job_fail(job, "hiredhand::ExecFailed", "%s timed out after %.1f s waiting for a process to start",
                    s->argv[0], cli_mono() - t0);
        return -1;
    }
    int tries = 0;
again:
    if (p->pid > 0 && !p->hello_due) {
        /* output between jobs is out of protocol, and an exit shows as
         * stdout's end: a fresh process for this job, which has not been
         * sent anywhere yet */
        struct pollfd pf[2] = {{p->out_fd, POLLIN, 0}, {p->err_fd, POLLIN, 0}};
        int r = poll(pf, 2, 0), bad = 0;
        if (r > 0 && pf[1].revents && !read_err(s, p, NULL)) close_fd(&p->err_fd);
        if (r > 0 && pf[0].revents) {
            read_out(p);
            bad = 1;
        }
        if (bad || p->outlen || p->out_between) {
            if (p->out_between) { /* what the keeper read of it: its last line, and how much was not logged */
                err_ctx c = {s, p, NULL};
                cli_lines_end(&p->outl, out_line, &c);
                cli_log_budget_end(&p->logb, s->m, NULL, s->klass, (int)p->pid);
            }
            SLOG(s, HH_LOG_WARN, "--serve %s: pid=%d %s between jobs; replacing it", s->klass, (int)p->pid,
                 p->outlen || p->out_between ? "wrote to stdout" : "ended");
            end_proc(s, p, 0);
            backoff(s);
        }
    }
    if ((p->pid <= 0 || p->hello_due) && start_proc(s, p, job, start, deadline) != 0) {
        release(s, p);
        return -1;
    }
    tail_clear(p);
    cli_log_budget_end(&p->logb, s->m, NULL, s->klass, (int)p->pid); /* what came before the job */
    size_t len = 0;
    char *data = job_line(job, &len);
    if (!data) {
        release(s, p);
        hh_job_fail(job, "NoMemoryError", "cannot build the job line");
        return -1;
    }
    char *line = NULL;
    size_t sent = 0;
    int io = converse(s, p, job, data, len, deadline, &line, &sent);
    free(data);
    int rc = -1, broken = 1;
    char what[300];
    if ((io == IO_EOF || io == IO_ERROR) && job_unread(p, sent) && ++tries < UNREAD_TRIES && !hh_job_cancelled(job) &&
        (deadline <= 0 || cli_mono() < deadline)) {
        /* it ended (after its last answer, say) without taking this job:
         * not this job's failure, and nothing ran it; a new process gets it */
        describe_end(s, p, what, sizeof(what));
        SLOG(s, HH_LOG_WARN, "--serve %s: pid=%d ended before it read jid=%s (%s); a new process gets the job",
             s->klass, (int)p->pid, hh_job_jid(job), what);
        end_proc(s, p, 0);
        backoff(s);
        goto again;
    }
    switch (io) {
    case IO_LINE:
        rc = apply_answer(s, p, job, line);
        if (rc == -2) {
            snprintf(what, sizeof(what), "%s answered garbage: %.200s", s->argv[0], line);
            fail_proc(job, p, "hiredhand::ServeProtocolError", what);
            rc = -1;
        } else {
            broken = p->outlen > 0; /* more than one line: out of protocol */
            if (broken)
                SLOG(s, HH_LOG_WARN, "--serve %s: pid=%d wrote more than one answer line; replacing it", s->klass,
                     (int)p->pid);
        }
        free(line);
        break;
    case IO_TIMEOUT:
        snprintf(what, sizeof(what), "%s timed out after %.1f s", s->argv[0], cli_mono() - start);
        fail_proc(job, p, "hiredhand::ExecFailed", what);
        break;
    case IO_CANCELLED:
        snprintf(what, sizeof(what), "%s cancelled by shutdown after %.1f s", s->argv[0], cli_mono() - start);
        fail_proc(job, p, "hiredhand::ExecFailed", what);
        break;
    case IO_TOO_LONG:
        snprintf(what, sizeof(what), "%s answered a line longer than 16 MiB (%d bytes), the --serve protocol's limit",
                 s->argv[0], ANSWER_MAX);
        fail_proc(job, p, "hiredhand::ServeProtocolError", what);
        break;
    default: {
        /* its last words on stderr belong to this job */
        if (p->err_fd >= 0) {
            double until = cli_mono() + 0.5;
            struct pollfd ef = {p->err_fd, POLLIN, 0};
            while (p->err_fd >= 0 && cli_mono() < until && poll(&ef, 1, 50) >= 0)
                if (!read_err(s, p, job)) close_fd(&p->err_fd);
        }
        /* stdout closes as it exits: give the exit a moment to be seen */
        for (double until = cli_mono() + 1; !reap(p, 0) && cli_mono() < until;) {
            struct timespec ts = {0, 10 * 1000000L};
            nanosleep(&ts, NULL);
        }
        describe_exit(s, p, what, sizeof(what));
        fail_proc(job, p, "hiredhand::ExecFailed", what);
        break;
    }
    }
    cli_log_budget_end(&p->logb, s->m, job, s->klass, (int)p->pid);
    if (broken) {
        SLOG(s, HH_LOG_WARN, "--serve %s: pid=%d killed (jid=%s: %s)", s->klass, (int)p->pid, hh_job_jid(job),
             io == IO_LINE ? "out of protocol" : what);
        end_proc(s, p, 0);
        backoff(s);
    } else {
        pthread_mutex_lock(&s->mu);
        if (rc == 0) s->failures = 0;
        pthread_mutex_unlock(&s->mu);
        if (rc == 0) report_health(s, 0);
        if (s->max_jobs > 0 && ++p->jobs >= s->max_jobs) {
            SLOG(s, HH_LOG_DEBUG, "--serve %s: pid=%d recycled after %ld jobs", s->klass, (int)p->pid, p->jobs);
            end_proc(s, p, KILL_GRACE);
        }
    }
    release(s, p);
    return rc;
}

void cli_serve_shutdown(cli_serve *s, double grace) {
    if (!s) return;
    starter_stop(s);
    pthread_mutex_lock(&s->mu);
    for (int i = 0; i < s->pool; i++)
        if (s->procs[i].pid > 0 && !s->procs[i].busy) close_fd(&s->procs[i].in_fd); /* all at once, */
    pthread_mutex_unlock(&s->mu);
    for (int i = 0; i < s->pool; i++) { /* then each waited for */
        pthread_mutex_lock(&s->mu);
        srv_proc *p = s->procs[i].pid > 0 && !s->procs[i].busy ? &s->procs[i] : NULL;
        if (p) p->busy = 1;
        pthread_mutex_unlock(&s->mu);
        if (p) {
            end_proc(s, p, grace);
            release(s, p);
        }
    }
}

void cli_serve_free(cli_serve *s) {
    if (!s) return;
    starter_stop(s);
    s->m = NULL; /* the manager may be gone by now: no more logging */
    for (int i = 0; s->procs && i < s->pool; i++) {
        end_proc(s, &s->procs[i], 0);
        free(s->procs[i].out);
    }
    free(s->procs);
    cli_exec_split_free(s->argv);
    free(s->klass);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    pthread_cond_destroy(&s->kcv);
    free(s);
}
