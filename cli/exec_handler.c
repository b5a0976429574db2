/* exec_handler.c -- `--exec CLASS=COMMAND`: runs one program per job, so
 * any language can run Sidekiq jobs. The job JSON (exact bytes as stored)
 * goes to its stdin; HIREDHAND_JID, HIREDHAND_CLASS, HIREDHAND_QUEUE and
 * HIREDHAND_RETRY_COUNT are set; exit 0 is success. A non-zero exit, a
 * signal or the timeout fails the job with the status and the last line of
 * stderr. Its stderr lines are logged with the job's class and jid, its
 * stdout goes where --exec-stdout says (inherited by default, as the
 * worker's; or logged like stderr; or discarded), both logged up to
 * --exec-log-max bytes per job. The rest of the environment is the
 * worker's, without the Redis credentials (REDIS_URL, REDIS_PASSWORD) and
 * any variable named by --exec-env-drop, unless --exec-env passes it
 * explicitly. */
#include <errno.h>
#include <jansson.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
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
    hh_manager *m;  /* for its stderr (and --exec-stdout log) lines */
    cli_exec_stdout out_mode;
    size_t log_max; /* bytes of those lines logged per job (0: no cap) */
};

void cli_exec_set_manager(cli_exec *e, hh_manager *m) { e->m = m; }
void cli_exec_set_stdout(cli_exec *e, cli_exec_stdout mode) { e->out_mode = mode; }
void cli_exec_set_log_max(cli_exec *e, size_t bytes) { e->log_max = bytes; }

/* Where a line of the handler's output goes: the log, tagged with the job. */
typedef struct out_ctx {
    cli_exec *e;
    hh_job *job;
    int pid;
    const char *stream;
    cli_lines lines;
    cli_log_budget *budget; /* the job's, shared by its stderr and stdout */
} out_ctx;

static void out_line(void *udata, const char *line, size_t len) {
    out_ctx *c = udata;
    cli_log_handler_line(c->budget, c->e->m, c->job, c->e->klass, c->pid, c->stream, line, len);
}

const char *cli_exec_class(const cli_exec *e) { return e->klass; }

void cli_exec_free(cli_exec *e) {
    if (!e) return;
    for (size_t i = 0; e->argv && e->argv[i]; i++) free(e->argv[i]);
    free(e->argv);
    free(e->klass);
    free(e);
}

int cli_executable(const char *prog) {
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
    e->log_max = CLI_LOG_MAX_DEFAULT;
    size_t n = 0;
    e->argv = cli_exec_split(eq + 1, &n);
    if (!e->argv || n == 0) {
        snprintf(err, errlen, "--exec %s: empty command", e->klass);
        cli_exec_free(e);
        return NULL;
    }
    char why[600];
    if (cli_exec_shell_syntax(e->argv, why, sizeof(why))) {
        snprintf(err, errlen, "--exec %s: %s", e->klass, why);
        cli_exec_free(e);
        return NULL;
    }
    if (!cli_executable(e->argv[0])) {
        snprintf(err, errlen, "--exec %s: program '%s' not found or not executable", e->klass, e->argv[0]);
        cli_exec_free(e);
        return NULL;
    }
    return e;
}

