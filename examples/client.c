/* client.c -- pushes jobs with the C client, like Sidekiq::Client.push:
 * one HardWorker job, then three more in one round trip, as push_bulk.
 * Only HardWorker, the class examples/worker.c handles: a job of a class
 * no worker handles fails with Sidekiq's NameError and waits in the
 * retry set. On failure it prints hh_last_error(), the library's reason
 * ("cannot connect to redis ...: Connection refused"), not only the code.
 * usage: example_client [REDIS_URL]   (default $REDIS_URL) */
#include <stdio.h>
#include "hiredhand.h"

int main(int argc, char **argv) {
    hh_redis_options ro;
    hh_redis_options_init(&ro);
    ro.url = argc > 1 ? argv[1] : NULL;
    int err;
    hh_client *c = hh_client_new(&ro, &err);
    if (!c) {
        fprintf(stderr, "example_client: %s\n", hh_last_error());
        return 1;
    }
    char jid[HH_JID_SIZE];
    hh_push_options po;
    hh_push_options_init(&po);
    if (hh_client_push(c, "HardWorker", "[\"bob\", 5]", &po, jid) != HH_OK) goto fail;
    printf("pushed HardWorker %s\n", jid);
    const char *bulk[3] = {"[\"ann\", 1]", "[\"cy\", 2]", "[\"di\", 3]"};
    char jids[3][HH_JID_SIZE];
    if (hh_client_push_bulk(c, "HardWorker", bulk, 3, &po, jids) != HH_OK) goto fail;
    printf("pushed 3 HardWorker %s %s %s\n", jids[0], jids[1], jids[2]);
    hh_client_free(c);
    return 0;
fail:
    /* read right after the failing call, on this thread: the next failing
     * call replaces it */
    fprintf(stderr, "example_client: push: %s\n", hh_last_error());
    hh_client_free(c);
    return 1;
}
