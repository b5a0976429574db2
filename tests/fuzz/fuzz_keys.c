/* fuzz_keys.c -- namespaces, identities and queue names: whatever
 * hh_manager_new accepts (the validation the worker applies to --namespace,
 * --identity and -q) builds keys that split back exactly
 * (hh__key_inprogress / hh__key_inprogress_parse in keys.c), carry the
 * namespace once, and never name one of Sidekiq's own keys.
 * Input: namespace NUL identity NUL queue. */
#include "fuzz.h"
#include "hiredhand.h"
#include "keys.h"

static void quiet(hh_log_level level, const char *msg, void *udata) {
    (void)level, (void)msg, (void)udata;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *f[3];
    fuzz_fields(data, size, f, 3);
    const char *ns = f[0], *identity = f[1], *queue = f[2];

    hh_manager_options o;
    hh_manager_options_init(&o);
    hh_queue_weight q = {queue, 0};
    o.queues = &q;
    o.nqueues = 1;
    o.concurrency = 1;
    o.identity = identity;
    o.redis.url = "redis://127.0.0.1:1/0";
    o.redis.ns = *ns ? ns : NULL;
    o.log = quiet;
    int err = 0;
    hh_manager *m = hh_manager_new(&o, &err);
    int accepted = m != NULL;
    hh_manager_free(m);

    /* The documented contract of the key functions: no '|' in identity.
     * (An empty identity makes the manager choose one: nothing to check.) */
    if (*identity && *queue && (accepted || !strchr(identity, '|'))) {
        hh__keys k;
        if (hh__keys_init(&k, *ns ? ns : NULL) == 0) {
            sds key = hh__key_inprogress(&k, identity, queue);
            FUZZ_ASSERT(key != NULL, "out of memory");
            sds id2 = NULL, q2 = NULL;
            FUZZ_ASSERT(hh__key_inprogress_parse(&k, key, &id2, &q2) == 0, "in-progress key %s does not parse", key);
            FUZZ_ASSERT(!strcmp(id2, identity) && !strcmp(q2, queue), "in-progress key %s splits differently", key);
            const char *bare = hh__key_strip(&k, key);
            FUZZ_ASSERT(bare != NULL, "the key carries its namespace");
            sdsfree(id2);
            sdsfree(q2);
            sdsfree(key);
            sds qk = hh__key_queue(&k, queue);
            FUZZ_ASSERT(qk && hh__key_inprogress_parse(&k, qk, &id2, &q2) != 0, "a queue key is no in-progress key");
            sdsfree(qk);
            hh__keys_free(&k);
        }
    }
    fuzz_fields_free(f, 3);
    return 0;
}
