"""The C text of the session's native search on several threads (``proofs/native.py``).

``proofs/native.py``'s ``Generated`` puts :data:`RECORDS` after ``proofs/native_search.py``'s
runtime (it uses its table and transitions: ``find_keyed``, ``add_keyed``, ``count_edge``,
``edge_to``; the generated moves call its ``rec`` when they are given a record), and
:data:`DRIVER` after the generated moves (it calls ``expand`` with a record, and ``settled_``)
and before the runtime's API.

``nb_run_par`` takes a level's states in batches (at most the caller's budget, never across
levels, so a batch reads only states numbered before it) and splits each among the threads.
Each thread expands its part (``expand_range``) into its records, reading the search's states
and table and writing nothing of it: per successor its move, its step events and its state's
index where the table has it; a successor it does not find there is kept whole, once per
thread (a table of the thread's own).  The calling thread then hands the records over in the
order of the states and of their moves, as ``nb_run`` would have taken the transitions, and
adds what is new; so states are numbered, and counts, first events, deadlocks and the graph
are, exactly as on one thread (``tests/test_native_threads.py``).  A model error met on a
thread is the first one in that order, as on one thread.
"""

RECORDS = r"""
#include <pthread.h>

/* One worker of nb_run_par: the states [from, to) of a level expanded (expand, given the
   record) into records, in order: per state whether it is settled and its number of
   successors; per successor its move, its step events and where it leads, looked up in the
   table as it was before the batch (read only while the workers run): the index of a state
   found there, or (-1 - j) for the j-th distinct successor of this worker not found there,
   kept whole (state, key, hash; a table of the worker's own finds them again) for the
   hand-over, which adds it once and keeps its index (mres). */
typedef struct Rec {
    const Run *run;
    long from, to;
    long n, cap;          /* successors recorded, room for */
    int32_t *dst; int32_t *bad; int16_t *mv; unsigned char *stut;
    long nm, mcap;        /* distinct successors not found, room for */
    sc *msucc; unsigned char *mkeys; uint64_t *mhash; long *mres;
    uint32_t *mtab; long mtcap;  /* their open-addressing table (j + 1; 0 empty) */
    int32_t *nsucc; unsigned char *settled; long scap;  /* per state expanded */
    int error;
} Rec;

#if SYM
#define MKEY(B, j) ((B)->mkeys + (long)(j) * KW)
#else
#define MKEY(B, j) ((const unsigned char *)((B)->msucc + (long)(j) * W))
#endif

static int rec_grow(Rec *B) {
    long nc = B->cap ? B->cap * 2 : 4096;
    int32_t *d = realloc(B->dst, (size_t)nc * sizeof(int32_t)); if (!d) return -1; B->dst = d;
    int32_t *b = realloc(B->bad, (size_t)nc * sizeof(int32_t)); if (!b) return -1; B->bad = b;
    int16_t *m = realloc(B->mv, (size_t)nc * sizeof(int16_t)); if (!m) return -1; B->mv = m;
    unsigned char *u = realloc(B->stut, (size_t)nc); if (!u) return -1; B->stut = u;
    B->cap = nc;
    return 0;
}

static int miss_grow(Rec *B) {
    long nc = B->mcap ? B->mcap * 2 : 1024;
    sc *a = realloc(B->msucc, (size_t)nc * W); if (!a) return -1; B->msucc = a;
    uint64_t *h = realloc(B->mhash, (size_t)nc * sizeof(uint64_t)); if (!h) return -1; B->mhash = h;
    long *r = realloc(B->mres, (size_t)nc * sizeof(long)); if (!r) return -1; B->mres = r;
#if SYM
    unsigned char *k = realloc(B->mkeys, (size_t)nc * KW); if (!k) return -1; B->mkeys = k;
#endif
    B->mcap = nc;
    /* the table: at most half full */
    long tc = B->mtcap ? B->mtcap : 2048;
    while (tc < nc * 2) tc *= 2;
    if (tc != B->mtcap) {
        uint32_t *t = calloc((size_t)tc, sizeof(uint32_t)); if (!t) return -1;
        for (long j = 0; j < B->nm; j++) {
            uint64_t x = B->mhash[j] & (uint64_t)(tc - 1);
            while (t[x]) x = (x + 1) & (uint64_t)(tc - 1);
            t[x] = (uint32_t)(j + 1);
        }
        free(B->mtab); B->mtab = t; B->mtcap = tc;
    }
    return 0;
}

static void rec(Rec *B, const sc *s, const sc *t, long si, int m, int bad) {
    (void)si;
    if (B->n == B->cap && rec_grow(B)) { B->error = -2; return; }
    long k = B->n++;
    B->mv[k] = (int16_t)m; B->bad[k] = bad; B->stut[k] = 0; B->dst[k] = 0;
#if GRAPH
    if (memcmp(s, t, W) == 0) { B->stut[k] = 1; return; }
#else
    (void)s;
#endif
#if SYM
    unsigned char key[KW];
    make_key(t, key);
#else
    const unsigned char *key = (const unsigned char *)t;
#endif
    uint64_t h = hash_key(key);
    long v = find_keyed(B->run, key, h);
    if (v >= 0) { B->dst[k] = (int32_t)v; return; }
    if (B->nm == B->mcap && miss_grow(B)) { B->error = -2; return; }
    uint64_t x = h & (uint64_t)(B->mtcap - 1);
    for (;;) {
        uint32_t e = B->mtab[x];
        if (!e) break;
        if (B->mhash[e - 1] == h && memcmp(MKEY(B, e - 1), key, KW) == 0) {
            B->dst[k] = (int32_t)(-(long)e);
            return;
        }
        x = (x + 1) & (uint64_t)(B->mtcap - 1);
    }
    long j = B->nm++;
    memcpy(B->msucc + j * W, t, W);
#if SYM
    memcpy(B->mkeys + j * KW, key, KW);
#endif
    B->mhash[j] = h; B->mres[j] = -1;
    B->mtab[x] = (uint32_t)(j + 1);
    B->dst[k] = (int32_t)(-1 - j);
}

/* successor k of B (from state si) taken as edge() takes a transition */
static void replay_edge(Run *R, Rec *B, long k, long si) {
    int m = B->mv[k];
    count_edge(R, si, m, B->bad[k]);
#if GRAPH
    if (B->stut[k]) { R->gstutter[si] = m; return; }
#endif
    int isnew = 0;
    long v = B->dst[k];
    if (v < 0) {
        long j = -1 - v;
        v = B->mres[j];
        if (v < 0)
            v = B->mres[j] = add_keyed(R, B->msucc + j * W, MKEY(B, j), B->mhash[j], si, m, &isnew);
    }
    edge_to(R, v, isnew, si, m);
}
"""

