/* test_jobset.c -- the order and selection rules of src/jobset.c (the
 * sorted sets of job management), against a private redis-server:
 *   - list order: by score, equal scores by member bytes, the dead set the
 *     other way round (newest first);
 *   - find by jid gives that order whatever order ZSCAN met the entries in
 *     (a set past a listpack's size), and a single-jid action acts on the
 *     entry listed first;
 *   - --all with a limit acts on the first N entries list shows;
 *   - the class filter matches "class", Active Job's "wrapped" and
 *     "display_class", and "" matches an empty or missing class; the error
 *     filter searches error_class and error_message.
 * Argument checks, namespaces and the move-once rule are test_admin.c's. */
#include "unit_helpers.h"

#include "hiredhand.h"

UH_REDIS_GROUP()

static hh_client *client(void) {
    uh_flushall(&srv);
    hh_redis_options o;
    hh_redis_options_init(&o);
    o.url = srv.url;
    int err = 99;
    hh_client *c = hh_client_new(&o, &err);
    assert_non_null(c);
    return c;
}

static void add(const char *set, double score, const char *jid, const char *extra) {
    char buf[512];
    snprintf(buf, sizeof(buf), "{\"queue\":\"default\",\"class\":\"K\",\"args\":[],\"jid\":\"%s\"%s}", jid, extra);
    freeReplyObject(uh_cmd(&srv, "ZADD %s %f %s", set, score, buf));
}

/* The jids handed to the callback, "a,b,c". */
typedef struct seen {
    char jids[4096];
    double scores[64];
    char ns[65]; /* each entry's "n" digit, '-' without */
    int n;
} seen;

static int keep(const hh_jobset_entry *e, void *udata) {
    seen *s = udata;
    if (s->n < 64) {
        const char *d = memmem(e->payload, e->len, "\"n\":", 4);
        s->scores[s->n] = e->score;
        s->ns[s->n] = d ? d[4] : '-';
    }
    s->n++;
    size_t l = strlen(s->jids);
    snprintf(s->jids + l, sizeof(s->jids) - l, "%s%s", l ? "," : "", e->jid);
    return 0;
}

static const char *each(hh_client *c, hh_jobset set, const hh_jobset_filter *f) {
    static seen s;
    memset(&s, 0, sizeof(s));
    assert_int_equal(hh_jobset_each(c, set, f, keep, &s), HH_OK);
    return s.jids;
}

static void test_list_order(void **st) {
    (void)st;
    hh_client *c = client();
    add("retry", 30, "c", "");
    add("retry", 10, "a", "");
    add("retry", 20, "b2", ""); /* equal scores: by member bytes */
    add("retry", 20, "b1", "");
    assert_string_equal(each(c, HH_JOBSET_RETRY, NULL), "a,b1,b2,c");
    add("dead", 30, "c", "");
    add("dead", 10, "a", "");
    add("dead", 20, "b2", "");
    add("dead", 20, "b1", "");
    assert_string_equal(each(c, HH_JOBSET_DEAD, NULL), "c,b2,b1,a");
    hh_client_free(c);
}

/* 300 entries (past a listpack: ZSCAN walks a hash table in no order),
 * six of which share jid "dup" at scattered scores, two at one. */
static void fill_with_dups(const char *set) {
    for (int i = 0; i < 300; i++) {
        char jid[16];
        snprintf(jid, sizeof(jid), "j%03d", i);
        add(set, 1000 + i, jid, "");
    }
    /* two at one score (1180.5): by member bytes, "n":3 before "n":4 */
    const double s[] = {1250.5, 1010.5, 1290.5, 1100.5, 1180.5, 1180.5};
    const int n[] = {0, 1, 2, 6, 3, 4};
    for (int i = 0; i < 6; i++) {
        char extra[32];
        snprintf(extra, sizeof(extra), ",\"n\":%d", n[i]);
        add(set, s[i], "dup", extra);
    }
}

static void test_find_order_and_single_action(void **st) {
    (void)st;
    hh_client *c = client();
    fill_with_dups("retry");
    seen s;
    memset(&s, 0, sizeof(s));
    assert_int_equal(hh_jobset_find(c, HH_JOBSET_RETRY, "dup", keep, &s), HH_OK);
    assert_int_equal(s.n, 6);
    const double want[] = {1010.5, 1100.5, 1180.5, 1180.5, 1250.5, 1290.5};
    for (int i = 0; i < 6; i++) UH_ASSERT_DBL_IN(s.scores[i], want[i], want[i]);
    assert_memory_equal(s.ns, "163402", 6);
    /* delete acts on the lowest score: the one find and list show first */
    assert_int_equal(hh_jobset_act(c, HH_JOBSET_RETRY, "dup", HH_JOBSET_DELETE, NULL), HH_OK);
    assert_int_equal(uh_int(&srv, "ZCOUNT retry 1010.5 1010.5"), 0);
    assert_int_equal(uh_int(&srv, "ZCOUNT retry 1100.5 1100.5"), 1);

    /* the dead set lists newest first: find and the action follow */
    uh_flushall(&srv);
    fill_with_dups("dead");
    memset(&s, 0, sizeof(s));
    assert_int_equal(hh_jobset_find(c, HH_JOBSET_DEAD, "dup", keep, &s), HH_OK);
    for (int i = 0; i < 6; i++) UH_ASSERT_DBL_IN(s.scores[i], want[5 - i], want[5 - i]);
    assert_memory_equal(s.ns, "204361", 6);
    assert_int_equal(hh_jobset_act(c, HH_JOBSET_DEAD, "dup", HH_JOBSET_DELETE, NULL), HH_OK);
    assert_int_equal(uh_int(&srv, "ZCOUNT dead 1290.5 1290.5"), 0);
    assert_int_equal(uh_int(&srv, "ZCOUNT dead 1250.5 1250.5"), 1);
    memset(&s, 0, sizeof(s));
    assert_int_equal(hh_jobset_find(c, HH_JOBSET_DEAD, "nosuch", keep, &s), HH_ERR_NOTFOUND);
    hh_client_free(c);
}

