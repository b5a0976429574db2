/* top.c -- `hiredhand top`: a live, refreshing view of a fleet (rates,
 * queues, processes) for people who would rather look than read.
 *
 * Everything comes through the public API: hh_client_stats() (the
 * counters stat:processed and stat:failed, the sets' sizes, the queues
 * with their latency) and hh_client_processes() (the heartbeat hashes).
 * The counters move only when a process beats (each flushes its counts
 * with its heartbeat, as Sidekiq's processes do), so the rates are measured
 * between beats, not between reads (see rates below). Nothing is written
 * to Redis except what ProcessSet pruning does.
 *
 * At a terminal it draws with plain ANSI escapes on the alternate screen,
 * redraws on a timer and on SIGWINCH, and reads keys in raw mode (termios)
 * so that `q` quits at once; the terminal is restored on every way out
 * (q, Ctrl-C, SIGTERM/SIGHUP, --count reached, a fatal error, exit()).
 * Elsewhere it prints plain text frames, or JSON with --json.
 *
 * Names read from Redis (queues, identities, tags) are shown escaped:
 * a queue named with an escape sequence must not drive the terminal. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include "cli.h"

#define EXIT_REDIS CLI_EXIT_REDIS

enum { T_JSON = 1000, T_INTERVAL, T_COUNT, T_HELP };

/* clang-format off */ /* the help text keeps its layout */
static const char top_usage[] =
    "usage: hiredhand top [--interval S] [--count N] [--json] [-r URL]\n"
    "                     [--redis-password-file FILE] [--namespace NS]\n"
    "A live view of processed/s, failed/s, queues (size, latency) and processes\n"
    "(identity, tag, state, busy threads, heartbeat age). At a terminal it refreshes\n"
    "every S seconds (default 2) until `q` or Ctrl-C, or N frames; otherwise it prints\n"
    "N plain text frames (default 1), or N JSON snapshots, one a line, with --json.\n"
    "Rates are measured between heartbeats (the counters move only then), over at least\n"
    "10 s or S when longer: right at any S. The first comes with the next heartbeat; until\n"
    "then a terminal shows '-', and plain text and JSON wait for it (at most 15 s).\n";
/* clang-format on */

/* ------------------------------------------------------------ escaping */

/* Appends s to b (at most cap-1 bytes, NUL-terminated) with every control
 * character escaped as the logs do: \n, \r, \t, \xNN; also the C1 controls
 * (U+0080..U+009F, which some terminals obey) and bytes that are not
 * UTF-8, as \xNN. Returns the number of display columns written
 * (one per code point). */
static size_t escape(char *b, size_t cap, const char *s) {
    size_t o = 0, cols = 0;
    const unsigned char *p = (const unsigned char *)(s ? s : "");
#define PUT(str)                                     \
    do {                                             \
        size_t l_ = strlen(str);                     \
        if (o + l_ >= cap) goto done;                \
        memcpy(b + o, str, l_), o += l_, cols += l_; \
    } while (0)
    while (*p) {
        char tmp[8];
        unsigned c = *p;
        if (c == '\n') {
            PUT("\\n");
            p++;
        } else if (c == '\r') {
            PUT("\\r");
            p++;
        } else if (c == '\t') {
            PUT("\\t");
            p++;
        } else if (c < 0x20 || c == 0x7f) {
            snprintf(tmp, sizeof(tmp), "\\x%02x", c);
            {
                PUT(tmp);
                p++;
            }
        } else if (c < 0x80) {
            if (o + 1 >= cap) goto done;
            b[o++] = (char)c, cols++, p++;
        } else {
            size_t n = c >= 0xf0 && c < 0xf5 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
            size_t k = 1;
            while (n && k < n && (p[k] & 0xc0) == 0x80) k++;
            unsigned cp = n == 2 ? ((c & 0x1fu) << 6) | (p[1] & 0x3fu) : 0;
            if (n == 0 || k < n || (n == 2 && cp < 0xa0)) { /* invalid, or a C1 control */
                snprintf(tmp, sizeof(tmp), "\\x%02x", c);
                {
                    PUT(tmp);
                    p++;
                }
                continue;
            }
            if (o + n >= cap) goto done;
            memcpy(b + o, p, n), o += n, cols++, p += n;
        }
    }
done:
#undef PUT
    b[o] = '\0';
    return cols;
}