DRIVER = r"""
#define MAX_THREADS 16

static void *expand_range(void *arg) {
    Rec *B = arg;
    sc t[W];
    B->n = 0; B->nm = 0; B->error = 0;
    if (B->mtab) memset(B->mtab, 0, (size_t)B->mtcap * sizeof(uint32_t));
    long len = B->to - B->from;
    if (len > B->scap) {
        int32_t *a = realloc(B->nsucc, (size_t)len * sizeof(int32_t));
        if (!a) { B->error = -2; return 0; }
        B->nsucc = a;
        unsigned char *b = realloc(B->settled, (size_t)len);
        if (!b) { B->error = -2; return 0; }
        B->settled = b; B->scap = len;
    }
    for (long si = B->from; si < B->to; si++) {
        const sc *s = B->run->states + si * W;
        B->settled[si - B->from] = (unsigned char)(settled_(s) ? 1 : 0);
        int n = expand(0, B, s, t, si);
        if (n < 0 || B->error) { if (!B->error) B->error = -2; return 0; }
        B->nsucc[si - B->from] = n;
    }
    return 0;
}

/* nb_run on `threads` threads: each batch (at most `budget` states, within one level) is split
   among the threads, which expand their parts at once (expand_range); the records are then
   taken in order on this thread as nb_run takes its transitions, so states are numbered, and
   counts, first events and the graph are, exactly as nb_run's.  A batch under `min_batch`
   states is expanded by nb_run itself.  1 when the search is over, 0 when not, -1 on an
   error. */
int nb_run_par(void *p, long budget, int threads, long min_batch) {
    Run *R = p;
    if (threads > MAX_THREADS) threads = MAX_THREADS;
    if (threads < 2) return nb_run(p, budget);
    if (!R->recs) {
        R->recs = calloc((size_t)threads, sizeof(Rec));
        if (!R->recs) { R->error = -2; return -1; }
        R->nrecs = threads;
    }
    if (threads > R->nrecs) threads = R->nrecs;
    Rec *B = R->recs;
    while (R->next < R->count && budget > 0) {
        if (R->next == R->level_end) {
            R->level_start = R->level_end; R->level_end = R->count; R->nlevels++;
        }
        long from = R->next, to = R->level_end;
        if (to - from > budget) to = from + budget;
        long len = to - from;
        budget -= len;
        if (len < min_batch || len < threads) {
            if (nb_run(p, len) < 0) return -1;
            continue;
        }
        long per = (len + threads - 1) / threads;
        for (int k = 0; k < threads; k++) {
            B[k].run = R;
            B[k].from = from + k * per < to ? from + k * per : to;
            B[k].to = from + (k + 1) * per < to ? from + (k + 1) * per : to;
        }
        pthread_t th[MAX_THREADS];
        int started[MAX_THREADS] = {0};
        for (int k = 1; k < threads; k++)
            started[k] = pthread_create(&th[k], 0, expand_range, &B[k]) == 0;
        expand_range(&B[0]);
        for (int k = 1; k < threads; k++) {
            if (started[k]) pthread_join(th[k], 0);
            else expand_range(&B[k]);  /* no thread to be had: expanded here */
        }
        R->parallel++;
        for (int k = 0; k < threads; k++)
            if (B[k].error) { R->error = B[k].error; return -1; }
        for (int k = 0; k < threads; k++) {
            long at = 0;
            for (long si = B[k].from; si < B[k].to; si++) {
                long j = si - B[k].from;
                int n = B[k].nsucc[j];
                R->next = si + 1;
#if GRAPH
                R->gsettled[si] = B[k].settled[j]; R->gstutter[si] = -1; R->gfair[si] = 0;
#endif
                for (int e = 0; e < n; e++, at++) replay_edge(R, &B[k], at, si);
                if (R->error) return -1;
                if (n == 0 && !B[k].settled[j]) {
                    R->deadlocks++;
                    if (R->first_deadlock < 0) R->first_deadlock = si;
                }
            }
        }
    }
    return R->next >= R->count ? 1 : 0;
}
"""