double cli_mono(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Names kept out of handlers' environments unless passed: the worker's
 * Redis credentials, then --exec-env-drop's. Set before the worker starts,
 * read-only after. */
static const char *default_drop[] = {"REDIS_URL", "REDIS_PASSWORD"};
static const char **env_pass, **env_drop;
static size_t npass, ndrop;

static int env_name_ok(const char *name) { return *name && !strchr(name, '='); }

static int names_add(const char ***list, size_t *n, const char *name) {
    const char **v = realloc(*list, (*n + 1) * sizeof(*v));
    if (!v) return -1;
    v[(*n)++] = name;
    *list = v;
    return 0;
}

int cli_exec_env_pass(const char *name) { return env_name_ok(name) ? names_add(&env_pass, &npass, name) : -1; }
int cli_exec_env_drop(const char *name) { return env_name_ok(name) ? names_add(&env_drop, &ndrop, name) : -1; }

/* Whether NAME=value (var) is one of names[]. */
static int named(const char *var, const char **names, size_t n) {
    size_t l = strcspn(var, "=");
    for (size_t i = 0; i < n; i++)
        if (strlen(names[i]) == l && strncmp(var, names[i], l) == 0) return 1;
    return 0;
}

static int dropped(const char *var) {
    if (strncmp(var, "HIREDHAND_", 10) == 0) return 1; /* set per job below */
    if (named(var, env_pass, npass)) return 0;
    return named(var, default_drop, sizeof(default_drop) / sizeof(*default_drop)) || named(var, env_drop, ndrop);
}

static void vars_free(char *vars[4]) {
    for (int i = 0; i < 4; i++) free(vars[i]);
}

char **cli_exec_environ(char *const *extra, size_t nextra) {
    size_t n = 0;
    while (environ[n]) n++;
    char **env = calloc(n + nextra + 1, sizeof(char *));
    if (!env) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!dropped(environ[i])) env[k++] = environ[i];
    for (size_t i = 0; i < nextra; i++) env[k++] = extra[i];
    env[k] = NULL;
    return env;
}

/* The worker's environment as filtered above, plus the job's variables
 * (allocated in vars[], freed by the caller with vars_free). The class is
 * the one the handler was chosen by: Active Job's wrapped class. */
static char **job_env(hh_job *job, char *vars[4]) {
    int bad = 0;
    bad |= asprintf(&vars[0], "HIREDHAND_JID=%s", hh_job_jid(job)) < 0;
    bad |= asprintf(&vars[1], "HIREDHAND_CLASS=%s", hh_job_handler_class(job, NULL)) < 0;
    bad |= asprintf(&vars[2], "HIREDHAND_QUEUE=%s", hh_job_queue(job)) < 0;
    /* retry_count as stored, as Ruby's to_s shows it: -1 (Sidekiq's after
     * a manual retry of a job at 0) and counts beyond int alike; a string
     * without its quotes; empty when absent or null (never failed) */
    char *rc = hh_job_get(job, "retry_count"), *shown = rc;
    json_t *v = rc ? json_loads(rc, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL) : NULL;
    if (!rc || json_is_null(v)) shown = "";
    else if (json_is_string(v)) shown = (char *)json_string_value(v);
    bad |= asprintf(&vars[3], "HIREDHAND_RETRY_COUNT=%s", shown) < 0;
    json_decref(v);
    free(rc);
    if (bad) return NULL;
    return cli_exec_environ(vars, 4);
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

/* The job fails with status and the last stderr line that says something
 * (cli_error_text: not a blank line, and of a line redrawn with '\r' what
 * a terminal shows); its last lines are the backtrace. A NUL byte in the
 * output is kept as "\x00", not taken for the text's end. */
static void fail_with_stderr(hh_job *job, const char *status, const char *tail, size_t len) {
    char *text = cli_output_text(tail, len, NULL);
    if (!text) {
        hh_job_fail(job, "hiredhand::ExecFailed", "%s", status);
        return;
    }
    const char *lines[BACKTRACE_LINES];
    size_t nl = 0;
    const char *last = NULL;
    for (char *save = NULL, *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        size_t n = strlen(l);
        if (n && l[n - 1] == '\r') l[--n] = '\0'; /* a \r\n line end */
        if (!n) continue;
        if (nl == BACKTRACE_LINES) {
            memmove(lines, lines + 1, (BACKTRACE_LINES - 1) * sizeof(char *));
            nl--;
        }
        lines[nl++] = l;
        const char *t = cli_error_text(l);
        if (t) last = t;
    }
    if (last) hh_job_fail(job, "hiredhand::ExecFailed", "%s: %.1000s", status, last);
    else hh_job_fail(job, "hiredhand::ExecFailed", "%s", status);
    if (nl) hh_job_set_backtrace(job, lines, nl);
    free(text);
}

const char *cli_errno_class(int err) {
    static __thread char buf[64];
    const char *name = strerrorname_np(err);
    snprintf(buf, sizeof(buf), "Errno::%s", name ? name : "EINVAL");
    return buf;
}

/* fork + exec rather than posix_spawn, for PR_SET_PDEATHSIG: a worker killed
 * with kill -9 (or the OOM killer) takes its running handlers with it, so a
 * recovered job never runs twice at once. Only async-signal-safe calls run
 * between fork and exec; an exec failure comes back through a CLOEXEC pipe.
 * Returns 0 or an errno. */
static struct rlimit nofile_given; /* the limit the worker was started with */
static int nofile_raised;

unsigned long long cli_exec_raise_nofile(void) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return 0;
    rlim_t want = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > (1u << 20) ? (rlim_t)(1u << 20) : rl.rlim_max;
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want) {
        struct rlimit up = {want, rl.rlim_max};
        if (setrlimit(RLIMIT_NOFILE, &up) == 0) {
            nofile_given = rl;
            nofile_raised = 1;
            return (unsigned long long)want;
        }
    }
    return (unsigned long long)rl.rlim_cur;
}