/* ------------------------------------------------------------ a frame */

/* The lines of one frame, built before anything is written so a frame is
 * sent in one write and cut to the terminal's size. */
typedef struct frame {
    char **lines;
    size_t n, cap;
} frame;

static void frame_add(frame *f, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void frame_add(frame *f, const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (f->n == f->cap) {
        size_t nc = f->cap ? f->cap * 2 : 64;
        char **nl = realloc(f->lines, nc * sizeof(*nl));
        if (!nl) return;
        f->lines = nl, f->cap = nc;
    }
    char *d = strdup(buf);
    if (d) f->lines[f->n++] = d;
}

static void frame_clear(frame *f) {
    for (size_t i = 0; i < f->n; i++) free(f->lines[i]);
    free(f->lines);
    memset(f, 0, sizeof(*f));
}

/* --------------------------------------------------------- a snapshot */

typedef struct sample {
    json_t *stats;                      /* hh_client_stats(), parsed */
    json_t *procs;                      /* hh_client_processes(), parsed */
    double mono, wall;                  /* when it was read */
    double processed_rate, failed_rate; /* per second, -1 until known */
    double span;                        /* seconds the rates are measured over */
} sample;

/* The rates. stat:processed and stat:failed grow only when a process
 * beats: it adds what it ran since its last beat in the same pipeline as
 * the beat. Two reads closer together than the heartbeat see either no
 * change or a whole beat's worth, so their difference over the time
 * between them gives zeros and spikes (0, 0, 37.9, 0 for a steady 12.6/s).
 * The counters are therefore keyed by when they changed: a read whose
 * newest beat (of all processes) is later than the last point's adds a
 * point (that beat's time, the counters), and a rate is the growth from
 * an older point to the newest over the time between their beats: the
 * work of whole heartbeat periods over their length, right at any
 * --interval. The older point is the newest one at least `window` before
 * (10 s, or the interval when longer), which smooths the steps of several
 * processes beating at different times, as Sidekiq's dashboard smooths
 * its own polls. With no process beating, a read is a point at its own
 * time (the counters do not move, or a client moves them at once). */
#define RATE_WINDOW 10.0
#define RATE_WAIT 15.0 /* seconds: above Sidekiq's and hiredhand's heartbeat intervals */
#define RATE_POINTS 256
typedef struct rate_point {
    double t; /* epoch seconds: a beat, or a read with no process */
    long long processed, failed;
} rate_point;
typedef struct rates {
    rate_point pts[RATE_POINTS];
    size_t n;
    double window;
} rates;

/* The newest beat among the processes, 0 when none beats. */
static double newest_beat(json_t *procs) {
    double t = 0;
    size_t i;
    json_t *p;
    json_array_foreach(procs, i, p) {
        double b = json_number_value(json_object_get(p, "beat"));
        if (b > t) t = b;
    }
    return t;
}

static void rates_add(rates *r, double t, long long processed, long long failed) {
    if (r->n && (processed < r->pts[r->n - 1].processed || failed < r->pts[r->n - 1].failed))
        r->n = 0;                                /* stats cleared: the past says nothing about now */
    if (r->n && t <= r->pts[r->n - 1].t) return; /* no beat since the last point */
    if (r->n == RATE_POINTS) memmove(r->pts, r->pts + 1, --r->n * sizeof(r->pts[0]));
    r->pts[r->n++] = (rate_point){t, processed, failed};
}

/* The rates into s (-1 with fewer than two points); drops the points
 * older than the one measured from, which later rates no longer need. */
static void rates_get(rates *r, sample *s) {
    s->processed_rate = s->failed_rate = -1;
    s->span = 0;
    if (r->n < 2) return;
    const rate_point *last = &r->pts[r->n - 1];
    size_t from = 0;
    for (size_t i = r->n - 1; i-- > 0;)
        if (last->t - r->pts[i].t >= r->window - 0.5) { /* 0.5: a beat's jitter */
            from = i;
            break;
        }
    double dt = last->t - r->pts[from].t;
    if (dt <= 0) return;
    s->processed_rate = (double)(last->processed - r->pts[from].processed) / dt;
    s->failed_rate = (double)(last->failed - r->pts[from].failed) / dt;
    s->span = dt;
    if (from) memmove(r->pts, r->pts + from, (r->n -= from) * sizeof(r->pts[0]));
}

static double now_wall(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long long jint(json_t *o, const char *k) { return (long long)json_integer_value(json_object_get(o, k)); }
static double jnum(json_t *o, const char *k) { return json_number_value(json_object_get(o, k)); }
/* A figure as text, or "?" when stats could not read it (null: a key of
 * another type, which `stats` names) rather than a 0 that hides it. */
static const char *jfig(char *buf, size_t n, json_t *o, const char *k) {
    json_t *v = json_object_get(o, k);
    if (!json_is_integer(v)) return "?";
    snprintf(buf, n, "%lld", (long long)json_integer_value(v));
    return buf;
}
static const char *jstr(json_t *o, const char *k) {
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

/* Reads a sample and its rates (r's points). Returns HH_OK or the API's
 * error, with why in err. */
static int read_sample(hh_client *cl, rates *r, sample *s, char *err, size_t errlen) {
    char *st = NULL, *pr = NULL;
    memset(s, 0, sizeof(*s));
    s->processed_rate = s->failed_rate = -1;
    int e = hh_client_stats(cl, &st);
    if (e == HH_OK) e = hh_client_processes(cl, &pr);
    if (e != HH_OK) {
        const char *why = hh_client_last_error(cl);
        snprintf(err, errlen, "%s%s%s", hh_strerror(e), *why ? ": " : "", why);
        free(st), free(pr);
        return e;
    }
    s->mono = cli_mono();
    s->wall = now_wall();
    s->stats = json_loads(st, 0, NULL);
    s->procs = json_loads(pr, 0, NULL);
    free(st), free(pr);
    if (!json_is_object(s->stats) || !json_is_array(s->procs)) {
        json_decref(s->stats), json_decref(s->procs);
        s->stats = s->procs = NULL;
        snprintf(err, errlen, "unreadable reply from the library");
        return HH_ERR_NOMEM;
    }
    double beat = newest_beat(s->procs);
    rates_add(r, beat > 0 ? beat : s->wall, jint(s->stats, "processed"), jint(s->stats, "failed"));
    rates_get(r, s);
    return HH_OK;
}

static void sample_free(sample *s) {
    json_decref(s->stats), json_decref(s->procs);
    s->stats = s->procs = NULL;
}

static void human_latency(char *buf, size_t n, double s) {
    if (s <= 0) snprintf(buf, n, "0");
    else if (s < 1) snprintf(buf, n, "%.0f ms", s * 1000);
    else if (s < 120) snprintf(buf, n, "%.1f s", s);
    else if (s < 7200) snprintf(buf, n, "%.0f min", s / 60);
    else snprintf(buf, n, "%.1f h", s / 3600);
}

static void rate(char *buf, size_t n, double r) {
    if (r < 0) snprintf(buf, n, "-");
    else snprintf(buf, n, "%.1f/s", r);
}

/* cli_table's line sink: a line of the frame. */
static void frame_line(void *udata, const char *line) { frame_add(udata, "%s", line); }

static void render(frame *f, const sample *s, double interval, int tty, const char *error) {
    char t[32], pr[32], fr[32];
    time_t w = (time_t)s->wall;
    struct tm tm;
    if (!s->stats) w = time(NULL);
    gmtime_r(&w, &tm);
    strftime(t, sizeof(t), "%Y-%m-%d %H:%M:%S UTC", &tm);
    frame_add(f, "hiredhand top  %s  every %.1f s%s", t, interval, tty ? "  (q quits)" : "");
    if (error) frame_add(f, "Redis: %s (retrying)", error);
    if (!s->stats) return;
    json_t *st = s->stats;
    rate(pr, sizeof(pr), s->processed_rate);
    rate(fr, sizeof(fr), s->failed_rate);
    long long busy = 0, conc = 0;
    size_t i;
    json_t *p, *q;
    json_array_foreach(s->procs, i, p) busy += jint(p, "busy"), conc += jint(p, "concurrency");
    frame_add(f, "Processed %lld (%s)  Failed %lld (%s)  Busy %lld/%lld", jint(st, "processed"), pr, jint(st, "failed"),
              fr, busy, conc);
    char en[24], sc[24], re[24], de[24];
    frame_add(f, "Enqueued %s  Scheduled %s  Retries %s  Dead %s  Processes %zu", jfig(en, sizeof(en), st, "enqueued"),
              jfig(sc, sizeof(sc), st, "scheduled_size"), jfig(re, sizeof(re), st, "retry_size"),
              jfig(de, sizeof(de), st, "dead_size"), json_array_size(s->procs));
    frame_add(f, "%s", "");
    json_t *qs = json_object_get(st, "queues");
    /* columns sized to the frame's content, as the other commands' tables */
    cli_table *tb = cli_table_new("lrl", frame_line, f);
    const char *qh[] = {"QUEUE", "SIZE", "LATENCY"};
    cli_table_row(tb, qh);
    json_array_foreach(qs, i, q) {
        char name[512], lat[32], size[32];
        escape(name, sizeof(name), jstr(q, "name"));
        human_latency(lat, sizeof(lat), jnum(q, "latency"));
        const char *row[] = {name, jfig(size, sizeof(size), q, "size"), lat};
        cli_table_row(tb, row);
    }
    cli_table_end(tb);
    if (!json_array_size(qs)) frame_add(f, "(no queues)");
    frame_add(f, "%s", "");
    tb = cli_table_new("lllrlr", frame_line, f);
    const char *ph[] = {"PROCESS", "TAG", "STATE", "BUSY", "THREADS", "BEAT"};
    cli_table_row(tb, ph);
    json_array_foreach(s->procs, i, p) {
        char id[512], tag[256], bar[16], bz[48], beat[32];
        long long b = jint(p, "busy"), c = jint(p, "concurrency");
        escape(id, sizeof(id), jstr(p, "identity"));
        escape(tag, sizeof(tag), jstr(p, "tag"));
        snprintf(bz, sizeof(bz), "%lld/%lld", b, c);
        snprintf(beat, sizeof(beat), "%.1fs", jnum(p, "beat_age"));
        /* Busy threads as a bar of ten cells: how full the process is. */
        int cells = c > 0 ? (int)((b * 10 + c - 1) / c) : 0;
        if (cells > 10) cells = 10;
        bar[0] = '[';
        for (int k = 0; k < 10; k++) bar[k + 1] = k < cells ? '#' : '.';
        bar[11] = ']', bar[12] = '\0';
        /* One flag in the heartbeat says quiet or stopping, as Sidekiq's
         * Process#stopping? reads it: both fetch nothing new. */
        const char *row[] = {id, tag, json_is_true(json_object_get(p, "quiet")) ? "quiet" : "running", bz, bar, beat};
        cli_table_row(tb, row);
    }
    cli_table_end(tb);
    if (!json_array_size(s->procs)) frame_add(f, "(no live processes)");
}

/* One snapshot as JSON: the stats object with the rates and the processes
 * added. */
static int print_json(const sample *s, double window) {
    json_t *o = json_deep_copy(s->stats);
    if (!o) return -1;
    json_object_set_new(o, "time", json_real(s->wall));
    json_object_set_new(o, "window", json_real(window));
    json_object_set_new(o, "processed_per_s", s->processed_rate < 0 ? json_null() : json_real(s->processed_rate));
    json_object_set_new(o, "failed_per_s", s->failed_rate < 0 ? json_null() : json_real(s->failed_rate));
    json_object_set(o, "processes", s->procs);
    char *d = json_dumps(o, CLI_JSON_FLAGS);
    json_decref(o);
    if (!d) return -1;
    printf("%s\n", d);
    free(d);
    return fflush(stdout);
}

/* ------------------------------------------------------- the terminal */

static struct termios saved_tio;
static int tio_saved, screen_on;
static int sig_pipe[2] = {-1, -1};
static volatile sig_atomic_t got_quit, got_winch;

/* Safe from a signal handler and from atexit: write(2) and tcsetattr(3)
 * are async-signal-safe. */
static void term_restore(void) {
    if (screen_on) {
        static const char out[] = "\x1b[0m\x1b[?25h\x1b[?1049l";
        ssize_t r = write(STDOUT_FILENO, out, sizeof(out) - 1);
        (void)r;
        screen_on = 0;
    }
    if (tio_saved) {
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_tio);
        tio_saved = 0;
    }
}

static void on_signal(int sig) {
    int saved = errno;
    if (sig == SIGWINCH) got_winch = 1;
    else got_quit = 1;
    if (sig_pipe[1] >= 0) {
        ssize_t r = write(sig_pipe[1], "x", 1);
        (void)r;
    }
    errno = saved;
}

/* Raw keys (no echo, no line buffering, Ctrl-C read as a byte so it is
 * handled like q), then the alternate screen without a cursor. */
static int term_setup(int keys) {
    if (keys) {
        if (tcgetattr(STDIN_FILENO, &saved_tio) == 0) {
            struct termios raw = saved_tio;
            raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO | ISIG | IEXTEN);
            raw.c_iflag &= ~(tcflag_t)(IXON | ICRNL);
            raw.c_cc[VMIN] = 0, raw.c_cc[VTIME] = 0;
            tio_saved = 1;
            if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw) != 0) tio_saved = 0;
        }
    }
    atexit(term_restore);
    static const char out[] = "\x1b[?1049h\x1b[?25l\x1b[H\x1b[2J";
    screen_on = 1;
    return write(STDOUT_FILENO, out, sizeof(out) - 1) < 0 ? -1 : 0;
}