/* --all --limit N: the first N list shows (with the same filter). */
static void test_act_all_limit_follows_list(void **st) {
    (void)st;
    hh_client *c = client();
    for (int i = 0; i < 10; i++) {
        char jid[8];
        snprintf(jid, sizeof(jid), "d%d", i);
        add("dead", 100 + i, jid, i % 2 ? ",\"error_class\":\"Odd\"" : ",\"error_class\":\"Even\"");
    }
    hh_jobset_filter f = {0};
    f.error = "Odd";
    f.limit = 2;
    assert_string_equal(each(c, HH_JOBSET_DEAD, &f), "d9,d7");
    size_t done = 0, skipped = 9;
    assert_int_equal(hh_jobset_act_all(c, HH_JOBSET_DEAD, &f, HH_JOBSET_DELETE, NULL, &done, &skipped), HH_OK);
    assert_int_equal(done, 2);
    assert_int_equal(skipped, 0);
    f.limit = 0;
    assert_string_equal(each(c, HH_JOBSET_DEAD, &f), "d5,d3,d1");
    /* retry set: the next to run first */
    uh_flushall(&srv);
    for (int i = 0; i < 5; i++) {
        char jid[8];
        snprintf(jid, sizeof(jid), "r%d", i);
        add("retry", 200 - i, jid, "");
    }
    hh_jobset_filter g = {0};
    g.limit = 2;
    assert_int_equal(hh_jobset_act_all(c, HH_JOBSET_RETRY, &g, HH_JOBSET_ENQUEUE, NULL, &done, NULL), HH_OK);
    assert_int_equal(done, 2);
    assert_string_equal(each(c, HH_JOBSET_RETRY, NULL), "r2,r1,r0");
    hh_client_free(c);
}

static void test_filters(void **st) {
    (void)st;
    hh_client *c = client();
    freeReplyObject(
        uh_cmd(&srv, "ZADD retry 1 %s", "{\"queue\":\"q1\",\"class\":\"Plain\",\"args\":[],\"jid\":\"p\"}"));
    freeReplyObject(uh_cmd(&srv, "ZADD retry 2 %s",
                           "{\"queue\":\"q2\",\"class\":\"ActiveJob::QueueAdapters::SidekiqAdapter::JobWrapper\","
                           "\"wrapped\":\"Mailer\",\"args\":[],\"jid\":\"w\"}"));
    freeReplyObject(uh_cmd(&srv, "ZADD retry 3 %s",
                           "{\"queue\":\"q1\",\"class\":\"X\",\"display_class\":\"Shown\",\"args\":[],\"jid\":\"d\","
                           "\"error_class\":\"Net::Timeout\",\"error_message\":\"after 5 s\"}"));
    freeReplyObject(uh_cmd(&srv, "ZADD retry 4 %s", "{\"queue\":\"q2\",\"args\":[],\"jid\":\"none\"}"));
    freeReplyObject(uh_cmd(&srv, "ZADD retry 5 %s", "{\"queue\":\"q2\",\"class\":\"\",\"args\":[],\"jid\":\"empty\"}"));
    hh_jobset_filter f = {0};
    f.klass = "Mailer";
    assert_string_equal(each(c, HH_JOBSET_RETRY, &f), "w");
    f.klass = "ActiveJob::QueueAdapters::SidekiqAdapter::JobWrapper";
    assert_string_equal(each(c, HH_JOBSET_RETRY, &f), "w");
    f.klass = "Shown";
    assert_string_equal(each(c, HH_JOBSET_RETRY, &f), "d");
    f.klass = "Plai"; /* equal, not a prefix */
    assert_string_equal(each(c, HH_JOBSET_RETRY, &f), "");
    f.klass = "";
    assert_string_equal(each(c, HH_JOBSET_RETRY, &f), "none,empty");
    f.klass = NULL;
    f.queue = "q1";
    assert_string_equal(each(c, HH_JOBSET_RETRY, &f), "p,d");
    f.queue = NULL;
    f.error = "Timeout";
    assert_string_equal(each(c, HH_JOBSET_RETRY, &f), "d");
    f.error = "5 s";
    assert_string_equal(each(c, HH_JOBSET_RETRY, &f), "d");
    f.error = "";
    seen s;
    assert_int_equal(hh_jobset_each(c, HH_JOBSET_RETRY, &f, keep, &s), HH_ERR_INVALID);
    hh_client_free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_list_order),
        cmocka_unit_test(test_find_order_and_single_action),
        cmocka_unit_test(test_act_all_limit_follows_list),
        cmocka_unit_test(test_filters),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