int cli_exec_spawn(char *const *argv, char *const *env, int in_fd, int out_fd, int err_fd, pid_t *out) {
    int ep[2];
    if (pipe2(ep, O_CLOEXEC) != 0) return errno;
    /* for the fallback below: getrlimit is not async-signal-safe */
    struct rlimit rl;
    int maxfd = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < 65536
        ? (int)rl.rlim_cur
        : 65536;
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(ep[0]), close(ep[1]);
        return e;
    }
    if (pid == 0) {
        int e;
        setpgid(0, 0); /* own group: a timeout kills the handler's children too */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(127);
        struct sigaction dfl;
        memset(&dfl, 0, sizeof(dfl));
        dfl.sa_handler = SIG_DFL;
        for (int sig = 1; sig < NSIG; sig++) sigaction(sig, &dfl, NULL);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);                      /* the worker blocks signals for sigwait */
        if (nofile_raised) setrlimit(RLIMIT_NOFILE, &nofile_given); /* a plain system call */
        if (dup2(in_fd, 0) < 0 || (out_fd >= 0 && dup2(out_fd, 1) < 0) || dup2(err_fd, 2) < 0) goto fail;
        /* Every descriptor the worker opens is close-on-exec, but one
         * another thread opened between its creation and setting the flag
         * (a Redis socket) would still leak: the handler gets 0, 1 and 2. */
        if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) != 0)
            for (int fd = 3; fd < maxfd; fd++) fcntl(fd, F_SETFD, FD_CLOEXEC);
        execvpe(argv[0], argv, env);
    fail:
        e = errno;
        (void)!write(ep[1], &e, sizeof(e));
        _exit(127);
    }
    close(ep[1]);
    int child_err = 0;
    ssize_t n;
    while ((n = read(ep[0], &child_err, sizeof(child_err))) < 0 && errno == EINTR) {}
    close(ep[0]);
    if (n == (ssize_t)sizeof(child_err)) {
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {}
        return child_err;
    }
    *out = pid;
    return 0;
}

/* What stderr gave: kept for a failure's message, and logged. */
static void err_data(out_ctx *c, char *tail, size_t *tlen, const char *buf, size_t n) {
    tail_append(tail, tlen, buf, n);
    cli_lines_feed(&c->lines, buf, n, out_line, c);
}

/* Reads what the --exec-stdout log pipe has, without waiting; 0 at EOF. */
static int read_out(out_ctx *c, int fd) {
    char buf[4096];
    ssize_t got;
    while ((got = read(fd, buf, sizeof(buf))) > 0) cli_lines_feed(&c->lines, buf, (size_t)got, out_line, c);
    return !(got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR));
}