static void term_size(int *rows, int *cols) {
    struct winsize ws;
    *rows = 24, *cols = 80;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0)
        *rows = ws.ws_row, *cols = ws.ws_col;
}

/* Draws a frame from the top left, each line cut to the width (names are
 * escaped already: one byte or one UTF-8 sequence is one column), the
 * rest of the screen cleared; one write. */
static void term_draw(const frame *f) {
    int rows, cols;
    term_size(&rows, &cols);
    size_t cap = 64 + (size_t)rows * ((size_t)cols * 4 + 8), o = 0;
    char *b = malloc(cap);
    if (!b) return;
    o += (size_t)snprintf(b, cap, "\x1b[H");
    size_t shown = f->n;
    if (shown > (size_t)rows) shown = (size_t)rows - 1;
    for (size_t i = 0; i < shown; i++) {
        const unsigned char *s = (const unsigned char *)f->lines[i];
        int c = 0;
        while (*s && c < cols) {
            size_t n = *s >= 0xf0 ? 4 : *s >= 0xe0 ? 3 : *s >= 0xc0 ? 2 : 1;
            for (size_t k = 0; k < n && s[k]; k++) b[o++] = (char)s[k];
            s += n, c++;
        }
        o += (size_t)snprintf(b + o, cap - o, "\x1b[K\r\n");
    }
    if (shown < f->n)
        o += (size_t)snprintf(b + o, cap - o, "... %zu more lines: enlarge the terminal\x1b[K", f->n - shown);
    o += (size_t)snprintf(b + o, cap - o, "\x1b[J");
    for (size_t w = 0; w < o;) {
        ssize_t r = write(STDOUT_FILENO, b + w, o - w);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        w += (size_t)r;
    }
    free(b);
}

