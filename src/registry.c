/* registry.c -- the handler registry of a manager: the handler of each
 * job class (hh_manager_register, one per class, refused twice with where
 * both came from), the default handler, the middleware chain
 * (hh_manager_use) and the heartbeat hook, all set before the start; the
 * worker threads read them through their env (processor.h) once started.
 * Touches no Redis key. */
#include "manager.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include "error.h"

/* Where a handler's code lives, for the error of a class registered twice:
 * two plug-ins, or one loaded twice, both calling hh_manager_register() for
 * it are told apart only by their files. "the program itself" for code in
 * the executable (the CLI's --exec and --serve handlers). */
static void handler_origin(hh_handler_fn fn, char *buf, size_t len) {
    Dl_info fi, main_fi;
    void *code = (void *)(uintptr_t)fn;
    const void *phdr = (const void *)(uintptr_t)getauxval(AT_PHDR);
    if (!dladdr(code, &fi) || !fi.dli_fname) {
        hh__strlcpy(buf, "unknown code", len);
        return;
    }
    if (phdr && dladdr(phdr, &main_fi) && main_fi.dli_fbase == fi.dli_fbase) {
        hh__strlcpy(buf, "the program itself", len);
        return;
    }
    hh__strlcpy(buf, *fi.dli_fname ? fi.dli_fname : "the program itself", len);
}

/* Remembers the first failed registration (hh__fail has set its reason)
 * for hh_manager_start. Returns e. */
static int register_failed(hh_manager *m, int e) {
    if (!m->register_error) {
        m->register_error = e;
        hh__strlcpy(m->register_why, hh_last_error(), sizeof(m->register_why));
    }
    return e;
}

int hh_manager_register(hh_manager *m, const char *klass, hh_handler_fn fn, void *udata) {
    if (!m) return hh__fail(HH_ERR_INVALID, "register: the manager is missing");
    if (!klass || !*klass || !fn)
        return register_failed(
            m, hh__fail(HH_ERR_INVALID, "register: %s is missing", !fn ? "the handler" : "the class name"));
    if (atomic_load(&m->started)) return hh__fail(HH_ERR_STATE, "register %s: the manager has started", klass);
    for (size_t i = 0; i < m->nhandlers; i++) {
        if (strcmp(m->handlers[i].klass, klass) != 0) continue;
        char had[512], now[512];
        handler_origin(m->handlers[i].fn, had, sizeof(had));
        handler_origin(fn, now, sizeof(now));
        if (strcmp(had, now) == 0)
            return register_failed(m,
                                   hh__fail(HH_ERR_EXISTS,
                                            "register %s: that class has a handler already, registered from %s "
                                            "too (the same plug-in loaded twice?)",
                                            klass, had));
        return register_failed(m,
                               hh__fail(HH_ERR_EXISTS,
                                        "register %s: that class has a handler already, registered from %s (this "
                                        "one is from %s)",
                                        klass, had, now));
    }
    hh__handler *h = realloc(m->handlers, (m->nhandlers + 1) * sizeof(*h));
    if (!h) return register_failed(m, hh__fail(HH_ERR_NOMEM, "register %s: out of memory", klass));
    m->handlers = h;
    if (!(h[m->nhandlers].klass = strdup(klass)))
        return register_failed(m, hh__fail(HH_ERR_NOMEM, "register %s: out of memory", klass));
    h[m->nhandlers].fn = fn;
    h[m->nhandlers].udata = udata;
    m->nhandlers++;
    return HH_OK;
}

int hh_manager_register_default(hh_manager *m, hh_handler_fn fn, void *udata) {
    if (!m || !fn)
        return hh__fail(HH_ERR_INVALID, "register_default: %s is missing", !m ? "the manager" : "the handler");
    if (atomic_load(&m->started)) return hh__fail(HH_ERR_STATE, "register_default: the manager has started");
    m->default_handler.fn = fn;
    m->default_handler.udata = udata;
    return HH_OK;
}

int hh_manager_has_handler(const hh_manager *m, const char *klass) {
    for (size_t i = 0; klass && i < m->nhandlers; i++)
        if (strcmp(m->handlers[i].klass, klass) == 0) return 1;
    return 0;
}

int hh_manager_use(hh_manager *m, hh_middleware_fn fn, void *udata) {
    if (!m || !fn) return hh__fail(HH_ERR_INVALID, "use: %s is missing", !m ? "the manager" : "the middleware");
    if (atomic_load(&m->started)) return hh__fail(HH_ERR_STATE, "use: the manager has started");
    hh__middleware *mw = realloc(m->middleware, (m->nmiddleware + 1) * sizeof(*mw));
    if (!mw) return hh__fail(HH_ERR_NOMEM, "use: out of memory");
    m->middleware = mw;
    mw[m->nmiddleware].fn = fn;
    mw[m->nmiddleware].udata = udata;
    m->nmiddleware++;
    return HH_OK;
}

int hh_manager_on_heartbeat(hh_manager *m, hh_heartbeat_hook_fn fn, void *udata) {
    if (!m) return hh__fail(HH_ERR_INVALID, "on_heartbeat: the manager is missing");
    if (atomic_load(&m->started)) return hh__fail(HH_ERR_STATE, "on_heartbeat: the manager has started");
    m->hook = fn;
    m->hook_udata = udata;
    return HH_OK;
}