int cli_exec_handler(hh_job *job, void *udata) {
    cli_exec *e = udata;
    int in[2], errp[2], outp[2] = {-1, -1};
    if (pipe2(in, O_CLOEXEC) != 0) {
        hh_job_fail(job, "Errno::EMFILE", "pipe: %s", strerror(errno));
        return -1;
    }
    if (pipe2(errp, O_CLOEXEC) != 0) {
        close(in[0]), close(in[1]);
        hh_job_fail(job, "Errno::EMFILE", "pipe: %s", strerror(errno));
        return -1;
    }
    /* stdout: the worker's (inherit, -1), a pipe to the log, or /dev/null */
    if (e->out_mode == CLI_EXEC_STDOUT_LOG && pipe2(outp, O_CLOEXEC) != 0) outp[0] = outp[1] = -1;
    else if (e->out_mode == CLI_EXEC_STDOUT_DISCARD) outp[1] = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (e->out_mode != CLI_EXEC_STDOUT_INHERIT && outp[1] < 0) {
        close(in[0]), close(in[1]), close(errp[0]), close(errp[1]);
        hh_job_fail(job, "Errno::EMFILE", "stdout for the handler: %s", strerror(errno));
        return -1;
    }
    size_t cl;
    const char *klass = hh_job_handler_class(job, &cl);
    if (memchr(klass, '\0', cl)) {
        /* a catch-all handler: HIREDHAND_CLASS would end at the NUL and
         * name another class ("T\u0000Evil" is not T); Ruby's constantize
         * refuses such a name too */
        close(in[0]), close(in[1]), close(errp[0]), close(errp[1]);
        if (outp[0] >= 0) close(outp[0]);
        if (outp[1] >= 0) close(outp[1]);
        json_t *shown = json_stringn(klass, cl);
        char *q = shown ? json_dumps(shown, JSON_ENCODE_ANY) : NULL;
        hh_job_fail(job, "NameError",
                    "wrong constant name %s: a class holding a NUL byte cannot be passed to a program "
                    "(HIREDHAND_CLASS)",
                    q ? q : "?");
        free(q);
        json_decref(shown);
        return -1;
    }
    char *vars[4] = {0};
    char **env = job_env(job, vars);
    pid_t pid = -1;
    int rc = env ? cli_exec_spawn(e->argv, env, in[0], outp[1], errp[1], &pid) : ENOMEM;
    free(env);
    vars_free(vars);
    close(in[0]);
    close(errp[1]);
    if (outp[1] >= 0) close(outp[1]);
    if (rc != 0) {
        close(in[1]);
        close(errp[0]);
        if (outp[0] >= 0) close(outp[0]);
        hh_job_fail(job, cli_errno_class(rc), "cannot run %s: %s", e->argv[0], strerror(rc));
        return -1;
    }
    cli_log_budget budget = {.max = e->log_max};
    out_ctx errc = {.e = e, .job = job, .pid = (int)pid, .stream = "stderr", .budget = &budget};
    out_ctx outc = {.e = e, .job = job, .pid = (int)pid, .stream = "stdout", .budget = &budget};
    int out_open = outp[0] >= 0;
    if (out_open) fcntl(outp[0], F_SETFL, O_NONBLOCK);
    size_t plen;
    const char *payload = hh_job_payload(job, &plen);
    size_t off = 0;
    fcntl(in[1], F_SETFL, O_NONBLOCK);
    char tail[STDERR_TAIL + 1];
    size_t tlen = 0;
    int in_open = 1, err_open = 1, killed = 0;
    double start = cli_mono(), kill_at = 0;
    const char *why_killed = NULL;
    double killed_after = 0;
    /* The job ends when the handler exits, not when its stderr closes: a
     * handler may leave a background process holding it. */
    fcntl(errp[0], F_SETFL, O_NONBLOCK);
    int status = 0, exited = 0;
    /* A pidfd turns "the handler exited" into a poll event (Linux 5.3+);
     * without one the loop checks every 20 ms. */
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    while (!exited) {
        if (in_open && off == plen) {
            close(in[1]);
            in_open = 0;
        }
        struct pollfd pf[4];
        int n = 0, ie = -1, ii = -1, io = -1;
        if (err_open) ie = n, pf[n].fd = errp[0], pf[n].events = POLLIN, n++;
        if (out_open) io = n, pf[n].fd = outp[0], pf[n].events = POLLIN, n++;
        if (in_open) ii = n, pf[n].fd = in[1], pf[n].events = POLLOUT, n++;
        if (pidfd >= 0) pf[n].fd = pidfd, pf[n].events = POLLIN, n++;
        int r = poll(pf, (nfds_t)n, pidfd >= 0 ? 100 : 20);
        if (r < 0 && errno != EINTR) break;
        if (r > 0 && ie >= 0 && (pf[ie].revents & (POLLIN | POLLHUP | POLLERR))) {
            char buf[4096];
            ssize_t got = read(errp[0], buf, sizeof(buf));
            if (got > 0) err_data(&errc, tail, &tlen, buf, (size_t)got);
            else if (got == 0 || (errno != EINTR && errno != EAGAIN)) err_open = 0;
        }
        if (r > 0 && io >= 0 && (pf[io].revents & (POLLIN | POLLHUP | POLLERR))) out_open = read_out(&outc, outp[0]);
        if (r > 0 && ii >= 0 && (pf[ii].revents & (POLLOUT | POLLERR | POLLHUP))) {
            ssize_t w = write(in[1], payload + off, plen - off);
            if (w > 0) off += (size_t)w;
            else if (w < 0 && errno != EAGAIN && errno != EINTR) { /* the child closed stdin */ close(in[1]);
                in_open = 0;
            }
        }
        if (waitpid(pid, &status, WNOHANG) == pid) {
            exited = 1;
            char buf[4096]; /* what it wrote last, without waiting for more */
            ssize_t got;
            if (killed) {
                /* killed for a timeout or a stop: make sure nothing of it
                 * outlives the failure (its group holds stderr until gone) */
                kill(-pid, SIGKILL);
                double until = cli_mono() + 2;
                struct pollfd ef = {errp[0], POLLIN, 0};
                while (err_open && cli_mono() < until && poll(&ef, 1, 50) >= 0) {
                    got = read(errp[0], buf, sizeof(buf));
                    if (got > 0) err_data(&errc, tail, &tlen, buf, (size_t)got);
                    else if (got == 0 || (errno != EAGAIN && errno != EINTR)) err_open = 0;
                }
            }
            while (err_open && (got = read(errp[0], buf, sizeof(buf))) > 0)
                err_data(&errc, tail, &tlen, buf, (size_t)got);
            if (out_open) read_out(&outc, outp[0]);
            break;
        }
        int over = e->timeout > 0 && cli_mono() - start > e->timeout;
        if ((over || hh_job_cancelled(job)) && !killed) {
            why_killed = over ? "timed out" : "cancelled by shutdown";
            killed_after = cli_mono() - start; /* the message says this, not the TERM grace on top */
            kill(-pid, SIGTERM);
            killed = 1;
            kill_at = cli_mono() + 2;
        } else if (killed == 1 && cli_mono() > kill_at) {
            kill(-pid, SIGKILL);
            killed = 2;
        }
    }
    if (in_open) close(in[1]);
    if (pidfd >= 0) close(pidfd);
    close(errp[0]);
    if (outp[0] >= 0) close(outp[0]);
    cli_lines_end(&errc.lines, out_line, &errc);
    cli_lines_end(&outc.lines, out_line, &outc);
    cli_log_budget_end(&budget, e->m, job, e->klass, (int)pid);
    while (!exited && waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    char what[128];
    if (why_killed) {
        snprintf(what, sizeof(what), "%s %s after %.1f s%s", e->argv[0], why_killed, killed_after,
                 killed == 2 ? " (it ignored SIGTERM: killed 2 s later)" : "");
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