/* Waits up to secs for a key or a signal. Returns 1 to quit, 2 to redraw
 * (SIGWINCH), 0 when the time is up. */
static int term_wait(double secs, int keys) {
    double end = cli_mono() + secs;
    for (;;) {
        if (got_quit) return 1;
        if (got_winch) {
            got_winch = 0;
            return 2;
        }
        double left = end - cli_mono();
        if (left <= 0) return 0;
        fd_set rd;
        FD_ZERO(&rd);
        FD_SET(sig_pipe[0], &rd);
        int maxfd = sig_pipe[0];
        if (keys) {
            FD_SET(STDIN_FILENO, &rd);
            if (STDIN_FILENO > maxfd) maxfd = STDIN_FILENO;
        }
        struct timeval tv = {(time_t)left, (suseconds_t)((left - (double)(time_t)left) * 1e6)};
        int n = select(maxfd + 1, &rd, NULL, NULL, &tv);
        if (n < 0 && errno != EINTR) return 1;
        if (n <= 0) continue;
        if (FD_ISSET(sig_pipe[0], &rd)) {
            char drain[64];
            while (read(sig_pipe[0], drain, sizeof(drain)) > 0) {}
        }
        if (keys && FD_ISSET(STDIN_FILENO, &rd)) {
            char k[64];
            ssize_t r = read(STDIN_FILENO, k, sizeof(k));
            if (r == 0) return 1; /* the terminal went away */
            for (ssize_t i = 0; i < r; i++)
                if (k[i] == 'q' || k[i] == 'Q' || k[i] == 3 /* Ctrl-C */ || k[i] == 4 /* Ctrl-D */) return 1;
        }
    }
}

/* ------------------------------------------------------------ command */

int cli_top(int argc, char **argv) {
    static const struct option own[] = {{"json", no_argument, 0, T_JSON},
                                        {"interval", required_argument, 0, T_INTERVAL},
                                        {"count", required_argument, 0, T_COUNT},
                                        {"help", no_argument, 0, T_HELP},
                                        {0, 0, 0, 0}};
    hh_redis_options ro;
    hh_redis_options_init(&ro);
    int json = 0, ch;
    double interval = 2;
    long count = -1;
    optind = 1;
    const struct option *lo = cli_longopts(own);
    while ((ch = getopt_long(argc, argv, "r:n:", lo, NULL)) != -1) {
        int rc = cli_redis_option(ch, optarg, &ro);
        if (rc >= 0) {
            if (rc) return rc;
            continue;
        }
        switch (ch) {
        case T_JSON: json = 1; break;
        case T_INTERVAL:
            if (cli_option_seconds("--interval", optarg, 0.1, 0, 86400, &interval)) return CLI_EXIT_USAGE;
            break;
        case 'n':
        case T_COUNT:
            if (cli_option_int("--count", optarg, 1, 1000000000L, &count)) return CLI_EXIT_USAGE;
            break;
        case T_HELP: fputs(top_usage, stdout); return 0;
        default: fputs(top_usage, stderr); return CLI_EXIT_USAGE;
        }
    }
    if (optind < argc) return cli_usage_error("unexpected argument '%s'\n%s", argv[optind], top_usage);
    int tty = !json && isatty(STDOUT_FILENO);
    int keys = tty && isatty(STDIN_FILENO);
    if (count < 0) count = tty ? 0 : 1; /* 0: until q */

    int rc = 0;
    hh_client *cl = cli_client_open(&ro, EXIT_REDIS, &rc);
    if (!cl) return rc;

    if (pipe(sig_pipe) != 0) {
        hh_client_free(cl);
        fprintf(stderr, "hiredhand: top: pipe: %s\n", strerror(errno));
        return 1;
    }
    for (int i = 0; i < 2; i++) {
        fcntl(sig_pipe[i], F_SETFL, fcntl(sig_pipe[i], F_GETFL) | O_NONBLOCK);
        fcntl(sig_pipe[i], F_SETFD, FD_CLOEXEC);
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sigaction(SIGWINCH, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    char err[512] = "";
    sample prev = {0}, cur = {0};
    prev.processed_rate = prev.failed_rate = -1;
    static rates r; /* 6 KiB: not on the stack */
    r.n = 0;
    r.window = interval > RATE_WINDOW ? interval : RATE_WINDOW;
    /* Reads come every min(S, 1) s until the first rates (the next beat,
     * at most RATE_WAIT s): at a terminal frames show '-' meanwhile;
     * elsewhere the first frame waits for them, so a snapshot has them. */
    double first = interval < 1 ? interval : 1, started = cli_mono();
    if (tty && term_setup(keys) != 0) rc = 1;
    int e = read_sample(cl, &r, &prev, err, sizeof(err));
    if (e != HH_OK && !tty) {
        fprintf(stderr, "hiredhand: top: %s\n", err);
        rc = e == HH_ERR_INVALID ? CLI_EXIT_USAGE : EXIT_REDIS;
        goto out;
    }
    if (tty) { /* something on the screen at once, rates to follow */
        frame f = {0};
        render(&f, &prev, interval, 1, e != HH_OK ? err : NULL);
        term_draw(&f);
        frame_clear(&f);
    }
    double wait = first;
    for (long n = 0; !got_quit && rc == 0 && (count == 0 || n < count);) {
        int w = tty ? term_wait(wait, keys) : (term_wait(wait, 0));
        if (w == 1) break;
        if (w == 2) { /* resized: the same data, drawn again */
            frame f = {0};
            render(&f, prev.stats ? &prev : &cur, interval, 1, NULL);
            term_draw(&f);
            frame_clear(&f);
            continue;
        }
        e = read_sample(cl, &r, &cur, err, sizeof(err));
        wait = interval;
        if (e != HH_OK) {
            if (!tty) {
                fprintf(stderr, "hiredhand: top: %s\n", err);
                rc = EXIT_REDIS;
                break;
            }
            frame f = {0};
            render(&f, &prev, interval, 1, err); /* the last good data, and why it is old */
            term_draw(&f);
            frame_clear(&f);
            n++;
            continue;
        }
        if (cur.processed_rate < 0 && cli_mono() - started < RATE_WAIT) {
            wait = first;         /* no beat yet: read again soon, for the first rates */
            if (!tty && n == 0) { /* and print nothing without them */
                sample_free(&prev);
                prev = cur;
                memset(&cur, 0, sizeof(cur));
                continue;
            }
        }
        n++;
        if (json) {
            if (print_json(&cur, cur.span) != 0) rc = 1;
        } else {
            frame f = {0};
            render(&f, &cur, interval, tty, NULL);
            if (tty) {
                term_draw(&f);
            } else {
                if (n > 1) putchar('\n');
                for (size_t i = 0; i < f.n; i++) printf("%s\n", f.lines[i]);
                if (fflush(stdout) != 0) rc = 1;
            }
            frame_clear(&f);
        }
        sample_free(&prev);
        prev = cur;
        memset(&cur, 0, sizeof(cur));
    }
out:
    term_restore();
    sample_free(&prev);
    sample_free(&cur);
    hh_client_free(cl);
    close(sig_pipe[0]), close(sig_pipe[1]);
    sig_pipe[0] = sig_pipe[1] = -1;
    return rc;
}
